/* A catch-up feed's listener process killed with SIGKILL between apply and acknowledgement, on
 * the fixture's redis-server. The read model is an order-status map (order -> last status,
 * keyed by the event's version in its stream, so applying an event again changes nothing). It
 * lives in the test process, as an external database would: the listener process's projection
 * writes each applied event to it through a pipe, and kills itself inside apply, after the
 * write and before eddy_feed_handler can acknowledge, on its KILL_AT-th apply. A second
 * listener (a fresh feed, another instance, in the test process) claims what the dead one left
 * pending. The model must then equal a fold of the store's own history, every stored event must
 * have been applied at least once, and the event applied when the process died again. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "eddy/blocking.h"
#include "eddy/feed.h"
#include "eddy/store.h"
#include "eddy_test.h"
#include "raw.h"
#include "recorder.h"

#define ORDERS 5
#define PER_ORDER 12
#define TOTAL (ORDERS * PER_ORDER)
#define KILL_AT 40
#define SUBJECT "orders.events"
#define GROUP "order-status"

static const char *const statuses[] = {"placed",  "paid",      "packed",
                                       "shipped", "delivered", "returned"};

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
    s->workers = 2;
    s->log = eddy_test_log;
    s->log_user = "listener-killed";
}

/* ---- the user's event and the feed's codec ---------------------------------------------- */

typedef struct order_ev {
    char id[64];
    char status[32];
} order_ev;

static eddy_status o_decode(const eddy_event *ev, const eddy_event_meta *meta, void **out,
                            eddy_error *err, void *user) {
    (void)meta, (void)err, (void)user;
    order_ev *e = calloc(1, sizeof(*e));
    if (!e)
        return EDDY_ERR_NOMEM;
    size_t len = 0;
    const char *data = eddy_event_data(ev, &len);
    snprintf(e->id, sizeof(e->id), "%s", eddy_event_id(ev));
    snprintf(e->status, sizeof(e->status), "%.*s", (int)len, data ? data : "");
    *out = e;
    return EDDY_OK;
}

static void o_free(void *event, void *user) {
    (void)user;
    free(event);
}

static const char *o_id(const void *event, void *user) {
    (void)user;
    return ((const order_ev *)event)->id;
}

/* ---- the read model: order -> (version, status); duplicates and stale versions change nothing */

typedef struct order_row {
    char stream[32];
    long long version;
    char status[32];
} order_row;

typedef struct read_model {
    order_row rows[ORDERS];
    int n;
} read_model;

static void fold(read_model *rm, const char *stream, long long version, const char *status) {
    for (int i = 0; i < rm->n; i++) {
        if (strcmp(rm->rows[i].stream, stream) == 0) {
            if (version > rm->rows[i].version) {
                rm->rows[i].version = version;
                snprintf(rm->rows[i].status, sizeof(rm->rows[i].status), "%s", status);
            }
            return;
        }
    }
    cr_assert_lt(rm->n, ORDERS, "unexpected stream %s", stream);
    order_row *r = &rm->rows[rm->n++];
    snprintf(r->stream, sizeof(r->stream), "%s", stream);
    r->version = version;
    snprintf(r->status, sizeof(r->status), "%s", status);
}

static const order_row *row_of(const read_model *rm, const char *stream) {
    for (int i = 0; i < rm->n; i++)
        if (strcmp(rm->rows[i].stream, stream) == 0)
            return &rm->rows[i];
    return NULL;
}

/* ---- the reference: the store's history, read back and folded ---------------------------- */

typedef struct reference {
    read_model rm;
    char ids[TOTAL][64];
    int n;
} reference;

static eddy_status ref_add(const eddy_event *ev, const eddy_event_meta *meta, void *user) {
    reference *ref = user;
    cr_assert_lt(ref->n, TOTAL, "more stored events than appended");
    size_t len = 0;
    const char *data = eddy_event_data(ev, &len);
    char status[32];
    snprintf(status, sizeof(status), "%.*s", (int)len, data ? data : "");
    fold(&ref->rm, meta->stream_id, meta->version, status);
    snprintf(ref->ids[ref->n++], sizeof(ref->ids[0]), "%s", eddy_event_id(ev));
    return EDDY_OK;
}

static int ref_index(const reference *ref, const char *id) {
    for (int i = 0; i < ref->n; i++)
        if (strcmp(ref->ids[i], id) == 0)
            return i;
    return -1;
}

