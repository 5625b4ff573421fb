/* SPDX-License-Identifier: BSD-3-Clause */
/* Argument-vector commands: owned, binary-safe arguments packed into one growable block with
 * their pointers and lengths (so a command costs one allocation, or one per doubling when its
 * builder does not reserve, never one per argument). An allocation
 * failure marks the command failed instead of returning at every append, so builders stay
 * linear; eddy__cmd_status is checked once before sending. */
#include "util/cmd.h"

#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void eddy__cmd_init(eddy__cmd *cmd) { memset(cmd, 0, sizeof(*cmd)); }

void eddy__cmd_reset(eddy__cmd *cmd) {
    free(cmd->argv); /* the block: argv, argvlen and buf */
    eddy__cmd_init(cmd);
}

/* Moves the command into one new block of cap argument slots and bufcap bytes (each at least
 * what it holds), so that argv, argvlen and the bytes stay one allocation. */
static bool relayout(eddy__cmd *cmd, size_t cap, size_t bufcap) {
    if (cap > INT_MAX || cap > (SIZE_MAX / 2 - bufcap) / (sizeof(char *) + sizeof(size_t)))
        return false;
    char **argv = malloc(cap * (sizeof(char *) + sizeof(size_t)) + bufcap);
    if (!argv)
        return false;
    size_t *lens = (size_t *)(argv + cap);
    char *buf = (char *)(lens + cap);
    if (cmd->used)
        memcpy(buf, cmd->buf, cmd->used);
    size_t off = 0;
    for (int i = 0; i < cmd->argc; i++) {
        lens[i] = cmd->argvlen[i];
        argv[i] = buf + off;
        off += lens[i] + 1;
    }
    free(cmd->argv);
    cmd->argv = argv;
    cmd->argvlen = lens;
    cmd->buf = buf;
    cmd->cap = (int)cap;
    cmd->bufcap = bufcap;
    return true;
}

/* Room for one more argument of len bytes: doubles what is short (16 slots and 256 bytes at
 * first), unless eddy__cmd_reserve made room already. */
static bool make_room(eddy__cmd *cmd, size_t len) {
    size_t cap = (size_t)cmd->cap, bufcap = cmd->bufcap;
    if (len >= SIZE_MAX / 4 - cmd->used)
        return false;
    if (cmd->argc == cmd->cap)
        cap = cap ? cap * 2 : 16;
    if (bufcap - cmd->used < len + 1) {
        bufcap = bufcap ? bufcap * 2 : 256;
        if (bufcap < cmd->used + len + 1)
            bufcap = cmd->used + len + 1;
    }
    return relayout(cmd, cap, bufcap);
}

void eddy__cmd_reserve(eddy__cmd *cmd, int args, size_t bytes) {
    if (cmd->failed || args < 0)
        return;
    size_t cap = (size_t)cmd->argc + (size_t)args, bufcap = cmd->used;
    if (bytes >= SIZE_MAX / 4 - bufcap) {
        cmd->failed = 1;
        return;
    }
    bufcap += bytes + (size_t)args; /* each argument's NUL */
    if (cap <= (size_t)cmd->cap && bufcap <= cmd->bufcap)
        return;
    if (cap < (size_t)cmd->cap)
        cap = (size_t)cmd->cap;
    if (bufcap < cmd->bufcap)
        bufcap = cmd->bufcap;
    if (!relayout(cmd, cap, bufcap))
        cmd->failed = 1;
}

void eddy__cmd_arg(eddy__cmd *cmd, const void *bytes, size_t len) {
    if (cmd->failed)
        return;
    if ((cmd->argc == cmd->cap || cmd->bufcap - cmd->used < len + 1) && !make_room(cmd, len)) {
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

static size_t digits(size_t v) {
    size_t n = 1;
    while (v >= 10) {
        v /= 10;
        n++;
    }
    return n;
}

/* Writes v in decimal at out; returns the end. */
static char *put_size(char *out, size_t v) {
    char tmp[24];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        *out++ = tmp[--n];
    return out;
}

size_t eddy__cmd_resp_size(const eddy__cmd *cmd) {
    size_t size = 1 + digits((size_t)cmd->argc) + 2;
    for (int i = 0; i < cmd->argc; i++)
        size += 1 + digits(cmd->argvlen[i]) + 2 + cmd->argvlen[i] + 2;
    return size;
}

char *eddy__cmd_resp_write(const eddy__cmd *cmd, char *out) {
    *out++ = '*';
    out = put_size(out, (size_t)cmd->argc);
    *out++ = '\r';
    *out++ = '\n';
    for (int i = 0; i < cmd->argc; i++) {
        *out++ = '$';
        out = put_size(out, cmd->argvlen[i]);
        *out++ = '\r';
        *out++ = '\n';
        memcpy(out, cmd->argv[i], cmd->argvlen[i]);
        out += cmd->argvlen[i];
        *out++ = '\r';
        *out++ = '\n';
    }
    return out;
}
