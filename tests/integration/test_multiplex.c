/* SPDX-License-Identifier: BSD-3-Clause */
/* The publishing connection shared by every caller (multiplexed: commands written under a
 * short lock, replies matched in order, no lock held across a round trip), on both front ends
 * and both backends: many threads publishing and requesting at once, each reply matched to
 * its own call and each publish stored once, in its thread's order; and the connection lost
 * with calls in flight (the server drops every client, or restarts): each call ends exactly
 * once with a clear status, the counters add up, and calls succeed again afterwards. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "driver.h"
#include "eddy/blocking.h"
#include "eddy_test.h"
#include "raw.h"
#include "recorder.h"
#include "redis_server.h"

typedef struct combo {
    int frontend; /* 0 blocking, 1 reactive */
    int backend;  /* 0 memory, 1 redis */
} combo;

static combo combos[] = {{0, 0}, {0, 1}, {1, 0}, {1, 1}};
static combo frontends[] = {{0, 1}, {1, 1}};

#define THREADS 8 /* half publish, half request */
#define CALLS 60

typedef struct ctx {
    const driver *d;
    char url[128];
    char ns[96];
    eddy_settings s;
} ctx;

static void setup(ctx *c, const combo *p, const char *redis_url) {
    c->d = p->frontend == 0 ? &blocking_driver : &reactive_driver;
    eddy_test_namespace(c->ns, sizeof(c->ns), "mux");
    if (p->backend == 0)
        snprintf(c->url, sizeof(c->url), "memory://%s", c->ns);
    else
        snprintf(c->url, sizeof(c->url), "%s", redis_url ? redis_url : eddy_test_redis_url());
    eddy_settings_init(&c->s);
    c->s.url = c->url;
    c->s.ns = c->ns;
    c->s.source = "/tests/multiplex";
    c->s.block_ms = 200;
    c->s.reconnect_min_ms = 10;
    c->s.reconnect_max_ms = 100;
    c->s.log = eddy_test_log;
    c->s.log_user = p->backend ? "redis" : "memory";
}

/* Echoes the request: reply id "re-<request id>", data "answer:<request data>". */
static eddy_status echo(eddy_delivery *d, eddy_event **reply, void *user) {
    (void)user;
    const eddy_event *req = eddy_delivery_event(d);
    eddy_event *r = eddy_event_new();
    char id[96];
    snprintf(id, sizeof(id), "re-%s", eddy_event_id(req));
    eddy_event_set_id(r, id);
    eddy_event_set_source(r, "/tests/echo");
    eddy_event_set_type(r, "t.reply");
    size_t len;
    const void *data = eddy_event_data(req, &len);
    char body[256];
    int n = snprintf(body, sizeof(body), "answer:%.*s", (int)len, (const char *)data);
    eddy_event_set_data(r, body, (size_t)n);
    *reply = r;
    return EDDY_OK;
}

static tbus *must_bus(ctx *c) {
    eddy_subscription_spec sp;
    eddy_subscription_spec_init(&sp);
    sp.name = "echo";
    sp.pattern = "mux.ask";
    sp.shape = EDDY_COMPETING;
    sp.group = "echo";
    sp.delivery = EDDY_AT_MOST_ONCE;
    sp.responder = echo;
    tbus *b = NULL;
    eddy_error err = {0};
    eddy_status st = c->d->bus_new(&c->s, &sp, 1, &b, &err);
    cr_assert_eq(st, EDDY_OK, "bus_new: %s (%s)", eddy_status_name(st), err.detail);
    st = c->d->start(b, &err);
    cr_assert_eq(st, EDDY_OK, "start: %s (%s)", eddy_status_name(st), err.detail);
    return b;
}

typedef struct worker {
    ctx *c;
    tbus *b;
    int index;
    bool publisher;
    atomic_bool *stop; /* NULL: CALLS calls; else until it is set */
    /* outcomes, read by the main thread once the worker is joined */
    int ok, io, no_reply, no_responders, other, mismatched;
    atomic_int calls; /* also read while it runs (lose_connections) */
    eddy_status last_other;
} worker;

