/* SPDX-License-Identifier: BSD-3-Clause */
/* The event store on the reactive front end: the core (src/store/store.c) checks,
 * builds and reads; this file queues the commands on one connection on the
 * user's loop and hands the replies back, completing each operation through its
 * callback.
 *
 * Invariants:
 * - Operations are kept in the order of their commands on the wire, so each
 * reply belongs to the oldest operation still waiting. An operation leaves the
 * queue before its callback runs.
 * - The store's rules (the library loaded on each new connection, what is sent
 * again after a loss or a lost library) are src/store/store_op.h's; this file
 * sends the load as an internal op in front of the queue, and when that load
 * fails, the operations sent behind it on that connection fail with its error,
 * as the blocking front end's do.
 * - Each callback runs exactly once. Every way into the store (a public call, a
 * connection callback) is bracketed by enter/leave; a close only marks the
 * store, completes the queue with EDDY_ERR_CLOSED and drops the connection, and
 * the outermost leave frees it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config/settings.h"
#include "conn.h"
#include "eddy/rstore.h"
#include "error.h"
#include "link/library.h"
#include "link/link.h"
#include "log.h"
#include "store/store.h"
#include "store/store_op.h"
#include "store_call.h"
#include "timing.h"

typedef enum rop_kind {
    OP_LOAD,
    OP_APPEND,
    OP_READ_ALL,
    OP_READ_STREAM,
    OP_HEAD,
    OP_CKPT,
    OP_CALL /* eddy__rstore_call: one idempotent command, its reply handed over */
} rop_kind;

typedef struct rop {
    struct rop *next;
    rop_kind kind;
    eddy__store_op op; /* its commands, and what a loss or a reply means (store_op.h) */
    redisReply *replies[EDDY__STORE_OP_MAX_CMDS]; /* owned, but the last one while it is read */
    size_t got;
    bool sent;     /* its commands went out on a connection */
    bool fresh;    /* queued when there was no connection: the next one is made for it */
    uint64_t last; /* the connection's number for its last command, 0 until given */
    char *id;      /* the stream id (stream reads) */
    long long after;
    const eddy_filter *filter;
    eddy__ckpt_op ckop;
    eddy_stored_fn each;
    eddy_rstore_append_fn on_append;
    eddy_rstore_page_fn on_page;
    eddy_rstore_stream_page_fn on_stream;
    eddy_rstore_head_fn on_head;
    eddy_rstore_exists_fn on_exists;
    eddy_rstore_checkpoint_read_fn on_read;
    eddy_rstore_done_fn on_done;
    eddy__rstore_reply_fn on_call;
    void *user;
} rop;

struct eddy_rstore {
    struct ev_loop *loop;
    eddy__settings s;
    eddy__store *core;
    eddy__backend_hold *backend; /* memory://: the store's data lives as long as the store */
    rconn *conn;                 /* NULL until needed again after a loss */
    eddy__reconnect gate;        /* backoff.h: each reconnect waits for the backoff */
    bool need_load;              /* the connection is new: the load goes out first */
    bool load_failed;            /* the load on this connection failed (load_err) */
    eddy_error load_err;
    rop *head, *tail, *unsent;
    int depth;
    bool closing;
};

static void conn_up(void *owner);
static void conn_reply(void *owner, void *priv, redisReply *r);
static void conn_down(void *owner, eddy_status st, const eddy_error *err);
static const rconn_ops store_conn_ops = {conn_up, conn_reply, conn_down};

/* ---- ops
 * ----------------------------------------------------------------------------------
 */

static rop *rop_new(rop_kind kind, void *user) {
    rop *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    eddy__store_op_init(&p->op, kind == OP_APPEND, 0);
    p->kind = kind;
    p->user = user;
    return p;
}

static void rop_clear_replies(rop *p) {
    for (size_t i = 0; i < EDDY__STORE_OP_MAX_CMDS; i++) {
        if (p->replies[i])
            freeReplyObject(p->replies[i]);
        p->replies[i] = NULL;
    }
    p->got = 0;
}

static void rop_free(rop *p) {
    if (!p)
        return;
    rop_clear_replies(p);
    eddy__store_op_reset(&p->op);
    free(p->id);
    free(p);
}

/* Runs p's callback with a failure (p has left the queue); err is never NULL
 * for the user. */
