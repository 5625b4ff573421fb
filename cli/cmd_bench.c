/* SPDX-License-Identifier: BSD-3-Clause */
/* eddy bench: measures a deployment, as `nats bench` does, with the public blocking API only.
 *   pub  P publisher buses, each a thread publishing its share (batches of --batch)
 *   sub  S subscriber buses (fanout: each gets every message; --group: one competing group)
 *        and P publishers in the same process; each event's data starts with the realtime
 *        clock at its publish, so the handler sees publish-to-handle latency
 *   req  R responder buses (one competing group, echo) and C requester buses of --inflight
 *        threads each, one request at a time per thread
 * Rules: the subject is a fresh one by default, and one that already exists is refused unless
 * --keep (its data is not ours to delete); every bus is freed before the subject is removed
 * (eddy_admin_subject_remove), so nothing recreates it. Latency is recorded per thread in an
 * HDR-style histogram (bench_hist.h) and merged at the end; counters the main thread reads while
 * the run goes on (for the progress bar) are atomics. */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_hist.h"
#include "cli.h"

static const char help[] =
    "usage: eddy bench pub [SUBJECT] [--msgs N | --duration MS] [--size BYTES] [--pub N]\n"
    "                      [--batch N]\n"
    "       eddy bench sub [SUBJECT] [--sub N] [--group GROUP] [--pub N] [the options of pub]\n"
    "       eddy bench req [SUBJECT] [--clients N] [--inflight N] [--responders N]\n"
    "                      [--no-responder] [--msgs N | --duration MS] [--size BYTES]\n"
    "\n"
    "Measures the backend of --url: publishes, consumes and requests there, with a progress\n"
    "bar on stderr when it is a terminal, then prints messages, bytes, elapsed time, msgs/s\n"
    "and MB/s (10^6 bytes) per role and per client (min, avg, max), and latency percentiles in\n"
    "microseconds (p50, p90, p99, p99.9, max). It WRITES TO THE TARGET REDIS: events to SUBJECT\n"
    "(default a fresh eddy.bench.<random> subject), its consumer groups and registry entries;\n"
    "when it ends it removes the subject (stream, groups, dedup records) unless --keep. A\n"
    "SUBJECT that already exists is refused unless --keep (nothing of it is then removed).\n"
    "  pub               publishers only; latency: each publish call (a batch with --batch)\n"
    "  sub               subscribers, and publishers in this process (--pub 0: only\n"
    "                    subscribe, to another process's `eddy bench pub SUBJECT --keep`);\n"
    "                    latency: from publish to handler, by a timestamp in each event's\n"
    "                    data (needs --size 8 or more; the clocks of both hosts)\n"
    "  req               responders (echo) and requesters; latency: each request's round trip\n"
    "  --msgs N          messages (requests) in all, shared among publishers (requesters)\n"
    "                    (default 10000)\n"
    "  --duration MS     run for MS milliseconds instead of --msgs\n"
    "  --size BYTES      each event's data (default 128)\n"
    "  --pub N           publishers, one bus each (default 1)\n"
    "  --batch N         events per publish call (eddy_bus_publish_batch), default 1\n"
    "  --sub N           subscribers, one bus each (default 1)\n"
    "  --group GROUP     sub: the subscribers compete in GROUP (each message once) instead of\n"
    "                    each getting every message (fanout)\n"
    "  --clients N       req: requester buses (default 1)\n"
    "  --inflight N      req: requests in flight per requester, one thread each (default 1)\n"
    "  --responders N    req: responder buses, one group, answering with the request's data\n"
    "                    (default 1)\n"
    "  --no-responder    req: start none; requests go to responders already running\n"
    "  --timeout MS      a request's deadline; sub: how long to wait for the last messages\n"
    "                    after the publishers are done (default 5000)\n"
    "  --keep            leave the subject and what is in it\n"
    "  --csv             a CSV table (one row per role) instead of the text summary\n"
    "  --json            one JSON document: {\"mode\", \"subject\", ..., \"roles\": {\"pub\",\n"
    "                    \"sub\", \"req\": {\"clients\", \"msgs\", \"bytes\", \"elapsed_s\",\n"
    "                    \"msgs_per_s\", \"mb_per_s\", \"errors\", \"per_client\": [...],\n"
    "                    \"latency_us\": {\"count\", \"min\", \"avg\", \"p50\", \"p90\", \"p99\",\n"
    "                    \"p99_9\", \"max\"}}}, \"removed\"}\n"
    "Settings apply to every bus (-X read_batch=256, -X workers=8, ...). Exit 1 when a publish\n"
    "or request failed or messages did not arrive; the summary is printed first.\n";

