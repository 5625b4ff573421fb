/* SPDX-License-Identifier: BSD-3-Clause */
/* Reply objects from an arena: hiredis's reader builds its redisReply trees through a table of
 * object functions; these build them in an arena instead of one malloc per element and per
 * string, and free nothing one by one: every reply of a round trip goes at once when the
 * arena is reset. The trees are ordinary redisReply trees (same types, same fields, strings
 * NUL-terminated), so every reply interpreter in the core reads them unchanged; only
 * freeReplyObject must never be called on them.
 *
 * Used where the replies of a round trip are interpreted and dropped before the next one (a
 * subscription's reads): the front end resets the arena after feeding the core.
 *
 * Thread: one thread at a time (like the hiredis reader it is installed in). */
#ifndef EDDY_SRC_REPLY_ARENA_H
#define EDDY_SRC_REPLY_ARENA_H

#include <hiredis/hiredis.h>
#include <stdbool.h>

typedef struct eddy__reply_arena eddy__reply_arena;

/* NULL on OOM. */
eddy__reply_arena *eddy__reply_arena_new(void);
/* The same with a first block of `first` bytes (kept across resets) instead of the usual 64 KiB:
 * for a few replies copied with eddy__reply_arena_copy, where a large block costs more than it
 * saves. */
eddy__reply_arena *eddy__reply_arena_new_sized(size_t first);
void eddy__reply_arena_free(eddy__reply_arena *a);

/* Makes `reader` build its replies in the arena, from now on. */
void eddy__reply_arena_install(eddy__reply_arena *a, redisReader *reader);

/* For other reply builders (the memory engine's): size bytes, aligned for any object, NULL on
 * OOM; and a reserve: true once the next allocations of up to `size` bytes in all cannot fail. */
void *eddy__reply_arena_alloc(eddy__reply_arena *a, size_t size);
bool eddy__reply_arena_reserve(eddy__reply_arena *a, size_t size);

/* A copy of r (any reply tree: hiredis's, or another arena's) built in a, NULL on OOM (what
 * was copied stays in a until it is reset). */
redisReply *eddy__reply_arena_copy(eddy__reply_arena *a, const redisReply *r);

/* The arena `reader` builds its replies in, or NULL (hiredis's own objects). */
eddy__reply_arena *eddy__reply_arena_of(const redisReader *reader);

/* Frees every reply built so far (they must no longer be used), keeping one block for the
 * next round trip. */
void eddy__reply_arena_reset(eddy__reply_arena *a);

#endif
