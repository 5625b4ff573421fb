/* SPDX-License-Identifier: BSD-3-Clause */
/* The ACL rules of docs/operations.md are enough: this test reads them from the document,
 * creates a Redis user with exactly those rules on a redis-server of its own, and runs eddy's
 * main flows as that user on the blocking front end: publish and consume (competing and
 * fanout, redelivery, dead-lettering, pause), request/reply, the dead-letter API, the event
 * store (append with publish, reads, head), a catch-up feed with its marker, fed live by a
 * subscription, a feed whose read model is kept in Redis (every kind of write, its reads), and
 * the retention pass. Many of eddy's steps retry rather than fail when the
 * server refuses them, so besides the flows' own results every NOPERM that reaches the log
 * hook fails the test: a permission missing from the document cannot go unnoticed. */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eddy/admin.h"
#include "eddy/blocking.h"
#include "eddy/dlq.h"
#include "eddy/feed.h"
#include "eddy/model.h"
#include "eddy/store.h"
#include "eddy_test.h"
#include "redis_server.h"

#define WAIT_MS 30000 /* only a bound for a failing test, never a measurement */
#define MARKER "<!-- acl-rules:"
#define PASSWORD "acl-test-password"

static eddy_test_redis srv;

static void start_server(void) { eddy_test_redis_start(&srv, 0); }
static void stop_server(void) { eddy_test_redis_kill(&srv); }

TestSuite(acl, .init = start_server, .fini = stop_server, .timeout = 180);

/* ---- the documented rules ------------------------------------------------------------- */

/* The line "ACL SETUSER eddy ..." of the first code block after the marker. */
static void documented_rules(char *line, size_t size) {
    char path[1024];
    const char *file = __FILE__;
    const char *slash = strrchr(file, '/');
    snprintf(path, sizeof(path), "%.*s/../../docs/operations.md", (int)(slash - file), file);
    FILE *f = fopen(path, "r");
    cr_assert(f, "cannot read %s", path);
    bool marked = false;
    line[0] = '\0';
    while (fgets(line, (int)size, f)) {
        if (strstr(line, MARKER))
            marked = true;
        else if (marked && strncmp(line, "ACL SETUSER ", 12) == 0)
            break;
        line[0] = '\0';
    }
    fclose(f);
    cr_assert(line[0], "no 'ACL SETUSER' line after '%s' in %s", MARKER, path);
    line[strcspn(line, "\r\n")] = '\0';
}

/* Creates the user with the documented rules, the namespace and password put in, and returns
 * the URL to connect as it. */
static void create_user(const char *ns, char *url, size_t size) {
    char line[4096];
    documented_rules(line, sizeof(line));
    const char *argv[256];
    size_t argvlen[256], argc = 0;
    char *words[256];
    size_t nwords = 0;
    for (char *save, *w = strtok_r(line, " ", &save); w && nwords < 250;
         w = strtok_r(NULL, " ", &save))
        words[nwords++] = w;
    cr_assert(nwords > 3 && strcmp(words[2], "eddy") == 0, "the rules are for user 'eddy'");
    char keys[256], pass[64];
    snprintf(keys, sizeof(keys), "~{%s}:*", ns);
    snprintf(pass, sizeof(pass), ">%s", PASSWORD);
    bool has_keys = false;
    for (size_t i = 0; i < nwords; i++) {
        const char *w = words[i];
        if (strcmp(w, "~{eddy}:*") == 0) {
            w = keys;
            has_keys = true;
        } else if (w[0] == '>') {
            w = pass;
        }
        argv[argc] = w;
        argvlen[argc++] = strlen(w);
    }
    cr_assert(has_keys, "the rules name no key pattern ~{eddy}:*");
    redisContext *c = redisConnect("127.0.0.1", srv.port);
    cr_assert(c && !c->err);
    redisReply *r = redisCommandArgv(c, (int)argc, argv, argvlen);
    cr_assert(r && r->type == REDIS_REPLY_STATUS, "ACL SETUSER: %s", r ? r->str : "no reply");
    freeReplyObject(r);
    redisFree(c);
    snprintf(url, size, "redis://eddy:%s@127.0.0.1:%d", PASSWORD, srv.port);
}