enum { MODE_PUB, MODE_SUB, MODE_REQ };
/* The roles of the summary, then the responders (counted, not summarized). */
enum { ROLE_PUB, ROLE_SUB, ROLE_REQ, ROLES, ROLE_RESP = ROLES, ALL_ROLES };
static const char *const role_names[ROLES] = {"pub", "sub", "req"};

typedef struct bench bench;

/* One thread's or one subscriber's figures. */
typedef struct worker {
    bench *b;
    struct client *c;
    pthread_t thread;
    bool started;
    atomic_bool finished; /* a publisher or requester thread is done */
    bench_hist *hist;
    atomic_ullong done;       /* published, received or answered */
    unsigned long long share; /* a publisher's part of --msgs */
    unsigned long long errors;
    long long start_ns, end_ns; /* monotonic */
    pthread_mutex_t lock;       /* subscribers: their handlers run on several workers */
} worker;

typedef struct client {
    eddy_bus *bus;
    worker *w; /* nw of them: 1, or --inflight for a requester */
    int nw;
} client;

struct bench {
    cli *cli;
    int mode;
    const char *subject;
    long long msgs, size, batch, duration_ms, timeout_ms;
    long long run_start_ns; /* when the publishers or requesters started */
    atomic_bool stop;
    atomic_llong claimed; /* requests claimed of --msgs */
    client *role[ALL_ROLES];
    int nrole[ALL_ROLES];
    pthread_mutex_t err_lock;
    eddy_status first_st; /* the first failure, said once */
    eddy_error first_err;
    const char *first_what;
};

static long long mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static long long real_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void failed(bench *b, const char *what, eddy_status st, const eddy_error *err) {
    pthread_mutex_lock(&b->err_lock);
    if (b->first_st == EDDY_OK) {
        b->first_st = st;
        b->first_what = what;
        if (err)
            b->first_err = *err;
    }
    pthread_mutex_unlock(&b->err_lock);
}

/* Whether the run is over for a thread that has `sent` so far of its `share` (--msgs). */
static bool over(bench *b, unsigned long long sent, unsigned long long share) {
    if (atomic_load(&b->stop))
        return true;
    if (b->duration_ms > 0)
        return mono_ns() - b->run_start_ns >= b->duration_ms * 1000000LL;
    return sent >= share;
}

/* ---- publishers ---------------------------------------------------------------------------- */

static void stamp(char *data, size_t size) {
    if (size >= 8) {
        long long t = real_ns();
        memcpy(data, &t, sizeof(t));
    }
}

static void *publisher(void *arg) {
    worker *w = arg;
    bench *b = w->b;
    unsigned long long share = w->share;
    size_t n = (size_t)b->batch;
    eddy_event **evs = calloc(n, sizeof(*evs));
    char *data = malloc((size_t)b->size + 1);
    eddy_error err = {0};
    eddy_status st = evs && data ? EDDY_OK : EDDY_ERR_NOMEM;
    if (data)
        memset(data, 'e', (size_t)b->size);
    for (size_t i = 0; i < n && st == EDDY_OK; i++)
        if ((st = eddy_bus_new_event(w->c->bus, "eddy.bench", &evs[i], &err)) == EDDY_OK)
            st = eddy_event_set_datacontenttype(evs[i], "application/octet-stream");
    if (st != EDDY_OK)
        failed(b, "cannot build the events", st, &err);
    w->start_ns = mono_ns();
    unsigned long long sent = 0;
    while (st == EDDY_OK && !over(b, sent, share)) {
        size_t k = n;
        if (b->duration_ms == 0 && share - sent < k)
            k = (size_t)(share - sent);
        stamp(data, (size_t)b->size);
        for (size_t i = 0; i < k && st == EDDY_OK; i++) {
            char id[EDDY_UUID_SIZE];
            eddy_uuid7(id); /* a fresh id: with -X publish_dedup_ms each is stored */
            if ((st = eddy_event_set_id(evs[i], id)) == EDDY_OK)
                st = eddy_event_set_data(evs[i], data, (size_t)b->size);
        }
        long long t = mono_ns();
        size_t published = 0;
        if (st == EDDY_OK && k == 1)
            st = eddy_bus_publish(w->c->bus, b->subject, evs[0], NULL, 0, &err);
        else if (st == EDDY_OK)
            st = eddy_bus_publish_batch(w->c->bus, b->subject, (const eddy_event *const *)evs, k,
                                        &published, &err);
        if (st != EDDY_OK) {
            w->errors++;
            failed(b, "publish", st, &err);
            if (k > 1)
                sent += published;
            break;
        }
        bench_hist_record(w->hist, (uint64_t)(mono_ns() - t));
        sent += k;
        atomic_store(&w->done, sent);
    }
    atomic_store(&w->done, sent);
    w->end_ns = mono_ns();
    atomic_store(&w->finished, true);
    for (size_t i = 0; evs && i < n; i++)
        eddy_event_free(evs[i]);
    free(evs);
    free(data);
    return NULL;
}

