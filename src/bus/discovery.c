/* SPDX-License-Identifier: BSD-3-Clause */
/* The shared subject discovery; see discovery.h. The list keeps each subject once (a hash set
 * over the list's indexes), so a feed costs a lookup per subject Redis returns. */
#include "bus/discovery.h"

#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "events/subject.h"

struct eddy__discovery {
    pthread_mutex_t lock;
    unsigned interval_ms;
    const void *owner;
    bool in_flight;
    long long next_due;
    char **subjects; /* in the order found */
    size_t n, cap;
    size_t *slots; /* open addressing: index + 1 into subjects, 0 empty */
    size_t nslots; /* a power of two, at least twice n */
};

eddy__discovery *eddy__discovery_new(unsigned interval_ms) {
    eddy__discovery *d = calloc(1, sizeof(*d));
    if (!d)
        return NULL;
    pthread_mutex_init(&d->lock, NULL);
    d->interval_ms = interval_ms;
    return d;
}

void eddy__discovery_free(eddy__discovery *d) {
    if (!d)
        return;
    for (size_t i = 0; i < d->n; i++)
        free(d->subjects[i]);
    free(d->subjects);
    free(d->slots);
    pthread_mutex_destroy(&d->lock);
    free(d);
}

static uint64_t hash(const char *s, size_t len) {
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return h;
}

/* The slot holding `s`, or the empty slot where it would go. */
static size_t *find_slot(eddy__discovery *d, const char *s, size_t len) {
    size_t mask = d->nslots - 1;
    for (size_t i = hash(s, len) & mask;; i = (i + 1) & mask) {
        size_t *slot = &d->slots[i];
        if (*slot == 0)
            return slot;
        const char *have = d->subjects[*slot - 1];
        if (strlen(have) == len && memcmp(have, s, len) == 0)
            return slot;
    }
}

static bool rehash(eddy__discovery *d, size_t nslots) {
    size_t *slots = calloc(nslots, sizeof(*slots));
    if (!slots)
        return false;
    free(d->slots);
    d->slots = slots;
    d->nslots = nslots;
    for (size_t i = 0; i < d->n; i++)
        *find_slot(d, d->subjects[i], strlen(d->subjects[i])) = i + 1;
    return true;
}

/* False on OOM (the subject is then offered again by the next discovery). */
static bool add(eddy__discovery *d, const char *s, size_t len, bool *added) {
    if ((d->n + 1) * 2 > d->nslots && !rehash(d, d->nslots ? d->nslots * 2 : 64))
        return false;
    size_t *slot = find_slot(d, s, len);
    if (*slot)
        return true;
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 32;
        char **v = realloc(d->subjects, cap * sizeof(*v));
        if (!v)
            return false;
        d->subjects = v;
        d->cap = cap;
    }
    char *copy = strndup(s, len);
    if (!copy)
        return false;
    d->subjects[d->n++] = copy;
    *slot = d->n;
    *added = true;
    return true;
}

bool eddy__discovery_take(eddy__discovery *d, const void *who, long long now_ms) {
    pthread_mutex_lock(&d->lock);
    bool stale = now_ms >= d->next_due + 2LL * d->interval_ms;
    bool take =
        !d->in_flight && now_ms >= d->next_due && (d->owner == NULL || d->owner == who || stale);
    if (take) {
        d->owner = who;
        d->in_flight = true;
    }
    pthread_mutex_unlock(&d->lock);
    return take;
}

long long eddy__discovery_due(eddy__discovery *d, const void *who) {
    pthread_mutex_lock(&d->lock);
    long long due = d->owner == NULL || d->owner == who ? d->next_due : LLONG_MAX;
    pthread_mutex_unlock(&d->lock);
    return due;
}

bool eddy__discovery_feed(eddy__discovery *d, const void *who, const redisReply *r,
                          long long now_ms) {
    bool added = false;
    pthread_mutex_lock(&d->lock);
    if (d->owner == who)
        d->in_flight = false;
    if (now_ms + d->interval_ms > d->next_due) /* any fresh look puts the next one off */
        d->next_due = now_ms + d->interval_ms;
    if (r && r->type == REDIS_REPLY_ARRAY)
        for (size_t i = 0; i < r->elements; i++) {
            const redisReply *e = r->element[i];
            if (e->type != REDIS_REPLY_STRING || strlen(e->str) != e->len ||
                eddy__subject_check(e->str, NULL) != EDDY_OK)
                continue;
            if (!add(d, e->str, e->len, &added))
                break;
        }
    pthread_mutex_unlock(&d->lock);
    return added;
}

void eddy__discovery_leave(eddy__discovery *d, const void *who) {
    pthread_mutex_lock(&d->lock);
    if (d->owner == who) {
        d->owner = NULL;
        d->in_flight = false;
    }
    pthread_mutex_unlock(&d->lock);
}

void eddy__discovery_each_new(eddy__discovery *d, size_t *seen,
                              bool (*fn)(const char *subject, void *user), void *user) {
    pthread_mutex_lock(&d->lock);
    while (*seen < d->n && fn(d->subjects[*seen], user))
        (*seen)++;
    pthread_mutex_unlock(&d->lock);
}
