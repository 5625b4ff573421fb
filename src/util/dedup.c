/* SPDX-License-Identifier: BSD-3-Clause */
/* The bounded id set; see dedup.h.
 *
 * Ids live in a ring (oldest at `head`), and an open-addressing table with linear probing
 * points into it by ring slot. Removal uses backward-shift deletion, so the table never fills
 * with tombstones however many ids pass through. A ring slot keeps its id's hash (nothing is
 * hashed twice) and the table slot that refers to it, and holds an id of up to INLINE_ID bytes
 * itself, so remembering a typical id (a UUID, "ev-123") allocates nothing once the ring has grown.
 * Invariants: the table has at least twice as many slots as ids (probes stay short); every ring
 * slot in use is referenced by exactly one table slot, the one its `at` names; a slot's id points
 * at its own `inl` or at a heap copy it owns. */
#include "util/dedup.h"

#include <stdint.h>
#include <string.h>

#include <stdlib.h>

#define EMPTY SIZE_MAX

/* ---- the set ----------------------------------------------------------------------------- */

#define INLINE_ID 40

typedef struct slot {
    size_t hash;
    size_t at; /* the table slot that refers to it */
    char *id;  /* inl, or a copy of a longer id */
    char inl[INLINE_ID];
} slot;

struct eddy__dedup {
    size_t capacity;
    slot *ring; /* ring[(head + i) % ring_cap], i < count */
    size_t ring_cap, head, count;
    size_t *table;    /* ring slot or EMPTY */
    size_t table_cap; /* a power of two */
};

/* FNV-1a; *len becomes strlen(s). */
static size_t hash(const char *s, size_t *len) {
    uint64_t h = 1469598103934665603ull;
    const char *p = s;
    for (; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    *len = (size_t)(p - s);
    return (size_t)(h ^ (h >> 29));
}

eddy__dedup *eddy__dedup_new(size_t capacity) {
    eddy__dedup *d = eddy__fcalloc(1, sizeof(*d));
    if (!d)
        return NULL;
    d->capacity = capacity ? capacity : 1;
    return d;
}

void eddy__dedup_free(eddy__dedup *d) {
    if (!d)
        return;
    eddy__dedup_clear(d);
    eddy__ffree(d->ring);
    eddy__ffree(d->table);
    eddy__ffree(d);
}

/* The table slot holding id (whose hash is h), or EMPTY. */
static size_t find(const eddy__dedup *d, const char *id, size_t h) {
    if (!d->table_cap)
        return EMPTY;
    size_t mask = d->table_cap - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        if (d->table[i] == EMPTY)
            return EMPTY;
        const slot *s = &d->ring[d->table[i]];
        if (s->hash == h && strcmp(s->id, id) == 0)
            return i;
    }
}

bool eddy__dedup_contains(const eddy__dedup *d, const char *id) {
    size_t len;
    return d && id && d->count && find(d, id, hash(id, &len)) != EMPTY;
}

static void table_put(size_t *table, size_t cap, slot *ring, size_t s) {
    size_t mask = cap - 1;
    size_t i = ring[s].hash & mask;
    while (table[i] != EMPTY)
        i = (i + 1) & mask;
    table[i] = s;
    ring[s].at = i;
}

/* Removes table slot i, shifting later members of its cluster back. */
static void table_remove(eddy__dedup *d, size_t i) {
    size_t mask = d->table_cap - 1;
    d->table[i] = EMPTY;
    for (size_t j = (i + 1) & mask; d->table[j] != EMPTY; j = (j + 1) & mask) {
        size_t home = d->ring[d->table[j]].hash & mask;
        /* j may move to i when its home is not in the cyclic range (i, j]. */
        bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (!stays) {
            d->table[i] = d->table[j];
            d->ring[d->table[i]].at = i;
            d->table[j] = EMPTY;
            i = j;
        }
    }
}

/* Moves a slot's id to another slot (an inline id moves with it). */
static void slot_move(slot *to, slot *from) {
    *to = *from;
    if (from->id == from->inl)
        to->id = to->inl;
}

