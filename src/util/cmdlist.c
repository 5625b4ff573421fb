/* SPDX-License-Identifier: BSD-3-Clause */
/* Growable list of tagged commands; see cmdlist.h. */
#include "util/cmdlist.h"

#include <stdlib.h>
#include <string.h>

void eddy__cmdlist_init(eddy__cmdlist *l) { memset(l, 0, sizeof(*l)); }

void eddy__cmdlist_reset(eddy__cmdlist *l) {
    for (size_t i = 0; i < l->n; i++)
        eddy__cmd_reset(&l->cmds[i]);
    free(l->cmds);
    free(l->tags);
    free(l->args);
    eddy__cmdlist_init(l);
}

eddy__cmd *eddy__cmdlist_add(eddy__cmdlist *l, int tag, long arg) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        eddy__cmd *cmds = realloc(l->cmds, cap * sizeof(*cmds));
        if (!cmds)
            return NULL;
        l->cmds = cmds;
        int *tags = realloc(l->tags, cap * sizeof(*tags));
        if (!tags)
            return NULL;
        l->tags = tags;
        long *args = realloc(l->args, cap * sizeof(*args));
        if (!args)
            return NULL;
        l->args = args;
        l->cap = cap;
    }
    eddy__cmd *cmd = &l->cmds[l->n];
    eddy__cmd_init(cmd);
    l->tags[l->n] = tag;
    l->args[l->n] = arg;
    l->n++;
    return cmd;
}

eddy_status eddy__cmdlist_status(const eddy__cmdlist *l) { return eddy__cmdlist_status_from(l, 0); }

eddy_status eddy__cmdlist_status_from(const eddy__cmdlist *l, size_t first) {
    for (size_t i = first; i < l->n; i++)
        if (eddy__cmd_status(&l->cmds[i]) != EDDY_OK)
            return EDDY_ERR_NOMEM;
    return EDDY_OK;
}

eddy_status eddy__cmdlist_view(eddy__cmdlist *view, const eddy__cmdlist *const *lists, size_t k) {
    size_t n = 0;
    for (size_t i = 0; i < k; i++)
        n += lists[i]->n;
    view->n = 0;
    if (n > view->cap) {
        eddy__cmd *cmds = realloc(view->cmds, n * sizeof(*cmds));
        if (!cmds)
            return EDDY_ERR_NOMEM;
        view->cmds = cmds;
        view->cap = n;
    }
    for (size_t i = 0; i < k; i++) {
        if (lists[i]->n)
            memcpy(view->cmds + view->n, lists[i]->cmds, lists[i]->n * sizeof(*view->cmds));
        view->n += lists[i]->n;
    }
    return EDDY_OK;
}

void eddy__cmdlist_view_free(eddy__cmdlist *view) {
    free(view->cmds);
    eddy__cmdlist_init(view);
}
