/* SPDX-License-Identifier: BSD-3-Clause */
/* Admin handles on the blocking front end: the core (src/bus/admin.c) plans and reads; this file
 * sends each round as one pipeline on the handle's own connection, behind a mutex, and makes the
 * calling thread wait. Every call only reads, so a round that failed on a connection made before
 * the call (it may have been dead for a while) is tried once more on a new one. */
#include <pthread.h>
#include <stdlib.h>

#include "bus/admin.h"
#include "bus/prometheus.h"
#include "bus/registry.h"
#include "config/settings.h"
#include "conn.h"
#include "eddy/admin.h"
#include "error.h"
#include "events/subject.h"
#include "link/redis.h"
#include "scan.h"

struct eddy_admin {
    eddy__settings s;
    pthread_mutex_t lock; /* one pipeline at a time on conn */
    bconn conn;
};

eddy_status eddy_admin_open(const eddy_settings *settings, eddy_admin **out, eddy_error *err) {
    if (!out)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "out is NULL");
    *out = NULL;
    eddy_admin *a = calloc(1, sizeof(*a));
    if (!a)
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    eddy_status st = eddy__settings_copy(&a->s, settings, err);
    if (st != EDDY_OK) {
        free(a);
        return st;
    }
    pthread_mutex_init(&a->lock, NULL);
    if (eddy__bconn_init(&a->conn, &a->s) != EDDY_OK)
        st = eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    if (st == EDDY_OK) /* a wrong URL or a dead server is reported here, not at the first call */
        st = eddy__bconn_connect(&a->conn, err);
    if (st != EDDY_OK) {
        eddy_admin_close(a);
        return st;
    }
    *out = a;
    return EDDY_OK;
}

void eddy_admin_close(eddy_admin *a) {
    if (!a)
        return;
    eddy__bconn_destroy(&a->conn);
    pthread_mutex_destroy(&a->lock);
    eddy__settings_free(&a->s);
    free(a);
}

/* Sends cmds and reads one reply each (bscan_exec_fn). */
static eddy_status exchange(void *ctx, const eddy__cmdlist *cmds, redisReply **replies,
                            eddy_error *err) {
    eddy_admin *a = ctx;
    pthread_mutex_lock(&a->lock);
    bool was_connected = eddy__bconn_connected(&a->conn);
    eddy_status st = EDDY_OK;
    for (int attempt = 0; attempt < 2; attempt++) {
        st = eddy__bconn_exec(&a->conn, cmds, -1, replies, err);
        if (!(was_connected && st == EDDY_ERR_IO && attempt == 0))
            break;
    }
    pthread_mutex_unlock(&a->lock);
    return st;
}

static void free_replies(redisReply **replies, size_t n) {
    for (size_t i = 0; replies && i < n; i++)
        if (replies[i])
            freeReplyObject(replies[i]);
    free(replies);
}

eddy_status eddy__bscan_run(eddy__admin_scan *s, bscan_exec_fn exec, void *ctx, eddy_error *err) {
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    eddy_status st = EDDY_OK;
    while (st == EDDY_OK) {
        if ((st = eddy__admin_scan_plan(s, &cmds)) != EDDY_OK) {
            st = eddy__fail(err, st, "out of memory");
            break;
        }
        if (cmds.n == 0)
            break;
        redisReply **replies = calloc(cmds.n, sizeof(*replies));
        if (!replies)
            st = eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
        else if ((st = exec(ctx, &cmds, replies, err)) == EDDY_OK)
            st = eddy__admin_scan_feed(s, &cmds, replies, cmds.n, err);
        free_replies(replies, cmds.n);
        eddy__cmdlist_reset(&cmds);
    }
    eddy__cmdlist_reset(&cmds);
    return st;
}

static eddy_status scan_new(eddy_admin *a, const char *pattern, eddy__admin_scan **out,
                            eddy_error *err) {
    eddy_status st;
    if (pattern && (st = eddy__pattern_check(pattern, err)) != EDDY_OK)
        return st;
    if (!(*out = eddy__admin_scan_new(a->s.ns, pattern)))
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    if ((st = eddy__bscan_run(*out, exchange, a, err)) != EDDY_OK) {
        eddy__admin_scan_free(*out);
        *out = NULL;
    }
    return st;
}

eddy_status eddy_admin_subjects(eddy_admin *a, const char *pattern, eddy_subject_info_fn fn,
                                void *user, eddy_error *err) {
    if (!a || !fn)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "admin or fn is NULL");
    eddy__admin_scan *s;
    eddy_status st = scan_new(a, pattern, &s, err);
    if (st != EDDY_OK)
        return st;
    size_t n;
    const eddy_subject_info *subjects = eddy__admin_scan_result(s, &n);
    for (size_t i = 0; i < n && st == EDDY_OK; i++)
        st = fn(&subjects[i], user);
    eddy__admin_scan_free(s);
    return st;
}