/* ---- subscribers and responders ------------------------------------------------------------ */

static eddy_status on_message(eddy_delivery *d, void *user) {
    worker *w = user;
    long long now = real_ns(), mono = mono_ns();
    size_t len;
    const char *data = eddy_event_data(eddy_delivery_event(d), &len);
    pthread_mutex_lock(&w->lock);
    if (data && len >= 8 && w->b->size >= 8) {
        long long t;
        memcpy(&t, data, sizeof(t));
        bench_hist_record(w->hist, now > t ? (uint64_t)(now - t) : 0);
    }
    if (w->start_ns == 0)
        w->start_ns = mono;
    w->end_ns = mono;
    atomic_fetch_add(&w->done, 1);
    pthread_mutex_unlock(&w->lock);
    return EDDY_OK;
}

static eddy_status on_request(eddy_delivery *d, eddy_event **reply, void *user) {
    worker *w = user;
    size_t len;
    const void *data = eddy_event_data(eddy_delivery_event(d), &len);
    eddy_event *r;
    eddy_status st = eddy_delivery_new_reply(d, "eddy.bench.reply", &r, NULL);
    if (st == EDDY_OK && data)
        st = eddy_event_set_data(r, data, len);
    if (st == EDDY_OK)
        st = eddy_event_set_datacontenttype(r, "application/octet-stream");
    if (st != EDDY_OK) {
        eddy_event_free(r);
        return st;
    }
    atomic_fetch_add(&w->done, 1);
    *reply = r;
    return EDDY_OK;
}

/* ---- requesters ------------------------------------------------------------------------------ */

static void *requester(void *arg) {
    worker *w = arg;
    bench *b = w->b;
    char *data = malloc((size_t)b->size + 1);
    eddy_event *ev = NULL;
    eddy_error err = {0};
    eddy_status st = data ? eddy_bus_new_event(w->c->bus, "eddy.bench", &ev, &err) : EDDY_ERR_NOMEM;
    if (data)
        memset(data, 'e', (size_t)b->size);
    if (st == EDDY_OK)
        st = eddy_event_set_datacontenttype(ev, "application/octet-stream");
    if (st != EDDY_OK)
        failed(b, "cannot build the request", st, &err);
    w->start_ns = mono_ns();
    unsigned long long answered = 0;
    while (st == EDDY_OK && !atomic_load(&b->stop)) {
        if (b->duration_ms > 0 ? over(b, 0, 0) : atomic_fetch_add(&b->claimed, 1) >= b->msgs)
            break;
        char id[EDDY_UUID_SIZE];
        eddy_uuid7(id);
        stamp(data, (size_t)b->size);
        if ((st = eddy_event_set_id(ev, id)) == EDDY_OK)
            st = eddy_event_set_data(ev, data, (size_t)b->size);
        if (st != EDDY_OK)
            break;
        eddy_request_opts ro = {.deadline_ms = eddy_deadline_in(b->timeout_ms)};
        eddy_event *reply = NULL;
        long long t = mono_ns();
        eddy_status rs = eddy_bus_request(w->c->bus, b->subject, ev, &ro, &reply, &err);
        long long took = mono_ns() - t;
        eddy_event_free(reply);
        if (rs != EDDY_OK) {
            w->errors++;
            failed(b, "request", rs, &err);
            if (rs == EDDY_ERR_NO_RESPONDERS) /* nothing will answer the next one either */
                atomic_store(&b->stop, true);
            continue;
        }
        bench_hist_record(w->hist, (uint64_t)took);
        atomic_store(&w->done, ++answered);
    }
    w->end_ns = mono_ns();
    atomic_store(&w->finished, true);
    eddy_event_free(ev);
    free(data);
    return NULL;
}

/* ---- building and freeing the clients -------------------------------------------------------- */

static void clients_free(bench *b) {
    for (int r = 0; r < ALL_ROLES; r++) {
        for (int i = 0; b->role[r] && i < b->nrole[r]; i++) {
            client *c = &b->role[r][i];
            eddy_bus_free(c->bus); /* stops it first: its handlers are done after this */
            c->bus = NULL;
        }
    }
    for (int r = 0; r < ALL_ROLES; r++) {
        for (int i = 0; b->role[r] && i < b->nrole[r]; i++) {
            client *c = &b->role[r][i];
            for (int k = 0; c->w && k < c->nw; k++) {
                free(c->w[k].hist);
                pthread_mutex_destroy(&c->w[k].lock);
            }
            free(c->w);
        }
        free(b->role[r]);
        b->role[r] = NULL;
    }
}

