/* SPDX-License-Identifier: BSD-3-Clause */
/* Formats a message on the stack and hands it to the user's hook. Messages longer than the
 * buffer are cut, never allocated: logging happens on error paths. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>

void eddy__log(const eddy__logger *log, eddy_log_level level, const char *fmt, ...) {
    if (!log || !log->fn)
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    log->fn(level, msg, log->user);
}

const char *eddy_log_level_name(eddy_log_level level) {
    switch (level) {
    case EDDY_LOG_DEBUG:
        return "debug";
    case EDDY_LOG_INFO:
        return "info";
    case EDDY_LOG_WARN:
        return "warn";
    case EDDY_LOG_ERROR:
        return "error";
    }
    return "unknown";
}
