/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared reads on the blocking front end (src/bus/wakeup.h has the design; docs/threads.md the
 * overview): a bus with settings.share_reads_from subscriptions or more reads them with two
 * threads and two connections of this object's, whatever their count:
 *
 *   - the wake thread sends the core wake-up's plan on a connection of its own (one blocking
 *     XREAD over every watched stream; it takes nothing from any group) and marks the
 *     subscriptions whose streams have news due;
 *   - the read thread plans every due subscription (its consumer, as a reader thread of its
 *     own would, except that a consumer sharing the wake-up never plans to block unless it is
 *     hot) and sends all their plans as one pipeline on the shared read connection, then feeds
 *     each subscription its replies and hands its deliveries to the workers.
 *
 * A subscription whose plan blocks (a hot stream, consumer.h) is handed to a reader thread of
 * its own with that plan (reader.c), which reads on the subscription's own connection until a
 * plan of its idles; then it closes that connection, gives the subscription back, and ends.
 *
 * Who drives a subscription's consumer (plan, feed, reset: one thread at a time) is its place
 * in the core's share (src/bus/share.h: SHARED, ROUND: the read thread's, OWN: a reader thread
 * of its own, OFF), under this object's lock. A settle, a pause or a wake-up makes it due
 * (eddy__bshare_kick); an idle plan sets when it is due next. Stopping a
 * subscription (eddy__bshare_detach) waits out a round it is in; lock order: a subscription's
 * lock, then the core wake-up's, then this one.
 *
 * Thread: every function is safe from any thread. */
#ifndef EDDY_BLOCKING_SHARE_H
#define EDDY_BLOCKING_SHARE_H

#include <stdbool.h>

#include "bus/share.h"
#include "bus/wakeup.h"
#include "eddy/blocking.h"

typedef struct bshare bshare;
struct bsub;

/* NULL on OOM. The bus is borrowed and must outlive it. */
bshare *eddy__bshare_new(eddy_bus *bus);
/* After eddy__bshare_stop. NULL is a no-op. */
void eddy__bshare_free(bshare *s);
eddy__wakeup *eddy__bshare_wakeup(bshare *s);

/* Starts both threads unless they run. EDDY_ERR_NOMEM when a thread cannot be started. */
eddy_status eddy__bshare_start(bshare *s, eddy_error *err);
/* Ends both threads and drops their connections (every subscription detached first). */
void eddy__bshare_stop(bshare *s);

/* The read thread serves bs from now on (its first plan at once). EDDY_ERR_NOMEM. */
eddy_status eddy__bshare_attach(bshare *s, struct bsub *bs);
/* bs leaves: waits while the read thread has it in a round, then removes it. True when a
 * reader thread of its own had it (that thread then stops as any reader does); false when the
 * caller must send what bs settled itself. bs->stopping is set first. */
bool eddy__bshare_detach(bshare *s, struct bsub *bs);
/* bs plans again at once (it has news, settled deliveries, or a pause or resume). */
void eddy__bshare_kick(bshare *s, struct bsub *bs);
/* From the read thread (reader.c), whose plan for bs blocks: starts bs's reader thread
 * (fn(bs); the last one, which gave bs back, is joined first), which has bs from now on and
 * sends that plan first (bs->handed). False, with bs still in the round, when no thread could be
 * started. Under the lock, so a detach sees a thread to join with OWN; after true the caller
 * must not touch bs again. */
bool eddy__bshare_own(bshare *s, struct bsub *bs, void *(*fn)(void *));
/* From bs's reader thread, whose plan idled until next_at (monotonic ms): the read thread
 * serves bs again. False (nothing changed) when bs is leaving: the thread then stops. */
bool eddy__bshare_give_back(bshare *s, struct bsub *bs, long long next_at);
/* From the read thread after its plans: a consumer watched a stream (cut: one the wake-up's
 * blocking read in flight does not cover, which is then cut short so that it plans again). */
void eddy__bshare_watched(bshare *s, bool cut);

#endif
