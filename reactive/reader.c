/* One subscription's reading on the loop: an activation (internal.h) drives the core
 * consumer exactly as the blocking reader does (plan, send the pipeline, feed, hand the
 * deliveries to the handler, plan again at once), with timers where the blocking reader
 * sleeps and callbacks where it waits. The core decides what may be read while deliveries are
 * outstanding (a handler returned EDDY_PENDING); when it has nothing to send, the activation
 * idles, and a settle that completes the round ends the idle wait (act_kick).
 *
 * Invariants:
 * - The consumer plans only when no pipeline is out. Deliveries handed out and not settled are
 *   tracked in `slots` (a list; settled slots are kept as spares for the next), which is also how
 *   a delivery finds its activation.
 * - No handler is called once stop (or free) was called. Deliveries read but not handed out by
 *   then are dropped: AtLeastOnce entries stay pending and come back; AtMostOnce entries were
 *   acknowledged by their read (NOACK) and are gone, as at-most-once allows.
 * - A stop loses no settled acknowledgement, and waits for no blocking read. The core never
 *   plans a blocking read behind acknowledgements or dead letters; still, should a blocking
 *   round carry other commands, a stop waits for their replies only (they come at once), and
 *   the read counts as timed out (nil) so that they are fed. A stop during any other round
 *   waits for its replies and feeds them. Deliveries settled after the stop (their handler
 *   returned EDDY_PENDING) are flushed on the same connection before the activation dies; so a
 *   blocking read sent while deliveries were outstanding (`overlapped`: the core keeps it
 *   short) is left to end by itself, since a delivery may settle during it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backoff.h"
#include "conn_state.h"
#include "delivery.h"
#include "error.h"
#include "internal.h"
#include "redis.h"
#include "reply.h"
#include "timing.h"

static void act_step(ract *act);

/* ---- bookkeeping ------------------------------------------------------------------------- */

static void free_replies(ract *act) {
    for (size_t i = 0; i < act->got; i++)
        if (act->replies[i]) {
            freeReplyObject(act->replies[i]);
            act->replies[i] = NULL;
        }
    act->got = 0;
}

/* Deliveries the consumer produced that no handler will see. */
static void abandon_out(ract *act) {
    for (size_t i = 0; i < act->out.n; i++)
        eddy__consumer_drop(act->consumer, act->out.v[i]);
    act->out.n = 0;
}

/* Slots come from a short list of spare ones: no allocation per delivery once it runs. */
#define SPARE_SLOTS_MAX 256

static rslot *slot_new(ract *act) {
    rslot *sl = act->spare_slots;
    if (sl) {
        act->spare_slots = sl->next;
        act->nspare--;
        return sl;
    }
    return malloc(sizeof(*sl));
}

static void slot_free(ract *act, rslot *sl) {
    if (sl->prev)
        sl->prev->next = sl->next;
    else
        act->slots = sl->next;
    if (sl->next)
        sl->next->prev = sl->prev;
    if (act->nspare < SPARE_SLOTS_MAX) {
        sl->next = act->spare_slots;
        act->spare_slots = sl;
        act->nspare++;
    } else {
        free(sl);
    }
}

/* True when the core asks an idle activation to plan again now. */
static bool settle(ract *act, rslot *sl, eddy_status st, eddy_event *reply) {
    eddy_delivery *d = sl->d;
    sl->d = NULL;
    act->unsettled--;
    bool wake = eddy__consumer_settle(act->consumer, d, st, reply);
    if (!sl->running)
        slot_free(act, sl);
    return wake;
}

static void act_kill(ract *act) {
    act->state = A_DEAD;
    ev_timer_stop(act->bus->loop, &act->timer);
    ev_timer_stop(act->bus->loop, &act->ready_timer);
    rconn_close(act->conn);
    act->conn = NULL;
    if (act->rs->act == act)
        act->rs->act = NULL;
    free_replies(act);
    abandon_out(act);
}

/* ---- connecting ------------------------------------------------------------------------ */

static void act_up(void *owner);
static void act_reply(void *owner, void *priv, redisReply *r);
static void act_down(void *owner, eddy_status st, const eddy_error *err);
static const rconn_ops act_ops = {act_up, act_reply, act_down};

static void act_backoff(ract *act) {
    const eddy__settings *s = &act->bus->s;
    act->state = A_BACKOFF;
    rbus_timer_after(act->bus, &act->timer,
                     eddy__backoff_delay_ms(act->attempt ? act->attempt - 1 : 0,
                                            s->reconnect_min_ms, s->reconnect_max_ms, &act->seed));
}

