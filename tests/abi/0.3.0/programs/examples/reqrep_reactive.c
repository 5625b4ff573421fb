/* SPDX-License-Identifier: BSD-3-Clause */
/* Request/reply on the reactive front end: the twin of reqrep_blocking.c, on one libev loop.
 *
 *   reqrep_reactive [--url URL] [--role both|responder|caller]
 *
 * The responder answers "tables.setup" requests, whose data is the msgpack map {"name": ...},
 * with a reply whose data is {"outcome": "set up"} or {"outcome": "refused", "reason": ...}:
 * a refusal ("that name is taken") is the application's answer, so it is a reply, not an
 * error. For the name "explode" it returns an error status: the responder failed, the bus
 * sends a failure reply, and the caller gets EDDY_ERR_RESPONDER_FAILED at once while the
 * failure's detail stays here (logged through the log hook, and counted). For the name "later"
 * it answers from a timer instead (EDDY_PENDING, then eddy_delivery_reply): nothing blocks the
 * loop while a responder works.
 *
 * The caller sends a few requests with a 2-second deadline, one after the other from each
 * reply's callback, prints each outcome, including EDDY_ERR_NO_RESPONDERS for a subject nobody
 * serves, then the request counters: the total, the row of the declared name "table-setup",
 * and the unnamed row.
 *
 * With the default memory:// backend (or --role both) both sides run on this one loop and it
 * finishes on its own. With --url redis://127.0.0.1:6379 (or EDDY_URL) run `--role responder`
 * in one terminal (it answers until Ctrl-C) and `--role caller` in another.
 *
 * Everything runs on the loop's thread; nothing here needs a lock. */
#include <ev.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eddy/msgpack.h"
#include "eddy/reactive.h"

#define SOURCE "/examples/reqrep_reactive"

typedef struct app {
    struct ev_loop *loop;
    eddy_rbus *responder;
    eddy_rbus *caller;
    bool call;    /* this process asks */
    size_t asked; /* requests sent so far */
    bool answers; /* every outcome so far was an answer (see ask) */
    int status;   /* exit status */
    ev_signal sigint, sigterm;
} app;

/* ---- the responder ---------------------------------------------------------------------- */

/* The names already set up. */
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
    for (size_t i = 0; i < ntables; i++)
        if (strcmp(tables[i], name) == 0)
            return "that name is taken";
    if (ntables == sizeof(tables) / sizeof(tables[0]))
        return "no table left";
    if (!(tables[ntables] = strdup(name)))
        return "no memory left for another table";
    ntables++;
    return NULL;
}

/* The reply to a request for `name`: NULL when it cannot be built (the bus then sends a
 * failure reply). */
static eddy_event *outcome_event(const eddy_delivery *d, const char *name) {
    outcome o = {set_up(name)};
    printf("responder: %s -> %s\n", name, o.reason ? o.reason : "set up");
    fflush(stdout);
    eddy_event *r = eddy_event_new();
    if (!r)
        return NULL;
    char id[128];
    snprintf(id, sizeof(id), "outcome-%s", eddy_event_id(eddy_delivery_event(d)));
    eddy_error err;
    eddy_status st = eddy_event_set_id(r, id);
    if (st == EDDY_OK)
        st = eddy_event_set_source(r, SOURCE);
    if (st == EDDY_OK)
        st = eddy_event_set_type(r, "example.tables.setup.outcome.v1");
    if (st == EDDY_OK)
        st = eddy_event_set_value(r, pack_outcome, &o, &err);
    if (st != EDDY_OK) {
        eddy_event_free(r);
        return NULL;
    }
    return r;
}

/* A request answered later, from a timer: the delivery stays ours until eddy_delivery_reply. */
typedef struct job {
    ev_timer timer; /* first: the timer's address is the job's */
    eddy_delivery *d;
    char name[128];
} job;

static void answer_later(struct ev_loop *loop, ev_timer *t, int revents) {
    job *j = (job *)t;
    eddy_delivery_reply(j->d, outcome_event(j->d, j->name)); /* the bus owns the reply */
    free(j);
}

static eddy_status setup_responder(eddy_delivery *d, eddy_event **reply, void *user) {
    app *a = user;
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
    if (strcmp(name, "later") == 0) {
        job *j = malloc(sizeof(*j));
        if (!j)
            return EDDY_ERR_NOMEM;
        j->d = d;
        snprintf(j->name, sizeof(j->name), "%s", name);
        ev_timer_init(&j->timer, answer_later, 0.05, 0.);
        ev_timer_start(a->loop, &j->timer);
        return EDDY_PENDING;
    }
    if (!(*reply = outcome_event(d, name))) /* the bus owns it now */
        return EDDY_ERR_NOMEM;
    return EDDY_OK;
}