/* One request; true when its reply is its own. */
static eddy_status request_once(worker *w, int i) {
    char id[48];
    snprintf(id, sizeof(id), "q%d-%d", w->index, i);
    eddy_event *ev = make_event(id, "t.ask");
    eddy_request_opts o = {eddy_deadline_in(w->stop ? 2000 : 20000), NULL, NULL};
    eddy_event *reply = NULL;
    eddy_error err = {0};
    eddy_status st = w->c->d->request(w->b, "mux.ask", ev, &o, &reply, &err);
    if (st == EDDY_OK) {
        char want_id[64], want_data[96];
        snprintf(want_id, sizeof(want_id), "re-%s", id);
        int n = snprintf(want_data, sizeof(want_data), "answer:payload-%s", id);
        size_t len;
        const void *data = eddy_event_data(reply, &len);
        if (strcmp(eddy_event_id(reply), want_id) != 0 || len != (size_t)n ||
            memcmp(data, want_data, len) != 0)
            w->mismatched++;
    }
    eddy_event_free(reply);
    eddy_event_free(ev);
    return st;
}

/* One publish to the worker's own subject; the blocking front end also checks that the entry
 * id it got back is the one its own event was stored under (not while connections are being
 * dropped: the check's own connection would be). */
static eddy_status publish_once(worker *w, int i) {
    char id[48], subject[48];
    snprintf(id, sizeof(id), "p%d-%d", w->index, i);
    snprintf(subject, sizeof(subject), "mux.pub.t%d", w->index);
    eddy_event *ev = make_event(id, "t.pub");
    eddy_error err = {0};
    eddy_status st;
    if (w->c->d == &blocking_driver) {
        char entry[64] = "";
        st = eddy_bus_publish(w->c->d->native(w->b), subject, ev, entry, sizeof(entry), &err);
        if (st == EDDY_OK && !w->stop) {
            char key[160];
            snprintf(key, sizeof(key), "{%s}:s:%s", w->c->ns, subject);
            const char *argv[] = {"XRANGE", key, entry, entry};
            redisReply *r = raw_cmd(w->c->url, 4, argv);
            bool mine = r && r->type == REDIS_REPLY_ARRAY && r->elements == 1;
            const redisReply *fields = mine ? r->element[0]->element[1] : NULL;
            bool found = false;
            for (size_t f = 0; fields && f + 1 < fields->elements; f += 2)
                if (strcmp(fields->element[f]->str, "id") == 0)
                    found = strcmp(fields->element[f + 1]->str, id) == 0;
            if (!found)
                w->mismatched++;
            if (r)
                freeReplyObject(r);
        }
    } else {
        st = w->c->d->publish(w->b, subject, ev, &err);
    }
    eddy_event_free(ev);
    return st;
}

static void *work(void *arg) {
    worker *w = arg;
    for (int i = 0; w->stop ? !atomic_load(w->stop) : i < CALLS; i++) {
        eddy_status st = w->publisher ? publish_once(w, i) : request_once(w, i);
        w->calls++;
        if (st == EDDY_OK)
            w->ok++;
        else if (st == EDDY_ERR_IO)
            w->io++;
        else if (st == EDDY_ERR_NO_REPLY && !w->publisher)
            w->no_reply++;
        else if (st == EDDY_ERR_NO_RESPONDERS && !w->publisher && w->stop)
            w->no_responders++; /* a restarted server lost the registry until the responder
                                   registers again */
        else {
            w->other++;
            w->last_other = st;
        }
    }
    return NULL;
}

/* The entries of a publisher's stream, in order: "p<t>-0" .. "p<t>-<n-1>", each once. */
static void expect_stream(ctx *c, int t, int n) {
    char key[160];
    snprintf(key, sizeof(key), "{%s}:s:mux.pub.t%d", c->ns, t);
    const char *argv[] = {"XRANGE", key, "-", "+"};
    redisReply *r = raw_cmd(c->url, 4, argv);
    cr_assert(r && r->type == REDIS_REPLY_ARRAY);
    cr_expect_eq(r->elements, (size_t)n, "thread %d: %zu entries, published %d", t, r->elements, n);
    for (size_t e = 0; e < r->elements; e++) {
        const redisReply *fields = r->element[e]->element[1];
        char want[48];
        snprintf(want, sizeof(want), "p%d-%zu", t, e);
        const char *got = "";
        for (size_t f = 0; f + 1 < fields->elements; f += 2)
            if (strcmp(fields->element[f]->str, "id") == 0)
                got = fields->element[f + 1]->str;
        cr_expect_str_eq(got, want, "thread %d, entry %zu", t, e);
    }
    freeReplyObject(r);
}

