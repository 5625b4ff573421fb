/* SPDX-License-Identifier: BSD-3-Clause */
/* Skip list of item pointers under a caller-supplied total order: sorted sets (score, member),
 * pending-entry lists (entry id) and the key-expiry schedule (time, key). O(log n) insert,
 * remove and seek; level 0 is doubly linked so the last item and reverse walks are O(1) steps.
 *
 * Invariants: items are distinct under cmp; the head sentinel exists iff something was ever
 * inserted; a failed insert (OOM) leaves the list unchanged; last[i] is the last node linked
 * at level i (NULL when only the head is), so an item after the tail is linked in O(height). */
#include <string.h>

#include "memory/util.h"

#define MAX_LEVEL 32
_Static_assert(MAX_LEVEL == sizeof(((eddy__mskl *)0)->last) / sizeof(eddy__mskl_node *),
               "one last node per level");

void eddy__mskl_init(eddy__mskl *l, eddy__mskl_cmp cmp) {
    memset(l, 0, sizeof(*l));
    l->cmp = cmp;
    l->level = 1;
    l->rng = 0x9E3779B97F4A7C15ULL ^ (uint64_t)(uintptr_t)l;
}

void eddy__mskl_clear(eddy__mskl *l, void (*free_item)(void *)) {
    if (l->head) {
        eddy__mskl_node *n = l->head->next[0];
        while (n) {
            eddy__mskl_node *next = n->next[0];
            if (free_item)
                free_item(n->item);
            eddy__mem_free(n);
            n = next;
        }
        eddy__mem_free(l->head);
    }
    eddy__mskl_init(l, l->cmp);
}

static int random_level(eddy__mskl *l) {
    /* xorshift64: each list has its own generator, so no shared state between engines. */
    uint64_t x = l->rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    l->rng = x;
    int level = 1;
    while (level < MAX_LEVEL && (x & 3) == 0) { /* p = 1/4 */
        level++;
        x >>= 2;
    }
    return level;
}

static eddy__mskl_node *node_new(int height, void *item) {
    eddy__mskl_node *n = eddy__mem_malloc(sizeof(*n) + (size_t)height * sizeof(eddy__mskl_node *));
    if (!n)
        return NULL;
    n->item = item;
    n->prev = NULL;
    n->height = height;
    for (int i = 0; i < height; i++)
        n->next[i] = NULL;
    return n;
}

/* Links an allocated node at its place. */
static void link_node(eddy__mskl *l, eddy__mskl_node *n) {
    eddy__mskl_node *update[MAX_LEVEL];
    if (l->tail && l->cmp(l->tail->item, n->item) < 0) {
        for (int i = 0; i < l->level; i++)
            update[i] = l->last[i] ? l->last[i] : l->head;
    } else {
        eddy__mskl_node *x = l->head;
        for (int i = l->level - 1; i >= 0; i--) {
            while (x->next[i] && l->cmp(x->next[i]->item, n->item) < 0)
                x = x->next[i];
            update[i] = x;
        }
    }
    if (n->height > l->level) {
        for (int i = l->level; i < n->height; i++)
            update[i] = l->head;
        l->level = n->height;
    }
    for (int i = 0; i < n->height; i++) {
        n->next[i] = update[i]->next[i];
        update[i]->next[i] = n;
        if (!n->next[i])
            l->last[i] = n;
    }
    n->prev = update[0] == l->head ? NULL : update[0];
    if (n->next[0])
        n->next[0]->prev = n;
    else
        l->tail = n;
    l->len++;
}

int eddy__mskl_prepare(eddy__mskl *l) {
    return l->head || (l->head = node_new(MAX_LEVEL, NULL)) ? 0 : -1;
}

int eddy__mskl_draw_height(eddy__mskl *l) { return random_level(l); }

size_t eddy__mskl_node_size(int height) {
    return sizeof(eddy__mskl_node) + (size_t)height * sizeof(eddy__mskl_node *);
}

void eddy__mskl_link(eddy__mskl *l, eddy__mskl_node *node, int height, void *item) {
    node->item = item;
    node->prev = NULL;
    node->height = height;
    for (int i = 0; i < height; i++)
        node->next[i] = NULL;
    link_node(l, node);
}

void eddy__mskl_release(eddy__mskl *l) {
    eddy__mem_free(l->head);
    eddy__mskl_init(l, l->cmp);
}

int eddy__mskl_insert(eddy__mskl *l, void *item) {
    if (eddy__mskl_prepare(l) != 0)
        return -1;
    eddy__mskl_node *n = node_new(random_level(l), item);
    if (!n)
        return -1;
    link_node(l, n);
    return 0;
}

eddy__mskl_node *eddy__mskl_unlink(eddy__mskl *l, const void *probe) {
    if (!l->head)
        return NULL;
    eddy__mskl_node *update[MAX_LEVEL];
    eddy__mskl_node *x = l->head;
    for (int i = l->level - 1; i >= 0; i--) {
        while (x->next[i] && l->cmp(x->next[i]->item, probe) < 0)
            x = x->next[i];
        update[i] = x;
    }
    x = x->next[0];
    if (!x || l->cmp(x->item, probe) != 0)
        return NULL;
    for (int i = 0; i < l->level; i++) {
        if (update[i]->next[i] != x)
            continue;
        update[i]->next[i] = x->next[i];
        if (l->last[i] == x)
            l->last[i] = update[i] == l->head ? NULL : update[i];
    }
    if (x->next[0])
        x->next[0]->prev = x->prev;
    else
        l->tail = x->prev;
    while (l->level > 1 && !l->head->next[l->level - 1])
        l->level--;
    l->len--;
    return x;
}

void eddy__mskl_relink(eddy__mskl *l, eddy__mskl_node *node) { link_node(l, node); }

void *eddy__mskl_remove(eddy__mskl *l, const void *probe) {
    eddy__mskl_node *x = eddy__mskl_unlink(l, probe);
    if (!x)
        return NULL;
    void *item = x->item;
    eddy__mem_free(x);
    return item;
}

eddy__mskl_node *eddy__mskl_find(const eddy__mskl *l, const void *probe) {
    if (!l->head || !l->tail || l->cmp(l->tail->item, probe) < 0)
        return NULL; /* empty, or after the last item: a new delivery's check */
    eddy__mskl_node *x = l->head;
    for (int i = l->level - 1; i >= 0; i--)
        while (x->next[i] && l->cmp(x->next[i]->item, probe) < 0)
            x = x->next[i];
    x = x->next[0];
    return x && l->cmp(x->item, probe) == 0 ? x : NULL;
}

eddy__mskl_node *eddy__mskl_seek(const eddy__mskl *l, eddy__mskl_before before, const void *arg) {
    if (!l->head)
        return NULL;
    eddy__mskl_node *x = l->head;
    for (int i = l->level - 1; i >= 0; i--)
        while (x->next[i] && before(x->next[i]->item, arg))
            x = x->next[i];
    return x->next[0];
}
