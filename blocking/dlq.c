/* SPDX-License-Identifier: BSD-3-Clause */
/* Dead letters on the blocking front end: the core builds and reads (src/bus/dlq.c) and runs
 * replays step by step (src/bus/replay_flow.h: what each round sends, what its replies lead
 * to, which rounds may go twice); this file sends, on one connection of the handle's own
 * behind a mutex, and makes the calling thread wait.
 *
 * Invariants:
 * - The lock is held only while commands travel, never while a listing's callback runs, so a
 *   callback may use the handle (replay or purge what it is shown) without deadlocking.
 * - Reads (list, get, count, and a replay's reads) are idempotent: one that failed on a
 *   connection made before the call (it may have been dead for a while) is tried once more on
 *   a new connection. Replays and purges are never sent twice: the server may have run them. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "bus/dlq.h"
#include "bus/replay_flow.h"
#include "config/settings.h"
#include "conn.h"
#include "eddy/dlq.h"
#include "error.h"

struct eddy_dlq {
    eddy__settings s;
    pthread_mutex_t lock; /* one pipeline at a time on conn */
    bconn conn;
};

/* Sends cmds and reads one reply each (the caller frees them). */
static eddy_status exchange(eddy_dlq *dlq, const eddy__cmdlist *cmds, redisReply **replies,
                            bool retry, eddy_error *err) {
    pthread_mutex_lock(&dlq->lock);
    bool was_connected = eddy__bconn_connected(&dlq->conn);
    eddy_status st = EDDY_OK;
    for (int attempt = 0; attempt < 2; attempt++) {
        st = eddy__bconn_exec(&dlq->conn, cmds, -1, replies, err);
        if (!(retry && was_connected && st == EDDY_ERR_IO && attempt == 0))
            break;
    }
    pthread_mutex_unlock(&dlq->lock);
    return st;
}

static void free_replies(redisReply **replies, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (replies[i])
            freeReplyObject(replies[i]);
        replies[i] = NULL;
    }
}

/* Sends the commands just built (st is the builder's status), hands the replies to the caller
 * in *replies (n of them, NULL on failure) and empties cmds. */
static eddy_status round_trip(eddy_dlq *dlq, eddy_status st, eddy__cmdlist *cmds,
                              redisReply **replies, bool retry, eddy_error *err) {
    for (size_t i = 0; i < cmds->n; i++)
        replies[i] = NULL;
    if (st == EDDY_OK)
        st = exchange(dlq, cmds, replies, retry, err);
    eddy__cmdlist_reset(cmds);
    return st;
}

eddy_status eddy_dlq_open(const eddy_settings *settings, eddy_dlq **out, eddy_error *err) {
    if (!out)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "out is NULL");
    *out = NULL;
    eddy_dlq *dlq = calloc(1, sizeof(*dlq));
    if (!dlq)
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    eddy_status st = eddy__settings_copy(&dlq->s, settings, err);
    if (st != EDDY_OK) {
        free(dlq);
        return st;
    }
    pthread_mutex_init(&dlq->lock, NULL);
    if (eddy__bconn_init(&dlq->conn, &dlq->s) != EDDY_OK)
        st = eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    /* Connecting now reports a wrong URL or a dead server here rather than at the first call. */
    if (st == EDDY_OK)
        st = eddy__bconn_connect(&dlq->conn, err);
    if (st != EDDY_OK) {
        eddy_dlq_close(dlq);
        return st;
    }
    *out = dlq;
    return EDDY_OK;
}

void eddy_dlq_close(eddy_dlq *dlq) {
    if (!dlq)
        return;
    eddy__bconn_destroy(&dlq->conn);
    pthread_mutex_destroy(&dlq->lock);
    eddy__settings_free(&dlq->s);
    free(dlq);
}

/* ---- reading --------------------------------------------------------------------------- */

typedef struct lend {
    eddy_dead_letter_fn fn;
    void *user;
} lend;

/* Lends each dead letter to the user's callback, then frees it. */
static eddy_status lend_one(eddy_dead_letter *dl, void *user) {
    lend *l = user;
    eddy_status st = l->fn(dl, l->user);
    eddy_dead_letter_free(dl);
    return st;
}

eddy_status eddy_dlq_list(eddy_dlq *dlq, const char *group, eddy_dlq_cursor *cursor, size_t max,
                          eddy_dead_letter_fn fn, void *user, eddy_error *err) {
    if (!dlq || !cursor || !fn)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "dlq, cursor or fn is NULL");
    if (memchr(cursor->after, '\0', sizeof(cursor->after)) == NULL)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "the cursor is not NUL-terminated");
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    redisReply *reply = NULL;
    eddy_status st = eddy__dlq_range_cmd(&dlq->s, group, cursor->after, NULL, max, &cmds, err);
    if (st == EDDY_OK && (st = round_trip(dlq, st, &cmds, &reply, true, err)) == EDDY_OK) {
        size_t n = 0;
        lend l = {fn, user};
        st = eddy__dlq_entries(&dlq->s, reply, lend_one, &l, &n, cursor->after, err);
        cursor->done = st == EDDY_OK && n < max;
    }
    eddy__cmdlist_reset(&cmds);
    free_replies(&reply, 1);
    return st;
}