ParameterizedTestParameters(multiplex, publishers_and_requesters_each_get_their_own_replies) {
    return cr_make_param_array(combo, combos, 4);
}
ParameterizedTest(combo *p, multiplex, publishers_and_requesters_each_get_their_own_replies,
                  .timeout = 120) {
    ctx c;
    setup(&c, p, NULL);
    tbus *b = must_bus(&c);
    worker w[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){.c = &c, .b = b, .index = i, .publisher = i % 2 == 0};
        pthread_create(&t[i], NULL, work, &w[i]);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        cr_expect_eq(w[i].ok, CALLS, "%s %d: %d of %d ok (io %d, no reply %d, other %d: %s)",
                     w[i].publisher ? "publisher" : "requester", i, w[i].ok, CALLS, w[i].io,
                     w[i].no_reply, w[i].other, eddy_status_name(w[i].last_other));
        cr_expect_eq(w[i].mismatched, 0, "thread %d got %d replies meant for another call", i,
                     w[i].mismatched);
    }
    for (int i = 0; i < THREADS; i += 2)
        expect_stream(&c, i, CALLS);
    eddy_request_stats s;
    cr_assert_eq(c.d->request_stats(b, NULL, &s), EDDY_OK);
    cr_expect_eq(s.answered, (uint64_t)(THREADS / 2 * CALLS));
    cr_expect_eq(s.sent, s.answered);
    cr_expect_eq(s.unclaimed, 0);
    c.d->free(b);
}

typedef struct progress {
    worker *w;
    int since[THREADS];
} progress;

/* Every worker ended a call since the last snapshot: each is at work on the connections of
 * now, so the next loss finds calls in flight on all of them. */
static bool all_progressed(void *arg) {
    progress *p = arg;
    for (int i = 0; i < THREADS; i++)
        if (atomic_load(&p->w[i].calls) <= p->since[i])
            return false;
    return true;
}

static void wait_progress(worker *w) {
    progress p = {w, {0}};
    for (int i = 0; i < THREADS; i++)
        p.since[i] = atomic_load(&w[i].calls);
    /* a call ends within its 2 s deadline, whatever became of its connection */
    cr_assert(eddy_test_wait_until(all_progressed, &p, 30000), "a worker made no call");
}

/* Drops the bus's connections under it, several times, while the workers run: by CLIENT KILL
 * of every normal client (kill_restart false) or by killing and restarting the server. Each
 * time, and after the last, once every worker got through a call since the previous loss. */
static void lose_connections(ctx *c, eddy_test_redis *srv, bool restart, worker *w) {
    for (int round = 0; round < 3; round++) {
        wait_progress(w);
        if (restart) {
            int port = srv->port;
            eddy_test_redis_kill(srv);
            eddy_test_redis_start(srv, port);
        } else {
            eddy_test_redis_int(c->url, "CLIENT KILL TYPE normal SKIPME yes");
        }
    }
    wait_progress(w);
}

typedef struct answered_probe {
    ctx *c;
    tbus *b;
} answered_probe;

static bool answered_again(void *arg) {
    answered_probe *p = arg;
    worker w = {.c = p->c, .b = p->b, .index = 99};
    return request_once(&w, 0) == EDDY_OK && w.mismatched == 0;
}

