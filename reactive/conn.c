/* SPDX-License-Identifier: BSD-3-Clause */
/* Reactive transport (see conn.h): a link (src/link/link.h: the socket, TLS, the handshake, RESP
 * both ways, or the memory engine behind the same interface) that this file only waits on,
 * with one ev_io, one ev_timer, and a zero-delay timer for replies the link has ready without
 * waiting (memory://).
 *
 * Invariants:
 * - `depth` counts this file's frames on the stack that may reach the owner (event callbacks,
 *   eddy__rconn_drain). A close while depth > 0 only marks the connection closed; it is destroyed
 *   when the outermost frame returns, so no frame of ours ever sees freed memory.
 * - `down` is reported once, from the loop, never after eddy__rconn_close, and never from inside a
 *   call the owner made into this file (then a zero-delay timer reports it).
 * - Every command given to a link has a deadline (link_drive.h), so the oldest unanswered
 *   command's is the next to pass; the timer is armed no later than that (before the link is
 *   READY: for the connect's own deadline). A passed deadline fails the link through
 *   eddy__link_expire, which tells "not sent" (EDDY_ERR_IO) from "sent, outcome unknown".
 * - A link's replies are built in the reply arena, lent to the owner for its callback and
 *   dropped right after it (the arena is reset after each callback).
 * - Replies are handed out from the loop, never inside the call that sent the command, and a
 *   delivery hands out only replies to commands queued before it began, so an owner that sends
 *   from its callbacks cannot keep the loop from its other watchers: what the link has ready
 *   then (eddy__link_ready) waits for the `soon` timer.
 */
#include "conn.h"

#include <stdlib.h>
#include <string.h>

#include "config/conn_state.h"
#include "error.h"
#include "link/link.h"
#include "link/link_drive.h"
#include "timing.h"
#include "util/backoff.h"
#include "util/reply.h"
#include "util/reply_arena.h"

/* A command awaiting its reply. */
typedef struct pending {
    void *priv;
    long long deadline; /* eddy__mono_ms() clock */
} pending;

struct rconn {
    struct ev_loop *loop;
    const eddy__settings *s;
    const rconn_ops *ops;
    void *owner;
    int depth;
    bool closed;
    bool up;
    bool failed; /* a loss was seen; down is due or was told */
    bool down_told;
    unsigned state_epoch; /* conn_state.h: nonzero while up (reported to the bus's tracker) */
    eddy_error fail_err;
    uint64_t fail_sent; /* eddy__rconn_sent when it failed */
    ev_timer timer;     /* the next deadline; a zero delay reports down */
    long long timer_at; /* when it fires (eddy__mono_ms), while it is active */
    /* The commands awaiting replies, in order (a ring). */
    pending *q;
    size_t qhead, qn, qcap;
    redisReply *lending; /* the reply the owner is looking at, when eddy__rconn_keep may take it */
    eddy__link *link;
    eddy__reply_arena *arena; /* replies are built in it and dropped after their callback */
    ev_io io;
    unsigned io_wants;  /* what io watches for (EDDY__LINK_READ / WRITE), 0 when stopped */
    unsigned io_socket; /* the link's socket io was set on (eddy__link_socket_id) */
    ev_timer soon;      /* zero delay: replies the link has ready without waiting */
    /* The owner's reconnect gate (backoff.h), or NULL; `gating`: the link is not opened yet,
     * the timer ends the wait for it. */
    eddy__reconnect *gate;
    bool gating;
};

static void timer_after(struct ev_loop *loop, ev_timer *t, long long ms) {
    ev_timer_stop(loop, t);
    ev_timer_set(t, (double)ms / 1000.0, 0.);
    ev_timer_start(loop, t);
}

/* ---- the commands awaiting replies ------------------------------------------------------ */

static pending *q_at(rconn *c, size_t i) { return &c->q[(c->qhead + i) % c->qcap]; }

static bool q_push(rconn *c, pending o) {
    if (c->qn == c->qcap) {
        size_t cap = c->qcap ? c->qcap * 2 : 16;
        pending *q = malloc(cap * sizeof(*q));
        if (!q)
            return false;
        for (size_t i = 0; i < c->qn; i++)
            q[i] = *q_at(c, i);
        free(c->q);
        c->q = q;
        c->qcap = cap;
        c->qhead = 0;
    }
    *q_at(c, c->qn++) = o;
    return true;
}

/* ---- failure and teardown ---------------------------------------------------------------- */

