/* SPDX-License-Identifier: BSD-3-Clause */
/* Request/reply on the blocking front end: a responder that sets up tables, and a caller that
 * asks it to.
 *
 *   reqrep_blocking [--url URL] [--role both|responder|caller]
 *
 * The responder answers "tables.setup" requests, whose data is the msgpack map {"name": ...},
 * with a reply whose data is {"outcome": "set up"} or {"outcome": "refused", "reason": ...}:
 * a refusal ("that name is taken") is the application's answer, so it is a reply, not an
 * error. For the name "explode" it returns an error status: the responder failed, the bus
 * sends a failure reply, and the caller gets EDDY_ERR_RESPONDER_FAILED at once while the
 * failure's detail stays here (logged through the log hook, and counted).
 *
 * The caller sends a few requests with a 2-second deadline, prints each outcome, including
 * EDDY_ERR_NO_RESPONDERS for a subject nobody serves, then the request counters: the total,
 * the row of the declared name "table-setup", and the unnamed row.
 *
 * With the default memory:// backend (or --role both) both sides run in this one process and
 * it finishes on its own. With --url redis://127.0.0.1:6379 (or EDDY_URL) run
 * `--role responder` in one terminal (it answers until Ctrl-C) and `--role caller` in another. */
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eddy/blocking.h"
#include "eddy/msgpack.h"

#define SOURCE "/examples/reqrep_blocking"

/* ---- the responder ---------------------------------------------------------------------- */

/* The names already set up. Workers run responders concurrently, hence the lock. */
static pthread_mutex_t tables_lock = PTHREAD_MUTEX_INITIALIZER;
static char *tables[64];
static size_t ntables;

typedef struct outcome {
    const char *reason; /* NULL: set up */
} outcome;

static eddy_status pack_str(msgpack_packer *pk, const char *s) {
    size_t n = strlen(s);
    return msgpack_pack_str_with_body(pk, s, n) == 0 ? EDDY_OK : EDDY_ERR_NOMEM;
}

static eddy_status pack_outcome(msgpack_packer *pk, void *user) {
    const outcome *o = user;
    msgpack_pack_map(pk, o->reason ? 2 : 1);
    pack_str(pk, "outcome");
    pack_str(pk, o->reason ? "refused" : "set up");
    if (o->reason) {
        pack_str(pk, "reason");
        pack_str(pk, o->reason);
    }
    return EDDY_OK;
}

/* The string value of key in a msgpack map, copied into buf; false when absent. */
static bool map_str(const msgpack_object *o, const char *key, char *buf, size_t size) {
    if (o->type != MSGPACK_OBJECT_MAP)
        return false;
    for (uint32_t i = 0; i < o->via.map.size; i++) {
        const msgpack_object *k = &o->via.map.ptr[i].key, *v = &o->via.map.ptr[i].val;
        if (k->type == MSGPACK_OBJECT_STR && k->via.str.size == strlen(key) &&
            memcmp(k->via.str.ptr, key, k->via.str.size) == 0 && v->type == MSGPACK_OBJECT_STR) {
            snprintf(buf, size, "%.*s", (int)v->via.str.size, v->via.str.ptr);
            return true;
        }
    }
    return false;
}

/* Sets the table up, or says why not. */
static const char *set_up(const char *name) {
    if (!name[0])
        return "a table needs a name";
    pthread_mutex_lock(&tables_lock);
    const char *refusal = NULL;
    for (size_t i = 0; i < ntables && !refusal; i++)
        if (strcmp(tables[i], name) == 0)
            refusal = "that name is taken";
    if (!refusal && ntables == sizeof(tables) / sizeof(tables[0]))
        refusal = "no table left";
    if (!refusal && !(tables[ntables] = strdup(name)))
        refusal = "no memory left for another table";
    if (!refusal)
        ntables++;
    pthread_mutex_unlock(&tables_lock);
    return refusal;
}

