/* The blocking bus's publishing connection, shared by every thread that publishes, requests
 * or registers: multiplexed, so that no lock is held across a round trip. A caller queues its
 * commands under a short lock (one contiguous run on the wire: a MULTI/EXEC or a publish batch
 * stays whole) with a slot for their replies in the core's FIFO (src/pipeline.h); one thread
 * at a time writes (whoever finds nobody writing writes what is queued, its own and what others
 * queued meanwhile, so busy callers share a write instead of queueing for the socket); then
 * one thread at a time reads (leader/follower): a caller whose replies have not come takes the
 * reader's role if nobody holds it, reads replies and hands each to its slot's caller until
 * its own are in, then passes the role to the oldest caller still waiting. memory:// runs each
 * command at once in the engine, under the connect lock (no round trip there).
 *
 * A lost connection (a failed write or read, a read timeout, a reply nobody waits for) fails
 * every slot in flight with EDDY_ERR_IO, each exactly once; the next call reconnects, once
 * neither the reader nor the writer still uses the old socket. Thread: any, except
 * init/destroy. */
#ifndef EDDY_BLOCKING_MUX_H
#define EDDY_BLOCKING_MUX_H

#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdbool.h>

#include "cmdlist.h"
#include "conn.h"
#include "pipeline.h"

typedef struct bmux {
    bconn conn;
    pthread_mutex_t connect_lock; /* one caller (re)connects at a time */
    pthread_mutex_t lock;         /* everything below */
    pthread_mutex_t io;           /* the link's calls (after lock when both are taken) */
    pthread_cond_t idle;          /* a broken connection's reader or writer left */
    eddy__pipeline fifo;
    bool up;      /* connected: conn.link is the socket */
    bool reading; /* a caller holds the reader's role */
    bool writing; /* a caller holds the writer's role: it writes `out` until it is empty */
    bool broken;  /* lost: reconnect once neither role is held */
    eddy_error lost;
} bmux;

/* EDDY_ERR_NOMEM (then bmux_destroy all the same). */
eddy_status bmux_init(bmux *m, const eddy__settings *s);
void bmux_destroy(bmux *m);
/* Connects now unless connected (bus start fails early on a wrong URL). */
eddy_status bmux_connect(bmux *m, eddy_error *err);
/* Sends cmds as one contiguous run and waits for their replies (as bconn_exec, without a
 * blocking read: the caller frees the replies; on failure each is NULL), for at most
 * settings.command_timeout_ms. */
eddy_status bmux_exec(bmux *m, const eddy__cmdlist *cmds, redisReply **replies, eddy_error *err);
/* The same until `deadline` (monotonic ms, bconn_now_ms): past it EDDY_ERR_IO when its commands
 * were not all written, EDDY_ERR_TIMEOUT when they were (sent, outcome unknown), and the
 * connection is given up for every caller in flight (each failing the same way: timed out if
 * sent, EDDY_ERR_IO if not); the next call reconnects. */
eddy_status bmux_exec_until(bmux *m, const eddy__cmdlist *cmds, long long deadline,
                            redisReply **replies, eddy_error *err);

#endif
