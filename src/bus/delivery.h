/* SPDX-License-Identifier: BSD-3-Clause */
/* The delivery a handler receives. The core fills the message; the front end sets `finish`,
 * which eddy_delivery_finish (and the front end itself, for a handler that did not return
 * EDDY_PENDING) calls exactly once. */
#ifndef EDDY_SRC_DELIVERY_H
#define EDDY_SRC_DELIVERY_H

#include "eddy/bus.h"
#include "util/cmd.h"

struct eddy__consumer;

/* The outputs a transactional handler emitted (eddy_delivery_emit), encoded as the commit
 * function takes them: each output's stream key in keys; its subject, field count and fields in
 * args. */
typedef struct eddy__emits {
    size_t n;
    bool broken; /* an output could not be kept (out of memory): the delivery fails */
    eddy__cmd keys;
    eddy__cmd args;
} eddy__emits;

void eddy__emits_free(eddy__emits *e);

struct eddy_delivery {
    eddy_event *ev;
    const char *subject;  /* borrowed from the consumer's stream table */
    const char *sub_name; /* borrowed from the subscription */
    char entry_id[48];
    unsigned attempt;
    size_t stream;         /* index in the consumer's stream table */
    long long received_ms; /* CLOCK_MONOTONIC ms of the feed that took it from a reply */
    struct eddy__consumer *consumer;
    /* A request: where to reply, its id and deadline (wall-clock ms; 0 when none). */
    char *reply_to;
    char request_id[48];
    long long deadline;
    /* An event published by an event-store append: its metadata (stream_id NULL otherwise). */
    char *stream_id;
    long long version;
    long long position;
    /* AtLeastOnce: linked in the consumer's list of deliveries its handlers hold (under its
     * lock), for claim refreshes (eddy_delivery_in_progress, settings.claim_refresh). */
    eddy_delivery *held_prev, *held_next;
    bool held;
    bool refresh_asked;  /* eddy_delivery_in_progress since the last refresh was planned */
    bool refreshing;     /* a refresh is on its way: none is planned beside it */
    long long idle_from; /* CLOCK_MONOTONIC ms; the server's idle time for it started before */
    eddy__emits *emits;  /* NULL until the handler emits; the thread holding it writes it */
    /* Set by the front end; eddy_delivery_finish and eddy_delivery_reply call it. reply is
     * owned by the callee. */
    void (*finish)(eddy_delivery *d, eddy_status st, eddy_event *reply);
    void *frontend;                   /* front-end bookkeeping */
    eddy_delivery *fe_prev, *fe_next; /* the front end's list of the deliveries it waits for */
};

void eddy__delivery_free(eddy_delivery *d);

#endif