static void lost_with_calls_in_flight(combo *p, bool restart) {
    eddy_test_redis srv;
    eddy_test_redis_start(&srv, 0);
    ctx c;
    setup(&c, p, srv.url);
    tbus *b = must_bus(&c);
    atomic_bool stop = false;
    worker w[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){.c = &c, .b = b, .index = i, .publisher = i % 2 == 0, .stop = &stop};
        pthread_create(&t[i], NULL, work, &w[i]);
    }
    lose_connections(&c, &srv, restart, w);
    atomic_store(&stop, true);
    int calls = 0, ok = 0, io = 0, no_reply = 0, no_responders = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL); /* each call returned: a hang fails by the test's timeout */
        cr_expect_eq(w[i].other, 0, "thread %d: %d calls ended with %s", i, w[i].other,
                     eddy_status_name(w[i].last_other));
        cr_expect_eq(w[i].mismatched, 0, "thread %d got %d replies meant for another call", i,
                     w[i].mismatched);
        calls += w[i].calls;
        ok += w[i].ok;
        io += w[i].io;
        no_reply += w[i].no_reply;
        no_responders += w[i].no_responders;
    }
    cr_log_info("%d calls: %d ok, %d EDDY_ERR_IO, %d no reply, %d no responders", calls, ok, io,
                no_reply, no_responders);
    cr_expect_eq(ok + io + no_reply + no_responders, calls,
                 "every call ended once, with a clear status");
    /* After the losses, every kind of call works again on the same bus (once the responder is
     * back in the registry). */
    answered_probe probe = {&c, b};
    cr_expect(eddy_test_wait_until(answered_again, &probe, 20000), "no request answered again");
    w[0] = (worker){.c = &c, .b = b, .index = 100, .publisher = true};
    w[1] = (worker){.c = &c, .b = b, .index = 101};
    work(&w[0]);
    work(&w[1]);
    cr_expect_eq(w[0].ok, CALLS, "publishes after the losses: %d ok, %d io", w[0].ok, w[0].io);
    cr_expect_eq(w[1].ok, CALLS, "requests after the losses: %d ok, %d io, %d no reply", w[1].ok,
                 w[1].io, w[1].no_reply);
    eddy_request_stats s;
    cr_assert_eq(c.d->request_stats(b, NULL, &s), EDDY_OK);
    cr_expect_eq(s.sent, s.answered + s.no_responders + s.no_reply + s.failed,
                 "sent %lu != answered %lu + no_responders %lu + no_reply %lu + failed %lu",
                 (unsigned long)s.sent, (unsigned long)s.answered, (unsigned long)s.no_responders,
                 (unsigned long)s.no_reply, (unsigned long)s.failed);
    c.d->free(b);
    eddy_test_redis_kill(&srv);
}

ParameterizedTestParameters(multiplex, clients_killed_with_calls_in_flight_each_ends_once) {
    return cr_make_param_array(combo, frontends, 2);
}
ParameterizedTest(combo *p, multiplex, clients_killed_with_calls_in_flight_each_ends_once,
                  .timeout = 120) {
    lost_with_calls_in_flight(p, false);
}

ParameterizedTestParameters(multiplex, server_restarted_with_calls_in_flight_each_ends_once) {
    return cr_make_param_array(combo, frontends, 2);
}
ParameterizedTest(combo *p, multiplex, server_restarted_with_calls_in_flight_each_ends_once,
                  .timeout = 120) {
    lost_with_calls_in_flight(p, true);
}

/* ---- no lock held across a round trip ---------------------------------------------------- */

/* A stand-in server that, from the first XADD on, answers nothing until it holds `want` XADDs
 * on one connection, then answers every command in order. A client that waits for a
 * publish's reply before writing the next publish never gets an answer (its read times out). */
typedef struct holdback {
    int listener, port, want;
    atomic_int xadds_before_first_answer;
} holdback;

static void answer(int fd, const redisReply *cmd) {
    const char *name = cmd->type == REDIS_REPLY_ARRAY && cmd->elements ? cmd->element[0]->str : "";
    const char *out = strcasecmp(name, "XADD") == 0 ? "$3\r\n1-1\r\n"
                      : strcasecmp(name, "SADD") == 0 || strcasecmp(name, "CLIENT") == 0
                          ? ":1\r\n"
                          : "+OK\r\n";
    cr_assert(send(fd, out, strlen(out), MSG_NOSIGNAL) > 0);
}

static void *holdback_serve(void *arg) {
    holdback *h = arg;
    int fd = accept(h->listener, NULL, NULL);
    redisReader *rd = redisReaderCreate();
    redisReply *held[64];
    int nheld = 0, xadds = 0;
    bool answering = false;
    for (;;) {
        struct pollfd pfd = {fd, POLLIN, 0};
        if (poll(&pfd, 1, 10000) <= 0) /* a client that waits for us: give up, it fails */
            break;
        char buf[4096];
        ssize_t k = recv(fd, buf, sizeof(buf), 0);
        if (k <= 0)
            break;
        redisReaderFeed(rd, buf, (size_t)k);
        void *r;
        while (redisReaderGetReply(rd, &r) == REDIS_OK && r) {
            redisReply *cmd = r;
            bool is_xadd = strcasecmp(cmd->element[0]->str, "XADD") == 0;
            if (answering || (nheld == 0 && !is_xadd)) { /* the handshake, a SADD first */
                answer(fd, cmd);
                freeReplyObject(cmd);
                continue;
            }
            xadds += is_xadd;
            held[nheld++] = cmd;
            if (xadds >= h->want || nheld == 64) {
                atomic_store(&h->xadds_before_first_answer, xadds);
                for (int i = 0; i < nheld; i++) {
                    answer(fd, held[i]);
                    freeReplyObject(held[i]);
                }
                nheld = 0;
                answering = true;
            }
        }
    }
    for (int i = 0; i < nheld; i++)
        freeReplyObject(held[i]);
    redisReaderFree(rd);
    close(fd);
    return NULL;
}

