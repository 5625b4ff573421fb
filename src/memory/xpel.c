/* SPDX-License-Identifier: BSD-3-Clause */
/* Commands on a group's pending entries: XACK, XPENDING (summary and extended forms, IDLE,
 * consumer filter), XCLAIM (IDLE, TIME, RETRYCOUNT, FORCE, JUSTID, LASTID) and XAUTOCLAIM
 * (COUNT, JUSTID, Redis 7's third reply element listing deleted ids).
 *
 * Delivery counts follow Redis 7.0: XCLAIM and XAUTOCLAIM add one unless JUSTID (or XCLAIM's
 * RETRYCOUNT sets it); an entry deleted from the stream is dropped from the PEL when a claim
 * meets it. */
#include <limits.h>
#include <string.h>

#include "memory/internal.h"

static void err_nogroup(eddy__mctx *c) {
    eddy__mctx_errorf(c, "NOGROUP No such key '%.*s' or consumer group '%.*s'",
                      eddy__mname_len(ARG(c, 1), ARGLEN(c, 1)), ARG(c, 1),
                      eddy__mname_len(ARG(c, 2), ARGLEN(c, 2)), ARG(c, 2));
}

void eddy__mcmd_xack(eddy__mctx *c) {
    c->quiet = true; /* pending entries change hands: no blocked read is served */
    bool wrongtype;
    eddy__mobj *o = eddy__mstream_find(c, 1, &wrongtype);
    if (wrongtype)
        return;
    eddy__mgroup *g = o ? eddy__mgroup_find(o->v.stream, ARG(c, 2), ARGLEN(c, 2)) : NULL;
    if (!g) {
        eddy__mresp_int(c->out, 0);
        return;
    }
    eddy__mid id;
    for (int j = 3; j < c->argc; j++)
        if (!eddy__mctx_id(c, j, &id, 0, true))
            return;
    long long acked = 0;
    for (int j = 3; j < c->argc; j++) {
        eddy__mctx_id(c, j, &id, 0, true);
        eddy__mnack *nack = eddy__mgroup_pending(g, id);
        if (nack) {
            eddy__mnack_drop(g, nack);
            acked++;
        }
    }
    if (acked)
        c->dirty = true;
    eddy__mresp_int(c->out, acked);
}

