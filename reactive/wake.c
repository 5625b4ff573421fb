/* SPDX-License-Identifier: BSD-3-Clause */
/* The bus-wide wake-up on the loop (src/bus/wakeup.h has the design): one connection of its
 * own carries the core's plan (XREVRANGE for the streams whose id is unknown, else one blocking
 * XREAD over every watched stream); the replies wake the activations whose streams have news.
 * The activations' own reads go on the shared connections (share.h).
 *
 * A stream watched while the blocking XREAD is out that the XREAD does not cover cuts it short:
 * the connection is closed and a new one opened at once (the same as a pause's cut of a
 * subscription's read, reader.c). Nothing is lost by that: the ids move only with replies, so
 * the next XREAD starts where the cut one did, and the new watcher's own first read covers what
 * its stream already holds. A lost connection makes every id unknown again (eddy__wakeup_reset). */
#include <stdlib.h>

#include "bus/wake_drive.h"
#include "error.h"
#include "internal.h"
#include "timing.h"

struct rwake {
    eddy_rbus *bus;
    eddy__wakeup *core;
    rround r;
    bool stopped;
    /* The activations a feed woke, to kick once it returned (its callbacks run under the
     * core's lock, and a kick plans, which watches and unwatches there). */
    ract **kick;
    size_t nkick, capkick;
    bool kick_all; /* out of memory for the list: every live activation is kicked */
};

static void woken(void *owner, void *user) {
    rwake *w = user;
    ract *a = owner;
    if (w->nkick == w->capkick) {
        size_t cap = w->capkick ? 2 * w->capkick : 16;
        ract **v = realloc(w->kick, cap * sizeof(*v));
        if (!v) {
            w->kick_all = true;
            return;
        }
        w->kick = v, w->capkick = cap;
    }
    w->kick[w->nkick++] = a;
}

/* Ends the idle wait of each activation the feed woke (its news is marked: it reads now). */
static void kick_woken(rwake *w) {
    eddy_rbus *bus = w->bus;
    if (w->kick_all) {
        for (ract *a = bus->acts; a; a = a->next)
            if (a->rs->act == a)
                eddy__ract_wake(a, EDDY__WAKE_IDLE);
    } else {
        /* (a kicked activation may stop or die meanwhile: its memory stays until the
         * outermost eddy__rbus_leave, and ract_wake ignores it then) */
        for (size_t i = 0; i < w->nkick; i++)
            if (w->kick[i]->rs->act == w->kick[i])
                eddy__ract_wake(w->kick[i], EDDY__WAKE_IDLE);
    }
    w->nkick = 0;
    w->kick_all = false;
}

static void wake_step(void *owner) {
    rwake *w = owner;
    rround *r = &w->r;
    if (w->stopped || w->bus->freeing)
        return;
    if (!r->conn) {
        eddy__rround_connect(r);
        return;
    }
    eddy__plan_reset(&r->plan);
    long long block, idle;
    if (!eddy__wake_next(w->core, (long long)w->bus->s.block_ms, &r->plan.cmds, &block, &idle)) {
        eddy__rround_idle(r, idle);
        return;
    }
    r->plan.block_ms = block;
    eddy__rround_send(r);
}

static void wake_done(void *owner) {
    rwake *w = owner;
    rround *r = &w->r;
    eddy__wake_took(w->core, &r->plan.cmds, r->replies, r->plan.cmds.n, woken, w, &w->bus->s.log);
    eddy__rround_replies_done(r);
    kick_woken(w);
    r->state = R_HELD;
    wake_step(w);
}

static bool wake_lost(void *owner) {
    rwake *w = owner;
    eddy__wakeup_reset(w->core);
    return !w->stopped && !w->bus->freeing;
}

static void wake_late(void *owner) { (void)owner; /* nothing waits for it to be ready */ }

static const rround_ops wake_ops = {wake_step, NULL, wake_done, wake_lost, wake_late};

rwake *eddy__rwake_new(eddy_rbus *bus) {
    rwake *w = calloc(1, sizeof(*w));
    if (!w)
        return NULL;
    if (!(w->core = eddy__wakeup_new(bus->s.read_batch))) {
        free(w);
        return NULL;
    }
    w->bus = bus;
    eddy__rround_init(&w->r, bus, &wake_ops, w, "wake-up connection", NULL);
    eddy__rround_stop_deadline(&w->r);
    w->stopped = true;
    w->r.state = R_DEAD;
    return w;
}

eddy__wakeup *eddy__rwake_core(rwake *w) { return w->core; }

void eddy__rwake_start(rwake *w) {
    if (!w->stopped)
        return;
    w->stopped = false;
    eddy__rround_connect(&w->r);
}

void eddy__rwake_watched(rwake *w, bool replan) {
    rround *r = &w->r;
    if (w->stopped)
        return;
    if (r->state == R_IDLE) {
        if (eddy__wakeup_streams(w->core) == 0)
            return;
        ev_timer_stop(w->bus->loop, &r->timer);
        wake_step(w);
    } else if (replan && r->state == R_ROUND && r->plan.block_ms >= 0) {
        eddy__rround_replies_done(r);
        eddy__rconn_close(r->conn); /* its blocking XREAD's reply, if any came, is dropped */
        r->conn = NULL;
        eddy__rround_connect(r);
    }
    /* Otherwise it plans again once its connection is up or its round is in. */
}

void eddy__rwake_stop(rwake *w) {
    if (w->stopped)
        return;
    w->stopped = true;
    eddy__rround_kill(&w->r);
    eddy__wakeup_reset(w->core);
}

void eddy__rwake_free(rwake *w) {
    if (!w)
        return;
    eddy__rwake_stop(w);
    eddy__rround_free(&w->r);
    eddy__wakeup_free(w->core);
    free(w->kick);
    free(w);
}
