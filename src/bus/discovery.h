/* SPDX-License-Identifier: BSD-3-Clause */
/* Subject discovery shared by a bus's pattern subscriptions, so that its cost does not grow
 * with their number: one SMEMBERS of the namespace's subject set every discovery_ms for the
 * whole bus.
 *
 * The subjects found so far form an append-only list (the set only grows: publishers add a
 * subject before its first entry and nothing removes one). Each consumer keeps how far into
 * the list it has looked and takes the subjects after that. Each consumer still makes its own
 * first discovery, which fixes its start point exactly (consumer.h: streams known then get
 * their group at "$"); every subject it finds in the list later and did not know then is newer
 * than the subscription.
 *
 * One consumer at a time sends the shared discovery: the one that sent the last (the owner),
 * so only its waits are bounded by the next one; another takes over when the owner leaves or
 * has let a discovery go unsent for two intervals (its reader is stuck reconnecting).
 *
 * Thread: every function is safe from any thread (one lock). */
#ifndef EDDY_SRC_DISCOVERY_H
#define EDDY_SRC_DISCOVERY_H

#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct eddy__discovery eddy__discovery;

/* NULL on OOM. */
eddy__discovery *eddy__discovery_new(unsigned interval_ms);
void eddy__discovery_free(eddy__discovery *d);

/* True when `who` should send the discovery now; it is then in flight until `who` feeds its
 * reply (eddy__discovery_feed) or gives it up (eddy__discovery_leave). */
bool eddy__discovery_take(eddy__discovery *d, const void *who, long long now_ms);
/* When `who` must plan again for the next discovery: the time it is due for the owner (or
 * when there is none), else a time far away. */
long long eddy__discovery_due(eddy__discovery *d, const void *who);
/* Adds the subjects of an SMEMBERS reply (anything else is ignored) that are not listed yet;
 * ends the discovery `who` had in flight, if any. True when subjects were added. */
bool eddy__discovery_feed(eddy__discovery *d, const void *who, const redisReply *r,
                          long long now_ms);
/* `who` stops taking part (its reader stops or lost its connection): a discovery it had in
 * flight is given up, and it is no longer the owner. */
void eddy__discovery_leave(eddy__discovery *d, const void *who);

/* Calls fn on each subject listed after *seen, then moves *seen to the end. fn runs under the
 * lock: it must not call back into the discovery. fn returning false stops the walk there
 * (*seen stays at that subject, which is offered again next time). */
void eddy__discovery_each_new(eddy__discovery *d, size_t *seen,
                              bool (*fn)(const char *subject, void *user), void *user);

#endif