/* Makes room for one more id: grows the ring (keeping its order) and the table. */
static eddy_status reserve(eddy__dedup *d) {
    if (d->count < d->ring_cap && (d->count + 1) * 2 <= d->table_cap)
        return EDDY_OK;
    size_t ring_cap = d->ring_cap;
    if (d->count == ring_cap) {
        ring_cap = ring_cap ? ring_cap * 2 : 64;
        if (ring_cap > d->capacity)
            ring_cap = d->capacity;
    }
    size_t table_cap = d->table_cap ? d->table_cap : 128;
    while ((d->count + 1) * 2 > table_cap || table_cap < ring_cap * 2)
        table_cap *= 2;
    slot *ring = d->ring;
    if (ring_cap != d->ring_cap) {
        ring = eddy__fmalloc(ring_cap * sizeof(*ring));
        if (!ring)
            return EDDY_ERR_NOMEM;
    }
    size_t *table = eddy__fmalloc(table_cap * sizeof(*table));
    if (!table) {
        if (ring != d->ring)
            eddy__ffree(ring);
        return EDDY_ERR_NOMEM;
    }
    if (ring != d->ring) {
        for (size_t i = 0; i < d->count; i++)
            slot_move(&ring[i], &d->ring[(d->head + i) % d->ring_cap]);
        eddy__ffree(d->ring);
        d->ring = ring;
        d->ring_cap = ring_cap;
        d->head = 0;
    }
    for (size_t i = 0; i < table_cap; i++)
        table[i] = EMPTY;
    for (size_t i = 0; i < d->count; i++)
        table_put(table, table_cap, d->ring, (d->head + i) % d->ring_cap);
    eddy__ffree(d->table);
    d->table = table;
    d->table_cap = table_cap;
    return EDDY_OK;
}

/* Stores id (len bytes, hash h) in slot s, which holds nothing. */
static eddy_status slot_set(slot *s, const char *id, size_t len, size_t h) {
    char *p = s->inl;
    if (len >= INLINE_ID && !(p = eddy__fmalloc(len + 1)))
        return EDDY_ERR_NOMEM;
    memcpy(p, id, len + 1);
    s->id = p;
    s->hash = h;
    return EDDY_OK;
}

static void slot_clear(slot *s) {
    if (s->id != s->inl)
        eddy__ffree(s->id);
    s->id = NULL;
}

eddy_status eddy__dedup_add(eddy__dedup *d, const char *id) {
    if (!d || !id)
        return EDDY_ERR_INVALID_ARGUMENT;
    size_t len, h = hash(id, &len);
    if (find(d, id, h) != EMPTY)
        return EDDY_OK;
    if (d->count == d->capacity) {
        /* Full: the oldest id gives its slot to the new one. */
        slot *s = &d->ring[d->head], fresh;
        if (slot_set(&fresh, id, len, h) != EDDY_OK)
            return EDDY_ERR_NOMEM;
        table_remove(d, s->at);
        slot_clear(s);
        slot_move(s, &fresh);
        table_put(d->table, d->table_cap, d->ring, d->head);
        d->head = (d->head + 1) % d->ring_cap;
        return EDDY_OK;
    }
    if (reserve(d) != EDDY_OK)
        return EDDY_ERR_NOMEM;
    size_t s = (d->head + d->count) % d->ring_cap;
    if (slot_set(&d->ring[s], id, len, h) != EDDY_OK)
        return EDDY_ERR_NOMEM;
    d->count++;
    table_put(d->table, d->table_cap, d->ring, s);
    return EDDY_OK;
}

void eddy__dedup_clear(eddy__dedup *d) {
    if (!d)
        return;
    for (size_t i = 0; i < d->count; i++)
        slot_clear(&d->ring[(d->head + i) % d->ring_cap]);
    for (size_t i = 0; i < d->table_cap; i++)
        d->table[i] = EMPTY;
    d->count = 0;
    d->head = 0;
}

size_t eddy__dedup_count(const eddy__dedup *d) { return d ? d->count : 0; }
