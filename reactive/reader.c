/* SPDX-License-Identifier: BSD-3-Clause */
/* One subscription's reading on the loop: an activation (internal.h) drives the core
 * consumer exactly as the blocking reader does (plan, send the pipeline, feed, hand the
 * deliveries to the handler, plan again at once), with timers where the blocking reader
 * sleeps and callbacks where it waits. The core decides what may be read while deliveries are
 * outstanding (a handler returned EDDY_PENDING); when it has nothing to send, the activation
 * idles, and a settle that completes the round ends the idle wait (act_kick).
 *
 * Invariants:
 * - The consumer plans only when no pipeline is out. A delivery handed out finds its activation
 *   through `frontend`; those whose handler returned EDDY_PENDING are listed in `pending` until
 *   their finish (the core counts what is outstanding).
 * - No handler is called once stop (or free) was called. Deliveries read but not handed out by
 *   then are dropped: AtLeastOnce entries stay pending and come back; AtMostOnce entries were
 *   acknowledged by their read (NOACK) and are gone, as at-most-once allows.
 * - A stop loses no settled acknowledgement, and waits for no blocking read. The core plans a
 *   blocking read behind acknowledgements, commits and replies (never behind dead letters): a
 *   stop during such a round waits for the replies of the commands before the read only (they
 *   come at once), and the read counts as timed out (nil) so that they are fed. A stop during any other round
 *   waits for its replies and feeds them. Deliveries settled after the stop (their handler
 *   returned EDDY_PENDING) are flushed on the same connection before the activation dies; so a
 *   blocking read sent while deliveries were outstanding (`overlapped`: the core keeps it
 *   short) is left to end by itself, since a delivery may settle during it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus/delivery.h"
#include "bus/wakeup.h"
#include "error.h"
#include "internal.h"
#include "link/redis.h"
#include "share.h"
#include "timing.h"
#include "util/reply.h"

static void act_step(void *owner);

/* ---- bookkeeping ------------------------------------------------------------------------- */

/* Deliveries whose handler returned EDDY_PENDING, listed (through their front-end links) until
 * their finish, so that a bus freed under them finds them (orphan). */
static void pending_add(ract *act, eddy_delivery *d) {
    d->fe_prev = NULL;
    d->fe_next = act->pending;
    if (act->pending)
        act->pending->fe_prev = d;
    act->pending = d;
}

static void pending_remove(ract *act, eddy_delivery *d) {
    if (d->fe_prev)
        d->fe_prev->fe_next = d->fe_next;
    else if (act->pending == d)
        act->pending = d->fe_next;
    else
        return; /* not listed: finished from inside its handler */
    if (d->fe_next)
        d->fe_next->fe_prev = d->fe_prev;
}

static void act_kill(ract *act) {
    eddy__rround_kill(&act->r);
    if (act->rs->act == act)
        act->rs->act = NULL;
    eddy__consumer_drop_all(act->consumer, &act->out);
}

/* ---- the connection ------------------------------------------------------------------ */

/* The connection is gone: the consumer starts over on a new one, as the core prescribes. A
 * stopping activation does not reconnect: it dies, or waits for its handlers (their
 * acknowledgements have no connection left). While a round is handed out (R_HELD) it
 * reconnects right after (act_step). */
static bool act_lost(void *owner) {
    ract *act = owner;
    eddy__consumer_lost(act->consumer, &act->out);
    if (!act->stopping)
        return true;
    if (!eddy__consumer_outstanding(act->consumer))
        act_kill(act);
    else
        act->r.state = R_HELD;
    return false;
}

/* ---- rounds ------------------------------------------------------------------------------ */

/* Out of memory, nothing is sent: planning again re-sends what this plan held. */
static void act_send(ract *act) {
    act->overlapped = eddy__consumer_outstanding(act->consumer) > 0;
    act->cut = false;
    eddy__rround_send(&act->r);
}

/* Stopping: send what was settled, then die once nothing is pending. */
static void act_step_stopping(ract *act) {
    rround *r = &act->r;
    if (eddy__rround_up(r) &&
        eddy__consumer_next(act->consumer, eddy__mono_ms(), true, &r->plan) < 0) {
        act_send(act);
        if (r->state == R_ROUND) /* on the wire before stop returns */
            eddy__rround_drain(r);
        return;
    }
    if (eddy__consumer_outstanding(act->consumer) > 0) {
        r->state = R_HELD;
        return;
    }
    act_kill(act);
}

/* Plans and sends the next round. No pipeline is out; deliveries may be outstanding (the core
 * decides what may be read beside them). */
