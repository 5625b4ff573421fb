/* SPDX-License-Identifier: BSD-3-Clause */
/* The reactive bus's private structures, shared by its files (bus.c, reader.c, publish.c,
 * control.c, request.c).
 *
 * Re-entrancy: every way into the bus (a public call, a libev or connection callback) is
 * bracketed by eddy__rbus_enter/eddy__rbus_leave. User code (handlers, ready and publish callbacks)
 * only runs inside such a bracket, so whatever it frees or stops is only marked: objects that die
 * (activations, the bus itself) are released by the outermost eddy__rbus_leave, when no frame of
 * ours uses them any more. */
#ifndef EDDY_REACTIVE_INTERNAL_H
#define EDDY_REACTIVE_INTERNAL_H

#include <stdbool.h>

#include "bus/bus_core.h"
#include "bus/consumer.h"
#include "bus/discovery.h"
#include "bus/enlist.h"
#include "bus/inbox.h"
#include "bus/publish_flow.h"
#include "bus/publisher.h"
#include "bus/registry.h"
#include "bus/requests.h"
#include "bus/sub.h"
#include "config/settings.h"
#include "conn.h"
#include "eddy/reactive.h"
#include "link/link.h"
#include "link/mux.h"
#include "round.h"
#include "util/backoff.h"
#include "util/reply_arena.h"

typedef struct ract ract;
typedef struct rctl rctl;
typedef struct rwake rwake;
struct rshare;

/* Shared connections for the reads of a bus that shares them (settings.share_reads_from). */
#define EDDY__RSHARES 2

/* A subscription of the bus. */
typedef struct rsub {
    eddy_rbus *bus;
    eddy__sub *sub;
    ract *act; /* its live activation while the bus is started */
    /* eddy_rbus_subscribe_ready's callback, until it has run */
    eddy_ready_fn ready;
    void *ready_user;
    /* A late subscription's registration (the core's handshake, enlist.h): while one is out,
     * it does not count as ready. */
    eddy__enlist enlist;
} rsub;

/* One activation of a subscription: a consumer and its own connection, from start (or a
 * late subscribe) until stop. A stopped activation lingers while deliveries it handed out are
 * still pending, so their acknowledgements can be sent, then dies. */
struct ract {
    eddy_rbus *bus;
    rsub *rs;
    eddy__consumer *consumer;
    /* its connection and rounds; R_HELD while it hands out a round's deliveries, or, stopping,
     * waits for their handlers */
    rround r;
    bool stopping;
    bool ready;
    bool dispatching;
    bool cut;                /* a pause asked to cut the round's blocking read short */
    eddy__delivery_list out; /* what the last feed produced, before it is handed out */
    bool overlapped;         /* the round was sent while deliveries were outstanding */
    eddy_delivery *pending;  /* handed out, its handler returned EDDY_PENDING (a list) */
    ract *next;              /* every activation of the bus, live or stopping */
};

/* One operation on the publishing connection (a publish, a request's registry query or its
 * send, a registration, a leave), awaiting its replies or its connection. */
typedef struct rpub rpub;
#define RPUB_MAX_CMDS 5 /* a publish's most: load, look, SADD, entry, WAIT */
/* Runs once, after the op left the queue: st EDDY_OK with every reply in p->replies (the last
 * one borrowed: eddy__rconn_keep(bus->pub_conn, ...) keeps it), or why there are none (the
 * connection's error in err, or EDDY_ERR_CLOSED with err NULL when the bus is freed). The op
 * is freed when it returns. */
