/* SPDX-License-Identifier: BSD-3-Clause */
/* The log hook, as the core holds it. The library never writes to stderr; without a hook,
 * messages are dropped. */
#ifndef EDDY_SRC_LOG_H
#define EDDY_SRC_LOG_H

#include "eddy/bus.h"

typedef struct eddy__logger {
    eddy_log_fn fn;
    void *user;
} eddy__logger;

void eddy__log(const eddy__logger *log, eddy_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
