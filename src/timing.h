/* SPDX-License-Identifier: BSD-3-Clause */
/* How long the front ends wait, decided once for both: how long starting may take before a
 * subscription counts as unreachable, how long a command may wait for its reply, and how long
 * to pause before planning again after running out of memory. */
#ifndef EDDY_SRC_TIMING_H
#define EDDY_SRC_TIMING_H

#include "settings.h"

/* A reader or control loop whose planning ran out of memory (nothing was sent) plans again after
 * this long. */
#define EDDY__NOMEM_RETRY_MS 100

/* How long a subscription may take to become ready (eddy__consumer_ready) after it was
 * started: a connect and a couple of reconnect attempts. */
long long eddy__ready_timeout_ms(const eddy__settings *s);

/* How long a call may wait for the replies of its commands (settings.command_timeout_ms), a
 * blocking read of block_ms (>= 0; -1 for none) included: block_ms more. */
long long eddy__command_timeout_ms(const eddy__settings *s, long long block_ms);

/* Monotonic milliseconds. */
long long eddy__mono_ms(void);

#endif