typedef void (*rpub_fn)(eddy_rbus *bus, rpub *p, eddy_status st, const eddy_error *err);
struct rpub {
    eddy__cmdlist cmds;
    const eddy__cmdlist *ext; /* when set, sent instead of cmds (owned by the op's user, who
                                 outlives the op: a request's flow) */
    redisReply **replies;     /* cap slots: small, or allocated for a batch */
    size_t cap;
    redisReply *small[RPUB_MAX_CMDS];
    eddy__reply_arena *kept; /* the replies before the last, once one came (a batch's: one
                                block, not an allocation per reply) */
    eddy__mux_req req;       /* in the bus's multiplexing machine (src/link/mux.h) once submitted */
    rpub_fn complete;
    eddy_publish_fn done;             /* a publish's callback */
    eddy_publish_batch_fn batch_done; /* a batch's callback (done is then NULL) */
    eddy__publish_flow flow;          /* a publish's or a batch's sequence */
    void *user;
    unsigned seq;
};
/* The commands p sends (and its completion reads replies of). */
const eddy__cmdlist *eddy__rpub_cmds(const rpub *p);

struct eddy_rbus {
    struct ev_loop *loop;
    eddy__settings s;
    eddy__bus_core core; /* publisher, requests, registry cache, subs, ... (bus_core.h) */
    rsub **subs;
    size_t nsubs, subs_cap;
    rsub **gone; /* subscriptions removed after a failed late subscribe; their memory stays
                    until the bus is freed (a stopping activation may still use it) */
    size_t ngone;
    ract *acts;
    bool started;
    bool active; /* started and ready: requests may be sent */
    /* eddy_rbus_start's callback, until it has run */
    bool ready_pending;
    eddy_ready_fn ready;
    void *ready_user;
    /* publishing */
    rconn *pub_conn;
    eddy__reconnect pub_gate; /* backoff.h: each reconnect of pub_conn waits for the backoff */
    eddy__mux pub_mux;        /* the ops queued, written or not, and the order of their replies */
    bool pub_close_idle;      /* stopped: close the connection once nothing is queued */
    /* request/reply */
    eddy__discovery *discovery; /* shared by the pattern subscriptions */
    /* reads sharing connections (share.h, wake.c): made with the first activation that shares */
    rwake *wake;
    struct rshare *shares[EDDY__RSHARES];
    unsigned next_share;
    rctl *ctl;             /* the live activation's control loop (control.c), NULL when stopped */
    rctl *ctls;            /* every control loop not freed yet, live or dead */
    unsigned leaving;      /* leave ops (control.c) whose replies are still out */
    ev_timer deadline;     /* the one timer for every request's deadline (request.c) */
    ev_async alive;        /* active from start to stop: a started bus keeps ev_run running */
    long long deadline_at; /* when it is armed for (wall-clock ms), -1 when it is not */
    size_t nrequests;      /* request objects alive (in the table, or with an op still out) */
    int depth;
    bool freeing;
};

/* bus.c */
void eddy__rbus_enter(eddy_rbus *bus);
void eddy__rbus_leave(eddy_rbus *bus);
/* An activation became ready, or could not in time (err set). */
void eddy__rbus_act_ready(eddy_rbus *bus, ract *act, const eddy_error *err);
void eddy__rbus_timer_after(eddy_rbus *bus, ev_timer *t, long long ms);

/* reader.c */
eddy_status eddy__ract_start(rsub *rs); /* creates rs->act and starts it */
/* Stops reading at once; the activation dies when what it must still send is sent. */
void eddy__ract_stop(ract *act);
/* After a pause or resume, as the core asks (eddy__consumer_pause): ends an idle wait, and for
 * EDDY__WAKE_READ cuts a blocking read short (a reconnect at once; what it read stays pending). */
void eddy__ract_wake(ract *act, eddy__wake how);
/* Frees a dead activation (or, when the bus is freed, any): deliveries still pending are
 * detached so that eddy_delivery_finish stays valid on them. */
void eddy__ract_free(ract *act);

/* A late subscription's registration finished (control.c, which drops stale answers). */
void eddy__rbus_sub_registered(eddy_rbus *bus, rsub *rs, eddy_status st, const eddy_error *err);
/* The control loop became ready, or could not in time (err set). */
void eddy__rbus_ctl_ready(eddy_rbus *bus, const eddy_error *err);

