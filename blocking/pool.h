/* SPDX-License-Identifier: BSD-3-Clause */
/* The worker pool that runs handlers in the blocking front end: a fixed set of threads and a
 * FIFO of jobs. Jobs are the caller's storage (nothing is allocated per job), so a reader can
 * hand a whole round to the workers with one allocation. */
#ifndef EDDY_BLOCKING_POOL_H
#define EDDY_BLOCKING_POOL_H

#include <pthread.h>
#include <stdbool.h>

typedef struct bpool bpool;

typedef struct bpool_job {
    void (*fn)(struct bpool_job *job);
    struct bpool_job *next; /* the pool's */
} bpool_job;

/* Starts a thread of the bus (worker, reader, control loop, the publishing connection's reader,
 * a push source's ticker or catch-up) with SIGPIPE blocked in it (sigpipe.h: a write to a
 * closed socket must not kill the process); the caller's mask is left as it was. 0 or
 * pthread_create's error. */
int eddy__bthread_start(pthread_t *t, void *(*fn)(void *), void *arg);

/* NULL when threads or memory cannot be had. */
bpool *eddy__bpool_new(unsigned threads);
/* Runs every job already submitted, then joins the threads. NULL is a no-op. */
void eddy__bpool_free(bpool *p);
/* The number of worker threads. */
unsigned eddy__bpool_threads(const bpool *p);
/* Queues n jobs, linked through `next` from first (the last one's next NULL), and wakes as
 * many workers. Ownership: each job stays the caller's and must live until its fn runs (fn may
 * free it). Thread: any. */
void eddy__bpool_submit(bpool *p, bpool_job *first, unsigned n);

#endif
