/* SPDX-License-Identifier: BSD-3-Clause */
/* Consumer groups: the group's pending-entries list (PEL) ordered by id, each consumer's own
 * PEL over the same pending-entry objects, delivery bookkeeping, and the entries-read/lag
 * estimates of Redis 7.0 (XINFO GROUPS shows them).
 *
 * Invariants: a pending entry is in its group's PEL and in exactly its owner's PEL, and nowhere
 * else; every operation that moves or creates one acquires what it needs before unlinking
 * anything, so running out of memory never leaves an entry in one PEL but not the other. */
#include <stdlib.h>
#include <string.h>

#include "memory/internal.h"

static int nack_cmp(const void *a, const void *b) {
    return eddy__mid_cmp(((const eddy__mnack *)a)->id, ((const eddy__mnack *)b)->id);
}

static bool nack_before(const void *item, const void *arg) {
    return eddy__mid_cmp(((const eddy__mnack *)item)->id, *(const eddy__mid *)arg) < 0;
}

eddy__mskl_node *eddy__mpel_seek(eddy__mskl *pel, eddy__mid start) {
    return eddy__mskl_seek(pel, nack_before, &start);
}

eddy__mgroup *eddy__mgroup_new(const char *name, size_t nlen, eddy__mid last_id,
                               long long entries_read) {
    eddy__mgroup *g = eddy__mem_calloc(1, sizeof(*g));
    if (!g)
        return NULL;
    g->name = eddy__mem_memdup(name, nlen);
    if (!g->name) {
        eddy__mem_free(g);
        return NULL;
    }
    g->nlen = nlen;
    g->last_id = last_id;
    g->entries_read = entries_read;
    eddy__mskl_init(&g->pel, nack_cmp);
    eddy__mdict_init(&g->consumers);
    return g;
}

static void consumer_free(void *p) {
    eddy__mconsumer *consumer = p;
    eddy__mskl_release(&consumer->pel); /* the pending entries hold the nodes */
    eddy__mem_free(consumer->name);
    eddy__mem_free(consumer);
}

void eddy__mgroup_free(void *p) {
    eddy__mgroup *g = p;
    if (!g)
        return;
    eddy__mdict_clear(&g->consumers, consumer_free);
    for (eddy__mskl_node *n = eddy__mskl_first(&g->pel), *next; n; n = next) {
        next = eddy__mskl_next(n); /* n lives inside the entry freed here */
        eddy__mem_free(n->item);
    }
    eddy__mskl_release(&g->pel);
    eddy__mem_free(g->name);
    eddy__mem_free(g);
}

eddy__mgroup *eddy__mgroup_find(eddy__mstream *s, const char *name, size_t nlen) {
    eddy__mdict_entry *e = eddy__mdict_find(&s->groups, name, nlen);
    return e ? e->val : NULL;
}

eddy__mconsumer *eddy__mconsumer_find(eddy__mgroup *g, const char *name, size_t nlen) {
    eddy__mdict_entry *e = eddy__mdict_find(&g->consumers, name, nlen);
    return e ? e->val : NULL;
}

eddy__mconsumer *eddy__mconsumer_get(eddy__mgroup *g, const char *name, size_t nlen, long long now,
                                     bool *created) {
    if (created)
        *created = false;
    eddy__mconsumer *consumer = eddy__mconsumer_find(g, name, nlen);
    if (consumer)
        return consumer;
    consumer = eddy__mem_calloc(1, sizeof(*consumer));
    if (!consumer)
        return NULL;
    consumer->name = eddy__mem_memdup(name, nlen);
    consumer->nlen = nlen;
    consumer->seen_time = now;
    eddy__mskl_init(&consumer->pel, nack_cmp);
    if (!consumer->name || eddy__mdict_add(&g->consumers, name, nlen, consumer, NULL) != 1) {
        consumer_free(consumer);
        return NULL;
    }
    if (created)
        *created = true;
    return consumer;
}

void eddy__mconsumer_delete(eddy__mgroup *g, eddy__mconsumer *consumer) {
    for (eddy__mskl_node *n = eddy__mskl_first(&consumer->pel), *next; n; n = next) {
        next = eddy__mskl_next(n);
        eddy__mnack *nack = n->item;
        eddy__mskl_unlink(&g->pel, nack);
        eddy__mem_free(nack);
    }
    eddy__mdict_del(&g->consumers, consumer->name, consumer->nlen, NULL);
    consumer_free(consumer);
}

