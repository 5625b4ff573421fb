/* SPDX-License-Identifier: BSD-3-Clause */
/* Telling when the server is behind a subscription, or behind what a publisher was told; the
 * rules are in stream_look.h. Ids are kept parsed (two integers), so noting a read (or a
 * publish round) costs a parse and a comparison. */
#include "events/stream_look.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/reply.h"

/* "ms-seq" (or "ms"); false when it is not an id. */
static bool parse_id(const char *s, size_t len, eddy__xid *out) {
    uint64_t v[2] = {0, 0};
    int part = 0;
    bool digit = false;
    for (size_t i = 0; i < len; i++) {
        char ch = s[i];
        if (ch >= '0' && ch <= '9') {
            v[part] = v[part] * 10 + (uint64_t)(ch - '0');
            digit = true;
        } else if (ch == '-' && part == 0 && digit) {
            part = 1;
            digit = false;
        } else {
            return false;
        }
    }
    if (!digit)
        return false;
    out->ms = v[0];
    out->seq = v[1];
    return true;
}

static int cmp_id(eddy__xid a, eddy__xid b) {
    if (a.ms != b.ms)
        return a.ms < b.ms ? -1 : 1;
    return a.seq < b.seq ? -1 : a.seq > b.seq;
}

static bool entry_id(const redisReply *entries, size_t i, eddy__xid *out) {
    eddy__entry_view v = eddy__reply_entry(entries, i);
    return parse_id(v.id, v.idlen, out);
}

void eddy__stream_look_read(eddy__stream_look *l, const redisReply *entries) {
    size_t n = entries->elements;
    eddy__xid first, last;
    if (n == 0 || !entry_id(entries, 0, &first) || !entry_id(entries, n - 1, &last))
        return;
    if (cmp_id(first, l->look_id) > 0) {
        l->read_after += n; /* all above it, ascending */
    } else {
        for (size_t i = 0; i < n; i++) {
            eddy__xid x;
            if (entry_id(entries, i, &x) && cmp_id(x, l->look_id) > 0)
                l->read_after++;
        }
    }
    if (cmp_id(last, l->max_read) > 0)
        l->max_read = last;
}

bool eddy__stream_look_feed(eddy__stream_look *l, const redisReply *info,
                            eddy__stream_behind *out) {
    memset(out, 0, sizeof(*out));
    if (!info || info->type != REDIS_REPLY_ARRAY)
        return false;
    const redisReply *last = eddy__reply_field(info, "last-generated-id");
    const redisReply *added = eddy__reply_field(info, "entries-added");
    eddy__xid last_id;
    if (!last || last->type != REDIS_REPLY_STRING || !parse_id(last->str, last->len, &last_id) ||
        !added || added->type != REDIS_REPLY_INTEGER || added->integer < 0)
        return false;
    if (l->looked) {
        out->expected = l->look_added + l->read_after;
        out->added = (uint64_t)added->integer;
        out->lost = out->expected > out->added ? out->expected - out->added : 0;
        out->behind = out->lost > 0 || cmp_id(last_id, l->max_read) < 0;
        snprintf(out->last_id, sizeof(out->last_id), "%llu-%llu", (unsigned long long)last_id.ms,
                 (unsigned long long)last_id.seq);
        snprintf(out->max_read_id, sizeof(out->max_read_id), "%llu-%llu",
                 (unsigned long long)l->max_read.ms, (unsigned long long)l->max_read.seq);
    }
    l->looked = true;
    l->look_id = last_id;
    l->look_added = (uint64_t)added->integer;
    l->read_after = 0;
    l->max_read = last_id; /* the look itself saw this far */
    return true;
}

/* ---- published ids ----------------------------------------------------------------------- */

static void id_text(char *buf, size_t size, eddy__xid x) {
    snprintf(buf, size, "%llu-%llu", (unsigned long long)x.ms, (unsigned long long)x.seq);
}

static eddy__pub_stream *row_of(eddy__pub_look *t, const char *key, size_t keylen) {
    for (size_t i = 0; i < EDDY__PUB_LOOK_STREAMS; i++) {
        eddy__pub_stream *r = &t->rows[i];
        if (r->key && strlen(r->key) == keylen && memcmp(r->key, key, keylen) == 0)
            return r;
    }
    return NULL;
}

