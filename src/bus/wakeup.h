/* SPDX-License-Identifier: BSD-3-Clause */
/* The bus-wide wake-up, which both front ends drive (reactive/wake.c, blocking/share.c).
 *
 * Without it each subscription's reader ties up a connection (and, on the blocking front end,
 * a thread) with a blocking XREADGROUP of its own: a bus with 1,000 subscriptions holds about
 * 1,000 connections and threads, and their idle reads time out about 1,000 times a second.
 * The design:
 *
 *   - one connection per bus (the "wake connection") carries a single blocking
 *     XREAD COUNT c BLOCK ms STREAMS k1 .. kn id1 .. idn over every stream a running,
 *     unpaused subscription reads live. It takes nothing from any group: it only learns which
 *     streams have entries after the ids it last saw;
 *   - the subscriptions watching a stream that has news are woken; each then makes its own
 *     non-blocking group read (its consumer plans exactly as today, with no BLOCK), pipelined
 *     with the other woken subscriptions' plans on a small, fixed set of shared connections;
 *     its state machine, pause, stop, pending entries and redelivery stay its own (consumer.h);
 *   - handlers run on the worker pool as today, so a slow handler holds only its own
 *     subscription's read batch: the other subscriptions' wakes and reads go on.
 * So a bus holds the wake connection, the shared read connections, the publishing and control
 * connections, whatever its subscription count; on the blocking front end one wake thread and
 * one read thread besides the workers.
 *
 * Ids without a race: a stream's id is fixed before the last non-blocking read of its
 * watchers, never after. When a stream is first watched (or after a lost connection) its id
 * is unknown: the plan is then XREVRANGE key + - COUNT 1 for each such stream (no blocking
 * read), the feed takes the newest id (0-0 for an empty or missing stream) and wakes every
 * watcher of the stream, whose next read covers everything up to that id; the XREAD then
 * starts after it, so an entry added meanwhile wakes them again (at most one read that finds
 * nothing). After an XREAD returns a stream's entries, its id moves to the last one returned;
 * COUNT is the read batch, so a burst longer than a batch costs one more wake per batch, and
 * the watchers' group reads (also a batch each) keep up.
 *
 * What it costs, at one subscription: one more round trip before a delivery (the XREAD's
 * answer, then the group read) and the entries cross the network twice (once in the XREAD,
 * once in the group read); at 1,000 it replaces 1,000 blocked connections with one.
 *
 * And per wake, an XREAD as wide as the bus: measured on Redis 7.0 (2 shared cores;
 * bench_subs, subs_wide_xread_server_us), a non-blocking XREAD over N streams costs the server
 * about 400 us of CPU at N = 1,000 (a round trip of 0.7-0.9 ms with hiredis), 33 us at N = 100
 * and under 1 us at N = 1. Idle, that is one call per block_ms for the whole bus, much less
 * than 1,000 reads timing out. But one hot stream among 1,000 would have the wide read sent
 * again after each of its entries: at 1,000 entries a second some 40% of a server core, and up
 * to a millisecond more latency. So hot streams stay out of it, as the consumer decides
 * (consumer.h, eddy__consumer_share_wakeup): one whose reads without BLOCK found entries twice
 * within 10 ms leaves the wake-up (unwatch) and plans blocking group reads of its own, which
 * the front end sends on a connection of that subscription's own (docs/threads.md), and comes
 * back (watch) once such a read finds nothing or waited 100 ms for what it found. At most
 * EDDY__WAKEUP_HOT_MAX streams of a bus are hot at once (below).
 *
 * The order the front ends aim for: the group reads a wake made go out before the next wide read.
 * The server runs one command at a time, so a woken read queued behind a wide XREAD waits its
 * 400 us, and the woken event with it. Holding the wide read back loses nothing: it starts
 * from the ids the last one ended at. The blocking front end's wake thread waits (briefly,
 * bounded) for the read thread's round that has them. The reactive one only comes close: it
 * kicks the woken activations, which queue their reads, before it plans the wide read in the
 * same callback, but both then go out when libev runs the two sockets' write watchers, in an
 * order libev does not promise (bench_subs finds its latency among 1,000 subscriptions at that
 * of one alone, so this was left as is).
 *
 * What a wake costs that no ordering removes: the XADD that wakes the wide XREAD is answered
 * only after the server has unblocked that client from every stream it waits on (some 500 us
 * over 1,000 streams on Redis 7.0), so a watched stream's publisher sees that much more on the
 * XADD that wakes it, and its first event that much more latency than on a bus of its own.
 *
 * Cluster: a bus's streams are all in its namespace's slot (keys.h: one hash tag), so one XREAD
 * over them is legal and stays on that slot's master.
 *
 * Thread: every function is safe from any thread (one lock); wake callbacks run under it and
 * must not call back into the wake-up. */
