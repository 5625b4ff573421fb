/* SPDX-License-Identifier: BSD-3-Clause */
/* Building blocks of the memory engine that know nothing about Redis commands: its allocation,
 * an insertion-ordered hash table, a skip list, and Redis's own number parsers (their exact
 * acceptance rules decide which inputs are errors, so they are copied, not approximated).
 * Private to src/memory/. */
#ifndef EDDY_SRC_MEMORY_UTIL_H
#define EDDY_SRC_MEMORY_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/falloc.h"

/* ---- allocation ---------------------------------------------------------------------------- */

/* Every allocation of the engine goes through these (util/falloc.h), so that a test build can
 * fail the n-th one. */
#define eddy__mem_malloc eddy__fmalloc
#define eddy__mem_calloc eddy__fcalloc
#define eddy__mem_realloc eddy__frealloc
#define eddy__mem_free eddy__ffree
/* A NUL-terminated copy of len bytes, or NULL on OOM (alloc.c). */
char *eddy__mem_memdup(const void *ptr, size_t len);

/* ---- insertion-ordered hash table (dict.c) ------------------------------------------------ */

typedef struct eddy__mdict_entry {
    char *key; /* NUL-terminated copy owned by the table; NULL marks a deleted slot */
    size_t klen;
    uint64_t hash;
    void *val;
} eddy__mdict_entry;

/* Entries live in an array in insertion order (so iteration order matches Redis's small
 * listpack-encoded hashes); an open-addressing index maps keys to array positions. */
typedef struct eddy__mdict {
    eddy__mdict_entry *ent;
    size_t nent; /* slots used in ent, deleted ones included */
    size_t cap;
    size_t live;
    size_t *idx; /* index into ent, or SIZE_MAX for an empty slot */
    size_t idxcap;
} eddy__mdict;

void eddy__mdict_init(eddy__mdict *d);
/* Frees the table and calls free_val (may be NULL) on every value. */
void eddy__mdict_clear(eddy__mdict *d, void (*free_val)(void *));
eddy__mdict_entry *eddy__mdict_find(const eddy__mdict *d, const void *key, size_t klen);
/* 1: added; 0: key already present (*out is the existing entry, value unchanged); -1: OOM,
 * nothing changed. *out (may be NULL) stays valid until the next add or delete. */
int eddy__mdict_add(eddy__mdict *d, const void *key, size_t klen, void *val,
                    eddy__mdict_entry **out);
/* Removes the key; returns whether it was there, and its value in *val (may be NULL). Never
 * allocates. Do not delete while iterating. */
bool eddy__mdict_del(eddy__mdict *d, const void *key, size_t klen, void **val);
static inline size_t eddy__mdict_size(const eddy__mdict *d) { return d->live; }

/* ---- skip list (skiplist.c) --------------------------------------------------------------- */

typedef int (*eddy__mskl_cmp)(const void *a, const void *b);
/* Seek predicate: true while item sorts before the target described by arg. */
typedef bool (*eddy__mskl_before)(const void *item, const void *arg);

typedef struct eddy__mskl_node {
    void *item;
    struct eddy__mskl_node *prev; /* NULL for the first node */
    int height;
    struct eddy__mskl_node *next[];
} eddy__mskl_node;

/* Ordered set of item pointers under a total order (cmp never returns 0 for distinct items). */
typedef struct eddy__mskl {
    eddy__mskl_node *head; /* sentinel, allocated on first insert */
    eddy__mskl_node *tail;
    /* The last node of each level (NULL: the level is empty), so that linking after the tail
     * (a pending list's new deliveries, an expiry schedule's later times) takes no search. */
    eddy__mskl_node *last[32];
    size_t len;
    int level;
    uint64_t rng;
    eddy__mskl_cmp cmp;
} eddy__mskl;

void eddy__mskl_init(eddy__mskl *l, eddy__mskl_cmp cmp);
void eddy__mskl_clear(eddy__mskl *l, void (*free_item)(void *));
/* 0, or -1 on OOM (nothing changed). The item must not already be in the list. */
int eddy__mskl_insert(eddy__mskl *l, void *item);
/* Removes the item that compares equal to probe; returns it, or NULL. */
void *eddy__mskl_remove(eddy__mskl *l, const void *probe);
eddy__mskl_node *eddy__mskl_find(const eddy__mskl *l, const void *probe);
/* Detaches the node equal to probe without freeing it, so that the item can change its sort
 * key and go back with eddy__mskl_relink, which cannot fail. */
eddy__mskl_node *eddy__mskl_unlink(eddy__mskl *l, const void *probe);
void eddy__mskl_relink(eddy__mskl *l, eddy__mskl_node *node);
/* Nodes owned by the items (one allocation for an item and its nodes in several lists):
 * prepare allocates the list's sentinel (0, or -1 on OOM), after which linking cannot fail;
 * draw_height picks a new node's height and node_size its bytes; link puts a caller-owned
 * node in place; unlink takes it out again without freeing. release frees the sentinel only,
 * once the items (and so the nodes) are gone or are freed by the caller. */
int eddy__mskl_prepare(eddy__mskl *l);
int eddy__mskl_draw_height(eddy__mskl *l);
size_t eddy__mskl_node_size(int height);
void eddy__mskl_link(eddy__mskl *l, eddy__mskl_node *node, int height, void *item);
void eddy__mskl_release(eddy__mskl *l);
/* First node whose item is not before(arg), or NULL. */
eddy__mskl_node *eddy__mskl_seek(const eddy__mskl *l, eddy__mskl_before before, const void *arg);
static inline eddy__mskl_node *eddy__mskl_first(const eddy__mskl *l) {
    return l->head ? l->head->next[0] : NULL;
}
static inline eddy__mskl_node *eddy__mskl_next(const eddy__mskl_node *n) { return n->next[0]; }

/* ---- Redis's parsers (parse.c) ------------------------------------------------------------ */

/* Redis's string2ll: strict decimal (no spaces, '+', leading zeros or "-0"). */
bool eddy__mparse_ll(const char *s, size_t len, long long *out);
/* Redis's getDoubleFromObject: strtod over the whole string, no leading space, no NaN. */
bool eddy__mparse_double(const char *s, size_t len, double *out);
/* One bound of a score range as zslParseRange reads it: "(" for exclusive, -inf/+inf. */
bool eddy__mparse_score_bound(const char *s, size_t len, double *out, bool *exclusive);
/* ASCII case-insensitive comparison of a binary argument with a C string. */
bool eddy__marg_is(const char *arg, size_t len, const char *word);

#endif
