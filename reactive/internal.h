/* The reactive bus's private structures, shared by its files (bus.c, reader.c, publish.c).
 *
 * Re-entrancy: every way into the bus (a public call, a libev or connection callback) is
 * bracketed by rbus_enter/rbus_leave. User code (handlers, ready and publish callbacks) only
 * runs inside such a bracket, so whatever it frees or stops is only marked: objects that die
 * (activations, the bus itself) are released by the outermost rbus_leave, when no frame of
 * ours uses them any more. */
#ifndef EDDY_REACTIVE_INTERNAL_H
#define EDDY_REACTIVE_INTERNAL_H

#include <stdbool.h>

#include "conn.h"
#include "consumer.h"
#include "eddy/reactive.h"
#include "memory/engine.h"
#include "publisher.h"
#include "settings.h"
#include "sub.h"

typedef struct ract ract;

/* A subscription of the bus. */
typedef struct rsub {
    eddy_rbus *bus;
    eddy__sub *sub;
    ract *act; /* its live activation while the bus is started */
    /* eddy_rbus_subscribe_ready's callback, until it has run */
    eddy_ready_fn ready;
    void *ready_user;
} rsub;

/* Where a handed-out delivery is tracked (delivery->frontend points here). */
typedef struct rslot {
    ract *act;
    eddy_delivery *d; /* NULL once settled or abandoned */
} rslot;

typedef enum astate {
    A_CONNECTING, /* waiting for the connection to come up */
    A_BACKOFF,    /* timer: reconnect */
    A_IDLE,       /* timer: plan again (idle plan, or out of memory) */
    A_ROUND,      /* a pipeline is out; collecting its replies */
    A_HANDLERS,   /* deliveries handed out and not all settled */
    A_DEAD        /* released at the next rbus_leave */
} astate;

/* One activation of a subscription: a consumer and its own connection, from start (or a
 * late subscribe) until stop. A stopped activation lingers while deliveries it handed out are
 * still pending, so their acknowledgements can be sent, then dies. */
struct ract {
    eddy_rbus *bus;
    rsub *rs;
    eddy__consumer *consumer;
    rconn *conn;
    astate state;
    bool stopping;
    bool ready;
    bool dispatching;
    eddy__plan plan;
    redisReply **replies; /* plan's replies so far (owned, except the last while feeding) */
    size_t got, replies_cap;
    eddy__delivery_list out; /* what the last feed produced, before it is handed out */
    rslot *slots;            /* the current batch */
    size_t nslots, slots_cap, unsettled;
    ev_timer timer;       /* A_BACKOFF, A_IDLE */
    ev_timer ready_timer; /* how long it may take to become ready */
    unsigned attempt;     /* consecutive failed connects, for backoff */
    unsigned seed;
    eddy_error last_err; /* why the connection last failed, for the ready timeout's detail */
    ract *next;          /* every activation of the bus, live or stopping */
};

/* A publish awaiting its replies (or its connection). */
typedef struct rpub {
    struct rpub *next;
    eddy__cmdlist cmds;
    redisReply *replies[2];
    size_t got;
    eddy_publish_fn done;
    void *user;
} rpub;

struct eddy_rbus {
    struct ev_loop *loop;
    eddy__settings s;
    eddy__publisher *publisher;
    eddy__mem_engine *engine; /* memory://: keeps the store alive as long as the bus */
    rsub **subs;
    size_t nsubs, subs_cap;
    rsub **gone; /* subscriptions removed after a failed late subscribe; their memory stays
                    until the bus is freed (a stopping activation may still use it) */
    size_t ngone;
    ract *acts;
    bool started;
    /* eddy_rbus_start's callback, until it has run */
    bool ready_pending;
    eddy_ready_fn ready;
    void *ready_user;
    ev_timer ready_now; /* completes a start that has nothing to wait for, from the loop */
    /* publishing */
    rconn *pub_conn;
    rpub *pub_head, *pub_tail; /* in order of their commands */
    rpub *pub_unsent;          /* the first not yet sent (the connection was not up) */
    int depth;
    bool freeing;
};

/* bus.c */
void rbus_enter(eddy_rbus *bus);
void rbus_leave(eddy_rbus *bus);
/* An activation became ready, or could not in time (err set). */
void rbus_act_ready(eddy_rbus *bus, ract *act, const eddy_error *err);
long long rbus_now_ms(void);
void rbus_timer_after(eddy_rbus *bus, ev_timer *t, long long ms);

/* reader.c */
eddy_status ract_start(rsub *rs); /* creates rs->act and starts it */
/* Stops reading at once; the activation dies when what it must still send is sent. */
void ract_stop(ract *act);
/* Frees a dead activation (or, when the bus is freed, any): deliveries still pending are
 * detached so that eddy_delivery_finish stays valid on them. */
void ract_free(ract *act);

/* publish.c */
/* Completes every publish with EDDY_ERR_CLOSED and drops the connection. */
void rpub_close_all(eddy_rbus *bus);

#endif
