/* SPDX-License-Identifier: BSD-3-Clause */
/* The blocking bus's private structures, shared by its files (bus.c, publish.c, reader.c). */
#ifndef EDDY_BLOCKING_INTERNAL_H
#define EDDY_BLOCKING_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "bus/bus_core.h"
#include "bus/consumer.h"
#include "bus/discovery.h"
#include "bus/inbox.h"
#include "bus/publisher.h"
#include "bus/registry.h"
#include "bus/requests.h"
#include "bus/sub.h"
#include "config/settings.h"
#include "conn.h"
#include "eddy/blocking.h"
#include "mux.h"
#include "pool.h"
#include "share.h"

/* One subscription and its reader: a thread of its own, or the bus's shared reads (share.h). */
typedef struct bsub {
    eddy_bus *bus;
    eddy__sub *sub;
    eddy__consumer *consumer; /* one per activation */
    bconn conn;               /* the reader's own connection: blocking reads tie it up */
    eddy__plan plan;          /* its driver's (whoever has the consumer) */
    pthread_t thread;
    bool thread_started; /* `thread` is to be joined */
    bool running;
    /* Shared reads (share.h), NULL when it reads alone. sm is guarded by the share's lock;
     * next_at and handed belong to its driver. */
    bshare *share;
    eddy__share_member sm;
    long long next_at; /* when its last plan on the read thread wants it planned again */
    bool handed;       /* its reader thread sends `plan` (made by the read thread) first */
    atomic_bool stopping;
    pthread_mutex_t lock; /* with `settled`: a stopping reader waits for its handlers, and
                             start waits for `ready` */
    pthread_cond_t settled;
    bool ready;
    eddy_error refused;     /* a refused connect (eddy__conn_refused) start need not wait out */
    eddy_ready_fn ready_fn; /* eddy_bus_subscribe_ready on a stopped bus: told by the next start */
    void *ready_user;
} bsub;

struct eddy_bus {
    eddy__settings s;
    eddy__bus_core core; /* publisher, requests, registry cache, subs, ... (bus_core.h) */
    /* The activation's control thread: reply stream, registry heartbeats (inbox.h). */
    eddy__inbox *inbox;
    bconn ctl_conn;
    pthread_t ctl_thread;
    bool ctl_running;
    atomic_bool ctl_stopping;
    pthread_mutex_t ctl_lock; /* with ctl_cond: start waits for ctl_ready */
    pthread_cond_t ctl_cond;
    bool ctl_ready;
    eddy_error ctl_last;       /* the control connection's last failure, for start's error */
    atomic_bool active;        /* started and ready: requests may be sent */
    bmux pub;                  /* the publishing connection, multiplexed */
    pthread_mutex_t lock;      /* started, and every change to subs */
    pthread_mutex_t subs_lock; /* subs and nsubs, for readers that must not wait on `lock` */
    bsub **subs;
    size_t nsubs;
    bool started;
    bpool *pool;
    eddy__discovery *discovery; /* shared by the pattern subscriptions */
    bshare *share; /* reads shared from settings.share_reads_from subscriptions (share.h) */
};

/* publish.c: runs commands on the publishing connection (multiplexed: any thread, no lock
 * held while waiting; cmds stay contiguous on the wire). */
eddy_status eddy__bpub_exec(eddy_bus *bus, const eddy__cmdlist *cmds, redisReply **replies,
                            eddy_error *err);
/* The same with a deadline of the caller's (monotonic ms, eddy__mono_ms) instead of
 * settings.command_timeout_ms (a request's). */
eddy_status eddy__bpub_exec_until(eddy_bus *bus, const eddy__cmdlist *cmds, long long deadline,
                                  redisReply **replies, eddy_error *err);
/* The same in two halves (eddy__bmux_send, eddy__bmux_finish): send without waiting, collect
 * the replies later. */
eddy_status eddy__bpub_send(eddy_bus *bus, const eddy__cmdlist *cmds, long long deadline,
                            redisReply **replies, eddy__bmux_wait *w,
                            void (*on_done)(void *user, bool failed), void *user, eddy_error *err);
eddy_status eddy__bpub_finish(eddy_bus *bus, eddy__bmux_wait *w, eddy_error *err);

/* control.c */
eddy_status eddy__bctl_start(eddy_bus *bus, eddy_error *err);
void eddy__bctl_stop(eddy_bus *bus);

/* request.c: completes a blocking request's waiter (any thread). */
void eddy__bwait_complete(void *waiter, eddy_status st, eddy_event *reply);

/* reader.c */
eddy_status eddy__bsub_start(bsub *bs, eddy_error *err);
/* Waits until the reader is ready (see eddy__consumer_ready); EDDY_ERR_IO after the timeout. */
eddy_status eddy__bsub_wait_ready(bsub *bs, eddy_error *err);
/* A stop begins (a running reader): nothing more is handed out, a blocking read is cut short. */
void eddy__bsub_interrupt(bsub *bs);
void eddy__bsub_stop(bsub *bs);
/* Stops every subscription, then the shared reads. */
void eddy__bsub_stop_all(eddy_bus *bus);
/* Wakes the reader after a pause or resume, as the core asks (eddy__consumer_pause). Thread:
 * any; harmless when the reader is not running (the next activation plans afresh). Returns the
 * reader connection's client id when a blocking read was cut on redis:// (see eddy__bconn_wake),
 * for eddy__bsub_kill_read; else -1. */
long long eddy__bsub_wake(bsub *bs, eddy__wake how);
/* One round of the share's read thread (share.h) over the subscriptions in v (each ROUND):
 * plans each; one whose plan blocks goes to a reader thread of its own; the others' plans go
 * as one pipeline on conn, and each is fed its replies. Sets each one's next_at. */
void eddy__bsub_round_shared(bshare *s, bconn *conn, bsub **v, size_t n);
/* Has the server drop the reader connection client_id (on the publishing connection, so it is
 * done before anything this bus publishes next). */
void eddy__bsub_kill_read(eddy_bus *bus, long long client_id);

#endif
