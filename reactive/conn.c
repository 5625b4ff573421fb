/* Reactive transport (see conn.h): a hiredis async context with eddy's own libev adapter, or
 * a memory engine connection, behind one small interface.
 *
 * Invariants:
 * - `depth` counts this file's frames on the stack that may reach hiredis or the owner (event
 *   callbacks, rconn_drain). A close while depth > 0 only marks the connection closed; it is
 *   destroyed when the outermost frame returns, after hiredis has returned too, so neither a
 *   hiredis nor a libev frame ever sees freed memory.
 * - `down` is reported once, from the loop, never after rconn_close, and never from inside a
 *   call the owner made into this file (then a zero-delay timer reports it).
 * - hiredis says a context is gone only through the adapter's cleanup hook, which it runs
 *   from inside its free; that is where `ac` becomes NULL. Replies hiredis hands to callbacks
 *   it runs with NULL while freeing are swallowed: the owner learns of a loss through `down`.
 * - Every write to the socket runs with SIGPIPE blocked (sigpipe.h): the loop thread is the
 *   user's, and a write to a peer that went away must not kill the process.
 * - Memory commands run in order. A blocking read that finds nothing parks the queue (later
 *   commands wait behind it, as they would behind a blocking read on a socket) until the
 *   engine's write listener wakes the loop or the read's own timer answers nil. Replies are
 *   handed out from an ev_async callback, never inside the call that sent the command.
 */
#include "conn.h"

#include <hiredis/async.h>
#include <stdlib.h>
#include <string.h>

#include "conn_state.h"
#include "error.h"
#include "memory/engine.h"
#include "redis.h"
#include "reply.h"
#include "reply_arena.h"
#include "sigpipe.h"
#include "timing.h"

typedef struct mop {
    const eddy__cmd *cmd;
    void *priv;
    redisReply *reply; /* set once executed */
} mop;

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
    ev_timer timer; /* connect timeout, then reply watchdog; a zero delay reports down */
    /* redis:// and unix:// */
    redisAsyncContext *ac;
    eddy__reply_arena *arena; /* replies are built in it and dropped after their callback */
    char *out;                /* a command being written, in RESP */
    size_t out_cap;
    bool connected;
    ev_io rev, wev;
    size_t handshake_left;
    long long client_id; /* the server's id for this connection (CLIENT ID), -1 unknown */
    size_t pending;      /* commands written or queued in hiredis and not answered */
    long long block_ms;  /* >= 0 while a blocking read is among them */
    /* memory:// */
    eddy__mem_engine *engine;
    eddy__mem_conn *mc;
    unsigned listener;
    ev_async wake;
    ev_timer block_timer;
    bool parked; /* the command after the executed ones is a blocking read waiting for data */
    mop *q;      /* ring: executed commands first (ndone), then the parked or unrun ones */
    size_t qhead, qn, qcap, ndone;
    redisReply *lending; /* the memory reply the owner is looking at; rconn_keep takes it */
};

static char handshake_tag; /* priv of the AUTH/SELECT commands */
static char id_tag;        /* priv of the CLIENT ID the handshake ends with */

static void timer_after(struct ev_loop *loop, ev_timer *t, long long ms) {
    ev_timer_stop(loop, t);
    ev_timer_set(t, (double)ms / 1000.0, 0.);
    ev_timer_start(loop, t);
}

/* ---- failure and teardown ---------------------------------------------------------------- */

static void fail_with(rconn *c, const eddy_error *err) {
    if (c->failed || c->closed)
        return;
    c->failed = true;
    c->fail_err = *err;
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
        mop *o = &c->q[(c->qhead + i) % c->qcap];
        if (o->reply)
            freeReplyObject(o->reply);
    }
    c->qhead = c->qn = c->ndone = 0;
    c->parked = false;
    ev_timer_stop(c->loop, &c->block_timer);
}

/* Releases the transport; hiredis runs the callbacks of pending commands (swallowed). */
static void kill_transport(rconn *c) {
    ev_timer_stop(c->loop, &c->timer);
    if (c->ac)
        redisAsyncFree(c->ac); /* depth is 0: no hiredis frame of this context is running */
    if (c->mc)
        drop_queue(c);
}