static void fail_with(rconn *c, const eddy_error *err) {
    if (c->failed || c->closed)
        return;
    c->failed = true;
    c->fail_err = *err;
    c->fail_sent = c->link ? eddy__link_sent(c->link) : 0;
    if (c->link && c->io_wants) {
        ev_io_stop(c->loop, &c->io);
        c->io_wants = 0;
    }
    if (c->depth == 0) /* not inside one of our frames: report from the loop */
        timer_after(c->loop, &c->timer, 0);
}

static void fail(rconn *c, eddy_status st, const char *what) {
    eddy_error err;
    eddy__fail(&err, st, "%s", what);
    fail_with(c, &err);
}

static void drop_queue(rconn *c) {
    c->qhead = c->qn = 0;
    ev_timer_stop(c->loop, &c->soon);
}

/* Releases the transport once it failed: pending commands get no reply. */
static void kill_transport(rconn *c) {
    ev_timer_stop(c->loop, &c->timer);
    if (c->link) {
        ev_io_stop(c->loop, &c->io);
        c->io_wants = 0;
        eddy__link_close(c->link);
    }
    drop_queue(c);
}

/* The socket is up (the handshake's commands are written, or being written). */
static bool link_connected(const rconn *c) {
    eddy__link_phase ph = eddy__link_phase_of(c->link);
    return !c->failed && (ph == EDDY__LINK_READY || ph == EDDY__LINK_HANDSHAKE);
}

static void destroy(rconn *c) {
    ev_timer_stop(c->loop, &c->timer);
    if (c->link) {
        ev_io_stop(c->loop, &c->io);
        eddy__link_free(c->link);
    }
    drop_queue(c);
    eddy__reply_arena_free(c->arena);
    free(c->q);
    free(c);
}

static void tell_down(rconn *c);

/* Leaving a frame entered from the loop: finish a deferred close, or report a loss. */
static void leave_loop(rconn *c) {
    if (--c->depth > 0)
        return;
    if (c->closed)
        destroy(c);
    else if (c->failed && !c->down_told)
        tell_down(c);
}

/* Leaving a frame entered from an owner's call: a loss is reported later, from the loop. */
static void leave_owner(rconn *c) {
    if (--c->depth > 0)
        return;
    if (c->closed)
        destroy(c);
    else if (c->failed && !c->down_told)
        timer_after(c->loop, &c->timer, 0);
}

static void tell_down(rconn *c) {
    c->down_told = true;
    eddy__link_gate_down(c->gate, c->s, c->link, c->up, &c->state_epoch, c->fail_err.status,
                         &c->fail_err);
    kill_transport(c);
    c->depth++;
    c->ops->down(c->owner, c->fail_err.status, &c->fail_err);
    leave_loop(c);
}

/* ---- waiting on the link ----------------------------------------------------------------- */

/* Watches the socket for what the link wants now. */
static void watch(rconn *c) {
    unsigned w = c->failed ? 0 : eddy__link_wants(c->link);
    unsigned sock = eddy__link_socket_id(c->link);
    if (w == c->io_wants && (!w || sock == c->io_socket))
        return; /* a new socket, even one with a closed one's number, is set again */
    ev_io_stop(c->loop, &c->io);
    c->io_wants = w;
    c->io_socket = sock;
    if (!w)
        return;
    ev_io_set(&c->io, eddy__link_fd(c->link),
              ((w & EDDY__LINK_READ) ? EV_READ : 0) | ((w & EDDY__LINK_WRITE) ? EV_WRITE : 0));
    ev_io_start(c->loop, &c->io);
}

/* Arms the timer for the next deadline: the link's own (the connect's, a parked memory read's
 * BLOCK end), or the oldest command's. A timer that fires no later than that stays (it arms
 * again when it fires early), so replies that move the oldest deadline on cost no timer work. */
static void arm(rconn *c) {
    if (c->failed)
        return;
    bool cmds = eddy__link_phase_of(c->link) == EDDY__LINK_READY && c->qn > 0;
    long long at = eddy__link_next_deadline(c->link, cmds ? q_at(c, 0)->deadline : -1);
    if (at < 0) {
        ev_timer_stop(c->loop, &c->timer);
        return;
    }
    if (ev_is_active(&c->timer) && c->timer_at <= at)
        return;
    long long now = eddy__mono_ms();
    c->timer_at = at;
    timer_after(c->loop, &c->timer, at > now ? at - now : 0);
}

/* Hands out the replies that are complete, in order, each lent for its callback: those of the
 * commands queued before it began. */
