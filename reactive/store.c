/* SPDX-License-Identifier: BSD-3-Clause */
/* The event store on the reactive front end: the core (src/store/store.c) checks,
 * builds and reads; this file queues the commands on one connection on the
 * user's loop and hands the replies back, completing each operation through its
 * callback.
 *
 * Invariants:
 * - Which reply belongs to which op, the load in front on a new connection, what a failed load
 * or a lost connection means for each op: src/store/store_queue.h's. An operation leaves the
 * queue before its callback runs.
 * - What an op's replies mean is src/store/store_req.h's: they are read into
 * one result, which one completion (`complete`) hands to the op's callback,
 * whatever its kind.
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
#include "link/link.h"
#include "log.h"
#include "store/store.h"
#include "store/store_queue.h"
#include "store/store_req.h"
#include "store_call.h"
#include "timing.h"

/* An op's callback, by its request's kind (the user's `done`). */
typedef union rop_fn {
    eddy_rstore_append_fn append;
    eddy_rstore_page_fn page;
    eddy_rstore_stream_page_fn stream;
    eddy_rstore_head_fn head;
    eddy_rstore_exists_fn exists;
    eddy_rstore_checkpoint_read_fn read;
    eddy_rstore_done_fn done; /* checkpoint saves and removes, eddy__rstore_call */
} rop_fn;

typedef struct rop {
    eddy__store_slot q; /* first: its place in the queue, its request and result; the replies
                           are owned, but the last one while it is read */
    eddy_rstore *store;
    eddy_stored_fn each; /* a read's, behind each_guard */
    rop_fn on;
    void *user;
} rop;