static eddy_status clients_new(bench *b, int role, int n, int nw) {
    b->nrole[role] = n;
    if (!(b->role[role] = calloc((size_t)(n > 0 ? n : 1), sizeof(client))))
        return EDDY_ERR_NOMEM;
    for (int i = 0; i < n; i++) {
        client *c = &b->role[role][i];
        if (!(c->w = calloc((size_t)nw, sizeof(worker))))
            return EDDY_ERR_NOMEM;
        c->nw = nw;
        for (int k = 0; k < nw; k++) {
            worker *w = &c->w[k];
            w->b = b;
            w->c = c;
            pthread_mutex_init(&w->lock, NULL);
            if (!(w->hist = malloc(sizeof(*w->hist))))
                return EDDY_ERR_NOMEM;
            bench_hist_init(w->hist);
        }
    }
    return EDDY_OK;
}

/* Opens (and starts, when asked) one bus per client of the role; subscribers and responders
 * get their subscription. */
static eddy_status open_buses(bench *b, int role, const eddy_settings *s, const char *group,
                              bool start, eddy_error *err) {
    for (int i = 0; i < b->nrole[role]; i++) {
        client *c = &b->role[role][i];
        eddy_subscription_spec spec;
        eddy_subscription_spec_init(&spec);
        spec.name = "eddy-bench";
        spec.pattern = b->subject;
        spec.user = &c->w[0];
        if (role == ROLE_SUB) {
            spec.shape = group ? EDDY_COMPETING : EDDY_FANOUT;
            spec.group = group;
            spec.handler = on_message;
        } else {
            spec.group = group;
            spec.responder = on_request;
        }
        bool subscribes = role == ROLE_SUB || role == ROLE_RESP;
        eddy_status st =
            eddy_bus_new(s, subscribes ? &spec : NULL, subscribes ? 1 : 0, &c->bus, err);
        if (st == EDDY_OK && start)
            st = eddy_bus_start(c->bus, err);
        if (st != EDDY_OK)
            return st;
    }
    return EDDY_OK;
}

/* ---- the summary ------------------------------------------------------------------------------ */

typedef struct role_sum {
    int clients;
    unsigned long long msgs, errors;
    double elapsed_s, rate, cmin, cavg, cmax;
    bench_hist *hist;
    json_t *per_client;
} role_sum;

static double secs(long long ns) { return ns > 0 ? (double)ns / 1e9 : 0; }

static void summarize(bench *b, int role, role_sum *out) {
    memset(out, 0, sizeof(*out));
    out->clients = b->nrole[role];
    out->hist = malloc(sizeof(*out->hist));
    if (out->hist)
        bench_hist_init(out->hist);
    out->per_client = json_array();
    long long first = 0, last = 0;
    for (int i = 0; i < b->nrole[role]; i++) {
        client *c = &b->role[role][i];
        unsigned long long msgs = 0;
        long long start = 0, end = 0;
        for (int k = 0; k < c->nw; k++) {
            worker *w = &c->w[k];
            msgs += atomic_load(&w->done);
            out->errors += w->errors;
            if (out->hist)
                bench_hist_merge(out->hist, w->hist);
            /* a subscriber's clock starts with the publishers, when there are any here */
            long long s0 =
                role == ROLE_SUB && b->nrole[ROLE_PUB] > 0 ? b->run_start_ns : w->start_ns;
            if (s0 && (!start || s0 < start))
                start = s0;
            if (w->end_ns > end)
                end = w->end_ns;
        }
        double el = end > start ? secs(end - start) : 0, rate = el > 0 ? (double)msgs / el : 0;
        out->msgs += msgs;
        if (i == 0 || rate < out->cmin)
            out->cmin = rate;
        if (rate > out->cmax)
            out->cmax = rate;
        out->cavg += rate / b->nrole[role];
        json_array_append_new(out->per_client, json_pack("{s:I,s:f,s:f}", "msgs", (json_int_t)msgs,
                                                         "elapsed_s", el, "msgs_per_s", rate));
        if (start && (!first || start < first))
            first = start;
        if (end > last)
            last = end;
    }
    out->elapsed_s = last > first ? secs(last - first) : 0;
    out->rate = out->elapsed_s > 0 ? (double)out->msgs / out->elapsed_s : 0;
}

static double us(uint64_t ns) { return (double)ns / 1000.0; }

static json_t *latency_json(const bench_hist *h) {
    if (!h || h->count == 0)
        return json_null();
    return json_pack("{s:I,s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "count", (json_int_t)h->count, "min",
                     us(h->min), "avg", us(h->sum / h->count), "p50",
                     us(bench_hist_percentile(h, 50)), "p90", us(bench_hist_percentile(h, 90)),
                     "p99", us(bench_hist_percentile(h, 99)), "p99_9",
                     us(bench_hist_percentile(h, 99.9)), "max", us(h->max));
}

