/* SPDX-License-Identifier: BSD-3-Clause */
/* The reactive bus's control loop: one per activation, on a connection of its own, driving the
 * core's inbox state machine (inbox.h) exactly as the blocking control thread does: it opens
 * the activation's reply stream, registers the bus's subscriptions and renews their leases
 * and the stream's expiry by heartbeat, and reads replies, which the core matches to waiting
 * requests. Timers stand where the blocking thread sleeps, callbacks where it waits.
 *
 * Invariants:
 * - Started once every subscription of a start is ready (a requester that finds them in the
 *   registry finds their groups in place); the bus's start is ready once this loop is.
 * - The heartbeat renews only listed subscriptions (eddy__subs_listed): ready ones, and late
 *   ones once their own registration (eddy__rctl_register, on the publishing connection) came
 *   back.
 * - Stopping leaves the registry and deletes the reply stream with commands on the publishing
 *   connection, put on the wire before stop returns when that connection is up (best effort:
 *   leases end by themselves), then closes this connection at once, even inside a blocking
 *   read. A later activation's loop sends nothing until that leave is answered, so the old
 *   leave cannot remove the new registration (rctl.waiting).
 * - A bus with a random instance also destroys its fanout groups at stop (stop_flow.h), one op
 *   a step after the leave's answer (the subjects, then the destroys), counted in bus->leaving
 *   like it; skipped when the bus was started again meanwhile (the new activation uses the same
 *   groups).
 * - Replies read after their request's deadline are never delivered: due deadlines are
 *   ended before a read's replies are matched, whatever order the loop runs its watchers in.
 * - A stopped loop is only marked dead; it is freed by the outermost eddy__rbus_leave.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bus/bus_stats.h"
#include "bus/stop_flow.h"
#include "error.h"
#include "internal.h"
#include "timing.h"

struct rctl {
    eddy_rbus *bus;
    eddy__inbox *inbox;
    /* its connection and rounds; R_HELD while a round's outcomes are completed, or while a
     * previous activation's leave is still out (waiting) */
    rround r;
    bool waiting;
    bool ready;       /* the reply stream exists and the subscriptions were registered once */
    eddy__sub **subs; /* the heartbeat's subscriptions */
    size_t subs_cap;
    rctl *next; /* bus->ctls */
};

/* ---- rounds -------------------------------------------------------------------------------- */

/* The connection is gone: open and register again on a new one, as the core prescribes.
 * Requests keep waiting: the reply stream outlives a connection. */
static bool ctl_lost(void *owner) {
    rctl *c = owner;
    eddy__inbox_reset(c->inbox, eddy_now_ms());
    return true;
}

/* Plans and sends the next round. No pipeline is out. */
static void ctl_step(void *owner) {
    rctl *c = owner;
    rround *r = &c->r;
    eddy_rbus *bus = c->bus;
    if (r->state == R_DEAD)
        return;
    c->waiting = bus->leaving > 0;
    if (c->waiting) {
        r->state = R_HELD; /* leave_done goes on */
        return;
    }
    if (!r->conn) {
        eddy__rround_connect(r);
        return;
    }
    eddy__plan_reset(&r->plan); /* nothing of the last round stays, planned or not */
    size_t n = eddy__enlist_heartbeat(&bus->core.all, &c->subs, &c->subs_cap);
    long long wait = n != SIZE_MAX ? eddy__inbox_next(c->inbox, eddy_now_ms(), c->subs, n, &r->plan)
                                   : EDDY__NOMEM_RETRY_MS;
    if (wait >= 0)
        eddy__rround_idle(r, wait);
    else if (!eddy__rround_send(r))
        eddy__inbox_reset(c->inbox, eddy_now_ms()); /* the plan is not sent */
}

