/* The link with a redis-sentinel:// URL (src/sentinel.c), driven by the test with poll(), against
 * fake sentinels and servers: listening sockets the test itself accepts and answers with
 * scripted replies, so that a sentinel can name a replica, and a master can turn READONLY, on
 * cue. The fixture's redis-server stands for a real master. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "eddy_test.h"
#include "link.h"
#include "settings.h"

/* A fake server: answers[i] is written once the bytes received on the current connection hold
 * triggers[i] (in order). */
typedef struct fake {
    int lfd, port, peer, accepts;
    const char *triggers[4], *answers[4];
    size_t next;
    char got[8192]; /* every byte received, over all its connections */
    size_t ngot, conn_start;
} fake;

static void fake_listen(fake *f) {
    memset(f, 0, sizeof(*f));
    f->peer = -1;
    f->lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    cr_assert(f->lfd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    cr_assert_eq(bind(f->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
    cr_assert_eq(listen(f->lfd, 4), 0);
    socklen_t len = sizeof(a);
    getsockname(f->lfd, (struct sockaddr *)&a, &len);
    f->port = ntohs(a.sin_port);
}

static void fake_close(fake *f) {
    if (f->peer >= 0)
        close(f->peer);
    close(f->lfd);
}

static void fake_step(fake *f) {
    int c = accept(f->lfd, NULL, NULL);
    if (c >= 0) {
        fcntl(c, F_SETFL, fcntl(c, F_GETFL) | O_NONBLOCK);
        if (f->peer >= 0)
            close(f->peer);
        f->peer = c;
        f->accepts++;
        f->next = 0;
        f->conn_start = f->ngot;
    }
    if (f->peer < 0)
        return;
    ssize_t k = read(f->peer, f->got + f->ngot, sizeof(f->got) - 1 - f->ngot);
    if (k > 0)
        f->ngot += (size_t)k;
    f->got[f->ngot] = '\0';
    while (f->next < 4 && f->triggers[f->next] &&
           strstr(f->got + f->conn_start, f->triggers[f->next])) {
        const char *a = f->answers[f->next++];
        cr_assert_eq(write(f->peer, a, strlen(a)), (ssize_t)strlen(a));
    }
}

static eddy__settings settings_for(const char *url) {
    eddy_settings in;
    eddy_settings_init(&in);
    in.url = url;
    in.connect_timeout_ms = 5000;
    eddy__settings s;
    eddy_error err;
    cr_assert_eq(eddy__settings_copy(&s, &in, &err), EDDY_OK, "%s", err.detail);
    return s;
}

/* One short poll on the link, then a step of every fake. */
static eddy_status step(eddy__link *l, fake **fakes, size_t n, eddy_error *err) {
    eddy_status st = EDDY_OK;
    unsigned w = eddy__link_wants(l);
    struct pollfd p = {.fd = eddy__link_fd(l),
                       .events = (short)(((w & EDDY__LINK_READ) ? POLLIN : 0) |
                                         ((w & EDDY__LINK_WRITE) ? POLLOUT : 0))};
    if (w && poll(&p, 1, 10) > 0) {
        unsigned ready = ((p.revents & POLLIN) ? EDDY__LINK_READ : 0) |
                         ((p.revents & POLLOUT) ? EDDY__LINK_WRITE : 0);
        if (p.revents & (POLLERR | POLLHUP))
            ready = EDDY__LINK_READ | EDDY__LINK_WRITE;
        st = eddy__link_io(l, ready, err);
    }
    for (size_t i = 0; i < n; i++)
        fake_step(fakes[i]);
    return st;
}

/* Drives until READY or a failure; the limit only guards against a hang. */
static eddy_status until_ready(eddy__link *l, fake **fakes, size_t n, eddy_error *err) {
    eddy_status st = EDDY_OK;
    long long give_up = eddy_test_now_ms() + 20000;
    while (st == EDDY_OK && eddy__link_phase_of(l) != EDDY__LINK_READY &&
           eddy_test_now_ms() < give_up)
        st = step(l, fakes, n, err);
    return st;
}

static eddy_status one_reply(eddy__link *l, fake **fakes, size_t n, redisReply **r,
                             eddy_error *err) {
    eddy_status st;
    long long give_up = eddy_test_now_ms() + 20000;
    while ((st = eddy__link_reply(l, r, err)) == EDDY_OK && !*r && eddy_test_now_ms() < give_up)
        if ((st = step(l, fakes, n, err)) != EDDY_OK)
            break;
    return st;
}

static void queue_ping(eddy__link *l) {
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    eddy__cmd *c = eddy__cmdlist_add(&cmds, 0, 0);
    cr_assert(c);
    eddy__cmd_str(c, "PING");
    eddy_error err;
    cr_assert_eq(eddy__link_send(l, &cmds, NULL, &err), EDDY_OK, "%s", err.detail);
    eddy__cmdlist_reset(&cmds);
}

static char addr_answer[2][96];

/* "*2 127.0.0.1 <port>": what get-master-addr-by-name answers. */
static const char *addr_of(int slot, int port) {
    char p[16];
    int n = snprintf(p, sizeof(p), "%d", port);
    snprintf(addr_answer[slot], sizeof(addr_answer[slot]), "*2\r\n$9\r\n127.0.0.1\r\n$%d\r\n%s\r\n",
             n, p);
    return addr_answer[slot];
}

/* A sentinel names a replica: the connect fails saying so, and no command queued meanwhile
 * reached the replica; the next connect starts with the next sentinel, which names the master. */
Test(sentinel_link, a_replica_is_refused_and_the_next_connect_asks_the_next_sentinel) {
    fake replica, a, b;
    fake_listen(&replica);
    fake_listen(&a);
    fake_listen(&b);
    replica.triggers[0] = "CLIENT"; /* CLIENT ID, then ROLE */
    replica.answers[0] = ":7\r\n";
    replica.triggers[1] = "ROLE";
    replica.answers[1] = "*5\r\n$5\r\nslave\r\n$9\r\n127.0.0.1\r\n:1\r\n$9\r\nconnected\r\n:0\r\n";
    a.triggers[0] = b.triggers[0] = "get-master-addr-by-name";
    a.answers[0] = addr_of(0, replica.port);
    int master_port = 0;
    cr_assert_eq(sscanf(eddy_test_redis_url(), "redis://127.0.0.1:%d", &master_port), 1);
    b.answers[0] = addr_of(1, master_port);
    fake *fakes[] = {&replica, &a, &b};

    char url[128];
    snprintf(url, sizeof(url), "redis-sentinel://127.0.0.1:%d,127.0.0.1:%d/m", a.port, b.port);
    eddy__settings s = settings_for(url);
    eddy__link *l = eddy__link_new(&s, true);
    cr_assert(l);
    eddy_error err;
    cr_assert_eq(eddy__link_connect(l, eddy_test_now_ms(), &err), EDDY_OK, "%s", err.detail);
    queue_ping(l); /* queued while connecting: it must wait for ROLE master */
    eddy_status st = until_ready(l, fakes, 3, &err);
    cr_expect_eq(st, EDDY_ERR_IO, "%s: %s", eddy_status_name(st), err.detail);
    cr_expect(strstr(err.detail, "has the role slave"), "%s", err.detail);
    cr_expect(strstr(replica.got, "ROLE"), "the handshake asked ROLE: %s", replica.got);
    cr_expect(!strstr(replica.got, "PING"), "no command reached the replica: %s", replica.got);
    cr_expect(strstr(replica.got, "CLIENT"), "the handshake's CLIENT ID went before ROLE");
    cr_expect_eq(a.accepts, 1);
    cr_expect_eq(b.accepts, 0, "the first sentinel answered: the second was not asked");

    cr_assert_eq(eddy__link_connect(l, eddy_test_now_ms(), &err), EDDY_OK, "%s", err.detail);
    queue_ping(l);
    cr_assert_eq(until_ready(l, fakes, 3, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(a.accepts, 1, "the sentinel that named a replica is not asked first again");
    cr_expect_eq(b.accepts, 1);
    cr_expect_gt(eddy__link_client_id(l), 0, "CLIENT ID still learnt");
    redisReply *r = NULL;
    cr_assert_eq(one_reply(l, fakes, 3, &r, &err), EDDY_OK, "%s", err.detail);
    cr_assert(r);
    cr_expect_str_eq(r->str, "PONG", "the master answered the queued command");
    freeReplyObject(r);
    cr_expect_eq(replica.accepts, 1);
    eddy__link_free(l);
    eddy__settings_free(&s);
    fake_close(&replica);
    fake_close(&a);
    fake_close(&b);
}

/* A master that turned replica answers READONLY: the link fails (EDDY_ERR_IO) so that the
 * driver connects again, which asks the sentinels again. */
Test(sentinel_link, readonly_fails_the_link) {
    fake master, sn;
    fake_listen(&master);
    fake_listen(&sn);
    master.triggers[0] = "ROLE";
    master.answers[0] = "*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n";
    master.triggers[1] = "PING";
    master.answers[1] = "-READONLY You can't write against a read only replica.\r\n";
    sn.triggers[0] = "get-master-addr-by-name";
    sn.answers[0] = addr_of(0, master.port);
    fake *fakes[] = {&master, &sn};
    char url[128];
    snprintf(url, sizeof(url), "redis-sentinel://127.0.0.1:%d/m", sn.port);
    eddy__settings s = settings_for(url);
    eddy__link *l = eddy__link_new(&s, false);
    eddy_error err;
    cr_assert_eq(eddy__link_connect(l, eddy_test_now_ms(), &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(until_ready(l, fakes, 2, &err), EDDY_OK, "%s", err.detail);
    queue_ping(l);
    redisReply *r = NULL;
    cr_expect_eq(one_reply(l, fakes, 2, &r, &err), EDDY_ERR_IO);
    cr_expect_null(r);
    cr_expect(strstr(err.detail, "READONLY"), "%s", err.detail);
    cr_expect_eq(eddy__link_phase_of(l), EDDY__LINK_FAILED);
    eddy__link_free(l);
    eddy__settings_free(&s);
    fake_close(&master);
    fake_close(&sn);
}
