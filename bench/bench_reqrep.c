/* SPDX-License-Identifier: BSD-3-Clause */
/* Request/reply on redis://, eddy beside raw hiredis doing the same stream commands at its best,
 * in the same run (repetitions, medians, alternating order, pinning: bench_util.h).
 *
 * Every request is an event with id, source /bench, type bench.request.v1 and 64 bytes of data,
 * sent to one request stream with eddy's request fields (_reply_to, _request, _deadline); the
 * responder echoes the data in a reply event (id r-<id>, source /bench/responder, type
 * bench.reply.v1) that it XADDs, NOMKSTREAM MAXLEN ~ 10000 with _request, to the requester's
 * reply stream. Both raw sides write exactly these fields, as eddy does.
 *
 *   reqrep_p50_us, reqrep_p99_us   -n N requests one after another (default 5000, after N/10
 *       untimed), latency of each from the call to the reply in hand. hiredis: one requester
 *       connection, each request's XADD pipelined with the XREAD BLOCK of its reply stream (one
 *       write, the XREAD is waiting before the responder can answer), one responder thread with
 *       its own connection reading XREADGROUP COUNT 256 BLOCK NOACK and pipelining its replies
 *       with its next read. eddy: a blocking requester bus and a blocking responder bus
 *       (Competing, AtMostOnce, default workers, read_batch 256 like the raw responder's COUNT),
 *       eddy_bus_request one at a time.
 *       reqrep_p50_us_reactive, reqrep_p99_us_reactive: the same with eddy's reactive front end
 *       (requester on this thread's loop, responder on a loop of its own thread).
 *   reqrep_inflight64_reactive, reqrep_inflight64_blocking   requests per second with 64 in
 *       flight, --inflight-n M requests (default 20000, after M/10 untimed). hiredis: ONE libev
 *       client (hiredis async): one connection pipelining the request XADDs, one blocked in XREAD
 *       on the client's reply stream; it keeps 64 outstanding and sends the next as each reply
 *       arrives, against the raw responder above (full batches). eddy reactive: 64 in flight on
 *       one loop (eddy_rbus_request, the next sent from each reply's callback) against a reactive
 *       responder on its own loop thread. eddy blocking: 64 requester threads on one bus, each
 *       doing sequential eddy_bus_request, against a blocking responder bus.
 *
 * `# ... commands per request` lines give what the server counted for each side's first
 * repetition (INFO commandstats, before and after). --only sequential or inflight runs that part
 * alone (for a profile). */
#include <ev.h>
#include <hiredis/adapters/libev.h>
#include <hiredis/async.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "eddy/blocking.h"
#include "eddy/reactive.h"

#define INFLIGHT 64
#define PAYLOAD_LEN 64
#define TIMEOUT_MS 10000
#define SUBJECT "bench.echo"

static long SEQ_N, INF_N;
static char payload[PAYLOAD_LEN];

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* p50 and p99 (nearest rank) of n latencies, in out[0], out[1]. */
static void percentiles(double *us, long n, double *out) {
    qsort(us, (size_t)n, sizeof(*us), cmp_double);
    long r50 = (n * 50 + 99) / 100, r99 = (n * 99 + 99) / 100;
    out[0] = us[r50 > 0 ? r50 - 1 : 0];
    out[1] = us[r99 > 0 ? r99 - 1 : 0];
}

/* -n requests one after another through once(ctx), after an untimed tenth: p50 and p99 of their
 * latencies in out[0], out[1]. */
static void sequential(const bench_env *env, int rep, const char *label, void (*once)(void *),
                       void *ctx, double *out) {
    for (long i = 0; i < SEQ_N / 10; i++)
        once(ctx);
    double *us = malloc((size_t)SEQ_N * sizeof(*us));
    if (!us)
        bench_die("sequential", "out of memory");
    bench_counting k;
    bench_counting_start(env, rep, &k);
    for (long i = 0; i < SEQ_N; i++) {
        double t0 = bench_now();
        once(ctx);
        us[i] = (bench_now() - t0) * 1e6;
    }
    bench_counting_end(&k, label, "request", (double)SEQ_N);
    percentiles(us, SEQ_N, out);
    free(us);
}

