/* SPDX-License-Identifier: BSD-3-Clause */
/* The event store on the blocking front end: the core (src/store/store.c) checks, builds and reads;
 * this file sends, on one connection behind a mutex, and makes the calling thread wait.
 *
 * The store's rules are the core's, as on the reactive front end: the queue (src/store/
 * store_queue.h) puts the library's load in front on a new connection, matches replies to ops,
 * fails the op behind a failed load and says what a loss sends again; what each operation's
 * replies mean is src/store/store_req.h's. Every operation is one request run by `run`, which
 * is the queue's only op while the lock is held. The lock is held only while commands travel,
 * never while a read's callback runs, so a callback may use the store (append, read) without
 * deadlocking. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "config/settings.h"
#include "conn.h"
#include "eddy/store.h"
#include "error.h"
#include "link/link.h"
#include "log.h"
#include "store/store.h"
#include "store/store_queue.h"
#include "store/store_req.h"
#include "store_call.h"
#include "timing.h"

struct eddy_store {
    eddy__settings s;
    eddy__store *core;
    pthread_mutex_t lock; /* one pipeline at a time on conn; guards queue */
    bconn conn;
    eddy__store_queue queue;     /* empty but while the lock is held */
    eddy__backend_hold *backend; /* memory://: the store's data lives as long as the store */
};

/* One try, the lock held: the load first where the queue puts one, then p's commands (p NULL:
 * the load alone), each op's commands in the queue's order. With an arena, p's replies may be
 * built in it (*in_arena). EDDY_OK: p's replies are in (or the load went well); else the
 * failure (err), and *again when the queue sends p again after the loss: not before the lock
 * is taken again, so p leaves the queue meanwhile. */
static eddy_status try_once(eddy_store *store, eddy__store_slot *p, eddy__reply_arena *arena,
                            bool *in_arena, bool *again, eddy_error *err) {
    eddy__store_queue *q = &store->queue;
    bool connected = eddy__bconn_connected(&store->conn);
    if (!connected)
        eddy__store_queue_take(q); /* a new connection loads first */
    if (p)
        eddy__store_queue_push(q, p, connected);
    eddy_status st;
    size_t n = 0;
    for (eddy__store_slot *s; (s = eddy__store_queue_next(q, &st, err));)
        s->last = ++n; /* numbered as the connection writes them */
    for (eddy__store_slot *s; st == EDDY_OK && (s = eddy__store_queue_head(q));) {
        if (s != p)
            st = eddy__bconn_exec(&store->conn, &s->req.op.cmds, -1, s->replies, err);
        else if (!q->load_failed) /* else it fails with the load's error, unsent */
            st = arena ? eddy__bconn_exec_in(&store->conn, arena, &p->req.op.cmds, -1, p->replies,
                                             in_arena, err)
                       : eddy__bconn_exec(&store->conn, &p->req.op.cmds, -1, p->replies, err);
        if (st != EDDY_OK)
            break;
        eddy__store_answer w = eddy__store_queue_answered(q, store->core, &store->s.log, &s);
        if (w == EDDY__STORE_LOADED)
            eddy__store_slot_clear(s);
        else if (w == EDDY__STORE_FAILED) /* the load's error, in s->err */
            st = s->req.st;
    }
    *again = false;
    if (st != EDDY_OK && !q->load_failed) {
        /* The connection's failure (it is closed): the queue says what goes again. */
        *again = p && !eddy__store_queue_down(q, st, err, UINT64_MAX, false);
        eddy__store_queue_take(q);
    }
    if (!p && q->load_failed) /* the load alone: its failure is the try's */
        st = eddy__fail(err, q->load_err.status, "%s", q->load_err.detail);
    return st;
}

/* Runs q: sends its commands, reads its replies into its result (store_req.h), and sends them
 * again where the store's rules say, the lock released between tries. With an arena (may be
 * NULL), the replies may be built in it. Returns q's status (err, may be NULL, holds its
 * detail). */
static eddy_status run(eddy_store *store, eddy__store_req *q, eddy__reply_arena *arena,
                       eddy_error *err) {
    eddy__store_slot p = {.req = *q}; /* q's again on return */
    for (bool again = true; again;) {
        bool in_arena = false;
        pthread_mutex_lock(&store->lock);
        eddy_status st = try_once(store, &p, arena, &in_arena, &again, &p.err);
        pthread_mutex_unlock(&store->lock);
        if (st == EDDY_OK)
            again = eddy__store_req_done(&p.req, store->core, p.replies, &store->s.log, &p.err);
        else
            p.req.st = st;
        if (in_arena) {
            eddy__reply_arena_reset(arena);
            memset(p.replies, 0, sizeof(p.replies));
        }
        eddy__store_slot_clear(&p);
    }
    if (p.req.st != EDDY_OK && err)
        *err = p.err;
    *q = p.req;
    return q->st;
}

