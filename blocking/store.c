/* SPDX-License-Identifier: BSD-3-Clause */
/* The event store on the blocking front end: the core (src/store/store.c) checks, builds and reads;
 * this file sends, on one connection behind a mutex, and makes the calling thread wait.
 *
 * The store's rules (the library loaded on each new connection, what is sent again after a loss
 * or a lost library) are src/store/store_op.h's. `loaded` is true only while the connection that
 * loaded it lives. The lock is held only while commands travel, never while a read's callback
 * runs, so a callback may use the store (append, read) without deadlocking. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "config/settings.h"
#include "conn.h"
#include "eddy/store.h"
#include "error.h"
#include "link/library.h"
#include "link/link.h"
#include "log.h"
#include "store/store.h"
#include "store/store_op.h"
#include "store_call.h"
#include "timing.h"

struct eddy_store {
    eddy__settings s;
    eddy__store *core;
    pthread_mutex_t lock; /* one pipeline at a time on conn; guards loaded */
    bconn conn;
    bool loaded;
    eddy__backend_hold *backend; /* memory://: the store's data lives as long as the store */
};

/* Connects and loads the library unless done on this connection. Caller holds the lock. */
static eddy_status ensure_loaded(eddy_store *store, eddy_error *err) {
    if (!eddy__bconn_connected(&store->conn))
        store->loaded = false;
    if (store->loaded)
        return EDDY_OK;
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    redisReply *reply = NULL;
    eddy_status st = eddy__library_load_cmds(&cmds);
    if (st != EDDY_OK)
        st = eddy__fail(err, st, "out of memory");
    else if ((st = eddy__bconn_exec(&store->conn, &cmds, -1, &reply, err)) == EDDY_OK)
        st = eddy__library_load_result(&cmds, 0, &reply, NULL, err);
    if (reply)
        freeReplyObject(reply);
    eddy__cmdlist_reset(&cmds);
    store->loaded = st == EDDY_OK;
    return st;
}

/* Sends op's commands and reads their replies (each is the caller's to free), sending them
 * again where the store's rules say (store_op.h), the lock released between tries. With an
 * arena, the replies may be built in it (*in_arena): the caller resets it instead of freeing
 * them. */
static eddy_status exchange_in(eddy_store *store, eddy__store_op *op, eddy__reply_arena *arena,
                               redisReply **replies, bool *in_arena, eddy_error *err) {
    eddy_error e = {0};
    eddy_status st;
    for (;;) {
        pthread_mutex_lock(&store->lock);
        bool fresh = !eddy__bconn_connected(&store->conn);
        *in_arena = false;
        st = ensure_loaded(store, &e);
        if (st == EDDY_OK)
            st = arena ? eddy__bconn_exec_in(&store->conn, arena, &op->cmds, -1, replies, in_arena,
                                             &e)
                       : eddy__bconn_exec(&store->conn, &op->cmds, -1, replies, &e);
        pthread_mutex_unlock(&store->lock);
        if (st == EDDY_OK || !eddy__store_op_lost(op, st, &e, true, fresh))
            break;
    }
    if (st != EDDY_OK && err)
        *err = e;
    return st;
}

static eddy_status exchange(eddy_store *store, eddy__store_op *op, redisReply **replies,
                            eddy_error *err) {
    bool in_arena;
    return exchange_in(store, op, NULL, replies, &in_arena, err);
}

/* An idempotent op of the commands in *cmds (moved into it; *cmds is left empty). */
static eddy__store_op idempotent(eddy__cmdlist *cmds) {
    eddy__store_op op;
    eddy__store_op_init(&op, false, 0);
    op.cmds = *cmds;
    eddy__cmdlist_init(cmds);
    return op;
}

/* A page of events: read into an arena (one allocation for the page's reply instead of
 * several per entry) when one can be had. */
static eddy_status read_page(eddy_store *store, eddy__cmdlist *cmds, eddy__reply_arena *arena,
                             redisReply **reply, bool *in_arena, eddy_error *err) {
    *reply = NULL;
    eddy__store_op op = idempotent(cmds);
    eddy_status st = exchange_in(store, &op, arena, reply, in_arena, err);
    eddy__store_op_reset(&op);
    return st;
}

