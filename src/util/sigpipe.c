/* SPDX-License-Identifier: BSD-3-Clause */
/* See sigpipe.h. */
#include "util/sigpipe.h"

#include <pthread.h>
#include <time.h>

void eddy__sigpipe_block(eddy__sigpipe_guard *g) {
    sigset_t pipe_set, pending;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    sigpending(&pending);
    g->was_pending = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_set, &g->old_mask);
}

void eddy__sigpipe_restore(eddy__sigpipe_guard *g) {
    if (!g->was_pending) {
        sigset_t pipe_set, pending;
        sigemptyset(&pipe_set);
        sigaddset(&pipe_set, SIGPIPE);
        sigpending(&pending);
        if (sigismember(&pending, SIGPIPE) == 1) {
            struct timespec zero = {0, 0};
            sigtimedwait(&pipe_set, NULL, &zero); /* consume the one our write raised */
        }
    }
    pthread_sigmask(SIG_SETMASK, &g->old_mask, NULL);
}
