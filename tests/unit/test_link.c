/* SPDX-License-Identifier: BSD-3-Clause */
/* The sans-IO link (src/link/link.h), driven here by the test with poll(): against the fixture's
 * redis-server, and against tiny local servers made of a listening socket that never accepts
 * (the kernel completes the connect and buffers what is written, so bytes are "sent" and never
 * answered), or that accepts and answers something that is not RESP. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config/settings.h"
#include "eddy_test.h"
#include "link/link.h"
#include "link/redis.h"

static eddy__settings settings_for(const char *url) {
    eddy_settings in;
    eddy_settings_init(&in);
    in.url = url;
    in.connect_timeout_ms = 3000;
    eddy__settings s;
    eddy_error err;
    cr_assert_eq(eddy__settings_copy(&s, &in, &err), EDDY_OK, "%s", err.detail);
    return s;
}

/* One poll for what the link wants (up to ms), then eddy__link_io with what was ready. */
static eddy_status step(eddy__link *l, int ms, eddy_error *err) {
    unsigned w = eddy__link_wants(l);
    struct pollfd p = {.fd = eddy__link_fd(l),
                       .events = (short)(((w & EDDY__LINK_READ) ? POLLIN : 0) |
                                         ((w & EDDY__LINK_WRITE) ? POLLOUT : 0))};
    if (poll(&p, 1, ms) <= 0)
        return EDDY_OK;
    unsigned ready = ((p.revents & POLLIN) ? EDDY__LINK_READ : 0) |
                     ((p.revents & POLLOUT) ? EDDY__LINK_WRITE : 0);
    if (p.revents & (POLLERR | POLLHUP))
        ready = EDDY__LINK_READ | EDDY__LINK_WRITE;
    return eddy__link_io(l, ready, err);
}

/* Drives until READY (or a failure); the test's own limit only guards against a hang. */
static eddy_status until_ready(eddy__link *l, eddy_error *err) {
    eddy_status st = EDDY_OK;
    long long give_up = eddy_test_now_ms() + 20000;
    while (st == EDDY_OK && eddy__link_phase_of(l) != EDDY__LINK_READY &&
           eddy_test_now_ms() < give_up)
        st = step(l, 50, err);
    return st;
}

static eddy_status one_reply(eddy__link *l, redisReply **r, eddy_error *err) {
    eddy_status st = EDDY_OK;
    long long give_up = eddy_test_now_ms() + 20000;
    while ((st = eddy__link_reply(l, r, err)) == EDDY_OK && !*r && eddy_test_now_ms() < give_up)
        if ((st = step(l, 50, err)) != EDDY_OK)
            break;
    return st;
}

static void add_cmd(eddy__cmdlist *cmds, const char *a, const char *b) {
    eddy__cmd *c = eddy__cmdlist_add(cmds, 0, 0);
    cr_assert(c);
    eddy__cmd_str(c, a);
    if (b)
        eddy__cmd_str(c, b);
}