/* Every reply of the round is in (the last one lent by the connection). */
static void ctl_done(void *owner) {
    rctl *c = owner;
    rround *r = &c->r;
    eddy_rbus *bus = c->bus;
    eddy__rreq_expire(bus); /* before matching: a reply after its deadline is Unclaimed */
    if (r->state == R_DEAD) /* stopped from a request's callback: the replies are moot */
        return;
    eddy__reply_list done = {0};
    eddy_status st =
        eddy__inbox_feed(c->inbox, eddy_now_ms(), &r->plan, r->replies, r->plan.cmds.n, &done);
    eddy__rround_replies_done(r);
    if (st != EDDY_OK) {
        eddy__reply_list_free(&done);
        eddy_error err;
        eddy__fail(&err, st, "unexpected replies");
        eddy__rround_lose(r, &err);
        return;
    }
    r->state = R_HELD;
    if (!c->ready && eddy__inbox_ready(c->inbox)) {
        c->ready = true;
        eddy__rround_stop_deadline(r);
        eddy__rbus_ctl_ready(bus, NULL);
    }
    /* Matched requests were taken out of the table: each is completed here, whatever the
     * callbacks before it did to the bus. */
    for (size_t i = 0; i < done.n; i++) /* a gather may have several, and stays in the table */
        if (done.v[i].gather)
            eddy__rreq_pin(done.v[i].waiter);
    for (size_t i = 0; i < done.n; i++) {
        if (done.v[i].gather) {
            eddy__rreq_gather_reply(&done.v[i]);
            continue;
        }
        eddy_event *reply = done.v[i].reply;
        done.v[i].reply = NULL;
        eddy__rreq_complete_waiter(done.v[i].waiter, done.v[i].st, reply);
    }
    eddy__reply_list_free(&done);
    if (r->state == R_HELD)
        ctl_step(c);
}

static void ctl_late(void *owner) {
    rctl *c = owner;
    if (c->ready)
        return;
    eddy_error err;
    eddy__inbox_late(&c->r.last_err, &err);
    eddy__rbus_ctl_ready(c->bus, &err);
}

static const rround_ops ctl_round_ops = {ctl_step, NULL, ctl_done, ctl_lost, ctl_late};

/* ---- leaving and registering, on the publishing connection ------------------------------ */

/* One op of a stop is answered: the next activation's loop goes on after the last. */
static void leave_done(eddy_rbus *bus) {
    bus->leaving--;
    if (bus->leaving == 0 && bus->ctl && bus->ctl->waiting)
        ctl_step(bus->ctl);
}

/* A late subscription's registration: the core's handshake (enlist.h) decides whether an
 * answer still counts (a stop drops the one out, bus.c) and what it means. */
static void registered(eddy_rbus *bus, rpub *p, eddy_status st, const eddy_error *err) {
    rsub *rs = p->user;
    eddy_error e;
    if (eddy__enlist_feed(&rs->enlist, p->seq, rs->sub, st, err, p->replies, p->cmds.n, &st, &e))
        eddy__rbus_sub_registered(bus, rs, st, st == EDDY_OK ? NULL : &e);
}

eddy_status eddy__rctl_register(eddy_rbus *bus, rsub *rs) {
    rpub *p = eddy__rpub_new(registered, rs);
    if (!p)
        return EDDY_ERR_NOMEM;
    eddy_status st =
        eddy__enlist_begin(&rs->enlist, bus->ctl->inbox, rs->sub, eddy_now_ms(), &p->cmds, &p->seq);
    if (st == EDDY_OK)
        st = eddy__rpub_submit(bus, p);
    if (st != EDDY_OK) {
        eddy__rpub_free(p);
        eddy__enlist_drop(&rs->enlist); /* the caller fails the subscription */
    }
    return st;
}

/* ---- interface --------------------------------------------------------------------------- */

/* ---- the way out: the leave, and a random instance's fanout groups ------------------------- */

/* The core's stop flow (stop_flow.h) on the publishing connection: each step one op sending
 * the flow's commands, counted in bus->leaving, so a later activation's control loop waits for
 * all of them. The flow is its ops' until it ends. */

static void stop_step(eddy_rbus *bus, rpub *p, eddy_status st, const eddy_error *err);

