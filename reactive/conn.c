/* Reactive transport (see conn.h): a link (src/link.h: the socket, TLS, the handshake, RESP
 * both ways) that this file only waits on, with one ev_io and one ev_timer; or a memory engine
 * connection. Both behind one small interface.
 *
 * Invariants:
 * - `depth` counts this file's frames on the stack that may reach the owner (event callbacks,
 *   rconn_drain). A close while depth > 0 only marks the connection closed; it is destroyed
 *   when the outermost frame returns, so no frame of ours ever sees freed memory.
 * - `down` is reported once, from the loop, never after rconn_close, and never from inside a
 *   call the owner made into this file (then a zero-delay timer reports it).
 * - Every command given to a link has a deadline: its queueing time plus command_timeout_ms
 *   (plus its block_ms for a blocking read), but never before the deadline of the command
 *   ahead of it, which it waits behind. So the oldest unanswered command's deadline is the
 *   next to pass; the timer is armed no later than that (before the link is READY: for the
 *   connect's own deadline). A passed deadline fails the link through eddy__link_expire,
 *   which tells "not sent" (EDDY_ERR_IO) from "sent, outcome unknown" (EDDY_ERR_TIMEOUT).
 * - A link's replies are built in the reply arena, lent to the owner for its callback and
 *   dropped right after it (the arena is reset after each callback).
 * - Memory commands run in order. A blocking read that finds nothing parks the queue (later
 *   commands wait behind it, as they would behind a blocking read on a socket) until the
 *   engine's write listener wakes the loop or the read's own timer answers nil. Replies are
 *   handed out from an ev_async callback, never inside the call that sent the command.
 */
#include "conn.h"

#include <stdlib.h>
#include <string.h>

#include "conn_state.h"
#include "error.h"
#include "link.h"
#include "memory/engine.h"
#include "reply.h"
#include "reply_arena.h"
#include "timing.h"

/* A command awaiting its reply. */
typedef struct pending {
    void *priv;
    long long deadline;   /* a link's: eddy__mono_ms() clock */
    const eddy__cmd *cmd; /* memory:// */
    redisReply *reply;    /* memory://: set once executed */
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
    uint64_t fail_sent; /* rconn_sent when it failed */
    ev_timer timer;     /* the next deadline; a zero delay reports down */
    long long timer_at; /* when it fires (eddy__mono_ms), while it is active */
    /* The commands awaiting replies, in order (a ring). memory://: executed ones first
     * (ndone), then the parked or unrun ones. */
    pending *q;
    size_t qhead, qn, qcap;
    redisReply *lending; /* the reply the owner is looking at, when rconn_keep may take it */
    /* redis://, rediss://, unix:// */
    eddy__link *link;
    eddy__reply_arena *arena; /* replies are built in it and dropped after their callback */
    ev_io io;
    unsigned io_wants; /* what io watches for (EDDY__LINK_READ / WRITE), 0 when stopped */
    /* memory:// */
    uint64_t mem_numbered; /* commands given so far */
    eddy__mem_engine *engine;
    eddy__mem_conn *mc;
    unsigned listener;
    ev_async wake;
    ev_timer block_timer;
    bool parked;  /* the command after the executed ones is a blocking read waiting for data */
    size_t ndone; /* the first ndone of q were executed */
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
    c->fail_sent = c->link ? eddy__link_sent(c->link) : c->mem_numbered;
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
    for (size_t i = 0; i < c->qn; i++) {
        pending *o = &c->q[(c->qhead + i) % c->qcap];
        if (o->reply)
            freeReplyObject(o->reply);
    }
    c->qhead = c->qn = c->ndone = 0;
    c->parked = false;
    if (c->engine)
        ev_timer_stop(c->loop, &c->block_timer);
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
        /* Whatever is still queued (a stopping reader's acknowledgements) goes out if the
         * socket takes it now; replies are not waited for. */
        if (link_connected(c))
            eddy__link_flush(c->link, NULL);
        ev_io_stop(c->loop, &c->io);
        eddy__link_free(c->link);
    }
    drop_queue(c);
    eddy__reply_arena_free(c->arena);
    if (c->engine) {
        if (c->listener) /* waits for a listener running on another thread */
            eddy__mem_engine_unlisten(c->engine, c->listener);
        ev_async_stop(c->loop, &c->wake);
        if (c->mc)
            eddy__mem_conn_free(c->mc);
        eddy__mem_engine_release(c->engine);
    }
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
    eddy__conn_down(c->s->conn_state, &c->state_epoch, c->fail_err.status, &c->fail_err);
    kill_transport(c);
    c->depth++;
    c->ops->down(c->owner, c->fail_err.status, &c->fail_err);
    leave_loop(c);
}

/* ---- redis://, rediss://, unix://: waiting on the link ----------------------------------- */

