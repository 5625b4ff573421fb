/* SPDX-License-Identifier: BSD-3-Clause */
/* One request's sequence, the same on both front ends: the front end sends what the flow
 * says and feeds back the replies; the flow decides everything else. Sans-IO, like
 * consumer.h.
 *
 *   begin   the refusals (eddy__request_begin: nothing is counted, nothing is in the table),
 *           then the request joins the table (so a deadline, a cancel or a stop can end it
 *           from here on, counted NoReply), then "is anything subscribed?": the registry
 *           cache may answer yes at once, else the question is the first step.
 *   ASK     send the registry question, feed its reply. Nothing subscribed: NoResponders,
 *           counted (Sent and NoResponders), ends the request at once. Yes: SEND.
 *   SEND    send the request entry, feed its replies. Written: counted Sent, WAIT.
 *   WAIT    the outcome comes from the reply stream (eddy__requests_match), the deadline, a
 *           cancel or a stop: whoever takes the request out of the table completes it.
 *   END     the flow took the request out of the table itself (no responders, or a step that
 *           failed, which is not counted: nothing went out) with status st: the front end
 *           completes its waiter with it.
 *           A step Redis did not answer in time (EDDY_ERR_TIMEOUT) is no failure of the
 *           request: it goes to WAIT (an entry counted Sent, it may have gone out), and its
 *           deadline ends it, counted NoReply, unless its reply comes first.
 *   ENDED   someone else (deadline, cancel, stop) ended the request while a step was out,
 *           and completed it; nothing is sent after that.
 *
 * Late answers: a step's answer that comes after the request ended still counts Sent when the
 * entry was written (it went out); a reply that comes after the request ended (a responder
 * that answered after the deadline, one that returned EDDY_PENDING and replied late, or a
 * second group) is counted Unclaimed by eddy__requests_match and never reaches a later
 * request.
 *
 * A scatter-gather request (eddy__request_flow_begin_gather) takes the same steps: the
 * registry question asks for gather responders (kind 'g') only, the entry goes to the
 * subject's gather stream, and in WAIT the replies are gathered into f->gather (gather.h)
 * until the table takes the request out; the front end then hands over f->gather's list with
 * the outcome (f->gather.outcome when it ended in the table, f->st at END).
 *
 * Thread: one flow is driven by one thread at a time; the table it uses is locked. */
#ifndef EDDY_SRC_REQUEST_FLOW_H
#define EDDY_SRC_REQUEST_FLOW_H

#include "bus/gather.h"
#include "bus/registry.h"
#include "bus/requests.h"

/* The most commands one step sends (the entry's XADD and its subject's SADD). */
#define EDDY__REQUEST_MAX_CMDS 2

typedef enum eddy__req_step {
    EDDY__REQ_ASK,
    EDDY__REQ_SEND,
    EDDY__REQ_WAIT,
    EDDY__REQ_END,
    EDDY__REQ_ENDED
} eddy__req_step;

typedef struct eddy__request_flow {
    eddy__requests *requests;
    eddy__registry_cache *cache;
    eddy__publisher *publisher;
    eddy__request_out out; /* id, counter row, deadline, the entry's commands */
    eddy__cmdlist ask;     /* the registry question */
    char *subject;
    long long asked_ms;
    eddy__req_step step;
    eddy_status st; /* END: why */
    eddy_error err; /* END: its detail */
    bool is_gather;
    eddy__gather gather; /* a scatter-gather request's replies and rules */
} eddy__request_flow;

/* What begin needs from the front end's bus. */
typedef struct eddy__request_ctx {
    eddy__requests *requests;
    eddy__registry_cache *cache;
    eddy__publisher *publisher;
    const char *ns;
    unsigned caps;
    bool active;          /* started and ready */
    bool cancelled;       /* the request's cancel token already fired */
    const char *reply_to; /* the activation's reply stream (NULL when !active) */
} eddy__request_ctx;

/* Starts the flow: on a refusal returns it (nothing to release, nothing counted); on EDDY_OK
 * the request is in the table with waiter, and f->step is ASK or SEND. now_ms is wall-clock.
 * Ownership: ctx, opts, subject and ev are borrowed for the call; waiter is the front end's.
 * Release the flow with eddy__request_flow_reset once it is done with. */
eddy_status eddy__request_flow_begin(eddy__request_flow *f, const eddy__request_ctx *ctx,
                                     const eddy_request_opts *opts, const char *subject,
                                     const eddy_event *ev, void *waiter, long long now_ms,
                                     eddy_error *err);

/* The same for a scatter-gather request: opts are the caller's (widened here; NULL is refused
 * as no deadline), each: the front end hears of every reply (eddy__reply_done.more). */
eddy_status eddy__request_flow_begin_gather(eddy__request_flow *f, const eddy__request_ctx *ctx,
                                            const eddy_gather_opts *opts, bool each,
                                            const char *subject, const eddy_event *ev, void *waiter,
                                            long long now_ms, eddy_error *err);

/* ASK or SEND: the commands to send, one contiguous run (borrowed: valid until the next feed
 * returns, or the reset). */
const eddy__cmdlist *eddy__request_flow_cmds(const eddy__request_flow *f);

/* The step's outcome: st EDDY_OK with one reply per command, or why the commands got none
 * (err, may be NULL). Replies are borrowed, except that the ASK step takes replies[0] (and
 * sets it NULL). Returns the next step (also in f->step). */
eddy__req_step eddy__request_flow_feed(eddy__request_flow *f, eddy_status st, redisReply **replies,
                                       const eddy_error *err);

/* The call's outcome once its waiter was completed with st by whoever took the request out of
 * the table (a reply, the deadline, a cancel, a stop): a gather that ended there has the
 * table's outcome (gather.h), or EDDY_ERR_NOMEM when it was EDDY_OK but a reply could not
 * be kept. A failure the responders' side caused (no reply in time, a responder's failure)
 * gets a detail naming the request in err (may be NULL). */
eddy_status eddy__request_flow_outcome(const eddy__request_flow *f, eddy_status st,
                                       eddy_error *err);

void eddy__request_flow_reset(eddy__request_flow *f);

/* eddy_bus_request_value and its twin before their request: the refusals first, before anything
 * is built (eddy__request_precheck, with the bus's state as for a request), then the event
 * (eddy__publish_value_event). Ownership: *out is the caller's. */
eddy_status eddy__request_value_event(const eddy__settings *s, const eddy_request_opts *opts,
                                      bool cancelled, bool active, unsigned caps, const char *type,
                                      eddy_pack_fn pack, void *user, long long now_ms,
                                      eddy_event **out, eddy_error *err);

#endif
