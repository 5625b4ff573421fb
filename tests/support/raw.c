/* SPDX-License-Identifier: BSD-3-Clause */
/* See raw.h. */
#include "raw.h"

#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memory/engine.h"

redisReply *raw_cmd(const char *url, int argc, const char **argv) {
    size_t lens[64];
    cr_assert(argc <= 64);
    for (int i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    if (strncmp(url, "memory://", 9) == 0) {
        eddy__mem_engine *e = eddy__mem_engine_acquire(url + 9);
        eddy__mem_conn *c = eddy__mem_conn_new(e);
        long long block = -1;
        redisReply *r = eddy__mem_exec(c, argc, argv, lens, &block);
        eddy__mem_conn_free(c);
        eddy__mem_engine_release(e);
        cr_assert(r, "memory engine returned no reply");
        return r;
    }
    int port = 0;
    cr_assert(sscanf(url, "redis://127.0.0.1:%d", &port) == 1, "bad url %s", url);
    redisContext *c = redisConnect("127.0.0.1", port);
    cr_assert(c && !c->err, "cannot connect to %s", url);
    redisReply *r = redisCommandArgv(c, argc, argv, lens);
    redisFree(c);
    cr_assert(r, "no reply from %s", url);
    return r;
}

static redisReply *raw_vcmdf(const char *url, const char *fmt, va_list ap) {
    char buf[2048];
    vsnprintf(buf, sizeof(buf), fmt, ap);
    const char *argv[64];
    int argc = 0;
    for (char *tok = strtok(buf, " "); tok && argc < 64; tok = strtok(NULL, " "))
        argv[argc++] = tok;
    return raw_cmd(url, argc, argv);
}

redisReply *raw_cmdf(const char *url, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = raw_vcmdf(url, fmt, ap);
    va_end(ap);
    return r;
}

long long raw_int(const char *url, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = raw_vcmdf(url, fmt, ap);
    va_end(ap);
    long long v = r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    freeReplyObject(r);
    return v;
}

void raw_render(char *out, size_t size, const redisReply *r, bool mask_ids) {
    size_t n = strlen(out);
    switch (r->type) {
    case REDIS_REPLY_ARRAY:
        snprintf(out + n, size - n, "[");
        for (size_t i = 0; i < r->elements; i++)
            raw_render(out, size, r->element[i], mask_ids);
        n = strlen(out);
        snprintf(out + n, size - n, "] ");
        break;
    case REDIS_REPLY_INTEGER:
        snprintf(out + n, size - n, ":%lld ", r->integer);
        break;
    case REDIS_REPLY_NIL:
        snprintf(out + n, size - n, "nil ");
        break;
    default: {
        char ms[32];
        bool id = mask_ids && sscanf(r->str, "%31[0-9]-%*[0-9]", ms) == 1 && strlen(ms) >= 12;
        snprintf(out + n, size - n, "%c%s ", r->type == REDIS_REPLY_ERROR ? '-' : '+',
                 id ? "ID" : r->str);
    }
    }
}

redisReply *raw_parse_len(const char *resp, size_t len) {
    redisReader *rd = redisReaderCreate();
    cr_assert(rd, "out of memory");
    void *reply = NULL;
    cr_assert_eq(redisReaderFeed(rd, resp, len), REDIS_OK);
    cr_assert_eq(redisReaderGetReply(rd, &reply), REDIS_OK);
    cr_assert(reply, "incomplete RESP: %.*s", (int)len, resp);
    redisReaderFree(rd);
    return reply;
}

redisReply *raw_parse(const char *resp) { return raw_parse_len(resp, strlen(resp)); }
