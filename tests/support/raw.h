/* SPDX-License-Identifier: BSD-3-Clause */
/* Raw commands against a test's backend, bypassing eddy's checks: writing malformed entries,
 * reading dead-letter streams, counting pending entries. Works for memory://name (through the
 * same in-process engine the bus uses) and redis://127.0.0.1:port. */
#ifndef EDDY_TEST_RAW_H
#define EDDY_TEST_RAW_H

#include <hiredis/hiredis.h>
#include <stdbool.h>

/* Runs one command given as NUL-terminated strings (argv[argc]); fails the test on transport
 * errors. The caller frees the reply with freeReplyObject. */
redisReply *raw_cmd(const char *url, int argc, const char **argv);
/* Same, with printf-like splitting on single spaces (no binary arguments). */
redisReply *raw_cmdf(const char *url, const char *fmt, ...);
/* The integer a command answers, or -1. */
long long raw_int(const char *url, const char *fmt, ...);
/* Appends reply r to the text in out (size bytes, NUL-terminated), every array in full, to
 * compare two backends' answers; with mask_ids, an automatic stream id (a clock's milliseconds,
 * which differ between runs) reads "ID". */
void raw_render(char *out, size_t size, const redisReply *r, bool mask_ids);
/* The reply that RESP text (one whole reply) stands for, as hiredis parses it off a socket;
 * fails the test when the text is not one. The caller frees it with freeReplyObject. */
redisReply *raw_parse(const char *resp);
/* The same for len bytes of binary RESP (NUL bytes and all). */
redisReply *raw_parse_len(const char *resp, size_t len);

#endif
