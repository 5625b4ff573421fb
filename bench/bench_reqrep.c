/* Request/reply round trips on redis://, eddy beside raw hiredis doing the same stream
 * commands in the same run, against the same server (eddy also checks its registry: below):
 *
 *   reqrep_p50_us, reqrep_p99_us   N requests one after another (default 5000, after N/10
 *                                  untimed warm-up requests): latency of each round trip, in
 *                                  microseconds, from the call to the reply in hand.
 *   reqrep_64_inflight_rps         64 threads each doing sequential requests (2N in all,
 *                                  rounded up to a multiple of 64, after a warm-up): total
 *                                  requests per second.
 *
 * Both sides send the same request: an event with id, source, type and a 64-byte payload, to
 * one request stream; the responder echoes the payload back in a reply event. Responders are
 * as many as eddy's worker pool (settings.workers, default 4).
 *
 * eddy: a requester bus and a responder bus (two buses in this process, each with its own
 * connections, as two services would have). The responder is a Competing, AtMostOnce
 * subscription; its reader thread reads XREADGROUP ... COUNT 64 BLOCK ... NOACK, hands each
 * request to a worker thread, and sends the reply (XADD <reply stream> NOMKSTREAM MAXLEN ~ 10000
 * with the event's fields and the request id) pipelined with its next XREADGROUP. The
 * requester (eddy_bus_request) first asks the subscription registry whether anything serves
 * the subject (ZRANGEBYSCORE, one round trip: this is how eddy answers EDDY_ERR_NO_RESPONDERS
 * at once), then XADDs the request (the event's fields plus reply-to, request id and deadline);
 * both go on the bus's publishing connection, shared by all requesting threads under a lock
 * held for each round trip; the bus's control thread, blocked in XREAD BLOCK on the bus's one
 * reply stream, matches the reply to the waiting thread and wakes it through a condition
 * variable. Every lease_ms / 3 the control thread also renews the registry (ZADD,
 * ZREMRANGEBYSCORE, PEXPIRE).
 *
 * hiredis: the same commands in their simplest form, without the registry check. A responder
 * thread per eddy worker, each with its own connection, blocks in XREADGROUP GROUP ... COUNT
 * 64 BLOCK ... NOACK on the request stream (group created first) and XADDs each reply
 * (NOMKSTREAM MAXLEN ~ 10000, same fields), pipelined per batch. A requester XADDs the request
 * (same fields) on its own connection and blocks in XREAD BLOCK on its own reply stream from
 * the last id it read; with 64 in flight, 64 requester threads each have their own connection
 * and reply stream. No registry, no shared connection, no thread hand-off on the requesting
 * side: what the ratio measures is that machinery plus eddy's encoding and bookkeeping.
 *
 * After each timed phase a `# ... commands per request` line gives the Redis commands the
 * server counted (INFO commandstats, before and after) divided by the requests, so what each
 * side sent is measured, not only described here.
 *
 * Usage: bench_reqrep [redis://127.0.0.1:PORT] [N]; without a URL it starts its own
 * redis-server on a free loopback port. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "eddy/blocking.h"

static int N = 5000;
#define INFLIGHT 64
#define PAYLOAD_LEN 64
#define READ_COUNT 64        /* entries per XREADGROUP: eddy's default read_batch */
#define REPLY_MAXLEN "10000" /* eddy's reply-stream trim */
#define TIMEOUT_MS 10000     /* a request unanswered this long fails the bench */

static int port;
static unsigned workers; /* eddy's default worker pool: the raw side's responder threads */
static char payload[PAYLOAD_LEN];
static char raw_prefix[64]; /* raw keys: "<raw_prefix>:req", "<raw_prefix>:reply:<n>" */
static char eddy_ns[64];

