/* SPDX-License-Identifier: BSD-3-Clause */
/* A libev loop on a thread of its own, for the feature drivers' reactive implementations
 * (store_driver, domain_driver, push_driver): a driver call is an op queued to the loop thread
 * (an ev_async wakes it); its start function runs there and calls the reactive API, and the
 * calling thread waits until rloop_finish(op) was called, from the start function (a refusal)
 * or from the API's completion callback. Several threads may wait on one loop at once. */
#ifndef EDDY_TEST_RLOOP_H
#define EDDY_TEST_RLOOP_H

#include <stdbool.h>

#include "eddy/status.h"

struct ev_loop;
typedef struct rloop rloop;

typedef struct rloop_op {
    struct rloop_op *next;
    void (*start)(struct rloop_op *op); /* on the loop thread */
    rloop *l;
    eddy_status st;
    bool done;
    int callbacks; /* completions counted by rloop_callback */
} rloop_op;

rloop *rloop_new(void);
/* Stops the loop thread and frees the loop; everything on it must be gone. */
void rloop_free(rloop *l);
struct ev_loop *rloop_loop(rloop *l);
/* Whether the calling thread is the loop thread. */
bool rloop_on_thread(const rloop *l);

/* Runs op->start(op) on the loop thread, waits for rloop_finish(op, ...) and returns its
 * status. */
eddy_status rloop_call(rloop *l, rloop_op *op, void (*start)(rloop_op *op));
/* Ends op with st (on the loop thread); the waiting caller returns. */
void rloop_finish(rloop_op *op, eddy_status st);
/* Checks a completion callback of op: it runs once and never inside the call that asked for
 * it (fails the test otherwise). */
void rloop_callback(rloop_op *op, const char *what);

/* Runs fn(arg) on the loop thread, waited for. */
void rloop_run(rloop *l, void (*fn)(void *arg), void *arg);

#endif
