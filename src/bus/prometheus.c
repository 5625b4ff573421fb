/* SPDX-License-Identifier: BSD-3-Clause */
/* The Prometheus writer and the two documents; see prometheus.h for the writer's rules and
 * docs/metrics.md for every metric. The documents read their figures once (a subscription's
 * counters are snapshotted before the first family), then write family by family, since the
 * format keeps a family's samples together. A figure the JSON writes as null is left out
 * (lag the server cannot tell), except an oldest pending age, which is 0 when nothing is
 * pending: what an alert on the age wants to read. Invariant of the writer: buf has room for a
 * NUL after len bytes once anything was written, and `failed` makes every later call a no-op. */
#include "bus/prometheus.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/conn_state.h"
#include "eddy/version.h"
#include "error.h"
#include "util/cetext.h"

/* ---- the writer ------------------------------------------------------------------------ */

void eddy__prom_init(eddy__prom *p) { memset(p, 0, sizeof(*p)); }

static bool reserve(eddy__prom *p, size_t more) {
    if (p->failed)
        return false;
    if (p->len + more + 1 <= p->cap)
        return true;
    size_t cap = p->cap ? p->cap : 1024;
    while (cap < p->len + more + 1)
        cap *= 2;
    char *b = realloc(p->buf, cap);
    if (!b) {
        p->failed = true;
        return false;
    }
    p->buf = b;
    p->cap = cap;
    return true;
}

static void put(eddy__prom *p, const char *s, size_t n) {
    if (reserve(p, n)) {
        memcpy(p->buf + p->len, s, n);
        p->len += n;
        p->buf[p->len] = '\0';
    }
}

static void put_c(eddy__prom *p, const char *s) { put(p, s, strlen(s)); }

/* Text escaped for a label value (quote too) or a help line. */
static void put_escaped(eddy__prom *p, const char *s, bool label) {
    const unsigned char *c = (const unsigned char *)s;
    size_t n = strlen(s);
    while (n > 0 && !p->failed) {
        size_t len = 1;
        if (*c == '\\')
            put_c(p, "\\\\");
        else if (*c == '\n')
            put_c(p, "\\n");
        else if (*c == '"' && label)
            put_c(p, "\\\"");
        else if (*c < 0x80)
            put(p, (const char *)c, 1);
        else {
            uint32_t cp;
            len = eddy__utf8_decode(c, n, &cp);
            if (len == 0) {
                put_c(p, "\xef\xbf\xbd"); /* U+FFFD */
                len = 1;
            } else {
                put(p, (const char *)c, len);
            }
        }
        c += len;
        n -= len;
    }
}

static bool name_char(char c, bool first, bool colon) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
           (!first && c >= '0' && c <= '9') || (colon && c == ':');
}

bool eddy__prom_metric_name_ok(const char *name) {
    if (!name || !name[0])
        return false;
    for (size_t i = 0; name[i]; i++)
        if (!name_char(name[i], i == 0, true))
            return false;
    return true;
}

bool eddy__prom_label_name_ok(const char *name) {
    if (!name || !name[0] || strncmp(name, "__", 2) == 0)
        return false;
    for (size_t i = 0; name[i]; i++)
        if (!name_char(name[i], i == 0, false))
            return false;
    return true;
}

static void broken(eddy__prom *p) {
    p->failed = true;
    p->broken = true;
}

void eddy__prom_family(eddy__prom *p, const char *name, eddy__prom_type type, const char *help) {
    p->name = name;
    p->help = help;
    p->type = type;
    p->header_written = false;
    size_t n = name ? strlen(name) : 0;
    bool total = n > 6 && strcmp(name + n - 6, "_total") == 0;
    if (!eddy__prom_metric_name_ok(name) || !help || total != (type == EDDY__PROM_COUNTER))
        broken(p);
}

