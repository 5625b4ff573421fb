/* SPDX-License-Identifier: BSD-3-Clause */
/* The bus's stats document; see bus_stats.h and eddy_bus_stats_json in blocking.h for its shape.
 * Each subscription's "broker" part sums, over the subjects its pattern matches, what the scan
 * found for its group: the figures an operator compares with the counters (what is waiting,
 * what is stuck). */
#include "bus/bus_stats.h"

#include <string.h>

#include "config/conn_state.h"
#include "eddy/version.h"
#include "error.h"
#include "events/subject.h"
#include "util/json.h"

static void request_row(eddy__json *j, const char *key, const eddy_request_stats *r) {
    eddy__json_object(j, key);
    eddy__json_u64(j, "sent", r->sent);
    eddy__json_u64(j, "answered", r->answered);
    eddy__json_u64(j, "no_responders", r->no_responders);
    eddy__json_u64(j, "no_reply", r->no_reply);
    eddy__json_u64(j, "failed", r->failed);
    eddy__json_u64(j, "unclaimed", r->unclaimed);
    eddy__json_end(j);
}

static void counters(eddy__json *j, const eddy__sub *sub) {
    eddy_consumer_stats c;
    eddy__stats_snapshot(&sub->stats, &c);
    eddy__json_object(j, "counters");
    eddy__json_u64(j, "delivered", c.delivered);
    eddy__json_u64(j, "handled", c.handled);
    eddy__json_u64(j, "failed", c.failed);
    eddy__json_u64(j, "redelivered", c.redelivered);
    eddy__json_u64(j, "dead_lettered", c.dead_lettered);
    eddy__json_u64(j, "malformed", c.malformed);
    eddy__json_u64(j, "held", c.held);
    eddy__json_u64(j, "recreated", c.recreated);
    eddy__json_u64(j, "lost_writes", c.lost_writes);
    if (sub->responder) {
        eddy__json_u64(j, "replied", c.replied);
        eddy__json_u64(j, "refused", c.refused);
        eddy__json_u64(j, "unaddressed", c.unaddressed);
        eddy__json_u64(j, "responder_failed", c.responder_failed);
        eddy__json_u64(j, "expired", c.expired);
        eddy__json_u64(j, "overlapping", c.overlapping);
    }
    eddy__json_end(j);
}

const char *eddy__conn_state_name(eddy_connection_state st) {
    switch (st) {
    case EDDY_CONN_CONNECTED:
        return "connected";
    case EDDY_CONN_DISCONNECTED:
        return "disconnected";
    case EDDY_CONN_RECONNECTED:
        return "reconnected";
    case EDDY_CONN_AUTH_FAILED:
        return "auth_failed";
    case EDDY_CONN_NOT_REDIS:
        return "not_redis";
    case EDDY_CONN_CONNECTING:
    default:
        return "connecting";
    }
}

/* The bus's connections, as eddy_bus_connection_stats reports them. */
static void connection(eddy__json *j, const eddy__settings *s) {
    eddy_connection_stats c = {0};
    if (s->conn_state)
        eddy__conn_stats(s->conn_state, &c);
    eddy__json_object(j, "connection");
    eddy__json_str(j, "state", eddy__conn_state_name(c.state));
    eddy__json_u64(j, "connects", c.connects);
    eddy__json_u64(j, "connect_failures", c.connect_failures);
    eddy__json_u64(j, "disconnects", c.disconnects);
    eddy__json_u64(j, "disconnected_ms", c.disconnected_ms);
    eddy__json_u64(j, "lost_writes", c.lost_writes);
    eddy__json_end(j);
}

void eddy__bus_stats_broker(const eddy__sub *sub, const eddy__admin_scan *scan,
                            eddy__sub_broker *out) {
    size_t n;
    const eddy_subject_info *subjects = eddy__admin_scan_result(scan, &n);
    *out = (eddy__sub_broker){.oldest_pending_ms = -1};
    for (size_t i = 0; i < n; i++) {
        if (!eddy__pattern_match(sub->pattern, subjects[i].subject))
            continue;
        for (size_t k = 0; k < subjects[i].ngroups; k++) {
            const eddy_group_info *g = &subjects[i].groups[k];
            if (strcmp(g->group, sub->group) != 0)
                continue;
            out->subjects++;
            out->pending += g->pending;
            out->lag = out->lag < 0 || g->lag < 0 ? -1 : out->lag + g->lag;
            if (g->oldest_pending_ms > out->oldest_pending_ms)
                out->oldest_pending_ms = g->oldest_pending_ms;
            out->dead_letters = g->dead_letters;
        }
    }
}