static const redisReply *field(const redisReply *fields, const char *name) {
    for (size_t i = 0; i + 1 < fields->elements; i += 2)
        if (strcmp(fields->element[i]->str, name) == 0)
            return fields->element[i + 1];
    return NULL;
}

static void check_echo(const redisReply *data) {
    if (!data || data->len != PAYLOAD_LEN || memcmp(data->str, payload, PAYLOAD_LEN) != 0)
        bench_die("reply", "it does not echo the request");
}

/* ---- raw: the responder ------------------------------------------------------------------ */

typedef struct raw_responder {
    const bench_env *env;
    char req_key[128];
    pthread_t thread;
    atomic_bool stop;
} raw_responder;

static void *raw_respond(void *arg) {
    raw_responder *rs = arg;
    redisContext *c = bench_connect(rs->env);
    const char *read_argv[] = {"XREADGROUP", "GROUP", "responders", "r0",      "COUNT",     "256",
                               "BLOCK",      "100",   "NOACK",      "STREAMS", rs->req_key, ">"};
    size_t read_lens[12];
    for (int i = 0; i < 12; i++)
        read_lens[i] = strlen(read_argv[i]);
    redisAppendCommandArgv(c, 12, read_argv, read_lens);
    for (;;) {
        redisReply *r;
        if (redisGetReply(c, (void **)&r) != REDIS_OK)
            bench_die("responder XREADGROUP", c->errstr);
        if (r->type == REDIS_REPLY_NIL) {
            freeReplyObject(r);
            if (atomic_load(&rs->stop))
                break;
            redisAppendCommandArgv(c, 12, read_argv, read_lens);
            continue;
        }
        if (r->type != REDIS_REPLY_ARRAY)
            bench_die("responder XREADGROUP", r->type == REDIS_REPLY_ERROR ? r->str : "bad reply");
        const redisReply *entries = r->element[0]->element[1];
        for (size_t i = 0; i < entries->elements; i++) {
            const redisReply *fields = entries->element[i]->element[1];
            const redisReply *to = field(fields, "_reply_to"), *req = field(fields, "_request");
            const redisReply *id = field(fields, "id"), *data = field(fields, "data");
            if (!to || !req || !id || !data)
                bench_die("responder", "a request without reply-to, request id, id or data");
            char rid[160];
            int rlen = snprintf(rid, sizeof(rid), "r-%s", id->str);
            const char *argv[] = {
                "XADD",  to->str,   "NOMKSTREAM",       "MAXLEN", "~",
                "10000", "*",       "specversion",      "1.0",    "id",
                rid,     "source",  "/bench/responder", "type",   "bench.reply.v1",
                "data",  data->str, "_request",         req->str};
            size_t lens[19];
            for (int k = 0; k < 19; k++)
                lens[k] = strlen(argv[k]);
            lens[1] = to->len, lens[10] = (size_t)rlen, lens[16] = data->len, lens[18] = req->len;
            redisAppendCommandArgv(c, 19, argv, lens);
        }
        redisAppendCommandArgv(c, 12, read_argv, read_lens); /* the next read, same write */
        for (size_t i = 0; i < entries->elements; i++) {
            redisReply *x;
            if (redisGetReply(c, (void **)&x) != REDIS_OK || x->type != REDIS_REPLY_STRING)
                bench_die("responder XADD", c->err ? c->errstr : "not stored");
            freeReplyObject(x);
        }
        freeReplyObject(r);
    }
    redisFree(c);
    return NULL;
}

static void raw_responder_start(raw_responder *rs, const bench_env *env, const char *prefix) {
    rs->env = env;
    snprintf(rs->req_key, sizeof(rs->req_key), "%s:req", prefix);
    redisContext *c = bench_connect(env);
    redisReply *r = redisCommand(c, "XGROUP CREATE %s responders $ MKSTREAM", rs->req_key);
    if (!r || r->type == REDIS_REPLY_ERROR)
        bench_die("XGROUP CREATE", r ? r->str : c->errstr);
    freeReplyObject(r);
    redisFree(c);
    atomic_store(&rs->stop, false);
    if (pthread_create(&rs->thread, NULL, raw_respond, rs) != 0)
        bench_die("responder", "no thread");
}