/* ---- the listener process --------------------------------------------------------------- */

typedef struct child_model {
    pthread_mutex_t m;
    int fd; /* the read model's "database": a pipe to the test process */
    int applied;
} child_model;

/* Writes the event to the read model, then, on the KILL_AT-th apply, dies before returning:
 * applied, never acknowledged. The lock keeps the other worker from writing after it. */
static eddy_status child_apply(void *event, const eddy_event_meta *meta, eddy_error *err,
                               void *user) {
    child_model *cm = user;
    order_ev *e = event;
    if (!meta) {
        if (err)
            snprintf(err->detail, sizeof(err->detail), "no metadata for %s", e->id);
        return EDDY_ERR_ILLEGAL_STATE;
    }
    char line[192];
    int n = snprintf(line, sizeof(line), "%s %s %lld %s\n", e->id, meta->stream_id, meta->version,
                     e->status);
    pthread_mutex_lock(&cm->m);
    if (write(cm->fd, line, (size_t)n) != n) {
        pthread_mutex_unlock(&cm->m);
        return EDDY_ERR_IO;
    }
    if (++cm->applied == KILL_AT)
        raise(SIGKILL);
    pthread_mutex_unlock(&cm->m);
    return EDDY_OK;
}

static eddy_feed_config feed_config(eddy_projection proj) {
    eddy_feed_config cfg;
    eddy_feed_config_init(&cfg);
    cfg.id = "order-status";
    cfg.projection = proj;
    cfg.projection.keyed_by_metadata = true;
    cfg.decode = o_decode;
    cfg.free_event = o_free;
    cfg.event_id = o_id;
    cfg.checkpoints = NULL; /* the listener goes live: no replay, no marker */
    cfg.log = eddy_test_log;
    cfg.log_user = "feed";
    return cfg;
}

static eddy_subscription_spec listener_spec(eddy_feed *feed) {
    eddy_subscription_spec sp;
    eddy_subscription_spec_init(&sp);
    sp.name = "order-status";
    sp.pattern = SUBJECT;
    sp.shape = EDDY_COMPETING;
    sp.group = GROUP;
    sp.delivery = EDDY_AT_LEAST_ONCE;
    sp.handler = eddy_feed_handler;
    sp.user = feed;
    return sp;
}

/* Runs in the forked process: never returns. */
static void listener_main(const char *url, const char *ns, int report_fd, int ready_fd) {
    static child_model cm;
    pthread_mutex_init(&cm.m, NULL);
    cm.fd = report_fd;
    eddy_settings s;
    settings_for(&s, url, ns);
    s.instance = "listener-1";
    eddy_store *store = NULL;
    if (eddy_store_open(&s, &store, NULL) != EDDY_OK)
        _exit(3);
    eddy_projection proj = {0};
    proj.apply = child_apply;
    proj.user = &cm;
    eddy_feed_config cfg = feed_config(proj);
    eddy_feed *feed = NULL;
    if (eddy_feed_new(store, &cfg, &feed, NULL) != EDDY_OK ||
        eddy_feed_go_live(feed, NULL, NULL) != EDDY_OK)
        _exit(4);
    eddy_subscription_spec sp = listener_spec(feed);
    eddy_bus *bus = NULL;
    if (eddy_bus_new(&s, &sp, 1, &bus, NULL) != EDDY_OK || eddy_bus_start(bus, NULL) != EDDY_OK)
        _exit(5);
    if (write(ready_fd, "r", 1) != 1)
        _exit(6);
    for (;;)
        pause(); /* until it kills itself */
}

/* ---- the survivor (in the test process) ------------------------------------------------- */

typedef struct survivor_model {
    pthread_mutex_t m;
    read_model *rm; /* the same read model the dead process wrote to */
    int counts[TOTAL];
    const reference *ref;
    int unknown;
} survivor_model;

static eddy_status survivor_apply(void *event, const eddy_event_meta *meta, eddy_error *err,
                                  void *user) {
    survivor_model *sm = user;
    order_ev *e = event;
    if (!meta) {
        if (err)
            snprintf(err->detail, sizeof(err->detail), "no metadata for %s", e->id);
        return EDDY_ERR_ILLEGAL_STATE;
    }
    pthread_mutex_lock(&sm->m);
    fold(sm->rm, meta->stream_id, meta->version, e->status);
    int i = ref_index(sm->ref, e->id);
    if (i < 0)
        sm->unknown++;
    else
        sm->counts[i]++;
    pthread_mutex_unlock(&sm->m);
    return EDDY_OK;
}