eddy__mnack *eddy__mgroup_pending(eddy__mgroup *g, eddy__mid id) {
    eddy__mnack probe = {.id = id};
    eddy__mskl_node *n = eddy__mskl_find(&g->pel, &probe);
    return n ? n->item : NULL;
}

eddy__mnack *eddy__mnack_add(eddy__mgroup *g, eddy__mid id, long long delivery_time,
                             uint64_t delivery_count) {
    if (eddy__mskl_prepare(&g->pel) != 0)
        return NULL;
    int hg = eddy__mskl_draw_height(&g->pel), hc = eddy__mskl_draw_height(&g->pel);
    size_t head = (sizeof(eddy__mnack) + sizeof(void *) - 1) / sizeof(void *) * sizeof(void *);
    eddy__mnack *nack =
        eddy__mem_malloc(head + eddy__mskl_node_size(hg) + eddy__mskl_node_size(hc));
    if (!nack)
        return NULL;
    *nack = (eddy__mnack){
        .id = id,
        .delivery_time = delivery_time,
        .delivery_count = delivery_count,
        .in_group = (eddy__mskl_node *)((char *)nack + head),
        .in_consumer = (eddy__mskl_node *)((char *)nack + head + eddy__mskl_node_size(hg)),
        .consumer_height = hc,
    };
    eddy__mskl_link(&g->pel, nack->in_group, hg, nack);
    return nack;
}

void eddy__mnack_drop(eddy__mgroup *g, eddy__mnack *nack) {
    eddy__mskl_unlink(&g->pel, nack);
    if (nack->consumer)
        eddy__mskl_unlink(&nack->consumer->pel, nack);
    eddy__mem_free(nack);
}

int eddy__mnack_transfer(eddy__mnack *nack, eddy__mconsumer *to) {
    if (nack->consumer == to)
        return 0;
    if (eddy__mskl_prepare(&to->pel) != 0)
        return -1;
    if (nack->consumer)
        eddy__mskl_unlink(&nack->consumer->pel, nack);
    eddy__mskl_link(&to->pel, nack->in_consumer, nack->consumer_height, nack);
    nack->consumer = to;
    return 0;
}

int eddy__mgroup_deliver(eddy__mgroup *g, eddy__mconsumer *consumer, eddy__mid id, long long now) {
    eddy__mnack *nack = eddy__mgroup_pending(g, id);
    if (nack) {
        /* Already pending (XGROUP SETID moved the group back): it changes hands and its
         * delivery count starts again, as in Redis. */
        if (eddy__mnack_transfer(nack, consumer) != 0)
            return -1;
    } else {
        if (eddy__mskl_prepare(&consumer->pel) != 0 || !(nack = eddy__mnack_add(g, id, now, 1)))
            return -1;
        eddy__mnack_transfer(nack, consumer); /* cannot fail: the list is prepared */
    }
    nack->delivery_time = now;
    nack->delivery_count = 1;
    return 0;
}

bool eddy__mstream_has_tombstones_after(const eddy__mstream *s, eddy__mid start) {
    if (!s->length || eddy__mid_is_zero(s->max_deleted))
        return false;
    if (eddy__mid_cmp(s->first_id, s->max_deleted) > 0)
        return false;
    return eddy__mid_cmp(start, s->max_deleted) <= 0;
}

long long eddy__mstream_estimate_read(const eddy__mstream *s, eddy__mid id) {
    if (!s->entries_added)
        return 0;
    if (!s->length && eddy__mid_cmp(id, s->last_id) < 1)
        return (long long)s->entries_added;
    int cmp_last = eddy__mid_cmp(id, s->last_id);
    if (cmp_last == 0)
        return (long long)s->entries_added;
    if (cmp_last > 0)
        return EDDY__ENTRIES_READ_INVALID;
    int cmp_id_first = eddy__mid_cmp(id, s->first_id);
    int cmp_xdel_first = eddy__mid_cmp(s->max_deleted, s->first_id);
    if (eddy__mid_is_zero(s->max_deleted) || cmp_xdel_first < 0) {
        if (cmp_id_first < 0)
            return (long long)(s->entries_added - s->length);
        if (cmp_id_first == 0)
            return (long long)(s->entries_added - s->length + 1);
    }
    return EDDY__ENTRIES_READ_INVALID;
}