static void responder_done(app *a) {
    eddy_consumer_stats cs;
    if (eddy_rbus_consumer_stats(a->responder, "table-setup", &cs) == EDDY_OK)
        printf("responder: %llu requests, %llu replied, %llu failed\n",
               (unsigned long long)cs.delivered, (unsigned long long)cs.replied,
               (unsigned long long)cs.responder_failed);
    eddy_rbus_free(a->responder);
    a->responder = NULL;
    for (size_t i = 0; i < ntables; i++)
        free(tables[i]);
    ntables = 0;
}

/* ---- the caller ------------------------------------------------------------------------- */

static const struct question {
    const char *subject, *name, *counted_as;
} questions[] = {
    {"tables.setup", "orcs", "table-setup"},    {"tables.setup", "goblins", "table-setup"},
    {"tables.setup", "orcs", "table-setup"}, /* taken: a refusal */
    {"tables.setup", "explode", "table-setup"}, {"tables.setup", "later", "table-setup"},
    {"tables.teardown", "orcs", NULL}, /* nobody serves it */
};
#define NQUESTIONS (sizeof(questions) / sizeof(questions[0]))

static eddy_status pack_name(msgpack_packer *pk, void *user) {
    msgpack_pack_map(pk, 1);
    pack_str(pk, "name");
    return pack_str(pk, user);
}

static void print_stats(eddy_rbus *bus, const char *label, const char *name) {
    eddy_request_stats rs;
    eddy_rbus_request_stats(bus, name, &rs);
    printf("  %-13s sent %llu, answered %llu, no responders %llu, no reply %llu, failed %llu",
           label, (unsigned long long)rs.sent, (unsigned long long)rs.answered,
           (unsigned long long)rs.no_responders, (unsigned long long)rs.no_reply,
           (unsigned long long)rs.failed);
    if (!name)
        printf(", unclaimed %llu", (unsigned long long)rs.unclaimed); /* total only */
    printf("\n");
}

/* Every question was asked (or asking failed): counters, then the buses stop, and the loop
 * ends once nothing is left on it. */
static void caller_done(app *a) {
    printf("caller: request counters\n");
    print_stats(a->caller, "total", NULL);
    print_stats(a->caller, "table-setup", "table-setup");
    print_stats(a->caller, "unnamed", "");
    fflush(stdout);
    if (!a->answers)
        a->status = 1;
    eddy_rbus_free(a->caller); /* from inside its own callback: freed when that returns */
    a->caller = NULL;
    if (a->responder)
        eddy_rbus_stop(a->responder); /* its last replies are counted before the loop ends */
}

static void ask_next(app *a);

static void on_reply(eddy_status st, eddy_event *reply, void *user) {
    app *a = user;
    const struct question *q = &questions[a->asked - 1];
    printf("caller: %s {\"name\": \"%s\"}: ", q->subject, q->name);
    if (st == EDDY_OK) {
        eddy_value *v = NULL;
        eddy_error err;
        char what[64] = "?", reason[128] = "";
        if (eddy_event_decode_value(reply, &v, &err) == EDDY_OK) {
            map_str(eddy_value_object(v), "outcome", what, sizeof(what));
            map_str(eddy_value_object(v), "reason", reason, sizeof(reason));
            eddy_value_free(v);
        }
        printf("%s%s%s\n", what, reason[0] ? ": " : "", reason);
        eddy_event_free(reply); /* the reply is ours */
    } else {
        printf("%s (%s)\n", eddy_status_name(st), eddy_status_str(st));
        /* Answers, of a kind; anything else (a transport failure) is not. */
        if (st != EDDY_ERR_RESPONDER_FAILED && st != EDDY_ERR_NO_RESPONDERS &&
            st != EDDY_ERR_NO_REPLY)
            a->answers = false;
    }
    fflush(stdout);
    if (a->answers)
        ask_next(a);
    else
        caller_done(a);
}

