/* SPDX-License-Identifier: BSD-3-Clause */
/* XREAD and XREADGROUP: argument parsing in Redis's order, serving streams synchronously
 * (new entries with '>', a consumer's own pending history with an explicit id), and the
 * non-waiting half of BLOCK: when nothing can be served the command reports "blocked" and the
 * caller waits outside the engine, then runs the same command again.
 *
 * Invariants: a blocked XREAD remembers what its '$' ids meant on the first run (in the
 * connection), so entries added while its caller waited are not skipped; a command inside
 * MULTI/EXEC never blocks (it answers a null array, like Redis). */
#include <string.h>

#include "memory/internal.h"

#define STATIC_STREAMS 16

typedef struct xread_args {
    long long timeout; /* -1: no BLOCK */
    long long count;   /* 0: no limit */
    int streams_arg, nstreams;
    bool noack;
    int group_arg; /* position of the group name, -1 if none */
} xread_args;

static bool parse_args(eddy__mctx *c, bool xreadgroup, xread_args *a) {
    *a = (xread_args){-1, 0, 0, 0, false, -1};
    for (int i = 1; i < c->argc; i++) {
        int moreargs = c->argc - i - 1;
        if (ARGIS(c, i, "block") && moreargs) {
            i++;
            long long t;
            if (!eddy__mctx_ll(c, i, &t, "timeout is not an integer or out of range"))
                return false;
            if (t < 0) {
                eddy__mctx_error(c, "ERR timeout is negative");
                return false;
            }
            a->timeout = t;
        } else if (ARGIS(c, i, "count") && moreargs) {
            i++;
            if (!eddy__mctx_ll(c, i, &a->count, NULL))
                return false;
            if (a->count < 0)
                a->count = 0;
        } else if (ARGIS(c, i, "streams") && moreargs) {
            a->streams_arg = i + 1;
            a->nstreams = c->argc - a->streams_arg;
            if (a->nstreams % 2 != 0) {
                eddy__mctx_error(c, "ERR Unbalanced XREAD list of streams: for each stream key "
                                    "an ID or '$' must be specified.");
                return false;
            }
            a->nstreams /= 2;
            break;
        } else if (ARGIS(c, i, "group") && moreargs >= 2) {
            if (!xreadgroup) {
                eddy__mctx_error(c, "ERR The GROUP option is only supported by XREADGROUP. You "
                                    "called XREAD instead.");
                return false;
            }
            a->group_arg = i + 1;
            i += 2;
        } else if (ARGIS(c, i, "noack")) {
            if (!xreadgroup) {
                eddy__mctx_error(c, "ERR The NOACK option is only supported by XREADGROUP. You "
                                    "called XREAD instead.");
                return false;
            }
            a->noack = true;
        } else {
            eddy__mctx_err_syntax(c);
            return false;
        }
    }
    if (a->streams_arg == 0) {
        eddy__mctx_err_syntax(c);
        return false;
    }
    if (xreadgroup && a->group_arg < 0) {
        eddy__mctx_error(c, "ERR Missing GROUP option for XREADGROUP");
        return false;
    }
    return true;
}

/* Delivers new entries after gt to a consumer, as XREADGROUP '>' does. False on OOM. */
static bool serve_new(eddy__mctx *c, eddy__mstream *s, eddy__mgroup *g, eddy__mconsumer *consumer,
                      eddy__mid start, size_t count, bool noack) {
    size_t mark = eddy__mresp_defer(c->out);
    size_t n = 0;
    bool ok = true;
    for (size_t i = eddy__mstream_lower_bound(s, start); i < s->n && (!count || n < count); i++) {
        eddy__mentry *e = &s->e[i];
        if (e->deleted)
            continue;
        /* Pending first, then past it: a group that moved past an entry its PEL lacks (out of
         * memory in between) would never deliver it again. */
        if (!noack && eddy__mgroup_deliver(g, consumer, e->id, c->now_ms) != 0) {
            ok = false;
            break;
        }
        eddy__mgroup_advance(s, g, e->id);
        c->dirty = true;
        eddy__mstream_reply_entry(c->out, e);
        n++;
    }
    eddy__mresp_set_array(c->out, mark, n);
    return ok;
}