/* Runs q when its builder succeeded (st), then resets it. */
static eddy_status run_built(eddy_store *store, eddy__store_req *q, eddy_status st,
                             eddy__reply_arena *arena, eddy_error *err) {
    if (st == EDDY_OK)
        st = run(store, q, arena, err);
    eddy__store_req_reset(q);
    return st;
}

eddy_status eddy_store_open(const eddy_settings *settings, eddy_store **out, eddy_error *err) {
    if (!out)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "out is NULL");
    *out = NULL;
    eddy_store *store = calloc(1, sizeof(*store));
    if (!store)
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    eddy_status st = eddy__settings_copy(&store->s, settings, err);
    if (st != EDDY_OK) {
        free(store);
        return st;
    }
    pthread_mutex_init(&store->lock, NULL);
    eddy__store_queue_init(&store->queue);
    if (eddy__bconn_init(&store->conn, &store->s) != EDDY_OK ||
        !(store->core = eddy__store_new(&store->s)) ||
        !eddy__link_hold_backend(&store->s, &store->backend))
        st = eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    /* Connecting now reports a wrong URL, a dead server or a server without functions here
     * rather than at the first append. */
    if (st == EDDY_OK) {
        bool again, in_arena;
        pthread_mutex_lock(&store->lock);
        st = try_once(store, NULL, NULL, &in_arena, &again, err);
        pthread_mutex_unlock(&store->lock);
    }
    if (st != EDDY_OK) {
        eddy_store_close(store);
        return st;
    }
    *out = store;
    return EDDY_OK;
}

void eddy_store_close(eddy_store *store) {
    if (!store)
        return;
    eddy__bconn_destroy(&store->conn);
    eddy__store_queue_take(&store->queue); /* the load's commands */
    eddy__store_free(store->core);
    pthread_mutex_destroy(&store->lock);
    eddy__link_release_backend(store->backend);
    eddy__settings_free(&store->s);
    free(store);
}

eddy_status eddy_store_append(eddy_store *store, const char *stream_id,
                              const eddy_event *const *evs, size_t n, const eddy_append_opts *opts,
                              long long *new_version, eddy_error *err) {
    if (!store)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "store is NULL");
    eddy__store_req q;
    eddy_status st = eddy__store_req_append(&q, store->core, stream_id, evs, n, opts, err);
    if (st == EDDY_OK && (st = run(store, &q, NULL, err)) == EDDY_OK && new_version)
        *new_version = q.at;
    eddy__store_req_reset(&q);
    return st;
}

eddy_status eddy__bstore_call(eddy_store *store, eddy__cmdlist *cmds, eddy__store_reply_fn read,
                              void *user, eddy_error *err) {
    eddy__store_req q;
    eddy__store_req_call(&q, cmds, read, user);
    return run_built(store, &q, EDDY_OK, NULL, err);
}

const char *eddy__bstore_ns(const eddy_store *store) { return store->s.ns; }

eddy_status eddy_store_read_stream(eddy_store *store, const char *stream_id,
                                   long long after_version, eddy_stored_fn fn, void *user,
                                   eddy_error *err) {
    if (!store || !fn)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "store or fn is NULL");
    eddy__store_req q;
    eddy__reply_arena *arena = eddy__reply_arena_new(); /* NULL: hiredis's objects */
    eddy_status st =
        eddy__store_req_read_stream(&q, store->core, stream_id, after_version, true, fn, user, err);
    st = run_built(store, &q, st, arena, err);
    eddy__reply_arena_free(arena);
    return st;
}

eddy_status eddy_store_read_stream_page(eddy_store *store, const char *stream_id,
                                        long long after_version, eddy_stored_fn fn, void *user,
                                        long long *last_version, bool *more, eddy_error *err) {
    if (last_version)
        *last_version = after_version;
    if (more)
        *more = false;
    if (!store || !fn || !last_version || !more)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT,
                          "store, fn, last_version or more is NULL");
    eddy__store_req q;
    eddy__reply_arena *arena = eddy__reply_arena_new(); /* NULL: hiredis's objects */
    eddy_status st = eddy__store_req_read_stream(&q, store->core, stream_id, after_version, false,
                                                 fn, user, err);
    if (st == EDDY_OK) {
        st = run(store, &q, arena, err);
        *last_version = q.at;
        *more = q.more;
    }
    eddy__store_req_reset(&q);
    eddy__reply_arena_free(arena);
    return st;
}