static void raw_responder_stop(raw_responder *rs) {
    atomic_store(&rs->stop, true);
    pthread_join(rs->thread, NULL);
}

/* ---- raw: the request ------------------------------------------------------------------- */

typedef struct raw_client {
    char req_key[128];
    char reply_key[128];
    char last[48]; /* the last reply-stream id read */
    char hex[17];  /* the request-id prefix, as eddy's: 16 hex digits */
    unsigned long long seq;
} raw_client;

/* Creates the client's reply stream with an entry trimmed away at once (as eddy does), so the
 * first XREAD starts after a known id. */
static void raw_client_open(raw_client *q, redisContext *c, const char *prefix) {
    snprintf(q->req_key, sizeof(q->req_key), "%s:req", prefix);
    snprintf(q->reply_key, sizeof(q->reply_key), "%s:inbox:%s", prefix,
             "0123456789abcdef0123456789abcdef");
    snprintf(q->hex, sizeof(q->hex), "%016llx", (unsigned long long)bench_now() * 1000003ULL);
    q->seq = 0;
    redisReply *r = redisCommand(c, "XADD %s MAXLEN 0 * _open 1", q->reply_key);
    if (!r || r->type != REDIS_REPLY_STRING)
        bench_die("XADD reply stream", r && r->type == REDIS_REPLY_ERROR ? r->str : c->errstr);
    snprintf(q->last, sizeof(q->last), "%s", r->str);
    freeReplyObject(r);
}

/* The request XADD's argv, eddy's fields. The buffers hold the id, request id and deadline. */
typedef struct raw_request_args {
    char id[48], request[48], deadline[24];
    const char *argv[19];
    size_t lens[19];
} raw_request_args;

static void raw_request_args_make(raw_client *q, raw_request_args *a, unsigned long long *seq) {
    *seq = ++q->seq;
    snprintf(a->id, sizeof(a->id), "q0.%llu", *seq);
    snprintf(a->request, sizeof(a->request), "%s.%llu", q->hex, *seq);
    snprintf(a->deadline, sizeof(a->deadline), "%lld", eddy_deadline_in(TIMEOUT_MS));
    const char *argv[19] = {
        "XADD",       q->req_key, "*",        "specversion",      "1.0",      "id",    a->id,
        "source",     "/bench",   "type",     "bench.request.v1", "data",     payload, "_reply_to",
        q->reply_key, "_request", a->request, "_deadline",        a->deadline};
    for (int k = 0; k < 19; k++) {
        a->argv[k] = argv[k];
        a->lens[k] = k == 12 ? PAYLOAD_LEN : strlen(argv[k]);
    }
}

/* The sequence number of a reply's request (after the request-id prefix), 0 when not ours. */
static unsigned long long reply_seq(const raw_client *q, const redisReply *fields) {
    const redisReply *req = field(fields, "_request");
    if (!req || req->len < 18 || memcmp(req->str, q->hex, 16) != 0)
        return 0;
    check_echo(field(fields, "data"));
    return strtoull(req->str + 17, NULL, 10);
}

static void raw_request_once(raw_client *q, redisContext *c) {
    raw_request_args a;
    unsigned long long seq;
    raw_request_args_make(q, &a, &seq);
    redisAppendCommandArgv(c, 19, a.argv, a.lens);
    redisReply *r;
    for (bool sent = false, mine = false; !mine; sent = true) {
        const char *argv[] = {"XREAD", "COUNT",   "256",        "BLOCK",
                              "10000", "STREAMS", q->reply_key, q->last};
        size_t lens[8];
        for (int k = 0; k < 8; k++)
            lens[k] = strlen(argv[k]);
        redisAppendCommandArgv(c, 8, argv, lens);
        if (!sent && (redisGetReply(c, (void **)&r) != REDIS_OK || r->type != REDIS_REPLY_STRING))
            bench_die("requester XADD", c->errstr);
        if (!sent)
            freeReplyObject(r);
        if (redisGetReply(c, (void **)&r) != REDIS_OK || r->type != REDIS_REPLY_ARRAY)
            bench_die("requester XREAD", c->err ? c->errstr : "no reply before the timeout");
        const redisReply *entries = r->element[0]->element[1];
        for (size_t i = 0; i < entries->elements; i++) {
            const redisReply *e = entries->element[i];
            snprintf(q->last, sizeof(q->last), "%s", e->element[0]->str);
            mine |= reply_seq(q, e->element[1]) == seq;
        }
        freeReplyObject(r);
    }
}