struct eddy_rstore {
    struct ev_loop *loop;
    eddy__settings s;
    eddy__store *core;
    eddy__backend_hold *backend; /* memory://: the store's data lives as long as the store */
    rconn *conn;                 /* NULL until needed again after a loss */
    eddy__reconnect gate;        /* backoff.h: each reconnect waits for the backoff */
    eddy__store_queue queue;
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

static rop *rop_new(eddy_rstore *s, void *user) {
    rop *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->store = s; /* p->q.req zeroed: safe to reset until a builder fills it */
    p->user = user;
    return p;
}

static void rop_free(rop *p) {
    if (!p)
        return;
    eddy__store_slot_clear(&p->q);
    eddy__store_req_reset(&p->q.req);
    free(p);
}

/* Runs p's callback with its request's result (p has left the queue): the one completion of
 * every op. A failure always carries a detail for the user. */
static void complete(rop *p) {
    const eddy__store_req *q = &p->q.req;
    eddy_status st = q->st;
    bool ok = st == EDDY_OK;
    if (!ok && p->q.err.status != st)
        eddy__fail(&p->q.err, st, "%s",
                   st == EDDY_ERR_CLOSED ? "the store was closed" : "stopped by the callback");
    const eddy_error *err = ok ? NULL : &p->q.err;
    switch (q->kind) {
    case EDDY__SREQ_LOAD:
        break;
    case EDDY__SREQ_APPEND:
        p->on.append(st, q->at, err, p->user);
        break;
    case EDDY__SREQ_READ_ALL:
        p->on.page(st, q->at, err, p->user);
        break;
    case EDDY__SREQ_READ_STREAM:
        if (q->whole)
            p->on.done(st, err, p->user);
        else
            p->on.stream(st, q->at, ok && q->more, err, p->user);
        break;
    case EDDY__SREQ_HEAD:
        p->on.head(st, q->at, err, p->user);
        break;
    case EDDY__SREQ_CKPT:
        if (q->ckop == EDDY__CKPT_EXISTS)
            p->on.exists(st, ok && q->exists, err, p->user);
        else if (q->ckop == EDDY__CKPT_READ)
            p->on.read(st, ok && q->found ? q->buf : NULL, ok && q->found, err, p->user);
        else
            p->on.done(st, err, p->user);
        break;
    case EDDY__SREQ_CALL:
        p->on.done(st, err, p->user);
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

/* Completes and frees the ops of a list taken out of the queue (callbacks run meanwhile see
 * an empty one), each with err, or with its own failure when err is NULL. */
static void fail_list(eddy__store_slot *p, const eddy_error *err) {
    while (p) {
        eddy__store_slot *next = p->next;
        if (err) {
            p->req.st = err->status;
            p->err = *err;
        }
        complete((rop *)p);
        rop_free((rop *)p);
        p = next;
    }
}

/* Puts what is unsent on the wire when the connection is up, opening one when
 * needed (the load first on a new connection). */
static void pump(eddy_rstore *s) {
    if (s->closing)
        return;
    eddy_error e;
    if (!s->conn) {
        if (!eddy__store_queue_head(&s->queue))
            return;
        if (eddy__rconn_open_gated(s->loop, &s->s, &store_conn_ops, s, &s->gate, &s->conn) !=
            EDDY_OK) {
            s->conn = NULL;
            eddy__fail(&e, EDDY_ERR_NOMEM, "out of memory connecting");
            fail_list(eddy__store_queue_take(&s->queue), &e);
            return;
        }
    }
    if (!eddy__rconn_is_up(s->conn))
        return;
    eddy_status st;
    eddy__store_slot *p;
    while ((p = eddy__store_queue_next(&s->queue, &st, &e)))
        for (size_t i = 0; i < p->req.op.cmds.n; i++)
            if (!(p->last = eddy__rconn_send(s->conn, &p->req.op.cmds.cmds[i], -1, p))) {
                eddy__store_queue_stall(&s->queue); /* down follows from the loop */
                return;
            }
    if (st != EDDY_OK)
        fail_list(eddy__store_queue_take(&s->queue), &e);
}

/* Queues a new op from a public call. The op is the store's from here on. */
static eddy_status submit(eddy_rstore *s, rop *p, eddy_error *err) {
    if (p->q.req.op.cmds.n == 0 || p->q.req.op.cmds.n > EDDY__STORE_OP_MAX_CMDS) {
        rop_free(p);
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "unexpected command count");
    }
    enter(s);
    eddy__store_queue_push(&s->queue, &p->q, s->conn != NULL);
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
    if (eddy__store_queue_head(&s->queue))
        eddy__log(&s->s.log, EDDY_LOG_DEBUG, "store connection: %s", err->detail);
    uint64_t sent = eddy__rconn_sent(s->conn);
    eddy__rconn_close(s->conn);
    s->conn = NULL;
    fail_list(eddy__store_queue_down(&s->queue, st, err, sent, s->closing), NULL);
    pump(s);
    leave(s);
}

/* Stops a page when the store was closed by one of its callbacks. */
static eddy_status each_guard(const eddy_event *ev, const eddy_event_meta *meta, void *user) {
    rop *p = user;
    if (p->store->closing)
        return EDDY_ERR_CLOSED;
    return p->each(ev, meta, p->user);
}

/* Reads p's replies into its result and completes it, or queues it again (behind a load when
 * the server had lost the library, or a whole stream's next page) unless the store is closing;
 * false when queued again. */
static bool finish(eddy_rstore *s, rop *p) {
    eddy__store_req *q = &p->q.req;
    if (eddy__store_req_done(q, s->core, p->q.replies, &s->s.log, &p->q.err)) {
        if (!s->closing) {
            p->q.replies[p->q.got] = NULL; /* the last reply is the connection's: not ours */
            eddy__store_slot_clear(&p->q);
            eddy__store_queue_again(&s->queue, &p->q);
            pump(s);
            return false;
        }
        q->st = eddy__fail(&p->q.err, EDDY_ERR_CLOSED, "the store was closed");
    }
    if (p->each && q->st == EDDY_OK && s->closing)
        q->st = EDDY_ERR_CLOSED;
    complete(p);
    return true;
}

static void conn_reply(void *owner, void *priv, redisReply *r) {
    eddy_rstore *s = owner;
    eddy__store_slot *p = eddy__store_queue_head(&s->queue);
    (void)priv; /* always the head: replies come in command order */
    enter(s);
    if (p->got + 1 < p->req.op.cmds.n) {
        /* Earlier replies are read together with the last: keep them. Without
         * memory for one, its op reads it as a lost reply (NULL). */
        p->replies[p->got++] = eddy__rconn_keep(s->conn, r);
        leave(s);
        return;
    }
    p->replies[p->got] = r;
    bool done = true;
    switch (eddy__store_queue_answered(&s->queue, s->core, &s->s.log, &p)) {
    case EDDY__STORE_LOADED:
        break;
    case EDDY__STORE_FAILED:
        complete((rop *)p);
        break;
    case EDDY__STORE_READ:
        done = finish(s, (rop *)p);
        break;
    }
    if (done) {
        p->replies[p->got] = NULL; /* hiredis's or the connection's, not ours */
        if (p == &s->queue.load)
            eddy__store_slot_clear(p);
        else
            rop_free((rop *)p);
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
    eddy__store_queue_init(&s->queue);
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
    fail_list(eddy__store_queue_take(&store->queue), &e);
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

/* Queues p once its request was built (st), or frees it. */
static eddy_status submit_built(eddy_rstore *s, rop *p, eddy_status st, eddy_error *err) {
    if (st != EDDY_OK) {
        rop_free(p);
        return st;
    }
    return submit(s, p, err);
}

/* A new op for a public call whose `done` (or fn) is given; NULL with *st set on a refusal. */
static rop *start_op(eddy_rstore *s, bool has_done, void *user, eddy_status *st, eddy_error *err) {
    if ((*st = check_store(s, has_done, err)) != EDDY_OK)
        return NULL;
    rop *p = rop_new(s, user);
    if (!p)
        *st = eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    return p;
}

eddy_status eddy_rstore_append(eddy_rstore *store, const char *stream_id,
                               const eddy_event *const *evs, size_t n, const eddy_append_opts *opts,
                               eddy_rstore_append_fn done, void *user, eddy_error *err) {
    eddy_status st;
    rop *p = start_op(store, done != NULL, user, &st, err);
    if (!p)
        return st;
    p->on.append = done;
    st = eddy__store_req_append(&p->q.req, store->core, stream_id, evs, n, opts, err);
    return submit_built(store, p, st, err);
}

/* A read of a page: its entries go to each, behind each_guard. */
static rop *start_read(eddy_rstore *s, eddy_stored_fn each, bool has_done, void *user,
                       eddy_status *st, eddy_error *err) {
    if ((*st = check_store(s, has_done, err)) != EDDY_OK)
        return NULL;
    if (!each) {
        *st = eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "each is NULL");
        return NULL;
    }
    rop *p = start_op(s, true, user, st, err);
    if (p)
        p->each = each;
    return p;
}

eddy_status eddy_rstore_read_page(eddy_rstore *store, long long after_position, size_t max_entries,
                                  const eddy_filter *filter, eddy_stored_fn each,
                                  eddy_rstore_page_fn done, void *user, eddy_error *err) {
    eddy_status st;
    rop *p = start_read(store, each, done != NULL, user, &st, err);
    if (!p)
        return st;
    p->on.page = done;
    st = eddy__store_req_read_all(&p->q.req, store->core, after_position, max_entries, filter,
                                  each_guard, p, err);
    return submit_built(store, p, st, err);
}

eddy_status eddy_rstore_read_stream_page(eddy_rstore *store, const char *stream_id,
                                         long long after_version, eddy_stored_fn each,
                                         eddy_rstore_stream_page_fn done, void *user,
                                         eddy_error *err) {
    eddy_status st;
    rop *p = start_read(store, each, done != NULL, user, &st, err);
    if (!p)
        return st;
    p->on.stream = done;
    st = eddy__store_req_read_stream(&p->q.req, store->core, stream_id, after_version, false,
                                     each_guard, p, err);
    return submit_built(store, p, st, err);
}

/* A whole stream, page after page in one op (store_req.h): no more than a page is held, and
 * the loop is never held for long. */
eddy_status eddy_rstore_read_stream(eddy_rstore *store, const char *stream_id,
                                    long long after_version, eddy_stored_fn each,
                                    eddy_rstore_done_fn done, void *user, eddy_error *err) {
    eddy_status st;
    rop *p = start_read(store, each, done != NULL, user, &st, err);
    if (!p)
        return st;
    if (!stream_id) {
        rop_free(p);
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "stream_id is NULL");
    }
    p->on.done = done;
    st = eddy__store_req_read_stream(&p->q.req, store->core, stream_id, after_version, true,
                                     each_guard, p, err);
    return submit_built(store, p, st, err);
}

eddy_status eddy_rstore_head(eddy_rstore *store, eddy_rstore_head_fn done, void *user,
                             eddy_error *err) {
    eddy_status st;
    rop *p = start_op(store, done != NULL, user, &st, err);
    if (!p)
        return st;
    p->on.head = done;
    return submit_built(store, p, eddy__store_req_head(&p->q.req, store->core, err), err);
}

/* ---- checkpoints
 * -------------------------------------------------------------------------- */

static eddy_status ckpt_submit(eddy_rstore *store, eddy__ckpt_op op, const char *feed_id,
                               const char *value, rop_fn on, bool has_done, void *user,
                               eddy_error *err) {
    eddy_status st;
    rop *p = start_op(store, has_done, user, &st, err);
    if (!p)
        return st;
    p->on = on;
    st = eddy__store_req_ckpt(&p->q.req, store->core, op, feed_id, value, NULL, 0, err);
    return submit_built(store, p, st, err);
}

eddy_status eddy_rstore_checkpoint_exists(eddy_rstore *store, const char *feed_id,
                                          eddy_rstore_exists_fn done, void *user, eddy_error *err) {
    return ckpt_submit(store, EDDY__CKPT_EXISTS, feed_id, NULL, (rop_fn){.exists = done},
                       done != NULL, user, err);
}

eddy_status eddy_rstore_checkpoint_read(eddy_rstore *store, const char *feed_id,
                                        eddy_rstore_checkpoint_read_fn done, void *user,
                                        eddy_error *err) {
    return ckpt_submit(store, EDDY__CKPT_READ, feed_id, NULL, (rop_fn){.read = done}, done != NULL,
                       user, err);
}

eddy_status eddy_rstore_checkpoint_save(eddy_rstore *store, const char *feed_id, const char *value,
                                        eddy_rstore_done_fn done, void *user, eddy_error *err) {
    eddy_status st = check_store(store, done != NULL, err);
    if (st != EDDY_OK)
        return st;
    if (!value)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "value is NULL");
    return ckpt_submit(store, EDDY__CKPT_SAVE, feed_id, value, (rop_fn){.done = done}, true, user,
                       err);
}

eddy_status eddy_rstore_checkpoint_remove(eddy_rstore *store, const char *feed_id,
                                          eddy_rstore_done_fn done, void *user, eddy_error *err) {
    return ckpt_submit(store, EDDY__CKPT_REMOVE, feed_id, NULL, (rop_fn){.done = done},
                       done != NULL, user, err);
}

/* ---- calls for the front end's other files (store_call.h)
 * --------------------------------------------------------- */

eddy_status eddy__rstore_call(eddy_rstore *store, eddy__cmdlist *cmds, eddy__store_reply_fn read,
                              void *read_user, eddy_rstore_done_fn done, void *user,
                              eddy_error *err) {
    eddy_status st;
    rop *p = start_op(store, read != NULL && done != NULL, user, &st, err);
    if (!p)
        return st;
    p->on.done = done;
    eddy__store_req_call(&p->q.req, cmds, read, read_user);
    return submit(store, p, err);
}

const char *eddy__rstore_ns(const eddy_rstore *store) { return store->s.ns; }