static void xread_generic(eddy__mctx *c, bool xreadgroup) {
    c->quiet = true; /* deliveries and new consumers serve no other blocked read */
    xread_args a;
    if (!parse_args(c, xreadgroup, &a))
        return;
    eddy__mid ids_static[STATIC_STREAMS];
    eddy__mobj *objs_static[STATIC_STREAMS];
    eddy__mgroup *groups_static[STATIC_STREAMS];
    eddy__mid *ids = ids_static;
    eddy__mobj **objs = objs_static;
    eddy__mgroup **groups = groups_static;
    if (a.nstreams > STATIC_STREAMS) {
        ids = eddy__mem_malloc(sizeof(*ids) * (size_t)a.nstreams);
        objs = eddy__mem_malloc(sizeof(*objs) * (size_t)a.nstreams);
        groups = eddy__mem_malloc(sizeof(*groups) * (size_t)a.nstreams);
        if (!ids || !objs || !groups) {
            eddy__mctx_oom(c);
            goto done;
        }
    }

    const eddy__mid *prev_ids = NULL;
    int nprev = 0;
    bool rerun = !xreadgroup && !c->in_exec && eddy__mconn_blocked_match(c, &prev_ids, &nprev) &&
                 nprev == a.nstreams;
    const char *gname = xreadgroup ? ARG(c, a.group_arg) : NULL;
    size_t gnlen = xreadgroup ? ARGLEN(c, a.group_arg) : 0;

    for (int i = 0; i < a.nstreams; i++) {
        int karg = a.streams_arg + i, idarg = a.streams_arg + a.nstreams + i;
        eddy__mobj *o = eddy__mkey_find(c, ARG(c, karg), ARGLEN(c, karg));
        if (o && o->type != EDDY__MT_STREAM) {
            eddy__mctx_err_wrongtype(c);
            goto done;
        }
        objs[i] = o;
        groups[i] = NULL;
        if (xreadgroup) {
            if (!o || !(groups[i] = eddy__mgroup_find(o->v.stream, gname, gnlen))) {
                eddy__mctx_errorf(c,
                                  "NOGROUP No such key '%.*s' or consumer group '%.*s' in "
                                  "XREADGROUP with GROUP option",
                                  eddy__mname_len(ARG(c, karg), ARGLEN(c, karg)), ARG(c, karg),
                                  eddy__mname_len(gname, gnlen), gname);
                goto done;
            }
        }
        if (ARGLEN(c, idarg) == 1 && ARG(c, idarg)[0] == '$') {
            if (xreadgroup) {
                eddy__mctx_error(c, "ERR The $ ID is meaningless in the context of XREADGROUP: "
                                    "you want to read the history of this consumer by "
                                    "specifying a proper ID, or use the > ID to get new "
                                    "messages. The $ ID would just return an empty result set.");
                goto done;
            }
            ids[i] = rerun ? prev_ids[i] : o ? o->v.stream->last_id : (eddy__mid){0, 0};
        } else if (ARGLEN(c, idarg) == 1 && ARG(c, idarg)[0] == '>') {
            if (!xreadgroup) {
                eddy__mctx_error(c, "ERR The > ID can be specified only when calling XREADGROUP "
                                    "using the GROUP <group> <consumer> option.");
                goto done;
            }
            ids[i] = EDDY__MID_MAX;
        } else if (!eddy__mctx_id(c, idarg, &ids[i], 0, true)) {
            goto done;
        }
    }

    size_t mark = eddy__mresp_defer(c->out);
    size_t served = 0;
    for (int i = 0; i < a.nstreams; i++) {
        eddy__mobj *o = objs[i];
        if (!o)
            continue;
        eddy__mstream *s = o->v.stream;
        eddy__mid gt = ids[i], maxid;
        bool serve = false, history = false;
        if (xreadgroup) {
            /* As in Redis, only the maximum id means '>' (so does its literal spelling). */
            if (gt.ms != UINT64_MAX || gt.seq != UINT64_MAX) {
                serve = history = true;
            } else if (eddy__mstream_last_live(s, &maxid) &&
                       eddy__mid_cmp(maxid, groups[i]->last_id) > 0) {
                serve = true;
                gt = groups[i]->last_id;
            }
        } else if (eddy__mstream_last_live(s, &maxid) && eddy__mid_cmp(maxid, gt) > 0) {
            serve = true;
        }
        if (!serve)
            continue;
        served++;
        int karg = a.streams_arg + i;
        eddy__mresp_array(c->out, 2);
        eddy__mresp_bulk(c->out, ARG(c, karg), ARGLEN(c, karg));
        eddy__mid start = gt;
        eddy__mid_incr(&start);
        if (!xreadgroup) {
            eddy__mstream_reply_range(c->out, s, start, EDDY__MID_MAX, (size_t)a.count, false);
            continue;
        }
        int carg = a.group_arg + 1;
        bool created;
        eddy__mconsumer *consumer =
            eddy__mconsumer_get(groups[i], ARG(c, carg), ARGLEN(c, carg), c->now_ms, &created);
        if (!consumer) {
            eddy__mctx_oom(c);
            goto done;
        }
        consumer->seen_time = c->now_ms;
        if (created)
            c->dirty = true;
        if (history) {
            eddy__mgroup_reply_history(c, s, consumer, start, (size_t)a.count);
        } else if (!serve_new(c, s, groups[i], consumer, start, (size_t)a.count, a.noack)) {
            eddy__mctx_oom(c);
            goto done;
        }
    }

    if (served) {
        eddy__mresp_set_array(c->out, mark, served);
        if (!xreadgroup && !c->in_exec)
            eddy__mconn_unblock(c->conn);
    } else if (a.timeout >= 0 && !c->in_exec) {
        eddy__mresp_truncate(c->out, mark); /* no array after all */
        if (!xreadgroup && !rerun && !eddy__mconn_block(c, ids, a.nstreams)) {
            eddy__mctx_oom(c);
            goto done;
        }
        eddy__mconn_wait_on(c, a.streams_arg, a.nstreams);
        c->blocked = true;
        c->block_ms = a.timeout;
    } else {
        eddy__mresp_truncate(c->out, mark);
        eddy__mresp_nil_array(c->out);
    }
done:
    if (ids != ids_static) {
        eddy__mem_free(ids);
        eddy__mem_free(objs);
        eddy__mem_free(groups);
    }
}

void eddy__mcmd_xread(eddy__mctx *c) { xread_generic(c, false); }

void eddy__mcmd_xreadgroup(eddy__mctx *c) { xread_generic(c, true); }