typedef struct raw_once_ctx {
    raw_client *q;
    redisContext *c;
} raw_once_ctx;

static void raw_once(void *ctx) {
    raw_once_ctx *x = ctx;
    raw_request_once(x->q, x->c);
}

static void raw_sequential(const bench_env *env, int rep, double *out, void *user) {
    (void)user;
    char prefix[96];
    bench_ns(env, prefix, sizeof(prefix), "raw", rep);
    raw_responder rs;
    raw_responder_start(&rs, env, prefix);
    redisContext *c = bench_connect(env);
    raw_client q;
    raw_client_open(&q, c, prefix);
    raw_once_ctx ctx = {&q, c};
    sequential(env, rep, "hiredis sequential", raw_once, &ctx, out);
    redisFree(c);
    raw_responder_stop(&rs);
}

/* ---- raw: one libev client, 64 in flight ------------------------------------------------- */

typedef struct raw_async {
    raw_client q;
    struct ev_loop *loop;
    redisAsyncContext *pub, *sub;
    long total, warm, sent, answered;
    double t0, t1;
} raw_async;

static void async_sent(redisAsyncContext *ac, void *reply, void *user) {
    (void)user;
    redisReply *r = reply;
    if (!r || r->type != REDIS_REPLY_STRING)
        bench_die("async XADD", ac->errstr);
}

static void async_send(raw_async *a) {
    raw_request_args args;
    unsigned long long seq;
    raw_request_args_make(&a->q, &args, &seq);
    a->sent++;
    if (redisAsyncCommandArgv(a->pub, async_sent, a, 19, args.argv, args.lens) != REDIS_OK)
        bench_die("async XADD", a->pub->errstr);
}

static void async_read(raw_async *a);

static void async_replies(redisAsyncContext *ac, void *reply, void *user) {
    raw_async *a = user;
    redisReply *r = reply;
    if (!r || r->type != REDIS_REPLY_ARRAY)
        bench_die("async XREAD", r ? "no reply before the timeout" : ac->errstr);
    const redisReply *entries = r->element[0]->element[1];
    for (size_t i = 0; i < entries->elements; i++) {
        const redisReply *e = entries->element[i];
        snprintf(a->q.last, sizeof(a->q.last), "%s", e->element[0]->str);
        if (reply_seq(&a->q, e->element[1]) == 0)
            continue;
        if (++a->answered == a->warm)
            a->t0 = bench_now();
        if (a->sent < a->total)
            async_send(a);
    }
    if (a->answered >= a->total) {
        a->t1 = bench_now();
        redisAsyncDisconnect(a->pub);
        redisAsyncDisconnect(a->sub);
        return;
    }
    async_read(a);
}

static void async_read(raw_async *a) {
    const char *argv[] = {"XREAD", "COUNT",   "256",          "BLOCK",
                          "10000", "STREAMS", a->q.reply_key, a->q.last};
    size_t lens[8];
    for (int k = 0; k < 8; k++)
        lens[k] = strlen(argv[k]);
    if (redisAsyncCommandArgv(a->sub, async_replies, a, 8, argv, lens) != REDIS_OK)
        bench_die("async XREAD", a->sub->errstr);
}

static redisAsyncContext *async_connect(const bench_env *env, struct ev_loop *loop) {
    redisAsyncContext *ac = redisAsyncConnect("127.0.0.1", env->port);
    if (!ac || ac->err || redisLibevAttach(loop, ac) != REDIS_OK)
        bench_die("async connect", ac ? ac->errstr : "out of memory");
    return ac;
}

