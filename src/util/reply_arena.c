/* SPDX-License-Identifier: BSD-3-Clause */
/* Arena reply objects; see reply_arena.h.
 *
 * Blocks are chained, newest first; an allocation too large for a block gets a block of its
 * own, so a large string costs its size and one header, never a copy into a growing buffer.
 * Reset keeps the first block made and frees the rest.
 * The object functions mirror hiredis's own (read.c's createStringObject and friends): an
 * object is linked into its parent array at task->idx. On OOM they return NULL, which the
 * hiredis reader turns into a reader error ("Out of memory"), so the round trip fails cleanly. */
#include "util/reply_arena.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK_SIZE (64 * 1024)

typedef struct block {
    struct block *next;
    size_t used, cap;
    max_align_t data[];
} block;

struct eddy__reply_arena {
    block *head;  /* the block allocations come from */
    block *first; /* kept across resets */
};

static block *block_new(size_t cap) {
    block *b = malloc(sizeof(*b) + cap);
    if (b) {
        b->next = NULL;
        b->used = 0;
        b->cap = cap;
    }
    return b;
}

eddy__reply_arena *eddy__reply_arena_new(void) { return eddy__reply_arena_new_sized(BLOCK_SIZE); }

eddy__reply_arena *eddy__reply_arena_new_sized(size_t first) {
    eddy__reply_arena *a = calloc(1, sizeof(*a));
    if (a && !(a->first = a->head = block_new(first))) {
        free(a);
        return NULL;
    }
    return a;
}

void eddy__reply_arena_reset(eddy__reply_arena *a) {
    for (block *b = a->head, *next; b; b = next) {
        next = b->next;
        if (b != a->first)
            free(b);
    }
    a->first->used = 0;
    a->first->next = NULL;
    a->head = a->first;
}

void eddy__reply_arena_free(eddy__reply_arena *a) {
    if (!a)
        return;
    eddy__reply_arena_reset(a);
    free(a->first);
    free(a);
}

void *eddy__reply_arena_alloc(eddy__reply_arena *a, size_t size) {
    const size_t align = sizeof(max_align_t);
    if (size > SIZE_MAX - sizeof(block) - align) {
        return NULL;
    }
    size = (size + align - 1) & ~(align - 1);
    block *b = a->head;
    if (b->cap - b->used >= size) {
        void *p = (char *)b->data + b->used;
        b->used += size;
        return p;
    }
    bool large = size > BLOCK_SIZE / 4;
    if (!(b = block_new(large ? size : BLOCK_SIZE))) {
        return NULL;
    }
    if (large) {
        /* A block of its own, behind the head, so the head's room still serves the small
         * objects that follow. */
        b->next = a->head->next;
        a->head->next = b;
    } else {
        b->next = a->head;
        a->head = b;
    }
    b->used = size;
    return b->data;
}

bool eddy__reply_arena_reserve(eddy__reply_arena *a, size_t size) {
    if (size > BLOCK_SIZE / 4)
        return false;
    if (a->head->cap - a->head->used >= size + sizeof(max_align_t) * 4)
        return true;
    block *b = block_new(BLOCK_SIZE);
    if (!b)
        return false;
    b->next = a->head;
    a->head = b;
    return true;
}

static redisReply *new_object(const redisReadTask *task, int type, size_t extra) {
    eddy__reply_arena *a = task->privdata;
    redisReply *r = eddy__reply_arena_alloc(a, sizeof(*r) + extra);
    if (!r)
        return NULL;
    memset(r, 0, sizeof(*r));
    r->type = type;
    if (task->parent) {
        redisReply *parent = task->parent->obj;
        parent->element[task->idx] = r;
    }
    return r;
}

static void *create_string(const redisReadTask *task, char *str, size_t len) {
    redisReply *r = new_object(task, task->type, len + 1);
    if (!r)
        return NULL;
    r->str = (char *)(r + 1);
    memcpy(r->str, str, len);
    r->str[len] = '\0';
    r->len = len;
    return r;
}

static void *create_array(const redisReadTask *task, int elements) {
    size_t n = elements > 0 ? (size_t)elements : 0;
    redisReply *r = new_object(task, REDIS_REPLY_ARRAY, n * sizeof(redisReply *));
    if (!r)
        return NULL;
    r->element = n ? (redisReply **)(r + 1) : NULL;
    if (n)
        memset(r->element, 0, n * sizeof(redisReply *));
    r->elements = n;
    return r;
}

static void *create_integer(const redisReadTask *task, long long value) {
    redisReply *r = new_object(task, REDIS_REPLY_INTEGER, 0);
    if (r)
        r->integer = value;
    return r;
}

static void *create_nil(const redisReadTask *task) { return new_object(task, REDIS_REPLY_NIL, 0); }

redisReply *eddy__reply_arena_copy(eddy__reply_arena *a, const redisReply *r) {
    bool text = r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS ||
                r->type == REDIS_REPLY_ERROR;
    size_t n = r->type == REDIS_REPLY_ARRAY ? r->elements : 0;
    if ((text && r->len > SIZE_MAX / 2) || n > SIZE_MAX / 2 / sizeof(redisReply *))
        return NULL;
    redisReply *o =
        eddy__reply_arena_alloc(a, sizeof(*o) + (text ? r->len + 1 : n * sizeof(redisReply *)));
    if (!o)
        return NULL;
    memset(o, 0, sizeof(*o));
    o->type = r->type;
    o->integer = r->integer;
    if (text) {
        o->str = (char *)(o + 1);
        memcpy(o->str, r->str, r->len);
        o->str[r->len] = '\0';
        o->len = r->len;
    } else if (n) {
        o->element = (redisReply **)(o + 1);
        o->elements = n;
        for (size_t i = 0; i < n; i++)
            if (!(o->element[i] = eddy__reply_arena_copy(a, r->element[i])))
                return NULL;
    }
    return o;
}

static void free_object(void *obj) { (void)obj; /* freed with the arena */ }

static redisReplyObjectFunctions arena_functions = {create_string, create_array, create_integer,
                                                    create_nil, free_object};

void eddy__reply_arena_install(eddy__reply_arena *a, redisReader *reader) {
    reader->fn = &arena_functions;
    reader->privdata = a;
}

eddy__reply_arena *eddy__reply_arena_of(const redisReader *reader) {
    return reader->fn == &arena_functions ? reader->privdata : NULL;
}
