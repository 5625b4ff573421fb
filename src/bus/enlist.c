/* SPDX-License-Identifier: BSD-3-Clause */
/* When a subscription counts in the registry's heartbeats (enlist.h): at a start, or, a late
 * one, once its own registration was answered (the ticket rule); in one place for both front
 * ends. */
#include "bus/enlist.h"

#include <stdint.h>
#include <stdlib.h>

eddy_status eddy__enlist_begin(eddy__enlist *e, eddy__inbox *ib, eddy__sub *sub, long long now_ms,
                               eddy__cmdlist *out, unsigned *ticket) {
    eddy_status st = ib ? eddy__inbox_register_cmds(ib, sub, now_ms, out) : EDDY_OK;
    if (st != EDDY_OK) {
        e->out = false;
        return st;
    }
    *ticket = ++e->seq;
    e->out = true;
    return EDDY_OK;
}

bool eddy__enlist_feed(eddy__enlist *e, unsigned ticket, eddy__sub *sub, eddy_status st,
                       const eddy_error *got, redisReply *const *replies, size_t n,
                       eddy_status *res, eddy_error *err) {
    if (!e->out || ticket != e->seq)
        return false; /* stopped meanwhile, or a later one counts */
    e->out = false;
    *res = eddy__inbox_cmds_status(st, got, replies, n, err);
    if (*res == EDDY_OK)
        sub->listed = true;
    return true;
}

void eddy__enlist_drop(eddy__enlist *e) { e->out = false; }

bool eddy__enlist_out(const eddy__enlist *e) { return e->out; }

void eddy__enlist_start(eddy__subs *subs) {
    for (size_t i = 0; i < subs->n; i++)
        subs->v[i]->listed = true;
}

size_t eddy__enlist_heartbeat(const eddy__subs *subs, eddy__sub ***buf, size_t *cap) {
    if (subs->n > *cap) {
        eddy__sub **v = realloc(*buf, subs->n * sizeof(*v));
        if (!v)
            return SIZE_MAX;
        *buf = v;
        *cap = subs->n;
    }
    return eddy__subs_listed(subs, *buf);
}