static void came_up(ract *act) {
    act->attempt = 0;
    act_step(act);
}

static void act_connect(ract *act) {
    act->state = A_CONNECTING;
    if (rconn_open(act->bus->loop, &act->bus->s, &act_ops, act, &act->conn) != EDDY_OK) {
        act->conn = NULL;
        act->attempt++;
        eddy__fail(&act->last_err, EDDY_ERR_NOMEM, "out of memory connecting");
        act_backoff(act);
        return;
    }
    if (rconn_is_up(act->conn)) /* memory://: nothing to wait for */
        came_up(act);
}

/* The connection is gone (or unusable): start over on a new one, as the core prescribes. */
static void act_lost(ract *act, const eddy_error *err) {
    eddy_rbus *bus = act->bus;
    bool was_connecting = act->state == A_CONNECTING;
    free_replies(act);
    rconn_close(act->conn);
    act->conn = NULL;
    eddy__consumer_reset(act->consumer);
    act->last_err = *err;
    if (act->stopping) {
        if (act->unsettled == 0)
            act_kill(act);
        else
            act->state = A_HANDLERS; /* their acknowledgements have no connection left */
        return;
    }
    /* The bus's tracker logs the state this makes, once. */
    eddy__log(&bus->s.log, EDDY_LOG_DEBUG, "subscription '%s': %s%s", act->rs->sub->name,
              err->detail, was_connecting ? "" : "; reconnecting");
    if (was_connecting)
        act->attempt = eddy__conn_next_attempt(act->attempt, err->status);
    if (was_connecting && eddy__conn_refused(err->status) && ev_is_active(&act->ready_timer)) {
        ev_timer_stop(bus->loop, &act->ready_timer); /* a start need not wait it out */
        rbus_act_ready(bus, act, err);
        if (act->state == A_DEAD)
            return;
    }
    if (act->state == A_HANDLERS)
        return; /* handing out a round: reconnects right after (act_step) */
    act_backoff(act);
}

static void act_up(void *owner) {
    ract *act = owner;
    eddy_rbus *bus = act->bus;
    rbus_enter(bus);
    if (act->state == A_CONNECTING)
        came_up(act);
    rbus_leave(bus);
}

static void act_down(void *owner, eddy_status st, const eddy_error *err) {
    ract *act = owner;
    eddy_rbus *bus = act->bus;
    rbus_enter(bus);
    if (act->state != A_DEAD)
        act_lost(act, err);
    rbus_leave(bus);
}

/* ---- rounds ------------------------------------------------------------------------------ */

static void act_idle(ract *act, long long ms) {
    act->state = A_IDLE;
    rbus_timer_after(act->bus, &act->timer, ms);
}

static void act_send(ract *act) {
    act->overlapped = act->unsettled > 0;
    size_t n = act->plan.cmds.n;
    if (n > act->replies_cap) {
        redisReply **r = realloc(act->replies, n * sizeof(*r));
        if (!r) { /* nothing was sent; planning again re-sends what this plan held */
            act_idle(act, EDDY__NOMEM_RETRY_MS);
            return;
        }
        act->replies = r;
        act->replies_cap = n;
    }
    memset(act->replies, 0, n * sizeof(*act->replies));
    act->got = 0;
    act->cut = false;
    act->state = A_ROUND;
    for (size_t i = 0; i < n; i++)
        if (!rconn_send(act->conn, &act->plan.cmds.cmds[i], i + 1 == n ? act->plan.block_ms : -1,
                        NULL))
            return; /* down follows from the loop */
}

/* Stopping: send what was settled, then die once nothing is pending. */
static void act_step_stopping(ract *act) {
    if (act->conn && rconn_is_up(act->conn)) {
        eddy__plan_reset(&act->plan);
        if (eddy__consumer_plan_flush(act->consumer, rbus_now_ms(), &act->plan) == EDDY_OK &&
            act->plan.cmds.n > 0) {
            act_send(act);
            if (act->state == A_ROUND) /* on the wire before stop returns */
                rconn_drain(act->conn);
            return;
        }
    }
    if (act->unsettled > 0) {
        act->state = A_HANDLERS;
        return;
    }
    act_kill(act);
}

/* Plans and sends the next round. No pipeline is out; deliveries may be outstanding (the core
 * decides what may be read beside them). */
