/* SPDX-License-Identifier: BSD-3-Clause */
/* The round driver (round.h): connect, backoff, the ready deadline, one pipeline at a time and
 * its replies, for the reactive reader and control loop alike.
 *
 * Invariants:
 * - At most one round is out, and the owner plans only between rounds. Replies before a
 *   round's last one are kept (copied off the connection); the last one is lent to `done`
 *   and never freed here (`lent`), even when the owner is killed from inside `done`.
 * - Every callback from the loop or the connection runs inside eddy__rbus_enter/eddy__rbus_leave,
 * so whatever the owner's callbacks free is released only by the outermost eddy__rbus_leave.
 * - Every connect waits for the backoff after the previous one (the gate, backoff.h), whatever
 *   ended that one; the step grows until a connection answers a command.
 */
#include "round.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/conn_state.h"
#include "error.h"
#include "internal.h"
#include "timing.h"
#include "util/backoff.h"

static void free_replies(rround *r) {
    size_t n = r->lent ? r->got - 1 : r->got;
    for (size_t i = 0; i < n; i++)
        if (r->replies[i]) {
            freeReplyObject(r->replies[i]);
            r->replies[i] = NULL;
        }
    r->got = 0;
    r->lent = false;
}

void eddy__rround_replies_done(rround *r) { free_replies(r); }

static void backoff(rround *r) {
    r->state = R_BACKOFF;
    eddy__rbus_timer_after(r->bus, &r->timer, eddy__reconnect_wait_ms(&r->gate, eddy__mono_ms()));
}

static void came_up(rround *r) { r->ops->step(r->owner); }

static void on_up(void *owner);
static void on_reply(void *owner, void *priv, redisReply *reply);
static void on_down(void *owner, eddy_status st, const eddy_error *err);
static const rconn_ops round_conn_ops = {on_up, on_reply, on_down};

void eddy__rround_connect(rround *r) {
    r->state = R_CONNECTING;
    if (eddy__rconn_open_gated(r->bus->loop, &r->bus->s, &round_conn_ops, r, &r->gate, &r->conn) !=
        EDDY_OK) {
        r->conn = NULL;
        /* No connect started: the gate moves on as if one had, so the retry backs off. */
        eddy__reconnect_started(&r->gate, eddy__mono_ms(), false, r->bus->s.reconnect_min_ms,
                                r->bus->s.reconnect_max_ms);
        eddy__fail(&r->last_err, EDDY_ERR_NOMEM, "out of memory connecting");
        backoff(r);
        return;
    }
    if (eddy__rconn_is_up(r->conn)) /* memory://: nothing to wait for */
        came_up(r);
}

void eddy__rround_lose(rround *r, const eddy_error *err) {
    bool was_connecting = r->state == R_CONNECTING;
    free_replies(r);
    eddy__rconn_close(r->conn);
    r->conn = NULL;
    r->last_err = *err;
    if (!r->ops->lost(r->owner))
        return;
    /* The bus's tracker logs the state change this makes, once; each retry is debug only. */
    const char *again = was_connecting ? "" : "; reconnecting";
    if (r->name)
        eddy__log(&r->bus->s.log, EDDY_LOG_DEBUG, "%s '%s': %s%s", r->what, r->name, err->detail,
                  again);
    else
        eddy__log(&r->bus->s.log, EDDY_LOG_DEBUG, "%s: %s%s", r->what, err->detail, again);
    if (r->state != R_HELD)
        backoff(r);
    if (was_connecting && eddy__conn_refused(err->status) && ev_is_active(&r->ready_timer)) {
        ev_timer_stop(r->bus->loop, &r->ready_timer); /* a start need not wait it out */
        r->ops->late(r->owner);
    }
}

bool eddy__rround_send(rround *r) {
    size_t n = r->plan.cmds.n;
    if (n > r->replies_cap) { /* a retention round may be long */
        redisReply **v = realloc(r->replies, n * sizeof(*v));
        if (!v) {
            eddy__rround_idle(r, EDDY__NOMEM_RETRY_MS);
            return false;
        }
        r->replies = v;
        r->replies_cap = n;
    }
    memset(r->replies, 0, n * sizeof(*r->replies));
    r->got = 0;
    r->lent = false;
    r->state = R_ROUND;
    for (size_t i = 0; i < n; i++)
        if (!eddy__rconn_send(r->conn, &r->plan.cmds.cmds[i], i + 1 == n ? r->plan.block_ms : -1,
                              NULL))
            break; /* lost follows from the loop */
    return true;
}