/* Sends the flow's step, or frees the flow once it is done. */
static void stop_send(eddy_rbus *bus, eddy__stop_flow *f) {
    bool closing = bus->pub_close_idle; /* a submit clears it: the stop's connection still closes */
    while (f->step != EDDY__STOP_DONE) {
        rpub *p = eddy__rpub_new(stop_step, f);
        if (p && (p->ext = &f->cmds) && eddy__rpub_reserve(p, f->cmds.n) == EDDY_OK &&
            eddy__rpub_submit(bus, p) == EDDY_OK) {
            bus->leaving++;
            if (closing)
                eddy__rpub_close_when_idle(bus);
            return;
        }
        eddy__rpub_free(p);
        eddy__stop_flow_feed(f, EDDY_ERR_NOMEM, NULL, NULL, bus->core.all.v, bus->core.all.n);
    }
    eddy__stop_flow_reset(f);
    free(f);
}

static void stop_step(eddy_rbus *bus, rpub *p, eddy_status st, const eddy_error *err) {
    eddy__stop_flow *f = p->user;
    eddy__stop_flow_feed(f, st, p->replies, err, bus->core.all.v, bus->core.all.n);
    /* Started again meanwhile: the new activation uses the same groups. */
    if (bus->started || bus->freeing)
        eddy__stop_flow_reset(f);
    stop_send(bus, f); /* before leave_done: a later loop waits for the next step too */
    leave_done(bus);
}

eddy_status eddy_rbus_retention_stats(eddy_rbus *bus, eddy_retention_stats *out) {
    return bus ? eddy__bus_retention_stats(&bus->core.retention, out) : EDDY_ERR_INVALID_ARGUMENT;
}

eddy_status eddy_rbus_connection_stats(eddy_rbus *bus, eddy_connection_stats *out) {
    return bus ? eddy__bus_connection_stats(bus->s.conn_state, out) : EDDY_ERR_INVALID_ARGUMENT;
}

eddy_status eddy__rctl_start(eddy_rbus *bus) {
    rctl *c = calloc(1, sizeof(*c));
    if (!c)
        return EDDY_ERR_NOMEM;
    if (!(c->inbox =
              eddy__inbox_new(&bus->s, bus->core.requests, &bus->core.retention, eddy_now_ms()))) {
        free(c);
        return EDDY_ERR_NOMEM;
    }
    c->bus = bus;
    eddy__rround_init(&c->r, bus, &ctl_round_ops, c, "control connection", NULL);
    c->next = bus->ctls;
    bus->ctls = c;
    bus->ctl = c;
    ctl_step(c);
    return EDDY_OK;
}

void eddy__rctl_stop(eddy_rbus *bus) {
    rctl *c = bus->ctl;
    if (!c)
        return;
    bus->ctl = NULL;
    eddy__rround_kill(&c->r);
    /* Leave the registry first thing on the publishing connection, so requesters see "no
     * responders" rather than wait, and delete the reply stream; then the fanout groups. */
    eddy__stop_flow *f = malloc(sizeof(*f));
    if (!f) {
        eddy__bus_core_left(&bus->s, EDDY_ERR_NOMEM, NULL);
        return;
    }
    eddy__stop_flow_begin(f, &bus->s, c->inbox, bus->core.all.v, bus->core.all.n);
    stop_send(bus, f);
    eddy__rpub_flush(bus);
}

bool eddy__rctl_ready(const rctl *c) { return c->ready; }
const char *eddy__rctl_inbox_key(const rctl *c) { return eddy__inbox_key(c->inbox); }

static void rctl_free(rctl *c) {
    eddy__rround_free(&c->r);
    eddy__inbox_free(c->inbox);
    free(c->subs);
    free(c);
}

void eddy__rctl_reap(eddy_rbus *bus) {
    for (rctl **p = &bus->ctls; *p;) {
        rctl *c = *p;
        if (c->r.state == R_DEAD && c != bus->ctl) {
            *p = c->next;
            rctl_free(c);
        } else {
            p = &c->next;
        }
    }
}

void eddy__rctl_free_all(eddy_rbus *bus) {
    while (bus->ctls) {
        rctl *c = bus->ctls;
        bus->ctls = c->next;
        rctl_free(c);
    }
    bus->ctl = NULL;
}