void eddy__mgroup_advance(eddy__mstream *s, eddy__mgroup *g, eddy__mid id) {
    if (eddy__mid_cmp(id, g->last_id) <= 0)
        return;
    if (g->entries_read != EDDY__ENTRIES_READ_INVALID && !eddy__mstream_has_tombstones_after(s, id))
        g->entries_read++;
    else if (s->entries_added)
        g->entries_read = eddy__mstream_estimate_read(s, id);
    g->last_id = id;
}

long long eddy__mgroup_lag(const eddy__mstream *s, const eddy__mgroup *g, bool *valid) {
    *valid = true;
    if (!s->entries_added)
        return 0;
    if (g->entries_read != EDDY__ENTRIES_READ_INVALID &&
        !eddy__mstream_has_tombstones_after(s, g->last_id))
        return (long long)s->entries_added - g->entries_read;
    long long read = eddy__mstream_estimate_read(s, g->last_id);
    if (read == EDDY__ENTRIES_READ_INVALID) {
        *valid = false;
        return 0;
    }
    return (long long)s->entries_added - read;
}

size_t eddy__mgroup_reply_history(eddy__mctx *c, eddy__mstream *s, eddy__mconsumer *consumer,
                                  eddy__mid start, size_t count) {
    size_t mark = eddy__mresp_defer(c->out);
    size_t n = 0;
    for (eddy__mskl_node *node = eddy__mpel_seek(&consumer->pel, start);
         node && (!count || n < count); node = eddy__mskl_next(node)) {
        eddy__mnack *nack = node->item;
        eddy__mentry *e = eddy__mstream_get(s, nack->id);
        if (e) {
            eddy__mstream_reply_entry(c->out, e);
            nack->delivery_time = c->now_ms;
            nack->delivery_count++;
            c->dirty = true;
        } else {
            /* Deleted from the stream while pending: Redis shows the id with a null body. */
            eddy__mresp_array(c->out, 2);
            eddy__mresp_id(c->out, nack->id.ms, nack->id.seq);
            eddy__mresp_nil_array(c->out);
        }
        n++;
    }
    eddy__mresp_set_array(c->out, mark, n);
    return n;
}

static int name_cmp(const char *a, size_t alen, const char *b, size_t blen) {
    size_t n = alen < blen ? alen : blen;
    int r = memcmp(a, b, n);
    if (r)
        return r;
    return alen < blen ? -1 : alen > blen;
}

static int group_ptr_cmp(const void *a, const void *b) {
    const eddy__mgroup *x = *(eddy__mgroup *const *)a, *y = *(eddy__mgroup *const *)b;
    return name_cmp(x->name, x->nlen, y->name, y->nlen);
}

static int consumer_ptr_cmp(const void *a, const void *b) {
    const eddy__mconsumer *x = *(eddy__mconsumer *const *)a, *y = *(eddy__mconsumer *const *)b;
    return name_cmp(x->name, x->nlen, y->name, y->nlen);
}

static void **sorted_values(eddy__mdict *d, size_t *n, int (*cmp)(const void *, const void *)) {
    *n = 0;
    void **v = eddy__mem_malloc((eddy__mdict_size(d) ? eddy__mdict_size(d) : 1) * sizeof(*v));
    if (!v)
        return NULL;
    for (size_t i = 0; i < d->nent; i++)
        if (d->ent[i].key)
            v[(*n)++] = d->ent[i].val;
    qsort(v, *n, sizeof(*v), cmp);
    return v;
}

eddy__mgroup **eddy__mstream_sorted_groups(eddy__mstream *s, size_t *n) {
    return (eddy__mgroup **)sorted_values(&s->groups, n, group_ptr_cmp);
}

eddy__mconsumer **eddy__mgroup_sorted_consumers(eddy__mgroup *g, size_t *n) {
    return (eddy__mconsumer **)sorted_values(&g->consumers, n, consumer_ptr_cmp);
}