/* ---- what the bus leaves behind, seen as the default user ------------------------------ */

/* `verb` on the key "{ns}:<rest>"; a rest ending in '*' names the first key matching it.
 * -2 when no key matches. */
static long long admin_int(const char *verb, const char *ns, const char *rest) {
    redisContext *c = redisConnect("127.0.0.1", srv.port);
    cr_assert(c && !c->err);
    char key[256];
    snprintf(key, sizeof(key), "{%s}:%s", ns, rest);
    long long v = -2;
    if (rest[strlen(rest) - 1] == '*') {
        redisReply *k = redisCommand(c, "KEYS %s", key);
        cr_assert(k && k->type == REDIS_REPLY_ARRAY);
        if (k->elements > 0)
            snprintf(key, sizeof(key), "%s", k->element[0]->str);
        else
            key[0] = '\0';
        freeReplyObject(k);
    }
    if (key[0]) {
        redisReply *r = redisCommand(c, "%s %s", verb, key);
        cr_assert(r && r->type == REDIS_REPLY_INTEGER, "%s %s", verb, key);
        v = r->integer;
        freeReplyObject(r);
    } else if (strcmp(verb, "EXISTS") == 0) {
        v = 0;
    }
    redisFree(c);
    return v;
}

/* Groups named "fanout.*" on a subject's stream. */
static int admin_fanout_groups(const char *ns, const char *subject) {
    redisContext *c = redisConnect("127.0.0.1", srv.port);
    cr_assert(c && !c->err);
    redisReply *r = redisCommand(c, "XINFO GROUPS {%s}:s:%s", ns, subject);
    cr_assert(r && r->type == REDIS_REPLY_ARRAY);
    int n = 0;
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *g = r->element[i];
        for (size_t j = 0; j + 1 < g->elements; j += 2)
            if (strcmp(g->element[j]->str, "name") == 0 &&
                strncmp(g->element[j + 1]->str, "fanout.", 7) == 0)
                n++;
    }
    freeReplyObject(r);
    redisFree(c);
    return n;
}

/* ---- the log: any refusal by the server fails the test ---------------------------------- */

static pthread_mutex_t refusal_lock = PTHREAD_MUTEX_INITIALIZER;
static char refusal[512];

static void log_hook(eddy_log_level level, const char *msg, void *user) {
    eddy_test_log(level, msg, user);
    if (strstr(msg, "NOPERM") || strstr(msg, "no permissions")) {
        pthread_mutex_lock(&refusal_lock);
        if (!refusal[0])
            snprintf(refusal, sizeof(refusal), "%s", msg);
        pthread_mutex_unlock(&refusal_lock);
    }
}

static bool refused(void *user) {
    pthread_mutex_lock(&refusal_lock);
    bool any = refusal[0] != '\0';
    pthread_mutex_unlock(&refusal_lock);
    return any;
}

static void assert_no_refusal(void) {
    pthread_mutex_lock(&refusal_lock);
    cr_assert_eq(refusal[0], '\0', "the server refused a command: %s", refusal);
    pthread_mutex_unlock(&refusal_lock);
}

/* ---- handlers --------------------------------------------------------------------------- */

typedef struct counts {
    atomic_int ok, failed, fanout, handed_back, handback_attempt;
} counts;

static eddy_status handle_order(eddy_delivery *d, void *user) {
    counts *c = user;
    if (strcmp(eddy_event_type(eddy_delivery_event(d)), "acl.handback") == 0) {
        /* Handed back once: the next delivery has the same attempt number (XCLAIM RETRYCOUNT
         * set the count back), which a refused XCLAIM would not leave. */
        if (atomic_fetch_add(&c->handed_back, 1) == 0)
            return EDDY_ERR_UNAVAILABLE;
        atomic_store(&c->handback_attempt, (int)eddy_delivery_attempt(d));
        atomic_fetch_add(&c->ok, 1);
        return EDDY_OK;
    }
    if (strcmp(eddy_event_type(eddy_delivery_event(d)), "acl.poison") == 0) {
        atomic_fetch_add(&c->failed, 1);
        return EDDY_ERR_HANDLER_FAILED; /* redelivered, then dead-lettered */
    }
    atomic_fetch_add(&c->ok, 1);
    return EDDY_OK;
}