static const char *const latency_what[ROLES] = {"publish call", "publish to handler",
                                                "request round trip"};

static void print_text(bench *b, int role, const role_sum *r) {
    double mb = (double)r->msgs * (double)b->size / 1e6;
    printf("%-4s %d client%s: %llu msgs, %.2f MB in %.3f s: %.0f msgs/s, %.2f MB/s",
           role_names[role], r->clients, r->clients == 1 ? "" : "s", r->msgs, mb, r->elapsed_s,
           r->rate, r->elapsed_s > 0 ? mb / r->elapsed_s : 0);
    if (r->errors)
        printf(", %llu errors", r->errors);
    printf("\n");
    if (r->clients > 1) {
        size_t i;
        json_t *pc;
        json_array_foreach(r->per_client, i, pc) {
            printf("       [%zu] %lld msgs, %.0f msgs/s\n", i + 1,
                   (long long)json_integer_value(json_object_get(pc, "msgs")),
                   json_real_value(json_object_get(pc, "msgs_per_s")));
        }
        printf("       per client: min %.0f, avg %.0f, max %.0f msgs/s\n", r->cmin, r->cavg,
               r->cmax);
    }
    const bench_hist *h = r->hist;
    if (h && h->count)
        printf("       %s latency (us): p50 %.1f, p90 %.1f, p99 %.1f, p99.9 %.1f, max %.1f\n",
               latency_what[role], us(bench_hist_percentile(h, 50)),
               us(bench_hist_percentile(h, 90)), us(bench_hist_percentile(h, 99)),
               us(bench_hist_percentile(h, 99.9)), us(h->max));
}

static void print_csv_row(bench *b, int role, const role_sum *r) {
    const bench_hist *h = r->hist;
    double mb = (double)r->msgs * (double)b->size / 1e6;
    printf("%s,%d,%llu,%llu,%.6f,%.1f,%.3f,%.1f,%.1f,%.1f,%llu", role_names[role], r->clients,
           r->msgs, r->msgs * (unsigned long long)b->size, r->elapsed_s, r->rate,
           r->elapsed_s > 0 ? mb / r->elapsed_s : 0, r->cmin, r->cavg, r->cmax, r->errors);
    if (h && h->count)
        printf(",%.1f,%.1f,%.1f,%.1f,%.1f\n", us(bench_hist_percentile(h, 50)),
               us(bench_hist_percentile(h, 90)), us(bench_hist_percentile(h, 99)),
               us(bench_hist_percentile(h, 99.9)), us(h->max));
    else
        printf(",,,,,\n");
}

/* ---- the subject: fresh, refused when it exists, removed at the end ----------------------------- */

static eddy_status seen_subject(const eddy_subject_info *info, void *user) {
    (void)info;
    *(bool *)user = true;
    return EDDY_OK;
}

/* ---- the command ------------------------------------------------------------------------------- */

static bool has_setting(const cli *c, const char *name) {
    size_t n = strlen(name);
    for (int i = 0; i < c->nset; i++)
        if (strncmp(c->set[i], name, n) == 0 && c->set[i][n] == '=')
            return true;
    return false;
}