/* A row for key: its own, a free one, or the least recently noted one, emptied. */
static eddy__pub_stream *row_for(eddy__pub_look *t, const char *key, size_t keylen) {
    eddy__pub_stream *r = row_of(t, key, keylen), *old = &t->rows[0];
    if (r)
        return r;
    for (size_t i = 0; i < EDDY__PUB_LOOK_STREAMS && old->key; i++)
        if (!t->rows[i].key || t->rows[i].used < old->used)
            old = &t->rows[i];
    char *copy = malloc(keylen + 1);
    if (!copy)
        return NULL;
    memcpy(copy, key, keylen);
    copy[keylen] = '\0';
    if (old->look_due)
        t->ndue--;
    free(old->key);
    memset(old, 0, sizeof(*old));
    old->key = copy;
    return old;
}

void eddy__pub_look_free(eddy__pub_look *t) {
    for (size_t i = 0; i < EDDY__PUB_LOOK_STREAMS; i++) {
        free(t->rows[i].key);
        t->rows[i].key = NULL;
    }
}

void eddy__pub_look_note(eddy__pub_look *t, const char *key, size_t keylen, const char *first,
                         size_t firstlen, const char *last, size_t lastlen, uint64_t n) {
    eddy__pub_run run = {.n = n, .noted = ++t->clock};
    if (n == 0 || !parse_id(first, firstlen, &run.first) || !parse_id(last, lastlen, &run.last))
        return;
    if (cmp_id(run.last, run.first) < 0) { /* a deduplicated publish answers an older id */
        eddy__xid x = run.first;
        run.first = run.last;
        run.last = x;
    }
    eddy__pub_stream *r = row_for(t, key, keylen);
    if (!r)
        return;
    r->used = t->clock;
    if (r->rn == EDDY__PUB_LOOK_RUNS) { /* forget the oldest */
        r->rhead = (r->rhead + 1) % EDDY__PUB_LOOK_RUNS;
        r->rn--;
    }
    r->runs[(r->rhead + r->rn++) % EDDY__PUB_LOOK_RUNS] = run;
}

void eddy__pub_look_lost(eddy__pub_look *t) {
    t->ndue = 0;
    for (size_t i = 0; i < EDDY__PUB_LOOK_STREAMS; i++)
        if ((t->rows[i].look_due = t->rows[i].key && t->rows[i].rn > 0))
            t->ndue++;
}

bool eddy__pub_look_take(eddy__pub_look *t, const char *key) {
    eddy__pub_stream *r = row_of(t, key, strlen(key));
    if (!r || !r->look_due)
        return false;
    r->look_due = false;
    r->looked = t->clock;
    t->ndue--;
    return true;
}

void eddy__pub_look_again(eddy__pub_look *t, const char *key) {
    eddy__pub_stream *r = row_of(t, key, strlen(key));
    if (r && !r->look_due) {
        r->look_due = true;
        t->ndue++;
    }
    if (r)
        r->looked = 0;
}

void eddy__pub_look_feed(eddy__pub_look *t, const char *key, const redisReply *info,
                         eddy__stream_behind *out) {
    memset(out, 0, sizeof(*out));
    eddy__pub_stream *r = row_of(t, key, strlen(key));
    if (!r || r->rn == 0 || !info || r->looked == 0)
        return;
    uint64_t looked = r->looked;
    r->looked = 0; /* one reply per look */
    eddy__xid server = {0, 0};
    if (info->type == REDIS_REPLY_ERROR) {
        if (!strstr(info->str, "no such key"))
            return; /* not an answer about the stream */
    } else {
        const redisReply *last = eddy__reply_field(info, "last-generated-id");
        if (!last || last->type != REDIS_REPLY_STRING || !parse_id(last->str, last->len, &server))
            return;
    }
    eddy__xid newest = {0, 0};
    for (unsigned i = 0; i < r->rn; i++) {
        const eddy__pub_run *run = &r->runs[(r->rhead + i) % EDDY__PUB_LOOK_RUNS];
        if (run->noted <= looked && cmp_id(run->last, newest) > 0)
            newest = run->last;
    }
    if (cmp_id(server, newest) >= 0)
        return;
    out->behind = true;
    id_text(out->last_id, sizeof(out->last_id), server);
    id_text(out->max_read_id, sizeof(out->max_read_id), newest);
    /* Rounds of several threads may be noted out of order: every run is looked at. */
    unsigned kept = 0;
    for (unsigned i = 0; i < r->rn; i++) {
        eddy__pub_run run = r->runs[(r->rhead + i) % EDDY__PUB_LOOK_RUNS];
        if (run.noted > looked || cmp_id(run.last, server) <= 0)
            r->runs[(r->rhead + kept++) % EDDY__PUB_LOOK_RUNS] = run;
        else
            out->lost += cmp_id(run.first, server) > 0 ? run.n : 1;
    }
    r->rn = kept;
}