/* The registry listing's reply (the caller frees it with freeReplyObject). */
static eddy_status registry(eddy_admin *a, redisReply **out, eddy_error *err) {
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    redisReply *reply = NULL;
    *out = NULL;
    eddy_status st = eddy__registry_list(a->s.ns, eddy_now_ms(), &cmds, 0);
    if (st != EDDY_OK)
        st = eddy__fail(err, st, "out of memory");
    else if ((st = exchange(a, &cmds, &reply, err)) == EDDY_OK)
        st = eddy__reply_status(reply, "subscription registry", err);
    *out = reply;
    eddy__cmdlist_reset(&cmds);
    return st;
}

eddy_status eddy_admin_registry(eddy_admin *a, eddy_registration_fn fn, void *user,
                                eddy_error *err) {
    if (!a || !fn)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "admin or fn is NULL");
    redisReply *r;
    eddy_status st = registry(a, &r, err);
    if (st == EDDY_OK)
        st = eddy__admin_registry_each(r, fn, user, err);
    if (r)
        freeReplyObject(r);
    return st;
}

typedef char *(*stats_writer)(const char *ns, const eddy__admin_scan *s, const redisReply *registry,
                              eddy_error *err);

/* A stats document: one scan and the registry, written by the core. */
static char *stats_doc(eddy_admin *a, const char *pattern, stats_writer write, eddy_error *err) {
    if (!a) {
        eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "admin is NULL");
        return NULL;
    }
    eddy__admin_scan *s;
    if (scan_new(a, pattern, &s, err) != EDDY_OK)
        return NULL;
    redisReply *r = NULL;
    char *doc = NULL;
    if (registry(a, &r, err) == EDDY_OK)
        doc = write(a->s.ns, s, r, err);
    if (r)
        freeReplyObject(r);
    eddy__admin_scan_free(s);
    return doc;
}

char *eddy_admin_stats_json(eddy_admin *a, const char *pattern, eddy_error *err) {
    return stats_doc(a, pattern, eddy__admin_stats_json, err);
}

char *eddy_admin_stats_prometheus(eddy_admin *a, const char *pattern, eddy_error *err) {
    return stats_doc(a, pattern, eddy__admin_stats_prometheus, err);
}

/* One round of a history read, fed to fn. */
static eddy_status history_round(eddy_admin *a, const char *subject, const char *start,
                                 bool exclusive, bool reverse, size_t count, eddy_history_fn fn,
                                 void *user, char *last_id, size_t *n, eddy_error *err) {
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    redisReply *reply = NULL;
    eddy_status st =
        eddy__admin_history_cmd(a->s.ns, subject, start, exclusive, reverse, count, &cmds, err);
    if (st == EDDY_OK && (st = exchange(a, &cmds, &reply, err)) == EDDY_OK)
        st = eddy__admin_history_feed(reply, subject, a->s.max_event_size, reverse, fn, user,
                                      last_id, 64, n, err);
    if (reply)
        freeReplyObject(reply);
    eddy__cmdlist_reset(&cmds);
    return st;
}

eddy_status eddy_admin_history(eddy_admin *a, const char *subject, const char *from, size_t last,
                               eddy_history_fn fn, void *user, eddy_error *err) {
    if (!a || !subject || !fn)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "admin, subject or fn is NULL");
    char cursor[64] = "";
    size_t n = 0;
    if (last > 0) /* the newest `last` at or after from, in one round, handed out oldest first */
        return history_round(a, subject, from, false, true, last, fn, user, cursor, &n, err);
    eddy_status st = history_round(a, subject, from, false, false, EDDY__HISTORY_PAGE, fn, user,
                                   cursor, &n, err);
    while (st == EDDY_OK && n == EDDY__HISTORY_PAGE)
        st = history_round(a, subject, cursor, true, false, EDDY__HISTORY_PAGE, fn, user, cursor,
                           &n, err);
    return st;
}

eddy_status eddy_admin_subject_remove(eddy_admin *a, const char *subject, bool *removed,
                                      eddy_error *err) {
    bool found = false;
    if (removed)
        *removed = false;
    if (!a || !subject)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "admin or subject is NULL");
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    redisReply *replies[4] = {NULL, NULL, NULL, NULL};
    eddy_status st = eddy__admin_remove_cmds(a->s.ns, subject, &cmds, err);
    if (st == EDDY_OK && (st = exchange(a, &cmds, replies, err)) == EDDY_OK)
        st = eddy__admin_remove_result(replies, cmds.n, &found, err);
    for (size_t i = 0; i < 4; i++)
        if (replies[i])
            freeReplyObject(replies[i]);
    eddy__cmdlist_reset(&cmds);
    if (st == EDDY_OK && removed)
        *removed = found;
    return st;
}