/* "name{a="x",b="y"} " (the header first, for a family's first sample). */
static void sample_head(eddy__prom *p, const eddy__prom_label *labels, size_t n) {
    if (p->failed)
        return;
    if (!p->name) {
        broken(p); /* no family begun */
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (!eddy__prom_label_name_ok(labels[i].name)) {
            broken(p);
            return;
        }
        for (size_t k = 0; k < i; k++)
            if (strcmp(labels[k].name, labels[i].name) == 0) {
                broken(p);
                return;
            }
    }
    if (!p->header_written) {
        put_c(p, "# HELP ");
        put_c(p, p->name);
        put_c(p, " ");
        put_escaped(p, p->help, false);
        put_c(p, "\n# TYPE ");
        put_c(p, p->name);
        put_c(p, p->type == EDDY__PROM_COUNTER ? " counter\n" : " gauge\n");
        p->header_written = true;
    }
    put_c(p, p->name);
    for (size_t i = 0; i < n; i++) {
        put_c(p, i == 0 ? "{" : ",");
        put_c(p, labels[i].name);
        put_c(p, "=\"");
        put_escaped(p, labels[i].value ? labels[i].value : "", true);
        put_c(p, "\"");
    }
    put_c(p, n ? "} " : " ");
}

void eddy__prom_u64(eddy__prom *p, const eddy__prom_label *labels, size_t n, uint64_t v) {
    sample_head(p, labels, n);
    char num[32];
    snprintf(num, sizeof(num), "%" PRIu64 "\n", v);
    put_c(p, num);
}

void eddy__prom_ms(eddy__prom *p, const eddy__prom_label *labels, size_t n, long long ms) {
    sample_head(p, labels, n);
    unsigned long long a = ms < 0 ? 0ULL - (unsigned long long)ms : (unsigned long long)ms;
    char num[48];
    int len = snprintf(num, sizeof(num), "%s%llu", ms < 0 ? "-" : "", a / 1000);
    if (a % 1000) { /* the fraction without its trailing zeros: 1.5, 0.25, 2.001 */
        len += snprintf(num + len, sizeof(num) - (size_t)len, ".%03llu", a % 1000);
        while (num[len - 1] == '0')
            num[--len] = '\0';
    }
    snprintf(num + len, sizeof(num) - (size_t)len, "\n");
    put_c(p, num);
}

char *eddy__prom_finish(eddy__prom *p) {
    char *doc = p->failed ? NULL : p->buf;
    if (p->failed)
        free(p->buf);
    else if (!doc)
        doc = calloc(1, 1); /* nothing written: an empty document */
    eddy__prom_init(p);
    return doc;
}

/* A gauge family of one sample. */
static void gauge1(eddy__prom *p, const char *name, const char *help, const eddy__prom_label *l,
                   size_t n, uint64_t v) {
    eddy__prom_family(p, name, EDDY__PROM_GAUGE, help);
    eddy__prom_u64(p, l, n, v);
}

static char *finish(eddy__prom *p, eddy_error *err) {
    bool was_broken = p->broken;
    char *doc = eddy__prom_finish(p);
    if (!doc && was_broken) /* a bug of this file: the unit tests write every document */
        eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "prometheus: a name breaks the format's rules");
    else if (!doc)
        eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    return doc;
}

/* ---- a bus ----------------------------------------------------------------------------- */

#define C(field) offsetof(eddy_consumer_stats, field)

/* A subscription's counters: the fields of eddy_consumer_stats, in the JSON document's order;
 * responder_only ones are written for responders only, as there. */