static void broker(eddy__json *j, const eddy__sub *sub, const eddy__admin_scan *scan) {
    eddy__sub_broker b;
    eddy__bus_stats_broker(sub, scan, &b);
    eddy__json_object(j, "broker");
    eddy__json_u64(j, "subjects", b.subjects);
    eddy__json_u64(j, "pending", b.pending);
    if (b.lag < 0)
        eddy__json_null(j, "lag");
    else
        eddy__json_i64(j, "lag", b.lag);
    if (b.oldest_pending_ms < 0)
        eddy__json_null(j, "oldest_pending_ms");
    else
        eddy__json_i64(j, "oldest_pending_ms", b.oldest_pending_ms);
    eddy__json_u64(j, "dead_letters", b.dead_letters);
    eddy__json_end(j);
}

char *eddy__bus_stats_json(const eddy__bus_stats_in *in, eddy_error *err) {
    const eddy__settings *s = in->s;
    eddy__json j;
    eddy__json_init(&j);
    eddy__json_object(&j, NULL);
    eddy__json_str(&j, "version", EDDY_VERSION_STRING);
    eddy__json_str(&j, "ns", s->ns);
    eddy__json_str(&j, "instance", s->instance);
    eddy__json_i64(&j, "time_ms", eddy_now_ms());
    eddy__json_bool(&j, "started", in->started);
    connection(&j, s);
    eddy__json_array(&j, "subscriptions");
    for (size_t i = 0; i < in->nsubs; i++) {
        const eddy__sub *sub = in->subs[i];
        eddy__json_object(&j, NULL);
        eddy__json_str(&j, "name", sub->name);
        eddy__json_str(&j, "pattern", sub->pattern);
        eddy__json_str(&j, "group", sub->group);
        eddy__json_str(&j, "shape", sub->shape == EDDY_FANOUT ? "fanout" : "competing");
        eddy__json_str(&j, "delivery",
                       sub->delivery == EDDY_AT_LEAST_ONCE ? "at_least_once" : "at_most_once");
        eddy__json_str(&j, "kind", sub->twin ? "gather" : sub->responder ? "responder" : "handler");
        eddy__json_bool(&j, "paused", atomic_load(&sub->paused));
        counters(&j, sub);
        if (in->scan)
            broker(&j, sub, in->scan);
        eddy__json_end(&j);
    }
    eddy__json_end(&j);
    eddy__json_object(&j, "requests");
    eddy_request_stats r;
    eddy__requests_stats(in->requests, NULL, &r);
    request_row(&j, "total", &r);
    eddy__requests_stats(in->requests, "", &r);
    request_row(&j, "unnamed", &r);
    eddy__json_object(&j, "named");
    for (size_t i = 0; i < s->nrequest_names; i++) {
        eddy__requests_stats(in->requests, s->request_names[i], &r);
        request_row(&j, s->request_names[i], &r);
    }
    eddy__json_end(&j);
    eddy__json_end(&j);
    eddy__json_object(&j, "retention");
    eddy__json_u64(&j, "passes", in->retention.passes);
    eddy__json_u64(&j, "trimmed", in->retention.trimmed);
    eddy__json_u64(&j, "dropped", in->retention.dropped);
    eddy__json_u64(&j, "groups_removed", in->retention.groups_removed);
    eddy__json_u64(&j, "consumers_removed", in->retention.consumers_removed);
    eddy__json_end(&j);
    if (!in->scan)
        eddy__json_str(&j, "broker_error", in->scan_err ? in->scan_err->detail : "not read");
    eddy__json_end(&j);
    char *doc = eddy__json_finish(&j);
    if (!doc)
        eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    return doc;
}

eddy_status eddy__bus_retention_stats(eddy__retention_counters *c, eddy_retention_stats *out) {
    if (!out)
        return EDDY_ERR_INVALID_ARGUMENT;
    eddy__retention_counters_snapshot(c, out);
    return EDDY_OK;
}

eddy_status eddy__bus_connection_stats(eddy__conn_state *cs, eddy_connection_stats *out) {
    if (!out)
        return EDDY_ERR_INVALID_ARGUMENT;
    eddy__conn_stats(cs, out);
    return EDDY_OK;
}

eddy_status eddy__bus_request_stats(eddy__requests *r, const char *name, eddy_request_stats *out) {
    if (!out)
        return EDDY_ERR_INVALID_ARGUMENT;
    eddy__requests_stats(r, name, out);
    return EDDY_OK;
}