static eddy_status handle_fanout(eddy_delivery *d, void *user) {
    counts *c = user;
    atomic_fetch_add(&c->fanout, 1);
    return EDDY_OK;
}

static eddy_status echo(eddy_delivery *d, eddy_event **reply, void *user) {
    *reply = eddy_event_dup(eddy_delivery_event(d));
    return *reply ? EDDY_OK : EDDY_ERR_NOMEM;
}

static eddy_event *event(const char *id, const char *type) {
    eddy_event *ev = eddy_event_new();
    cr_assert(ev);
    cr_assert_eq(eddy_event_set_id(ev, id), EDDY_OK);
    cr_assert_eq(eddy_event_set_source(ev, "/acl"), EDDY_OK);
    cr_assert_eq(eddy_event_set_type(ev, type), EDDY_OK);
    return ev;
}

/* ---- the feed's read model -------------------------------------------------------------- */

static eddy_status decode(const eddy_event *stored, const eddy_event_meta *meta, void **out,
                          eddy_error *err, void *user) {
    *out = eddy_event_dup(stored);
    return *out ? EDDY_OK : EDDY_ERR_NOMEM;
}
static void free_event(void *ev, void *user) { eddy_event_free(ev); }
static const char *event_id(const void *ev, void *user) { return eddy_event_id(ev); }
static eddy_status apply(void *ev, const eddy_event_meta *meta, eddy_error *err, void *user) {
    atomic_fetch_add((atomic_int *)user, 1);
    return EDDY_OK;
}

typedef struct waiting {
    eddy_bus *bus;
    counts *c;
    atomic_int *applied;
    int want;
} waiting;

static bool orders_settled(void *user) {
    waiting *w = user;
    eddy_consumer_stats st;
    eddy_bus_consumer_stats(w->bus, "orders", &st);
    return atomic_load(&w->c->ok) == w->want && atomic_load(&w->c->fanout) == w->want + 1 &&
           st.dead_lettered == 1;
}

/* Passes that trimmed acknowledged entries and removed the consumer of a stopped bus. */
static bool retention_ran(void *user) {
    eddy_retention_stats st;
    eddy_bus_retention_stats(((waiting *)user)->bus, &st);
    return st.passes >= 2 && st.trimmed > 0 && st.consumers_removed > 0;
}

static bool fed(void *user) {
    waiting *w = user;
    return atomic_load(w->applied) == w->want;
}

static eddy_status count_subject(const eddy_subject_info *info, void *user) {
    (*(int *)user)++;
    return EDDY_OK;
}

static eddy_status count_registration(const eddy_registration *reg, void *user) {
    (*(int *)user)++;
    return EDDY_OK;
}

static eddy_status count_letter(const eddy_dead_letter *dl, void *user) {
    (*(int *)user)++;
    return EDDY_OK;
}

/* A read model kept in Redis: every kind of write, so the function's commands all run. */
static eddy_status model_writes(void *ev, const eddy_event_meta *meta, eddy_writes *w,
                                eddy_error *err, void *user) {
    (void)ev, (void)user;
    const char *id = meta->stream_id;
    size_t n = strlen(id);
    eddy_status st = eddy_writes_hincr(w, "count", id, n, 1, err);
    if (st == EDDY_OK)
        st = eddy_writes_hset(w, "last", id, n, "x", 1, err);
    if (st == EDDY_OK)
        st = eddy_writes_sadd(w, "seen", id, n, err);
    if (st == EDDY_OK)
        st = eddy_writes_srem(w, "gone", id, n, err);
    if (st == EDDY_OK)
        st = eddy_writes_hdel(w, "last", "none", 4, err);
    if (st == EDDY_OK)
        st = eddy_writes_del(w, "scratch", err);
    return st;
}

static eddy_status count_item(const char *name, size_t nlen, const char *value, size_t vlen,
                              void *user) {
    (void)name, (void)nlen, (void)value, (void)vlen;
    (*(int *)user)++;
    return EDDY_OK;
}