static const struct sub_counter {
    const char *name, *help;
    size_t offset;
    bool responder_only;
} sub_counters[] = {
    {"eddy_subscription_delivered_total", "Handler or responder calls.", C(delivered), false},
    {"eddy_subscription_handled_total", "Handler calls that succeeded.", C(handled), false},
    {"eddy_subscription_failed_total", "Handler calls that failed (hand-backs are held).",
     C(failed), false},
    {"eddy_subscription_redelivered_total", "Handler calls for an attempt after the first.",
     C(redelivered), false},
    {"eddy_subscription_dead_lettered_total", "Entries moved to the dead-letter stream.",
     C(dead_lettered), false},
    {"eddy_subscription_malformed_total", "Entries that could not be decoded (dead-lettered).",
     C(malformed), false},
    {"eddy_subscription_held_total", "At-least-once handler calls that handed the message back.",
     C(held), false},
    {"eddy_subscription_recreated_total", "Groups created again after the server lost them.",
     C(recreated), false},
    {"eddy_subscription_lost_writes_total",
     "Entries this subscription read that the server lost (a lower bound).", C(lost_writes), false},
    {"eddy_subscription_replied_total", "Replies stored in the requester's reply stream.",
     C(replied), true},
    {"eddy_subscription_refused_total", "Replies the backend refused.", C(refused), true},
    {"eddy_subscription_unaddressed_total", "Replies to a plain publish, discarded.",
     C(unaddressed), true},
    {"eddy_subscription_responder_failed_total",
     "Responder calls that failed (a failure reply was sent).", C(responder_failed), true},
    {"eddy_subscription_expired_total", "Requests dropped unrun: their deadline had passed.",
     C(expired), true},
    {"eddy_subscription_overlapping_total",
     "Live responders of another group whose patterns overlap this one's.", C(overlapping), true},
};

#undef C

static uint64_t field_at(const eddy_consumer_stats *c, size_t offset) {
    uint64_t v;
    memcpy(&v, (const char *)c + offset, sizeof(v));
    return v;
}

enum { B_SUBJECTS, B_PENDING, B_LAG, B_OLDEST, B_DEAD_LETTERS };

static const struct broker_gauge {
    const char *name, *help;
    int field;
} broker_gauges[] = {
    {"eddy_subscription_subjects", "Subjects the pattern matches that have the group.", B_SUBJECTS},
    {"eddy_subscription_pending", "Entries delivered to the group and not acknowledged yet.",
     B_PENDING},
    {"eddy_subscription_lag",
     "Entries not delivered to the group yet (absent when the server cannot tell).", B_LAG},
    {"eddy_subscription_oldest_pending_age_seconds",
     "Age of the group's oldest pending entry (0 when none is pending).", B_OLDEST},
    {"eddy_subscription_dead_letters", "Entries in the group's dead-letter stream.",
     B_DEAD_LETTERS},
};

static void broker_sample(eddy__prom *p, const eddy__prom_label *l, size_t n,
                          const eddy__sub_broker *b, int field) {
    switch (field) {
    case B_SUBJECTS:
        eddy__prom_u64(p, l, n, b->subjects);
        break;
    case B_PENDING:
        eddy__prom_u64(p, l, n, b->pending);
        break;
    case B_LAG:
        if (b->lag >= 0)
            eddy__prom_u64(p, l, n, (uint64_t)b->lag);
        break;
    case B_OLDEST:
        eddy__prom_ms(p, l, n, b->oldest_pending_ms < 0 ? 0 : b->oldest_pending_ms);
        break;
    default:
        eddy__prom_u64(p, l, n, b->dead_letters);
        break;
    }
}

/* The labels of a subscription: namespace, consumer, subscription, group (then the info's). */
static size_t sub_labels(const eddy__bus_stats_in *in, const eddy__sub *sub, eddy__prom_label *l,
                         bool info) {
    l[0] = (eddy__prom_label){"namespace", in->s->ns};
    l[1] = (eddy__prom_label){"consumer", in->s->instance};
    l[2] = (eddy__prom_label){"subscription", sub->name};
    l[3] = (eddy__prom_label){"group", sub->group};
    if (!info)
        return 4;
    l[4] = (eddy__prom_label){"pattern", sub->pattern};
    l[5] = (eddy__prom_label){"shape", sub->shape == EDDY_FANOUT ? "fanout" : "competing"};
    l[6] = (eddy__prom_label){"delivery", sub->delivery == EDDY_AT_LEAST_ONCE ? "at_least_once"
                                                                              : "at_most_once"};
    l[7] = (eddy__prom_label){"kind", sub->responder ? "responder" : "handler"};
    return 8;
}

