/* SPDX-License-Identifier: BSD-3-Clause */
/* The bus-wide wake-up; see wakeup.h. Streams are a flat array looked up by key (a watch is
 * made once per subscription start, a feed looks up only the streams Redis returned), each
 * with its watchers. Replies are matched to streams by the key the command or the reply names,
 * never by position, so a watch or unwatch between a plan and its feed is harmless. */
#include "bus/wakeup.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "util/reply.h"

enum { TAG_NEWEST = 1, TAG_XREAD = 2 };

#define ID_MAX 48 /* "<ms>-<seq>": two 20-digit numbers and a dash */

typedef struct wstream {
    char *key;
    char id[ID_MAX];
    bool known;
    const void **who;
    size_t nwho, capwho;
} wstream;

struct eddy__wakeup {
    pthread_mutex_t lock;
    unsigned count;
    bool reading; /* a planned XREAD is not fed yet */
    unsigned hot; /* hot places taken (EDDY__WAKEUP_HOT_MAX at most) */
    wstream *v;
    size_t n, cap;
};

eddy__wakeup *eddy__wakeup_new(unsigned count) {
    eddy__wakeup *w = calloc(1, sizeof(*w));
    if (!w)
        return NULL;
    pthread_mutex_init(&w->lock, NULL);
    w->count = count > 0 ? count : 1;
    return w;
}

static void stream_free(wstream *s) {
    free(s->key);
    free(s->who);
}

void eddy__wakeup_free(eddy__wakeup *w) {
    if (!w)
        return;
    for (size_t i = 0; i < w->n; i++)
        stream_free(&w->v[i]);
    free(w->v);
    pthread_mutex_destroy(&w->lock);
    free(w);
}

static wstream *find(eddy__wakeup *w, const char *key, size_t len) {
    for (size_t i = 0; i < w->n; i++)
        if (strlen(w->v[i].key) == len && memcmp(w->v[i].key, key, len) == 0)
            return &w->v[i];
    return NULL;
}

eddy_status eddy__wakeup_watch(eddy__wakeup *w, const char *key, const void *who, bool *replan) {
    eddy_status st = EDDY_OK;
    *replan = false;
    pthread_mutex_lock(&w->lock);
    wstream *s = find(w, key, strlen(key));
    if (!s) {
        if (w->n == w->cap) {
            size_t cap = w->cap ? 2 * w->cap : 16;
            wstream *v = realloc(w->v, cap * sizeof(*v));
            if (!v) {
                st = EDDY_ERR_NOMEM;
                goto out;
            }
            w->v = v, w->cap = cap;
        }
        char *k = strdup(key);
        if (!k) {
            st = EDDY_ERR_NOMEM;
            goto out;
        }
        s = &w->v[w->n++];
        *s = (wstream){.key = k};
        *replan = w->reading; /* the read in flight does not cover it */
    }
    for (size_t i = 0; i < s->nwho; i++)
        if (s->who[i] == who)
            goto out;
    if (s->nwho == s->capwho) {
        size_t cap = s->capwho ? 2 * s->capwho : 4;
        const void **v = realloc(s->who, cap * sizeof(*v));
        if (!v) {
            st = EDDY_ERR_NOMEM;
            goto out;
        }
        s->who = v, s->capwho = cap;
    }
    s->who[s->nwho++] = who;
out:
    pthread_mutex_unlock(&w->lock);
    return st;
}

static void unwatch_one(eddy__wakeup *w, size_t i, const void *who) {
    wstream *s = &w->v[i];
    for (size_t j = 0; j < s->nwho; j++)
        if (s->who[j] == who) {
            s->who[j] = s->who[--s->nwho];
            break;
        }
    if (s->nwho == 0) {
        stream_free(s);
        w->v[i] = w->v[--w->n];
    }
}

void eddy__wakeup_unwatch(eddy__wakeup *w, const char *key, const void *who) {
    pthread_mutex_lock(&w->lock);
    for (size_t i = w->n; i-- > 0;)
        if (!key || strcmp(w->v[i].key, key) == 0)
            unwatch_one(w, i, who);
    pthread_mutex_unlock(&w->lock);
}

size_t eddy__wakeup_streams(eddy__wakeup *w) {
    pthread_mutex_lock(&w->lock);
    size_t n = w->n;
    pthread_mutex_unlock(&w->lock);
    return n;
}

eddy_status eddy__wakeup_plan(eddy__wakeup *w, long long block_ms, eddy__cmdlist *cmds,
                              long long *block_out) {
    *block_out = -1;
    pthread_mutex_lock(&w->lock);
    size_t first = cmds->n;
    bool unknown = false;
    for (size_t i = 0; i < w->n; i++) {
        if (w->v[i].known)
            continue;
        unknown = true;
        eddy__cmd *c = eddy__cmdlist_add(cmds, TAG_NEWEST, (long)i);
        if (!c)
            break;
        eddy__cmd_str(c, "XREVRANGE");
        eddy__cmd_str(c, w->v[i].key);
        eddy__cmd_str(c, "+");
        eddy__cmd_str(c, "-");
        eddy__cmd_str(c, "COUNT");
        eddy__cmd_str(c, "1");
    }
    if (!unknown && w->n > 0) {
        eddy__cmd *c = eddy__cmdlist_add(cmds, TAG_XREAD, 0);
        if (c) {
            eddy__cmd_str(c, "XREAD");
            eddy__cmd_str(c, "COUNT");
            eddy__cmd_u64(c, w->count);
            eddy__cmd_str(c, "BLOCK");
            eddy__cmd_u64(c, block_ms > 0 ? (unsigned long long)block_ms : 0);
            eddy__cmd_str(c, "STREAMS");
            for (size_t i = 0; i < w->n; i++)
                eddy__cmd_str(c, w->v[i].key);
            for (size_t i = 0; i < w->n; i++)
                eddy__cmd_str(c, w->v[i].id);
            *block_out = block_ms > 0 ? block_ms : 0;
            w->reading = true;
        }
    }
    pthread_mutex_unlock(&w->lock);
    return eddy__cmdlist_status_from(cmds, first);
}

