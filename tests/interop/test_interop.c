/* SPDX-License-Identifier: BSD-3-Clause */
/* The wire format (docs/wire-format.md) from another language: tests/interop/peer.py, a Python
 * program on Debian's python3-redis with no eddy code, publishes events an eddy subscription
 * handles (and one malformed entry eddy dead-letters), answers eddy's requests as a responder
 * of its own (registry lease, group, reply stream), and consumes what eddy publishes, stored
 * events included. Each test runs its own redis-server on a free loopback port. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "eddy/blocking.h"
#include "eddy/msgpack.h"
#include "eddy/store.h"
#include "eddy_test.h"
#include "redis_server.h"

#define PYTHON "/usr/bin/python3" /* Debian's, where python3-redis lives */
#define WAIT_MS 30000             /* only a bound for a failing test, never a measurement */

static eddy_test_redis srv;

static void start_server(void) { eddy_test_redis_start(&srv, 0); }
static void stop_server(void) { eddy_test_redis_kill(&srv); }

TestSuite(interop, .init = start_server, .fini = stop_server, .timeout = 120);

/* The peer's command line: peer.py sits next to this file. */
static void peer_cmd(char *buf, size_t size, const char *args) {
    const char *file = __FILE__;
    const char *slash = strrchr(file, '/');
    int dirlen = slash ? (int)(slash - file) : 1;
    snprintf(buf, size, "%s %.*s/peer.py %s", PYTHON, slash ? dirlen : 1, slash ? file : ".", args);
}

/* Runs the peer to its end; its output (JSON lines) goes to out. */
static void run_peer(const char *args, char *out, size_t size) {
    char cmd[1024];
    peer_cmd(cmd, sizeof(cmd), args);
    FILE *p = popen(cmd, "r");
    cr_assert(p, "popen %s", cmd);
    size_t n = fread(out, 1, size - 1, p);
    out[n] = '\0';
    cr_assert_eq(pclose(p), 0, "%s failed; it printed: %s", cmd, out);
}

static void settings_for(eddy_settings *s, const char *ns) {
    eddy_settings_init(s);
    s->url = srv.url;
    s->ns = ns;
    s->source = "/interop/c";
    s->block_ms = 200;
    s->log = eddy_test_log;
}

/* ---- msgpack helpers ------------------------------------------------------------------- */

static const msgpack_object *map_get(const msgpack_object *o, const char *key) {
    if (o->type != MSGPACK_OBJECT_MAP)
        return NULL;
    for (uint32_t i = 0; i < o->via.map.size; i++) {
        const msgpack_object *k = &o->via.map.ptr[i].key;
        if (k->type == MSGPACK_OBJECT_STR && k->via.str.size == strlen(key) &&
            memcmp(k->via.str.ptr, key, k->via.str.size) == 0)
            return &o->via.map.ptr[i].val;
    }
    return NULL;
}

static bool map_str_is(const msgpack_object *o, const char *key, const char *want) {
    const msgpack_object *v = map_get(o, key);
    return v && v->type == MSGPACK_OBJECT_STR && v->via.str.size == strlen(want) &&
           memcmp(v->via.str.ptr, want, v->via.str.size) == 0;
}

