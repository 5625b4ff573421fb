/* SPDX-License-Identifier: BSD-3-Clause */
/* The requesting side of request/reply, shared by both front ends: the checks made before a
 * request is sent, the counters by conversation name, the table of requests waiting for a
 * reply (with their deadlines, for a front end that keeps one timer), and matching replies
 * that arrive on the bus's reply stream to the request waiting for them.
 *
 * A waiter is the front end's own object (a condition variable, a callback); the core only
 * stores its pointer and says when and how it completes. Every outcome is counted here, once,
 * when the request leaves the table, so that once nothing is in flight
 * sent == answered + no_responders + no_reply + failed.
 *
 * Thread: every function is safe from any thread (one lock). */
#ifndef EDDY_SRC_REQUESTS_H
#define EDDY_SRC_REQUESTS_H

#include <hiredis/hiredis.h>
#include <stdbool.h>

#include "bus/publisher.h"
#include "config/settings.h"
#include "eddy/bus.h"
#include "events/fields.h"
#include "util/cmdlist.h"

typedef struct eddy__requests eddy__requests;
typedef struct eddy__req_row eddy__req_row;

/* NULL on OOM. Ownership: settings are borrowed. Names come from settings. */
eddy__requests *eddy__requests_new(const eddy__settings *s);
void eddy__requests_free(eddy__requests *r);

/* The checks made before anything is sent, in the order the spec gives (ev may be NULL when
 * the bus builds the event itself). */
eddy_status eddy__request_precheck(const eddy_request_opts *opts, bool cancelled, bool active,
                                   unsigned caps, const eddy_event *ev, long long now_ms,
                                   eddy_error *err);

/* A request between its checks and its send, as both front ends hold it. */
typedef struct eddy__request_out {
    char id[48];
    eddy__req_row *row;
    long long deadline_ms;
    eddy__cmdlist cmds; /* its commands for the publishing connection (eddy__publish_result) */
} eddy__request_out;

/* Everything a request does before anything is sent or counted: the refusals of
 * eddy__request_precheck, then the publish checks (subject, event, size), so that a request
 * refused for any reason is never counted and a front end that answers asynchronously can
 * still return every refusal from the call; then its id, its counter row and its commands
 * (reply_to is the activation's reply stream; it may be NULL when !active; gather: a
 * scatter-gather request, to the gather stream, gather.h). On failure out
 * holds nothing to free; otherwise release it with eddy__request_out_reset. */
eddy_status eddy__request_begin(eddy__requests *r, eddy__publisher *p,
                                const eddy_request_opts *opts, bool cancelled, bool active,
                                unsigned caps, const char *subject, const eddy_event *ev,
                                const char *reply_to, long long now_ms, bool gather,
                                eddy__request_out *out, eddy_error *err);
void eddy__request_out_reset(eddy__request_out *o);

/* The counter row for a name (NULL or "" is the unnamed row; an undeclared name counts with
 * the unnamed row and is logged once, up to a few distinct names). */
eddy__req_row *eddy__requests_row(eddy__requests *r, const char *name);

/* A new request id, unique per bus: "<bus random>.<counter>". */
void eddy__requests_new_id(eddy__requests *r, char id[48]);

/* Nothing is subscribed: counts Sent and NoResponders on the row and the total. */
void eddy__requests_count_no_responders(eddy__requests *r, eddy__req_row *row);

/* Adds a request about to be sent (before it is sent: the reply may beat the send's own
 * answer). EDDY_ERR_NOMEM. */
eddy_status eddy__requests_add(eddy__requests *r, const char *id, void *waiter, eddy__req_row *row,
                               long long deadline_ms);
/* The same for a scatter-gather request (gather.h): replies to it are gathered into *gather
 * (the caller's, until the request leaves the table) until it says the request ends. */
typedef struct eddy__gather eddy__gather;
eddy_status eddy__requests_add_gather(eddy__requests *r, const char *id, void *waiter,
                                      eddy__req_row *row, long long deadline_ms,
                                      eddy__gather *gather);
/* The request was sent: counts Sent. */
void eddy__requests_sent(eddy__requests *r, const char *id);
/* Sending failed: removes it without counting anything (nothing was sent). False when it had
 * already ended (a deadline, cancel or stop took it out, and completes it). */
bool eddy__requests_unsent(eddy__requests *r, const char *id);
/* True while the request is in the table (nothing has ended it yet). */
bool eddy__requests_waiting(eddy__requests *r, const char *id);

/* Ends a request without a reply (deadline, cancel, stop): if it is still in the table,
 * removes it, counts NoReply and returns true; false when it already ended (a reply won). */
bool eddy__requests_give_up(eddy__requests *r, const char *id);
/* As give_up, for a deadline: the same for a single request; a gather may end well at its
 * deadline (gather.h). */
bool eddy__requests_expire(eddy__requests *r, const char *id);

/* The earliest deadline in the table, or -1 when it is empty. */
long long eddy__requests_next_deadline(eddy__requests *r);
/* Removes one request whose deadline is <= now, counting NoReply, and returns its waiter
 * (NULL when none is due). */
void *eddy__requests_pop_expired(eddy__requests *r, long long now_ms);
/* Removes every request (the bus stops), counting NoReply; calls done(waiter) for each. */
void eddy__requests_abandon_all(eddy__requests *r, void (*done)(void *waiter, void *user),
                                void *user);
size_t eddy__requests_in_flight(eddy__requests *r);

/* One reply read from the reply stream. When waiter is not NULL it was matched: complete it
 * with st (EDDY_OK with reply owned by the receiver, or EDDY_ERR_RESPONDER_FAILED). Unmatched
 * replies were counted Unclaimed and are not returned. */
typedef struct eddy__reply_done {
    void *waiter;
    eddy_status st;
    eddy_event *reply;
    /* A scatter-gather request (gather.h): `reply` is borrowed from its list (set only when it
     * hears of each reply), last_st is that reply's status; `more` while the gather goes on
     * (st is then last_st), else st is the gather's outcome and the request left the table. */
    bool gather, more;
    eddy_status last_st;
} eddy__reply_done;

/* Matches one reply entry (its field/value pairs) to its request. Returns true with *out
 * filled when it completes a waiting request, or is a reply a gather's front end hears of. */
bool eddy__requests_match(eddy__requests *r, const char *const *fv, const size_t *fvlen, size_t nfv,
                          eddy__reply_done *out);

/* Counters: name NULL the total, "" the unnamed row, else a declared row (zero otherwise). */
void eddy__requests_stats(eddy__requests *r, const char *name, eddy_request_stats *out);

#endif
