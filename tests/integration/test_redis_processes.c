/* SPDX-License-Identifier: BSD-3-Clause */
/* Behaviour that needs real processes and a real redis-server: two processes competing in one
 * group, a process killed with SIGKILL while it holds messages, redis-server killed and
 * restarted under a running subscription, and writing to a dead server (no SIGPIPE death).
 * Child processes run a bus and report what they handled through files and pipes. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "eddy/blocking.h"
#include "eddy_test.h"
#include "raw.h"
#include "recorder.h"
#include "redis_server.h"

static void settings_for(eddy_settings *s, const char *url, const char *ns) {
    eddy_settings_init(s);
    s->url = url;
    s->ns = ns;
    s->source = "/tests";
    s->block_ms = 200;
    s->redelivery_idle_ms = 300;
    s->connect_timeout_ms = 1000;
    s->reconnect_min_ms = 20;
    s->reconnect_max_ms = 200;
}

/* ---- a child process that consumes and writes each handled event id to a file ---------- */

typedef struct child_ctx {
    int fd;    /* file or pipe to report to */
    bool hang; /* never return from the handler (to be killed holding the message) */
} child_ctx;

static eddy_status child_handler(eddy_delivery *d, void *user) {
    child_ctx *c = user;
    char line[128];
    int n = snprintf(line, sizeof(line), "%s %u\n", eddy_event_id(eddy_delivery_event(d)),
                     eddy_delivery_attempt(d));
    if (write(c->fd, line, (size_t)n) != n)
        return EDDY_ERR_HANDLER_FAILED;
    if (c->hang)
        for (;;)
            pause();
    return EDDY_OK;
}

static pid_t spawn_consumer(const char *url, const char *ns, const char *instance, int fd,
                            bool hang, int ready_fd) {
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid > 0)
        return pid;
    static child_ctx ctx;
    ctx.fd = fd;
    ctx.hang = hang;
    eddy_settings s;
    settings_for(&s, url, ns);
    s.instance = instance;
    eddy_subscription_spec sp;
    eddy_subscription_spec_init(&sp);
    sp.name = "work";
    sp.pattern = "jobs";
    sp.group = "workers";
    sp.delivery = EDDY_AT_LEAST_ONCE;
    sp.handler = child_handler;
    sp.user = &ctx;
    eddy_bus *bus = NULL;
    if (eddy_bus_new(&s, &sp, 1, &bus, NULL) != EDDY_OK || eddy_bus_start(bus, NULL) != EDDY_OK)
        _exit(3);
    if (write(ready_fd, "r", 1) != 1)
        _exit(4);
    for (;;)
        pause(); /* until killed */
}

static void wait_ready(int ready_rd) {
    char c;
    cr_assert_eq(read(ready_rd, &c, 1), 1, "consumer process did not start");
}

static void publish_ids(const char *url, const char *ns, const char *prefix, int n) {
    eddy_settings s;
    settings_for(&s, url, ns);
    eddy_bus *pub = NULL;
    cr_assert_eq(eddy_bus_new(&s, NULL, 0, &pub, NULL), EDDY_OK);
    char id[32];
    for (int i = 0; i < n; i++) {
        snprintf(id, sizeof(id), "%s%d", prefix, i);
        eddy_event *ev = make_event(id, "t.job");
        cr_assert_eq(eddy_bus_publish(pub, "jobs", ev, NULL, 0, NULL), EDDY_OK);
        eddy_event_free(ev);
    }
    eddy_bus_free(pub);
}

static int count_lines(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    int n = 0;
    char line[128];
    while (fgets(line, sizeof(line), f))
        n++;
    fclose(f);
    return n;
}

typedef struct two_files {
    const char *a, *b;
    int want;
} two_files;

static bool both_reached(void *arg) {
    two_files *t = arg;
    return count_lines(t->a) + count_lines(t->b) >= t->want;
}