eddy_status eddy_store_read_page(eddy_store *store, long long after_position, size_t max_entries,
                                 const eddy_filter *filter, eddy_stored_fn fn, void *user,
                                 long long *next_position, eddy_error *err) {
    if (!store || !fn || !next_position)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "store, fn or next_position is NULL");
    eddy__store_req q;
    eddy__reply_arena *arena = eddy__reply_arena_new(); /* NULL: hiredis's objects */
    eddy_status st = eddy__store_req_read_all(&q, store->core, after_position, max_entries, filter,
                                              fn, user, err);
    st = run_built(store, &q, st, arena, err);
    *next_position = q.at;
    eddy__reply_arena_free(arena);
    return st;
}

eddy_status eddy_store_head(eddy_store *store, long long *position, eddy_error *err) {
    if (!store || !position)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "store or position is NULL");
    eddy__store_req q;
    eddy_status st = run_built(store, &q, eddy__store_req_head(&q, store->core, err), NULL, err);
    if (st == EDDY_OK)
        *position = q.at;
    return st;
}

/* ---- checkpoints ------------------------------------------------------------------------ */

/* Runs one checkpoint operation (buf and size: a read's); q keeps its result. */
static eddy_status ckpt_run(eddy_store *store, eddy__store_req *q, eddy__ckpt_op op,
                            const char *feed_id, const char *value, char *buf, size_t size,
                            eddy_error *err) {
    eddy_status st = eddy__store_req_ckpt(q, store->core, op, feed_id, value, buf, size, err);
    return run_built(store, q, st, NULL, err);
}

static eddy_status ckpt_exists(void *self, const char *feed_id, bool *exists, eddy_error *err) {
    if (!self || !exists)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "checkpoints or exists is NULL");
    eddy__store_req q;
    eddy_status st = ckpt_run(self, &q, EDDY__CKPT_EXISTS, feed_id, NULL, NULL, 0, err);
    if (st == EDDY_OK)
        *exists = q.exists;
    return st;
}

static eddy_status ckpt_read(void *self, const char *feed_id, char *buf, size_t size, bool *found,
                             eddy_error *err) {
    if (!self || !buf || !size || !found)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT,
                          "checkpoints, buf or found is NULL, or size is 0");
    eddy__store_req q;
    eddy_status st = ckpt_run(self, &q, EDDY__CKPT_READ, feed_id, NULL, buf, size, err);
    if (st == EDDY_OK)
        *found = q.found;
    return st;
}

static eddy_status ckpt_save(void *self, const char *feed_id, const char *value, eddy_error *err) {
    if (!self)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "checkpoints is NULL");
    eddy__store_req q;
    return ckpt_run(self, &q, EDDY__CKPT_SAVE, feed_id, value, NULL, 0, err);
}

static eddy_status ckpt_remove(void *self, const char *feed_id, eddy_error *err) {
    if (!self)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "checkpoints is NULL");
    eddy__store_req q;
    return ckpt_run(self, &q, EDDY__CKPT_REMOVE, feed_id, NULL, NULL, 0, err);
}

static const eddy_checkpoint_ops store_checkpoint_ops = {ckpt_exists, ckpt_read, ckpt_save,
                                                         ckpt_remove};

eddy_status eddy_store_checkpoint_exists(eddy_store *store, const char *feed_id, bool *exists,
                                         eddy_error *err) {
    return ckpt_exists(store, feed_id, exists, err);
}

eddy_status eddy_store_checkpoint_read(eddy_store *store, const char *feed_id, char *buf,
                                       size_t size, bool *found, eddy_error *err) {
    return ckpt_read(store, feed_id, buf, size, found, err);
}

eddy_status eddy_store_checkpoint_save(eddy_store *store, const char *feed_id, const char *value,
                                       eddy_error *err) {
    return ckpt_save(store, feed_id, value, err);
}

eddy_status eddy_store_checkpoint_remove(eddy_store *store, const char *feed_id, eddy_error *err) {
    return ckpt_remove(store, feed_id, err);
}

eddy_checkpoints eddy_store_checkpoints(eddy_store *store) {
    eddy_checkpoints cp = {&store_checkpoint_ops, store};
    return cp;
}