static void page_done(eddy__reply_arena *arena, redisReply *reply, bool in_arena) {
    if (in_arena)
        eddy__reply_arena_reset(arena);
    else if (reply)
        freeReplyObject(reply);
}

static void free_replies(redisReply **replies, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (replies[i])
            freeReplyObject(replies[i]);
        replies[i] = NULL;
    }
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
    if (eddy__bconn_init(&store->conn, &store->s) != EDDY_OK ||
        !(store->core = eddy__store_new(&store->s)) ||
        !eddy__link_hold_backend(&store->s, &store->backend))
        st = eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    /* Connecting now reports a wrong URL, a dead server or a server without functions here
     * rather than at the first append. */
    if (st == EDDY_OK) {
        pthread_mutex_lock(&store->lock);
        st = ensure_loaded(store, err);
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
    eddy__store_op op;
    eddy__store_op_init(&op, true, eddy__mono_ms() + eddy__command_timeout_ms(&store->s, -1));
    eddy_status st =
        eddy__store_append_prepare(store->core, stream_id, evs, n, opts, &op.cmds, err);
    redisReply *reply[EDDY__STORE_OP_MAX_CMDS] = {NULL};
    for (bool again = st == EDDY_OK; again;) {
        if ((st = exchange(store, &op, reply, err)) != EDDY_OK)
            break;
        size_t got = op.cmds.n; /* a reload puts a load in front */
        st = eddy__store_op_append_result(&op, reply, new_version, &again, &store->s.log, err);
        free_replies(reply, got);
    }
    eddy__store_op_reset(&op); /* a failed prepare empties the list, not its arrays */
    return st;
}

eddy_status eddy__bstore_call(eddy_store *store, eddy__cmdlist *cmds, eddy__bstore_reply_fn read,
                              void *user, eddy_error *err) {
    eddy__store_op op = idempotent(cmds);
    redisReply *reply[EDDY__STORE_OP_MAX_CMDS] = {NULL};
    eddy_status st;
    for (bool again = true; again;) {
        if ((st = exchange(store, &op, reply, err)) != EDDY_OK)
            break;
        size_t got = op.cmds.n, at = 0; /* a reload puts a load in front */
        st = eddy__store_op_call_result(&op, reply, &at, &again, &store->s.log, err);
        if (st == EDDY_OK && !again)
            st = read(reply[at], user, err);
        free_replies(reply, got);
    }
    eddy__store_op_reset(&op);
    return st;
}

const char *eddy__bstore_ns(const eddy_store *store) { return store->s.ns; }

/* One read command, its reply in *reply (the caller frees it). */
static eddy_status read_one(eddy_store *store, eddy__cmdlist *cmds, redisReply **reply,
                            eddy_error *err) {
    *reply = NULL;
    eddy__store_op op = idempotent(cmds);
    eddy_status st = exchange(store, &op, reply, err);
    eddy__store_op_reset(&op);
    return st;
}

/* One page of a stream: the events after *after_version, *after_version moved to the last one
 * delivered, *more when the page was full. arena may be NULL. */
static eddy_status stream_page(eddy_store *store, eddy__reply_arena *arena, const char *stream_id,
                               long long *after_version, eddy_stored_fn fn, void *user, bool *more,
                               eddy_error *err) {
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    redisReply *reply = NULL;
    bool in_arena = false;
    eddy_status st =
        eddy__store_read_stream_cmd(store->core, stream_id, *after_version, &cmds, err);
    if (st == EDDY_OK && (st = read_page(store, &cmds, arena, &reply, &in_arena, err)) == EDDY_OK)
        st = eddy__store_read_stream_page(store->core, stream_id, reply, fn, user, after_version,
                                          more, err);
    eddy__cmdlist_reset(&cmds);
    page_done(arena, reply, in_arena);
    return st;
}

eddy_status eddy_store_read_stream(eddy_store *store, const char *stream_id,
                                   long long after_version, eddy_stored_fn fn, void *user,
                                   eddy_error *err) {
    if (!store || !fn)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "store or fn is NULL");
    bool more = true;
    eddy_status st = EDDY_OK;
    eddy__reply_arena *arena = eddy__reply_arena_new(); /* NULL: hiredis's objects */
    while (st == EDDY_OK && more)
        st = stream_page(store, arena, stream_id, &after_version, fn, user, &more, err);
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
    eddy__reply_arena *arena = eddy__reply_arena_new(); /* NULL: hiredis's objects */
    eddy_status st = stream_page(store, arena, stream_id, last_version, fn, user, more, err);
    eddy__reply_arena_free(arena);
    return st;
}