static void subscriptions(eddy__prom *p, const eddy__bus_stats_in *in, const eddy_consumer_stats *c,
                          const eddy__sub_broker *b) {
    eddy__prom_label l[8];
    eddy__prom_family(
        p, "eddy_subscription_info", EDDY__PROM_GAUGE,
        "A subscription of the bus: its pattern, shape, delivery and kind; always 1.");
    for (size_t i = 0; i < in->nsubs; i++)
        eddy__prom_u64(p, l, sub_labels(in, in->subs[i], l, true), 1);
    eddy__prom_family(p, "eddy_subscription_paused", EDDY__PROM_GAUGE,
                      "1 while the subscription is paused.");
    for (size_t i = 0; i < in->nsubs; i++)
        eddy__prom_u64(p, l, sub_labels(in, in->subs[i], l, false),
                       atomic_load(&in->subs[i]->paused));
    for (size_t k = 0; k < sizeof(sub_counters) / sizeof(*sub_counters); k++) {
        eddy__prom_family(p, sub_counters[k].name, EDDY__PROM_COUNTER, sub_counters[k].help);
        for (size_t i = 0; i < in->nsubs; i++)
            if (!sub_counters[k].responder_only || in->subs[i]->responder)
                eddy__prom_u64(p, l, sub_labels(in, in->subs[i], l, false),
                               field_at(&c[i], sub_counters[k].offset));
    }
    if (!in->scan)
        return;
    for (size_t k = 0; k < sizeof(broker_gauges) / sizeof(*broker_gauges); k++) {
        eddy__prom_family(p, broker_gauges[k].name, EDDY__PROM_GAUGE, broker_gauges[k].help);
        for (size_t i = 0; i < in->nsubs; i++)
            broker_sample(p, l, sub_labels(in, in->subs[i], l, false), &b[i],
                          broker_gauges[k].field);
    }
}

static void connection(eddy__prom *p, const eddy__bus_stats_in *in, const eddy__prom_label *bus) {
    static const eddy_connection_state states[] = {
        EDDY_CONN_CONNECTING,  EDDY_CONN_CONNECTED,   EDDY_CONN_DISCONNECTED,
        EDDY_CONN_RECONNECTED, EDDY_CONN_AUTH_FAILED, EDDY_CONN_NOT_REDIS,
    };
    eddy_connection_stats c = {0};
    if (in->s->conn_state)
        eddy__conn_stats(in->s->conn_state, &c);
    eddy__prom_label l[3] = {bus[0], bus[1], {"state", NULL}};
    eddy__prom_family(
        p, "eddy_connection_state", EDDY__PROM_GAUGE,
        "The state of the bus's connections: 1 for the current one, 0 for the others.");
    for (size_t i = 0; i < sizeof(states) / sizeof(*states); i++) {
        l[2].value = eddy__conn_state_name(states[i]);
        eddy__prom_u64(p, l, 3, c.state == states[i]);
    }
    eddy__prom_family(p, "eddy_connection_connects_total", EDDY__PROM_COUNTER,
                      "Connections that came up (handshake done).");
    eddy__prom_u64(p, bus, 2, c.connects);
    eddy__prom_family(p, "eddy_connection_connect_failures_total", EDDY__PROM_COUNTER,
                      "Connection attempts that failed (connect, handshake, refused).");
    eddy__prom_u64(p, bus, 2, c.connect_failures);
    eddy__prom_family(p, "eddy_connection_disconnects_total", EDDY__PROM_COUNTER,
                      "Connections lost after they came up.");
    eddy__prom_u64(p, bus, 2, c.disconnects);
    eddy__prom_family(p, "eddy_connection_disconnected_seconds_total", EDDY__PROM_COUNTER,
                      "Time spent neither connected nor reconnected, once something was learnt.");
    eddy__prom_ms(p, bus, 2, (long long)c.disconnected_ms);
    eddy__prom_family(p, "eddy_connection_lost_writes_total", EDDY__PROM_COUNTER,
                      "Acknowledged publishes the server no longer had after a reconnect.");
    eddy__prom_u64(p, bus, 2, c.lost_writes);
}