static void deliver(rconn *c) {
    uint64_t upto = eddy__link_queued(c->link);
    while (!c->closed && !c->failed && eddy__link_answered(c->link) < upto) {
        redisReply *r = NULL;
        eddy_error err;
        if (eddy__link_reply(c->link, &r, &err) != EDDY_OK) {
            fail_with(c, &err);
            return;
        }
        if (!r)
            return;
        if (c->qn == 0) { /* the link counts them too: it fails first */
            fail(c, EDDY_ERR_PROTOCOL, "a reply no command asked for");
            return;
        }
        void *priv = q_at(c, 0)->priv;
        c->qhead = (c->qhead + 1) % c->qcap;
        c->qn--;
        c->lending = c->arena ? NULL : r; /* an arena's reply cannot be taken, only copied */
        /* An answer (a redirect fails the link instead): the connection works. */
        eddy__conn_proved(c->s->conn_state, &c->state_epoch);
        c->ops->reply(c->owner, priv, r);
        eddy__link_replies_done(c->arena, &c->lending, 1); /* NULL when kept */
    }
}

static void tell_up(rconn *c) {
    c->up = true;
    eddy__conn_up(c->s->conn_state, &c->state_epoch);
    c->ops->up(c->owner);
}

/* Replies the link has without waiting are handed out from the loop, soon. */
static void soon(rconn *c) {
    if (!ev_is_active(&c->soon) && eddy__link_ready(c->link)) {
        ev_timer_set(&c->soon, 0., 0.);
        ev_timer_start(c->loop, &c->soon);
    }
}

/* After the link moved: report READY once, hand out replies, wait for what it wants next. */
static void settle_link(rconn *c) {
    if (!c->up && !c->failed && eddy__link_phase_of(c->link) == EDDY__LINK_READY)
        tell_up(c);
    deliver(c);
    if (!c->failed && !c->closed) {
        watch(c);
        arm(c);
        soon(c);
    }
}

static void on_soon(struct ev_loop *loop, ev_timer *w, int revents) {
    rconn *c = w->data;
    c->depth++;
    if (!c->failed)
        settle_link(c);
    leave_loop(c);
}

static void on_io(struct ev_loop *loop, ev_io *w, int revents) {
    rconn *c = w->data;
    c->depth++;
    eddy_error err;
    unsigned ready =
        ((revents & EV_READ) ? EDDY__LINK_READ : 0) | ((revents & EV_WRITE) ? EDDY__LINK_WRITE : 0);
    if (eddy__link_io(c->link, ready, &err) != EDDY_OK)
        fail_with(c, &err);
    else
        settle_link(c);
    leave_loop(c);
}

/* The timer: a deadline may have passed (the link's own, or the oldest command's). */
static void link_deadline(rconn *c) {
    eddy_error err;
    long long now = eddy__mono_ms();
    eddy_status st = eddy__link_tick(c->link, now, &err);
    if (st == EDDY_OK && eddy__link_phase_of(c->link) == EDDY__LINK_READY && c->qn > 0 &&
        q_at(c, 0)->deadline <= now)
        st = eddy__link_expire(c->link, eddy__link_answered(c->link) + 1, "a command", &err);
    if (st != EDDY_OK)
        fail_with(c, &err);
    else
        settle_link(c); /* a parked read past its BLOCK time has its nil reply now */
}

static uint64_t link_send(rconn *c, const eddy__cmd *cmd, long long block_ms, void *priv) {
    long long deadline = eddy__link_cmd_deadline(c->s, eddy__mono_ms(), block_ms,
                                                 c->qn > 0 ? q_at(c, c->qn - 1)->deadline : -1);
    eddy__cmdlist one = {.cmds = (eddy__cmd *)cmd, .n = 1, .cap = 1};
    uint64_t num = 0;
    eddy_error err;
    if (!q_push(c, (pending){.priv = priv, .deadline = deadline})) {
        fail(c, EDDY_ERR_NOMEM, "could not queue a command");
        return 0;
    }
    if (eddy__link_send(c->link, &one, &num, &err) != EDDY_OK) {
        c->qn--;
        fail_with(c, &err);
        return 0;
    }
    watch(c); /* written when the socket takes it: a pipeline goes out in one write */
    arm(c);
    soon(c);
    return num;
}

static void link_open(rconn *c) {
    if (!(c->link = eddy__link_new(c->s, true))) {
        fail(c, EDDY_ERR_NOMEM, "out of memory connecting");
        return;
    }
    /* Without an arena (out of memory) hiredis's own reply objects serve as well. */
    if ((c->arena = eddy__reply_arena_new()))
        eddy__reply_arena_install(c->arena, eddy__link_reader(c->link));
    ev_init(&c->io, on_io);
    c->io.data = c;
    eddy_error err;
    if (eddy__link_gate_connect(c->gate, c->s, c->link, eddy__mono_ms(), &err) != EDDY_OK) {
        fail_with(c, &err);
        return;
    }
    if (eddy__link_phase_of(c->link) == EDDY__LINK_READY) { /* memory://: nothing to wait for */
        c->up = true;
        eddy__conn_up(c->s->conn_state, &c->state_epoch);
    }
    watch(c);
    arm(c);
}