static void rop_fail(rop *p, eddy_status st, const eddy_error *err) {
    eddy_error e;
    if (!err) {
        eddy__fail(&e, st, "%s", st == EDDY_ERR_CLOSED ? "the store was closed" : "failed");
        err = &e;
    }
    switch (p->kind) {
    case OP_LOAD:
        break;
    case OP_APPEND:
        if (p->on_append)
            p->on_append(st, 0, err, p->user);
        break;
    case OP_READ_ALL:
        if (p->on_page)
            p->on_page(st, p->after, err, p->user);
        break;
    case OP_READ_STREAM:
        if (p->on_stream)
            p->on_stream(st, p->after, false, err, p->user);
        break;
    case OP_HEAD:
        if (p->on_head)
            p->on_head(st, 0, err, p->user);
        break;
    case OP_CALL:
        if (p->on_call)
            p->on_call(st, NULL, err, p->user);
        break;
    case OP_CKPT:
        if (p->ckop == EDDY__CKPT_EXISTS && p->on_exists)
            p->on_exists(st, false, err, p->user);
        else if (p->ckop == EDDY__CKPT_READ && p->on_read)
            p->on_read(st, NULL, false, err, p->user);
        else if (p->on_done)
            p->on_done(st, err, p->user);
        break;
    }
}

/* ---- the store's life
 * --------------------------------------------------------------------- */

static void store_free(eddy_rstore *s) {
    eddy__store_free(s->core);
    eddy__link_release_backend(s->backend);
    eddy__settings_free(&s->s);
    free(s);
}

static void enter(eddy_rstore *s) { s->depth++; }

static void leave(eddy_rstore *s) {
    if (--s->depth == 0 && s->closing)
        store_free(s);
}

/* Takes the whole queue out, so that callbacks run while it is processed see an
 * empty one. */
static rop *take_queue(eddy_rstore *s) {
    rop *p = s->head;
    s->head = s->tail = s->unsent = NULL;
    return p;
}

static void fail_list(rop *p, eddy_status st, const eddy_error *err) {
    while (p) {
        rop *next = p->next;
        rop_fail(p, st, err);
        rop_free(p);
        p = next;
    }
}

/* Puts what is unsent on the wire when the connection is up, opening one when
 * needed (the load first on a new connection). */
static void pump(eddy_rstore *s) {
    if (s->closing)
        return;
    if (!s->conn) {
        if (!s->head)
            return;
        if (eddy__rconn_open_gated(s->loop, &s->s, &store_conn_ops, s, &s->gate, &s->conn) !=
            EDDY_OK) {
            eddy_error e;
            s->conn = NULL;
            eddy__fail(&e, EDDY_ERR_NOMEM, "out of memory connecting");
            fail_list(take_queue(s), EDDY_ERR_NOMEM, &e);
            return;
        }
        s->need_load = true;
        s->load_failed = false;
    }
    if (!eddy__rconn_is_up(s->conn))
        return;
    if (s->need_load) {
        /* Nothing was sent on this connection yet: the whole queue is unsent. */
        rop *l = rop_new(OP_LOAD, NULL);
        if (!l || eddy__library_load_cmds(&l->op.cmds) != EDDY_OK) {
            eddy_error e;
            rop_free(l);
            eddy__fail(&e, EDDY_ERR_NOMEM, "out of memory");
            fail_list(take_queue(s), EDDY_ERR_NOMEM, &e);
            return;
        }
        s->need_load = false;
        l->next = s->head;
        s->head = l;
        if (!s->tail)
            s->tail = l;
        s->unsent = l;
    }
    for (rop *p = s->unsent; p; p = p->next) {
        p->sent = true;
        for (size_t i = 0; i < p->op.cmds.n; i++)
            if (!(p->last = eddy__rconn_send(s->conn, &p->op.cmds.cmds[i], -1, p))) {
                s->unsent = NULL; /* down follows from the loop and settles them */
                return;
            }
    }
    s->unsent = NULL;
}

static void enqueue(eddy_rstore *s, rop *p) {
    p->next = NULL;
    if (s->tail)
        s->tail->next = p;
    else
        s->head = p;
    s->tail = p;
    if (!s->unsent)
        s->unsent = p;
}

/* Queues a new op from a public call. The op is the store's from here on. */
static eddy_status submit(eddy_rstore *s, rop *p, eddy_error *err) {
    if (p->op.cmds.n == 0 || p->op.cmds.n > EDDY__STORE_OP_MAX_CMDS) {
        rop_free(p);
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "unexpected command count");
    }
    enter(s);
    p->fresh = !s->conn;
    enqueue(s, p);
    pump(s);
    leave(s);
    return EDDY_OK;
}