eddy_status eddy_store_read_page(eddy_store *store, long long after_position, size_t max_entries,
                                 const eddy_filter *filter, eddy_stored_fn fn, void *user,
                                 long long *next_position, eddy_error *err) {
    if (!store || !fn || !next_position)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "store, fn or next_position is NULL");
    *next_position = after_position;
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    redisReply *reply = NULL;
    bool in_arena = false;
    eddy__reply_arena *arena = eddy__reply_arena_new(); /* NULL: hiredis's objects */
    eddy_status st = eddy__store_read_all_cmd(store->core, after_position, max_entries, &cmds, err);
    if (st == EDDY_OK && (st = read_page(store, &cmds, arena, &reply, &in_arena, err)) == EDDY_OK)
        st = eddy__store_read_all_page(store->core, reply, filter, fn, user, after_position,
                                       next_position, err);
    eddy__cmdlist_reset(&cmds);
    page_done(arena, reply, in_arena);
    eddy__reply_arena_free(arena);
    return st;
}

eddy_status eddy_store_head(eddy_store *store, long long *position, eddy_error *err) {
    if (!store || !position)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "store or position is NULL");
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    redisReply *reply = NULL;
    eddy_status st = eddy__store_head_cmd(store->core, &cmds);
    if (st != EDDY_OK)
        st = eddy__fail(err, st, "out of memory");
    else if ((st = read_one(store, &cmds, &reply, err)) == EDDY_OK)
        st = eddy__store_head_result(reply, position, err);
    eddy__cmdlist_reset(&cmds);
    if (reply)
        freeReplyObject(reply);
    return st;
}

/* ---- checkpoints ------------------------------------------------------------------------ */

/* Runs one checkpoint operation; *reply is the caller's. */
static eddy_status ckpt_run(eddy_store *store, eddy__ckpt_op op, const char *feed_id,
                            const char *value, redisReply **reply, eddy_error *err) {
    *reply = NULL;
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    eddy_status st = eddy__ckpt_cmd(store->core, op, feed_id, value, &cmds, err);
    if (st == EDDY_OK)
        st = read_one(store, &cmds, reply, err);
    eddy__cmdlist_reset(&cmds);
    return st;
}

static eddy_status ckpt_exists(void *self, const char *feed_id, bool *exists, eddy_error *err) {
    if (!self || !exists)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "checkpoints or exists is NULL");
    redisReply *reply;
    eddy_status st = ckpt_run(self, EDDY__CKPT_EXISTS, feed_id, NULL, &reply, err);
    if (st == EDDY_OK)
        st = eddy__ckpt_exists_result(reply, exists, err);
    if (reply)
        freeReplyObject(reply);
    return st;
}

static eddy_status ckpt_read(void *self, const char *feed_id, char *buf, size_t size, bool *found,
                             eddy_error *err) {
    if (!self || !buf || !size || !found)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT,
                          "checkpoints, buf or found is NULL, or size is 0");
    redisReply *reply;
    eddy_status st = ckpt_run(self, EDDY__CKPT_READ, feed_id, NULL, &reply, err);
    if (st == EDDY_OK)
        st = eddy__ckpt_read_result(reply, buf, size, found, err);
    if (reply)
        freeReplyObject(reply);
    return st;
}

static eddy_status ckpt_write(void *self, eddy__ckpt_op op, const char *feed_id, const char *value,
                              eddy_error *err) {
    if (!self)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "checkpoints is NULL");
    redisReply *reply;
    eddy_status st = ckpt_run(self, op, feed_id, value, &reply, err);
    if (st == EDDY_OK)
        st = eddy__ckpt_write_result(reply, op, err);
    if (reply)
        freeReplyObject(reply);
    return st;
}

static eddy_status ckpt_save(void *self, const char *feed_id, const char *value, eddy_error *err) {
    return ckpt_write(self, EDDY__CKPT_SAVE, feed_id, value, err);
}

static eddy_status ckpt_remove(void *self, const char *feed_id, eddy_error *err) {
    return ckpt_write(self, EDDY__CKPT_REMOVE, feed_id, NULL, err);
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