Test(processes, two_processes_compete_without_duplicates_or_losses, .timeout = 120) {
    const char *url = eddy_test_redis_url();
    char ns[96];
    eddy_test_namespace(ns, sizeof(ns), "procs");
    char fa[128], fb[128];
    snprintf(fa, sizeof(fa), "/tmp/eddy-%s-a", ns);
    snprintf(fb, sizeof(fb), "/tmp/eddy-%s-b", ns);
    int a = open(fa, O_CREAT | O_TRUNC | O_WRONLY | O_APPEND, 0600);
    int b = open(fb, O_CREAT | O_TRUNC | O_WRONLY | O_APPEND, 0600);
    int ready[2];
    cr_assert_eq(pipe(ready), 0);
    pid_t pa = spawn_consumer(url, ns, "proc-a", a, false, ready[1]);
    pid_t pb = spawn_consumer(url, ns, "proc-b", b, false, ready[1]);
    close(ready[1]); /* a child that dies before it is ready then reads as EOF, not a hang */
    wait_ready(ready[0]);
    wait_ready(ready[0]);
    publish_ids(url, ns, "job", 500);
    two_files t = {fa, fb, 500};
    bool done = eddy_test_wait_until(both_reached, &t, 60000);
    kill(pa, SIGKILL);
    kill(pb, SIGKILL);
    waitpid(pa, NULL, 0);
    waitpid(pb, NULL, 0);
    cr_assert(done, "handled %d of 500", count_lines(fa) + count_lines(fb));
    /* Every id exactly once across both files. */
    static int seen[500];
    memset(seen, 0, sizeof(seen));
    const char *paths[2] = {fa, fb};
    for (int p = 0; p < 2; p++) {
        FILE *f = fopen(paths[p], "r");
        char line[128];
        while (fgets(line, sizeof(line), f)) {
            int i = -1;
            cr_assert_eq(sscanf(line, "job%d", &i), 1);
            cr_assert(i >= 0 && i < 500);
            seen[i]++;
        }
        fclose(f);
    }
    for (int i = 0; i < 500; i++)
        cr_expect_eq(seen[i], 1, "job%d handled %d times", i, seen[i]);
    unlink(fa);
    unlink(fb);
    close(a);
    close(b);
}

Test(processes, killed_consumer_messages_handled_by_another, .timeout = 120) {
    const char *url = eddy_test_redis_url();
    char ns[96];
    eddy_test_namespace(ns, sizeof(ns), "kill9");
    int report[2], ready[2];
    cr_assert_eq(pipe(report), 0);
    cr_assert_eq(pipe(ready), 0);
    pid_t victim = spawn_consumer(url, ns, "victim", report[1], true, ready[1]);
    close(ready[1]); /* a child that dies early then reads as EOF, not a hang */
    close(report[1]);
    wait_ready(ready[0]);
    publish_ids(url, ns, "held", 1);
    char line[128] = {0};
    cr_assert(read(report[0], line, sizeof(line) - 1) > 0, "victim never got the message");
    cr_expect_str_eq(line, "held0 1\n");
    kill(victim, SIGKILL);
    waitpid(victim, NULL, 0);

    recorder r;
    rec_init(&r);
    eddy_settings s;
    settings_for(&s, url, ns);
    s.instance = "survivor";
    eddy_subscription_spec sp;
    eddy_subscription_spec_init(&sp);
    sp.name = "work";
    sp.pattern = "jobs";
    sp.group = "workers";
    sp.delivery = EDDY_AT_LEAST_ONCE;
    sp.handler = rec_handler;
    sp.user = &r;
    eddy_bus *bus = NULL;
    cr_assert_eq(eddy_bus_new(&s, &sp, 1, &bus, NULL), EDDY_OK);
    cr_assert_eq(eddy_bus_start(bus, NULL), EDDY_OK);
    cr_assert(rec_wait(&r, 1, 30000), "the dead process's message was not redelivered");
    eddy_bus_free(bus);
    cr_expect_str_eq(r.entries[0].event_id, "held0");
    cr_expect_eq(r.entries[0].attempt, 2);
    rec_destroy(&r);
}