/* ---- the connection
 * ----------------------------------------------------------------------- */

static void conn_up(void *owner) {
    eddy_rstore *s = owner;
    enter(s);
    pump(s);
    leave(s);
}

static void conn_down(void *owner, eddy_status st, const eddy_error *err) {
    eddy_rstore *s = owner;
    enter(s);
    /* The store's tracker warns once per outage (conn_state.h); each failed try is debug only. */
    if (s->head)
        eddy__log(&s->s.log, EDDY_LOG_DEBUG, "store connection: %s", err->detail);
    uint64_t sent = eddy__rconn_sent(s->conn);
    eddy__rconn_close(s->conn);
    s->conn = NULL;
    rop *p = take_queue(s);
    bool first = true; /* the oldest op of the connection not answered: the refusal's */
    while (p) {
        rop *next = p->next;
        bool was_first = first && p->sent;
        if (p->sent)
            first = false;
        if (p->kind == OP_LOAD) {
            rop_free(p);
        } else if (p->sent && !s->closing &&
                   eddy__store_op_lost(&p->op, st, err, was_first, p->fresh)) {
            /* Sent again on the next connection (its backoff): an idempotent op once, an
             * append a cluster refused unwritten while its call's deadline allows. */
            p->sent = false;
            p->last = 0;
            rop_clear_replies(p);
            enqueue(s, p);
        } else {
            eddy_error e;
            eddy_status pst = eddy__link_outcome(st, err, p->last, sent, &e);
            rop_fail(p, pst, err || pst != st ? &e : NULL);
            rop_free(p);
        }
        p = next;
    }
    pump(s);
    leave(s);
}

/* Stops a page when the store was closed by one of its callbacks. */
typedef struct each_ctx {
    eddy_rstore *s;
    rop *p;
} each_ctx;

static eddy_status each_guard(const eddy_event *ev, const eddy_event_meta *meta, void *user) {
    each_ctx *c = user;
    if (c->s->closing)
        return EDDY_ERR_CLOSED;
    return c->p->each(ev, meta, c->p->user);
}

/* Makes sure a failure carries a detail for the user. */
static const eddy_error *detail(eddy_status st, eddy_error *e) {
    if (st == EDDY_OK)
        return NULL;
    if (e->status != st)
        eddy__fail(e, st, "%s",
                   st == EDDY_ERR_CLOSED ? "the store was closed" : "stopped by the callback");
    return e;
}

/* The server had lost the library: p's commands, now behind a load, go once more (true), unless
 * the store is closing (false, *st the closing's). */
static bool send_again(eddy_rstore *s, rop *p, eddy_status *st, eddy_error *e) {
    if (s->closing) {
        *st = eddy__fail(e, EDDY_ERR_CLOSED, "the store was closed");
        return false;
    }
    p->sent = false;
    p->last = 0;
    p->replies[p->got] = NULL; /* the last reply is the connection's: not ours */
    rop_clear_replies(p);
    enqueue(s, p);
    pump(s);
    return true;
}

/* Interprets p's replies and runs its callback; false when p was queued again
 * instead. */
