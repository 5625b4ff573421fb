/* SPDX-License-Identifier: BSD-3-Clause */
/* The gathering rules and the reply list; see gather.h. */
#include "bus/gather.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/options.h"

typedef struct item {
    eddy_status st;
    eddy_event *ev;
} item;

struct eddy_replies {
    item *v;
    size_t n, cap;
    size_t failed;
};

/* ---- the options' table ----------------------------------------------------------------- */

#define ROW(f, type, def, min, max, unit, ddoc, doc)                                               \
    {                                                                                              \
#f, EDDY__OPT_##type, offsetof(eddy_gather_opts, f), sizeof(((eddy_gather_opts *)0)->f),   \
            EDDY__OPT_NO_COPY, NULL, def, min, max, 0, unit, ddoc, NULL, NULL, doc                 \
    }
static const eddy__opt gather_rows[] = {
    ROW(deadline_ms, LLONG, 0, 0, LLONG_MAX, "ms", "none (required)",
        "Absolute deadline (eddy_now_ms clock): replies are gathered until then"),
    ROW(name, STRING, 0, 0, 0, "", "none", "Conversation name for the request counters"),
    ROW(cancel, POINTER, 0, 0, 0, "", "NULL", "Cancellation token (eddy_cancel)"),
    ROW(max_replies, SIZE, 0, 0, SIZE_MAX, "replies", "0 (until the deadline)",
        "Stop once this many replies came (failure replies included)"),
    ROW(stop_on_failure, BOOL, 0, 0, 1, "", "false", "Stop at the first failure reply"),
};
#undef ROW

const eddy__opt_table eddy__gather_opts_table = {
    .prefix = "gather_opts",
    .type_name = "eddy_gather_opts",
    .init_name = "eddy_gather_opts_init",
    .rows = gather_rows,
    .nrows = sizeof(gather_rows) / sizeof(gather_rows[0]),
    .size = sizeof(eddy_gather_opts),
    /* New in 0.4: a struct zeroed without _init has every field of its first release. */
    .size_0_3 = offsetof(eddy_gather_opts, stop_on_failure) + sizeof(bool),
    .doc = "A scatter-gather request (eddy_bus_request_all, eddy_rbus_request_all): "
           "include/eddy/bus.h.",
};

void eddy_gather_opts_init_sized(eddy_gather_opts *o, size_t size) {
    if (o)
        eddy__opts_init(&eddy__gather_opts_table, o, size);
}

/* ---- the list ----------------------------------------------------------------------------- */

size_t eddy_replies_count(const eddy_replies *r) { return r ? r->n : 0; }

size_t eddy_replies_failed(const eddy_replies *r) { return r ? r->failed : 0; }

eddy_status eddy_replies_result(const eddy_replies *r, size_t i) {
    return r && i < r->n ? r->v[i].st : EDDY_ERR_INVALID_ARGUMENT;
}

const eddy_event *eddy_replies_event(const eddy_replies *r, size_t i) {
    return r && i < r->n ? r->v[i].ev : NULL;
}

void eddy_replies_free(eddy_replies *r) {
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++)
        eddy_event_free(r->v[i].ev);
    free(r->v);
    free(r);
}

/* ---- the rules --------------------------------------------------------------------------- */

const eddy_request_opts *eddy__gather_request_opts(const eddy_gather_opts *opts,
                                                   eddy_request_opts *out) {
    memset(out, 0, sizeof(*out));
    if (!opts)
        return NULL;
    eddy_gather_opts full;
    eddy__opts_widen(&eddy__gather_opts_table, &full, opts);
    out->deadline_ms = full.deadline_ms;
    out->name = full.name;
    out->cancel = full.cancel;
    return out;
}

eddy_status eddy__gather_init(eddy__gather *g, const eddy_gather_opts *opts, bool each,
                              eddy_request_opts *ropts, bool *has_opts) {
    memset(g, 0, sizeof(*g));
    *has_opts = eddy__gather_request_opts(opts, ropts) != NULL;
    if (opts) {
        eddy_gather_opts full;
        eddy__opts_widen(&eddy__gather_opts_table, &full, opts);
        g->max = full.max_replies;
        g->stop_on_failure = full.stop_on_failure;
    }
    g->each = each;
    g->list = calloc(1, sizeof(*g->list));
    return g->list ? EDDY_OK : EDDY_ERR_NOMEM;
}

void eddy__gather_reset(eddy__gather *g) {
    eddy_replies_free(g->list);
    g->list = NULL;
}

eddy_replies *eddy__gather_take(eddy__gather *g) {
    eddy_replies *l = g->list;
    g->list = NULL;
    return l;
}

static eddy_status end(eddy__gather *g, eddy_status outcome) {
    g->ended = true;
    return g->outcome = outcome;
}

bool eddy__gather_add(eddy__gather *g, eddy_status st, eddy_event **replyp) {
    eddy_event *reply = *replyp;
    eddy_replies *l = g->list;
    g->came++;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 4;
        item *v = realloc(l->v, cap * sizeof(*v));
        if (v) {
            l->v = v;
            l->cap = cap;
        }
    }
    if (l->n < l->cap) {
        l->v[l->n++] = (item){st, reply};
        if (st != EDDY_OK)
            l->failed++;
    } else {
        eddy_event_free(reply); /* out of memory: dropped, but it still counts as come */
        *replyp = NULL;
        g->dropped++;
    }
    if (st != EDDY_OK && g->stop_on_failure) {
        end(g, EDDY_ERR_RESPONDER_FAILED);
        return true;
    }
    if (g->max > 0 && g->came >= g->max) {
        end(g, EDDY_OK);
        return true;
    }
    return false;
}

eddy_status eddy__gather_finish(eddy__gather *g, eddy__gather_end how) {
    if (g->ended)
        return g->outcome;
    if (how == EDDY__GATHER_DEADLINE && g->max == 0 && g->came > 0)
        return end(g, EDDY_OK);
    return end(g, EDDY_ERR_NO_REPLY);
}