static void raw_inflight(const bench_env *env, int rep, double *out, void *user) {
    (void)user;
    char prefix[96];
    bench_ns(env, prefix, sizeof(prefix), "rawinf", rep);
    raw_responder rs;
    raw_responder_start(&rs, env, prefix);
    raw_async a = {.total = INF_N + INF_N / 10, .warm = INF_N / 10};
    redisContext *c = bench_connect(env);
    raw_client_open(&a.q, c, prefix);
    redisFree(c);
    a.loop = ev_loop_new(EVFLAG_AUTO);
    if (!a.loop)
        bench_die("libev", "no loop");
    a.pub = async_connect(env, a.loop);
    a.sub = async_connect(env, a.loop);
    bench_counting k;
    bench_counting_start(env, rep, &k);
    a.t0 = bench_now();
    async_read(&a);
    for (int i = 0; i < INFLIGHT; i++)
        async_send(&a);
    ev_run(a.loop, 0); /* until both connections closed */
    bench_counting_end(&k, "hiredis libev 64 in flight", "request", (double)a.total);
    out[0] = (double)(a.total - a.warm) / (a.t1 - a.t0);
    ev_loop_destroy(a.loop);
    raw_responder_stop(&rs);
}

/* ---- eddy: the responder and the request event ------------------------------------------ */

static eddy_status echo(eddy_delivery *d, eddy_event **reply, void *user) {
    (void)user;
    const eddy_event *req = eddy_delivery_event(d);
    eddy_event *r = eddy_event_new();
    if (!r)
        return EDDY_ERR_NOMEM;
    char id[96];
    snprintf(id, sizeof(id), "r-%s", eddy_event_id(req));
    size_t len;
    const void *data = eddy_event_data(req, &len);
    if (eddy_event_set_id(r, id) != EDDY_OK ||
        eddy_event_set_source(r, "/bench/responder") != EDDY_OK ||
        eddy_event_set_type(r, "bench.reply.v1") != EDDY_OK ||
        eddy_event_set_data(r, data, len) != EDDY_OK) {
        eddy_event_free(r);
        return EDDY_ERR_NOMEM;
    }
    *reply = r;
    return EDDY_OK;
}

/* The raw responder reads 256 requests per XREADGROUP: eddy's read_batch is set to match. */
static void eddy_settings_for(const bench_env *env, eddy_settings *s, const char *ns) {
    bench_settings(env, s, ns);
    s->source = "/bench";
}

static void responder_spec(eddy_subscription_spec *sp) {
    eddy_subscription_spec_init(sp);
    sp->name = "echo";
    sp->pattern = SUBJECT;
    sp->shape = EDDY_COMPETING;
    sp->group = "responders";
    sp->delivery = EDDY_AT_MOST_ONCE;
    sp->responder = echo;
}

static eddy_event *request_event(void) {
    eddy_event *ev = eddy_event_new();
    if (!ev || eddy_event_set_source(ev, "/bench") != EDDY_OK ||
        eddy_event_set_type(ev, "bench.request.v1") != EDDY_OK ||
        eddy_event_set_data(ev, payload, PAYLOAD_LEN) != EDDY_OK)
        bench_die("request event", "out of memory");
    return ev;
}

static void set_request_id(eddy_event *ev, int index, unsigned long long seq) {
    char id[48];
    snprintf(id, sizeof(id), "q%d.%llu", index, seq);
    if (eddy_event_set_id(ev, id) != EDDY_OK)
        bench_die("request event", "out of memory");
}

static void check_reply(const eddy_event *reply) {
    size_t len;
    const void *data = eddy_event_data(reply, &len);
    if (len != PAYLOAD_LEN || memcmp(data, payload, PAYLOAD_LEN) != 0)
        bench_die("eddy", "the reply does not echo the request");
}

/* ---- eddy blocking ---------------------------------------------------------------------- */

typedef struct eddy_pair {
    eddy_bus *responder, *requester;
} eddy_pair;