#define R(field) offsetof(eddy_request_stats, field)

static const struct request_counter {
    const char *name, *help;
    size_t offset;
} request_counters[] = {
    {"eddy_requests_sent_total", "Requests sent.", R(sent)},
    {"eddy_requests_answered_total", "Requests answered by a reply.", R(answered)},
    {"eddy_requests_no_responders_total", "Requests that found no responder.", R(no_responders)},
    {"eddy_requests_no_reply_total", "Requests without a reply by their deadline.", R(no_reply)},
    {"eddy_requests_failed_total", "Requests whose responder failed.", R(failed)},
};

#undef R

/* rows: the unnamed conversations' ("" names them), then each of the settings' names. */
static void requests(eddy__prom *p, const eddy__bus_stats_in *in, const eddy__prom_label *bus,
                     const eddy_request_stats *rows, const eddy_request_stats *total) {
    const eddy__settings *s = in->s;
    eddy__prom_label l[3] = {bus[0], bus[1], {"request", ""}};
    for (size_t k = 0; k < sizeof(request_counters) / sizeof(*request_counters); k++) {
        eddy__prom_family(p, request_counters[k].name, EDDY__PROM_COUNTER,
                          request_counters[k].help);
        for (size_t i = 0; i <= s->nrequest_names; i++) {
            uint64_t v;
            memcpy(&v, (const char *)&rows[i] + request_counters[k].offset, sizeof(v));
            l[2].value = i == 0 ? "" : s->request_names[i - 1];
            eddy__prom_u64(p, l, 3, v);
        }
    }
    eddy__prom_family(p, "eddy_requests_unclaimed_total", EDDY__PROM_COUNTER,
                      "Replies that came after their request ended, or from a second group.");
    eddy__prom_u64(p, bus, 2, total->unclaimed);
}

static void retention(eddy__prom *p, const eddy_retention_stats *r, const eddy__prom_label *bus) {
    eddy__prom_family(p, "eddy_retention_passes_total", EDDY__PROM_COUNTER,
                      "Retention passes run to their end as the namespace's holder.");
    eddy__prom_u64(p, bus, 2, r->passes);
    eddy__prom_family(p, "eddy_retention_trimmed_total", EDDY__PROM_COUNTER,
                      "Entries removed from subject streams.");
    eddy__prom_u64(p, bus, 2, r->trimmed);
    eddy__prom_family(
        p, "eddy_retention_dropped_total", EDDY__PROM_COUNTER,
        "Of those, entries a group had not read and acknowledged (summed over groups).");
    eddy__prom_u64(p, bus, 2, r->dropped);
    eddy__prom_family(p, "eddy_retention_groups_removed_total", EDDY__PROM_COUNTER,
                      "Fanout groups of dead processes or stopped buses removed.");
    eddy__prom_u64(p, bus, 2, r->groups_removed);
    eddy__prom_family(p, "eddy_retention_consumers_removed_total", EDDY__PROM_COUNTER,
                      "Idle consumers with nothing pending removed.");
    eddy__prom_u64(p, bus, 2, r->consumers_removed);
}