static long long map_int(const msgpack_object *o, const char *key) {
    const msgpack_object *v = map_get(o, key);
    if (!v)
        return -999;
    if (v->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
        return (long long)v->via.u64;
    if (v->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
        return v->via.i64;
    return -999;
}

static void pack_str(msgpack_packer *pk, const char *s) {
    msgpack_pack_str(pk, strlen(s));
    msgpack_pack_str_body(pk, s, strlen(s));
}

/* ---- Python publishes, an eddy subscription handles ------------------------------------ */

typedef struct seen {
    pthread_mutex_t lock;
    int good, bad;
} seen;

static eddy_status handle_python_event(eddy_delivery *d, void *user) {
    seen *s = user;
    const eddy_event *ev = eddy_delivery_event(d);
    eddy_value *v = NULL;
    int32_t attempt = 0;
    bool ok = strcmp(eddy_event_type(ev), "interop.python.v1") == 0 &&
              strcmp(eddy_event_source(ev), "/interop/python") == 0 &&
              strcmp(eddy_event_datacontenttype(ev), EDDY_MSGPACK_CONTENT_TYPE) == 0 &&
              eddy_event_time(ev) && eddy_event_extension(ev, "origin") &&
              strcmp(eddy_event_extension(ev, "origin"), "python") == 0 &&
              eddy_event_ext_int(ev, "attempt", &attempt) == EDDY_OK && attempt == 1 &&
              strcmp(eddy_delivery_subject(d), "interop.py.orders") == 0 &&
              eddy_delivery_decode_value(d, &v, NULL) == EDDY_OK &&
              map_str_is(eddy_value_object(v), "text", "from python") &&
              map_int(eddy_value_object(v), "n") >= 0;
    eddy_value_free(v);
    pthread_mutex_lock(&s->lock);
    ok ? s->good++ : s->bad++;
    pthread_mutex_unlock(&s->lock);
    return EDDY_OK;
}

typedef struct handled_cond {
    eddy_bus *bus;
    seen *seen;
} handled_cond;

static bool all_handled(void *user) {
    handled_cond *c = user;
    eddy_consumer_stats st;
    eddy_bus_consumer_stats(c->bus, "from-python", &st);
    pthread_mutex_lock(&c->seen->lock);
    int good = c->seen->good;
    pthread_mutex_unlock(&c->seen->lock);
    return good == 3 && st.dead_lettered == 1;
}

Test(interop, python_publishes_and_eddy_handles) {
    char ns[64], out[8192], args[512];
    eddy_test_namespace(ns, sizeof(ns), "interop-pub");
    eddy_settings s;
    settings_for(&s, ns);
    seen got = {PTHREAD_MUTEX_INITIALIZER, 0, 0};
    eddy_subscription_spec spec;
    eddy_subscription_spec_init(&spec);
    spec.name = "from-python";
    spec.pattern = "interop.py.>"; /* a pattern: the subject is found through {ns}:subjects */
    spec.shape = EDDY_COMPETING;
    spec.group = "workers";
    spec.delivery = EDDY_AT_LEAST_ONCE;
    spec.handler = handle_python_event;
    spec.user = &got;
    eddy_bus *bus;
    eddy_error err;
    cr_assert_eq(eddy_bus_new(&s, &spec, 1, &bus, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(eddy_bus_start(bus, &err), EDDY_OK, "%s", err.detail);

    snprintf(args, sizeof(args), "publish %s %s interop.py.orders 3", srv.url, ns);
    run_peer(args, out, sizeof(out));
    handled_cond c = {bus, &got};
    cr_assert(eddy_test_wait_until(all_handled, &c, WAIT_MS), "handled %d good, %d bad", got.good,
              got.bad);
    cr_assert_eq(got.bad, 0);

    /* The malformed entry is in the group's dead-letter stream, as the peer reads it. */
    snprintf(args, sizeof(args), "dlq %s %s workers", srv.url, ns);
    run_peer(args, out, sizeof(out));
    cr_assert(strstr(out, "\"_dlq_reason\": \"malformed\""), "%s", out);
    cr_assert(strstr(out, "\"_dlq_group\": \"workers\""), "%s", out);
    cr_assert(strstr(out, "\"_dlq_subject\": \"interop.py.orders\""), "%s", out);
    cr_assert(strstr(out, "\"_dlq_deliveries\": \"1\""), "%s", out);
    eddy_bus_free(bus);
}

/* ---- a Python responder answers eddy's requests ---------------------------------------- */

typedef struct ask {
    const char *text;
    int n;
    bool fail;
} ask;

static eddy_status pack_ask(msgpack_packer *pk, void *user) {
    const ask *a = user;
    msgpack_pack_map(pk, a->fail ? 1 : 2);
    if (a->fail) {
        pack_str(pk, "fail");
        msgpack_pack_true(pk);
        return EDDY_OK;
    }
    pack_str(pk, "text");
    pack_str(pk, a->text);
    pack_str(pk, "n");
    msgpack_pack_int(pk, a->n);
    return EDDY_OK;
}

Test(interop, python_answers_eddy_requests) {
    char ns[64], args[512], cmd[1024], line[512];
    eddy_test_namespace(ns, sizeof(ns), "interop-rpc");
    snprintf(args, sizeof(args), "respond %s %s interop.rpc.echo pyresponders 2", srv.url, ns);
    peer_cmd(cmd, sizeof(cmd), args);
    FILE *peer = popen(cmd, "r");
    cr_assert(peer);
    cr_assert(fgets(line, sizeof(line), peer) && strstr(line, "\"ready\": true"),
              "the responder did not start");

    eddy_settings s;
    settings_for(&s, ns);
    eddy_bus *bus;
    eddy_error err;
    cr_assert_eq(eddy_bus_new(&s, NULL, 0, &bus, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(eddy_bus_start(bus, &err), EDDY_OK, "%s", err.detail);

    eddy_request_opts o = {.deadline_ms = eddy_deadline_in(WAIT_MS)};
    ask a = {"hi", 21, false};
    eddy_event *reply = NULL;
    cr_assert_eq(eddy_bus_request_value(bus, "interop.rpc.echo", "interop.ask.v1", pack_ask, &a, &o,
                                        &reply, &err),
                 EDDY_OK, "%s", err.detail);
    cr_assert_str_eq(eddy_event_type(reply), "interop.python.echoed");
    cr_assert_str_eq(eddy_event_source(reply), "/interop/python");
    eddy_value *v;
    cr_assert_eq(eddy_event_decode_value(reply, &v, &err), EDDY_OK, "%s", err.detail);
    cr_assert(map_str_is(eddy_value_object(v), "echo", "hi"));
    cr_assert_eq(map_int(eddy_value_object(v), "n"), 42);
    eddy_value_free(v);
    eddy_event_free(reply);

    /* A failure reply (the messagingfailed extension) is EDDY_ERR_RESPONDER_FAILED. */
    ask failing = {NULL, 0, true};
    o.deadline_ms = eddy_deadline_in(WAIT_MS);
    reply = NULL;
    cr_assert_eq(eddy_bus_request_value(bus, "interop.rpc.echo", "interop.ask.v1", pack_ask,
                                        &failing, &o, &reply, &err),
                 EDDY_ERR_RESPONDER_FAILED);
    cr_assert_null(reply);

    cr_assert(fgets(line, sizeof(line), peer) && strstr(line, "\"answered\": 2"), "%s", line);
    cr_assert_eq(pclose(peer), 0);
    eddy_request_stats rs;
    eddy_bus_request_stats(bus, NULL, &rs);
    cr_assert_eq(rs.answered, 1);
    cr_assert_eq(rs.failed, 1);
    eddy_bus_free(bus);

    /* It left the registry (ZREM): a requester that asks the registry now (a new bus: no
     * remembered answer) is told at once that nothing answers that subject. */
    cr_assert_eq(eddy_bus_new(&s, NULL, 0, &bus, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(eddy_bus_start(bus, &err), EDDY_OK, "%s", err.detail);
    o.deadline_ms = eddy_deadline_in(WAIT_MS);
    cr_assert_eq(eddy_bus_request_value(bus, "interop.rpc.echo", "interop.ask.v1", pack_ask, &a, &o,
                                        &reply, &err),
                 EDDY_ERR_NO_RESPONDERS);
    eddy_bus_free(bus);
}

/* ---- Python consumes what eddy publishes ----------------------------------------------- */

static eddy_status pack_from_c(msgpack_packer *pk, void *user) {
    msgpack_pack_map(pk, 2);
    pack_str(pk, "text");
    pack_str(pk, "from c");
    pack_str(pk, "n");
    msgpack_pack_int(pk, 7);
    return EDDY_OK;
}

static eddy_event *plain_event(const char *id, const char *text) {
    eddy_event *ev = eddy_event_new();
    cr_assert(ev);
    cr_assert_eq(eddy_event_set_id(ev, id), EDDY_OK);
    cr_assert_eq(eddy_event_set_source(ev, "/interop/c"), EDDY_OK);
    cr_assert_eq(eddy_event_set_type(ev, "interop.c.v1"), EDDY_OK);
    cr_assert_eq(eddy_event_set_subject(ev, "order-1"), EDDY_OK);
    cr_assert_eq(eddy_event_set_datacontenttype(ev, "text/plain"), EDDY_OK);
    cr_assert_eq(eddy_event_set_extension(ev, "origin", "c", NULL), EDDY_OK);
    cr_assert_eq(eddy_event_set_ext_int(ev, "priority", 3, NULL), EDDY_OK);
    cr_assert_eq(eddy_event_set_data(ev, text, strlen(text)), EDDY_OK);
    return ev;
}

Test(interop, python_consumes_what_eddy_publishes) {
    char ns[64], out[16384], args[512];
    eddy_test_namespace(ns, sizeof(ns), "interop-sub");
    eddy_settings s;
    settings_for(&s, ns);
    eddy_bus *bus;
    eddy_error err;
    cr_assert_eq(eddy_bus_new(&s, NULL, 0, &bus, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(eddy_bus_publish_value(bus, "interop.c.orders", "interop.c.value.v1", pack_from_c,
                                        NULL, &err),
                 EDDY_OK, "%s", err.detail);
    eddy_event *ev = plain_event("c-plain-1", "plain text");
    cr_assert_eq(eddy_bus_publish(bus, "interop.c.orders", ev, NULL, 0, &err), EDDY_OK, "%s",
                 err.detail);
    eddy_event_free(ev);

    /* An append that publishes: the subject's entry carries the stored metadata too. */
    eddy_store *store;
    cr_assert_eq(eddy_store_open(&s, &store, &err), EDDY_OK, "%s", err.detail);
    ev = plain_event("c-stored-1", "stored text");
    eddy_append_opts ao;
    eddy_append_opts_init(&ao);
    ao.publish_subject = "interop.c.orders";
    const eddy_event *evs[] = {ev};
    cr_assert_eq(eddy_store_append(store, "order-1", evs, 1, &ao, NULL, &err), EDDY_OK, "%s",
                 err.detail);
    eddy_event_free(ev);
    eddy_store_close(store);

    snprintf(args, sizeof(args), "consume %s %s interop.c.orders py-readers 3", srv.url, ns);
    run_peer(args, out, sizeof(out));
    cr_assert(strstr(out, "\"datacontenttype\": \"application/msgpack\""), "%s", out);
    cr_assert(strstr(out, "\"data\": {\"n\": 7, \"text\": \"from c\"}"), "%s", out);
    cr_assert(strstr(out, "\"source\": \"/interop/c\""), "%s", out);
    cr_assert(strstr(out, "\"type\": \"interop.c.value.v1\""), "%s", out);
    cr_assert(strstr(out, "\"data\": \"plain text\""), "%s", out);
    cr_assert(strstr(out, "\"ext\": {\"origin\": \"c\", \"priority\": 3}"), "%s", out);
    cr_assert(strstr(out, "\"subject\": \"order-1\""), "%s", out);
    cr_assert(strstr(out, "\"_position\": \"1\", \"_stream\": \"order-1\", \"_version\": \"1\""),
              "%s", out);
    cr_assert(strstr(out, "\"specversion\": \"1.0\""), "%s", out);
    eddy_bus_free(bus);
}