void eddy__mcmd_xpending(eddy__mctx *c) {
    bool summary = c->argc == 3;
    if (c->argc != 3 && (c->argc < 6 || c->argc > 9)) {
        eddy__mctx_err_syntax(c);
        return;
    }
    eddy__mid start = {0, 0}, end = EDDY__MID_MAX;
    long long count = 0, minidle = 0;
    int consumer_arg = -1;
    if (c->argc >= 6) {
        int startidx = 3;
        if (ARGIS(c, 3, "idle")) {
            if (!eddy__mctx_ll(c, 4, &minidle, NULL))
                return;
            if (c->argc < 8) {
                eddy__mctx_err_syntax(c);
                return;
            }
            startidx += 2;
        }
        if (!eddy__mctx_ll(c, startidx + 2, &count, NULL))
            return;
        if (count < 0)
            count = 0;
        bool startex, endex;
        if (!eddy__mctx_interval_id(c, startidx, &start, &startex, 0))
            return;
        if (startex && !eddy__mid_incr(&start)) {
            eddy__mctx_error(c, "ERR invalid start ID for the interval");
            return;
        }
        if (!eddy__mctx_interval_id(c, startidx + 1, &end, &endex, UINT64_MAX))
            return;
        if (endex && !eddy__mid_decr(&end)) {
            eddy__mctx_error(c, "ERR invalid end ID for the interval");
            return;
        }
        if (startidx + 3 < c->argc)
            consumer_arg = startidx + 3;
    }
    bool wrongtype;
    eddy__mobj *o = eddy__mstream_find(c, 1, &wrongtype);
    if (wrongtype)
        return;
    eddy__mgroup *g = o ? eddy__mgroup_find(o->v.stream, ARG(c, 2), ARGLEN(c, 2)) : NULL;
    if (!g) {
        err_nogroup(c);
        return;
    }
    if (summary) {
        eddy__mresp_array(c->out, 4);
        eddy__mresp_int(c->out, (long long)g->pel.len);
        if (g->pel.len == 0) {
            eddy__mresp_nil(c->out);
            eddy__mresp_nil(c->out);
            eddy__mresp_nil_array(c->out);
            return;
        }
        const eddy__mnack *first = eddy__mskl_first(&g->pel)->item, *last = g->pel.tail->item;
        eddy__mresp_id(c->out, first->id.ms, first->id.seq);
        eddy__mresp_id(c->out, last->id.ms, last->id.seq);
        size_t n;
        eddy__mconsumer **cs = eddy__mgroup_sorted_consumers(g, &n);
        if (!cs) {
            eddy__mctx_oom(c);
            return;
        }
        size_t mark = eddy__mresp_defer(c->out), shown = 0;
        for (size_t i = 0; i < n; i++) {
            if (cs[i]->pel.len == 0)
                continue;
            eddy__mresp_array(c->out, 2);
            eddy__mresp_bulk(c->out, cs[i]->name, cs[i]->nlen);
            eddy__mresp_bulk_ll(c->out, (long long)cs[i]->pel.len);
            shown++;
        }
        eddy__mresp_set_array(c->out, mark, shown);
        eddy__mem_free(cs);
        return;
    }
    eddy__mskl *pel = &g->pel;
    if (consumer_arg >= 0) {
        eddy__mconsumer *consumer =
            eddy__mconsumer_find(g, ARG(c, consumer_arg), ARGLEN(c, consumer_arg));
        if (!consumer) {
            eddy__mresp_array(c->out, 0);
            return;
        }
        pel = &consumer->pel;
    }
    size_t mark = eddy__mresp_defer(c->out), n = 0;
    for (eddy__mskl_node *node = eddy__mpel_seek(pel, start); count && node;
         node = eddy__mskl_next(node)) {
        const eddy__mnack *nack = node->item;
        if (eddy__mid_cmp(nack->id, end) > 0)
            break;
        long long idle = c->now_ms - nack->delivery_time;
        if (minidle && idle < minidle)
            continue;
        count--;
        n++;
        eddy__mresp_array(c->out, 4);
        eddy__mresp_id(c->out, nack->id.ms, nack->id.seq);
        eddy__mresp_bulk(c->out, nack->consumer->name, nack->consumer->nlen);
        eddy__mresp_int(c->out, idle < 0 ? 0 : idle);
        eddy__mresp_int(c->out, (long long)nack->delivery_count);
    }
    eddy__mresp_set_array(c->out, mark, n);
}

