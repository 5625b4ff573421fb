/* SPDX-License-Identifier: BSD-3-Clause */
/* The event store's ops on one pipelined connection (store_queue.h). The load is an op like
 * the others once queued, so that its replies are matched in order with theirs; it is the
 * queue's own slot, so that at most one is ever out and none outlives its connection. */
#include "store/store_queue.h"

#include <string.h>

#include "error.h"
#include "link/link.h"

void eddy__store_queue_init(eddy__store_queue *q) {
    memset(q, 0, sizeof(*q));
    q->need_load = true;
}

void eddy__store_slot_clear(eddy__store_slot *p) {
    for (size_t i = 0; i < EDDY__STORE_OP_MAX_CMDS; i++) {
        if (p->replies[i])
            freeReplyObject(p->replies[i]);
        p->replies[i] = NULL;
    }
    p->got = 0;
}

static void enqueue(eddy__store_queue *q, eddy__store_slot *p) {
    if (q->load_failed && !q->head)
        q->need_load = true; /* every op behind the failed load was answered: load again */
    p->next = NULL;
    p->sent = false;
    p->last = 0;
    if (q->tail)
        q->tail->next = p;
    else
        q->head = p;
    q->tail = p;
    if (!q->unsent)
        q->unsent = p;
}

void eddy__store_queue_push(eddy__store_queue *q, eddy__store_slot *p, bool connected) {
    p->fresh = !connected;
    enqueue(q, p);
}

void eddy__store_queue_again(eddy__store_queue *q, eddy__store_slot *p) {
    if (p->req.whole)
        p->fresh = false;
    enqueue(q, p);
}

/* The load leaves with its connection: its replies and commands go. */
static void drop_load(eddy__store_queue *q) {
    eddy__store_slot_clear(&q->load);
    eddy__store_req_reset(&q->load.req);
    q->need_load = true;
    q->load_failed = false;
}

eddy__store_slot *eddy__store_queue_next(eddy__store_queue *q, eddy_status *st, eddy_error *err) {
    *st = EDDY_OK;
    if (q->need_load) {
        /* Nothing was sent on this connection yet: the whole queue is unsent. */
        eddy__store_slot *l = &q->load;
        memset(l, 0, sizeof(*l));
        if (eddy__store_req_load(&l->req, err) != EDDY_OK) {
            eddy__store_req_reset(&l->req);
            *st = eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
            return NULL;
        }
        q->need_load = false;
        q->load_failed = false;
        l->next = q->head;
        q->head = l;
        if (!q->tail)
            q->tail = l;
        q->unsent = l;
    }
    eddy__store_slot *p = q->unsent;
    if (p) {
        p->sent = true;
        q->unsent = p->next;
    }
    return p;
}

void eddy__store_queue_stall(eddy__store_queue *q) { q->unsent = NULL; }

eddy__store_slot *eddy__store_queue_head(const eddy__store_queue *q) { return q->head; }

eddy__store_answer eddy__store_queue_answered(eddy__store_queue *q, const eddy__store *core,
                                              const eddy__logger *log, eddy__store_slot **out) {
    eddy__store_slot *p = q->head;
    q->head = p->next;
    if (!q->head)
        q->tail = NULL;
    if (q->unsent == p)
        q->unsent = p->next;
    p->next = NULL;
    *out = p;
    if (p == &q->load) {
        p->err = (eddy_error){0};
        eddy__store_req_done(&p->req, core, p->replies, log, &p->err);
        if (p->req.st != EDDY_OK) {
            q->load_failed = true;
            q->load_err = p->err;
            eddy__log(log, EDDY_LOG_WARN, "store: loading the function library: %s", p->err.detail);
        }
        eddy__store_req_reset(&p->req);
        return EDDY__STORE_LOADED;
    }
    if (q->load_failed) {
        p->err = q->load_err;
        p->req.st = q->load_err.status;
        return EDDY__STORE_FAILED;
    }
    p->err = (eddy_error){0}; /* nothing of an earlier try's */
    return EDDY__STORE_READ;
}

/* Every op out, in order, the load among them when it was queued (its replies and commands
 * gone); the next connection loads first. */
static eddy__store_slot *take_all(eddy__store_queue *q) {
    eddy__store_slot *p = q->head;
    q->head = q->tail = q->unsent = NULL;
    drop_load(q);
    return p;
}

eddy__store_slot *eddy__store_queue_down(eddy__store_queue *q, eddy_status st,
                                         const eddy_error *why, uint64_t sent, bool closing) {
    eddy__store_slot *p = take_all(q);
    eddy__store_slot *failed = NULL, **tail = &failed;
    bool first = true; /* the oldest op of the connection not answered: the refusal's */
    while (p) {
        eddy__store_slot *next = p->next;
        bool was_first = first && p->sent;
        if (p->sent)
            first = false;
        if (p == &q->load) {
            /* dropped with its connection */
        } else if (p->sent && !closing &&
                   eddy__store_op_lost(&p->req.op, st, why, was_first, p->fresh)) {
            /* Sent again on the next connection (its backoff): an idempotent op once, an
             * append a cluster refused unwritten while its call's deadline allows. */
            eddy__store_slot_clear(p);
            enqueue(q, p);
        } else {
            eddy_error e;
            eddy_status pst = eddy__link_outcome(st, why, p->last, sent, &e);
            p->req.st = pst;
            if (why || pst != st)
                p->err = e;
            else
                eddy__fail(&p->err, pst, "%s",
                           pst == EDDY_ERR_CLOSED ? "the store was closed" : "failed");
            p->next = NULL;
            *tail = p;
            tail = &p->next;
        }
        p = next;
    }
    return failed;
}

eddy__store_slot *eddy__store_queue_take(eddy__store_queue *q) {
    eddy__store_slot *p = take_all(q);
    if (p == &q->load)
        p = p->next;
    return p;
}
