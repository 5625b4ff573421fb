/* SPDX-License-Identifier: BSD-3-Clause */
/* The publishing connection's multiplexing, sans-IO: many callers' requests (each one or more
 * commands that go on the wire as one contiguous run, a deadline and a caller's token) share
 * one connection, and this machine decides what a front end may not decide on its own, so that
 * the blocking front end (threads) and the reactive one (the loop) decide alike:
 *
 * - the order: requests are handed to the link in the order they were submitted, and each
 *   reply belongs to the oldest handed request still waiting (src/util/pipeline.h);
 * - who writes and who reads: one writer and one reader at a time; a reader that leaves hands
 *   its role to the oldest request's caller, or to a reader of the front end's own (a thread)
 *   when that caller does not wait for it (a detached request), or to nobody;
 * - what a lost connection means: every request still queued fails, exactly once, in order;
 *   a request whose commands were all written before a deadline passed fails with
 *   EDDY_ERR_TIMEOUT (sent, outcome unknown), one that was not with EDDY_ERR_IO (not sent);
 *   none is ever sent again (the caller's core decides what is safe to repeat);
 * - deadlines: when one passes with the request still waiting, the connection is given up
 *   for every request in flight (its replies are no longer accounted for);
 * - a reply that no request asked for fails the connection; a request of no command is
 *   refused; a request the front end could not queue (out of memory) is withdrawn, alone.
 *
 * It does no I/O, reads no clock (the time comes with the calls) and takes no lock: the
 * front end serialises its calls, writes the commands it is told to, feeds the replies it
 * reads, and wakes each request it is handed back (eddy__mux_take_done), with its status.
 *
 * Invariants: a request is in exactly one of: unsent (submitted, not handed to the link),
 * handed (in the FIFO, awaiting replies), done (in the done list, to be taken), taken (the
 * caller's again). The handed ones come before the unsent ones on the wire. Once broken, no
 * request is submitted until eddy__mux_reconnected.
 *
 * Thread: not locked; whoever drives it serialises its calls. */
#ifndef EDDY_SRC_LINK_MUX_H
#define EDDY_SRC_LINK_MUX_H

#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "util/pipeline.h"

typedef enum eddy__mux_state {
    EDDY__MUX_IDLE,   /* not submitted, or taken back */
    EDDY__MUX_UNSENT, /* submitted, its commands not handed to the link yet */
    EDDY__MUX_HANDED, /* its commands are the link's, its replies awaited */
    EDDY__MUX_DONE,   /* completed or failed, in the done list */
} eddy__mux_state;

/* One request: the caller allocates it and keeps it alive until it was taken back
 * (eddy__mux_take_done, or eddy__mux_withdraw); its fields are the machine's. */
typedef struct eddy__mux_req {
    eddy__pipe_slot slot; /* replies, n and st (the outcome) */
    void *token;          /* the caller's, handed back with it */
    eddy_error err;       /* why, when slot.st is not EDDY_OK */
    uint64_t last;        /* the link's number of its last command, 0 until handed */
    long long deadline;   /* the front end's clock (ms); -1 none */
    long long began;      /* when it was submitted */
    bool detached;        /* its caller does not wait to read (a reader of the front end's);
                           * set before submit, which leaves it (zero the request first) */
    eddy__mux_state state;
    struct eddy__mux_req *next; /* in the unsent or the done list */
} eddy__mux_req;

typedef struct eddy__mux {
    eddy__pipeline fifo; /* handed, in wire order */
    eddy__mux_req *unsent, *unsent_tail;
    eddy__mux_req *done, *done_tail;
    bool broken; /* lost: no request until eddy__mux_reconnected */
    eddy_error lost;
    bool loss_untold; /* went broken since eddy__mux_take_loss last said so */
    bool reading, writing;
} eddy__mux;

/* What the front end does when a reader leaves its role (eddy__mux_leave_reader). */
typedef enum eddy__mux_next {
    EDDY__MUX_NOBODY,    /* nothing waits */
    EDDY__MUX_RECONNECT, /* the connection is lost and nobody uses it: whoever waits may */
    EDDY__MUX_OFFER,     /* offer the role to the caller of eddy__mux_head (it waits) */
    EDDY__MUX_READER,    /* the oldest request is detached: the front end's own reader reads */
} eddy__mux_next;

void eddy__mux_init(eddy__mux *m);

/* Queues req for n (> 0) replies into `replies` (the caller's, n slots, set NULL), by
 * `deadline` (-1: none), at `now`; `last` is the link's number of its last command when the
 * front end already handed its commands to the link (in submit order, behind every request
 * handed before and with nothing unsent), 0 when they are to be handed later
 * (eddy__mux_next_unsent). EDDY_ERR_INVALID_ARGUMENT for n == 0, EDDY_ERR_IO (the loss's
 * detail) when the connection is broken: then req is not queued and err says why.
 * Ownership: req and replies are the caller's and must live until req is taken back. */