static void act_step(void *owner) {
    ract *act = owner;
    rround *r = &act->r;
    if (act->stopping) {
        act_step_stopping(act);
        return;
    }
    if (act->bus->freeing)
        return; /* the bus kills this activation before the current callback returns */
    if (!eddy__rround_linked(r)) {
        eddy__rround_connect(r);
        return;
    }
    long long wait = eddy__consumer_next(act->consumer, eddy__mono_ms(), false, &r->plan);
    if (r->share) /* this plan may have watched a stream */
        eddy__rwake_watched(act->bus->wake, eddy__consumer_wakeup_replan(act->consumer));
    if (wait >= 0)
        eddy__rround_wait(r, wait, eddy__consumer_gives_back(act->consumer, wait));
    else
        act_send(act);
}

/* A delivery settled outside dispatch: an idle activation plans again now when the core asks
 * for it (wake: the round is settled, there is room to read and acknowledgements to send;
 * otherwise its idle wait is short); a stopping one flushes it. A round that is out picks it
 * up when it ends (the core keeps its blocking read short while deliveries are outstanding). */
static void act_kick(ract *act, bool wake) {
    if (act->r.state == R_IDLE && !act->stopping && wake) {
        ev_timer_stop(act->bus->loop, &act->r.timer);
        act_step(act);
    } else if (act->r.state == R_HELD &&
               (act->stopping || !eddy__consumer_outstanding(act->consumer))) {
        act_step(act);
    }
}

/* Reached only while the delivery is outstanding: settling it sets its finish to the core's
 * catch of a second finish (eddy__consumer_finished), so a second eddy_delivery_finish never
 * gets here to read an activation that may be gone by now. */
static void act_finish(eddy_delivery *d, eddy_status st, eddy_event *reply) {
    ract *act = d->frontend;
    eddy_rbus *bus = act->bus;
    eddy__rbus_enter(bus);
    pending_remove(act, d);
    bool wake = eddy__consumer_settle(act->consumer, d, st, reply);
    if (!act->dispatching)
        act_kick(act, wake);
    eddy__rbus_leave(bus);
}

/* Settles, as one run, the deliveries whose handlers returned during dispatch. */
static void settle_run(ract *act, eddy__run *run) {
    if (run->n == 0)
        return;
    eddy__consumer_settle_run(act->consumer, run->v, run->n); /* the caller plans again anyway */
    run->n = 0;
}

/* Hands each delivery of the round to the handler (a finish from inside the handler finds the
 * activation through `frontend`); those that return a result settle in runs. */
static void dispatch(ract *act) {
    eddy_rbus *bus = act->bus;
    eddy__run run;
    run.n = 0;
    for (size_t i = 0; i < act->out.n; i++) {
        eddy_delivery *d = act->out.v[i];
        act->out.v[i] = NULL;
        if (act->stopping || bus->freeing) {
            eddy__consumer_drop(act->consumer, d);
            continue;
        }
        d->frontend = act;
        d->finish = act_finish;
        eddy__ran ran = eddy__consumer_run(act->consumer, &run, d);
        if (ran == EDDY__RAN_PENDING && !eddy__consumer_finished(d))
            pending_add(act, d); /* its finish settles it later */
        else if (ran == EDDY__RAN_FULL)
            settle_run(act, &run);
    }
    settle_run(act, &run);
    act->out.n = 0;
}

/* The bus's discovery found subjects: the other activations that idle take them now (one in a
 * blocking read takes them when it ends). */
static void wake_others(eddy_rbus *bus, ract *self) {
    for (ract *a = bus->acts; a; a = a->next)
        if (a != self && !a->rs->sub->literal && a->rs->act == a)
            eddy__ract_wake(a, EDDY__WAKE_IDLE);
}

/* Every reply of the round is in (the last one lent by the connection). */
static void act_done(void *owner) {
    ract *act = owner;
    eddy_rbus *bus = act->bus;
    rround *r = &act->r;
    unsigned news;
    eddy_status st = eddy__consumer_fed(act->consumer, eddy__mono_ms(), eddy_now_ms(), &r->plan,
                                        r->replies, r->plan.cmds.n, bus->freeing, &act->out, &news);
    eddy__rround_replies_done(r);
    if (st != EDDY_OK) {
        eddy_error err;
        eddy__fail(&err, st, "unexpected replies");
        eddy__rround_lose(r, &err);
        return;
    }
    r->state = R_HELD;
    act->dispatching = true; /* a stop or finish from a callback below only marks */
    if (news & EDDY__FED_READY) {
        act->ready = true;
        eddy__rround_stop_deadline(r);
        eddy__rbus_act_ready(bus, act, NULL);
    }
    dispatch(act); /* (none when stopping) */
    act->dispatching = false;
    if (r->state == R_HELD)
        act_step(act); /* the core decides what may be read while deliveries are outstanding */
    if (news & EDDY__FED_FOUND)
        wake_others(bus, act);
}

