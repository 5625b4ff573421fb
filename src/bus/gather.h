/* SPDX-License-Identifier: BSD-3-Clause */
/* What a scatter-gather request gathers, and when it ends: the rules both front ends share
 * (docs/request-reply.md, "Asking every responder").
 *
 * How a request reaches every responder: a responder that opts in (eddy_bus_answer_all) has a twin
 * subscription in its bus, a fanout group per instance ("gather.<name>.<instance>") on the
 * subject's gather stream "{ns}:all:<subject>" (sub.h: eddy__sub_gather_twin), registered as
 * kind 'g' in the namespace's registry. A scatter-gather request is one entry on that stream,
 * so every instance reads it, while single requests and publishes stay on "{ns}:s:<subject>"
 * where one member of the group reads each. Why not the other ways: the request published to
 * each responder's own stream would make the requester pick addresses from the registry (a
 * responder that just started would be missed until its lease shows, and one request would be
 * N writes); a fanout group per instance on the subject stream itself would make every
 * responder read every single request twice and skip half.
 *
 * The gathering: a request in the table (requests.c) carries an eddy__gather. Each matching
 * reply is appended (a failure reply, or an unreadable one, as EDDY_ERR_RESPONDER_FAILED); the
 * request ends, counted once as a single request is (requests.h), when:
 *   - max replies came (max > 0):                                   EDDY_OK, Answered;
 *   - a failure came and stop_on_failure:                           RESPONDER_FAILED, Failed;
 *   - the deadline came: with max 0 and at least one reply           EDDY_OK, Answered;
 *                        otherwise                                  NO_REPLY, NoReply;
 *   - a cancel or the bus stopping:                                 NO_REPLY, NoReply.
 * Nothing subscribed as a gather responder is EDDY_ERR_NO_RESPONDERS at once (the flow), as
 * for a single request. Replies after the end are Unclaimed.
 *
 * Thread: the table's lock guards a gather while its request is in the table; once taken out,
 * it is its front end's alone. */
#ifndef EDDY_SRC_GATHER_H
#define EDDY_SRC_GATHER_H

#include <stdbool.h>
#include <stddef.h>

#include "eddy/bus.h"

/* A gather stream's entries are only worth their deadline: XADD trims it to about this many
 * (MAXLEN ~), as the retention pass never looks at "{ns}:all:" streams. */
#define EDDY__GATHER_MAXLEN 1000

/* How a request in the table ends (not a status: a deadline may end it well). */
typedef enum eddy__gather_end {
    EDDY__GATHER_DEADLINE,
    EDDY__GATHER_CANCEL /* cancel, stop */
} eddy__gather_end;

typedef struct eddy__gather {
    size_t max;
    bool stop_on_failure;
    bool each;          /* the front end hears of every reply (eddy__reply_done.more) */
    eddy_replies *list; /* NULL once taken */
    size_t came;        /* replies that came (one dropped on OOM included) */
    size_t dropped;     /* of those, not kept: no memory to list them */
    bool ended;
    eddy_status outcome; /* once ended */
} eddy__gather;

/* Copies the caller's options (widened: fields of a newer eddy take their defaults) into an
 * eddy_request_opts for the request's checks, and sets up g. EDDY_ERR_NOMEM. */
eddy_status eddy__gather_init(eddy__gather *g, const eddy_gather_opts *opts, bool each,
                              eddy_request_opts *ropts, bool *has_opts);
/* The part of the options a request's checks and waits read (deadline, name, token), widened;
 * NULL (out zeroed) for NULL opts. */
const eddy_request_opts *eddy__gather_request_opts(const eddy_gather_opts *opts,
                                                   eddy_request_opts *out);
/* Frees what is left (the list, unless taken). */
void eddy__gather_reset(eddy__gather *g);
/* Takes the list (the caller's; an empty list when it could not be made: NULL then). */
eddy_replies *eddy__gather_take(eddy__gather *g);

/* One reply (*reply taken: NULL for a failure reply). Returns true when it ends the gather
 * (then g->outcome is set). On OOM the reply is dropped (*reply set NULL) and counts as come. */
bool eddy__gather_add(eddy__gather *g, eddy_status st, eddy_event **reply);
/* The request ends another way: sets and returns g->outcome. */
eddy_status eddy__gather_finish(eddy__gather *g, eddy__gather_end how);

#endif