/* ---- conditions waited for ---------------------------------------------------------------- */

typedef struct group_cond {
    const char *url;
    const char *ns;
} group_cond;

static bool group_exists(void *user) {
    group_cond *g = user;
    redisReply *r = raw_cmdf(g->url, "XINFO GROUPS {%s}:s:" SUBJECT, g->ns);
    bool ok = r && r->type == REDIS_REPLY_ARRAY && r->elements >= 1;
    if (r)
        freeReplyObject(r);
    return ok;
}

static long long pending(const char *url, const char *ns) {
    redisReply *r = raw_cmdf(url, "XPENDING {%s}:s:" SUBJECT " " GROUP, ns);
    long long n =
        r && r->type == REDIS_REPLY_ARRAY && r->elements > 0 ? r->element[0]->integer : -1;
    if (r)
        freeReplyObject(r);
    return n;
}

typedef struct drained_cond {
    survivor_model *sm;
    const reference *ref;
    const char *url;
    const char *ns;
} drained_cond;

/* Every order at its last status, and nothing left pending in the group. */
static bool drained(void *user) {
    drained_cond *d = user;
    bool complete = true;
    pthread_mutex_lock(&d->sm->m);
    for (int i = 0; i < d->ref->rm.n && complete; i++) {
        const order_row *have = row_of(d->sm->rm, d->ref->rm.rows[i].stream);
        complete = have && have->version == d->ref->rm.rows[i].version;
    }
    pthread_mutex_unlock(&d->sm->m);
    return complete && pending(d->url, d->ns) == 0;
}

/* ---- the test ----------------------------------------------------------------------------- */