/* Every reply but the round's blocking read is in: the read counts as timed out (nil), so the
 * other replies are still fed (dead letters counted, acknowledgements confirmed). What the
 * read would have delivered is not handed out. */
static void end_read_as_nil(ract *act) {
    rround *r = &act->r;
    size_t n = r->plan.cmds.n;
    redisReply *nil = eddy__reply_nil();
    unsigned news;
    if (nil) {
        r->replies[n - 1] = nil;
        r->got = n;
        if (eddy__consumer_fed(act->consumer, eddy__mono_ms(), eddy_now_ms(), &r->plan, r->replies,
                               n, true, &act->out, &news) != EDDY_OK)
            eddy__log(&act->bus->s.log, EDDY_LOG_WARN, "subscription '%s': unexpected replies",
                      act->rs->sub->name);
        else if (news & EDDY__FED_FOUND)
            wake_others(act->bus, act);
    }
    eddy__rround_replies_done(r);
}

/* Stopped while the round's blocking read waits, with every other reply in: the connection
 * goes at once. */
static void end_stopped_round(ract *act) {
    end_read_as_nil(act);
    act_kill(act);
}

/* A pause cut the round's blocking read short, with every other reply in: the connection
 * goes, and a new one is opened at once (no backoff: nothing failed). What the read took
 * stays pending (AtLeastOnce only: the core asks for no cut otherwise) and is read again from
 * the history on resume. */
static void cut_round(ract *act) {
    act->cut = false;
    end_read_as_nil(act);
    eddy__rconn_close(act->r.conn);
    act->r.conn = NULL;
    eddy__consumer_reset(act->consumer);
    eddy__rround_connect(&act->r);
}

/* True when only the round's blocking read is still out, and the stop may end it. */
static bool only_read_left(const ract *act) {
    const rround *r = &act->r;
    return r->state == R_ROUND && r->got + 1 == r->plan.cmds.n;
}

/* A reply before the round's last one is in. */
static void act_kept(void *owner) {
    ract *act = owner;
    if (!only_read_left(act))
        return;
    if (act->stopping && act->r.plan.block_ms >= 0 && !act->overlapped)
        end_stopped_round(act);
    else if (act->cut && act->r.plan.live_read && act->r.conn) /* never a shared connection */
        cut_round(act);
}

static void act_late(void *owner) {
    ract *act = owner;
    eddy_error err;
    eddy__consumer_late_error(act->consumer, &act->r.last_err, &err);
    eddy__rbus_act_ready(act->bus, act, &err);
}

static const rround_ops act_round_ops = {act_step, act_kept, act_done, act_lost, act_late};

/* ---- interface ------------------------------------------------------------------------------ */

/* A bus with share_reads_from subscriptions or more shares its reads' connections: the
 * wake-up and the shared connections are made once, with the first activation that shares
 * (bus->wake then set). Activations started before stay on connections of their own. */
static eddy_status share_reads(eddy_rbus *bus) {
    if (bus->wake || !eddy__wakeup_wanted(bus->s.share_reads_from, bus->nsubs))
        return EDDY_OK;
    for (size_t i = 0; i < EDDY__RSHARES; i++)
        if (!bus->shares[i] && !(bus->shares[i] = eddy__rshare_new(bus)))
            return EDDY_ERR_NOMEM;
    return (bus->wake = eddy__rwake_new(bus)) ? EDDY_OK : EDDY_ERR_NOMEM;
}

eddy_status eddy__ract_start(rsub *rs) {
    eddy_rbus *bus = rs->bus;
    ract *act = calloc(1, sizeof(*act));
    if (!act)
        return EDDY_ERR_NOMEM;
    if (!(act->consumer = eddy__consumer_new(&bus->s, rs->sub))) {
        free(act);
        return EDDY_ERR_NOMEM;
    }
    eddy__consumer_share_discovery(act->consumer, bus->discovery);
    act->bus = bus;
    act->rs = rs;
    eddy__rround_init(&act->r, bus, &act_round_ops, act, "subscription", rs->sub->name);
    if (share_reads(bus) != EDDY_OK) {
        eddy__rround_free(&act->r);
        eddy__consumer_free(act->consumer);
        free(act);
        return EDDY_ERR_NOMEM;
    }
    if (bus->wake) {
        eddy__consumer_share_wakeup(act->consumer, eddy__rwake_core(bus->wake), act);
        eddy__rround_share(&act->r, bus->shares[bus->next_share++ % EDDY__RSHARES]);
        eddy__rwake_start(bus->wake);
    }
    act->next = bus->acts;
    bus->acts = act;
    rs->act = act;
    eddy__rround_connect(&act->r);
    return EDDY_OK;
}

