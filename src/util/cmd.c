/* SPDX-License-Identifier: BSD-3-Clause */
/* Argument-vector commands: owned, binary-safe arguments packed into one growable buffer (so a
 * command costs a fixed number of allocations, not one per argument). An allocation
 * failure marks the command failed instead of returning at every append, so builders stay
 * linear; eddy__cmd_status is checked once before sending. */
#include "util/cmd.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
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

static bool grow_vectors(eddy__cmd *cmd) {
    int cap = cmd->cap ? cmd->cap * 2 : 16;
    char **argv = realloc(cmd->argv, (size_t)cap * sizeof(*argv));
    if (!argv)
        return false;
    cmd->argv = argv;
    size_t *lens = realloc(cmd->argvlen, (size_t)cap * sizeof(*lens));
    if (!lens)
        return false;
    cmd->argvlen = lens;
    cmd->cap = cap;
    return true;
}

/* Room for `need` more bytes; the argument pointers follow the buffer when it moves. */
static bool grow_buffer(eddy__cmd *cmd, size_t need) {
    if (need > SIZE_MAX / 2 - cmd->used)
        return false;
    size_t cap = cmd->bufcap ? cmd->bufcap * 2 : 256;
    if (cap < cmd->used + need)
        cap = cmd->used + need;
    char *buf = realloc(cmd->buf, cap);
    if (!buf)
        return false;
    if (buf != cmd->buf) {
        size_t off = 0;
        for (int i = 0; i < cmd->argc; i++) {
            cmd->argv[i] = buf + off;
            off += cmd->argvlen[i] + 1;
        }
    }
    cmd->buf = buf;
    cmd->bufcap = cap;
    return true;
}

void eddy__cmd_arg(eddy__cmd *cmd, const void *bytes, size_t len) {
    if (cmd->failed)
        return;
    if ((cmd->argc == cmd->cap && !grow_vectors(cmd)) ||
        (cmd->bufcap - cmd->used < len + 1 && !grow_buffer(cmd, len + 1))) {
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
