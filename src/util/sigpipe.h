/* SPDX-License-Identifier: BSD-3-Clause */
/* Writing to a socket the peer closed raises SIGPIPE, whose default action kills the process.
 * A library must not change process-wide signal handling, so each write to the backend runs
 * with SIGPIPE blocked in the writing thread, and a SIGPIPE it raised is consumed before the
 * mask is restored (the technique libcurl and OpenSSL users rely on). */
#ifndef EDDY_SRC_SIGPIPE_H
#define EDDY_SRC_SIGPIPE_H

#include <signal.h>
#include <stdbool.h>

typedef struct eddy__sigpipe_guard {
    sigset_t old_mask;
    bool was_pending;
} eddy__sigpipe_guard;

void eddy__sigpipe_block(eddy__sigpipe_guard *g);
void eddy__sigpipe_restore(eddy__sigpipe_guard *g);

#endif
