/* SPDX-License-Identifier: BSD-3-Clause */
/* Reply slots in wire order; see pipeline.h. */
#include "util/pipeline.h"

void eddy__pipeline_init(eddy__pipeline *pl) {
    pl->head = pl->tail = NULL;
    pl->nslots = 0;
}

void eddy__pipeline_push(eddy__pipeline *pl, eddy__pipe_slot *slot, redisReply **replies, size_t n,
                         void *waiter) {
    slot->replies = replies;
    slot->n = n;
    slot->got = 0;
    slot->st = EDDY_OK;
    slot->waiter = waiter;
    slot->arena = false;
    slot->next = NULL;
    for (size_t i = 0; i < n; i++)
        replies[i] = NULL;
    if (pl->tail)
        pl->tail->next = slot;
    else
        pl->head = slot;
    pl->tail = slot;
    pl->nslots++;
}

static eddy__pipe_slot *pop(eddy__pipeline *pl) {
    eddy__pipe_slot *s = pl->head;
    pl->head = s->next;
    if (!pl->head)
        pl->tail = NULL;
    pl->nslots--;
    s->next = NULL;
    return s;
}

eddy__pipe_slot *eddy__pipeline_feed(eddy__pipeline *pl, redisReply *reply, bool *unexpected) {
    *unexpected = false;
    eddy__pipe_slot *s = pl->head;
    if (!s) {
        *unexpected = true;
        freeReplyObject(reply);
        return NULL;
    }
    s->replies[s->got++] = reply;
    return s->got == s->n ? pop(pl) : NULL;
}

eddy__pipe_slot *eddy__pipeline_fail_next(eddy__pipeline *pl, eddy_status st) {
    if (!pl->head)
        return NULL;
    eddy__pipe_slot *s = pop(pl);
    for (size_t i = 0; i < s->got; i++) {
        if (!s->arena)
            freeReplyObject(s->replies[i]);
        s->replies[i] = NULL;
    }
    s->got = 0;
    s->st = st;
    return s;
}

eddy__pipe_slot *eddy__pipeline_head(const eddy__pipeline *pl) { return pl->head; }

bool eddy__pipeline_slot_failed(const eddy__pipe_slot *slot) {
    if (slot->st != EDDY_OK)
        return true;
    for (size_t i = 0; i < slot->n; i++)
        if (!slot->replies[i] || slot->replies[i]->type == REDIS_REPLY_ERROR)
            return true;
    return false;
}
