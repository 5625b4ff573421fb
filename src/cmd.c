/* Argument-vector commands: growable arrays of owned, binary-safe arguments. An allocation
 * failure marks the command failed instead of returning at every append, so builders stay
 * linear; eddy__cmd_status is checked once before sending. The arguments' bytes share one
 * growing buffer (a publish has about 20 arguments: one allocation instead of 20); argv points
 * into it and is moved with it when it grows. */
#include "cmd.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void eddy__cmd_init(eddy__cmd *cmd) { memset(cmd, 0, sizeof(*cmd)); }

void eddy__cmd_reset(eddy__cmd *cmd) {
    free(cmd->buf);
    free(cmd->argv);
    free(cmd->argvlen);
    eddy__cmd_init(cmd);
}

/* Room for need more bytes in buf; argv follows the buffer when it moves. */
static int reserve(eddy__cmd *cmd, size_t need) {
    if (cmd->used + need <= cmd->bufcap)
        return 1;
    size_t cap = cmd->bufcap ? cmd->bufcap * 2 : 256;
    while (cap < cmd->used + need)
        cap *= 2;
    char *buf = realloc(cmd->buf, cap);
    if (!buf)
        return 0;
    char *at = buf;
    for (int i = 0; i < cmd->argc; i++) {
        cmd->argv[i] = at;
        at += cmd->argvlen[i] + 1;
    }
    cmd->buf = buf;
    cmd->bufcap = cap;
    return 1;
}

void eddy__cmd_arg(eddy__cmd *cmd, const void *bytes, size_t len) {
    if (cmd->failed)
        return;
    if (cmd->argc == cmd->cap) {
        int cap = cmd->cap ? cmd->cap * 2 : 16;
        char **argv = realloc(cmd->argv, (size_t)cap * sizeof(*argv));
        if (!argv) {
            cmd->failed = 1;
            return;
        }
        cmd->argv = argv;
        size_t *lens = realloc(cmd->argvlen, (size_t)cap * sizeof(*lens));
        if (!lens) {
            cmd->failed = 1;
            return;
        }
        cmd->argvlen = lens;
        cmd->cap = cap;
    }
    if (!reserve(cmd, len + 1)) {
        cmd->failed = 1;
        return;
    }
    char *copy = cmd->buf + cmd->used;
    if (len)
        memcpy(copy, bytes, len);
    copy[len] = '\0';
    cmd->used += len + 1;
    cmd->argv[cmd->argc] = copy;
    cmd->argvlen[cmd->argc] = len;
    cmd->argc++;
}

void eddy__cmd_str(eddy__cmd *cmd, const char *s) { eddy__cmd_arg(cmd, s, strlen(s)); }

void eddy__cmd_fmt(eddy__cmd *cmd, const char *fmt, ...) {
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (n < 0) {
        cmd->failed = 1;
        return;
    }
    if ((size_t)n < sizeof(small)) {
        eddy__cmd_arg(cmd, small, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) {
        cmd->failed = 1;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    eddy__cmd_arg(cmd, big, (size_t)n);
    free(big);
}

void eddy__cmd_u64(eddy__cmd *cmd, unsigned long long v) { eddy__cmd_fmt(cmd, "%llu", v); }

eddy_status eddy__cmd_status(const eddy__cmd *cmd) {
    return cmd->failed ? EDDY_ERR_NOMEM : EDDY_OK;
}