/* Asks the next question; its outcome arrives in on_reply, never inside this call. */
static void ask_next(app *a) {
    if (a->asked == NQUESTIONS) {
        caller_done(a);
        return;
    }
    const struct question *q = &questions[a->asked++];
    eddy_request_opts opts = {0};
    opts.deadline_ms = eddy_deadline_in(2000); /* required: eddy picks no default */
    opts.name = q->counted_as;
    eddy_error err;
    eddy_status st =
        eddy_rbus_request_value(a->caller, q->subject, "example.tables.setup.v1", pack_name,
                                (void *)q->name, &opts, on_reply, a, NULL, &err);
    if (st != EDDY_OK) { /* refused before anything was sent: on_reply does not run */
        fprintf(stderr, "caller: %s: %s\n", eddy_status_str(st), err.detail);
        a->answers = false;
        caller_done(a);
    }
}

/* ---- main ------------------------------------------------------------------------------- */

static void fail(app *a, const char *who, eddy_status st, const char *detail) {
    fprintf(stderr, "%s: %s%s%s\n", who, eddy_status_str(st), detail ? ": " : "",
            detail ? detail : "");
    a->status = 1;
    ev_break(a->loop, EVBREAK_ALL);
}

static void caller_ready(eddy_status st, const eddy_error *err, void *user) {
    app *a = user;
    if (st != EDDY_OK) {
        fail(a, "caller", st, err ? err->detail : NULL);
        return;
    }
    ask_next(a);
}

static void start_caller(app *a, const eddy_settings *s) {
    eddy_error err;
    eddy_status st = eddy_rbus_new(a->loop, s, NULL, 0, &a->caller, &err);
    /* requests need a started bus: replies arrive on it */
    if (st == EDDY_OK)
        st = eddy_rbus_start(a->caller, caller_ready, a, &err);
    if (st != EDDY_OK)
        fail(a, "caller", st, err.detail);
}

static void on_stop_signal(struct ev_loop *loop, ev_signal *w, int revents) {
    app *a = w->data;
    ev_signal_stop(loop, &a->sigint);
    ev_signal_stop(loop, &a->sigterm);
    eddy_rbus_stop(a->responder); /* the loop ends once the last replies are out */
}

typedef struct responder_start {
    app *a;
    const eddy_settings *s;
} responder_start;

static void responder_ready(eddy_status st, const eddy_error *err, void *user) {
    responder_start *rs = user;
    app *a = rs->a;
    if (st != EDDY_OK) {
        fail(a, "responder", st, err ? err->detail : NULL);
        return;
    }
    if (a->call) {
        start_caller(a, rs->s);
        return;
    }
    printf("responder: answering tables.setup (Ctrl-C to stop)\n");
    fflush(stdout);
    ev_signal_init(&a->sigint, on_stop_signal, SIGINT);
    ev_signal_init(&a->sigterm, on_stop_signal, SIGTERM);
    a->sigint.data = a->sigterm.data = a;
    ev_signal_start(a->loop, &a->sigint);
    ev_signal_start(a->loop, &a->sigterm);
}

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
    s.source = SOURCE; /* needed by responders and by eddy_rbus_request_value */
    s.log = log_to_stderr;
    s.request_names = request_names;
    s.request_name_count = 1;

    app a = {.loop = EV_DEFAULT, .call = call, .answers = true};
    responder_start rs = {&a, &s};
    if (respond) {
        eddy_subscription_spec spec;
        eddy_subscription_spec_init(&spec);
        spec.name = "table-setup";
        spec.pattern = "tables.setup";
        spec.shape = EDDY_COMPETING; /* one member of the group answers each request */
        spec.group = "ingress";
        spec.delivery = EDDY_AT_MOST_ONCE; /* a redelivered request would answer nobody */
        spec.responder = setup_responder;
        spec.user = &a;
        eddy_error err;
        eddy_status st = eddy_rbus_new(a.loop, &s, &spec, 1, &a.responder, &err);
        if (st == EDDY_OK)
            st = eddy_rbus_start(a.responder, responder_ready, &rs, &err);
        if (st != EDDY_OK) {
            fprintf(stderr, "responder: %s: %s\n", eddy_status_str(st), err.detail);
            eddy_rbus_free(a.responder);
            return 1;
        }
    } else {
        start_caller(&a, &s);
    }

    /* Until the caller is done and the responder stopped (or a signal stopped it): a stopped
     * bus leaves nothing on the loop once its last replies are sent. */
    ev_run(a.loop, 0);

    eddy_rbus_free(a.caller); /* after a failure; NULL otherwise */
    if (a.responder)
        responder_done(&a);
    return a.status;
}