char *eddy__bus_stats_prometheus(const eddy__bus_stats_in *in, eddy_error *err) {
    const eddy__settings *s = in->s;
    size_t n = in->nsubs;
    eddy_consumer_stats *c = calloc(n ? n : 1, sizeof(*c));
    eddy__sub_broker *b = calloc(n ? n : 1, sizeof(*b));
    eddy_request_stats *rows = calloc(1 + s->nrequest_names, sizeof(*rows));
    if (!c || !b || !rows) {
        free(c);
        free(b);
        free(rows);
        eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        eddy__stats_snapshot(&in->subs[i]->stats, &c[i]);
        if (in->scan)
            eddy__bus_stats_broker(in->subs[i], in->scan, &b[i]);
    }
    eddy_request_stats total;
    eddy__requests_stats(in->requests, NULL, &total);
    eddy__requests_stats(in->requests, "", &rows[0]);
    for (size_t i = 0; i < s->nrequest_names; i++)
        eddy__requests_stats(in->requests, s->request_names[i], &rows[1 + i]);

    eddy__prom p;
    eddy__prom_init(&p);
    eddy__prom_label bus[3] = {
        {"namespace", s->ns}, {"consumer", s->instance}, {"version", EDDY_VERSION_STRING}};
    gauge1(&p, "eddy_bus_info", "The bus: its namespace, consumer name and eddy's version; 1.", bus,
           3, 1);
    gauge1(&p, "eddy_bus_started", "1 while the bus is started, 0 otherwise.", bus, 2, in->started);
    gauge1(&p, "eddy_bus_broker_up",
           "1 when the broker's figures (eddy_subscription_pending, ...) were read, 0 when not.",
           bus, 2, in->scan != NULL);
    connection(&p, in, bus);
    subscriptions(&p, in, c, b);
    requests(&p, in, bus, rows, &total);
    retention(&p, &in->retention, bus);
    free(c);
    free(b);
    free(rows);
    return finish(&p, err);
}

/* ---- a namespace ----------------------------------------------------------------------- */

enum { G_CONSUMERS, G_PENDING, G_LAG, G_OLDEST };

static void figure(eddy__prom *p, const eddy__prom_label *l, size_t n, uint64_t consumers,
                   uint64_t pending, long long lag, long long oldest, int field) {
    if (field == G_CONSUMERS)
        eddy__prom_u64(p, l, n, consumers);
    else if (field == G_PENDING)
        eddy__prom_u64(p, l, n, pending);
    else if (field == G_LAG && lag >= 0)
        eddy__prom_u64(p, l, n, (uint64_t)lag);
    else if (field == G_OLDEST)
        eddy__prom_ms(p, l, n, oldest < 0 ? 0 : oldest);
}

/* The figures of a group on one subject, and summed over the subjects (eddy__group_total). */
static const struct group_gauge {
    const char *subject_name, *subject_help, *total_name, *total_help;
    int field;
} group_gauges[] = {
    {"eddy_subject_group_consumers", "Consumers in the group on the subject's stream.",
     "eddy_group_consumers", "Consumers in the group, summed over its subjects.", G_CONSUMERS},
    {"eddy_subject_group_pending", "Entries delivered to the group and not acknowledged yet.",
     "eddy_group_pending",
     "Entries delivered to the group and not acknowledged, over its subjects.", G_PENDING},
    {"eddy_subject_group_lag",
     "Entries not delivered to the group yet (absent when the server cannot tell).",
     "eddy_group_lag",
     "Entries not delivered to the group yet, over its subjects (absent when one is unknown).",
     G_LAG},
    {"eddy_subject_group_oldest_pending_age_seconds",
     "Age of the group's oldest pending entry by the server's clock (0 when none is pending).",
     "eddy_group_oldest_pending_age_seconds",
     "Age of the group's oldest pending entry on any of its subjects (0 when none is pending).",
     G_OLDEST},
};

/* One registration, by kind and group (its figures are counted per pair). */
typedef struct reg_row {
    bool responder;
    char *group;
} reg_row;

typedef struct reg_list {
    reg_row *rows;
    size_t n, cap;
} reg_list;

static eddy_status collect(const eddy_registration *reg, void *user) {
    reg_list *l = user;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        reg_row *rows = realloc(l->rows, cap * sizeof(*rows));
        if (!rows)
            return EDDY_ERR_NOMEM;
        l->rows = rows;
        l->cap = cap;
    }
    if (!(l->rows[l->n].group = strdup(reg->group)))
        return EDDY_ERR_NOMEM;
    l->rows[l->n++].responder = reg->responder;
    return EDDY_OK;
}

static int cmp_reg(const void *a, const void *b) {
    const reg_row *x = a, *y = b;
    int c = strcmp(x->group, y->group);
    return c ? c : (int)x->responder - (int)y->responder;
}