#ifndef EDDY_SRC_WAKEUP_H
#define EDDY_SRC_WAKEUP_H

#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stddef.h>

#include "eddy/status.h"
#include "util/cmdlist.h"

typedef struct eddy__wakeup eddy__wakeup;

/* Whether a bus of nsubs subscriptions shares its reads (settings.share_reads_from: 0 never). */
static inline bool eddy__wakeup_wanted(unsigned share_reads_from, size_t nsubs) {
    return share_reads_from != 0 && nsubs >= share_reads_from;
}

/* count: the XREAD's COUNT (the bus's read batch; 0 counts as 1). NULL on OOM. */
eddy__wakeup *eddy__wakeup_new(unsigned count);
void eddy__wakeup_free(eddy__wakeup *w);

/* `who` (borrowed, an identity only) watches the stream `key` (copied). Watching a stream
 * twice changes nothing. *replan is set true when the wake-up's current blocking read does not
 * cover the stream (the front end then cuts it short and plans again). EDDY_ERR_NOMEM on OOM. */
eddy_status eddy__wakeup_watch(eddy__wakeup *w, const char *key, const void *who, bool *replan);
/* `who` no longer watches `key` (or any stream, when key is NULL: it stops or pauses). A
 * stream nobody watches leaves the next plan. */
void eddy__wakeup_unwatch(eddy__wakeup *w, const char *key, const void *who);
/* Streams watched (by anyone). */
size_t eddy__wakeup_streams(eddy__wakeup *w);

/* Plans the next round trip into cmds (reset by the caller): XREVRANGE for each stream whose
 * id is unknown (then *block_out is -1: nothing blocks), else one blocking XREAD of block_ms
 * over every watched stream (*block_out = block_ms). Nothing to send when nothing is watched
 * (*block_out is -1 and cmds stays empty: the front end waits until a watch). */
eddy_status eddy__wakeup_plan(eddy__wakeup *w, long long block_ms, eddy__cmdlist *cmds,
                              long long *block_out);

/* replies[i] answers cmds->cmds[i] of the last plan (NULL: the connection failed, as reset).
 * Moves the ids and calls wake(who, user) once for each watcher of a stream that has news (or
 * whose id was just fixed). EDDY_ERR_PROTOCOL for a reply of the wrong shape (the ids it names
 * are then unknown again). */
eddy_status eddy__wakeup_feed(eddy__wakeup *w, const eddy__cmdlist *cmds, redisReply **replies,
                              size_t n, void (*wake)(const void *who, void *user), void *user);

/* The connection was lost: every id is unknown again (a restarted server may have lost or
 * trimmed streams), so the next plan fixes them and wakes every watcher. */
void eddy__wakeup_reset(eddy__wakeup *w);

/* Hot streams read alone, each on a connection (and, blocking, a thread) of its own, so a bus
 * lets at most this many be hot at once: its connections and threads stay bounded whatever
 * its subscription count and however many of its streams are busy. Further busy streams stay
 * on the wake-up and pay its wide read (above). */
#define EDDY__WAKEUP_HOT_MAX 2

/* A consumer about to go hot takes one of the bus's hot places: false when all are taken (it
 * stays watched). eddy__wakeup_hot_give hands one back when it stops being hot. */
bool eddy__wakeup_hot_take(eddy__wakeup *w);
void eddy__wakeup_hot_give(eddy__wakeup *w);

#endif