static eddy_pair eddy_open(const bench_env *env, const char *ns) {
    eddy_settings s;
    eddy_settings_for(env, &s, ns);
    eddy_subscription_spec sp;
    responder_spec(&sp);
    eddy_pair p;
    eddy_error err;
    if (eddy_bus_new(&s, &sp, 1, &p.responder, &err) != EDDY_OK ||
        eddy_bus_start(p.responder, &err) != EDDY_OK ||
        eddy_bus_new(&s, NULL, 0, &p.requester, &err) != EDDY_OK ||
        eddy_bus_start(p.requester, &err) != EDDY_OK)
        bench_die("eddy bus", err.detail);
    return p;
}

static void eddy_close(eddy_pair *p) {
    eddy_request_stats rs;
    eddy_bus_request_stats(p->requester, NULL, &rs);
    if (rs.sent != rs.answered)
        bench_die("eddy", "a request was not answered");
    eddy_bus_free(p->requester);
    eddy_bus_free(p->responder);
}

static void eddy_request_once(eddy_bus *bus, eddy_event *ev, int index, unsigned long long seq) {
    set_request_id(ev, index, seq);
    eddy_request_opts o = {eddy_deadline_in(TIMEOUT_MS), NULL, NULL};
    eddy_event *reply = NULL;
    eddy_error err;
    eddy_status st = eddy_bus_request(bus, SUBJECT, ev, &o, &reply, &err);
    if (st != EDDY_OK)
        bench_die(eddy_status_name(st), err.detail);
    check_reply(reply);
    eddy_event_free(reply);
}

typedef struct eddy_once_ctx {
    eddy_bus *bus;
    eddy_event *ev;
    unsigned long long seq;
} eddy_once_ctx;

static void eddy_once(void *ctx) {
    eddy_once_ctx *x = ctx;
    eddy_request_once(x->bus, x->ev, 0, ++x->seq);
}

static void eddy_sequential(const bench_env *env, int rep, double *out, void *user) {
    (void)user;
    char ns[96];
    bench_ns(env, ns, sizeof(ns), "eddy", rep);
    eddy_pair p = eddy_open(env, ns);
    eddy_event *ev = request_event();
    eddy_once_ctx ctx = {p.requester, ev, 0};
    sequential(env, rep, "eddy blocking sequential", eddy_once, &ctx, out);
    eddy_event_free(ev);
    eddy_close(&p);
}

typedef struct blocking_inflight {
    eddy_bus *bus;
    long per_thread;
    pthread_barrier_t ready, go, done;
} blocking_inflight;

typedef struct blocking_thread {
    blocking_inflight *f;
    int index;
    pthread_t thread;
} blocking_thread;

static void *blocking_requests(void *arg) {
    blocking_thread *t = arg;
    eddy_event *ev = request_event();
    unsigned long long seq = 0;
    for (long i = 0; i < t->f->per_thread / 10 + 1; i++)
        eddy_request_once(t->f->bus, ev, t->index, ++seq);
    pthread_barrier_wait(&t->f->ready);
    pthread_barrier_wait(&t->f->go);
    for (long i = 0; i < t->f->per_thread; i++)
        eddy_request_once(t->f->bus, ev, t->index, ++seq);
    pthread_barrier_wait(&t->f->done);
    eddy_event_free(ev);
    return NULL;
}

static void eddy_blocking_inflight(const bench_env *env, int rep, double *out, void *user) {
    (void)user;
    char ns[96];
    bench_ns(env, ns, sizeof(ns), "eddyinf", rep);
    eddy_pair p = eddy_open(env, ns);
    blocking_inflight f = {.bus = p.requester, .per_thread = (INF_N + INFLIGHT - 1) / INFLIGHT};
    pthread_barrier_init(&f.ready, NULL, INFLIGHT + 1);
    pthread_barrier_init(&f.go, NULL, INFLIGHT + 1);
    pthread_barrier_init(&f.done, NULL, INFLIGHT + 1);
    blocking_thread t[INFLIGHT];
    for (int i = 0; i < INFLIGHT; i++) {
        t[i].f = &f;
        t[i].index = i;
        if (pthread_create(&t[i].thread, NULL, blocking_requests, &t[i]) != 0)
            bench_die("in flight", "no thread");
    }
    pthread_barrier_wait(&f.ready);
    bench_counting k;
    bench_counting_start(env, rep, &k);
    pthread_barrier_wait(&f.go);
    double t0 = bench_now();
    pthread_barrier_wait(&f.done);
    double elapsed = bench_now() - t0;
    long total = f.per_thread * INFLIGHT;
    bench_counting_end(&k, "eddy blocking 64 in flight", "request", (double)total);
    for (int i = 0; i < INFLIGHT; i++)
        pthread_join(t[i].thread, NULL);
    pthread_barrier_destroy(&f.ready);
    pthread_barrier_destroy(&f.go);
    pthread_barrier_destroy(&f.done);
    eddy_close(&p);
    out[0] = (double)total / elapsed;
}

