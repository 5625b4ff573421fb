/* SPDX-License-Identifier: BSD-3-Clause */
/* The blocking bus's publishing connection, shared by every thread that publishes, requests
 * or registers: multiplexed, so that no lock is held across a round trip. A caller queues its
 * commands under a short lock (one contiguous run on the wire: a MULTI/EXEC or a publish batch
 * stays whole) with a slot for their replies in the core's machine (src/link/mux.h); one thread
 * at a time writes (whoever finds nobody writing writes what is queued, its own and what others
 * queued meanwhile, so busy callers share a write instead of queueing for the socket); then
 * one thread at a time reads (leader/follower): a caller whose replies have not come takes the
 * reader's role if nobody holds it, reads replies and hands each to its slot's caller until
 * its own are in, then passes the role to the oldest caller still waiting. memory:// goes
 * through the link like any URL (its commands are handed to the link at once, never staged:
 * the memory link borrows them, and runs them when they are flushed or their replies taken).
 *
 * A caller may also send without waiting (eddy__bmux_send: a request's entry, whose outcome
 * comes from the reply stream): its replies are read by whoever reads, and while such slots
 * wait and nobody else reads, by the mux's own reader thread (started with the first such
 * send), so that the caller sleeps once, for its outcome, instead of once for the entry's
 * acknowledgement and once more for the outcome. The caller is told (on_done) as soon as its
 * replies are in or its commands failed; it collects the replies with eddy__bmux_finish.
 *
 * A lost connection (a failed write or read, a read timeout, a reply nobody waits for) fails
 * every slot in flight with EDDY_ERR_IO, each exactly once, after the publisher forgot what the
 * lost server held (publish_flow.h: eddy__publish_mux_settle); the next call reconnects, once
 * neither the reader nor the writer still uses the old socket. Thread: any, except
 * init/destroy. */
#ifndef EDDY_BLOCKING_MUX_H
#define EDDY_BLOCKING_MUX_H

#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "conn.h"
#include "link/mux.h"
#include "util/cmdlist.h"

/* One caller's slot (the mux's fields; the caller only allocates it, on its stack). */
typedef struct eddy__bmux_wait {
    eddy__mux_req req; /* in the core's machine (guarded by the mux's lock): its replies, its
                          deadline (monotonic ms), its outcome */
    pthread_mutex_t m; /* guards done, offered, async and finishing */
    pthread_cond_t cond;
    bool done;      /* its replies are in, or it failed: the caller may return */
    bool offered;   /* it is next and nobody reads: take the reader's role (never if async) */
    bool async;     /* eddy__bmux_send: its caller is not waiting in the mux (req.detached) */
    bool finishing; /* async: its caller waits in eddy__bmux_finish */
    void (*on_done)(void *user, bool failed); /* called once, before done */
    void *user;
    struct eddy__bmux_wait *next_c; /* on a list of callers to complete */
} eddy__bmux_wait;

/* Commands queued and not yet handed to the link: their RESP bytes back to back, and where
 * each caller's run ends (the link keeps a "written" mark per run). */
typedef struct eddy__bmux_stage {
    char *buf;
    size_t len, cap;
    struct eddy__bmux_run {
        size_t end, ncmds;
    } * runs;
    size_t nruns, runs_cap;
} eddy__bmux_stage;

typedef struct bmux {
    bconn conn;
    pthread_mutex_t connect_lock; /* one caller (re)connects at a time */
    pthread_mutex_t lock;         /* everything below */
    pthread_mutex_t io;           /* the link's calls (after lock when both are taken) */
    pthread_cond_t idle;          /* a broken connection's reader or writer left */
    /* The core's machine (src/link/mux.h): the slots in wire order, who reads and who writes,
     * whether the connection is lost (broken) and why, and what that means for each slot. */
    eddy__mux mux;
    bool up; /* connected: conn.link is the socket */
    /* Forgets what a lost server held (eddy__publish_mux_settle), under lock; set by the bus
     * once its core is made (NULL until then: nothing published yet). */
    struct eddy__publisher *publisher;
    /* Queued under `lock` alone, so that callers never wait for the link (held by the writer
     * while it writes); the writer hands the stage to the link, swapping in `spare`. */
    eddy__bmux_stage stage, spare;
    uint64_t numbered; /* the link's number of the last command staged */
    /* The reader thread: reads while async slots wait and no caller reads. */
    pthread_t reader;
    pthread_cond_t reader_cond; /* an async slot waits with nobody reading, or stop */
    bool reader_started, reader_wanted, reader_stop;
} bmux;

/* EDDY_ERR_NOMEM (then eddy__bmux_destroy all the same). */
eddy_status eddy__bmux_init(bmux *m, const eddy__settings *s);
void eddy__bmux_destroy(bmux *m);
/* Connects now unless connected (bus start fails early on a wrong URL). */
eddy_status eddy__bmux_connect(bmux *m, eddy_error *err);
/* Sends cmds as one contiguous run and waits for their replies (as eddy__bconn_exec, without a
 * blocking read: the caller frees the replies; on failure each is NULL) until `deadline`
 * (monotonic ms, eddy__mono_ms): past it EDDY_ERR_IO when its commands were not all written,
 * EDDY_ERR_TIMEOUT when they were (sent, outcome unknown), and the connection is given up for
 * every caller in flight (each failing the same way: timed out if sent, EDDY_ERR_IO if not); the
 * next call reconnects. */
eddy_status eddy__bmux_exec_until(bmux *m, const eddy__cmdlist *cmds, long long deadline,
                                  redisReply **replies, eddy_error *err);

/* Sends cmds as one contiguous run without waiting for their replies, which fill `replies`
 * (n = cmds->n, NULL first; the array and w must live until eddy__bmux_finish returns, and cmds
 * until on_done is called or finish returns: memory:// borrows them) by `deadline` as for
 * eddy__bmux_exec_until. EDDY_OK: queued (or, with no command, done at once): call
 * eddy__bmux_finish. Otherwise nothing was queued (w needs no finish) and err says why.
 * on_done(user, failed), when not NULL, is called once from whichever thread completes the
 * slot (no lock of the mux held; the caller's own thread too, in eddy__bmux_send or finish),
 * with its replies in, before finish can return: failed when it failed or a reply is an
 * error. */
eddy_status eddy__bmux_send(bmux *m, const eddy__cmdlist *cmds, long long deadline,
                            redisReply **replies, eddy__bmux_wait *w,
                            void (*on_done)(void *user, bool failed), void *user, eddy_error *err);
/* Waits until w's replies are in or it failed, and returns its status (err: why). */
eddy_status eddy__bmux_finish(bmux *m, eddy__bmux_wait *w, eddy_error *err);

#endif
