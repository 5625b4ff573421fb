/* SPDX-License-Identifier: BSD-3-Clause */
/* One publish call's sequence (a publish or a batch), the same on both front ends: the front
 * end sends what the flow says and feeds back how the send went; the flow decides whether the
 * publishes go again and reads the outcome. Sans-IO, like request_flow.h.
 *
 *   begin   the checks and the commands (eddy__publish_prepare_batch), and the call's deadline
 *           for sending again: command_timeout_ms from now, for the call as a whole.
 *   SEND    send the commands, feed the outcome (eddy__publish_flow_feed). The flow says
 *           SEND again, with new commands, when nothing can be stored twice by it: a cluster
 *           refused them unwritten and the deadline allows (eddy__publish_moved_again, each
 *           time on the next connection), or the server lost eddy's function library
 *           (eddy__publish_again: once, behind a load). The front end sends `again` instead
 *           of what it sent; when it cannot (out of memory), it ends with what it had.
 *   END     read the outcome of the last send (eddy__publish_flow_end): its failure, or the
 *           publishes in order, counted while they succeed, the first failure ending the count.
 *
 * A failed send is otherwise never repeated: a retry could store the message twice.
 * Thread: one flow is driven by one thread at a time; the publisher it uses is locked. */
#ifndef EDDY_SRC_PUBLISH_FLOW_H
#define EDDY_SRC_PUBLISH_FLOW_H

#include "bus/publisher.h"
#include "link/mux.h"

typedef enum eddy__pub_step { EDDY__PUB_SEND, EDDY__PUB_END } eddy__pub_step;

typedef struct eddy__publish_flow {
    eddy__publisher *publisher;
    size_t npub;      /* publishes in the commands */
    long long until;  /* the call's deadline (monotonic ms): what is refused unwritten goes again
                        until then */
    size_t published; /* END: how many succeeded, in order */
} eddy__publish_flow;

/* Checks and builds n publishes to subject into cmds (empty on entry; eddy__publish_prepare_batch),
 * at now (monotonic ms); on failure cmds is left empty and released. Ownership: publisher and
 * settings are borrowed for the flow's life; cmds stays the caller's. */
eddy_status eddy__publish_flow_begin(eddy__publish_flow *f, eddy__publisher *publisher,
                                     const eddy__settings *s, const char *subject,
                                     const eddy_event *const *evs, size_t n, long long now,
                                     eddy__cmdlist *cmds, eddy_error *err);

/* The send of `sent` ended with st (err: its detail, may be NULL; replies: when st is EDDY_OK,
 * one a command) at now (monotonic ms). SEND: send `again` (initialised here; the caller then
 * owns it) instead of sent, and feed its outcome the same way. END: `again` is untouched. */
eddy__pub_step eddy__publish_flow_feed(eddy__publish_flow *f, const eddy__cmdlist *sent,
                                       eddy_status st, const eddy_error *err,
                                       redisReply *const *replies, long long now,
                                       eddy__cmdlist *again);

/* The call's outcome from the last send fed (sent, st, err, replies as fed): st and err when
 * it failed (out gets *err, or a blank detail when err is NULL); else the publishes read in
 * order into f->published, the first failure's status returned with its detail in out. The
 * first publish's entry id goes into id when id is not NULL (give it for a single publish). */
eddy_status eddy__publish_flow_end(eddy__publish_flow *f, const eddy__cmdlist *sent, eddy_status st,
                                   const eddy_error *err, redisReply **replies, char *id,
                                   size_t idsize, eddy_error *out);

/* The one rule on when the publisher forgets what the server held (its known subjects, the
 * library's load: eddy__publisher_connection_lost): when the publishing connection is lost,
 * whether or not a call failed with it (a loss while idle counts; a failed connect attempt of
 * a connection lost already does not), and before any caller hears of the loss, so that no
 * publish prepared after it trusts the lost server. Both front ends call this after every call
 * on the publishing connection's machine that may break it (a loss, a deadline, a reply fed),
 * with its lock held when it has one; no lock or allocation unless the connection was lost. */
void eddy__publish_mux_settle(eddy__publisher *p, eddy__mux *m);

#endif