static void act_step(ract *act) {
    if (act->stopping) {
        act_step_stopping(act);
        return;
    }
    if (act->bus->freeing)
        return; /* the bus kills this activation before the current callback returns */
    if (!act->conn) {
        act_connect(act);
        return;
    }
    eddy__plan_reset(&act->plan);
    if (eddy__consumer_plan(act->consumer, rbus_now_ms(), &act->plan) != EDDY_OK) {
        act_idle(act, EDDY__NOMEM_RETRY_MS); /* out of memory: nothing was sent */
        return;
    }
    if (act->plan.cmds.n == 0) {
        act_idle(act, act->plan.idle_ms);
        return;
    }
    act_send(act);
}

/* A delivery settled outside dispatch: an idle activation plans again now when the core asks
 * for it (wake: the round is settled, there is room to read and acknowledgements to send;
 * otherwise its idle wait is short); a stopping one flushes it. A round that is out picks it
 * up when it ends (the core keeps its blocking read short while deliveries are outstanding). */
static void act_kick(ract *act, bool wake) {
    if (act->state == A_IDLE && !act->stopping && wake) {
        ev_timer_stop(act->bus->loop, &act->timer);
        act_step(act);
    } else if (act->state == A_HANDLERS && (act->unsettled == 0 || act->stopping)) {
        act_step(act);
    }
}

/* Reached only while the delivery is outstanding (its slot holds it): settling it sets its
 * finish to the core's catch of a second finish (eddy__consumer_finished), so a second
 * eddy_delivery_finish never gets here to read a slot that may be another delivery's now. */
static void act_finish(eddy_delivery *d, eddy_status st, eddy_event *reply) {
    rslot *sl = d->frontend;
    ract *act = sl->act;
    eddy_rbus *bus = act->bus;
    rbus_enter(bus);
    bool wake = settle(act, sl, st == EDDY_PENDING ? EDDY_ERR_HANDLER_FAILED : st, reply);
    if (!act->dispatching)
        act_kick(act, wake);
    rbus_leave(bus);
}

/* Settles, as one run, the deliveries whose handlers returned during dispatch. */
#define SETTLE_RUN 64

static void settle_run(ract *act, eddy__settlement *run, size_t *n) {
    if (*n == 0)
        return;
    act->unsettled -= *n;
    eddy__consumer_settle_run(act->consumer, run, *n); /* the caller plans again anyway */
    *n = 0;
}

/* Hands each delivery of the round to the handler, each with a slot of its own (a finish from
 * inside the handler finds it there); those that return a result settle in runs. */
static void dispatch(ract *act) {
    eddy_rbus *bus = act->bus;
    eddy__sub *sub = act->rs->sub;
    eddy__settlement run[SETTLE_RUN];
    size_t nrun = 0;
    for (size_t i = 0; i < act->out.n; i++) {
        eddy_delivery *d = act->out.v[i];
        act->out.v[i] = NULL;
        if (act->stopping || bus->freeing) {
            eddy__consumer_drop(act->consumer, d);
            continue;
        }
        rslot *sl = slot_new(act);
        if (!sl) {
            eddy__log(&bus->s.log, EDDY_LOG_WARN,
                      "subscription '%s': out of memory; a delivery dropped (AtLeastOnce: it "
                      "comes back)",
                      sub->name);
            eddy__consumer_drop(act->consumer, d);
            continue;
        }
        *sl = (rslot){.act = act, .next = act->slots, .running = true, .d = d};
        if (act->slots)
            act->slots->prev = sl;
        act->slots = sl;
        act->unsettled++;
        d->frontend = sl;
        d->finish = act_finish;
        eddy_event *reply = NULL;
        eddy_status st = eddy__sub_run(sub, d, &reply);
        sl->running = false;
        /* A handler that finished its delivery itself and still returned a result: the
         * delivery is settled already, the result is ignored. */
        if (!sl->d) {
            eddy_event_free(reply);
            slot_free(act, sl);
        } else if (st != EDDY_PENDING) {
            sl->d = NULL;
            slot_free(act, sl);
            run[nrun++] = (eddy__settlement){.d = d, .st = st, .reply = reply, .reuse = true};
            if (nrun == SETTLE_RUN)
                settle_run(act, run, &nrun);
        } else {
            eddy_event_free(reply);
        }
    }
    settle_run(act, run, &nrun);
    act->out.n = 0;
}

/* The bus's discovery found subjects: the other activations that idle take them now (one in a
 * blocking read takes them when it ends). */