static void destroy(rconn *c) {
    ev_timer_stop(c->loop, &c->timer);
    if (c->ac && c->connected && !c->failed) {
        /* Whatever is still queued (a stopping reader's acknowledgements) goes out if the
         * socket takes it now; replies are not waited for. */
        eddy__sigpipe_guard guard;
        eddy__sigpipe_block(&guard);
        redisAsyncHandleWrite(c->ac);
        eddy__sigpipe_restore(&guard);
    }
    if (c->ac) /* a failed write above may have freed it already (cleanup hook) */
        redisAsyncFree(c->ac);
    eddy__reply_arena_free(c->arena);
    free(c->out);
    if (c->engine) {
        if (c->listener) /* waits for a listener running on another thread */
            eddy__mem_engine_unlisten(c->engine, c->listener);
        ev_async_stop(c->loop, &c->wake);
        drop_queue(c);
        free(c->q);
        if (c->mc)
            eddy__mem_conn_free(c->mc);
        eddy__mem_engine_release(c->engine);
    }
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

static void on_timer(struct ev_loop *loop, ev_timer *w, int revents) {
    rconn *c = w->data;
    c->depth++;
    if (!c->failed) {
        eddy_error err;
        if (!c->connected)
            eddy__fail(&err, EDDY_ERR_IO, "connect timed out after %u ms",
                       c->s->connect_timeout_ms);
        else
            eddy__fail(&err, EDDY_ERR_IO, "no reply within %lld ms",
                       eddy__reply_timeout_ms(c->s, c->block_ms));
        fail_with(c, &err);
    }
    leave_loop(c);
}

/* ---- redis:// and unix://: the libev adapter ------------------------------------------------ */

static void on_readable(struct ev_loop *loop, ev_io *w, int revents) {
    rconn *c = w->data;
    c->depth++;
    redisAsyncHandleRead(c->ac);
    leave_loop(c);
}

static void on_writable(struct ev_loop *loop, ev_io *w, int revents) {
    rconn *c = w->data;
    c->depth++;
    eddy__sigpipe_guard guard;
    eddy__sigpipe_block(&guard);
    redisAsyncHandleWrite(c->ac);
    eddy__sigpipe_restore(&guard);
    leave_loop(c);
}

static void hook_add_read(void *p) {
    rconn *c = p;
    ev_io_start(c->loop, &c->rev); /* a no-op on an active watcher */
}

static void hook_del_read(void *p) {
    rconn *c = p;
    ev_io_stop(c->loop, &c->rev);
}

static void hook_add_write(void *p) {
    rconn *c = p;
    ev_io_start(c->loop, &c->wev);
}

static void hook_del_write(void *p) {
    rconn *c = p;
    ev_io_stop(c->loop, &c->wev);
}

/* hiredis is freeing the context: stop watching its socket, and note why it went. */
static void hook_cleanup(void *p) {
    rconn *c = p;
    ev_io_stop(c->loop, &c->rev);
    ev_io_stop(c->loop, &c->wev);
    redisAsyncContext *ac = c->ac;
    if (!ac)
        return;
    c->ac = NULL;
    if (c->closed || c->failed)
        return;
    eddy_error err;
    if (ac->c.err)
        eddy__redis_context_status(ac->c.err, ac->c.errstr, &err);
    else
        eddy__fail(&err, EDDY_ERR_IO, "connection closed");
    fail_with(c, &err);
}

static void watchdog_arm(rconn *c) {
    if (c->connected) /* before that, the connect timeout runs */
        timer_after(c->loop, &c->timer, eddy__reply_timeout_ms(c->s, c->block_ms));
}

static void tell_up(rconn *c) {
    c->up = true;
    eddy__conn_up(c->s->conn_state, &c->state_epoch);
    c->ops->up(c->owner);
}

static void on_connect(const redisAsyncContext *ac, int status) {
    rconn *c = ac->data;
    if (status != REDIS_OK)
        return; /* hiredis frees the context next; the cleanup hook reports why */
    c->connected = true;
    ev_timer_stop(c->loop, &c->timer);
    if (c->pending > 0)
        watchdog_arm(c);
    if (c->handshake_left == 0 && !c->closed && !c->failed)
        tell_up(c);
}

static void take_reply(rconn *c, void *r, void *priv) {
    if (!r || c->closed || c->failed)
        return;
    redisReply *reply = r;
    if (--c->pending == 0) {
        c->block_ms = -1;
        ev_timer_stop(c->loop, &c->timer);
    } else {
        watchdog_arm(c); /* progress: the silence limit starts again */
    }
    if (priv == &id_tag) {
        /* Refused (an ACL): the id stays unknown, which only makes a pause's cut less exact. */
        eddy_error err;
        if (eddy__client_id_check(reply, &c->client_id, &err) != EDDY_OK)
            fail_with(c, &err);
        else if (--c->handshake_left == 0 && c->connected)
            tell_up(c);
        return;
    }
    if (priv == &handshake_tag) {
        eddy_error err;
        if (eddy__handshake_check(&reply, 1, &err) != EDDY_OK)
            fail_with(c, &err);
        else if (--c->handshake_left == 0 && c->connected)
            tell_up(c);
        return;
    }
    c->ops->reply(c->owner, priv, reply);
}

/* A reply is borrowed for its callback only (rconn_keep copies it), so its arena is reset
 * after each: hiredis parses the next reply only after this returns. */
static void on_reply(redisAsyncContext *ac, void *r, void *priv) {
    rconn *c = ac->data;
    take_reply(c, r, priv);
    if (c->arena)
        eddy__reply_arena_reset(c->arena);
}

/* The command in RESP in c->out (kept between calls; not when grown for a large one). */
static bool format_cmd(rconn *c, const eddy__cmd *cmd, size_t *len) {
    *len = eddy__cmd_resp_size(cmd);
    if (*len > c->out_cap || (c->out_cap > (1u << 20) && *len < c->out_cap / 4)) {
        char *out = malloc(*len);
        if (!out)
            return false;
        free(c->out);
        c->out = out;
        c->out_cap = *len;
    }
    eddy__cmd_resp_write(cmd, c->out);
    return true;
}

static bool redis_send(rconn *c, const eddy__cmd *cmd, long long block_ms, void *priv) {
    size_t len;
    if (!format_cmd(c, cmd, &len) ||
        redisAsyncFormattedCommand(c->ac, on_reply, priv, c->out, len) != REDIS_OK) {
        fail(c, EDDY_ERR_NOMEM, "could not queue a command");
        return false;
    }
    bool was_idle = c->pending++ == 0;
    if (block_ms >= 0)
        c->block_ms = block_ms;
    if (was_idle || block_ms >= 0)
        watchdog_arm(c);
    return true;
}

static void redis_open(rconn *c) {
    const eddy__url *url = &c->s->url;
    eddy__cmdlist hs;
    eddy__cmdlist_init(&hs);
    if (eddy__handshake_cmds(url, &hs) != EDDY_OK) {
        eddy__cmdlist_reset(&hs);
        fail(c, EDDY_ERR_NOMEM, "out of memory");
        return;
    }
    redisAsyncContext *ac = url->kind == EDDY__URL_TCP ? redisAsyncConnect(url->host, url->port)
                                                       : redisAsyncConnectUnix(url->path);
    if (!ac || ac->err) {
        eddy_error err;
        if (!ac)
            eddy__fail(&err, EDDY_ERR_NOMEM, "out of memory connecting");
        else
            eddy__redis_context_status(ac->c.err, ac->c.errstr, &err);
        if (ac)
            redisAsyncFree(ac); /* nothing attached, nothing pending */
        eddy__cmdlist_reset(&hs);
        fail_with(c, &err);
        return;
    }
    c->ac = ac;
    ac->data = c;
    /* Without an arena (out of memory) hiredis's own reply objects serve as well. */
    if (c->arena || (c->arena = eddy__reply_arena_new()))
        eddy__reply_arena_install(c->arena, ac->c.reader);
    ac->ev.data = c;
    ac->ev.addRead = hook_add_read;
    ac->ev.delRead = hook_del_read;
    ac->ev.addWrite = hook_add_write;
    ac->ev.delWrite = hook_del_write;
    ac->ev.cleanup = hook_cleanup;
    ev_io_init(&c->rev, on_readable, ac->c.fd, EV_READ);
    ev_io_init(&c->wev, on_writable, ac->c.fd, EV_WRITE);
    c->rev.data = c->wev.data = c;
    redisAsyncSetConnectCallback(ac, on_connect);
    /* The first write event says whether the connect succeeded, even with nothing to send. */
    hook_add_write(c);
    timer_after(c->loop, &c->timer, c->s->connect_timeout_ms);
    for (size_t i = 0; i < hs.n && !c->failed; i++)
        if (redis_send(c, &hs.cmds[i], -1, &handshake_tag))
            c->handshake_left++;
    eddy__cmdlist_reset(&hs); /* hiredis copied the commands */
    eddy__client_id_cmd(&hs);
    if (eddy__cmdlist_status(&hs) == EDDY_OK && !c->failed &&
        redis_send(c, &hs.cmds[0], -1, &id_tag))
        c->handshake_left++;
    eddy__cmdlist_reset(&hs);
}

/* ---- memory:// --------------------------------------------------------------------------- */

static mop *q_at(rconn *c, size_t i) { return &c->q[(c->qhead + i) % c->qcap]; }

static bool q_push(rconn *c, const eddy__cmd *cmd, void *priv) {
    if (c->qn == c->qcap) {
        size_t cap = c->qcap ? c->qcap * 2 : 16;
        mop *q = malloc(cap * sizeof(*q));
        if (!q)
            return false;
        for (size_t i = 0; i < c->qn; i++)
            q[i] = *q_at(c, i);
        free(c->q);
        c->q = q;
        c->qcap = cap;
        c->qhead = 0;
    }
    *q_at(c, c->qn++) = (mop){cmd, priv, NULL};
    return true;
}

static void mem_written(void *user) {
    rconn *c = user;
    ev_async_send(c->loop, &c->wake); /* any thread; the loop retries a parked read */
}

/* Executes queued commands in order until one has to wait. */
static void mem_run(rconn *c) {
    while (!c->failed && c->ndone < c->qn) {
        mop *o = q_at(c, c->ndone);
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
        mop o = *q_at(c, 0);
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
        mop *o = q_at(c, c->ndone);
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

static bool mem_send(rconn *c, const eddy__cmd *cmd, void *priv) {
    if (!q_push(c, cmd, priv)) {
        fail(c, EDDY_ERR_NOMEM, "out of memory");
        return false;
    }
    mem_run(c);
    if (c->ndone > 0)
        ev_async_send(c->loop, &c->wake);
    return !c->failed;
}

/* ---- interface ---------------------------------------------------------------------------- */

eddy_status rconn_open(struct ev_loop *loop, const eddy__settings *s, const rconn_ops *ops,
                       void *owner, rconn **out) {
    rconn *c = calloc(1, sizeof(*c));
    if (!c)
        return EDDY_ERR_NOMEM;
    c->loop = loop;
    c->client_id = -1;
    c->s = s;
    c->ops = ops;
    c->owner = owner;
    c->block_ms = -1;
    ev_init(&c->timer, on_timer);
    c->timer.data = c;
    if (s->url.kind != EDDY__URL_MEMORY) {
        redis_open(c);
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

long long rconn_client_id(const rconn *c) { return c->ac ? c->client_id : -1; }

bool rconn_send(rconn *c, const eddy__cmd *cmd, long long block_ms, void *priv) {
    if (c->closed || c->failed)
        return false;
    return c->mc ? mem_send(c, cmd, priv) : redis_send(c, cmd, block_ms, priv);
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
    if (c->mc && reply == c->lending) {
        c->lending = NULL;
        return reply;
    }
    /* hiredis frees its reply when the callback returns: keep a copy. */
    return clone_reply(reply);
}

void rconn_drain(rconn *c) {
    if (!c || c->closed || c->failed || c->depth > 0)
        return;
    c->depth++;
    if (c->mc) {
        mem_deliver(c);
    } else if (c->ac && c->connected) {
        eddy__sigpipe_guard guard;
        eddy__sigpipe_block(&guard);
        redisAsyncHandleWrite(c->ac);
        eddy__sigpipe_restore(&guard);
        if (c->ac)
            redisAsyncHandleRead(c->ac);
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