void eddy__mcmd_xclaim(eddy__mctx *c) {
    c->quiet = true; /* pending entries change hands: no blocked read is served */
    bool wrongtype;
    eddy__mobj *o = eddy__mstream_find(c, 1, &wrongtype);
    if (wrongtype)
        return;
    eddy__mgroup *g = o ? eddy__mgroup_find(o->v.stream, ARG(c, 2), ARGLEN(c, 2)) : NULL;
    if (!g) {
        err_nogroup(c);
        return;
    }
    eddy__mstream *s = o->v.stream;
    long long minidle, retrycount = -1, deliverytime = -1;
    bool force = false, justid = false;
    if (!eddy__mctx_ll(c, 4, &minidle, "Invalid min-idle-time argument for XCLAIM"))
        return;
    if (minidle < 0)
        minidle = 0;
    /* Ids run up to the first argument that is not one; options follow. */
    int j = 5;
    eddy__mid id;
    while (j < c->argc && eddy__mparse_id(ARG(c, j), ARGLEN(c, j), &id, 0, true, NULL))
        j++;
    int last_id_arg = j - 1;
    eddy__mid lastid = {0, 0};
    for (; j < c->argc; j++) {
        int moreargs = c->argc - 1 - j;
        if (ARGIS(c, j, "force")) {
            force = true;
        } else if (ARGIS(c, j, "justid")) {
            justid = true;
        } else if (ARGIS(c, j, "idle") && moreargs) {
            j++;
            if (!eddy__mctx_ll(c, j, &deliverytime, "Invalid IDLE option argument for XCLAIM"))
                return;
            deliverytime = c->now_ms - deliverytime;
        } else if (ARGIS(c, j, "time") && moreargs) {
            j++;
            if (!eddy__mctx_ll(c, j, &deliverytime, "Invalid TIME option argument for XCLAIM"))
                return;
        } else if (ARGIS(c, j, "retrycount") && moreargs) {
            j++;
            if (!eddy__mctx_ll(c, j, &retrycount, "Invalid RETRYCOUNT option argument for XCLAIM"))
                return;
        } else if (ARGIS(c, j, "lastid") && moreargs) {
            j++;
            if (!eddy__mctx_id(c, j, &lastid, 0, true))
                return;
        } else {
            eddy__mctx_errorf(c, "ERR Unrecognized XCLAIM option '%.*s'",
                              eddy__mname_len(ARG(c, j), ARGLEN(c, j)), ARG(c, j));
            return;
        }
    }
    if (eddy__mid_cmp(lastid, g->last_id) > 0) {
        g->last_id = lastid;
        c->dirty = true;
    }
    if (deliverytime != -1) {
        /* Redis prefers "now" to an error for times in the future or before the epoch. */
        if (deliverytime < 0 || deliverytime > c->now_ms)
            deliverytime = c->now_ms;
    } else {
        deliverytime = c->now_ms;
    }
    eddy__mconsumer *consumer = NULL;
    size_t mark = eddy__mresp_defer(c->out), n = 0;
    for (j = 5; j <= last_id_arg; j++) {
        eddy__mparse_id(ARG(c, j), ARGLEN(c, j), &id, 0, true, NULL);
        eddy__mnack *nack = eddy__mgroup_pending(g, id);
        eddy__mentry *e = eddy__mstream_get(s, id);
        if (!e) {
            if (nack) {
                eddy__mnack_drop(g, nack);
                c->dirty = true;
            }
            continue;
        }
        if (!nack && !force)
            continue;
        if (nack && nack->consumer && minidle && c->now_ms - nack->delivery_time < minidle)
            continue;
        if (!consumer) {
            bool created;
            consumer = eddy__mconsumer_get(g, ARG(c, 3), ARGLEN(c, 3), c->now_ms, &created);
            if (!consumer) {
                eddy__mctx_oom(c);
                return;
            }
            if (created)
                c->dirty = true;
        }
        if (!nack) {
            /* FORCE: the entry exists, so it joins the PEL as if delivered once before. */
            if (!(nack = eddy__mnack_add(g, id, c->now_ms, 1))) {
                eddy__mctx_oom(c);
                return;
            }
            if (eddy__mnack_transfer(nack, consumer) != 0) {
                eddy__mnack_drop(g, nack);
                eddy__mctx_oom(c);
                return;
            }
        } else if (eddy__mnack_transfer(nack, consumer) != 0) {
            eddy__mctx_oom(c);
            return;
        }
        nack->delivery_time = deliverytime;
        if (retrycount >= 0)
            nack->delivery_count = (uint64_t)retrycount;
        else if (!justid)
            nack->delivery_count++;
        c->dirty = true;
        if (justid)
            eddy__mresp_id(c->out, id.ms, id.seq);
        else
            eddy__mstream_reply_entry(c->out, e);
        n++;
    }
    eddy__mresp_set_array(c->out, mark, n);
}