void eddy__rround_idle(rround *r, long long ms) {
    r->state = R_IDLE;
    eddy__rbus_timer_after(r->bus, &r->timer, ms);
}

void eddy__rround_drain(rround *r) { eddy__rconn_drain(r->conn); }

void eddy__rround_stop_deadline(rround *r) { ev_timer_stop(r->bus->loop, &r->ready_timer); }

void eddy__rround_late_error(const rround *r, eddy_error *err, const char *what) {
    /* A refusal (credentials, not a Redis server) keeps its status; anything else is I/O. */
    eddy_status st = eddy__conn_refused(r->last_err.status) ? r->last_err.status : EDDY_ERR_IO;
    if (r->last_err.detail[0])
        eddy__fail(err, st, "%s: %s", what, r->last_err.detail);
    else
        eddy__fail(err, st, "%s", what);
}

void eddy__rround_kill(rround *r) {
    r->state = R_DEAD;
    ev_timer_stop(r->bus->loop, &r->timer);
    ev_timer_stop(r->bus->loop, &r->ready_timer);
    eddy__rconn_close(r->conn); /* a blocking read in flight gets no reply: nothing waits for it */
    r->conn = NULL;
    free_replies(r);
}

/* ---- from the connection and the loop --------------------------------------------------- */

static void on_up(void *owner) {
    rround *r = owner;
    eddy_rbus *bus = r->bus;
    eddy__rbus_enter(bus);
    if (r->state == R_CONNECTING)
        came_up(r);
    eddy__rbus_leave(bus);
}

static void on_down(void *owner, eddy_status st, const eddy_error *err) {
    rround *r = owner;
    eddy_rbus *bus = r->bus;
    eddy__rbus_enter(bus);
    if (r->state != R_DEAD)
        eddy__rround_lose(r, err);
    eddy__rbus_leave(bus);
}

static void on_reply(void *owner, void *priv, redisReply *reply) {
    rround *r = owner;
    eddy_rbus *bus = r->bus;
    eddy__rbus_enter(bus);
    if (r->state == R_ROUND && r->got + 1 < r->plan.cmds.n) {
        /* Replies before the last are needed together with it: keep them. */
        if (!(r->replies[r->got++] = eddy__rconn_keep(r->conn, reply))) {
            eddy_error err;
            eddy__fail(&err, EDDY_ERR_NOMEM, "out of memory keeping a reply");
            eddy__rround_lose(r, &err);
        } else if (r->ops->kept) {
            r->ops->kept(r->owner);
        }
    } else if (r->state == R_ROUND) {
        r->replies[r->got++] = reply;
        r->lent = true;
        r->ops->done(r->owner);
        if (r->lent) /* the owner ended without eddy__rround_replies_done (it was killed) */
            free_replies(r);
    }
    eddy__rbus_leave(bus);
}

static void on_timer(struct ev_loop *loop, ev_timer *w, int revents) {
    rround *r = w->data;
    eddy_rbus *bus = r->bus;
    eddy__rbus_enter(bus);
    if (r->state == R_BACKOFF)
        eddy__rround_connect(r);
    else if (r->state == R_IDLE)
        r->ops->step(r->owner);
    eddy__rbus_leave(bus);
}

static void on_ready_timeout(struct ev_loop *loop, ev_timer *w, int revents) {
    rround *r = w->data;
    eddy_rbus *bus = r->bus;
    eddy__rbus_enter(bus);
    if (r->state != R_DEAD)
        r->ops->late(r->owner);
    eddy__rbus_leave(bus);
}

/* ---- life ------------------------------------------------------------------------------ */

void eddy__rround_init(rround *r, eddy_rbus *bus, const rround_ops *ops, void *owner,
                       const char *what, const char *name) {
    memset(r, 0, sizeof(*r));
    r->bus = bus;
    r->ops = ops;
    r->owner = owner;
    r->what = what;
    r->name = name;
    r->state = R_CONNECTING;
    eddy__plan_init(&r->plan);
    eddy__reconnect_init(&r->gate, (unsigned)((unsigned long long)eddy__mono_ms() ^ (uintptr_t)r ^
                                              (unsigned)getpid()));
    ev_init(&r->timer, on_timer);
    r->timer.data = r;
    ev_init(&r->ready_timer, on_ready_timeout);
    r->ready_timer.data = r;
    eddy__rbus_timer_after(bus, &r->ready_timer, eddy__ready_timeout_ms(&bus->s));
}

void eddy__rround_free(rround *r) {
    if (r->state != R_DEAD)
        eddy__rround_kill(r);
    eddy__plan_reset(&r->plan);
    free(r->replies);
    r->replies = NULL;
}
