/* The blocking bus's publishing connection, shared by every thread that publishes, requests
 * or registers: multiplexed, so that no lock is held across a round trip. A caller writes its
 * commands under a short lock (one contiguous run on the wire: a MULTI/EXEC or a publish batch
 * stays whole) and queues a slot for their replies in the core's FIFO (src/pipeline.h); then
 * one thread at a time reads (leader/follower): a caller whose replies have not come takes the
 * reader's role if nobody holds it, reads replies and hands each to its slot's caller until
 * its own are in, then passes the role to the oldest caller still waiting. memory:// runs each
 * command at once in the engine, under the write lock (no round trip there).
 *
 * A lost connection (a failed write or read, a read timeout, a reply nobody waits for) fails
 * every slot in flight with EDDY_ERR_IO, each exactly once; the next call reconnects, once no
 * reader still uses the old socket. Thread: any, except init/destroy. */
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
    pthread_mutex_t write_lock; /* one writer at a time: wire order; (re)connecting */
    pthread_mutex_t lock;       /* fifo, reading, broken, lost */
    pthread_cond_t idle;        /* a broken connection's reader left */
    eddy__pipeline fifo;
    bool reading; /* a caller holds the reader's role */
    bool broken;  /* lost: reconnect (under write_lock) once !reading */
    eddy_error lost;
    redisReader *reader; /* parses what the socket gave; only the reader's role touches it */
} bmux;

/* EDDY_ERR_NOMEM (then bmux_destroy all the same). */
eddy_status bmux_init(bmux *m, const eddy__settings *s);
void bmux_destroy(bmux *m);
/* Connects now unless connected (bus start fails early on a wrong URL). */
eddy_status bmux_connect(bmux *m, eddy_error *err);
/* Sends cmds as one contiguous run and waits for their replies (as bconn_exec, without a
 * blocking read: the caller frees the replies; on failure each is NULL). */
eddy_status bmux_exec(bmux *m, const eddy__cmdlist *cmds, redisReply **replies, eddy_error *err);

#endif
