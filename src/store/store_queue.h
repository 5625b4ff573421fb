/* SPDX-License-Identifier: BSD-3-Clause */
/* The event store's operations on one connection, in the order of their commands on the wire,
 * for a front end that pipelines them (reactive/store.c): which op a reply belongs to, the
 * library's load in front of everything on a new connection, what a failed load means for the
 * ops sent behind it, and which ops a lost connection sends again or fails, with what status.
 * What an op's replies mean stays store_req.h's; the front end only sends what eddy__store_queue_next
 * gives, collects each op's replies, and completes what comes out.
 *
 * Rules:
 * - Replies come in command order: each belongs to the oldest op still queued (the head).
 * - A new connection (the first, or any after eddy__store_queue_down) loads the library first;
 *   the load is the queue's own op, never the front end's.
 * - When that load fails, every op sent behind it fails with its error; the next op queued
 *   once they were all answered (or the next connection) has the load go again in front of
 *   it. A front end that sends one op at a time may skip sending one behind a failed load.
 * - After a loss, the store's rules (eddy__store_op_lost) choose what goes again, unsent, on
 *   the next connection; the rest fail with the link's outcome (sent or not, eddy__link_outcome).
 *   An op queued while there was no connection was the reason for the next one (fresh).
 * - An op sent again on the same connection (a whole stream's next page) is not fresh.
 *
 * Thread: none of its own; the front end's loop drives it. Nothing here allocates but the
 * load's commands. */
#ifndef EDDY_SRC_STORE_STORE_QUEUE_H
#define EDDY_SRC_STORE_STORE_QUEUE_H

#include <stdbool.h>
#include <stdint.h>

#include "store/store_req.h"

/* One op in the queue; a front end embeds it in its own op. */
typedef struct eddy__store_slot {
    struct eddy__store_slot *next;
    eddy__store_req req;                          /* what it asks and its result (store_req.h) */
    redisReply *replies[EDDY__STORE_OP_MAX_CMDS]; /* collected by the front end; each owned */
    size_t got;
    bool sent;      /* its commands went out on the current connection */
    bool fresh;     /* queued when there was no connection: the next one is made for it */
    uint64_t last;  /* the connection's number for its last command, 0 until given */
    eddy_error err; /* a failure's detail */
} eddy__store_slot;

typedef struct eddy__store_queue {
    eddy__store_slot *head, *tail, *unsent;
    eddy__store_slot load; /* the library's load, in front on a new connection */
    bool need_load;        /* the connection is new: the load goes out first */
    bool load_failed;      /* the load on this connection failed (load_err) */
    eddy_error load_err;
} eddy__store_queue;

/* What came out of eddy__store_queue_answered. */
typedef enum eddy__store_answer {
    EDDY__STORE_LOADED, /* the queue's load: nothing for the front end but its replies */
    EDDY__STORE_FAILED, /* the op fails with the load's error (req.st, err) */
    EDDY__STORE_READ    /* feed the op's replies to eddy__store_req_done */
} eddy__store_answer;

void eddy__store_queue_init(eddy__store_queue *q);
/* Frees p's replies (each its own hiredis object) and empties them. */
void eddy__store_slot_clear(eddy__store_slot *p);
/* Queues p (its req built) at the tail, unsent; connected: a connection exists (up or coming).
 */
void eddy__store_queue_push(eddy__store_queue *q, eddy__store_slot *p, bool connected);
/* p, answered and taken off the queue, goes again on this connection (eddy__store_req_done said
 * so): unsent at the tail, not fresh when it is a whole stream's next page. */
void eddy__store_queue_again(eddy__store_queue *q, eddy__store_slot *p);
/* The next op to put on the connection, which is up (marked sent; the load first on a new
 * connection), or NULL when none: *st EDDY_OK, or EDDY_ERR_NOMEM building the load (err). */
eddy__store_slot *eddy__store_queue_next(eddy__store_queue *q, eddy_status *st, eddy_error *err);
/* A send failed: nothing more goes out before the loss is told (eddy__store_queue_down). */
void eddy__store_queue_stall(eddy__store_queue *q);
/* The head, whose reply is the next to come (NULL: none). */
eddy__store_slot *eddy__store_queue_head(const eddy__store_queue *q);
/* The head's replies all came: takes it off the queue and says what to do with it. A load's
 * result is read here (log: its failure's warning). */
eddy__store_answer eddy__store_queue_answered(eddy__store_queue *q, const eddy__store *core,
                                              const eddy__logger *log, eddy__store_slot **out);
/* The connection failed with st (why: its detail, may be NULL; sent: the connection's count of
 * commands written). The ops the store's rules send again are queued again, unsent (none when
 * closing); the others come back in order, linked by next, each with req.st and err set. The
 * next connection loads first. Those queued again lose their replies; the others keep theirs. */
eddy__store_slot *eddy__store_queue_down(eddy__store_queue *q, eddy_status st,
                                         const eddy_error *why, uint64_t sent, bool closing);
/* Takes every op out (linked by next; the load is dropped), e.g. to fail them on a close. The
 * next connection loads first. */
eddy__store_slot *eddy__store_queue_take(eddy__store_queue *q);

#endif