static eddy_status setup_responder(eddy_delivery *d, eddy_event **reply, void *user) {
    (void)user;
    eddy_value *v = NULL;
    eddy_error err;
    eddy_status st = eddy_delivery_decode_value(d, &v, &err);
    if (st != EDDY_OK)
        return st; /* not a request this responder can read: it failed */
    char name[128] = "";
    map_str(eddy_value_object(v), "name", name, sizeof(name));
    eddy_value_free(v);
    if (strcmp(name, "explode") == 0)
        return EDDY_ERR_HANDLER_FAILED; /* the caller learns only that the responder failed */
    outcome o = {set_up(name)};
    printf("responder: %s -> %s\n", name, o.reason ? o.reason : "set up");
    fflush(stdout);

    eddy_event *r = eddy_event_new();
    if (!r)
        return EDDY_ERR_NOMEM;
    char id[128];
    snprintf(id, sizeof(id), "outcome-%s", eddy_event_id(eddy_delivery_event(d)));
    st = eddy_event_set_id(r, id);
    if (st == EDDY_OK)
        st = eddy_event_set_source(r, SOURCE);
    if (st == EDDY_OK)
        st = eddy_event_set_type(r, "example.tables.setup.outcome.v1");
    if (st == EDDY_OK)
        st = eddy_event_set_value(r, pack_outcome, &o, &err);
    if (st != EDDY_OK) {
        eddy_event_free(r);
        return st;
    }
    *reply = r; /* the bus owns it now */
    return EDDY_OK;
}

static eddy_bus *responder_bus(const eddy_settings *s) {
    eddy_subscription_spec spec;
    eddy_subscription_spec_init(&spec);
    spec.name = "table-setup";
    spec.pattern = "tables.setup";
    spec.shape = EDDY_COMPETING; /* one member of the group answers each request */
    spec.group = "ingress";
    spec.delivery = EDDY_AT_MOST_ONCE; /* a redelivered request would answer nobody */
    spec.responder = setup_responder;
    eddy_bus *bus = NULL;
    eddy_error err;
    eddy_status st = eddy_bus_new(s, &spec, 1, &bus, &err);
    if (st == EDDY_OK && (st = eddy_bus_start(bus, &err)) != EDDY_OK) {
        eddy_bus_free(bus);
        bus = NULL;
    }
    if (st != EDDY_OK)
        fprintf(stderr, "responder: %s: %s\n", eddy_status_str(st), err.detail);
    return bus;
}

static void responder_done(eddy_bus *bus) {
    eddy_bus_stop(bus); /* replies in flight are sent and counted before the counters are read */
    eddy_consumer_stats cs;
    if (eddy_bus_consumer_stats(bus, "table-setup", &cs) == EDDY_OK)
        printf("responder: %llu requests, %llu replied, %llu failed\n",
               (unsigned long long)cs.delivered, (unsigned long long)cs.replied,
               (unsigned long long)cs.responder_failed);
    eddy_bus_free(bus);
    pthread_mutex_lock(&tables_lock);
    for (size_t i = 0; i < ntables; i++)
        free(tables[i]);
    ntables = 0;
    pthread_mutex_unlock(&tables_lock);
}

/* ---- the caller ------------------------------------------------------------------------- */

static eddy_status pack_name(msgpack_packer *pk, void *user) {
    msgpack_pack_map(pk, 1);
    pack_str(pk, "name");
    return pack_str(pk, user);
}

/* Asks once and prints the outcome. False on a status that is not an answer (a transport
 * failure, a refusal before sending). */
static bool ask(eddy_bus *bus, const char *subject, const char *name, const char *counted_as) {
    eddy_request_opts opts = {0};
    opts.deadline_ms = eddy_deadline_in(2000); /* required: eddy picks no default */
    opts.name = counted_as;
    eddy_event *reply = NULL;
    eddy_error err;
    eddy_status st = eddy_bus_request_value(bus, subject, "example.tables.setup.v1", pack_name,
                                            (void *)name, &opts, &reply, &err);
    printf("caller: %s {\"name\": \"%s\"}: ", subject, name);
    bool answer = true;
    if (st == EDDY_OK) {
        eddy_value *v = NULL;
        char what[64] = "?", reason[128] = "";
        if (eddy_event_decode_value(reply, &v, &err) == EDDY_OK) {
            map_str(eddy_value_object(v), "outcome", what, sizeof(what));
            map_str(eddy_value_object(v), "reason", reason, sizeof(reason));
            eddy_value_free(v);
        }
        printf("%s%s%s\n", what, reason[0] ? ": " : "", reason);
        eddy_event_free(reply);
    } else {
        printf("%s (%s)\n", eddy_status_name(st), eddy_status_str(st));
        answer = st == EDDY_ERR_RESPONDER_FAILED || st == EDDY_ERR_NO_RESPONDERS ||
                 st == EDDY_ERR_NO_REPLY;
        if (!answer)
            fprintf(stderr, "caller: %s\n", err.detail);
    }
    fflush(stdout);
    return answer;
}