Test(feed_listener_killed, killed_between_apply_and_ack_projection_equals_reference_fold,
     .timeout = 120) {
    const char *url = eddy_test_redis_url();
    char ns[96];
    eddy_test_namespace(ns, sizeof(ns), "feed-kill");

    int report[2], ready[2];
    cr_assert_eq(pipe(report), 0);
    cr_assert_eq(pipe(ready), 0);
    pid_t child = fork();
    cr_assert(child >= 0);
    if (child == 0) {
        close(report[0]);
        close(ready[0]);
        listener_main(url, ns, report[1], ready[1]);
    }
    /* A dead child then reads as EOF on both pipes, not a hang. */
    close(report[1]);
    close(ready[1]);
    char c;
    cr_assert_eq(read(ready[0], &c, 1), 1, "the listener process did not start");
    close(ready[0]);
    /* The group starts at "$": append only once the listener created it. */
    group_cond gc = {url, ns};
    cr_assert(eddy_test_wait_until(group_exists, &gc, 30000), "the group was never created");

    eddy_settings s;
    settings_for(&s, url, ns);
    s.instance = "listener-2";
    eddy_store *store = NULL;
    eddy_error err = {0};
    cr_assert_eq(eddy_store_open(&s, &store, &err), EDDY_OK, "%s", err.detail);
    /* Orders interleaved, so each order's last status comes near the end. */
    for (int v = 1; v <= PER_ORDER; v++) {
        for (int k = 0; k < ORDERS; k++) {
            char id[64], stream[32];
            snprintf(id, sizeof(id), "order-%d-v%d", k, v);
            snprintf(stream, sizeof(stream), "order-%d", k);
            eddy_event *ev = make_event(id, "order.status");
            const char *st = statuses[(size_t)(v + k) % (sizeof(statuses) / sizeof(*statuses))];
            cr_assert_eq(eddy_event_set_data(ev, st, strlen(st)), EDDY_OK);
            eddy_append_opts o;
            eddy_append_opts_init(&o);
            o.publish_subject = SUBJECT;
            const eddy_event *evs[] = {ev};
            cr_assert_eq(eddy_store_append(store, stream, evs, 1, &o, NULL, &err), EDDY_OK, "%s",
                         err.detail);
            eddy_event_free(ev);
        }
    }

    /* The reference: the history as stored, folded directly. */
    static reference ref;
    memset(&ref, 0, sizeof(ref));
    long long after = 0, head = 0;
    cr_assert_eq(eddy_store_head(store, &head, &err), EDDY_OK, "%s", err.detail);
    while (after < head) {
        long long next = after;
        cr_assert_eq(eddy_store_read_all(store, after, 16, NULL, ref_add, &ref, &next, &err),
                     EDDY_OK, "%s", err.detail);
        cr_assert_gt(next, after);
        after = next;
    }
    cr_assert_eq(ref.n, TOTAL);
    cr_assert_eq(ref.rm.n, ORDERS);

    /* The dead process's applies, read until it dies (EOF), folded into the read model. */
    static read_model model;
    memset(&model, 0, sizeof(model));
    static int child_counts[TOTAL];
    memset(child_counts, 0, sizeof(child_counts));
    FILE *in = fdopen(report[0], "r");
    cr_assert(in);
    char line[192], last_id[64] = "";
    int lines = 0;
    while (fgets(line, sizeof(line), in)) {
        char id[64], stream[32], status[32];
        long long version = 0;
        cr_assert_eq(sscanf(line, "%63s %31s %lld %31s", id, stream, &version, status), 4, "%s",
                     line);
        fold(&model, stream, version, status);
        int i = ref_index(&ref, id);
        cr_assert_geq(i, 0, "the listener applied an unknown event %s", id);
        child_counts[i]++;
        snprintf(last_id, sizeof(last_id), "%s", id);
        lines++;
    }
    fclose(in);
    int wst = 0;
    cr_assert_eq(waitpid(child, &wst, 0), child);
    cr_assert(WIFSIGNALED(wst) && WTERMSIG(wst) == SIGKILL,
              "the listener must die by SIGKILL inside apply (status %d)", wst);
    cr_assert_eq(lines, KILL_AT, "applies reported before the death: %d", lines);
    cr_assert_geq(pending(url, ns), 1, "the event applied at the death was never acknowledged");

    /* The survivor: a fresh feed and listener, another instance, a short redelivery idle. */
    static survivor_model sm;
    memset(&sm, 0, sizeof(sm));
    pthread_mutex_init(&sm.m, NULL);
    sm.rm = &model;
    sm.ref = &ref;
    eddy_projection proj = {0};
    proj.apply = survivor_apply;
    proj.user = &sm;
    eddy_feed_config cfg = feed_config(proj);
    eddy_feed *feed = NULL;
    cr_assert_eq(eddy_feed_new(store, &cfg, &feed, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(eddy_feed_go_live(feed, NULL, &err), EDDY_OK, "%s", err.detail);
    eddy_subscription_spec sp = listener_spec(feed);
    eddy_bus *bus = NULL;
    cr_assert_eq(eddy_bus_new(&s, &sp, 1, &bus, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(eddy_bus_start(bus, &err), EDDY_OK, "%s", err.detail);
    drained_cond dc = {&sm, &ref, url, ns};
    bool done = eddy_test_wait_until(drained, &dc, 60000);
    eddy_bus_stop(bus);
    cr_assert(done, "the survivor did not bring every order to its last status (pending %lld)",
              pending(url, ns));

    /* The read model equals the reference fold. */
    cr_expect_eq(model.n, ref.rm.n);
    for (int i = 0; i < ref.rm.n; i++) {
        const order_row *want = &ref.rm.rows[i];
        const order_row *have = row_of(&model, want->stream);
        cr_assert(have, "%s missing from the read model", want->stream);
        cr_expect_eq(have->version, want->version, "%s", want->stream);
        cr_expect_str_eq(have->status, want->status, "%s", want->stream);
    }
    /* Every stored event applied at least once across both processes. */
    cr_expect_eq(sm.unknown, 0);
    for (int i = 0; i < TOTAL; i++)
        cr_expect_geq(child_counts[i] + sm.counts[i], 1, "%s never applied", ref.ids[i]);
    /* The event applied when the listener died was applied again by the survivor. */
    int died = ref_index(&ref, last_id);
    cr_assert_geq(died, 0);
    cr_expect_geq(sm.counts[died], 1, "%s (applied at the death) not applied again", last_id);
    eddy_consumer_stats cs;
    cr_assert_eq(eddy_bus_consumer_stats(bus, "order-status", &cs), EDDY_OK);
    cr_expect_geq(cs.redelivered, 1, "the dead listener's pending entries were claimed");
    cr_expect_eq(cs.failed, 0);

    eddy_bus_free(bus);
    eddy_feed_free(feed);
    eddy_store_close(store);
    pthread_mutex_destroy(&sm.m);
}