static void die(const char *what, const char *detail) {
    fprintf(stderr, "bench_reqrep: %s: %s\n", what, detail ? detail : "");
    exit(1);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The q-th percentile of n sorted samples (nearest rank). */
static double percentile(const double *sorted, int n, int q) {
    int rank = (n * q + 99) / 100;
    return sorted[rank > 0 ? rank - 1 : 0];
}

/* ---- server-side command counts --------------------------------------------------------- */

#define MAX_CMDS 128

typedef struct cmdstats {
    int n;
    char name[MAX_CMDS][48];
    long long calls[MAX_CMDS];
} cmdstats;

static void cmdstats_read(cmdstats *out) {
    redisContext *c = bench_connect(port);
    redisReply *r = redisCommand(c, "INFO commandstats");
    if (!r || r->type != REDIS_REPLY_STRING)
        die("INFO commandstats", c->errstr);
    out->n = 0;
    for (const char *line = r->str; line && *line && out->n < MAX_CMDS;) {
        long long calls;
        char name[48];
        if (sscanf(line, "cmdstat_%47[^:]:calls=%lld", name, &calls) == 2) {
            snprintf(out->name[out->n], sizeof(out->name[0]), "%s", name);
            out->calls[out->n++] = calls;
        }
        line = strchr(line, '\n');
        if (line)
            line++;
    }
    freeReplyObject(r);
    redisFree(c);
}

/* Prints what the server counted between two readings, per request. */
static void cmdstats_print(const char *side, const char *phase, const cmdstats *before,
                           const cmdstats *after, long long requests) {
    printf("# %s %s commands per request:", side, phase);
    for (int i = 0; i < after->n; i++) {
        if (strcmp(after->name[i], "info") == 0)
            continue;
        long long was = 0;
        for (int j = 0; j < before->n; j++)
            if (strcmp(before->name[j], after->name[i]) == 0)
                was = before->calls[j];
        if (after->calls[i] > was)
            printf(" %s=%.2f", after->name[i], (double)(after->calls[i] - was) / (double)requests);
    }
    printf("\n");
    fflush(stdout);
}

/* ---- raw hiredis -------------------------------------------------------------------------- */

typedef struct raw_responders {
    pthread_t threads[64];
    unsigned n;
    atomic_bool stop;
} raw_responders;

static const redisReply *field(const redisReply *fields, const char *name) {
    for (size_t i = 0; i + 1 < fields->elements; i += 2)
        if (strcmp(fields->element[i]->str, name) == 0)
            return fields->element[i + 1];
    return NULL;
}

static void *raw_responder(void *arg) {
    raw_responders *rs = ((void **)arg)[0];
    unsigned index = (unsigned)(size_t)((void **)arg)[1];
    free(arg);
    redisContext *c = bench_connect(port);
    char key[96], consumer[16];
    snprintf(key, sizeof(key), "%s:req", raw_prefix);
    snprintf(consumer, sizeof(consumer), "r%u", index);
    while (!atomic_load(&rs->stop)) {
        redisReply *r = redisCommand(c,
                                     "XREADGROUP GROUP responders %s COUNT %d BLOCK 100 NOACK "
                                     "STREAMS %s >",
                                     consumer, READ_COUNT, key);
        if (!r)
            die("responder XREADGROUP", c->errstr);
        if (r->type == REDIS_REPLY_NIL) {
            freeReplyObject(r);
            continue;
        }
        if (r->type != REDIS_REPLY_ARRAY)
            die("responder XREADGROUP", r->type == REDIS_REPLY_ERROR ? r->str : "bad reply");
        const redisReply *entries = r->element[0]->element[1];
        for (size_t i = 0; i < entries->elements; i++) {
            const redisReply *fields = entries->element[i]->element[1];
            const redisReply *reply_to = field(fields, "_reply_to");
            const redisReply *request = field(fields, "_request");
            const redisReply *id = field(fields, "id");
            const redisReply *data = field(fields, "data");
            if (!reply_to || !request || !id || !data)
                die("responder", "a request without reply-to, request id, id or data");
            redisAppendCommand(c,
                               "XADD %b NOMKSTREAM MAXLEN ~ " REPLY_MAXLEN " * specversion 1.0 "
                               "id r-%b source /bench/responder type bench.reply.v1 data %b "
                               "_request %b",
                               reply_to->str, reply_to->len, id->str, id->len, data->str, data->len,
                               request->str, request->len);
        }
        for (size_t i = 0; i < entries->elements; i++) {
            redisReply *x;
            if (redisGetReply(c, (void **)&x) != REDIS_OK)
                die("responder XADD", c->errstr);
            if (x->type != REDIS_REPLY_STRING)
                die("responder XADD", x->type == REDIS_REPLY_ERROR ? x->str : "not stored");
            freeReplyObject(x);
        }
        freeReplyObject(r);
    }
    redisFree(c);
    return NULL;
}

static void raw_responders_start(raw_responders *rs) {
    redisContext *c = bench_connect(port);
    redisReply *r = redisCommand(c, "XGROUP CREATE %s:req responders $ MKSTREAM", raw_prefix);
    if (!r || (r->type == REDIS_REPLY_ERROR && !strstr(r->str, "BUSYGROUP")))
        die("XGROUP CREATE", r ? r->str : c->errstr);
    freeReplyObject(r);
    redisFree(c);
    atomic_store(&rs->stop, false);
    rs->n = workers < 64 ? workers : 64;
    for (unsigned i = 0; i < rs->n; i++) {
        void **arg = malloc(2 * sizeof(*arg));
        if (!arg)
            die("responder", "out of memory");
        arg[0] = rs;
        arg[1] = (void *)(size_t)i;
        pthread_create(&rs->threads[i], NULL, raw_responder, arg);
    }
}

static void raw_responders_stop(raw_responders *rs) {
    atomic_store(&rs->stop, true);
    for (unsigned i = 0; i < rs->n; i++)
        pthread_join(rs->threads[i], NULL);
}

typedef struct raw_requester {
    redisContext *c;
    char req_key[96];
    char reply_key[96];
    char last[48];
    unsigned long long seq;
} raw_requester;

/* Connects and creates the reply stream with an entry trimmed away at once (as eddy does), so
 * the first XREAD starts after a known id. */
static void raw_requester_open(raw_requester *q, int index) {
    q->c = bench_connect(port);
    q->seq = 0;
    snprintf(q->req_key, sizeof(q->req_key), "%s:req", raw_prefix);
    snprintf(q->reply_key, sizeof(q->reply_key), "%s:reply:%d", raw_prefix, index);
    redisReply *r = redisCommand(q->c, "XADD %s MAXLEN 0 * _open 1", q->reply_key);
    if (!r || r->type != REDIS_REPLY_STRING)
        die("XADD reply stream", r && r->type == REDIS_REPLY_ERROR ? r->str : q->c->errstr);
    snprintf(q->last, sizeof(q->last), "%s", r->str);
    freeReplyObject(r);
}

/* The reply stream stays: deleting it here would be counted with the timed commands. */
static void raw_requester_close(raw_requester *q) { redisFree(q->c); }

static void raw_request(raw_requester *q) {
    char id[128];
    snprintf(id, sizeof(id), "%s.%llu", q->reply_key, ++q->seq);
    redisReply *r = redisCommand(q->c,
                                 "XADD %s * specversion 1.0 id %s source /bench type "
                                 "bench.request.v1 data %b _reply_to %s _request %s _deadline %lld",
                                 q->req_key, id, payload, (size_t)PAYLOAD_LEN, q->reply_key, id,
                                 eddy_deadline_in(TIMEOUT_MS));
    if (!r || r->type != REDIS_REPLY_STRING)
        die("requester XADD", r && r->type == REDIS_REPLY_ERROR ? r->str : q->c->errstr);
    freeReplyObject(r);
    for (;;) {
        r = redisCommand(q->c, "XREAD COUNT 256 BLOCK %d STREAMS %s %s", TIMEOUT_MS, q->reply_key,
                         q->last);
        if (!r || r->type != REDIS_REPLY_ARRAY)
            die("requester XREAD", r ? "no reply before the timeout" : q->c->errstr);
        const redisReply *entries = r->element[0]->element[1];
        bool mine = false;
        for (size_t i = 0; i < entries->elements; i++) {
            const redisReply *e = entries->element[i];
            snprintf(q->last, sizeof(q->last), "%s", e->element[0]->str);
            const redisReply *request = field(e->element[1], "_request");
            const redisReply *data = field(e->element[1], "data");
            if (request && strcmp(request->str, id) == 0) {
                if (!data || data->len != PAYLOAD_LEN || memcmp(data->str, payload, PAYLOAD_LEN))
                    die("requester", "the reply does not echo the request");
                mine = true;
            }
        }
        freeReplyObject(r);
        if (mine)
            return;
    }
}

/* ---- eddy --------------------------------------------------------------------------------- */

static eddy_status echo(eddy_delivery *d, eddy_event **reply, void *user) {
    const eddy_event *req = eddy_delivery_event(d);
    eddy_event *r = eddy_event_new();
    if (!r)
        return EDDY_ERR_NOMEM;
    char id[96];
    snprintf(id, sizeof(id), "r-%s", eddy_event_id(req));
    size_t len;
    const void *data = eddy_event_data(req, &len);
    eddy_status st = eddy_event_set_id(r, id);
    if (st == EDDY_OK)
        st = eddy_event_set_source(r, "/bench/responder");
    if (st == EDDY_OK)
        st = eddy_event_set_type(r, "bench.reply.v1");
    if (st == EDDY_OK)
        st = eddy_event_set_data(r, data, len);
    if (st != EDDY_OK) {
        eddy_event_free(r);
        return st;
    }
    *reply = r;
    return EDDY_OK;
}

typedef struct eddy_pair {
    eddy_bus *responder;
    eddy_bus *requester;
} eddy_pair;

static eddy_pair eddy_open(const char *url) {
    eddy_settings s;
    eddy_settings_init(&s);
    s.url = url;
    s.ns = eddy_ns;
    s.source = "/bench";
    eddy_subscription_spec sp;
    eddy_subscription_spec_init(&sp);
    sp.name = "echo";
    sp.pattern = "bench.echo";
    sp.shape = EDDY_COMPETING;
    sp.group = "responders";
    sp.delivery = EDDY_AT_MOST_ONCE;
    sp.responder = echo;
    eddy_pair p;
    eddy_error err;
    if (eddy_bus_new(&s, &sp, 1, &p.responder, &err) != EDDY_OK ||
        eddy_bus_start(p.responder, &err) != EDDY_OK ||
        eddy_bus_new(&s, NULL, 0, &p.requester, &err) != EDDY_OK ||
        eddy_bus_start(p.requester, &err) != EDDY_OK)
        die("eddy bus", err.detail);
    return p;
}

static void eddy_close(eddy_pair *p) {
    eddy_request_stats rs;
    eddy_bus_request_stats(p->requester, NULL, &rs);
    if (rs.sent != rs.answered)
        die("eddy", "a request was not answered");
    eddy_bus_free(p->requester);
    eddy_bus_free(p->responder);
}

typedef struct eddy_requester {
    eddy_bus *bus;
    eddy_event *ev;
    unsigned long long seq;
    int index;
} eddy_requester;

static void eddy_requester_open(eddy_requester *q, eddy_bus *bus, int index) {
    q->bus = bus;
    q->seq = 0;
    q->index = index;
    q->ev = eddy_event_new();
    if (!q->ev || eddy_event_set_source(q->ev, "/bench") != EDDY_OK ||
        eddy_event_set_type(q->ev, "bench.request.v1") != EDDY_OK ||
        eddy_event_set_data(q->ev, payload, PAYLOAD_LEN) != EDDY_OK)
        die("eddy event", "out of memory");
}

static void eddy_request_once(eddy_requester *q) {
    char id[64];
    snprintf(id, sizeof(id), "q%d.%llu", q->index, ++q->seq);
    eddy_event_set_id(q->ev, id);
    eddy_request_opts o = {eddy_deadline_in(TIMEOUT_MS), NULL, NULL};
    eddy_event *reply = NULL;
    eddy_error err;
    eddy_status st = eddy_bus_request(q->bus, "bench.echo", q->ev, &o, &reply, &err);
    if (st != EDDY_OK)
        die(eddy_status_name(st), err.detail);
    size_t len;
    const void *data = eddy_event_data(reply, &len);
    if (len != PAYLOAD_LEN || memcmp(data, payload, PAYLOAD_LEN) != 0)
        die("eddy", "the reply does not echo the request");
    eddy_event_free(reply);
}

/* ---- the two measurements, one code path for both sides --------------------------------- */

typedef enum side { RAW, EDDY } side;

typedef struct requester {
    side side;
    raw_requester raw;
    eddy_requester eddy;
} requester;

static void request_once(requester *q) {
    if (q->side == RAW)
        raw_request(&q->raw);
    else
        eddy_request_once(&q->eddy);
}

static void sequential(requester *q, double *p50, double *p99) {
    double *us = malloc((size_t)N * sizeof(*us));
    if (!us)
        die("sequential", "out of memory");
    for (int i = 0; i < N / 10; i++)
        request_once(q);
    cmdstats before, after;
    cmdstats_read(&before);
    for (int i = 0; i < N; i++) {
        double t0 = bench_now();
        request_once(q);
        us[i] = (bench_now() - t0) * 1e6;
    }
    cmdstats_read(&after);
    cmdstats_print(q->side == RAW ? "hiredis" : "eddy", "sequential", &before, &after, N);
    qsort(us, (size_t)N, sizeof(*us), cmp_double);
    *p50 = percentile(us, N, 50);
    *p99 = percentile(us, N, 99);
    free(us);
}

typedef struct inflight {
    side side;
    eddy_bus *bus;
    int per_thread;
    pthread_barrier_t ready, go, done;
} inflight;

typedef struct inflight_thread {
    inflight *f;
    int index;
    pthread_t thread;
} inflight_thread;

static void *inflight_run(void *arg) {
    inflight_thread *t = arg;
    inflight *f = t->f;
    requester q = {.side = f->side};
    if (f->side == RAW)
        raw_requester_open(&q.raw, t->index);
    else
        eddy_requester_open(&q.eddy, f->bus, t->index);
    for (int i = 0; i < f->per_thread / 10 + 1; i++)
        request_once(&q); /* warm-up: connections, reply streams, caches */
    pthread_barrier_wait(&f->ready);
    pthread_barrier_wait(&f->go);
    for (int i = 0; i < f->per_thread; i++)
        request_once(&q);
    pthread_barrier_wait(&f->done); /* the clean-up below is not timed */
    if (f->side == RAW)
        raw_requester_close(&q.raw);
    else
        eddy_event_free(q.eddy.ev);
    return NULL;
}

static double in_flight(side sd, eddy_bus *bus) {
    inflight f = {.side = sd, .bus = bus, .per_thread = (2 * N + INFLIGHT - 1) / INFLIGHT};
    pthread_barrier_init(&f.ready, NULL, INFLIGHT + 1);
    pthread_barrier_init(&f.go, NULL, INFLIGHT + 1);
    pthread_barrier_init(&f.done, NULL, INFLIGHT + 1);
    inflight_thread t[INFLIGHT];
    for (int i = 0; i < INFLIGHT; i++) {
        t[i].f = &f;
        t[i].index = i;
        if (pthread_create(&t[i].thread, NULL, inflight_run, &t[i]) != 0)
            die("in flight", "could not start a thread");
    }
    pthread_barrier_wait(&f.ready); /* every thread warmed up */
    cmdstats before, after;
    cmdstats_read(&before);
    pthread_barrier_wait(&f.go);
    double t0 = bench_now();
    pthread_barrier_wait(&f.done);
    double elapsed = bench_now() - t0;
    long long total = (long long)f.per_thread * INFLIGHT;
    cmdstats_read(&after);
    for (int i = 0; i < INFLIGHT; i++)
        pthread_join(t[i].thread, NULL);
    cmdstats_print(sd == RAW ? "hiredis" : "eddy", "64 in flight", &before, &after, total);
    pthread_barrier_destroy(&f.ready);
    pthread_barrier_destroy(&f.go);
    pthread_barrier_destroy(&f.done);
    return (double)total / elapsed;
}

/* Deletes this run's keys on a server the bench did not start. */
static void cleanup(void) {
    redisContext *c = bench_connect(port);
    const char *patterns[2] = {raw_prefix, NULL};
    char eddy_pattern[80];
    snprintf(eddy_pattern, sizeof(eddy_pattern), "{%s}", eddy_ns);
    patterns[1] = eddy_pattern;
    for (int p = 0; p < 2; p++) {
        char cursor[32] = "0";
        do {
            redisReply *r = redisCommand(c, "SCAN %s MATCH %s:* COUNT 1000", cursor, patterns[p]);
            if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2)
                die("SCAN", c->errstr);
            snprintf(cursor, sizeof(cursor), "%s", r->element[0]->str);
            for (size_t i = 0; i < r->element[1]->elements; i++)
                freeReplyObject(redisCommand(c, "DEL %s", r->element[1]->element[i]->str));
            freeReplyObject(r);
        } while (strcmp(cursor, "0") != 0);
    }
    redisFree(c);
}