/* ---- interface ---------------------------------------------------------------------------- */

static void on_timer(struct ev_loop *loop, ev_timer *w, int revents) {
    rconn *c = w->data;
    c->depth++;
    if (c->gating) { /* the backoff after the previous connect passed */
        c->gating = false;
        link_open(c);
    } else if (!c->failed) {
        link_deadline(c);
    }
    leave_loop(c); /* reports a loss that is due */
}

eddy_status eddy__rconn_open_gated(struct ev_loop *loop, const eddy__settings *s,
                                   const rconn_ops *ops, void *owner, eddy__reconnect *gate,
                                   rconn **out) {
    rconn *c = calloc(1, sizeof(*c));
    if (!c)
        return EDDY_ERR_NOMEM;
    c->loop = loop;
    c->s = s;
    c->ops = ops;
    c->owner = owner;
    ev_init(&c->timer, on_timer);
    c->timer.data = c;
    ev_init(&c->soon, on_soon);
    c->soon.data = c;
    c->gate = gate;
    long long wait = eddy__link_gate_wait(s, gate, eddy__mono_ms());
    if (wait > 0) { /* whatever ended the last connection: the next waits (backoff.h) */
        c->gating = true;
        timer_after(loop, &c->timer, wait);
    } else {
        link_open(c);
    }
    *out = c;
    return EDDY_OK;
}

bool eddy__rconn_is_up(const rconn *c) { return c->up && !c->failed && !c->closed; }

long long eddy__rconn_client_id(const rconn *c) {
    return c->link ? eddy__link_client_id(c->link) : -1;
}

uint64_t eddy__rconn_send(rconn *c, const eddy__cmd *cmd, long long block_ms, void *priv) {
    if (c->closed || c->failed || !c->link)
        return 0;
    return link_send(c, cmd, block_ms, priv);
}

uint64_t eddy__rconn_sent(const rconn *c) {
    if (c->failed)
        return c->fail_sent;
    return c->link ? eddy__link_sent(c->link) : 0;
}

static redisReply *clone_reply(const redisReply *r) {
    redisReply *o = calloc(1, sizeof(*o));
    if (!o)
        return NULL;
    o->type = r->type;
    o->integer = r->integer;
    switch (r->type) {
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR:
        if (!(o->str = malloc(r->len + 1))) {
            free(o);
            return NULL;
        }
        memcpy(o->str, r->str, r->len);
        o->str[r->len] = '\0';
        o->len = r->len;
        break;
    case REDIS_REPLY_ARRAY:
        if (r->elements == 0)
            break;
        if (!(o->element = calloc(r->elements, sizeof(*o->element)))) {
            free(o);
            return NULL;
        }
        o->elements = r->elements;
        for (size_t i = 0; i < r->elements; i++)
            if (!(o->element[i] = clone_reply(r->element[i]))) {
                freeReplyObject(o); /* it skips the NULL elements */
                return NULL;
            }
        break;
    default:
        break;
    }
    return o;
}

redisReply *eddy__rconn_keep(rconn *c, redisReply *reply) {
    if (reply == c->lending) {
        c->lending = NULL;
        return reply;
    }
    /* An arena's reply goes when the callback returns: keep a copy. */
    return clone_reply(reply);
}

void eddy__rconn_drain(rconn *c) {
    if (!c || c->closed || c->failed || c->depth > 0 || !c->link)
        return;
    c->depth++;
    if (link_connected(c)) { /* before that, nothing was written nor can have come */
        eddy_error err;
        if (eddy__link_io(c->link, EDDY__LINK_READ | EDDY__LINK_WRITE, &err) != EDDY_OK)
            fail_with(c, &err);
        else
            settle_link(c);
    }
    leave_owner(c);
}

void eddy__rconn_close(rconn *c) {
    if (!c)
        return;
    /* Whatever is still queued (a stopping reader's acknowledgements) goes out if the socket
     * takes it now (memory://: runs now, while the commands it borrows are still there);
     * replies are not waited for. */
    if (c->link && !c->closed && link_connected(c))
        eddy__link_flush(c->link, NULL);
    /* The gate is the owner's, and the owner may be gone by the time a frame of ours on the
     * stack lets the connection be destroyed: it learns now whether this one answered. */
    if (!c->down_told && !c->closed)
        eddy__link_gate_leave(c->gate, c->link);
    c->gate = NULL;
    c->closed = true;
    if (c->depth == 0)
        destroy(c);
}
