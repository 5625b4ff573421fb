/* SPDX-License-Identifier: BSD-3-Clause */
/* Undoing stream appends; see undo.h. */
#include "memory/undo.h"

eddy__mundo eddy__mundo_snapshot(eddy__mstream *s) {
    eddy__mundo u = {.s = s,
                     .nodes_used = s->nn - s->nhead,
                     .last_id = s->last_id,
                     .first_id = s->first_id,
                     .entries_added = s->entries_added};
    if (u.nodes_used) {
        const eddy__mnode *t = &s->nodes[s->nn - 1];
        u.bytes = t->bytes;
        u.live = t->live;
        u.total = t->total;
        u.tail_last = t->last_id;
    }
    return u;
}

void eddy__mundo_append(const eddy__mundo *u) {
    eddy__mstream *s = u->s;
    eddy__mstream_entry_release(s, &s->e[s->n - 1]);
    s->n--;
    s->length--;
    if (s->nn - s->nhead > u->nodes_used) {
        eddy__mem_free(s->nodes[s->nn - 1].master);
        s->nn--;
        s->next_serial--;
        if (s->nn == s->nhead)
            s->nhead = s->nn = 0;
    } else {
        eddy__mnode *t = &s->nodes[s->nn - 1];
        t->bytes = u->bytes;
        t->live = u->live;
        t->total = u->total;
        t->last_id = u->tail_last;
    }
    if (s->n == s->head)
        s->head = s->n = 0;
    s->last_id = u->last_id;
    s->first_id = u->first_id;
    s->entries_added = u->entries_added;
}
