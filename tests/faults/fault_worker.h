/* SPDX-License-Identifier: BSD-3-Clause */
/* What fault_worker's modes share (fault_worker.c). */
#ifndef EDDY_FAULT_WORKER_H
#define EDDY_FAULT_WORKER_H

#include <stdarg.h>
#include <stdbool.h>

/* Prints one line on stdout, the suite's pipe (exits when the suite is gone). */
void fw_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* SIGTERM was received. */
bool fw_stop_asked(void);

/* The feed listener (worker_feed.c): a[0] frontend, a[1] url, a[2] ns, a[3] subject, a[4]
 * group, a[5] dedup_cache_size, a[6] file the read model is written to at the end, a[7] NULL or
 * "resume" (the model is kept in Redis and the replay resumes after its position). */
int fw_feed(bool reactive, char **a);

#endif
