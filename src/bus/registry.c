/* SPDX-License-Identifier: BSD-3-Clause */
/* The subscription registry; see registry.h. A member is
 * "<r|h|g>\t<group>\t<instance>\t<subscription name>\t<pattern>": the kind first (responder,
 * handler or gather twin) for tools that show it, the pattern last because it is what
 * requesters match. The instance makes members of different processes distinct. */
#include "bus/registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pthread.h>

#include "error.h"
#include "events/subject.h"
#include "link/redis.h"

static char *registry_key(const char *ns) {
    size_t n = strlen(ns) + 16;
    char *k = malloc(n);
    if (k)
        snprintf(k, n, "{%s}:subs", ns);
    return k;
}

char eddy__registry_kind(const eddy__sub *sub) {
    return sub->twin ? 'g' : sub->responder ? 'r' : 'h';
}

static void add_member(eddy__cmd *cmd, const eddy__sub *sub) {
    eddy__cmd_fmt(cmd, "%c\t%s\t%s\t%s\t%s", eddy__registry_kind(sub), sub->group, sub->consumer,
                  sub->name, sub->pattern);
}

eddy_status eddy__registry_renew(const char *ns, eddy__sub *const *subs, size_t n,
                                 long long until_ms, long long now_ms, eddy__cmdlist *out,
                                 int tag) {
    char *key = registry_key(ns);
    if (!key)
        return EDDY_ERR_NOMEM;
    if (n > 0) {
        eddy__cmd *cmd = eddy__cmdlist_add(out, tag, 0);
        if (!cmd) {
            free(key);
            return EDDY_ERR_NOMEM;
        }
        eddy__cmd_str(cmd, "ZADD");
        eddy__cmd_str(cmd, key);
        for (size_t i = 0; i < n; i++) {
            eddy__cmd_fmt(cmd, "%lld", until_ms);
            add_member(cmd, subs[i]);
        }
    }
    eddy__cmd *gc = eddy__cmdlist_add(out, tag, 0);
    if (gc) {
        eddy__cmd_str(gc, "ZREMRANGEBYSCORE");
        eddy__cmd_str(gc, key);
        eddy__cmd_str(gc, "-inf");
        eddy__cmd_fmt(gc, "(%lld", now_ms);
    }
    free(key);
    return gc ? eddy__cmdlist_status(out) : EDDY_ERR_NOMEM;
}

eddy_status eddy__registry_remove(const char *ns, eddy__sub *const *subs, size_t n,
                                  eddy__cmdlist *out, int tag) {
    if (n == 0)
        return EDDY_OK;
    char *key = registry_key(ns);
    eddy__cmd *cmd = key ? eddy__cmdlist_add(out, tag, 0) : NULL;
    if (!cmd) {
        free(key);
        return EDDY_ERR_NOMEM;
    }
    eddy__cmd_str(cmd, "ZREM");
    eddy__cmd_str(cmd, key);
    for (size_t i = 0; i < n; i++)
        add_member(cmd, subs[i]);
    free(key);
    return eddy__cmdlist_status(out);
}

eddy_status eddy__registry_query(const char *ns, long long now_ms, eddy__cmdlist *out, int tag) {
    char *key = registry_key(ns);
    eddy__cmd *cmd = key ? eddy__cmdlist_add(out, tag, 0) : NULL;
    if (!cmd) {
        free(key);
        return EDDY_ERR_NOMEM;
    }
    eddy__cmd_str(cmd, "ZRANGEBYSCORE");
    eddy__cmd_str(cmd, key);
    eddy__cmd_fmt(cmd, "%lld", now_ms);
    eddy__cmd_str(cmd, "+inf");
    free(key);
    return eddy__cmdlist_status(out);
}

eddy_status eddy__registry_list(const char *ns, long long now_ms, eddy__cmdlist *out, int tag) {
    size_t first = out->n;
    eddy_status st = eddy__registry_query(ns, now_ms, out, tag);
    if (st == EDDY_OK)
        eddy__cmd_str(&out->cmds[first], "WITHSCORES");
    return st == EDDY_OK ? eddy__cmdlist_status_from(out, first) : st;
}

static eddy_status matches_kind(const redisReply *r, const char *subject, char kind, bool *any,
                                eddy_error *err);

eddy_status eddy__registry_matches(const redisReply *r, const char *subject, bool *any,
                                   eddy_error *err) {
    return matches_kind(r, subject, 0, any, err);
}

/* kind 0: any member; else only members of that kind. */
static eddy_status matches_kind(const redisReply *r, const char *subject, char kind, bool *any,
                                eddy_error *err) {
    *any = false;
    eddy_status st = eddy__reply_status(r, "subscription registry", err);
    if (st != EDDY_OK)
        return st;
    if (r->type != REDIS_REPLY_ARRAY)
        return eddy__fail(err, EDDY_ERR_PROTOCOL, "subscription registry: not a list");
    for (size_t i = 0; i < r->elements && !*any; i++) {
        const redisReply *m = r->element[i];
        if (m->type != REDIS_REPLY_STRING || strlen(m->str) != m->len)
            continue;
        const char *pattern = strrchr(m->str, '\t');
        if (kind && (m->len < 2 || m->str[0] != kind || m->str[1] != '\t'))
            continue;
        if (pattern && eddy__pattern_check(pattern + 1, NULL) == EDDY_OK &&
            eddy__pattern_match(pattern + 1, subject))
            *any = true;
    }
    return EDDY_OK;
}

struct eddy__registry_cache {
    pthread_mutex_t lock;
    long long max_age_ms;
    redisReply *reply;
    long long at_ms;
    long long refresh_ms; /* when the question that renews the answer went out, -1: none out */
};

