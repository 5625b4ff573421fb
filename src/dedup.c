/* The bounded id set; see dedup.h.
 *
 * Ids live in a ring (oldest at `head`), and an open-addressing table with linear probing
 * points into it by ring slot. Removal uses backward-shift deletion, so the table never fills
 * with tombstones however many ids pass through. Invariants: the table has at least twice as
 * many slots as ids (probes stay short); every ring slot in use is referenced by exactly one
 * table slot. */
#include "dedup.h"

#include <stdint.h>
#include <string.h>

#include <stdatomic.h>
#include <stdlib.h>

#define EMPTY SIZE_MAX

/* ---- allocation with fault injection -------------------------------------------------- */

static atomic_long fail_countdown; /* > 0: allocations left before the failing one */
static atomic_bool fail_sticky, failing;

void eddy__falloc_fail_after(long n, bool sticky) {
    atomic_store(&failing, false);
    atomic_store(&fail_sticky, sticky);
    atomic_store(&fail_countdown, n > 0 ? n : 0);
}

static bool inject(void) {
    if (atomic_load_explicit(&failing, memory_order_relaxed))
        return true;
    long n = atomic_load_explicit(&fail_countdown, memory_order_relaxed);
    while (n > 0) {
        if (atomic_compare_exchange_weak(&fail_countdown, &n, n - 1)) {
            if (n != 1)
                return false;
            if (atomic_load(&fail_sticky))
                atomic_store(&failing, true);
            return true;
        }
    }
    return false;
}

void *eddy__fmalloc(size_t size) { return inject() ? NULL : malloc(size ? size : 1); }
void *eddy__fcalloc(size_t count, size_t size) {
    return inject() ? NULL : calloc(count ? count : 1, size ? size : 1);
}
void eddy__ffree(void *ptr) { free(ptr); }
char *eddy__fstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *copy = eddy__fmalloc(n);
    if (copy)
        memcpy(copy, s, n);
    return copy;
}

/* ---- the set ----------------------------------------------------------------------------- */

struct eddy__dedup {
    size_t capacity;
    char **ring; /* ring[(head + i) % ring_cap], i < count */
    size_t ring_cap, head, count;
    size_t *table;    /* ring slot or EMPTY */
    size_t table_cap; /* a power of two */
};

static size_t hash(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
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

/* The table slot holding id, or EMPTY. */
static size_t find(const eddy__dedup *d, const char *id) {
    if (!d->table_cap)
        return EMPTY;
    size_t mask = d->table_cap - 1;
    for (size_t i = hash(id) & mask;; i = (i + 1) & mask) {
        if (d->table[i] == EMPTY)
            return EMPTY;
        if (strcmp(d->ring[d->table[i]], id) == 0)
            return i;
    }
}

bool eddy__dedup_contains(const eddy__dedup *d, const char *id) {
    return d && id && find(d, id) != EMPTY;
}

static void table_put(size_t *table, size_t cap, char **ring, size_t slot) {
    size_t mask = cap - 1;
    size_t i = hash(ring[slot]) & mask;
    while (table[i] != EMPTY)
        i = (i + 1) & mask;
    table[i] = slot;
}

/* Removes table slot i, shifting later members of its cluster back. */
static void table_remove(eddy__dedup *d, size_t i) {
    size_t mask = d->table_cap - 1;
    d->table[i] = EMPTY;
    for (size_t j = (i + 1) & mask; d->table[j] != EMPTY; j = (j + 1) & mask) {
        size_t home = hash(d->ring[d->table[j]]) & mask;
        /* j may move to i when its home is not in the cyclic range (i, j]. */
        bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (!stays) {
            d->table[i] = d->table[j];
            d->table[j] = EMPTY;
            i = j;
        }
    }
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
    char **ring = d->ring;
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
            ring[i] = d->ring[(d->head + i) % d->ring_cap];
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

eddy_status eddy__dedup_add(eddy__dedup *d, const char *id) {
    if (!d || !id)
        return EDDY_ERR_INVALID_ARGUMENT;
    if (find(d, id) != EMPTY)
        return EDDY_OK;
    char *copy = eddy__fstrdup(id);
    if (!copy)
        return EDDY_ERR_NOMEM;
    if (d->count == d->capacity) {
        /* Full: the oldest id gives its slot to the new one. */
        size_t slot = d->head;
        table_remove(d, find(d, d->ring[slot]));
        eddy__ffree(d->ring[slot]);
        d->ring[slot] = copy;
        d->head = (d->head + 1) % d->ring_cap;
        table_put(d->table, d->table_cap, d->ring, slot);
        return EDDY_OK;
    }
    if (reserve(d) != EDDY_OK) {
        eddy__ffree(copy);
        return EDDY_ERR_NOMEM;
    }
    size_t slot = (d->head + d->count) % d->ring_cap;
    d->ring[slot] = copy;
    d->count++;
    table_put(d->table, d->table_cap, d->ring, slot);
    return EDDY_OK;
}

void eddy__dedup_clear(eddy__dedup *d) {
    if (!d)
        return;
    for (size_t i = 0; i < d->count; i++)
        eddy__ffree(d->ring[(d->head + i) % d->ring_cap]);
    for (size_t i = 0; i < d->table_cap; i++)
        d->table[i] = EMPTY;
    d->count = 0;
    d->head = 0;
}

size_t eddy__dedup_count(const eddy__dedup *d) { return d ? d->count : 0; }
