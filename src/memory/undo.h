/* SPDX-License-Identifier: BSD-3-Clause */
/* Undoing stream appends, for the native functions that are all-or-nothing when memory runs
 * out (es_append.c, commit.c): take a snapshot of a stream just before appending one entry to
 * it with eddy__mstream_append, and on failure undo the appends in reverse order. Undoing an
 * append pops the stream's last entry and restores the bookkeeping stream.c keeps for it (node
 * counts and sizes, last and first id, entries added); undo.c relies on eddy__mstream_append's
 * effects being exactly those. Nothing else may change the stream between an append and its
 * undo (a trim cannot be undone: trim only once nothing can fail any more). Private to
 * src/memory/. */
#ifndef EDDY_SRC_MEMORY_UNDO_H
#define EDDY_SRC_MEMORY_UNDO_H

#include "memory/internal.h"

/* One append to undo. */
typedef struct eddy__mundo {
    eddy__mstream *s;
    size_t nodes_used;
    size_t bytes; /* the tail node's, when it was kept */
    uint64_t live, total;
    eddy__mid tail_last, last_id, first_id;
    uint64_t entries_added;
} eddy__mundo;

/* The stream's state before an append. */
eddy__mundo eddy__mundo_snapshot(eddy__mstream *s);
/* Pops the entry appended after the snapshot (it is the stream's last). Never allocates. */
void eddy__mundo_append(const eddy__mundo *u);

#endif
