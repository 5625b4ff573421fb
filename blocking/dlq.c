/* SPDX-License-Identifier: BSD-3-Clause */
/* Dead letters on the blocking front end: the core (src/bus/dlq.c) builds and reads; this file
 * sends, on one connection of the handle's own behind a mutex, and makes the calling thread
 * wait.
 *
 * Invariants:
 * - The lock is held only while commands travel, never while a listing's callback runs, so a
 *   callback may use the handle (replay or purge what it is shown) without deadlocking.
 * - Reads (list, get, count) are idempotent: one that failed on a connection made before the
 *   call (it may have been dead for a while) is tried once more on a new connection. Replays
 *   and purges are never sent twice: the server may have run them.
 * - A replay reads the dead letter first (so an id that is not there publishes nothing), then
 *   runs its transaction; replay_all stops at the newest dead letter it saw when it began. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "bus/dlq.h"
#include "config/settings.h"
#include "conn.h"
#include "eddy/dlq.h"
#include "error.h"
#include "log.h"

#define REPLAY_PAGE 64

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

static eddy_status keep_one(eddy_dead_letter *dl, void *user) {
    *(eddy_dead_letter **)user = dl;
    return EDDY_OK;
}

/* Reads one dead letter; *out NULL with EDDY_ERR_NOT_FOUND when it is not there. */
static eddy_status get(eddy_dlq *dlq, const char *group, const char *id, eddy_dead_letter **out,
                       eddy_error *err) {
    *out = NULL;
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    redisReply *reply = NULL;
    eddy_status st = eddy__dlq_get_cmd(&dlq->s, group, id, &cmds, err);
    if (st == EDDY_OK && (st = round_trip(dlq, st, &cmds, &reply, true, err)) == EDDY_OK)
        st = eddy__dlq_entries(&dlq->s, reply, keep_one, out, NULL, NULL, err);
    eddy__cmdlist_reset(&cmds);
    free_replies(&reply, 1);
    if (st == EDDY_OK && !*out)
        st = eddy__fail(err, EDDY_ERR_NOT_FOUND, "group '%s' has no dead letter %s", group, id);
    if (st != EDDY_OK) {
        eddy_dead_letter_free(*out);
        *out = NULL;
    }
    return st;
}

eddy_status eddy_dlq_get(eddy_dlq *dlq, const char *group, const char *id, eddy_dead_letter **out,
                         eddy_error *err) {
    if (!out)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "out is NULL");
    *out = NULL;
    if (!dlq)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "dlq is NULL");
    return get(dlq, group, id, out, err);
}

/* ---- replaying ------------------------------------------------------------------------- */

/* Writes back the dead letters whose replay deleted them without publishing them. */
static void restore(eddy_dlq *dlq, const char *group, eddy_dead_letter *const *dls,
                    const bool *needs, size_t n, eddy_error *err) {
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    size_t which[REPLAY_PAGE], k = 0;
    for (size_t i = 0; i < n; i++) {
        if (!needs[i])
            continue;
        if (eddy__dlq_restore_cmd(&dlq->s, group, dls[i], &cmds, NULL) == EDDY_OK)
            which[k++] = i;
        else
            eddy__log(&dlq->s.log, EDDY_LOG_ERROR,
                      "dead letters: replay of %s of group '%s' refused by the server and its "
                      "write-back could not be built (out of memory): the message is lost",
                      eddy_dead_letter_id(dls[i]), group);
    }
    if (k == 0) {
        eddy__cmdlist_reset(&cmds);
        return;
    }
    redisReply *replies[REPLAY_PAGE];
    eddy_error why;
    eddy_status st = round_trip(dlq, EDDY_OK, &cmds, replies, false, &why);
    for (size_t j = 0; j < k; j++) {
        eddy_status rst = st == EDDY_OK ? eddy__dlq_restore_result(replies[j], &why) : st;
        const char *id = eddy_dead_letter_id(dls[which[j]]);
        if (rst == EDDY_OK)
            eddy__log(&dlq->s.log, EDDY_LOG_WARN,
                      "dead letters: replay of %s of group '%s' refused by the server; the dead "
                      "letter was written back under a new id",
                      id, group);
        else
            eddy__log(&dlq->s.log, EDDY_LOG_ERROR,
                      "dead letters: replay of %s of group '%s' refused by the server and its "
                      "write-back failed (%s): the message is lost",
                      id, group, why.detail);
        if (err && j == 0) {
            size_t len = strlen(err->detail);
            snprintf(err->detail + len, sizeof(err->detail) - len, "; %s",
                     rst == EDDY_OK ? "the dead letter was written back under a new id"
                                    : "writing the dead letter back failed too");
        }
    }
    free_replies(replies, k);
}

/* Replays n dead letters in one pipeline. *replayed counts the successes; the first failure's
 * status is returned (the others still ran). */