static void survive_restart(const char *pattern, const char *subject) {
    eddy_test_redis srv;
    eddy_test_redis_start(&srv, 0);
    char ns[96];
    eddy_test_namespace(ns, sizeof(ns), "restart");
    recorder r;
    rec_init(&r);
    eddy_settings s;
    settings_for(&s, srv.url, ns);
    eddy_subscription_spec sp;
    eddy_subscription_spec_init(&sp);
    sp.name = "s";
    sp.pattern = pattern;
    sp.group = "g";
    sp.delivery = EDDY_AT_LEAST_ONCE;
    sp.handler = rec_handler;
    sp.user = &r;
    eddy_bus *bus = NULL;
    cr_assert_eq(eddy_bus_new(&s, &sp, 1, &bus, NULL), EDDY_OK);
    cr_assert_eq(eddy_bus_start(bus, NULL), EDDY_OK);
    eddy_event *ev = make_event("before", "t");
    cr_assert_eq(eddy_bus_publish(bus, subject, ev, NULL, 0, NULL), EDDY_OK);
    eddy_event_free(ev);
    cr_assert(rec_wait(&r, 1, 20000));

    eddy_test_redis_kill(&srv); /* the reader is inside a blocking read now */
    ev = make_event("while-down", "t");
    eddy_error err = {0};
    cr_expect_eq(eddy_bus_publish(bus, subject, ev, NULL, 0, &err), EDDY_ERR_IO,
                 "publishing to a dead server: %s", err.detail);
    eddy_event_free(ev);
    eddy_test_redis_start(&srv, srv.port);

    /* The restarted server kept nothing; the subscription recreates its group and gets
     * what is published from now on. The publisher's connection comes back by itself. */
    ev = make_event("after", "t");
    eddy_status st = EDDY_ERR_IO;
    for (int i = 0; i < 100 && st != EDDY_OK; i++) {
        st = eddy_bus_publish(bus, subject, ev, NULL, 0, NULL);
        if (st != EDDY_OK) {
            struct timespec pause = {0, 50000000};
            nanosleep(&pause, NULL);
        }
    }
    eddy_event_free(ev);
    cr_assert_eq(st, EDDY_OK);
    cr_assert(rec_wait(&r, 2, 30000), "nothing delivered after the restart");
    cr_expect_str_eq(r.entries[1].event_id, "after");
    eddy_bus_free(bus);
    eddy_test_redis_kill(&srv);
    rec_destroy(&r);
}

Test(processes, subscription_survives_redis_restart, .timeout = 120) {
    survive_restart("jobs", "jobs");
}

Test(processes, pattern_subscription_survives_redis_restart, .timeout = 120) {
    survive_restart("jobs.*", "jobs.eu");
}

static eddy_status publish_retrying(eddy_bus *bus, const char *subject, const char *id) {
    eddy_event *ev = make_event(id, "t");
    eddy_status st = EDDY_ERR_IO;
    for (int i = 0; i < 100 && st != EDDY_OK; i++) {
        st = eddy_bus_publish(bus, subject, ev, NULL, 0, NULL);
        if (st != EDDY_OK) {
            struct timespec pause = {0, 50000000};
            nanosleep(&pause, NULL);
        }
    }
    eddy_event_free(ev);
    return st;
}

/* The restarted server lost its subject set: a publisher that knew the subject registers it
 * again, so a pattern subscription made after the restart still finds it. */
Test(processes, new_pattern_subscriber_finds_subjects_after_redis_restart, .timeout = 120) {
    eddy_test_redis srv;
    eddy_test_redis_start(&srv, 0);
    eddy_settings s;
    settings_for(&s, srv.url, "resubject");
    eddy_bus *pub = NULL;
    cr_assert_eq(eddy_bus_new(&s, NULL, 0, &pub, NULL), EDDY_OK);
    cr_assert_eq(publish_retrying(pub, "jobs.eu", "before"), EDDY_OK);
    eddy_test_redis_kill(&srv);
    eddy_test_redis_start(&srv, srv.port);
    cr_assert_eq(publish_retrying(pub, "jobs.eu", "again"), EDDY_OK);

    recorder r;
    rec_init(&r);
    eddy_subscription_spec sp;
    eddy_subscription_spec_init(&sp);
    sp.name = "s";
    sp.pattern = "jobs.*";
    sp.group = "late";
    sp.delivery = EDDY_AT_LEAST_ONCE;
    sp.handler = rec_handler;
    sp.user = &r;
    eddy_bus *sub = NULL;
    cr_assert_eq(eddy_bus_new(&s, &sp, 1, &sub, NULL), EDDY_OK);
    cr_assert_eq(eddy_bus_start(sub, NULL), EDDY_OK);
    cr_assert_eq(publish_retrying(pub, "jobs.eu", "after"), EDDY_OK);
    cr_assert(rec_wait(&r, 1, 20000), "the subject was not found after the restart");
    cr_expect_str_eq(r.entries[0].event_id, "after");
    eddy_bus_free(sub);
    eddy_bus_free(pub);
    eddy_test_redis_kill(&srv);
    rec_destroy(&r);
}