Test(link, talks_to_redis_and_counts_commands) {
    eddy__settings s = settings_for(eddy_test_redis_url());
    eddy__link *l = eddy__link_new(&s, true);
    cr_assert(l);
    eddy_error err;
    cr_assert_eq(eddy__link_connect(l, eddy_test_now_ms(), &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(until_ready(l, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(eddy__link_phase_of(l), EDDY__LINK_READY);
    cr_expect_gt(eddy__link_client_id(l), 0, "CLIENT ID learnt in the handshake");
    cr_expect_eq(eddy__link_deadline(l), -1);
    int on = 0;
    socklen_t len = sizeof(on);
    cr_expect_eq(getsockopt(eddy__link_fd(l), IPPROTO_TCP, TCP_NODELAY, &on, &len), 0);
    cr_expect(on, "TCP_NODELAY");
    on = 0;
    cr_expect_eq(getsockopt(eddy__link_fd(l), SOL_SOCKET, SO_KEEPALIVE, &on, &len), 0);
    cr_expect(on, "SO_KEEPALIVE");
    cr_expect(fcntl(eddy__link_fd(l), F_GETFL) & O_NONBLOCK, "non-blocking");
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    add_cmd(&cmds, "PING", NULL);
    add_cmd(&cmds, "ECHO", "hello");
    uint64_t last = 0;
    cr_assert_eq(eddy__link_send(l, &cmds, &last, &err), EDDY_OK);
    cr_expect_eq(last, 2);
    cr_expect_eq(eddy__link_queued(l), 2);
    cr_expect_eq(eddy__link_sent(l), 0, "nothing written before the driver says so");
    redisReply *r = NULL;
    cr_assert_eq(one_reply(l, &r, &err), EDDY_OK, "%s", err.detail);
    cr_assert(r);
    cr_expect_str_eq(r->str, "PONG");
    freeReplyObject(r);
    cr_assert_eq(one_reply(l, &r, &err), EDDY_OK, "%s", err.detail);
    cr_assert(r);
    cr_expect_str_eq(r->str, "hello");
    freeReplyObject(r);
    cr_expect_eq(eddy__link_sent(l), 2);
    cr_expect_eq(eddy__link_answered(l), 2);
    cr_expect_eq(eddy__link_expire(l, 2, "echo", &err), EDDY_OK, "answered: nothing to expire");
    eddy__cmdlist_reset(&cmds);
    eddy__link_free(l);
    eddy__settings_free(&s);
}

Test(link, selects_a_database_and_reconnects_with_the_same_reader) {
    char url[128];
    snprintf(url, sizeof(url), "%s/3", eddy_test_redis_url());
    eddy__settings s = settings_for(url);
    eddy__link *l = eddy__link_new(&s, false);
    eddy_error err;
    for (int round = 0; round < 2; round++) {
        cr_assert_eq(eddy__link_connect(l, eddy_test_now_ms(), &err), EDDY_OK, "%s", err.detail);
        cr_assert_eq(until_ready(l, &err), EDDY_OK, "%s", err.detail);
        eddy__cmdlist cmds;
        eddy__cmdlist_init(&cmds);
        add_cmd(&cmds, "CLIENT", "INFO");
        cr_assert_eq(eddy__link_send(l, &cmds, NULL, &err), EDDY_OK);
        redisReply *r = NULL;
        cr_assert_eq(one_reply(l, &r, &err), EDDY_OK, "%s", err.detail);
        cr_assert(r && r->str);
        cr_expect(strstr(r->str, " db=3 "), "%s", r->str);
        freeReplyObject(r);
        eddy__cmdlist_reset(&cmds);
        eddy__link_close(l);
        cr_expect_eq(eddy__link_phase_of(l), EDDY__LINK_IDLE);
        cr_expect_eq(eddy__link_fd(l), -1);
    }
    eddy__link_free(l);
    eddy__settings_free(&s);
}

/* A listening socket on 127.0.0.1 that nobody accepts on. */
static int silent_server(int *port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    cr_assert(bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
    cr_assert(listen(fd, 8) == 0);
    socklen_t len = sizeof(a);
    getsockname(fd, (struct sockaddr *)&a, &len);
    *port = ntohs(a.sin_port);
    return fd;
}

Test(link, a_deadline_tells_sent_from_not_sent) {
    int port;
    int srv = silent_server(&port);
    char url[64];
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", port);
    eddy__settings s = settings_for(url);
    eddy__link *l = eddy__link_new(&s, false);
    eddy_error err;
    cr_assert_eq(eddy__link_connect(l, eddy_test_now_ms(), &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(until_ready(l, &err), EDDY_OK, "%s", err.detail); /* no handshake to answer */
    /* A small command fits the socket buffers: written, never answered. */
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    add_cmd(&cmds, "PING", NULL);
    uint64_t small = 0;
    cr_assert_eq(eddy__link_send(l, &cmds, &small, &err), EDDY_OK);
    for (int i = 0; i < 20 && eddy__link_sent(l) < small; i++)
        cr_assert_eq(step(l, 50, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(eddy__link_sent(l), small);
    /* 64 MiB do not: nobody reads them. */
    eddy__cmdlist_reset(&cmds);
    static char big[64 << 20];
    memset(big, 'x', sizeof(big) - 1);
    add_cmd(&cmds, "ECHO", big);
    uint64_t large = 0;
    cr_assert_eq(eddy__link_send(l, &cmds, &large, &err), EDDY_OK);
    for (int i = 0; i < 20; i++)
        cr_assert_eq(step(l, 20, &err), EDDY_OK, "%s", err.detail);
    cr_expect_lt(eddy__link_sent(l), large, "64 MiB into a peer that does not read");
    cr_expect_eq(eddy__link_expire(l, large, "echo", &err), EDDY_ERR_IO);
    cr_expect(strstr(err.detail, "not sent"), "%s", err.detail);
    cr_expect_eq(eddy__link_phase_of(l), EDDY__LINK_FAILED, "not used again");
    cr_expect_eq(eddy__link_send(l, &cmds, NULL, &err), EDDY_ERR_IO);
    eddy__link_close(l);
    /* Again, expiring the small one: sent, outcome unknown. */
    cr_assert_eq(eddy__link_connect(l, eddy_test_now_ms(), &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(until_ready(l, &err), EDDY_OK, "%s", err.detail);
    eddy__cmdlist_reset(&cmds);
    add_cmd(&cmds, "PING", NULL);
    cr_assert_eq(eddy__link_send(l, &cmds, &small, &err), EDDY_OK);
    for (int i = 0; i < 20 && eddy__link_sent(l) < small; i++)
        cr_assert_eq(step(l, 50, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(eddy__link_expire(l, small, "ping", &err), EDDY_ERR_TIMEOUT);
    cr_expect(strstr(err.detail, "outcome unknown"), "%s", err.detail);
    eddy__cmdlist_reset(&cmds);
    eddy__link_free(l);
    eddy__settings_free(&s);
    close(srv);
}

Test(link, a_handshake_nobody_answers_times_out_at_its_deadline) {
    int port;
    int srv = silent_server(&port);
    char url[64];
    snprintf(url, sizeof(url), "redis://:pw@127.0.0.1:%d", port);
    eddy__settings s = settings_for(url);
    eddy__link *l = eddy__link_new(&s, false);
    eddy_error err;
    long long now = 1000000; /* the driver's clock: the link never reads one */
    cr_assert_eq(eddy__link_connect(l, now, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(eddy__link_deadline(l), now + 3000);
    for (int i = 0; i < 10; i++)
        cr_assert_eq(step(l, 20, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(eddy__link_phase_of(l), EDDY__LINK_HANDSHAKE, "AUTH sent, not answered");
    cr_expect_eq(eddy__link_tick(l, now + 2999, &err), EDDY_OK);
    cr_expect_eq(eddy__link_tick(l, now + 3000, &err), EDDY_ERR_IO);
    cr_expect(strstr(err.detail, "timed out"), "%s", err.detail);
    cr_expect_eq(eddy__link_phase_of(l), EDDY__LINK_FAILED);
    eddy__link_free(l);
    eddy__settings_free(&s);
    close(srv);
}

Test(link, a_peer_that_is_not_redis_is_a_protocol_error) {
    int port;
    int srv = silent_server(&port);
    char url[64];
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", port);
    eddy__settings s = settings_for(url);
    eddy__link *l = eddy__link_new(&s, false);
    eddy_error err;
    cr_assert_eq(eddy__link_connect(l, eddy_test_now_ms(), &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(until_ready(l, &err), EDDY_OK, "%s", err.detail);
    int peer = accept(srv, NULL, NULL);
    cr_assert(peer >= 0);
    const char http[] = "HTTP/1.1 400 Bad Request\r\n\r\n";
    cr_assert_eq(write(peer, http, sizeof(http) - 1), (ssize_t)sizeof(http) - 1);
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    add_cmd(&cmds, "PING", NULL);
    cr_assert_eq(eddy__link_send(l, &cmds, NULL, &err), EDDY_OK);
    redisReply *r = NULL;
    cr_expect_eq(one_reply(l, &r, &err), EDDY_ERR_PROTOCOL);
    cr_expect(strstr(err.detail, "does not speak RESP"), "%s", err.detail);
    cr_expect_null(r);
    eddy__cmdlist_reset(&cmds);
    eddy__link_free(l);
    eddy__settings_free(&s);
    close(peer);
    close(srv);
}

Test(link, what_the_server_said_before_closing_is_handed_out) {
    int port;
    int srv = silent_server(&port);
    char url[64];
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", port);
    eddy__settings s = settings_for(url);
    eddy__link *l = eddy__link_new(&s, false);
    eddy_error err;
    cr_assert_eq(eddy__link_connect(l, eddy_test_now_ms(), &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(until_ready(l, &err), EDDY_OK, "%s", err.detail);
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    add_cmd(&cmds, "PING", NULL);
    add_cmd(&cmds, "PING", NULL);
    cr_assert_eq(eddy__link_send(l, &cmds, NULL, &err), EDDY_OK);
    int peer = accept(srv, NULL, NULL);
    const char no[] = "-NOAUTH Authentication required.\r\n";
    cr_assert_eq(write(peer, no, sizeof(no) - 1), (ssize_t)sizeof(no) - 1);
    close(peer);
    redisReply *r = NULL;
    cr_assert_eq(one_reply(l, &r, &err), EDDY_OK, "%s", err.detail);
    cr_assert(r);
    cr_expect_eq(r->type, REDIS_REPLY_ERROR);
    freeReplyObject(r);
    cr_expect_eq(one_reply(l, &r, &err), EDDY_ERR_IO);
    cr_expect(strstr(err.detail, "closed by the server"), "%s", err.detail);
    eddy__cmdlist_reset(&cmds);
    eddy__link_free(l);
    eddy__settings_free(&s);
    close(srv);
}

Test(link, a_refused_connect_and_a_unix_socket) {
    int port;
    int srv = silent_server(&port);
    close(srv); /* nobody listens there now */
    char url[64];
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", port);
    eddy__settings s = settings_for(url);
    eddy__link *l = eddy__link_new(&s, false);
    eddy_error err;
    eddy_status st = eddy__link_connect(l, eddy_test_now_ms(), &err);
    if (st == EDDY_OK)
        st = until_ready(l, &err);
    cr_expect_eq(st, EDDY_ERR_IO);
    cr_expect(strstr(err.detail, "refused"), "%s", err.detail);
    eddy__link_free(l);
    eddy__settings_free(&s);

    s = settings_for("unix:///nonexistent/eddy-link.sock");
    l = eddy__link_new(&s, false);
    cr_expect_eq(eddy__link_connect(l, eddy_test_now_ms(), &err), EDDY_ERR_IO);
    cr_expect(strstr(err.detail, "/nonexistent/eddy-link.sock"), "%s", err.detail);
    eddy__link_free(l);
    eddy__settings_free(&s);
}