static void holdback_listen(holdback *h) {
    h->listener = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    cr_assert_eq(bind(h->listener, (struct sockaddr *)&a, sizeof(a)), 0);
    cr_assert_eq(listen(h->listener, 4), 0);
    socklen_t len = sizeof(a);
    getsockname(h->listener, (struct sockaddr *)&a, &len);
    h->port = ntohs(a.sin_port);
}

typedef struct one_publish {
    ctx *c;
    tbus *b;
    int index;
    eddy_status st;
} one_publish;

static void *publish_one(void *arg) {
    one_publish *p = arg;
    char id[32];
    snprintf(id, sizeof(id), "h%d", p->index);
    eddy_event *ev = make_event(id, "t.pub");
    eddy_error err = {0};
    p->st = p->c->d->publish(p->b, "mux.held", ev, &err);
    eddy_event_free(ev);
    return NULL;
}

ParameterizedTestParameters(multiplex, a_publish_is_written_while_another_awaits_its_reply) {
    return cr_make_param_array(combo, frontends, 2);
}
ParameterizedTest(combo *p, multiplex, a_publish_is_written_while_another_awaits_its_reply,
                  .timeout = 60) {
    holdback h = {.want = 2};
    holdback_listen(&h);
    char url[64];
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", h.port);
    ctx c;
    setup(&c, p, url);
    c.s.log = NULL; /* the stand-in is not a real server: its warnings are expected */
    pthread_t server;
    pthread_create(&server, NULL, holdback_serve, &h);
    tbus *b = NULL;
    eddy_error err = {0};
    eddy_status st = c.d->bus_new(&c.s, NULL, 0, &b, &err);
    cr_assert_eq(st, EDDY_OK, "bus_new: %s (%s)", eddy_status_name(st), err.detail);
    one_publish pubs[2];
    pthread_t t[2];
    for (int i = 0; i < 2; i++) {
        pubs[i] = (one_publish){&c, b, i, -1};
        pthread_create(&t[i], NULL, publish_one, &pubs[i]);
    }
    for (int i = 0; i < 2; i++) {
        pthread_join(t[i], NULL);
        cr_expect_eq(pubs[i].st, EDDY_OK, "publish %d: %s", i, eddy_status_name(pubs[i].st));
    }
    cr_expect_eq(atomic_load(&h.xadds_before_first_answer), 2,
                 "both publishes were on the wire before either was answered");
    c.d->free(b);
    pthread_join(server, NULL);
    close(h.listener);
}

/* ---- a connection lost with calls in flight ---------------------------------------------- */

/* Its first connection answers nothing from the first XADD on and closes once it holds four
 * (a server lost with four publishes in flight); its second answers everything. */
typedef struct silent {
    int listener;
    atomic_int xadds_unanswered;
} silent;

static void *silent_serve(void *arg) {
    silent *h = arg;
    for (int conn = 0; conn < 2; conn++) {
        int fd = accept(h->listener, NULL, NULL);
        redisReader *rd = redisReaderCreate();
        bool stalled = false;
        for (;;) {
            struct pollfd pfd = {fd, POLLIN, 0};
            if (poll(&pfd, 1, 20000) <= 0)
                break;
            char buf[4096];
            ssize_t k = recv(fd, buf, sizeof(buf), 0);
            if (k <= 0)
                break; /* the client gave up on this connection */
            redisReaderFeed(rd, buf, (size_t)k);
            void *r;
            while (redisReaderGetReply(rd, &r) == REDIS_OK && r) {
                redisReply *cmd = r;
                bool xadd = strcasecmp(cmd->element[0]->str, "XADD") == 0;
                stalled = stalled || (conn == 0 && xadd);
                if (stalled)
                    atomic_fetch_add(&h->xadds_unanswered, xadd);
                else
                    answer(fd, cmd);
                freeReplyObject(cmd);
            }
            if (conn == 0 && atomic_load(&h->xadds_unanswered) == 4)
                break;
        }
        redisReaderFree(rd);
        close(fd);
    }
    return NULL;
}