Test(processes, writing_to_a_dead_server_does_not_raise_sigpipe, .timeout = 60) {
    signal(SIGPIPE, SIG_DFL); /* the default action would kill this test process */
    eddy_test_redis srv;
    eddy_test_redis_start(&srv, 0);
    eddy_settings s;
    settings_for(&s, srv.url, "sigpipe");
    eddy_bus *bus = NULL;
    cr_assert_eq(eddy_bus_new(&s, NULL, 0, &bus, NULL), EDDY_OK);
    eddy_test_redis_kill(&srv);
    /* A large pipeline takes several write() calls: the ones after the peer's reset fail
     * with EPIPE, which is where SIGPIPE would be raised. */
    static char data[8192];
    memset(data, 'x', sizeof(data));
    eddy_event *evs[200];
    for (int i = 0; i < 200; i++) {
        evs[i] = make_event("x", "t");
        eddy_event_set_data(evs[i], data, sizeof(data));
    }
    for (int i = 0; i < 3; i++)
        cr_expect_neq(
            eddy_bus_publish_batch(bus, "a", (const eddy_event *const *)evs, 200, NULL, NULL),
            EDDY_OK);
    for (int i = 0; i < 200; i++)
        eddy_event_free(evs[i]);
    eddy_bus_free(bus);
}

static void round_trip_on(const char *url, const char *ns) {
    recorder r;
    rec_init(&r);
    eddy_settings s;
    settings_for(&s, url, ns);
    eddy_subscription_spec sp;
    eddy_subscription_spec_init(&sp);
    sp.name = "s";
    sp.pattern = "ping";
    sp.group = "g";
    sp.delivery = EDDY_AT_LEAST_ONCE;
    sp.handler = rec_handler;
    sp.user = &r;
    eddy_bus *bus = NULL;
    eddy_error err = {0};
    cr_assert_eq(eddy_bus_new(&s, &sp, 1, &bus, &err), EDDY_OK, "%s: %s", url, err.detail);
    cr_assert_eq(eddy_bus_start(bus, &err), EDDY_OK, "%s", err.detail);
    eddy_event *ev = make_event("p", "t");
    cr_assert_eq(eddy_bus_publish(bus, "ping", ev, NULL, 0, &err), EDDY_OK, "%s", err.detail);
    eddy_event_free(ev);
    cr_assert(rec_wait(&r, 1, 20000));
    eddy_bus_free(bus);
    rec_destroy(&r);
}

Test(processes, password_database_and_unix_socket_urls, .timeout = 60) {
    char sock[128];
    snprintf(sock, sizeof(sock), "/tmp/eddy-test-%d.sock", (int)getpid());
    const char *extra[] = {"--requirepass", "s3cret", NULL};
    eddy_test_redis srv;
    eddy_test_redis_start_with(&srv, 0, extra);
    char url[256];
    snprintf(url, sizeof(url), "redis://:s3cret@127.0.0.1:%d/3", srv.port);
    round_trip_on(url, "auth");
    snprintf(url, sizeof(url), "redis://default:s3cret@127.0.0.1:%d", srv.port);
    round_trip_on(url, "auth-user");

    /* A wrong password is refused with the server's reason and no secret in the detail. */
    eddy_settings s;
    snprintf(url, sizeof(url), "redis://:wrong-pw@127.0.0.1:%d", srv.port);
    settings_for(&s, url, "auth");
    eddy_bus *bus = NULL;
    eddy_error err = {0};
    cr_expect_eq(eddy_bus_new(&s, NULL, 0, &bus, &err), EDDY_ERR_AUTH);
    cr_expect(strstr(err.detail, "WRONGPASS") || strstr(err.detail, "invalid"), "%s", err.detail);
    cr_expect_null(strstr(err.detail, "wrong-pw"));
    /* No password at all: the handshake's CLIENT ID is refused (NOAUTH), so connecting is. */
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", srv.port);
    settings_for(&s, url, "noauth");
    cr_expect_eq(eddy_bus_new(&s, NULL, 0, &bus, &err), EDDY_ERR_AUTH);
    cr_expect(strstr(err.detail, "NOAUTH"), "%s", err.detail);

    eddy_test_redis_kill(&srv);

    /* A server on a unix socket, database 2. */
    const char *unix_extra[] = {"--unixsocket", sock, "--unixsocketperm", "700", NULL};
    eddy_test_redis_start_with(&srv, 0, unix_extra);
    snprintf(url, sizeof(url), "unix://%s?db=2", sock);
    round_trip_on(url, "unix");
    cr_expect_eq(eddy_test_redis_int(srv.url, "EXISTS {unix}:s:ping"), 0, "not in database 0");
    eddy_test_redis_kill(&srv);
    unlink(sock);
}
