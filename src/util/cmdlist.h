/* SPDX-License-Identifier: BSD-3-Clause */
/* An ordered list of commands sent as one pipeline, with a tag per command so the core can
 * interpret each reply by what it asked for. */
#ifndef EDDY_SRC_CMDLIST_H
#define EDDY_SRC_CMDLIST_H

#include <stddef.h>

#include "util/cmd.h"

typedef struct eddy__cmdlist {
    eddy__cmd *cmds;
    int *tags;  /* owner-defined meaning */
    long *args; /* owner-defined argument per command (e.g. a stream index) */
    size_t n, cap;
} eddy__cmdlist;

void eddy__cmdlist_init(eddy__cmdlist *l);
/* Frees every command and empties the list. */
void eddy__cmdlist_reset(eddy__cmdlist *l);
/* Appends an empty command and returns it (NULL on OOM). */
eddy__cmd *eddy__cmdlist_add(eddy__cmdlist *l, int tag, long arg);
/* EDDY_ERR_NOMEM if any command failed to build. */
eddy_status eddy__cmdlist_status(const eddy__cmdlist *l);
/* The same for the commands from index `first` on (a builder appending to a long list checks
 * only what it added). */
eddy_status eddy__cmdlist_status_from(const eddy__cmdlist *l, size_t first);

/* A view: the commands of k lists, back to back, borrowed (copies of the command structs; the
 * lists keep what they point to), to send several owners' commands as one pipeline. Grows
 * view's arrays as needed (its tags and args stay unset). EDDY_ERR_NOMEM leaves it empty.
 * Release it with eddy__cmdlist_view_free, never eddy__cmdlist_reset. */
eddy_status eddy__cmdlist_view(eddy__cmdlist *view, const eddy__cmdlist *const *lists, size_t k);
void eddy__cmdlist_view_free(eddy__cmdlist *view);

#endif
