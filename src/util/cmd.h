/* SPDX-License-Identifier: BSD-3-Clause */
/* A Redis command as an argument vector, built by the core and sent unchanged by a front end
 * (hiredis redisCommandArgv / redisAsyncCommandArgv) or executed by the memory engine.
 * Arguments are copied into the command; it owns them. The argument pointers, their lengths
 * and all argument bytes (each NUL-terminated) live in one block, so a command whose builder
 * reserves its size costs one allocation however many arguments it has: argv[i] points into
 * that block and is valid until the next append, reserve or the reset. */
#ifndef EDDY_SRC_CMD_H
#define EDDY_SRC_CMD_H

#include <stddef.h>

#include "eddy/status.h"

typedef struct eddy__cmd {
    int argc;
    char **argv;     /* the block's start (freed by the reset) */
    size_t *argvlen; /* in the block, behind cap argument slots */
    int cap;
    int failed; /* an append ran out of memory; the command must not be sent */
    char *buf;  /* in the block: the arguments' bytes, back to back */
    size_t used, bufcap;
} eddy__cmd;

void eddy__cmd_init(eddy__cmd *cmd);
/* Releases every argument and empties the command; it can be reused afterwards. */
void eddy__cmd_reset(eddy__cmd *cmd);
/* Makes room for args more arguments of bytes bytes in all (their NULs not counted), so that
 * appending them allocates nothing; a builder that knows its size calls it first. A guess too
 * small only costs a later doubling. On OOM marks the command failed. */
void eddy__cmd_reserve(eddy__cmd *cmd, int args, size_t bytes);
/* Appends a binary-safe argument. On OOM marks the command failed (checked at the end). */
void eddy__cmd_arg(eddy__cmd *cmd, const void *bytes, size_t len);
void eddy__cmd_str(eddy__cmd *cmd, const char *s);
void eddy__cmd_fmt(eddy__cmd *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void eddy__cmd_u64(eddy__cmd *cmd, unsigned long long v);
/* EDDY_OK, or EDDY_ERR_NOMEM if any append failed. */
eddy_status eddy__cmd_status(const eddy__cmd *cmd);
/* The command in RESP, as hiredis's redisFormatCommandArgv writes it ("*<argc>\r\n" then
 * "$<len>\r\n<bytes>\r\n" per argument), for redisAppendFormattedCommand: formatting it here
 * costs a fraction of hiredis's sds formatting. eddy__cmd_resp_size bytes are written at out;
 * the end is returned. */
size_t eddy__cmd_resp_size(const eddy__cmd *cmd);
char *eddy__cmd_resp_write(const eddy__cmd *cmd, char *out);
/* Const views for hiredis and the memory engine. */
static inline const char **eddy__cmd_argv(const eddy__cmd *cmd) { return (const char **)cmd->argv; }

#endif