void eddy__ract_stop(ract *act) {
    rround *r = &act->r;
    if (r->state == R_DEAD || act->stopping)
        return;
    act->stopping = true;
    eddy__consumer_stop(act->consumer);
    eddy__rround_stop_deadline(r);
    if (act->rs->act == act)
        act->rs->act = NULL;
    if (act->dispatching)
        return; /* act_done takes it from here */
    switch (r->state) {
    case R_CONNECTING:
    case R_BACKOFF:
        /* With deliveries outstanding it goes on connecting, to send their acknowledgements
         * (act_step_stopping), and so it does with a round that waits for its connection
         * (round.h: planned to block while on a shared one); a failure ends it (act_lost). */
        if (!eddy__consumer_outstanding(act->consumer) && !r->send_when_up)
            act_kill(act);
        break;
    case R_IDLE:
        ev_timer_stop(act->bus->loop, &r->timer);
        act_step(act); /* flushes what is settled, waits for the rest, or dies */
        break;
    case R_HELD:
        act_step(act); /* flushes what is settled, or dies */
        break;
    case R_ROUND:
        /* Replies that already arrived count (they may complete the round right here). */
        eddy__rround_drain(r);
        if (only_read_left(act) && r->plan.block_ms >= 0 && !act->overlapped)
            end_stopped_round(act);
        break;
    case R_DEAD:
        break;
    }
}

static void killed(eddy_rbus *bus, rpub *p, eddy_status st, const eddy_error *err) {
    (void)p;
    if (st != EDDY_OK && st != EDDY_ERR_CLOSED)
        eddy__log(&bus->s.log, EDDY_LOG_DEBUG, "pause: CLIENT KILL failed: %s",
                  err ? err->detail : eddy_status_str(st));
}

/* Has the server drop the activation's connection, through the publishing connection: it is
 * done there before anything this bus publishes next, so the cut read takes none of it (our own
 * close reaches the server in its own time). Best effort: the close follows anyway. */
static void kill_on_server(ract *act) {
    long long id = act->r.conn ? eddy__rconn_client_id(act->r.conn) : -1;
    if (id < 0)
        return;
    rpub *p = eddy__rpub_new(killed, NULL);
    if (p)
        eddy__client_kill_cmd(&p->cmds, id);
    if (p &&
        (eddy__cmdlist_status(&p->cmds) != EDDY_OK || eddy__rpub_submit(act->bus, p) != EDDY_OK))
        eddy__rpub_free(p);
}

void eddy__ract_wake(ract *act, eddy__wake how) {
    rround *r = &act->r;
    if (how == EDDY__WAKE_NONE || act->stopping || r->state == R_DEAD || act->bus->freeing)
        return;
    if (r->state == R_IDLE) {
        ev_timer_stop(act->bus->loop, &r->timer);
        act_step(act);
    } else if (how == EDDY__WAKE_READ && r->state == R_ROUND && r->plan.live_read && r->conn) {
        /* (a read on a shared connection does not block: it ends by itself) */
        act->cut = true;
        eddy__rround_drain(r); /* replies that already arrived count */
        if (act->cut && only_read_left(act)) {
            kill_on_server(act);
            cut_round(act);
        }
    }
    /* Otherwise the activation plans again soon (after its round, its handlers or its
     * reconnect), and the core decides from the new state then. */
}

static void orphan_finish(eddy_delivery *d, eddy_status st, eddy_event *reply) {
    (void)st;
    eddy_event_free(reply);
    free(d->frontend);
    eddy__delivery_free(d);
}

/* The bus is going away under a delivery whose handler returned EDDY_PENDING: the delivery
 * keeps working (its names are copied off the bus) and its finish only releases it. */
static void orphan(eddy_delivery *d) {
    size_t ls = strlen(d->subject) + 1, ln = strlen(d->sub_name) + 1;
    char *names = malloc(ls + ln);
    if (names) {
        memcpy(names, d->subject, ls);
        memcpy(names + ls, d->sub_name, ln);
        d->subject = names;
        d->sub_name = names + ls;
    } else {
        d->subject = d->sub_name = "";
    }
    d->frontend = names;
    d->consumer = NULL;
    d->finish = orphan_finish;
}

void eddy__ract_free(ract *act) {
    if (act->r.state != R_DEAD)
        act_kill(act);
    while (act->pending) {
        eddy_delivery *d = act->pending;
        act->pending = d->fe_next;
        orphan(d);
    }
    eddy__consumer_free(act->consumer);
    eddy__rround_free(&act->r);
    eddy__delivery_list_free(&act->out);
    free(act);
}