/* Watches the socket for what the link wants now. */
static void watch(rconn *c) {
    unsigned w = c->failed ? 0 : eddy__link_wants(c->link);
    if (w == c->io_wants)
        return;
    ev_io_stop(c->loop, &c->io);
    c->io_wants = w;
    if (!w)
        return;
    ev_io_set(&c->io, eddy__link_fd(c->link),
              ((w & EDDY__LINK_READ) ? EV_READ : 0) | ((w & EDDY__LINK_WRITE) ? EV_WRITE : 0));
    ev_io_start(c->loop, &c->io);
}

/* Arms the timer for the next deadline: the connect's, then the oldest command's. A timer
 * that fires no later than that stays (it arms again when it fires early), so replies that
 * move the oldest deadline on cost no timer work. */
static void arm(rconn *c) {
    if (c->failed)
        return;
    long long at = -1;
    if (eddy__link_phase_of(c->link) != EDDY__LINK_READY)
        at = eddy__link_deadline(c->link);
    else if (c->qn > 0)
        at = q_at(c, 0)->deadline;
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

/* Hands out the replies that are complete, in order, each lent for its callback. */
static void deliver(rconn *c) {
    while (!c->closed && !c->failed) {
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
        c->ops->reply(c->owner, priv, r);
        if (c->arena)
            eddy__reply_arena_reset(c->arena);
        else if (c->lending)
            freeReplyObject(c->lending);
        c->lending = NULL;
    }
}

static void tell_up(rconn *c) {
    c->up = true;
    eddy__conn_up(c->s->conn_state, &c->state_epoch);
    c->ops->up(c->owner);
}

/* After the link moved: report READY once, hand out replies, wait for what it wants next. */
static void settle_link(rconn *c) {
    if (!c->up && !c->failed && eddy__link_phase_of(c->link) == EDDY__LINK_READY)
        tell_up(c);
    deliver(c);
    if (!c->failed && !c->closed) {
        watch(c);
        arm(c);
    }
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

/* The timer: a deadline may have passed (the link's connect, or the oldest command's). */
static void link_deadline(rconn *c) {
    eddy_error err;
    long long now = eddy__mono_ms();
    eddy_status st = EDDY_OK;
    if (eddy__link_phase_of(c->link) != EDDY__LINK_READY)
        st = eddy__link_tick(c->link, now, &err);
    else if (c->qn > 0 && q_at(c, 0)->deadline <= now)
        st = eddy__link_expire(c->link, eddy__link_answered(c->link) + 1, "a command", &err);
    if (st != EDDY_OK)
        fail_with(c, &err);
    else
        arm(c);
}

static uint64_t link_send(rconn *c, const eddy__cmd *cmd, long long block_ms, void *priv) {
    long long deadline = eddy__mono_ms() + eddy__command_timeout_ms(c->s, block_ms);
    if (c->qn > 0 && q_at(c, c->qn - 1)->deadline > deadline)
        deadline = q_at(c, c->qn - 1)->deadline; /* it waits behind that one */
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
    if (eddy__link_connect(c->link, eddy__mono_ms(), &err) != EDDY_OK) {
        fail_with(c, &err);
        return;
    }
    c->up = eddy__link_phase_of(c->link) == EDDY__LINK_READY; /* nothing to hand-shake */
    watch(c);
    arm(c);
}

/* ---- memory:// --------------------------------------------------------------------------- */

static void mem_written(void *user) {
    rconn *c = user;
    ev_async_send(c->loop, &c->wake); /* any thread; the loop retries a parked read */
}

/* Executes queued commands in order until one has to wait. */
static void mem_run(rconn *c) {
    while (!c->failed && c->ndone < c->qn) {
        pending *o = q_at(c, c->ndone);
        long long block = -1;
        redisReply *r =
            eddy__mem_exec(c->mc, o->cmd->argc, eddy__cmd_argv(o->cmd), o->cmd->argvlen, &block);
        if (r) {
            o->reply = r;
            c->ndone++;
            if (c->parked) {
                c->parked = false;
                ev_timer_stop(c->loop, &c->block_timer);
            }
            continue;
        }
        if (block < 0) {
            fail(c, EDDY_ERR_NOMEM, "memory backend: out of memory");
            return;
        }
        if (!c->listener) {
            /* Listen first, then look again, so that a write in between is not missed. */
            if (!(c->listener = eddy__mem_engine_listen(c->engine, mem_written, c)))
                fail(c, EDDY_ERR_NOMEM, "memory backend: out of memory");
            continue;
        }
        if (!c->parked) {
            c->parked = true;
            if (block > 0) /* 0 waits without limit */
                timer_after(c->loop, &c->block_timer, block);
        }
        return;
    }
}

/* Hands out the replies that are ready now. Replies to commands sent from these callbacks
 * wait for the next wake-up, so a busy owner cannot keep the loop from its other watchers. */
static void mem_deliver(rconn *c) {
    size_t n = c->ndone;
    for (size_t i = 0; i < n && !c->closed && !c->failed; i++) {
        pending o = *q_at(c, 0);
        c->qhead = (c->qhead + 1) % c->qcap;
        c->qn--;
        c->ndone--;
        c->lending = o.reply;
        c->ops->reply(c->owner, o.priv, o.reply);
        if (c->lending)
            freeReplyObject(c->lending);
        c->lending = NULL;
    }
    if (c->ndone > 0 && !c->closed && !c->failed)
        ev_async_send(c->loop, &c->wake);
}

static void on_wake(struct ev_loop *loop, ev_async *w, int revents) {
    rconn *c = w->data;
    c->depth++;
    mem_run(c);
    mem_deliver(c);
    leave_loop(c);
}

static void on_block_timeout(struct ev_loop *loop, ev_timer *w, int revents) {
    rconn *c = w->data;
    c->depth++;
    if (c->parked && !c->failed) {
        /* The read waited its BLOCK time: answer what Redis answers, nil. */
        pending *o = q_at(c, c->ndone);
        c->parked = false;
        if (!(o->reply = eddy__reply_nil())) {
            fail(c, EDDY_ERR_NOMEM, "out of memory");
        } else {
            c->ndone++;
            mem_run(c);
        }
    }
    mem_deliver(c);
    leave_loop(c);
}

static uint64_t mem_send(rconn *c, const eddy__cmd *cmd, void *priv) {
    if (!q_push(c, (pending){.priv = priv, .cmd = cmd})) {
        fail(c, EDDY_ERR_NOMEM, "out of memory");
        return 0;
    }
    mem_run(c);
    if (c->ndone > 0)
        ev_async_send(c->loop, &c->wake);
    return c->failed ? 0 : ++c->mem_numbered;
}

/* ---- interface ---------------------------------------------------------------------------- */

static void on_timer(struct ev_loop *loop, ev_timer *w, int revents) {
    rconn *c = w->data;
    c->depth++;
    if (!c->failed && c->link)
        link_deadline(c);
    leave_loop(c); /* reports a loss that is due */
}

eddy_status rconn_open(struct ev_loop *loop, const eddy__settings *s, const rconn_ops *ops,
                       void *owner, rconn **out) {
    rconn *c = calloc(1, sizeof(*c));
    if (!c)
        return EDDY_ERR_NOMEM;
    c->loop = loop;
    c->s = s;
    c->ops = ops;
    c->owner = owner;
    ev_init(&c->timer, on_timer);
    c->timer.data = c;
    if (s->url.kind != EDDY__URL_MEMORY) {
        link_open(c);
        *out = c;
        return EDDY_OK;
    }
    ev_async_init(&c->wake, on_wake);
    c->wake.data = c;
    ev_init(&c->block_timer, on_block_timeout);
    c->block_timer.data = c;
    if (!(c->engine = eddy__mem_engine_acquire(s->url.name))) {
        free(c);
        return EDDY_ERR_NOMEM;
    }
    ev_async_start(loop, &c->wake);
    if (!(c->mc = eddy__mem_conn_new(c->engine))) {
        destroy(c);
        return EDDY_ERR_NOMEM;
    }
    c->up = true;
    eddy__conn_up(s->conn_state, &c->state_epoch);
    *out = c;
    return EDDY_OK;
}

bool rconn_is_up(const rconn *c) { return c->up && !c->failed && !c->closed; }

long long rconn_client_id(const rconn *c) { return c->link ? eddy__link_client_id(c->link) : -1; }

uint64_t rconn_send(rconn *c, const eddy__cmd *cmd, long long block_ms, void *priv) {
    if (c->closed || c->failed)
        return 0;
    return c->mc ? mem_send(c, cmd, priv) : link_send(c, cmd, block_ms, priv);
}

uint64_t rconn_sent(const rconn *c) {
    if (c->failed)
        return c->fail_sent;
    return c->link ? eddy__link_sent(c->link) : c->mem_numbered;
}

eddy_status rconn_outcome(eddy_status st, const eddy_error *err, uint64_t last, uint64_t sent,
                          eddy_error *out, const eddy_error **detail) {
    *detail = err;
    if (st != EDDY_ERR_TIMEOUT || (last > 0 && last <= sent))
        return st;
    *detail = out;
    return eddy__fail(out, EDDY_ERR_IO, "not sent: %s", err->detail);
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

redisReply *rconn_keep(rconn *c, redisReply *reply) {
    if (reply == c->lending) {
        c->lending = NULL;
        return reply;
    }
    /* An arena's reply goes when the callback returns: keep a copy. */
    return clone_reply(reply);
}

void rconn_drain(rconn *c) {
    if (!c || c->closed || c->failed || c->depth > 0)
        return;
    c->depth++;
    if (c->mc) {
        mem_deliver(c);
    } else if (link_connected(c)) { /* before that, nothing was written nor can have come */
        eddy_error err;
        if (eddy__link_io(c->link, EDDY__LINK_READ | EDDY__LINK_WRITE, &err) != EDDY_OK)
            fail_with(c, &err);
        else
            settle_link(c);
    }
    leave_owner(c);
}

void rconn_close(rconn *c) {
    if (!c)
        return;
    c->closed = true;
    if (c->depth == 0)
        destroy(c);
}