static void wake_others(eddy_rbus *bus, ract *self) {
    for (ract *a = bus->acts; a; a = a->next)
        if (a != self && !a->rs->sub->literal && a->rs->act == a)
            ract_wake(a, EDDY__WAKE_IDLE);
}

/* Every reply of the round is in (the last one borrowed). */
static void round_done(ract *act) {
    eddy_rbus *bus = act->bus;
    size_t n = act->plan.cmds.n;
    eddy_status st = eddy__consumer_feed(act->consumer, rbus_now_ms(), eddy_now_ms(), &act->plan,
                                         act->replies, n, &act->out);
    act->replies[n - 1] = NULL;
    free_replies(act);
    if (st != EDDY_OK) {
        abandon_out(act);
        eddy_error err;
        eddy__fail(&err, st, "unexpected replies");
        act_lost(act, &err);
        return;
    }
    act->state = A_HANDLERS;
    act->dispatching = true; /* a stop or finish from a callback below only marks */
    if (!act->stopping && !act->ready && eddy__consumer_ready(act->consumer)) {
        act->ready = true;
        ev_timer_stop(bus->loop, &act->ready_timer);
        rbus_act_ready(bus, act, NULL);
    }
    if (act->stopping || bus->freeing)
        abandon_out(act);
    else
        dispatch(act);
    act->dispatching = false;
    bool found = eddy__consumer_found_subjects(act->consumer);
    if (act->state == A_HANDLERS)
        act_step(act); /* the core decides what may be read while deliveries are outstanding */
    if (found)
        wake_others(bus, act);
}

/* Stopped while the round's blocking read waits, with every other reply in: the read counts
 * as timed out, so the other replies are still fed (dead letters counted, acknowledgements
 * confirmed), and the connection goes at once. */
static void end_stopped_round(ract *act) {
    size_t n = act->plan.cmds.n;
    redisReply *nil = eddy__reply_nil();
    if (nil) {
        act->replies[n - 1] = nil;
        act->got = n;
        if (eddy__consumer_feed(act->consumer, rbus_now_ms(), eddy_now_ms(), &act->plan,
                                act->replies, n, &act->out) != EDDY_OK)
            eddy__log(&act->bus->s.log, EDDY_LOG_WARN, "subscription '%s': unexpected replies",
                      act->rs->sub->name);
        abandon_out(act);
    }
    free_replies(act);
    act_kill(act);
}

/* A pause cut the round's blocking read short, with every other reply in: the read counts as
 * timed out (the other replies are fed), the connection goes, and a new one is opened at once
 * (no backoff: nothing failed). What the read took stays pending (AtLeastOnce only: the core
 * asks for no cut otherwise) and is read again from the history on resume. */
static void cut_round(ract *act) {
    size_t n = act->plan.cmds.n;
    act->cut = false;
    redisReply *nil = eddy__reply_nil();
    if (nil) {
        act->replies[n - 1] = nil;
        act->got = n;
        if (eddy__consumer_feed(act->consumer, rbus_now_ms(), eddy_now_ms(), &act->plan,
                                act->replies, n, &act->out) != EDDY_OK)
            eddy__log(&act->bus->s.log, EDDY_LOG_WARN, "subscription '%s': unexpected replies",
                      act->rs->sub->name);
        abandon_out(act);
    }
    free_replies(act);
    rconn_close(act->conn);
    act->conn = NULL;
    eddy__consumer_reset(act->consumer);
    act_connect(act);
}

static void act_reply(void *owner, void *priv, redisReply *r) {
    ract *act = owner;
    eddy_rbus *bus = act->bus;
    rbus_enter(bus);
    size_t n = act->plan.cmds.n;
    if (act->state == A_ROUND && act->got + 1 < n) {
        /* Replies before the last are needed together with it: keep them. */
        if (!(act->replies[act->got++] = rconn_keep(act->conn, r))) {
            eddy_error err;
            eddy__fail(&err, EDDY_ERR_NOMEM, "out of memory keeping a reply");
            act_lost(act, &err);
        } else if (act->stopping && act->plan.block_ms >= 0 && act->got + 1 == n &&
                   !act->overlapped) {
            end_stopped_round(act);
        } else if (act->cut && act->plan.live_read && act->got + 1 == n) {
            cut_round(act);
        }
    } else if (act->state == A_ROUND) {
        act->replies[act->got++] = r;
        round_done(act);
    }
    rbus_leave(bus);
}

/* ---- timers ------------------------------------------------------------------------------- */