static void print_stats(eddy_bus *bus, const char *label, const char *name) {
    eddy_request_stats rs;
    eddy_bus_request_stats(bus, name, &rs);
    printf("  %-13s sent %llu, answered %llu, no responders %llu, no reply %llu, failed %llu",
           label, (unsigned long long)rs.sent, (unsigned long long)rs.answered,
           (unsigned long long)rs.no_responders, (unsigned long long)rs.no_reply,
           (unsigned long long)rs.failed);
    if (!name)
        printf(", unclaimed %llu", (unsigned long long)rs.unclaimed); /* total only */
    printf("\n");
}

static int caller(const eddy_settings *s) {
    eddy_bus *bus = NULL;
    eddy_error err;
    eddy_status st = eddy_bus_new(s, NULL, 0, &bus, &err);
    if (st == EDDY_OK)
        st = eddy_bus_start(bus, &err); /* requests need a started bus: replies arrive on it */
    if (st != EDDY_OK) {
        fprintf(stderr, "caller: %s: %s\n", eddy_status_str(st), err.detail);
        eddy_bus_free(bus);
        return 1;
    }
    bool ok = ask(bus, "tables.setup", "orcs", "table-setup") &&
              ask(bus, "tables.setup", "goblins", "table-setup") &&
              ask(bus, "tables.setup", "orcs", "table-setup") && /* taken: a refusal */
              ask(bus, "tables.setup", "explode", "table-setup") &&
              ask(bus, "tables.teardown", "orcs", NULL); /* nobody serves it */
    printf("caller: request counters\n");
    print_stats(bus, "total", NULL);
    print_stats(bus, "table-setup", "table-setup");
    print_stats(bus, "unnamed", "");
    eddy_bus_free(bus);
    return ok ? 0 : 1;
}

/* ---- main ------------------------------------------------------------------------------- */

static void log_to_stderr(eddy_log_level level, const char *msg, void *user) {
    (void)user;
    if (level >= EDDY_LOG_WARN)
        fprintf(stderr, "eddy: %s\n", msg);
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("usage: %s [--url URL] [--role both|responder|caller]\n", argv[0]);
            return 0;
        }
    const char *url = getenv("EDDY_URL") ? getenv("EDDY_URL") : "memory://";
    const char *role = "both";
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--url") == 0) {
            url = argv[i + 1];
        } else if (strcmp(argv[i], "--role") == 0) {
            role = argv[i + 1];
        } else {
            argc = -1;
            break;
        }
    }
    bool both = strcmp(role, "both") == 0, respond = both || strcmp(role, "responder") == 0,
         call = both || strcmp(role, "caller") == 0;
    if (argc < 0 || argc % 2 == 0 || (!respond && !call)) {
        fprintf(stderr, "usage: %s [--url URL] [--role both|responder|caller]\n", argv[0]);
        return 2;
    }
    static const char *const request_names[] = {"table-setup"};
    eddy_settings s;
    eddy_settings_init(&s);
    s.url = url;
    s.ns = "example";
    s.source = SOURCE; /* needed by responders and by eddy_bus_request_value */
    s.log = log_to_stderr;
    s.request_names = request_names;
    s.request_name_count = 1;

    /* A responder alone answers until SIGINT or SIGTERM; blocked here so that every thread the
     * bus starts inherits the mask and sigwait below receives them. */
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    if (respond && !call)
        pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);

    eddy_bus *responder = respond ? responder_bus(&s) : NULL;
    if (respond && !responder)
        return 1;
    int rc = 0;
    if (call) {
        rc = caller(&s);
    } else {
        printf("responder: answering tables.setup on %s (Ctrl-C to stop)\n", url);
        fflush(stdout);
        int sig;
        sigwait(&stop_signals, &sig);
    }
    if (responder)
        responder_done(responder);
    return rc;
}