int main(int argc, char **argv) {
    char url[128];
    pid_t server = 0;
    if (argc > 1) {
        snprintf(url, sizeof(url), "%s", argv[1]);
        if (sscanf(url, "redis://127.0.0.1:%d", &port) != 1) {
            fprintf(stderr, "usage: %s [redis://127.0.0.1:PORT] [N]\n", argv[0]);
            return 2;
        }
    } else if (!(server = bench_start_redis(url, sizeof(url), &port))) {
        fprintf(stderr, "could not start redis-server\n");
        return 1;
    }
    if (argc > 2 && (N = atoi(argv[2])) < 1) {
        fprintf(stderr, "N must be at least 1\n");
        return 2;
    }
    eddy_settings defaults;
    eddy_settings_init(&defaults);
    workers = defaults.workers;
    memset(payload, 'q', sizeof(payload));
    snprintf(raw_prefix, sizeof(raw_prefix), "rawrr-%ld-%ld", (long)time(NULL), (long)getpid());
    snprintf(eddy_ns, sizeof(eddy_ns), "reqrep-%ld-%ld", (long)time(NULL), (long)getpid());

    raw_responders rs;
    double raw_p50, raw_p99, eddy_p50, eddy_p99;
    requester q = {.side = RAW};
    raw_responders_start(&rs);
    raw_requester_open(&q.raw, INFLIGHT);
    sequential(&q, &raw_p50, &raw_p99);
    raw_requester_close(&q.raw);
    raw_responders_stop(&rs);

    eddy_pair p = eddy_open(url);
    q.side = EDDY;
    eddy_requester_open(&q.eddy, p.requester, INFLIGHT);
    sequential(&q, &eddy_p50, &eddy_p99);
    eddy_event_free(q.eddy.ev);
    eddy_close(&p);
    bench_print("reqrep_p50_us", eddy_p50, raw_p50);
    bench_print("reqrep_p99_us", eddy_p99, raw_p99);

    raw_responders_start(&rs);
    double raw_rps = in_flight(RAW, NULL);
    raw_responders_stop(&rs);
    p = eddy_open(url);
    double eddy_rps = in_flight(EDDY, p.requester);
    eddy_close(&p);
    bench_print("reqrep_64_inflight_rps", eddy_rps, raw_rps);

    if (server)
        bench_stop_redis(server);
    else
        cleanup();
    return 0;
}
