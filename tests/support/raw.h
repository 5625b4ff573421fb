/* SPDX-License-Identifier: BSD-3-Clause */
/* Raw commands against a test's backend, bypassing eddy's checks: writing malformed entries,
 * reading dead-letter streams, counting pending entries. Works for memory://name (through the
 * same in-process engine the bus uses) and redis://127.0.0.1:port. */
#ifndef EDDY_TEST_RAW_H
#define EDDY_TEST_RAW_H

#include <hiredis/hiredis.h>

/* Runs one command given as NUL-terminated strings (argv[argc]); fails the test on transport
 * errors. The caller frees the reply with freeReplyObject. */
redisReply *raw_cmd(const char *url, int argc, const char **argv);
/* Same, with printf-like splitting on single spaces (no binary arguments). */
redisReply *raw_cmdf(const char *url, const char *fmt, ...);
/* The integer a command answers, or -1. */
long long raw_int(const char *url, const char *fmt, ...);

#endif