static void wake_all(wstream *s, void (*wake)(const void *, void *), void *user) {
    for (size_t j = 0; j < s->nwho; j++)
        wake(s->who[j], user);
}

static bool set_id(wstream *s, const eddy__entry_view *e) {
    if (e->idlen == 0 || e->idlen >= ID_MAX)
        return false;
    memcpy(s->id, e->id, e->idlen);
    s->id[e->idlen] = '\0';
    return true;
}

/* XREVRANGE key + - COUNT 1: the stream's newest id, or 0-0 when it has none. */
static eddy_status feed_newest(eddy__wakeup *w, const eddy__cmd *cmd, const redisReply *r,
                               void (*wake)(const void *, void *), void *user) {
    const char *key = eddy__cmd_argv(cmd)[1];
    wstream *s = find(w, key, strlen(key));
    if (!s)
        return EDDY_OK; /* unwatched since */
    if (eddy__reply_entries(r) != EDDY_OK)
        return EDDY_ERR_PROTOCOL;
    if (r->elements == 0) {
        strcpy(s->id, "0-0");
    } else {
        eddy__entry_view e = eddy__reply_entry(r, 0);
        if (!set_id(s, &e))
            return EDDY_ERR_PROTOCOL;
    }
    s->known = true;
    wake_all(s, wake, user);
    return EDDY_OK;
}

/* XREAD: nil on timeout, else [[key, entries], ...]. */
static eddy_status feed_xread(eddy__wakeup *w, const redisReply *r,
                              void (*wake)(const void *, void *), void *user) {
    if (r->type == REDIS_REPLY_NIL)
        return EDDY_OK;
    if (r->type != REDIS_REPLY_ARRAY)
        return EDDY_ERR_PROTOCOL;
    eddy_status st = EDDY_OK;
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *pair = r->element[i];
        if (pair->type != REDIS_REPLY_ARRAY || pair->elements != 2 ||
            !eddy__reply_is_str(pair->element[0])) {
            st = EDDY_ERR_PROTOCOL;
            continue;
        }
        const redisReply *entries = pair->element[1];
        wstream *s = find(w, pair->element[0]->str, pair->element[0]->len);
        if (!s)
            continue; /* unwatched since */
        if (eddy__reply_entries(entries) != EDDY_OK || entries->elements == 0) {
            s->known = false;
            st = EDDY_ERR_PROTOCOL;
            continue;
        }
        eddy__entry_view e = eddy__reply_entry(entries, entries->elements - 1);
        if (!set_id(s, &e)) {
            s->known = false;
            st = EDDY_ERR_PROTOCOL;
            continue;
        }
        wake_all(s, wake, user);
    }
    return st;
}

static void reset_locked(eddy__wakeup *w) {
    for (size_t i = 0; i < w->n; i++)
        w->v[i].known = false;
    w->reading = false;
}

eddy_status eddy__wakeup_feed(eddy__wakeup *w, const eddy__cmdlist *cmds, redisReply **replies,
                              size_t n, void (*wake)(const void *who, void *user), void *user) {
    eddy_status st = EDDY_OK;
    pthread_mutex_lock(&w->lock);
    for (size_t i = 0; i < n && i < cmds->n; i++) {
        if (!replies[i]) {
            reset_locked(w);
            st = EDDY_ERR_IO;
            break;
        }
        eddy_status one = EDDY_OK;
        if (replies[i]->type == REDIS_REPLY_ERROR)
            one = EDDY_ERR_PROTOCOL;
        else if (cmds->tags[i] == TAG_NEWEST)
            one = feed_newest(w, &cmds->cmds[i], replies[i], wake, user);
        else if (cmds->tags[i] == TAG_XREAD)
            one = feed_xread(w, replies[i], wake, user);
        if (cmds->tags[i] == TAG_XREAD)
            w->reading = false;
        if (one != EDDY_OK && st == EDDY_OK)
            st = one;
    }
    pthread_mutex_unlock(&w->lock);
    return st;
}

void eddy__wakeup_reset(eddy__wakeup *w) {
    pthread_mutex_lock(&w->lock);
    reset_locked(w);
    pthread_mutex_unlock(&w->lock);
}

bool eddy__wakeup_hot_take(eddy__wakeup *w) {
    pthread_mutex_lock(&w->lock);
    bool ok = w->hot < EDDY__WAKEUP_HOT_MAX;
    if (ok)
        w->hot++;
    pthread_mutex_unlock(&w->lock);
    return ok;
}

void eddy__wakeup_hot_give(eddy__wakeup *w) {
    pthread_mutex_lock(&w->lock);
    if (w->hot > 0)
        w->hot--;
    pthread_mutex_unlock(&w->lock);
}
