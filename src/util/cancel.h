/* SPDX-License-Identifier: BSD-3-Clause */
/* The cancellation token (eddy_cancel, bus.h), one for every call that waits or is in flight:
 * blocking requests, a blocking feed's catch-up, go-live and accept, and reactive requests.
 * What a call needs told registers while the call is on:
 * - a waiter (blocking) registers its mutex and condition variable: a fire sets the flag and
 *   wakes each one, taking the waiter's mutex, which closes the gap between its check of the
 *   flag and its wait;
 * - a call in flight on a loop (reactive) registers a function: a fire takes each such
 *   registration off the token, then calls it, one at a time and without the token's lock, so
 *   the function may complete calls (and so detach other registrations) as it likes. It runs
 *   on the thread that fires, which for a reactive call must be the loop's. */
#ifndef EDDY_SRC_CANCEL_H
#define EDDY_SRC_CANCEL_H

#include <pthread.h>

#include "eddy/bus.h"

typedef struct eddy__cancel_reg {
    pthread_mutex_t *m; /* a waiter's: woken with cond */
    pthread_cond_t *cond;
    void (*fired)(struct eddy__cancel_reg *r); /* or a call's: run once, off the token */
    struct eddy__cancel_reg *next;
} eddy__cancel_reg;

/* Registers r on c (NULL: no-op) until eddy__cancel_detach or, for a function, until it runs. */
void eddy__cancel_attach(eddy_cancel *c, eddy__cancel_reg *r);
/* Takes r off c when it is still on it (detaching twice, or after it ran, is a no-op). */
void eddy__cancel_detach(eddy_cancel *c, eddy__cancel_reg *r);

#endif