static bool finish(eddy_rstore *s, rop *p) {
    eddy_error e = {0};
    eddy_status st;
    switch (p->kind) {
    case OP_LOAD:
        if ((st = eddy__library_load_result(&p->op.cmds, 0, p->replies, NULL, &e)) != EDDY_OK) {
            s->load_failed = true;
            s->load_err = e;
            eddy__log(&s->s.log, EDDY_LOG_WARN, "store: loading the function library: %s",
                      e.detail);
        }
        return true;
    case OP_APPEND: {
        long long v = 0;
        bool again = false;
        st = eddy__store_op_append_result(&p->op, p->replies, &v, &again, &s->s.log, &e);
        if (again && send_again(s, p, &st, &e))
            return false;
        if (p->on_append)
            p->on_append(st, st == EDDY_OK ? v : 0, detail(st, &e), p->user);
        return true;
    }
    case OP_READ_ALL: {
        long long next = p->after;
        each_ctx c = {s, p};
        st = eddy__store_read_all_page(s->core, p->replies[0], p->filter, each_guard, &c, p->after,
                                       &next, &e);
        if (st == EDDY_OK && s->closing)
            st = EDDY_ERR_CLOSED;
        if (p->on_page)
            p->on_page(st, next, detail(st, &e), p->user);
        return true;
    }
    case OP_READ_STREAM: {
        long long after = p->after;
        bool more = false;
        each_ctx c = {s, p};
        st = eddy__store_read_stream_page(s->core, p->id, p->replies[0], each_guard, &c, &after,
                                          &more, &e);
        if (st == EDDY_OK && s->closing)
            st = EDDY_ERR_CLOSED;
        if (p->on_stream)
            p->on_stream(st, after, st == EDDY_OK && more, detail(st, &e), p->user);
        return true;
    }
    case OP_HEAD: {
        long long pos = 0;
        st = eddy__store_head_result(p->replies[0], &pos, &e);
        if (p->on_head)
            p->on_head(st, st == EDDY_OK ? pos : 0, detail(st, &e), p->user);
        return true;
    }
    case OP_CALL: {
        size_t at = 0;
        bool again = false;
        st = eddy__store_op_call_result(&p->op, p->replies, &at, &again, &s->s.log, &e);
        if (again && send_again(s, p, &st, &e))
            return false;
        if (p->on_call)
            p->on_call(st, st == EDDY_OK ? p->replies[at] : NULL, detail(st, &e), p->user);
        return true;
    }
    case OP_CKPT:
        break;
    }
    const redisReply *r = p->replies[0];
    if (p->ckop == EDDY__CKPT_EXISTS) {
        bool exists = false;
        st = eddy__ckpt_exists_result(r, &exists, &e);
        if (p->on_exists)
            p->on_exists(st, st == EDDY_OK && exists, detail(st, &e), p->user);
    } else if (p->ckop == EDDY__CKPT_READ) {
        size_t size = r && r->type == REDIS_REPLY_STRING ? r->len + 1 : 1;
        char *buf = malloc(size);
        bool found = false;
        if (!buf)
            st = eddy__fail(&e, EDDY_ERR_NOMEM, "out of memory");
        else
            st = eddy__ckpt_read_result(r, buf, size, &found, &e);
        found = st == EDDY_OK && found;
        if (p->on_read)
            p->on_read(st, found ? buf : NULL, found, detail(st, &e), p->user);
        free(buf);
    } else {
        st = eddy__ckpt_write_result(r, p->ckop, &e);
        if (p->on_done)
            p->on_done(st, detail(st, &e), p->user);
    }
    return true;
}

static void conn_reply(void *owner, void *priv, redisReply *r) {
    eddy_rstore *s = owner;
    rop *p = s->head;
    (void)priv; /* always the head: replies come in command order */
    enter(s);
    if (p->got + 1 < p->op.cmds.n) {
        /* Earlier replies are read together with the last: keep them. Without
         * memory for one, its op reads it as a lost reply (NULL). */
        p->replies[p->got++] = eddy__rconn_keep(s->conn, r);
        leave(s);
        return;
    }
    p->replies[p->got] = r;
    s->head = p->next;
    if (!s->head)
        s->tail = NULL;
    bool done;
    if (p->kind != OP_LOAD && s->load_failed) {
        /* The connection never got the library: fail as the blocking front end
         * does. */
        eddy_error e = s->load_err;
        rop_fail(p, e.status, &e);
        done = true;
    } else {
        done = finish(s, p);
    }
    if (done) {
        p->replies[p->got] = NULL; /* hiredis's or the connection's, not ours */
        rop_free(p);
    }
    leave(s);
}

/* ---- public API
 * ---------------------------------------------------------------------------
 */

eddy_status eddy_rstore_open(struct ev_loop *loop, const eddy_settings *settings, eddy_rstore **out,
                             eddy_error *err) {
    if (!out)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "out is NULL");
    *out = NULL;
    if (!loop)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "loop is NULL");
    eddy_rstore *s = calloc(1, sizeof(*s));
    if (!s)
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    s->loop = loop;
    eddy__reconnect_init(&s->gate, (unsigned)(uintptr_t)s ^ (unsigned)eddy__mono_ms());
    eddy_status st = eddy__settings_copy(&s->s, settings, err);
    if (st != EDDY_OK) {
        free(s);
        return st;
    }
    if (!(s->core = eddy__store_new(&s->s)) || !eddy__link_hold_backend(&s->s, &s->backend) ||
        eddy__rconn_open_gated(loop, &s->s, &store_conn_ops, s, &s->gate, &s->conn) != EDDY_OK) {
        s->conn = NULL;
        store_free(s);
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    }
    /* Connect and load now, so that the first operation does not wait for it. */
    s->need_load = true;
    enter(s);
    pump(s);
    leave(s);
    *out = s;
    return EDDY_OK;
}