eddy__registry_cache *eddy__registry_cache_new(long long max_age_ms) {
    eddy__registry_cache *c = calloc(1, sizeof(*c));
    if (c) {
        pthread_mutex_init(&c->lock, NULL);
        c->max_age_ms = max_age_ms;
        c->refresh_ms = -1;
    }
    return c;
}

void eddy__registry_cache_free(eddy__registry_cache *c) {
    if (!c)
        return;
    if (c->reply)
        freeReplyObject(c->reply);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

/* Caller holds the lock. */
static bool remembered_match(eddy__registry_cache *c, const char *subject, char kind) {
    bool any = false;
    if (c->reply && matches_kind(c->reply, subject, kind, &any, NULL) != EDDY_OK)
        any = false;
    return any;
}

/* True when the remembered answer (not older than max_age_ms) has a match for subject. One
 * question renews an answer that grew old: while it is out (not longer than max_age), the old
 * answer, not older than twice max_age, still counts, so that requests in flight do not each
 * ask the same question. */
static bool cache_match_or_refresh(eddy__registry_cache *c, const char *subject, char kind,
                                   long long now_ms) {
    pthread_mutex_lock(&c->lock);
    long long age = now_ms - c->at_ms;
    bool refreshing = c->refresh_ms >= 0 && now_ms - c->refresh_ms <= c->max_age_ms;
    bool any = c->reply && (age <= c->max_age_ms || (refreshing && age <= 2 * c->max_age_ms)) &&
               remembered_match(c, subject, kind);
    if (!any && !refreshing)
        c->refresh_ms = now_ms; /* this caller asks */
    pthread_mutex_unlock(&c->lock);
    return any;
}

void eddy__registry_cache_store(eddy__registry_cache *c, redisReply *r, long long now_ms) {
    if (!r || r->type != REDIS_REPLY_ARRAY) {
        if (r)
            freeReplyObject(r);
        return;
    }
    pthread_mutex_lock(&c->lock);
    redisReply *old = c->reply;
    c->reply = r;
    c->at_ms = now_ms;
    c->refresh_ms = -1;
    pthread_mutex_unlock(&c->lock);
    if (old)
        freeReplyObject(old);
}

eddy_status eddy__registry_ask(eddy__registry_cache *c, const char *ns, const char *subject,
                               long long now_ms, eddy__cmdlist *out, int tag, bool *cached) {
    return eddy__registry_ask_kind(c, ns, subject, 0, now_ms, out, tag, cached);
}

eddy_status eddy__registry_ask_kind(eddy__registry_cache *c, const char *ns, const char *subject,
                                    char kind, long long now_ms, eddy__cmdlist *out, int tag,
                                    bool *cached) {
    if ((*cached = cache_match_or_refresh(c, subject, kind, now_ms)))
        return EDDY_OK;
    return eddy__registry_query(ns, now_ms, out, tag);
}

void eddy__registry_unanswered(eddy__registry_cache *c) {
    pthread_mutex_lock(&c->lock);
    c->refresh_ms = -1; /* the next request asks again */
    pthread_mutex_unlock(&c->lock);
}

eddy_status eddy__registry_answer(eddy__registry_cache *c, redisReply *reply, const char *subject,
                                  long long asked_ms, bool *any, eddy_error *err) {
    return eddy__registry_answer_kind(c, reply, subject, 0, asked_ms, any, err);
}

eddy_status eddy__registry_answer_kind(eddy__registry_cache *c, redisReply *reply,
                                       const char *subject, char kind, long long asked_ms,
                                       bool *any, eddy_error *err) {
    eddy_status st = matches_kind(reply, subject, kind, any, err);
    if (st == EDDY_OK) {
        eddy__registry_cache_store(c, reply, asked_ms);
        return st;
    }
    if (reply)
        freeReplyObject(reply);
    eddy__registry_unanswered(c);
    return st;
}

bool eddy__registry_split_member(const char *m, size_t len, const char *out[5], size_t outlen[5]) {
    size_t k = 0, start = 0;
    for (size_t i = 0; i <= len && k < 5; i++)
        if (i == len || (m[i] == '\t' && k < 4)) {
            out[k] = m + start;
            outlen[k++] = i - start;
            start = i + 1;
        }
    return k == 5;
}

void eddy__registry_overlaps(const redisReply *r, eddy__sub *const *subs, size_t n,
                             const char *self,
                             void (*fn)(eddy__sub *sub, const char *group, const char *instance,
                                        const char *member, void *user),
                             void *user) {
    if (!r || r->type != REDIS_REPLY_ARRAY)
        return;
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *m = r->element[i];
        const char *f[5];
        size_t fl[5];
        char group[256], instance[256], pattern[512];
        if (m->type != REDIS_REPLY_STRING || !eddy__registry_split_member(m->str, m->len, f, fl) ||
            fl[0] != 1 || f[0][0] != 'r' || fl[1] >= sizeof(group) || fl[2] >= sizeof(instance) ||
            fl[4] >= sizeof(pattern))
            continue;
        memcpy(group, f[1], fl[1]);
        group[fl[1]] = '\0';
        memcpy(instance, f[2], fl[2]);
        instance[fl[2]] = '\0';
        memcpy(pattern, f[4], fl[4]);
        pattern[fl[4]] = '\0';
        if (strcmp(instance, self) == 0 || eddy__pattern_check(pattern, NULL) != EDDY_OK)
            continue;
        for (size_t s = 0; s < n; s++)
            if (subs[s]->responder && !subs[s]->twin && strcmp(subs[s]->group, group) != 0 &&
                eddy__pattern_overlap(subs[s]->pattern, pattern))
                fn(subs[s], group, instance, m->str, user);
    }
}
