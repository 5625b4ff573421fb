/* The worker pool that runs handlers in the blocking front end: a fixed set of threads and a
 * FIFO of jobs. */
#ifndef EDDY_BLOCKING_POOL_H
#define EDDY_BLOCKING_POOL_H

#include <stdbool.h>

typedef struct bpool bpool;

/* NULL when threads or memory cannot be had. */
bpool *bpool_new(unsigned threads);
/* Runs every job already submitted, then joins the threads. NULL is a no-op. */
void bpool_free(bpool *p);
/* Queues fn(arg); false on OOM (the caller runs it itself). Thread: any. */
bool bpool_submit(bpool *p, void (*fn)(void *arg), void *arg);

#endif
