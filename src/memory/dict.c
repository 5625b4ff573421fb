/* SPDX-License-Identifier: BSD-3-Clause */
/* Insertion-ordered hash table for keys, set members, hash fields, groups and consumers.
 *
 * Entries sit in an array in insertion order; deleting leaves a hole (key == NULL) that a later
 * compaction squeezes out, so iteration order is insertion order, as Redis shows for small
 * hashes. The index is open addressing with linear probing over array positions, at most half
 * full, holding live entries only (deletion shifts followers back instead of leaving
 * tombstones).
 *
 * Invariants: live <= nent <= cap; every live entry is in the index exactly once; an add that
 * fails for lack of memory changes nothing visible. */
#include <string.h>

#include "memory/util.h"

#define EMPTY SIZE_MAX

static uint64_t hash_bytes(const void *key, size_t len) {
    const unsigned char *p = key;
    uint64_t h = 1469598103934665603ULL; /* FNV-1a, then a splitmix finaliser for the low bits */
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 1099511628211ULL;
    }
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebULL;
    h ^= h >> 31;
    return h;
}

void eddy__mdict_init(eddy__mdict *d) { memset(d, 0, sizeof(*d)); }

void eddy__mdict_clear(eddy__mdict *d, void (*free_val)(void *)) {
    for (size_t i = 0; i < d->nent; i++) {
        if (!d->ent[i].key)
            continue;
        if (free_val)
            free_val(d->ent[i].val);
        eddy__mem_free(d->ent[i].key);
    }
    eddy__mem_free(d->ent);
    eddy__mem_free(d->idx);
    eddy__mdict_init(d);
}

static void index_insert(size_t *idx, size_t cap, uint64_t hash, size_t pos) {
    size_t mask = cap - 1;
    size_t i = (size_t)hash & mask;
    while (idx[i] != EMPTY)
        i = (i + 1) & mask;
    idx[i] = pos;
}

static void index_rebuild(eddy__mdict *d, size_t *idx, size_t cap) {
    for (size_t i = 0; i < cap; i++)
        idx[i] = EMPTY;
    for (size_t pos = 0; pos < d->nent; pos++)
        if (d->ent[pos].key)
            index_insert(idx, cap, d->ent[pos].hash, pos);
}

/* Squeezes deleted slots out of the entry array; positions change, so the index is rebuilt.
 * Never allocates. */
static void compact(eddy__mdict *d) {
    size_t out = 0;
    for (size_t i = 0; i < d->nent; i++)
        if (d->ent[i].key)
            d->ent[out++] = d->ent[i];
    d->nent = out;
    if (d->idx)
        index_rebuild(d, d->idx, d->idxcap);
}

static size_t find_slot(const eddy__mdict *d, const void *key, size_t klen, uint64_t hash) {
    if (!d->idxcap)
        return EMPTY;
    size_t mask = d->idxcap - 1;
    for (size_t i = (size_t)hash & mask; d->idx[i] != EMPTY; i = (i + 1) & mask) {
        const eddy__mdict_entry *e = &d->ent[d->idx[i]];
        if (e->hash == hash && e->klen == klen && memcmp(e->key, key, klen) == 0)
            return i;
    }
    return EMPTY;
}

eddy__mdict_entry *eddy__mdict_find(const eddy__mdict *d, const void *key, size_t klen) {
    size_t slot = find_slot(d, key, klen, hash_bytes(key, klen));
    return slot == EMPTY ? NULL : &d->ent[d->idx[slot]];
}

int eddy__mdict_add(eddy__mdict *d, const void *key, size_t klen, void *val,
                    eddy__mdict_entry **out) {
    uint64_t hash = hash_bytes(key, klen);
    size_t slot = find_slot(d, key, klen, hash);
    if (slot != EMPTY) {
        if (out)
            *out = &d->ent[d->idx[slot]];
        return 0;
    }
    if (d->nent == d->cap) {
        if (d->nent - d->live >= d->cap / 2 && d->nent > d->live) {
            compact(d);
        } else {
            size_t ncap = d->cap ? d->cap * 2 : 4;
            eddy__mdict_entry *ent = eddy__mem_realloc(d->ent, ncap * sizeof(*ent));
            if (!ent)
                return -1;
            d->ent = ent;
            d->cap = ncap;
        }
    }
    if ((d->live + 1) * 2 > d->idxcap) {
        size_t ncap = d->idxcap ? d->idxcap * 2 : 8;
        size_t *idx = eddy__mem_malloc(ncap * sizeof(*idx));
        if (!idx)
            return -1;
        index_rebuild(d, idx, ncap);
        eddy__mem_free(d->idx);
        d->idx = idx;
        d->idxcap = ncap;
    }
    char *copy = eddy__mem_memdup(key, klen);
    if (!copy)
        return -1;
    size_t pos = d->nent++;
    d->ent[pos] = (eddy__mdict_entry){copy, klen, hash, val};
    index_insert(d->idx, d->idxcap, hash, pos);
    d->live++;
    if (out)
        *out = &d->ent[pos];
    return 1;
}

bool eddy__mdict_del(eddy__mdict *d, const void *key, size_t klen, void **val) {
    size_t i = find_slot(d, key, klen, hash_bytes(key, klen));
    if (i == EMPTY)
        return false;
    eddy__mdict_entry *e = &d->ent[d->idx[i]];
    if (val)
        *val = e->val;
    eddy__mem_free(e->key);
    e->key = NULL;
    d->live--;
    /* Backward-shift deletion keeps probe chains intact without tombstones. */
    size_t mask = d->idxcap - 1;
    d->idx[i] = EMPTY;
    for (size_t j = (i + 1) & mask; d->idx[j] != EMPTY; j = (j + 1) & mask) {
        size_t home = (size_t)d->ent[d->idx[j]].hash & mask;
        bool movable = (j > i) ? (home <= i || home > j) : (home <= i && home > j);
        if (movable) {
            d->idx[i] = d->idx[j];
            d->idx[j] = EMPTY;
            i = j;
        }
    }
    if (d->live == 0) {
        eddy__mdict_clear(d, NULL); /* give the memory back when a table empties */
    } else if (d->nent > 16 && d->live < d->nent / 4) {
        compact(d);
    }
    return true;
}