/* ---- eddy reactive ---------------------------------------------------------------------- */

/* The reactive responder: a bus on a loop of its own thread, until stopped. */
typedef struct rresponder {
    const bench_env *env;
    const char *ns;
    pthread_t thread;
    sem_t ready;
    struct ev_loop *loop;
    ev_async stop;
} rresponder;

static void rresponder_stop_cb(struct ev_loop *loop, ev_async *w, int revents) {
    (void)w, (void)revents;
    ev_break(loop, EVBREAK_ALL);
}

static void *rresponder_run(void *arg) {
    rresponder *r = arg;
    eddy_settings s;
    eddy_settings_for(r->env, &s, r->ns);
    eddy_subscription_spec sp;
    responder_spec(&sp);
    eddy_rbus *bus = bench_rbus_started(r->loop, &s, &sp, 1);
    sem_post(&r->ready);
    ev_run(r->loop, 0); /* until stopped */
    eddy_rbus_free(bus);
    return NULL;
}

static void rresponder_start(rresponder *r, const bench_env *env, const char *ns) {
    r->env = env;
    r->ns = ns;
    r->loop = ev_loop_new(EVFLAG_AUTO);
    if (!r->loop)
        bench_die("libev", "no loop");
    ev_async_init(&r->stop, rresponder_stop_cb);
    ev_async_start(r->loop, &r->stop);
    sem_init(&r->ready, 0, 0);
    if (pthread_create(&r->thread, NULL, rresponder_run, r) != 0)
        bench_die("reactive responder", "no thread");
    while (sem_wait(&r->ready) != 0)
        ;
}

static void rresponder_stop(rresponder *r) {
    ev_async_send(r->loop, &r->stop);
    pthread_join(r->thread, NULL);
    ev_async_stop(r->loop, &r->stop);
    ev_loop_destroy(r->loop);
    sem_destroy(&r->ready);
}

/* The reactive requester: `window` requests in flight, `total` in all, the first `warm` untimed;
 * with us, each timed request's latency. */
typedef struct rrequests rrequests;
struct rrequests {
    struct ev_loop *loop;
    eddy_rbus *bus;
    eddy_event *ev;
    long window, total, warm, sent, answered;
    double *us;
    struct rslot {
        struct rrequests *q;
        double started; /* when its request was sent */
    } * slots;          /* one per request in flight */
    double t0, t1;
};

static void rsend(rrequests *q);

static void on_reply(eddy_status st, eddy_event *reply, void *user) {
    struct rslot *slot = user;
    rrequests *q = slot->q;
    if (st != EDDY_OK)
        bench_die("eddy_rbus_request", eddy_status_name(st));
    check_reply(reply);
    eddy_event_free(reply);
    long done = ++q->answered;
    if (q->us && done > q->warm)
        q->us[done - q->warm - 1] = (bench_now() - slot->started) * 1e6;
    if (done == q->warm)
        q->t0 = bench_now();
    if (done == q->total) {
        q->t1 = bench_now();
        ev_break(q->loop, EVBREAK_ALL);
    } else if (q->sent < q->total) {
        rsend(q);
    }
}

static void rsend(rrequests *q) {
    long slot = q->sent % q->window;
    set_request_id(q->ev, 0, (unsigned long long)++q->sent);
    q->slots[slot].started = bench_now();
    eddy_request_opts o = {eddy_deadline_in(TIMEOUT_MS), NULL, NULL};
    eddy_error err;
    if (eddy_rbus_request(q->bus, SUBJECT, q->ev, &o, on_reply, &q->slots[slot], NULL, &err) !=
        EDDY_OK)
        bench_die("eddy_rbus_request", err.detail);
}