static eddy_status replay_many(eddy_dlq *dlq, const char *group, eddy_dead_letter *const *dls,
                               size_t n, char *entry_id, size_t entry_id_size, size_t *replayed,
                               eddy_error *err) {
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    eddy_status st = EDDY_OK;
    for (size_t i = 0; i < n && st == EDDY_OK; i++)
        st = eddy__dlq_replay_cmds(&dlq->s, group, dls[i], &cmds, err);
    if (st != EDDY_OK) {
        eddy__cmdlist_reset(&cmds);
        return st;
    }
    size_t ncmds = cmds.n;
    redisReply **replies = calloc(ncmds, sizeof(*replies));
    if (!replies) {
        eddy__cmdlist_reset(&cmds);
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    }
    eddy_status sent = round_trip(dlq, EDDY_OK, &cmds, replies, false, err);
    bool needs[REPLAY_PAGE] = {false};
    bool any = false;
    st = sent;
    for (size_t i = 0; sent == EDDY_OK && i < n; i++) {
        eddy_error one;
        eddy_status rst =
            eddy__dlq_replay_result(&dlq->s, group, dls[i], replies + 5 * i, entry_id,
                                    entry_id_size, &needs[i], err && st == EDDY_OK ? err : &one);
        any |= needs[i];
        if (rst == EDDY_OK)
            (*replayed)++;
        else if (st == EDDY_OK)
            st = rst; /* the first failure; the others' outcomes are still read */
    }
    free_replies(replies, ncmds);
    free(replies);
    if (any)
        restore(dlq, group, dls, needs, n, err);
    return st;
}

eddy_status eddy_dlq_replay(eddy_dlq *dlq, const char *group, const char *id, char *entry_id,
                            size_t entry_id_size, eddy_error *err) {
    if (!dlq)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "dlq is NULL");
    eddy_dead_letter *dl;
    eddy_status st = get(dlq, group, id, &dl, err);
    if (st != EDDY_OK)
        return st;
    size_t replayed = 0;
    st = replay_many(dlq, group, &dl, 1, entry_id, entry_id_size, &replayed, err);
    eddy_dead_letter_free(dl);
    return st;
}

typedef struct page {
    eddy_dead_letter *v[REPLAY_PAGE];
    size_t n;
} page;

static eddy_status collect(eddy_dead_letter *dl, void *user) {
    page *p = user;
    p->v[p->n++] = dl;
    return EDDY_OK;
}

static void page_free(page *p) {
    for (size_t i = 0; i < p->n; i++)
        eddy_dead_letter_free(p->v[i]);
    p->n = 0;
}

/* The id of the group's newest dead letter; "" when it has none. */
static eddy_status newest(eddy_dlq *dlq, const char *group, char *last, eddy_error *err) {
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    redisReply *reply = NULL;
    page p = {.n = 0};
    last[0] = '\0';
    eddy_status st = eddy__dlq_last_cmd(&dlq->s, group, &cmds, err);
    if (st == EDDY_OK && (st = round_trip(dlq, st, &cmds, &reply, true, err)) == EDDY_OK)
        st = eddy__dlq_entries(&dlq->s, reply, collect, &p, NULL, last, err);
    eddy__cmdlist_reset(&cmds);
    free_replies(&reply, 1);
    page_free(&p);
    return st;
}

eddy_status eddy_dlq_replay_all(eddy_dlq *dlq, const char *group, size_t *replayed,
                                eddy_error *err) {
    size_t count = 0;
    if (replayed)
        *replayed = 0;
    if (!dlq)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "dlq is NULL");
    char last[EDDY_DLQ_ID_SIZE], after[EDDY_DLQ_ID_SIZE] = "";
    eddy_status st = newest(dlq, group, last, err);
    size_t skipped = 0;
    char first_skipped[EDDY_DLQ_ID_SIZE] = "";
    eddy_error skip_err = {0};
    bool end = st != EDDY_OK || !last[0];
    while (!end) {
        eddy__cmdlist cmds;
        eddy__cmdlist_init(&cmds);
        redisReply *reply = NULL;
        page p = {.n = 0};
        st = eddy__dlq_range_cmd(&dlq->s, group, after, last, REPLAY_PAGE, &cmds, err);
        if (st == EDDY_OK && (st = round_trip(dlq, st, &cmds, &reply, true, err)) == EDDY_OK)
            st = eddy__dlq_entries(&dlq->s, reply, collect, &p, NULL, after, err);
        eddy__cmdlist_reset(&cmds);
        free_replies(&reply, 1);
        end = st != EDDY_OK || p.n < REPLAY_PAGE || strcmp(after, last) == 0;
        /* Those that name no valid subject stay; the rest go in one pipeline. */
        size_t k = 0;
        for (size_t i = 0; st == EDDY_OK && i < p.n; i++) {
            eddy_error why;
            if (eddy__dlq_replayable(group, p.v[i], &why) != EDDY_OK) {
                if (skipped++ == 0) {
                    snprintf(first_skipped, sizeof(first_skipped), "%s", p.v[i]->id);
                    skip_err = why;
                }
                eddy_dead_letter_free(p.v[i]);
            } else {
                p.v[k++] = p.v[i];
            }
        }
        if (st == EDDY_OK) {
            p.n = k;
            st = replay_many(dlq, group, p.v, p.n, NULL, 0, &count, err);
            end = end || st != EDDY_OK;
        }
        page_free(&p);
    }
    if (replayed)
        *replayed = count;
    if (st == EDDY_OK && skipped)
        st = eddy__fail(err, EDDY_ERR_MALFORMED,
                        "%zu dead letter(s) of group '%s' could not be replayed and are left in "
                        "place; the first, %s: %s",
                        skipped, group, first_skipped, skip_err.detail);
    return st;
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