static eddy_status count_stored(const eddy_event *ev, const eddy_event_meta *meta, void *user) {
    (*(int *)user)++;
    return EDDY_OK;
}

Test(acl, main_flows_run_with_the_documented_rules) {
    char ns[64], url[256];
    eddy_test_namespace(ns, sizeof(ns), "acl");
    create_user(ns, url, sizeof(url));

    eddy_settings s;
    eddy_settings_init(&s);
    s.url = url;
    s.ns = ns;
    s.source = "/acl";
    s.block_ms = 100;
    s.max_deliveries = 2;
    s.redelivery_idle_ms = 300;
    s.redelivery_backoff_ms = 20;
    s.redelivery_backoff_max_ms = 40;
    s.retention_interval_ms = 100;
    s.retention_grace_ms = 250;
    s.consumer_idle_ms = 1;
    s.log = log_hook;

    counts c = {0};
    eddy_subscription_spec specs[3];
    for (int i = 0; i < 3; i++)
        eddy_subscription_spec_init(&specs[i]);
    specs[0].name = "orders";
    specs[0].pattern = "acl.orders.>";
    specs[0].shape = EDDY_COMPETING;
    specs[0].group = "workers";
    specs[0].delivery = EDDY_AT_LEAST_ONCE;
    specs[0].handler = handle_order;
    specs[0].user = &c;
    specs[1].name = "audit";
    specs[1].pattern = "acl.orders.eu";
    specs[1].shape = EDDY_FANOUT;
    specs[1].delivery = EDDY_AT_LEAST_ONCE;
    specs[1].handler = handle_fanout;
    specs[1].user = &c;
    specs[2].name = "echo";
    specs[2].pattern = "acl.echo";
    specs[2].shape = EDDY_COMPETING;
    specs[2].group = "echoers";
    specs[2].responder = echo;

    eddy_bus *bus;
    eddy_error err;
    cr_assert_eq(eddy_bus_new(&s, specs, 3, &bus, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(eddy_bus_start(bus, &err), EDDY_OK, "%s", err.detail);

    /* Publish and consume: competing and fanout, a poison message redelivered and
     * dead-lettered, a pause (which cuts the blocking read short) and a resume. */
    cr_assert_eq(eddy_bus_pause(bus, "orders", &err), EDDY_OK, "%s", err.detail);
    const int n = 5;
    for (int i = 0; i < n; i++) {
        char id[32];
        snprintf(id, sizeof(id), "order-%d", i);
        eddy_event *ev = event(id, "acl.order");
        cr_assert_eq(eddy_bus_publish(bus, "acl.orders.eu", ev, NULL, 0, &err), EDDY_OK, "%s",
                     err.detail);
        eddy_event_free(ev);
    }
    eddy_event *poison = event("poison-1", "acl.poison");
    cr_assert_eq(eddy_bus_publish(bus, "acl.orders.eu", poison, NULL, 0, &err), EDDY_OK, "%s",
                 err.detail);
    eddy_event_free(poison);
    eddy_event *handback = event("handback-1", "acl.handback");
    cr_assert_eq(eddy_bus_publish(bus, "acl.orders.eu", handback, NULL, 0, &err), EDDY_OK, "%s",
                 err.detail);
    eddy_event_free(handback);
    cr_assert_eq(eddy_bus_resume(bus, "orders", &err), EDDY_OK, "%s", err.detail);
    waiting w = {bus, &c, NULL, n + 1};
    cr_assert(eddy_test_wait_until(orders_settled, &w, WAIT_MS), "handled %d, fanout %d",
              atomic_load(&c.ok), atomic_load(&c.fanout));
    cr_assert_eq(atomic_load(&c.handback_attempt), 1);

    /* Request/reply. */
    eddy_event *ask = event("ask-1", "acl.ask");
    eddy_event *reply = NULL;
    eddy_request_opts o = {.deadline_ms = eddy_deadline_in(WAIT_MS)};
    cr_assert_eq(eddy_bus_request(bus, "acl.echo", ask, &o, &reply, &err), EDDY_OK, "%s",
                 err.detail);
    cr_assert_str_eq(eddy_event_id(reply), "ask-1");
    eddy_event_free(reply);
    o.deadline_ms = eddy_deadline_in(WAIT_MS);
    cr_assert_eq(eddy_bus_request(bus, "acl.nobody", ask, &o, &reply, &err),
                 EDDY_ERR_NO_RESPONDERS);
    eddy_event_free(ask);

    /* The dead-letter API: list, count, replay (it fails again and comes back), purge. */
    eddy_dlq *dlq;
    cr_assert_eq(eddy_dlq_open(&s, &dlq, &err), EDDY_OK, "%s", err.detail);
    int letters = 0;
    eddy_dlq_cursor cur;
    eddy_dlq_cursor_init(&cur);
    while (!cur.done)
        cr_assert_eq(eddy_dlq_list(dlq, "workers", &cur, 10, count_letter, &letters, &err), EDDY_OK,
                     "%s", err.detail);
    cr_assert_eq(letters, 1);
    size_t replayed = 0, purged = 0, count = 0;
    cr_assert_eq(eddy_dlq_replay_all(dlq, "workers", &replayed, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(replayed, 1);
    cr_assert_eq(eddy_dlq_count(dlq, "workers", &count, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(eddy_dlq_purge_all(dlq, "workers", &purged, &err), EDDY_OK, "%s", err.detail);
    eddy_dlq_close(dlq);

    /* The event store and a feed: a catch-up that replays and writes its marker, live events
     * fed by a subscription, and a second feed that finds the marker. */
    eddy_store *store;
    cr_assert_eq(eddy_store_open(&s, &store, &err), EDDY_OK, "%s", err.detail);
    eddy_event *e1 = event("stored-1", "acl.stored"), *e2 = event("stored-2", "acl.stored");
    const eddy_event *evs[] = {e1, e2};
    eddy_append_opts ao;
    eddy_append_opts_init(&ao);
    ao.expected_version = EDDY_NO_STREAM;
    long long version = 0;
    cr_assert_eq(eddy_store_append(store, "acct-1", evs, 2, &ao, &version, &err), EDDY_OK, "%s",
                 err.detail);
    cr_assert_eq(version, 2);
    cr_assert_eq(eddy_store_append(store, "acct-1", evs, 1, &ao, NULL, &err),
                 EDDY_ERR_VERSION_CONFLICT);
    int read = 0;
    cr_assert_eq(eddy_store_read_stream(store, "acct-1", 0, count_stored, &read, &err), EDDY_OK,
                 "%s", err.detail);
    long long next = 0, head = 0;
    cr_assert_eq(eddy_store_read_page(store, 0, 10, NULL, count_stored, &read, &next, &err),
                 EDDY_OK, "%s", err.detail);
    cr_assert_eq(eddy_store_head(store, &head, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(read, 4);
    cr_assert_eq(head, 2);

    atomic_int applied = 0;
    eddy_checkpoints ckpt = eddy_store_checkpoints(store);
    eddy_feed_config cfg;
    eddy_feed_config_init(&cfg);
    cfg.id = "accounts";
    cfg.projection.apply = apply;
    cfg.projection.user = &applied;
    cfg.decode = decode;
    cfg.free_event = free_event;
    cfg.event_id = event_id;
    cfg.checkpoints = &ckpt;
    cfg.log = log_hook;
    eddy_feed *feed;
    cr_assert_eq(eddy_feed_new(store, &cfg, &feed, &err), EDDY_OK, "%s", err.detail);
    eddy_subscription_spec live;
    eddy_subscription_spec_init(&live);
    live.name = "accounts-live";
    live.pattern = "acl.accounts";
    live.shape = EDDY_COMPETING;
    live.group = "accounts";
    live.delivery = EDDY_AT_LEAST_ONCE;
    live.handler = eddy_feed_handler;
    live.user = feed;
    cr_assert_eq(eddy_bus_subscribe(bus, &live, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(eddy_feed_catch_up(feed, NULL, &err), EDDY_OK, "%s", err.detail);
    eddy_feed_info info;
    eddy_feed_stats(feed, &info);
    cr_assert_eq(info.last, EDDY_FEED_REPLAYED);
    ao.expected_version = 2;
    ao.publish_subject = "acl.accounts";
    eddy_event *e3 = event("stored-3", "acl.stored");
    const eddy_event *more[] = {e3};
    cr_assert_eq(eddy_store_append(store, "acct-1", more, 1, &ao, NULL, &err), EDDY_OK, "%s",
                 err.detail);
    waiting wf = {bus, &c, &applied, 3};
    cr_assert(eddy_test_wait_until(fed, &wf, WAIT_MS), "applied %d", atomic_load(&applied));

    eddy_feed *again;
    cr_assert_eq(eddy_feed_new(store, &cfg, &again, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(eddy_feed_catch_up(again, NULL, &err), EDDY_OK, "%s", err.detail);
    eddy_feed_stats(again, &info);
    cr_assert_eq(info.last, EDDY_FEED_SKIPPED);
    eddy_feed_free(again);

    /* A read model kept in Redis: its commit (one function call) and its reads. */
    eddy_feed_config mcfg;
    eddy_feed_config_init(&mcfg);
    mcfg.id = "acl-model";
    mcfg.writes = model_writes;
    mcfg.decode = decode;
    mcfg.free_event = free_event;
    mcfg.event_id = event_id;
    mcfg.log = log_hook;
    mcfg.log_user = "model";
    eddy_feed *model;
    cr_assert_eq(eddy_feed_new(store, &mcfg, &model, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(eddy_feed_catch_up(model, NULL, &err), EDDY_OK, "%s", err.detail);
    eddy_feed_free(model);
    int items = 0;
    long long mpos = 0;
    cr_assert_eq(eddy_store_model_hash(store, "acl-model", "count", count_item, &items, &err),
                 EDDY_OK, "%s", err.detail);
    cr_assert_eq(eddy_store_model_set(store, "acl-model", "seen", count_item, &items, &err),
                 EDDY_OK, "%s", err.detail);
    cr_assert_eq(eddy_store_model_keys(store, "acl-model", count_item, &items, &err), EDDY_OK, "%s",
                 err.detail);
    cr_assert_eq(eddy_store_model_position(store, "acl-model", &mpos, &err), EDDY_OK, "%s",
                 err.detail);
    cr_assert_eq(items, 1 + 1 + 3, "count, seen, and the keys count, last and seen");
    cr_assert_eq(mpos, 3);

    /* A bus that joins the group and stops leaves a consumer of no live bus behind. */
    eddy_settings gone_s = s;
    gone_s.instance = "gone";
    eddy_subscription_spec leaver = specs[0];
    leaver.group = "leavers"; /* nothing is published to it: it leaves nothing pending */
    eddy_bus *gone;
    cr_assert_eq(eddy_bus_new(&gone_s, &leaver, 1, &gone, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(eddy_bus_start(gone, &err), EDDY_OK, "%s", err.detail);
    eddy_bus_free(gone);

    /* The retention pass: lease, groups and consumers inspected, acknowledged entries trimmed,
     * the idle consumer removed. */
    cr_assert(eddy_test_wait_until(retention_ran, &w, WAIT_MS));

    /* Idempotent publish (publish_dedup_ms): the library's deduplicating publish and append. */
    eddy_settings ds = s;
    ds.publish_dedup_ms = 60000;
    eddy_bus *dbus;
    cr_assert_eq(eddy_bus_new(&ds, NULL, 0, &dbus, &err), EDDY_OK, "%s", err.detail);
    eddy_event *once = event("once-1", "acl.once");
    char first[64], again_id[64];
    cr_assert_eq(eddy_bus_publish(dbus, "acl.once", once, first, sizeof(first), &err), EDDY_OK,
                 "%s", err.detail);
    cr_assert_eq(eddy_bus_publish(dbus, "acl.once", once, again_id, sizeof(again_id), &err),
                 EDDY_OK, "%s", err.detail);
    cr_assert_str_eq(again_id, first);
    eddy_event_free(once);
    eddy_bus_free(dbus);
    eddy_store *dstore;
    cr_assert_eq(eddy_store_open(&ds, &dstore, &err), EDDY_OK, "%s", err.detail);
    eddy_event *e4 = event("stored-4", "acl.stored");
    const eddy_event *last[] = {e4};
    ao.expected_version = EDDY_ANY_VERSION;
    cr_assert_eq(eddy_store_append(dstore, "acct-2", last, 1, &ao, NULL, &err), EDDY_OK, "%s",
                 err.detail);
    eddy_event_free(e4);
    eddy_store_close(dstore);
    cr_assert_eq(admin_int("XLEN", ns, "s:acl.once"), 1);

    /* What an operator's tool reads (eddy_admin, the eddy command's groups, registry, stats). */
    eddy_admin *admin;
    cr_assert_eq(eddy_admin_open(&s, &admin, &err), EDDY_OK, "%s", err.detail);
    int subjects = 0, registrations = 0;
    cr_assert_eq(eddy_admin_subjects(admin, NULL, count_subject, &subjects, &err), EDDY_OK, "%s",
                 err.detail);
    cr_assert_eq(eddy_admin_registry(admin, count_registration, &registrations, &err), EDDY_OK,
                 "%s", err.detail);
    cr_assert_geq(subjects, 3);
    cr_assert_geq(registrations, 4);
    char *json = eddy_admin_stats_json(admin, NULL, &err);
    cr_assert(json, "%s", err.detail);
    free(json);
    eddy_admin_close(admin);

    /* The reply stream carries its expiry (PEXPIRE), so it goes when its process does. */
    cr_assert_gt(admin_int("PTTL", ns, "inbox:*"), 0);
    eddy_bus_stop(bus); /* leaves the registry, drops its reply stream and fanout groups */
    cr_assert_eq(admin_int("ZCARD", ns, "subs"), 0);
    cr_assert_eq(admin_int("EXISTS", ns, "inbox:*"), 0);
    cr_assert_eq(admin_fanout_groups(ns, "acl.orders.eu"), 0);
    eddy_feed_free(feed);
    eddy_bus_free(bus);
    eddy_store_close(store);
    eddy_event_free(e1);
    eddy_event_free(e2);
    eddy_event_free(e3);
    assert_no_refusal();
}

/* The check can fail: a user without one of the documented rules is caught. */
Test(acl, a_missing_permission_is_caught) {
    char ns[64], url[256];
    eddy_test_namespace(ns, sizeof(ns), "acl-missing");
    create_user(ns, url, sizeof(url));
    redisContext *c = redisConnect("127.0.0.1", srv.port);
    cr_assert(c && !c->err);
    redisReply *r = redisCommand(c, "ACL SETUSER eddy -xautoclaim -xclaim");
    cr_assert(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    redisFree(c);

    eddy_settings s;
    eddy_settings_init(&s);
    s.url = url;
    s.ns = ns;
    s.block_ms = 100;
    s.redelivery_idle_ms = 100;
    s.log = log_hook;
    counts k = {0};
    eddy_subscription_spec spec;
    eddy_subscription_spec_init(&spec);
    spec.name = "orders";
    spec.pattern = "acl.orders.eu";
    spec.shape = EDDY_COMPETING;
    spec.group = "workers";
    spec.delivery = EDDY_AT_LEAST_ONCE;
    spec.handler = handle_order;
    spec.user = &k;
    eddy_bus *bus;
    eddy_error err;
    cr_assert_eq(eddy_bus_new(&s, &spec, 1, &bus, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(eddy_bus_start(bus, &err), EDDY_OK, "%s", err.detail);
    eddy_event *poison = event("poison-1", "acl.poison");
    cr_assert_eq(eddy_bus_publish(bus, "acl.orders.eu", poison, NULL, 0, &err), EDDY_OK, "%s",
                 err.detail);
    eddy_event_free(poison);
    /* The poison message fails; claiming it for redelivery is refused, and logged. */
    cr_assert(eddy_test_wait_until(refused, NULL, WAIT_MS), "no refusal was logged");
    eddy_bus_free(bus);
}