void eddy_rstore_close(eddy_rstore *store) {
    if (!store || store->closing)
        return;
    enter(store);
    store->closing = true;
    eddy__rconn_close(store->conn); /* deferred by the connection when inside its callback */
    store->conn = NULL;
    eddy_error e;
    eddy__fail(&e, EDDY_ERR_CLOSED, "the store was closed");
    fail_list(take_queue(store), EDDY_ERR_CLOSED, &e);
    leave(store);
}

static eddy_status check_store(eddy_rstore *s, bool has_done, eddy_error *err) {
    if (!s)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "store is NULL");
    if (!has_done)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "done is NULL");
    if (s->closing)
        return eddy__fail(err, EDDY_ERR_CLOSED, "the store is closed");
    return EDDY_OK;
}

eddy_status eddy_rstore_append(eddy_rstore *store, const char *stream_id,
                               const eddy_event *const *evs, size_t n, const eddy_append_opts *opts,
                               eddy_rstore_append_fn done, void *user, eddy_error *err) {
    eddy_status st = check_store(store, done != NULL, err);
    if (st != EDDY_OK)
        return st;
    rop *p = rop_new(OP_APPEND, user);
    if (!p)
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    p->op.until = eddy__mono_ms() + eddy__command_timeout_ms(&store->s, -1);
    if ((st = eddy__store_append_prepare(store->core, stream_id, evs, n, opts, &p->op.cmds, err)) !=
        EDDY_OK) {
        rop_free(p);
        return st;
    }
    p->on_append = done;
    return submit(store, p, err);
}

eddy_status eddy_rstore_read_page(eddy_rstore *store, long long after_position, size_t max_entries,
                                  const eddy_filter *filter, eddy_stored_fn each,
                                  eddy_rstore_page_fn done, void *user, eddy_error *err) {
    eddy_status st = check_store(store, done != NULL, err);
    if (st != EDDY_OK)
        return st;
    if (!each)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "each is NULL");
    rop *p = rop_new(OP_READ_ALL, user);
    if (!p)
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    if ((st = eddy__store_read_all_cmd(store->core, after_position, max_entries, &p->op.cmds,
                                       err)) != EDDY_OK) {
        rop_free(p);
        return st;
    }
    p->after = after_position;
    p->filter = filter;
    p->each = each;
    p->on_page = done;
    return submit(store, p, err);
}

eddy_status eddy_rstore_read_stream_page(eddy_rstore *store, const char *stream_id,
                                         long long after_version, eddy_stored_fn each,
                                         eddy_rstore_stream_page_fn done, void *user,
                                         eddy_error *err) {
    eddy_status st = check_store(store, done != NULL, err);
    if (st != EDDY_OK)
        return st;
    if (!each)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "each is NULL");
    rop *p = rop_new(OP_READ_STREAM, user);
    if (!p)
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    if ((st = eddy__store_read_stream_cmd(store->core, stream_id, after_version, &p->op.cmds,
                                          err)) != EDDY_OK) {
        rop_free(p);
        return st;
    }
    if (!(p->id = strdup(stream_id))) {
        rop_free(p);
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    }
    p->after = after_version;
    p->each = each;
    p->on_stream = done;
    return submit(store, p, err);
}

/* A whole stream, page after page (eddy_rstore_read_stream): each page's completion asks for
 * the next, so no more than a page is held and the loop is never held for long. */
typedef struct stream_read {
    eddy_rstore *store;
    char *id;
    eddy_stored_fn each;
    eddy_rstore_done_fn done;
    void *user;
} stream_read;

static eddy_status stream_read_each(const eddy_event *ev, const eddy_event_meta *meta, void *user) {
    stream_read *r = user;
    return r->each(ev, meta, r->user);
}

static void stream_read_page(eddy_status st, long long last_version, bool more,
                             const eddy_error *err, void *user) {
    stream_read *r = user;
    eddy_error e = {0};
    if (st == EDDY_OK && more) {
        st = eddy_rstore_read_stream_page(r->store, r->id, last_version, stream_read_each,
                                          stream_read_page, r, &e);
        if (st == EDDY_OK)
            return; /* that page's completion goes on */
        err = &e;
    }
    r->done(st, st == EDDY_OK ? NULL : err, r->user);
    free(r->id);
    free(r);
}

