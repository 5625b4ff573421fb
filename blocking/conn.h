/* A blocking connection to the backend: a hiredis synchronous context for redis:// and
 * unix://, an engine connection for memory://. It only moves commands and replies; what to
 * send and what replies mean is decided in the core.
 *
 * Thread: one thread uses a connection at a time (callers lock), except bconn_interrupt and
 * bconn_resume, which any thread may call to stop a blocking read or a backoff sleep. */
#ifndef EDDY_BLOCKING_CONN_H
#define EDDY_BLOCKING_CONN_H

#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdbool.h>

#include "cmdlist.h"
#include "memory/engine.h"
#include "settings.h"

typedef struct bconn {
    const eddy__settings *s;
    redisContext *rc;
    eddy__mem_engine *engine;
    eddy__mem_conn *mc;
    pthread_mutex_t lock; /* guards in_read, interrupted and rc's fd against interrupt */
    pthread_cond_t wake;
    bool in_read;
    bool interrupted;
    bool woken;          /* bconn_wake: the next (or current) sleep returns at once, once */
    bool cut;            /* bconn_wake(cut): the next (or current) blocking read ends, once */
    bool want_id;        /* a reader's connection: learn its client id (CLIENT ID) at connect */
    bool blocking;       /* a round with a blocking read is out */
    long long client_id; /* the server's id for this connection, -1 unknown (guarded by lock) */
    unsigned attempt;    /* consecutive failed connects, for backoff */
    unsigned seed;
} bconn;

/* EDDY_ERR_NOMEM when the memory engine cannot be opened; bconn_destroy either way. */
eddy_status bconn_init(bconn *c, const eddy__settings *s);
/* Closes the connection and frees what bconn_init and connecting allocated. */
void bconn_destroy(bconn *c);

/* Connects (with the AUTH and SELECT handshake) unless already connected. */
eddy_status bconn_connect(bconn *c, eddy_error *err);
bool bconn_connected(const bconn *c);
/* Drops the connection (the next bconn_connect makes a new one). */
void bconn_close(bconn *c);

/* Sends every command of `cmds` as one pipeline and reads one reply each into replies (the
 * caller frees them with freeReplyObject). When block_ms >= 0 the last command is a blocking
 * read of about that long. On failure every reply is NULL, the connection is dropped (the next
 * bconn_connect makes a new one) and the status is EDDY_ERR_IO, or EDDY_ERR_CLOSED when
 * bconn_interrupt ended a blocking read. Connects first when needed. */
eddy_status bconn_exec(bconn *c, const eddy__cmdlist *cmds, long long block_ms,
                       redisReply **replies, eddy_error *err);

/* Sleeps ms milliseconds unless interrupted (returns false when interrupted). */
bool bconn_sleep(bconn *c, long long ms);
/* Sleeps the next backoff delay before a reconnect attempt (false when interrupted). */
bool bconn_backoff(bconn *c);

/* Makes a blocking read or sleep on this connection return at once, and every later one until
 * bconn_resume. Thread: any. */
void bconn_interrupt(bconn *c);
void bconn_resume(bconn *c);

/* A one-shot interrupt (a pause or resume): ends the current or next sleep, and with cut the
 * current or next blocking read too (EDDY_ERR_CLOSED; on redis:// the connection is dropped,
 * as for an interrupt). The reader clears both with bconn_wake_clear just before it plans, so a
 * wake that came before the plan does not cut the read that plan makes. Returns, when cut
 * found a blocking read out on a redis:// connection whose client id is known (want_id), that
 * id, else -1: the caller then has the server drop the client (CLIENT KILL ID on another
 * connection), which, unlike our own shutdown, takes effect before anything written after it,
 * so the cut read takes nothing published afterwards. Thread: any. */
long long bconn_wake(bconn *c, bool cut);
void bconn_wake_clear(bconn *c);

/* CLOCK_MONOTONIC milliseconds, and a condition variable whose timed waits use that clock. */
long long bconn_now_ms(void);
void bcond_init_monotonic(pthread_cond_t *cond);

#endif