/* publish.c */
/* Completes every op with EDDY_ERR_CLOSED and drops the connection. */
void eddy__rpub_close_all(eddy_rbus *bus);
/* A new op with no commands yet (NULL on OOM); free it with eddy__rpub_free unless submitted. */
rpub *eddy__rpub_new(rpub_fn complete, void *user);
void eddy__rpub_free(rpub *p);
/* Makes room for the replies of n commands (a batch's); EDDY_ERR_NOMEM. Before submitting. */
eddy_status eddy__rpub_reserve(rpub *p, size_t n);
/* Queues p (at most RPUB_MAX_CMDS commands, or what eddy__rpub_reserve made room for) on the
 * publishing connection, opened on first use; its completion runs later, from the loop.
 * EDDY_ERR_NOMEM when no connection could be made: p is then not taken. */
eddy_status eddy__rpub_submit(eddy_rbus *bus, rpub *p);
/* Puts what is queued on the wire now (stop: leaving the registry goes out before it returns). */
void eddy__rpub_flush(eddy_rbus *bus);
/* Opens the connection ahead of use (start: a stop's leave then goes out at once). */
eddy_status eddy__rpub_open(eddy_rbus *bus);
/* The bus stopped: the connection closes once nothing is queued, so that a stopped bus holds
 * no connection (the loop may end); the next op opens it again. */
void eddy__rpub_close_when_idle(eddy_rbus *bus);

/* wake.c: the bus-wide wake-up's connection. New is stopped; start connects it. */
rwake *eddy__rwake_new(eddy_rbus *bus);
void eddy__rwake_free(rwake *w);
struct eddy__wakeup *eddy__rwake_core(rwake *w);
void eddy__rwake_start(rwake *w);
/* An activation planned, and may have watched a stream: an idle wake-up plans now; with
 * `replan` (eddy__consumer_wakeup_replan: a watch the blocking read in flight does not cover)
 * that read is cut short, so that the next one covers it. */
void eddy__rwake_watched(rwake *w, bool replan);
void eddy__rwake_stop(rwake *w);

/* control.c */
/* Creates bus->ctl and starts it: the reply stream, then the registry; eddy__rbus_ctl_ready
 * follows. */
eddy_status eddy__rctl_start(eddy_rbus *bus);
/* Stops bus->ctl: its subscriptions leave the registry and its reply stream is deleted (on the
 * publishing connection, best effort), and its connection closes at once. */
void eddy__rctl_stop(eddy_rbus *bus);
/* True once its reply stream exists and the subscriptions were registered. */
bool eddy__rctl_ready(const rctl *c);
/* Its reply stream's key (borrowed; lives as the control loop). */
const char *eddy__rctl_inbox_key(const rctl *c);
/* Registers a late subscription now; eddy__rbus_sub_registered follows. */
eddy_status eddy__rctl_register(eddy_rbus *bus, rsub *rs);
/* Frees the dead control loops (eddy__rbus_leave). */
void eddy__rctl_reap(eddy_rbus *bus);
/* Frees every control loop, live or dead (the bus is freed). */
void eddy__rctl_free_all(eddy_rbus *bus);

/* request.c */
/* Initialises the deadline timer (eddy_rbus_new). */
void eddy__rreq_setup(eddy_rbus *bus);
/* Every request still waiting ends with EDDY_ERR_NO_REPLY (counted NoReply). */
void eddy__rreq_abandon_all(eddy_rbus *bus);
/* Ends the requests whose deadline has passed. */
void eddy__rreq_expire(eddy_rbus *bus);
/* Completes one request the core took out of its table (a matched reply). */
void eddy__rreq_complete_waiter(void *waiter, eddy_status st, eddy_event *reply);
/* A scatter-gather request's reply (d->gather): keeps the request while the control loop's
 * round hands over its replies (pin each first), then tells it (and completes it at the end). */
void eddy__rreq_pin(void *waiter);
void eddy__rreq_gather_reply(const eddy__reply_done *d);
/* For tests: requests in the core's table, request objects alive, ops on the publishing
 * connection. */
void eddy__rbus_request_counts(eddy_rbus *bus, size_t *in_table, size_t *alive, size_t *ops);

#endif
