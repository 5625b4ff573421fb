/* SPDX-License-Identifier: BSD-3-Clause */
/* The blocking front end's cancellation token (eddy_cancel, bus.h), one for every call that
 * waits: requests, and a feed's catch-up, go-live and accept. A waiter registers its own mutex
 * and condition variable while it waits; a fire sets the flag and wakes each one registered,
 * taking the waiter's mutex, which closes the gap between its check of the flag and its wait. */
#ifndef EDDY_BLOCKING_CANCEL_H
#define EDDY_BLOCKING_CANCEL_H

#include <pthread.h>

#include "eddy/bus.h"

typedef struct eddy__cancel_reg {
    pthread_mutex_t *m;
    pthread_cond_t *cond;
    struct eddy__cancel_reg *next;
} eddy__cancel_reg;

/* Registers r on c (NULL: no-op) until eddy__cancel_detach. */
void eddy__cancel_attach(eddy_cancel *c, eddy__cancel_reg *r);
void eddy__cancel_detach(eddy_cancel *c, eddy__cancel_reg *r);

#endif
