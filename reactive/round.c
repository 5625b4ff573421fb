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
 *   ended that one; the step grows until a connection answers a command. A shared connection
 *   has a gate of its own (share.c).
 * - A sharing round (share set) uses its own connection while it has one (conn), else the
 *   shared one while attached. It never writes a blocking command on the shared one.
 */
#include "round.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/conn_state.h"
#include "error.h"
#include "internal.h"
#include "link/link_drive.h"
#include "share.h"
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

static bool send_now(rround *r);

/* Up: the owner plans, unless a round waits for this connection (it was planned to block
 * while the round was on a shared one): that round goes now. */
static void came_up(rround *r) {
    if (r->send_when_up) {
        r->send_when_up = false;
        send_now(r);
        return;
    }
    r->ops->step(r->owner);
}

/* The connection its next command goes on: its own, or the shared one it is attached to. */
static rconn *link_conn(const rround *r) {
    if (r->conn)
        return r->conn;
    return r->attached ? eddy__rshare_conn(r->share) : NULL;
}

void eddy__rround_share(rround *r, rshare *s) { r->share = s; }

bool eddy__rround_linked(const rround *r) { return r->conn || r->attached; }

bool eddy__rround_up(const rround *r) {
    rconn *c = link_conn(r);
    return c && eddy__rconn_is_up(c);
}

static void on_up(void *owner);
static void on_reply(void *owner, void *priv, redisReply *reply);
static void on_down(void *owner, eddy_status st, const eddy_error *err);
static const rconn_ops round_conn_ops = {on_up, on_reply, on_down};

void eddy__rround_connect(rround *r) {
    r->state = R_CONNECTING;
    if (r->share && !r->wants_own) {
        eddy_status st = eddy__rshare_attach(r->share, r);
        if (st == EDDY_OK) {
            came_up(r);
        } else if (st != EDDY_PENDING) {
            eddy__fail(&r->last_err, EDDY_ERR_NOMEM, "out of memory connecting");
            backoff(r);
        }
        return;
    }
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

/* Its connection is gone (closed, or detached from the shared one): the owner is told. */
static void lost(rround *r, const eddy_error *err) {
    bool was_connecting = r->state == R_CONNECTING;
    free_replies(r);
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

void eddy__rround_lose(rround *r, const eddy_error *err) {
    r->send_when_up = false; /* the core starts over: the round it planned is lost with it */
    if (!r->conn && r->attached) {
        /* Only this round is lost: the others' replies stay in order, and what is still due
         * to this one is dropped as it comes (share.c). */
        eddy__rshare_detach(r->share, r);
        lost(r, err);
        return;
    }
    eddy__rconn_close(r->conn);
    r->conn = NULL;
    lost(r, err);
}

void eddy__rround_share_down(rround *r, const eddy_error *err) {
    r->send_when_up = false;
    if (r->state != R_DEAD)
        lost(r, err);
}

void eddy__rround_share_up(rround *r) {
    if (r->state == R_CONNECTING)
        came_up(r);
}

bool eddy__rround_send(rround *r) {
    if (r->share && !r->conn && eddy__plan_goes_own(&r->plan)) {
        /* It goes once its own connection is up (the plan is kept: the core counts it sent). */
        eddy__rshare_detach(r->share, r);
        r->wants_own = true;
        r->send_when_up = true;
        eddy__rround_connect(r);
        return true;
    }
    return send_now(r);
}

static bool send_now(rround *r) {
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
    for (size_t i = 0; i < n; i++) {
        const eddy__cmd *cmd = &r->plan.cmds.cmds[i];
        bool queued =
            r->conn ? eddy__rconn_send(r->conn, cmd, i + 1 == n ? r->plan.block_ms : -1, NULL) != 0
                    : eddy__rshare_send(r->share, r, cmd);
        if (!queued)
            break; /* lost follows from the loop (or came already, from the shared one) */
    }
    return true;
}

void eddy__rround_idle(rround *r, long long ms) { eddy__rround_wait(r, ms, true); }

void eddy__rround_wait(rround *r, long long ms, bool give_back) {
    if (give_back && r->share && r->conn) {
        /* It no longer blocks: back to the shared connection at its next connect. */
        eddy__rconn_close(r->conn);
        r->conn = NULL;
        r->wants_own = false;
    }
    r->state = R_IDLE;
    eddy__rbus_timer_after(r->bus, &r->timer, ms);
}

void eddy__rround_drain(rround *r) {
    rconn *c = link_conn(r);
    if (c)
        eddy__rconn_drain(c);
}

void eddy__rround_stop_deadline(rround *r) { ev_timer_stop(r->bus->loop, &r->ready_timer); }

void eddy__rround_late_error(const rround *r, eddy_error *err, const char *what) {
    eddy__link_late_error(err, &r->last_err, what);
}

void eddy__rround_kill(rround *r) {
    r->state = R_DEAD;
    r->send_when_up = false;
    ev_timer_stop(r->bus->loop, &r->timer);
    ev_timer_stop(r->bus->loop, &r->ready_timer);
    eddy__rconn_close(r->conn); /* a blocking read in flight gets no reply: nothing waits for it */
    r->conn = NULL;
    if (r->share)
        eddy__rshare_detach(r->share, r);
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

/* A reply of the round, borrowed from c. */
static void take_reply(rround *r, rconn *c, redisReply *reply) {
    if (r->state == R_ROUND && r->got + 1 < r->plan.cmds.n) {
        /* Replies before the last are needed together with it: keep them. */
        if (!(r->replies[r->got++] = eddy__rconn_keep(c, reply))) {
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
}

void eddy__rround_share_reply(rround *r, redisReply *reply) {
    take_reply(r, eddy__rshare_conn(r->share), reply);
}

static void on_reply(void *owner, void *priv, redisReply *reply) {
    rround *r = owner;
    eddy_rbus *bus = r->bus;
    eddy__rbus_enter(bus);
    take_reply(r, r->conn, reply);
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