eddy_status eddy__mux_submit(eddy__mux *m, eddy__mux_req *req, redisReply **replies, size_t n,
                             long long deadline, long long now, uint64_t last, void *token,
                             eddy_error *err);

/* The oldest request whose commands are to be handed to the link now, or NULL. The front end
 * writes its commands (one run) and calls eddy__mux_handed with the link's number of its last. */
eddy__mux_req *eddy__mux_next_unsent(const eddy__mux *m);
void eddy__mux_handed(eddy__mux *m, eddy__mux_req *req, uint64_t last);

/* The front end could not queue req's commands for want of memory (nothing of them reached
 * the link): req leaves the queue alone (it must be the newest request and not handed), the
 * others are untouched. req is the caller's again (state IDLE), with EDDY_ERR_NOMEM. */
void eddy__mux_withdraw(eddy__mux *m, eddy__mux_req *req);

/* Whether the next reply completes its request (a front end that lends replies keeps those
 * before a request's last and lends the last). */
bool eddy__mux_next_is_last(const eddy__mux *m);

/* The next reply in wire order (taken; NULL stands for a reply the front end could not keep,
 * which its request reads as missing). Completes the oldest handed request when it was its
 * last (it goes to the done list). A reply no request asked for is freed and fails the
 * connection (every request, EDDY_ERR_IO): returns false then. */
bool eddy__mux_feed(eddy__mux *m, redisReply *reply);

/* The connection was lost (st and err: why; a write or a read failed, or the server closed):
 * every request queued fails with st, in order: handed ones first, then unsent ones. A
 * EDDY_ERR_TIMEOUT (sent, outcome unknown) is kept only for a request whose commands were all
 * written (last <= sent, the link's count); the others fail with EDDY_ERR_IO (not sent). The
 * machine is broken until eddy__mux_reconnected. */
void eddy__mux_lost(eddy__mux *m, eddy_status st, const eddy_error *err, uint64_t sent);

/* req's deadline passed (the front end's word: its caller's wait ended) before its replies came:
 * the connection is given up for every request (EDDY_ERR_TIMEOUT for those whose commands were
 * all written, `sent`; EDDY_ERR_IO for the others), with a text that says whose deadline it was
 * and whether each was written. true when this broke the connection (the front end wakes
 * whoever waits on the socket: shutdown); false when req was done already or it was broken. */
bool eddy__mux_expire(eddy__mux *m, eddy__mux_req *req, long long now, uint64_t sent);
/* The same for the oldest request whose deadline is past at now, if any. */
bool eddy__mux_expire_due(eddy__mux *m, long long now, uint64_t sent);
/* The earliest deadline of a request still queued, -1 none. */
long long eddy__mux_next_deadline(const eddy__mux *m);

/* The next request done (completed or failed), in the order they were done, or NULL; it is
 * the caller's again. Its outcome: req->slot.st (err when not EDDY_OK) and its replies. */
eddy__mux_req *eddy__mux_take_done(eddy__mux *m);
/* Whether a done request needs its caller's attention: it failed, or a reply is missing or an
 * error reply. */
bool eddy__mux_req_failed(const eddy__mux_req *req);

/* The oldest request handed and still waiting, or NULL. */
eddy__mux_req *eddy__mux_head(const eddy__mux *m);
/* How many requests are queued, handed or unsent. */
size_t eddy__mux_queued(const eddy__mux *m);
/* Nothing is queued (handed, unsent or done and not taken). */
bool eddy__mux_idle(const eddy__mux *m);

/* The roles. take_*: true when the caller now holds it (nobody did and the connection is not
 * broken). leave_reader says who reads next; leave_writer says whether the connection is lost
 * and nobody uses it any more (whoever waits to reconnect may). */
bool eddy__mux_take_reader(eddy__mux *m);
eddy__mux_next eddy__mux_leave_reader(eddy__mux *m);
bool eddy__mux_take_writer(eddy__mux *m);
bool eddy__mux_leave_writer(eddy__mux *m);
/* The connection may be replaced: it is broken and neither role is held. */
bool eddy__mux_may_reconnect(const eddy__mux *m);
/* A new connection is up: requests may be submitted again. */
void eddy__mux_reconnected(eddy__mux *m);
/* Whether the connection went lost (a loss, a deadline or a reply nobody asked for broke it)
 * since the last call that said so: true once a loss, for whatever the front end's core must
 * forget with the connection (publish_flow.h: eddy__publish_mux_settle). A flag, no clock. */
bool eddy__mux_take_loss(eddy__mux *m);

#endif