static void eddy_reactive_run(const bench_env *env, int rep, const char *side, long window, long n,
                              double *us, const char *label, double *rate) {
    char ns[96];
    bench_ns(env, ns, sizeof(ns), side, rep);
    rresponder resp;
    rresponder_start(&resp, env, ns);
    rrequests q = {.window = window, .total = n + n / 10, .warm = n / 10, .us = us};
    q.loop = ev_loop_new(EVFLAG_AUTO);
    q.slots = calloc((size_t)window, sizeof(*q.slots));
    if (!q.loop || !q.slots)
        bench_die("reactive requester", "out of memory");
    for (long i = 0; i < window; i++)
        q.slots[i].q = &q;
    q.ev = request_event();
    eddy_settings s;
    eddy_settings_for(env, &s, ns);
    q.bus = bench_rbus_started(q.loop, &s, NULL, 0);
    bench_counting k;
    bench_counting_start(env, rep, &k);
    q.t0 = bench_now();
    for (long i = 0; i < window; i++)
        rsend(&q);
    ev_run(q.loop, 0);
    bench_counting_end(&k, label, "request", (double)q.total);
    if (q.answered != q.total)
        bench_die("reactive requester", "the loop ended before every reply");
    if (rate)
        *rate = (double)(q.total - q.warm) / (q.t1 - q.t0);
    eddy_rbus_free(q.bus);
    eddy_event_free(q.ev);
    free(q.slots);
    ev_loop_destroy(q.loop);
    rresponder_stop(&resp);
}

static void eddy_rsequential(const bench_env *env, int rep, double *out, void *user) {
    (void)user;
    double *us = malloc((size_t)SEQ_N * sizeof(*us));
    if (!us)
        bench_die("sequential", "out of memory");
    eddy_reactive_run(env, rep, "eddyr", 1, SEQ_N, us, "eddy reactive sequential", NULL);
    percentiles(us, SEQ_N, out);
    free(us);
}

static void eddy_reactive_inflight(const bench_env *env, int rep, double *out, void *user) {
    (void)user;
    eddy_reactive_run(env, rep, "eddyrinf", INFLIGHT, INF_N, NULL, "eddy reactive 64 in flight",
                      out);
}

int main(int argc, char **argv) {
    static const char *const extra[] = {"--inflight-n", NULL};
    bench_env env;
    bench_setup(&env, argc, argv, 5000, extra, "[--inflight-n M]");
    SEQ_N = env.n;
    INF_N = bench_opt(&env, "--inflight-n", 20000);
    if (INF_N < INFLIGHT)
        bench_die("--inflight-n", "must be at least 64");
    memset(payload, 'q', sizeof(payload));

    if (bench_wanted(&env, "sequential")) {
        bench_side seq[3] = {{"hiredis", raw_sequential, NULL},
                             {"eddy-blocking", eddy_sequential, NULL},
                             {"eddy-reactive", eddy_rsequential, NULL}};
        double lat[6];
        bench_sides(&env, seq, 3, 2, lat);
        bench_print_med("reqrep_p50_us", 2, 0);
        bench_print_med("reqrep_p99_us", 3, 1);
        bench_print_med("reqrep_p50_us_reactive", 4, 0);
        bench_print_med("reqrep_p99_us_reactive", 5, 1);
    }
    if (bench_wanted(&env, "inflight")) {
        bench_side inf[3] = {{"hiredis-libev", raw_inflight, NULL},
                             {"eddy-reactive", eddy_reactive_inflight, NULL},
                             {"eddy-blocking", eddy_blocking_inflight, NULL}};
        double rps[3];
        bench_sides(&env, inf, 3, 1, rps);
        bench_print_med("reqrep_inflight64_reactive", 1, 0);
        bench_print_med("reqrep_inflight64_blocking", 2, 0);
    }

    bench_teardown(&env);
    return 0;
}