ParameterizedTestParameters(multiplex, a_connection_lost_with_publishes_in_flight_fails_each_once) {
    return cr_make_param_array(combo, frontends, 2);
}
ParameterizedTest(combo *p, multiplex, a_connection_lost_with_publishes_in_flight_fails_each_once,
                  .timeout = 60) {
    silent h = {0};
    holdback hb = {0};
    holdback_listen(&hb); /* only for its listening socket */
    h.listener = hb.listener;
    char url[64];
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", hb.port);
    ctx c;
    setup(&c, p, url);
    c.s.log = NULL;
    c.s.connect_timeout_ms = 10000; /* the loss, not a timeout, ends the publishes */
    pthread_t server;
    pthread_create(&server, NULL, silent_serve, &h);
    tbus *b = NULL;
    eddy_error err = {0};
    eddy_status st = c.d->bus_new(&c.s, NULL, 0, &b, &err);
    cr_assert_eq(st, EDDY_OK, "bus_new: %s (%s)", eddy_status_name(st), err.detail);
    one_publish pubs[4];
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        pubs[i] = (one_publish){&c, b, i, -1};
        pthread_create(&t[i], NULL, publish_one, &pubs[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL); /* returned, once: a hang fails by the test's timeout */
        cr_expect_eq(pubs[i].st, EDDY_ERR_IO, "publish %d: %s", i, eddy_status_name(pubs[i].st));
    }
    cr_expect_eq(atomic_load(&h.xadds_unanswered), 4, "all four were on the wire at once");
    one_publish again = {&c, b, 9, -1};
    publish_one(&again);
    cr_expect_eq(again.st, EDDY_OK, "the next publish reconnects: %s", eddy_status_name(again.st));
    c.d->free(b);
    pthread_join(server, NULL);
    close(h.listener);
}

/* A request whose entry the server refuses (here: out of memory, noeviction) ends at once with
 * the refusal, not at its deadline as "no reply" (the blocking front end does not wait for the
 * entry's acknowledgement before waiting for the outcome: the refusal must still reach it), and
 * is not counted as sent; requests work again once the server takes writes. */
ParameterizedTestParameters(multiplex, a_refused_request_entry_ends_the_call_with_the_refusal) {
    return cr_make_param_array(combo, frontends, 2);
}
ParameterizedTest(combo *p, multiplex, a_refused_request_entry_ends_the_call_with_the_refusal,
                  .timeout = 120) {
    eddy_test_redis srv;
    eddy_test_redis_start(&srv, 0);
    ctx c;
    setup(&c, p, srv.url);
    tbus *b = must_bus(&c);
    worker w = {.c = &c, .b = b, .index = 1};
    cr_assert_eq(request_once(&w, 0), EDDY_OK);
    eddy_test_redis_int(c.url, "CONFIG SET maxmemory 1");
    eddy_event *ev = make_event("refused-1", "t.ask");
    eddy_request_opts o = {eddy_deadline_in(60000), NULL, NULL};
    eddy_event *reply = NULL;
    eddy_error err = {0};
    eddy_status st = c.d->request(b, "mux.ask", ev, &o, &reply, &err);
    eddy_event_free(ev);
    cr_expect_eq(st, EDDY_ERR_SERVER_FULL, "%s: the refusal was not heard (%s)",
                 eddy_status_name(st), err.detail);
    if (c.d == &blocking_driver) /* the reactive driver passes on the callback's status alone */
        cr_expect(strstr(err.detail, "OOM") != NULL, "the refusal's text: %s", err.detail);
    eddy_test_redis_int(c.url, "CONFIG SET maxmemory 0");
    cr_expect_eq(request_once(&w, 1), EDDY_OK);
    eddy_request_stats s;
    cr_assert_eq(c.d->request_stats(b, NULL, &s), EDDY_OK);
    cr_expect_eq(s.sent, 2, "sent %lu: the refused entry is not counted", (unsigned long)s.sent);
    cr_expect_eq(s.answered, 2);
    c.d->free(b);
    eddy_test_redis_kill(&srv);
}