int cmd_bench(cli *c, int argc, char **argv) {
    long long msgs = 0, duration = 0, size = 128, pubs = 1, subs = 1, batch = 1, clients = 1,
              inflight = 1, responders = 1, timeout = 5000;
    const char *group = NULL;
    bool no_responder = false, keep = false, csv = false;
    bool pub_given = false, setup_failed = true;
    cli_opt opts[] = {{"msgs", 'n', &msgs},
                      {"duration", 'n', &duration},
                      {"size", 'n', &size},
                      {"pub", 'n', &pubs},
                      {"sub", 'n', &subs},
                      {"batch", 'n', &batch},
                      {"clients", 'n', &clients},
                      {"inflight", 'n', &inflight},
                      {"responders", 'n', &responders},
                      {"timeout", 'n', &timeout},
                      {"group", 's', &group},
                      {"no-responder", 'f', &no_responder},
                      {"keep", 'f', &keep},
                      {"csv", 'f', &csv},
                      {NULL, 0, NULL}};
    char *pos[2];
    int npos, rc = cli_parse(c, argc, argv, opts, pos, 2, &npos);
    if (rc >= 0)
        return rc;
    if (c->help)
        return cli_help(help);
    if (npos == 0)
        return cli_usage(c, "which mode? (eddy bench pub|sub|req [SUBJECT] ...)");
    int mode = strcmp(pos[0], "pub") == 0   ? MODE_PUB
               : strcmp(pos[0], "sub") == 0 ? MODE_SUB
               : strcmp(pos[0], "req") == 0 ? MODE_REQ
                                            : -1;
    if (mode < 0)
        return cli_usage(c, "unknown mode '%s' (pub, sub or req)", pos[0]);
    for (int i = 0; i < argc; i++)
        pub_given |= strcmp(argv[i], "--pub") == 0 || strncmp(argv[i], "--pub=", 6) == 0;
    if (msgs && duration)
        return cli_usage(c, "--msgs or --duration, not both");
    if (!msgs && !duration)
        msgs = 10000;
    if (batch < 1 || batch > 100000)
        return cli_usage(c, "--batch must be 1 to 100000");
    if (size > 64 * 1024 * 1024)
        return cli_usage(c, "--size: at most 64 MiB");
    if (timeout < 1)
        return cli_usage(c, "--timeout must be at least 1 millisecond");
    if (csv && c->json)
        return cli_usage(c, "--csv or --json, not both");
    if (mode == MODE_PUB && pubs < 1)
        return cli_usage(c, "pub: --pub must be at least 1");
    if (mode == MODE_SUB && subs < 1)
        return cli_usage(c, "sub: --sub must be at least 1");
    if (mode == MODE_REQ && (clients < 1 || inflight < 1 || (!no_responder && responders < 1)))
        return cli_usage(c, "req: --clients, --inflight and --responders must be at least 1");
    if (pubs > 1024 || subs > 1024 || clients > 1024 || inflight > 1024 || responders > 1024)
        return cli_usage(c, "at most 1024 of each kind of client");
    if (mode != MODE_SUB && group)
        return cli_usage(c, "--group is for eddy bench sub");
    if (mode != MODE_REQ && (no_responder || clients != 1 || inflight != 1 || responders != 1))
        return cli_usage(c, "--clients, --inflight, --responders and --no-responder are for "
                            "eddy bench req");
    if (mode == MODE_REQ && (pub_given || batch != 1))
        return cli_usage(c, "--pub and --batch are for eddy bench pub and sub");
    if (no_responder) /* the subject is the running responders': nothing of it is removed */
        keep = true;

    char subject[64], rand_group[64];
    char uuid[37];
    cli_random_id(uuid);
    snprintf(subject, sizeof(subject), "eddy.bench.%.8s", uuid);
    snprintf(rand_group, sizeof(rand_group), "eddy-bench-%.8s", uuid);
    eddy_settings s;
    if ((rc = cli_settings(c, &s)) >= 0)
        return rc;
    if (!has_setting(c, "retention_interval_ms"))
        s.retention_interval_ms = 0; /* no retention pass of the user's namespace from here */

    bench b = {.cli = c,
               .mode = mode,
               .subject = npos == 2 ? pos[1] : subject,
               .msgs = msgs,
               .size = size,
               .batch = batch,
               .duration_ms = duration,
               .timeout_ms = timeout};
    pthread_mutex_init(&b.err_lock, NULL);
    cli_block_signals();

    /* A subject that is there already is the user's: written to only with --keep. */
    eddy_error err = {0};
    eddy_admin *admin;
    eddy_status st = eddy_admin_open(&s, &admin, &err);
    if (st != EDDY_OK)
        return cli_fail_connect(c, "cannot open the backend", st, &err);
    cli_connected(false);
    bool exists = false;
    if ((st = eddy_admin_subjects(admin, b.subject, seen_subject, &exists, &err)) != EDDY_OK) {
        eddy_admin_close(admin);
        return cli_fail(c, "cannot look at the subject", st, &err);
    }
    if (exists && !keep) {
        eddy_admin_close(admin);
        return cli_usage(c,
                         "subject '%s' already exists in namespace '%s': eddy bench would write "
                         "to it and then remove it; name another subject, or pass --keep",
                         b.subject, c->ns);
    }

    int npub = mode == MODE_REQ ? 0 : (int)pubs;
    st = clients_new(&b, ROLE_PUB, npub, 1);
    if (st == EDDY_OK)
        st = clients_new(&b, ROLE_SUB, mode == MODE_SUB ? (int)subs : 0, 1);
    if (st == EDDY_OK)
        st = clients_new(&b, ROLE_REQ, mode == MODE_REQ ? (int)clients : 0, (int)inflight);
    int nresp = mode == MODE_REQ && !no_responder ? (int)responders : 0;
    if (st == EDDY_OK)
        st = clients_new(&b, ROLE_RESP, nresp, 1);
    if (st != EDDY_OK) {
        rc = cli_fail(c, "cannot set up", st, NULL);
        goto out;
    }
    /* Subscribers and responders first, ready before anything is published or requested. */
    if ((st = open_buses(&b, ROLE_SUB, &s, group, true, &err)) != EDDY_OK) {
        rc = cli_fail_connect(c, "cannot start the subscribers", st, &err);
        goto out;
    }
    if ((st = open_buses(&b, ROLE_RESP, &s, rand_group, true, &err)) != EDDY_OK) {
        rc = cli_fail_connect(c, "cannot start the responders", st, &err);
        goto out;
    }
    if ((st = open_buses(&b, ROLE_PUB, &s, NULL, false, &err)) != EDDY_OK ||
        (st = open_buses(&b, ROLE_REQ, &s, NULL, true, &err)) != EDDY_OK) {
        rc = cli_fail_connect(c, "cannot open the bus", st, &err);
        goto out;
    }

    setup_failed = false;
    /* Run: publishers or requesters start together; the main thread draws the bar. */
    b.run_start_ns = mono_ns();
    for (int i = 0; i < npub; i++) {
        worker *w = &b.role[ROLE_PUB][i].w[0];
        w->share = (unsigned long long)(msgs / npub + (i < msgs % npub ? 1 : 0));
        if (!(w->started = pthread_create(&w->thread, NULL, publisher, w) == 0))
            failed(&b, "cannot start a publisher thread", EDDY_ERR_NOMEM, NULL);
    }
    for (int i = 0; i < b.nrole[ROLE_REQ]; i++)
        for (int k = 0; k < b.role[ROLE_REQ][i].nw; k++) {
            worker *w = &b.role[ROLE_REQ][i].w[k];
            if (!(w->started = pthread_create(&w->thread, NULL, requester, w) == 0))
                failed(&b, "cannot start a requester thread", EDDY_ERR_NOMEM, NULL);
        }
    int main_role = mode == MODE_PUB ? ROLE_PUB : mode == MODE_SUB ? ROLE_SUB : ROLE_REQ;
    unsigned long long expected =
        mode == MODE_SUB && !group ? (unsigned long long)(msgs * subs) : (unsigned long long)msgs;
    cli_progress bar;
    char label[32];
    snprintf(label, sizeof(label), "eddy bench %s", role_names[main_role]);
    cli_progress_start(&bar, label,
                       duration ? (unsigned long long)duration : (unsigned long long)expected);
    bool interrupted = false, lost = false;
    unsigned long long last_seen = 0;
    long long last_move = mono_ns();
    for (;;) {
        unsigned long long done[ROLES] = {0};
        bool busy = false;
        for (int r = 0; r < ROLES; r++)
            for (int i = 0; i < b.nrole[r]; i++)
                for (int k = 0; k < b.role[r][i].nw; k++) {
                    worker *w = &b.role[r][i].w[k];
                    done[r] += atomic_load(&w->done);
                    if (w->started && !atomic_load(&w->finished))
                        busy = true;
                }
        long long now = mono_ns();
        cli_progress_update(&bar, duration ? (unsigned long long)((now - b.run_start_ns) / 1000000)
                                           : done[main_role]);
        if (!busy && mode != MODE_SUB)
            break;
        if (!busy && mode == MODE_SUB) { /* the publishers are done: wait for the last messages */
            unsigned long long want = npub ? (group ? done[ROLE_PUB] : done[ROLE_PUB] * subs)
                                           : (duration ? ~0ULL : expected);
            if (done[ROLE_SUB] >= want)
                break;
            if (done[ROLE_SUB] != last_seen) {
                last_seen = done[ROLE_SUB];
                last_move = now;
            } else if (npub && now - last_move > timeout * 1000000LL) {
                lost = true;
                break;
            }
            if (npub == 0 && duration && now - b.run_start_ns >= duration * 1000000LL)
                break;
        }
        if (cli_wait(100) == 0) {
            interrupted = true;
            atomic_store(&b.stop, true);
            break;
        }
    }
    cli_progress_end(&bar);
    for (int r = 0; r < ROLES; r++)
        for (int i = 0; i < b.nrole[r]; i++)
            for (int k = 0; k < b.role[r][i].nw; k++)
                if (b.role[r][i].w[k].started)
                    pthread_join(b.role[r][i].w[k].thread, NULL);
    /* Every handler is done once the buses are freed: the figures are final after this. */
    for (int r = 0; r < ALL_ROLES; r++)
        for (int i = 0; i < b.nrole[r]; i++) {
            eddy_bus_free(b.role[r][i].bus);
            b.role[r][i].bus = NULL;
        }

    role_sum sums[ROLES];
    for (int r = 0; r < ROLES; r++)
        summarize(&b, r, &sums[r]);
    unsigned long long answered = 0;
    for (int i = 0; i < nresp; i++)
        answered += atomic_load(&b.role[ROLE_RESP][i].w[0].done);
    bool removed = false;
    eddy_status rst = EDDY_OK;
    eddy_error rerr = {0};
    if (!keep)
        rst = eddy_admin_subject_remove(admin, b.subject, &removed, &rerr);

    if (csv) {
        printf("role,clients,msgs,bytes,elapsed_s,msgs_per_s,mb_per_s,client_min,client_avg,"
               "client_max,errors,p50_us,p90_us,p99_us,p99_9_us,max_us\n");
        for (int r = 0; r < ROLES; r++)
            if (b.nrole[r])
                print_csv_row(&b, r, &sums[r]);
    } else if (c->json) {
        json_t *roles = json_object();
        for (int r = 0; r < ROLES; r++) {
            if (!b.nrole[r])
                continue;
            role_sum *x = &sums[r];
            double mb = (double)x->msgs * (double)size / 1e6;
            json_object_set_new(
                roles, role_names[r],
                json_pack("{s:i,s:I,s:I,s:f,s:f,s:f,s:I,s:s,s:o,s:{s:f,s:f,s:f},s:o}", "clients",
                          x->clients, "msgs", (json_int_t)x->msgs, "bytes",
                          (json_int_t)(x->msgs * (unsigned long long)size), "elapsed_s",
                          x->elapsed_s, "msgs_per_s", x->rate, "mb_per_s",
                          x->elapsed_s > 0 ? mb / x->elapsed_s : 0.0, "errors",
                          (json_int_t)x->errors, "latency", latency_what[r], "per_client",
                          json_incref(x->per_client), "client_msgs_per_s", "min", x->cmin, "avg",
                          x->cavg, "max", x->cmax, "latency_us", latency_json(x->hist)));
        }
        json_t *doc = json_pack(
            "{s:s,s:s,s:s,s:s,s:o,s:o,s:I,s:I,s:i,s:I,s:o,s:b,s:b,s:b,s:b}", "mode",
            role_names[mode], "url", cli_url_shown(c), "ns", c->ns, "subject", b.subject, "msgs",
            duration ? json_null() : json_integer(msgs), "duration_ms",
            duration ? json_integer(duration) : json_null(), "size", (json_int_t)size, "batch",
            (json_int_t)batch, "responders", nresp, "responded", (json_int_t)answered, "roles",
            roles, "interrupted", interrupted, "lost", lost, "kept", keep, "removed", removed);
        /* nine significant digits: enough for any rate or time here, and no 0.30000000000000004 */
        if (!doc || json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(9)) != 0)
            fprintf(stderr, "eddy bench: cannot write the JSON document\n");
        fputc('\n', stdout);
        json_decref(doc);
    } else {
        if (duration)
            printf("eddy bench %s: %lld ms of messages of %lld B", role_names[mode], duration,
                   size);
        else
            printf("eddy bench %s: %lld messages of %lld B", role_names[mode], msgs, size);
        printf(" to %s on %s (ns %s)\n", b.subject, cli_url_shown(c), c->ns);
        for (int r = 0; r < ROLES; r++)
            if (b.nrole[r])
                print_text(&b, r, &sums[r]);
        if (nresp) {
            printf("     %d responder%s answered %llu requests\n", nresp, nresp == 1 ? "" : "s",
                   answered);
        }
        if (keep)
            printf("kept subject %s\n", b.subject);
        else if (rst == EDDY_OK)
            printf("removed subject %s\n", b.subject);
    }
    fflush(stdout);
    for (int r = 0; r < ROLES; r++) {
        free(sums[r].hist);
        json_decref(sums[r].per_client);
    }
    rc = CLI_OK;
    if (b.first_st != EDDY_OK)
        rc = cli_fail(c, b.first_what, b.first_st, &b.first_err);
    if (lost) {
        fprintf(stderr, "eddy bench: messages did not all arrive within --timeout %lld ms\n",
                timeout);
        rc = CLI_FAILED;
    }
    if (rst != EDDY_OK) {
        int frc = cli_fail(c, "cannot remove the subject", rst, &rerr);
        fprintf(stderr,
                "eddy bench: subject %s is left in namespace %s (an ACL user needs +srem to "
                "remove it: docs/operations.md)\n",
                b.subject, c->ns);
        if (rc == CLI_OK)
            rc = frc;
    }
    if (interrupted)
        fprintf(stderr, "eddy bench: interrupted; the figures are those of the run so far\n");

out:
    clients_free(&b);
    if (setup_failed && !keep) /* take back what the set-up made (a group, a subject) */
        (void)eddy_admin_subject_remove(admin, b.subject, NULL, NULL);
    eddy_admin_close(admin);
    pthread_mutex_destroy(&b.err_lock);
    return rc;
}