eddy_status eddy_dlq_count(eddy_dlq *dlq, const char *group, size_t *count, eddy_error *err) {
    if (!dlq || !count)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "dlq or count is NULL");
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    redisReply *reply = NULL;
    eddy_status st = eddy__dlq_count_cmd(&dlq->s, group, &cmds, err);
    if (st == EDDY_OK && (st = round_trip(dlq, st, &cmds, &reply, true, err)) == EDDY_OK)
        st = eddy__dlq_count_result(reply, count, err);
    eddy__cmdlist_reset(&cmds);
    free_replies(&reply, 1);
    return st;
}

eddy_status eddy_dlq_get(eddy_dlq *dlq, const char *group, const char *id, eddy_dead_letter **out,
                         eddy_error *err) {
    if (!out)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "out is NULL");
    *out = NULL;
    if (!dlq)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "dlq is NULL");
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    redisReply *reply = NULL;
    eddy_status st = eddy__dlq_get_cmd(&dlq->s, group, id, &cmds, err);
    if (st == EDDY_OK && (st = round_trip(dlq, st, &cmds, &reply, true, err)) == EDDY_OK)
        st = eddy__dlq_one(&dlq->s, reply, group, id, out, err);
    eddy__cmdlist_reset(&cmds);
    free_replies(&reply, 1);
    return st;
}

/* ---- replaying ------------------------------------------------------------------------- */

/* Runs a replay (replay_flow.h decides every step) to its end. */
static eddy_status replay(eddy_dlq *dlq, const char *group, bool one, const char *id,
                          size_t *replayed, char *entry_id, size_t entry_id_size, eddy_error *err) {
    eddy__replay_flow *f;
    eddy_status st = eddy__replay_flow_new(&dlq->s, group, one, id, &f, err);
    if (st != EDDY_OK)
        return st;
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    redisReply **replies = NULL;
    size_t cap = 0;
    for (;;) {
        bool idempotent;
        eddy__replay_flow_plan(f, &cmds, &idempotent);
        if (cmds.n == 0)
            break;
        eddy_error e;
        if (cmds.n > cap) {
            redisReply **v = realloc(replies, cmds.n * sizeof(*v));
            if (!v) { /* nothing sent */
                eddy__replay_flow_feed(f, eddy__fail(&e, EDDY_ERR_NOMEM, "out of memory"), NULL,
                                       &e);
                continue;
            }
            replies = v, cap = cmds.n;
        }
        size_t n = cmds.n;
        st = round_trip(dlq, EDDY_OK, &cmds, replies, idempotent, &e);
        eddy__replay_flow_feed(f, st, replies, &e);
        free_replies(replies, st == EDDY_OK ? n : 0);
    }
    st = eddy__replay_flow_result(f, replayed, entry_id, entry_id_size, err);
    eddy__cmdlist_reset(&cmds);
    free(replies);
    eddy__replay_flow_free(f);
    return st;
}

eddy_status eddy_dlq_replay(eddy_dlq *dlq, const char *group, const char *id, char *entry_id,
                            size_t entry_id_size, eddy_error *err) {
    if (!dlq)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "dlq is NULL");
    return replay(dlq, group, true, id, NULL, entry_id, entry_id_size, err);
}

eddy_status eddy_dlq_replay_all(eddy_dlq *dlq, const char *group, size_t *replayed,
                                eddy_error *err) {
    if (replayed)
        *replayed = 0;
    if (!dlq)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "dlq is NULL");
    return replay(dlq, group, false, NULL, replayed, NULL, 0, err);
}

/* ---- purging --------------------------------------------------------------------------- */

eddy_status eddy_dlq_purge(eddy_dlq *dlq, const char *group, const char *id, eddy_error *err) {
    if (!dlq)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "dlq is NULL");
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    redisReply *reply = NULL;
    eddy_status st = eddy__dlq_purge_cmd(&dlq->s, group, id, &cmds, err);
    if (st == EDDY_OK && (st = round_trip(dlq, st, &cmds, &reply, false, err)) == EDDY_OK)
        st = eddy__dlq_purge_result(reply, group, id, err);
    eddy__cmdlist_reset(&cmds);
    free_replies(&reply, 1);
    return st;
}

eddy_status eddy_dlq_purge_all(eddy_dlq *dlq, const char *group, size_t *purged, eddy_error *err) {
    size_t n = 0;
    if (purged)
        *purged = 0;
    if (!dlq)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "dlq is NULL");
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    redisReply *replies[4] = {NULL, NULL, NULL, NULL};
    eddy_status st = eddy__dlq_purge_all_cmds(&dlq->s, group, &cmds, err);
    if (st == EDDY_OK && (st = round_trip(dlq, st, &cmds, replies, false, err)) == EDDY_OK)
        st = eddy__dlq_purge_all_result(replies, &n, err);
    eddy__cmdlist_reset(&cmds);
    free_replies(replies, 4);
    if (st == EDDY_OK && purged)
        *purged = n;
    return st;
}
