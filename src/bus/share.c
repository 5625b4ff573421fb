/* SPDX-License-Identifier: BSD-3-Clause */
/* A shared read connection's members (share.h).
 *
 * Invariants:
 * - members[0..n) are the attached members, each with its idx; a member is attached exactly
 *   when its where is not OFF.
 * - The ring holds, for every command written and not answered yet, its member in wire order;
 *   a detached member's entries are NULL, so nothing is ever handed to a member that left. */
#include "bus/share.h"

#include <stdlib.h>
#include <string.h>

void eddy__share_init(eddy__share *s) { memset(s, 0, sizeof(*s)); }

void eddy__share_destroy(eddy__share *s) {
    free(s->members);
    free(s->owners);
    free(s->batch);
    memset(s, 0, sizeof(*s));
}

eddy_status eddy__share_attach(eddy__share *s, eddy__share_member *m, void *who) {
    if (m->where != EDDY__SHARE_OFF)
        return EDDY_OK;
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16;
        eddy__share_member **v = realloc(s->members, cap * sizeof(*v));
        if (!v)
            return EDDY_ERR_NOMEM;
        s->members = v, s->cap = cap;
    }
    m->who = who;
    m->idx = s->n;
    s->members[s->n++] = m;
    m->where = EDDY__SHARE_SHARED;
    m->leaving = false;
    m->due = true;
    return EDDY_OK;
}

static void unlink_member(eddy__share *s, eddy__share_member *m) {
    eddy__share_member *last = s->members[--s->n];
    s->members[m->idx] = last;
    last->idx = m->idx;
    m->where = EDDY__SHARE_OFF;
}

bool eddy__share_detach(eddy__share *s, eddy__share_member *m) {
    m->leaving = true;
    if (m->where == EDDY__SHARE_OFF)
        return false;
    bool own = m->where == EDDY__SHARE_OWN;
    unlink_member(s, m);
    for (size_t i = 0; i < s->len; i++)
        if (s->owners[(s->head + i) % s->ocap] == m)
            s->owners[(s->head + i) % s->ocap] = NULL;
    return own;
}

size_t eddy__share_members(const eddy__share *s) { return s->n; }

void **eddy__share_snapshot(const eddy__share *s, size_t *n) {
    *n = 0;
    void **v = s->n ? malloc(s->n * sizeof(*v)) : NULL;
    if (!v)
        return NULL;
    for (size_t i = 0; i < s->n; i++)
        v[i] = s->members[i]->who;
    *n = s->n;
    return v;
}

void *eddy__share_pop(eddy__share *s) {
    if (s->n == 0)
        return NULL;
    eddy__share_member *m = s->members[s->n - 1];
    eddy__share_detach(s, m);
    return m->who;
}

bool eddy__share_kick(eddy__share_member *m) {
    m->due = true;
    return m->where == EDDY__SHARE_SHARED;
}

size_t eddy__share_take_due(eddy__share *s, long long now, long long idle_ms, void ***batch,
                            long long *next_at) {
    size_t k = 0;
    *next_at = now + idle_ms;
    if (s->batch_cap < s->n) {
        void **b = realloc(s->batch, s->n * sizeof(*b));
        if (b)
            s->batch = b, s->batch_cap = s->n;
    }
    for (size_t i = 0; i < s->n && k < s->batch_cap; i++) {
        eddy__share_member *m = s->members[i];
        if (m->where != EDDY__SHARE_SHARED || m->leaving)
            continue;
        if (m->due || m->wake_at <= now) {
            m->due = false;
            m->where = EDDY__SHARE_ROUND;
            s->batch[k++] = m->who;
        } else if (m->wake_at < *next_at) {
            *next_at = m->wake_at;
        }
    }
    *batch = s->batch;
    return k;
}

void eddy__share_round_end(eddy__share_member *m, long long next_at) {
    if (m->where != EDDY__SHARE_ROUND)
        return;
    m->where = EDDY__SHARE_SHARED;
    m->wake_at = next_at;
}

void eddy__share_own(eddy__share_member *m, bool started) {
    m->where = started ? EDDY__SHARE_OWN : EDDY__SHARE_ROUND;
}

bool eddy__share_give_back(eddy__share_member *m, long long next_at) {
    if (m->leaving || m->where != EDDY__SHARE_OWN)
        return false;
    m->where = EDDY__SHARE_SHARED;
    m->wake_at = next_at; /* (a kick since its last plan has set it due) */
    return true;
}

bool eddy__share_sent(eddy__share *s, eddy__share_member *m) {
    if (s->len == s->ocap) {
        size_t cap = s->ocap ? 2 * s->ocap : 64;
        eddy__share_member **v = malloc(cap * sizeof(*v));
        if (!v)
            return false;
        for (size_t i = 0; i < s->len; i++)
            v[i] = s->owners[(s->head + i) % s->ocap];
        free(s->owners);
        s->owners = v, s->ocap = cap, s->head = 0;
    }
    s->owners[(s->head + s->len++) % s->ocap] = m;
    return true;
}

void eddy__share_unsend(eddy__share *s) {
    if (s->len > 0)
        s->len--;
}

void *eddy__share_answered(eddy__share *s) {
    if (s->len == 0)
        return NULL;
    eddy__share_member *m = s->owners[s->head];
    s->head = (s->head + 1) % s->ocap;
    s->len--;
    return m ? m->who : NULL;
}

void eddy__share_lost(eddy__share *s) { s->head = s->len = 0; }