eddy_status eddy_rstore_read_stream(eddy_rstore *store, const char *stream_id,
                                    long long after_version, eddy_stored_fn each,
                                    eddy_rstore_done_fn done, void *user, eddy_error *err) {
    eddy_status st = check_store(store, done != NULL, err);
    if (st != EDDY_OK)
        return st;
    if (!each)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "each is NULL");
    stream_read *r = calloc(1, sizeof(*r));
    if (!r || !stream_id || !(r->id = strdup(stream_id))) {
        free(r);
        return stream_id ? eddy__fail(err, EDDY_ERR_NOMEM, "out of memory")
                         : eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "stream_id is NULL");
    }
    *r = (stream_read){store, r->id, each, done, user};
    st = eddy_rstore_read_stream_page(store, stream_id, after_version, stream_read_each,
                                      stream_read_page, r, err);
    if (st != EDDY_OK) {
        free(r->id);
        free(r);
    }
    return st;
}

eddy_status eddy_rstore_head(eddy_rstore *store, eddy_rstore_head_fn done, void *user,
                             eddy_error *err) {
    eddy_status st = check_store(store, done != NULL, err);
    if (st != EDDY_OK)
        return st;
    rop *p = rop_new(OP_HEAD, user);
    if (!p || eddy__store_head_cmd(store->core, &p->op.cmds) != EDDY_OK) {
        rop_free(p);
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    }
    p->on_head = done;
    return submit(store, p, err);
}

/* ---- checkpoints
 * -------------------------------------------------------------------------- */

static eddy_status ckpt_submit(eddy_rstore *store, eddy__ckpt_op op, const char *feed_id,
                               const char *value, rop *p, eddy_error *err) {
    eddy_status st = eddy__ckpt_cmd(store->core, op, feed_id, value, &p->op.cmds, err);
    if (st != EDDY_OK) {
        rop_free(p);
        return st;
    }
    p->ckop = op;
    return submit(store, p, err);
}

eddy_status eddy_rstore_checkpoint_exists(eddy_rstore *store, const char *feed_id,
                                          eddy_rstore_exists_fn done, void *user, eddy_error *err) {
    eddy_status st = check_store(store, done != NULL, err);
    if (st != EDDY_OK)
        return st;
    rop *p = rop_new(OP_CKPT, user);
    if (!p)
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    p->on_exists = done;
    return ckpt_submit(store, EDDY__CKPT_EXISTS, feed_id, NULL, p, err);
}

eddy_status eddy_rstore_checkpoint_read(eddy_rstore *store, const char *feed_id,
                                        eddy_rstore_checkpoint_read_fn done, void *user,
                                        eddy_error *err) {
    eddy_status st = check_store(store, done != NULL, err);
    if (st != EDDY_OK)
        return st;
    rop *p = rop_new(OP_CKPT, user);
    if (!p)
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    p->on_read = done;
    return ckpt_submit(store, EDDY__CKPT_READ, feed_id, NULL, p, err);
}

eddy_status eddy_rstore_checkpoint_save(eddy_rstore *store, const char *feed_id, const char *value,
                                        eddy_rstore_done_fn done, void *user, eddy_error *err) {
    eddy_status st = check_store(store, done != NULL, err);
    if (st != EDDY_OK)
        return st;
    if (!value)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "value is NULL");
    rop *p = rop_new(OP_CKPT, user);
    if (!p)
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    p->on_done = done;
    return ckpt_submit(store, EDDY__CKPT_SAVE, feed_id, value, p, err);
}

eddy_status eddy_rstore_checkpoint_remove(eddy_rstore *store, const char *feed_id,
                                          eddy_rstore_done_fn done, void *user, eddy_error *err) {
    eddy_status st = check_store(store, done != NULL, err);
    if (st != EDDY_OK)
        return st;
    rop *p = rop_new(OP_CKPT, user);
    if (!p)
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    p->on_done = done;
    return ckpt_submit(store, EDDY__CKPT_REMOVE, feed_id, NULL, p, err);
}

/* ---- calls for the front end's other files (store_call.h)
 * --------------------------------------------------------- */

eddy_status eddy__rstore_call(eddy_rstore *store, eddy__cmdlist *cmds, eddy__rstore_reply_fn fn,
                              void *user, eddy_error *err) {
    eddy_status st = check_store(store, fn != NULL, err);
    if (st != EDDY_OK)
        return st;
    rop *p = rop_new(OP_CALL, user);
    if (!p)
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    p->op.cmds = *cmds;
    eddy__cmdlist_init(cmds);
    p->on_call = fn;
    return submit(store, p, err);
}

const char *eddy__rstore_ns(const eddy_rstore *store) { return store->s.ns; }