void eddy__mcmd_xautoclaim(eddy__mctx *c) {
    c->quiet = true; /* pending entries change hands: no blocked read is served */
    long long minidle, count = 100;
    bool justid = false;
    if (!eddy__mctx_ll(c, 4, &minidle, "Invalid min-idle-time argument for XAUTOCLAIM"))
        return;
    if (minidle < 0)
        minidle = 0;
    eddy__mid start;
    bool startex;
    if (!eddy__mctx_interval_id(c, 5, &start, &startex, 0))
        return;
    if (startex && !eddy__mid_incr(&start)) {
        eddy__mctx_error(c, "ERR invalid start ID for the interval");
        return;
    }
    for (int j = 6; j < c->argc; j++) {
        int moreargs = c->argc - 1 - j;
        if (ARGIS(c, j, "count") && moreargs) {
            long long v;
            if (!eddy__mparse_ll(ARG(c, j + 1), ARGLEN(c, j + 1), &v) || v < 1 ||
                v > LLONG_MAX / 16) {
                eddy__mctx_error(c, "ERR COUNT must be > 0");
                return;
            }
            count = v;
            j++;
        } else if (ARGIS(c, j, "justid")) {
            justid = true;
        } else {
            eddy__mctx_err_syntax(c);
            return;
        }
    }
    bool wrongtype;
    eddy__mobj *o = eddy__mstream_find(c, 1, &wrongtype);
    if (wrongtype)
        return;
    eddy__mgroup *g = o ? eddy__mgroup_find(o->v.stream, ARG(c, 2), ARGLEN(c, 2)) : NULL;
    if (!g) {
        err_nogroup(c);
        return;
    }
    eddy__mstream *s = o->v.stream;
    long long attempts = count * 10;
    eddy__mconsumer *consumer = NULL;
    eddy__mresp claimed; /* the claimed list comes after the cursor, known only at the end */
    eddy__mresp_init(&claimed);
    eddy__mresp deleted;
    eddy__mresp_init(&deleted);
    size_t nclaimed = 0, ndeleted = 0;
    eddy__mskl_node *node = eddy__mpel_seek(&g->pel, start);
    /* Redis walks with a radix-tree iterator; `node` plays its cursor: after the loop it is the
     * entry after the last one examined, which becomes the reply's next start id. */
    while (attempts-- && count && node) {
        eddy__mnack *nack = node->item;
        eddy__mskl_node *next = eddy__mskl_next(node);
        eddy__mentry *e = eddy__mstream_get(s, nack->id);
        if (!e) {
            eddy__mresp_id(&deleted, nack->id.ms, nack->id.seq);
            ndeleted++;
            eddy__mnack_drop(g, nack);
            c->dirty = true;
            count--;
            node = next;
            continue;
        }
        if (minidle && c->now_ms - nack->delivery_time < minidle) {
            node = next;
            continue;
        }
        if (!consumer) {
            bool created;
            consumer = eddy__mconsumer_get(g, ARG(c, 3), ARGLEN(c, 3), c->now_ms, &created);
            if (!consumer)
                goto oom;
            if (created)
                c->dirty = true;
        }
        if (eddy__mnack_transfer(nack, consumer) != 0)
            goto oom;
        nack->delivery_time = c->now_ms;
        if (!justid)
            nack->delivery_count++;
        c->dirty = true;
        if (justid)
            eddy__mresp_id(&claimed, nack->id.ms, nack->id.seq);
        else
            eddy__mstream_reply_entry(&claimed, e);
        nclaimed++;
        count--;
        node = next;
    }
    if (claimed.oom || deleted.oom)
        goto oom;
    eddy__mresp_array(c->out, 3);
    if (node) {
        const eddy__mnack *nack = node->item;
        eddy__mresp_id(c->out, nack->id.ms, nack->id.seq);
    } else {
        eddy__mresp_id(c->out, 0, 0);
    }
    eddy__mresp_array(c->out, nclaimed);
    eddy__mresp_append(c->out, &claimed);
    eddy__mresp_array(c->out, ndeleted);
    eddy__mresp_append(c->out, &deleted);
    eddy__mresp_release(&claimed);
    eddy__mresp_release(&deleted);
    return;
oom:
    eddy__mresp_release(&claimed);
    eddy__mresp_release(&deleted);
    eddy__mctx_oom(c);
}