static void registry_rows(eddy__prom *p, const char *ns, reg_list *r) {
    if (r->n > 1)
        qsort(r->rows, r->n, sizeof(*r->rows), cmp_reg);
    eddy__prom_family(p, "eddy_registry_subscriptions", EDDY__PROM_GAUGE,
                      "Live subscriptions of the namespace's registry, by group and kind.");
    for (size_t i = 0; i < r->n;) {
        size_t k = i;
        while (k < r->n && cmp_reg(&r->rows[i], &r->rows[k]) == 0)
            k++;
        eddy__prom_label l[3] = {{"namespace", ns},
                                 {"group", r->rows[i].group},
                                 {"kind", r->rows[i].responder ? "responder" : "handler"}};
        eddy__prom_u64(p, l, 3, k - i);
        i = k;
    }
}

char *eddy__admin_stats_prometheus(const char *ns, const eddy__admin_scan *s,
                                   const redisReply *registry, eddy_error *err) {
    reg_list reg = {0};
    eddy_status st = eddy__admin_registry_each(registry, collect, &reg, err);
    size_t nt = 0;
    eddy__group_total *t = st == EDDY_OK ? eddy__admin_scan_totals(s, &nt) : NULL;
    char *doc = NULL;
    if (st == EDDY_ERR_NOMEM || (st == EDDY_OK && !t)) {
        eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    } else if (st == EDDY_OK) {
        size_t n;
        const eddy_subject_info *si = eddy__admin_scan_result(s, &n);
        eddy__prom p;
        eddy__prom_init(&p);
        eddy__prom_label l[3] = {{"namespace", ns}, {"subject", NULL}, {"group", NULL}};
        gauge1(&p, "eddy_subjects", "Subjects of the namespace (those the pattern matches).", l, 1,
               n);
        eddy__prom_family(&p, "eddy_subject_length", EDDY__PROM_GAUGE,
                          "Entries in the subject's stream.");
        for (size_t i = 0; i < n; i++) {
            l[1].value = si[i].subject;
            eddy__prom_u64(&p, l, 2, si[i].length);
        }
        for (size_t f = 0; f < sizeof(group_gauges) / sizeof(*group_gauges); f++) {
            eddy__prom_family(&p, group_gauges[f].subject_name, EDDY__PROM_GAUGE,
                              group_gauges[f].subject_help);
            for (size_t i = 0; i < n; i++)
                for (size_t k = 0; k < si[i].ngroups; k++) {
                    const eddy_group_info *g = &si[i].groups[k];
                    l[1].value = si[i].subject;
                    l[2].value = g->group;
                    figure(&p, l, 3, g->consumers, g->pending, g->lag, g->oldest_pending_ms,
                           group_gauges[f].field);
                }
        }
        eddy__prom_label gl[2] = {{"namespace", ns}, {"group", NULL}};
        eddy__prom_family(&p, "eddy_group_subjects", EDDY__PROM_GAUGE,
                          "Subjects whose stream has the group.");
        for (size_t i = 0; i < nt; i++) {
            gl[1].value = t[i].group;
            eddy__prom_u64(&p, gl, 2, t[i].subjects);
        }
        for (size_t f = 0; f < sizeof(group_gauges) / sizeof(*group_gauges); f++) {
            eddy__prom_family(&p, group_gauges[f].total_name, EDDY__PROM_GAUGE,
                              group_gauges[f].total_help);
            for (size_t i = 0; i < nt; i++) {
                gl[1].value = t[i].group;
                figure(&p, gl, 2, t[i].consumers, t[i].pending, t[i].lag, t[i].oldest_pending_ms,
                       group_gauges[f].field);
            }
        }
        eddy__prom_family(&p, "eddy_group_dead_letters", EDDY__PROM_GAUGE,
                          "Entries in the group's dead-letter stream.");
        for (size_t i = 0; i < nt; i++) {
            gl[1].value = t[i].group;
            eddy__prom_u64(&p, gl, 2, t[i].dead_letters);
        }
        registry_rows(&p, ns, &reg);
        doc = finish(&p, err);
    }
    for (size_t i = 0; i < reg.n; i++)
        free(reg.rows[i].group);
    free(reg.rows);
    free(t);
    return doc;
}