static void act_on_timer(struct ev_loop *loop, ev_timer *w, int revents) {
    ract *act = w->data;
    eddy_rbus *bus = act->bus;
    rbus_enter(bus);
    if (act->state == A_BACKOFF)
        act_connect(act);
    else if (act->state == A_IDLE)
        act_step(act);
    rbus_leave(bus);
}

static void act_on_ready_timeout(struct ev_loop *loop, ev_timer *w, int revents) {
    ract *act = w->data;
    eddy_rbus *bus = act->bus;
    rbus_enter(bus);
    eddy_error err;
    if (act->last_err.detail[0])
        eddy__fail(&err, EDDY_ERR_IO, "subscription '%s' could not reach the backend: %s",
                   act->rs->sub->name, act->last_err.detail);
    else
        eddy__fail(&err, EDDY_ERR_IO, "subscription '%s' could not reach the backend",
                   act->rs->sub->name);
    rbus_act_ready(bus, act, &err);
    rbus_leave(bus);
}

/* ---- interface ------------------------------------------------------------------------------ */

eddy_status ract_start(rsub *rs) {
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
    eddy__plan_init(&act->plan);
    act->seed = (unsigned)((unsigned long long)rbus_now_ms() ^ (uintptr_t)act ^ (unsigned)getpid());
    ev_init(&act->timer, act_on_timer);
    act->timer.data = act;
    ev_init(&act->ready_timer, act_on_ready_timeout);
    act->ready_timer.data = act;
    act->next = bus->acts;
    bus->acts = act;
    rs->act = act;
    rbus_timer_after(bus, &act->ready_timer, eddy__ready_timeout_ms(&bus->s));
    act_connect(act);
    return EDDY_OK;
}

void ract_stop(ract *act) {
    if (act->state == A_DEAD || act->stopping)
        return;
    act->stopping = true;
    ev_timer_stop(act->bus->loop, &act->ready_timer);
    if (act->rs->act == act)
        act->rs->act = NULL;
    if (act->dispatching)
        return; /* round_done takes it from here */
    switch (act->state) {
    case A_CONNECTING:
    case A_BACKOFF:
        /* With deliveries outstanding it goes on connecting, to send their acknowledgements
         * (act_step_stopping); a failure ends it (act_lost). */
        if (act->unsettled == 0)
            act_kill(act);
        break;
    case A_IDLE:
        ev_timer_stop(act->bus->loop, &act->timer);
        act_step(act); /* flushes what is settled, waits for the rest, or dies */
        break;
    case A_HANDLERS:
        act_step(act); /* flushes what is settled, or dies */
        break;
    case A_ROUND:
        /* Replies that already arrived count (they may complete the round right here). */
        rconn_drain(act->conn);
        if (act->state == A_ROUND && act->plan.block_ms >= 0 && act->got + 1 == act->plan.cmds.n &&
            !act->overlapped)
            end_stopped_round(act);
        break;
    case A_DEAD:
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
    long long id = act->conn ? rconn_client_id(act->conn) : -1;
    if (id < 0)
        return;
    rpub *p = rpub_new(killed, NULL);
    if (p)
        eddy__client_kill_cmd(&p->cmds, id);
    if (p && (eddy__cmdlist_status(&p->cmds) != EDDY_OK || rpub_submit(act->bus, p) != EDDY_OK))
        rpub_free(p);
}

void ract_wake(ract *act, eddy__wake how) {
    if (how == EDDY__WAKE_NONE || act->stopping || act->state == A_DEAD || act->bus->freeing)
        return;
    if (act->state == A_IDLE) {
        ev_timer_stop(act->bus->loop, &act->timer);
        act_step(act);
    } else if (how == EDDY__WAKE_READ && act->state == A_ROUND && act->plan.live_read) {
        act->cut = true;
        rconn_drain(act->conn); /* replies that already arrived count */
        if (act->state == A_ROUND && act->cut && act->got + 1 == act->plan.cmds.n) {
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

void ract_free(ract *act) {
    if (act->state != A_DEAD)
        act_kill(act);
    while (act->slots) {
        rslot *sl = act->slots;
        act->slots = sl->next;
        if (sl->d)
            orphan(sl->d);
        free(sl);
    }
    while (act->spare_slots) {
        rslot *sl = act->spare_slots;
        act->spare_slots = sl->next;
        free(sl);
    }
    eddy__consumer_free(act->consumer);
    eddy__plan_reset(&act->plan);
    eddy__delivery_list_free(&act->out);
    free(act->replies);
    free(act);
}
