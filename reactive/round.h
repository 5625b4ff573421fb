/* SPDX-License-Identifier: BSD-3-Clause */
/* The round driver of the reactive front end: what a subscription's reader (reader.c) and a
 * control loop (control.c) share about their own connection. It connects, backs off after a
 * failed connect, gives a start its deadline to become ready, sends a plan's commands as one
 * pipeline, collects their replies, and reconnects when the connection is lost. The owner
 * decides what a round holds (it plans with its core state machine) and what its replies mean.
 *
 * The owner hears from it through rround_ops, always from the loop inside an eddy__rbus_enter /
 * eddy__rbus_leave bracket:
 *   step   plan now: send a round (eddy__rround_send), idle (eddy__rround_idle), or hold it
 *          (R_HELD). Called when the connection comes up and when an idle wait ends;
 *   kept   a reply before the round's last one arrived and was kept (optional);
 *   done   every reply of the round is in, the last one borrowed: the owner feeds them and calls
 *          eddy__rround_replies_done;
 *   lost   the connection is gone (already closed; the round's replies are freed): the owner
 *          resets its core. Returning false means it does not reconnect (it is stopping); the
 *          driver otherwise logs the loss and backs off, unless the owner holds the round
 *          (R_HELD), which then steps again itself;
 *   late   the ready deadline passed, or a connect was refused (credentials, not a Redis
 *          server) while it ran: a start need not wait it out (eddy__rround_late_error says
 *          why).
 *
 * A round may share its connection (share.h) with other subscriptions' rounds instead of
 * owning one (eddy__rround_share): its rounds then go on the shared connection, except one
 * whose plan blocks, which takes a connection of its own (opened then; the round is sent once
 * it is up) and keeps it until the round idles, when it goes back to the shared one. A lost
 * shared connection is lost for every round on it, each told through `lost` as for its own.
 *
 * Thread: the loop's thread only. */
#ifndef EDDY_REACTIVE_ROUND_H
#define EDDY_REACTIVE_ROUND_H

#include <ev.h>
#include <hiredis/hiredis.h>
#include <stdbool.h>

#include "bus/consumer.h"
#include "bus/share.h"
#include "conn.h"
#include "eddy/reactive.h"
#include "util/backoff.h"

struct rshare;

typedef enum rstate {
    R_CONNECTING, /* waiting for the connection to come up */
    R_BACKOFF,    /* timer: reconnect */
    R_IDLE,       /* timer: plan again */
    R_ROUND,      /* a pipeline is out; collecting its replies */
    R_HELD,       /* the owner has it (completing a round, or waiting); it steps again itself */
    R_DEAD        /* released at the next eddy__rbus_leave */
} rstate;

typedef struct rround_ops {
    void (*step)(void *owner);
    void (*kept)(void *owner); /* NULL: nothing to do */
    void (*done)(void *owner);
    bool (*lost)(void *owner);
    void (*late)(void *owner);
} rround_ops;

typedef struct rround {
    eddy_rbus *bus;
    const rround_ops *ops;
    void *owner;
    const char *what; /* names it in log lines: "subscription", "control connection" */
    const char *name; /* and its name when it has one (borrowed), or NULL */
    rconn *conn;      /* NULL while there is none */
    rstate state;
    eddy__plan plan;
    redisReply **replies; /* the plan's replies so far (owned, except the last while lent) */
    size_t got, replies_cap;
    bool lent;            /* replies[got - 1] is borrowed from the connection (during done) */
    ev_timer timer;       /* R_BACKOFF, R_IDLE */
    ev_timer ready_timer; /* how long it may take to become ready */
    eddy__reconnect gate; /* backoff.h: every connect waits for the backoff of the previous */
    eddy_error last_err;  /* why the connection last failed, for the ready deadline's detail */
    /* sharing (share.h): the shared connection it uses when its plan does not block */
    struct rshare *share;
    bool attached;               /* in share's members (share.c keeps it) */
    eddy__share_member share_sm; /* its record there (share.c's) */
    bool wants_own;              /* the next connect opens one of its own (it blocks) */
    bool send_when_up;           /* the planned round goes once its own connection is up */
} rround;

/* Sets r up (not connected) and arms its ready deadline. Ownership: bus, ops, owner and the
 * names are borrowed and must outlive r. */
void eddy__rround_init(rround *r, eddy_rbus *bus, const rround_ops *ops, void *owner,
                       const char *what, const char *name);

/* Its rounds share s's connection from the next connect on (before the first). Borrowed. */
void eddy__rround_share(rround *r, struct rshare *s);

/* Opens a connection (or attaches to the shared one); step follows once it is up (at once for
 * memory://). */
void eddy__rround_connect(rround *r);

/* Whether it has a connection to send on, or one coming up (else the owner connects). */
bool eddy__rround_linked(const rround *r);
/* Whether that connection is up. */
bool eddy__rround_up(const rround *r);

/* Sends r->plan's commands (at least one) as one round. False when nothing was sent (out of
 * memory): r then idles briefly and plans again. A connection that cannot take them reports
 * `lost` later, from the loop. */
bool eddy__rround_send(rround *r);

/* Waits ms, then steps. */
void eddy__rround_idle(rround *r, long long ms);
/* eddy__rround_idle; a round of a shared connection's member on a connection of its own keeps
 * that connection unless give_back (eddy__consumer_gives_back). */
void eddy__rround_wait(rround *r, long long ms, bool give_back);

/* The round's replies were fed: frees them, except the one the connection lent. */
void eddy__rround_replies_done(rround *r);

/* The connection is unusable (say, its replies made no sense): as when it is lost. */
void eddy__rround_lose(rround *r, const eddy_error *err);

/* Writes what is queued and delivers replies that already arrived (eddy__rconn_drain). */
void eddy__rround_drain(rround *r);

/* The ready deadline no longer applies: r became ready, or is stopping. */
void eddy__rround_stop_deadline(rround *r);

/* err = "<what>", followed by why the connection last failed when known; its status is that
 * failure's when it was a refusal (EDDY_ERR_AUTH, EDDY_ERR_PROTOCOL), else EDDY_ERR_IO. */
void eddy__rround_late_error(const rround *r, eddy_error *err, const char *what);

/* Stops for good: R_DEAD, timers stopped, connection and replies dropped. */
void eddy__rround_kill(rround *r);

/* Frees what eddy__rround_init and the rounds allocated (after eddy__rround_kill). */
void eddy__rround_free(rround *r);

/* From share.c: the shared connection is up, a reply of r's round came, or the connection was
 * lost (r is detached already). */
void eddy__rround_share_up(rround *r);
void eddy__rround_share_reply(rround *r, redisReply *reply);
void eddy__rround_share_down(rround *r, const eddy_error *err);

#endif
