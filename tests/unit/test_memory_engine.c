/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests of the memory:// engine (no server): every command, its options and its error
 * replies (texts as Redis 7.0 writes them), MULTI/EXEC, key expiry, the registry, the write
 * sequence, waits and listeners, the blocking-read protocol (a thread blocked in XREADGROUP is
 * woken by an XADD from another thread), a concurrency smoke test (no entry lost or delivered
 * twice), out-of-memory injection on every allocation, the private data structures against
 * reference models, and a large stream.
 *
 * Replies are rendered as text: "str", +STATUS, -ERROR, 42, nil, [a,b]. Behaviour that only a
 * comparison with a real server can pin down lives in tests/integration/test_memory_vs_redis.c. */
#include <criterion/criterion.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "eddy_test.h"
#include "memory/engine.h"
#include "memory/internal.h"

/* ---- helpers ------------------------------------------------------------------------------ */

static eddy__mem_engine *eng;
static eddy__mem_conn *conn;

static void setup(void) {
    char name[96];
    eddy_test_namespace(name, sizeof(name), "memunit");
    eng = eddy__mem_engine_acquire(name);
    cr_assert(eng);
    conn = eddy__mem_conn_new(eng);
    cr_assert(conn);
}

static void check_invariants(void) {
    const char *err = eddy__mem_engine_check(eng);
    cr_assert_null(err, "engine invariant broken: %s", err ? err : "");
}

static void teardown(void) {
    eddy__falloc_fail_after(0, false);
    check_invariants();
    eddy__mem_conn_free(conn);
    eddy__mem_engine_release(eng);
}

TestSuite(memory, .init = setup, .fini = teardown);

typedef struct argvec {
    int argc;
    char *argv[128];
    size_t len[128];
} argvec;

static int hexval(char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c - 'A' + 10;
}

/* Splits on spaces; "..." quotes, with \r \n \\ \" and \xHH escapes inside. */
static void split(const char *p, argvec *a) {
    memset(a, 0, sizeof(*a));
    while (*p) {
        while (*p == ' ')
            p++;
        if (!*p)
            break;
        char *tok = malloc(strlen(p) + 1);
        size_t n = 0;
        if (*p == '"') {
            p++;
            while (*p && *p != '"') {
                if (*p == '\\' && p[1] == 'x') {
                    tok[n++] = (char)(hexval(p[2]) * 16 + hexval(p[3]));
                    p += 4;
                } else if (*p == '\\') {
                    p++;
                    tok[n++] = *p == 'r' ? '\r' : *p == 'n' ? '\n' : *p;
                    p++;
                } else {
                    tok[n++] = *p++;
                }
            }
            if (*p)
                p++;
        } else {
            while (*p && *p != ' ')
                tok[n++] = *p++;
        }
        tok[n] = '\0';
        cr_assert(a->argc < 128);
        a->argv[a->argc] = tok;
        a->len[a->argc++] = n;
    }
}

static void argvec_free(argvec *a) {
    for (int i = 0; i < a->argc; i++)
        free(a->argv[i]);
}

static redisReply *run_on(eddy__mem_conn *cn, const char *line, long long *block_ms) {
    argvec a;
    split(line, &a);
    redisReply *r = eddy__mem_exec(cn, a.argc, (const char **)a.argv, a.len, block_ms);
    argvec_free(&a);
    return r;
}

static redisReply *run(const char *line) {
    long long block_ms = -5;
    redisReply *r = run_on(conn, line, &block_ms);
    cr_assert(r, "`%s` returned NULL (block_ms %lld)", line, block_ms);
    return r;
}

typedef struct sbuf {
    char *p;
    size_t len, cap;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n) {
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        b->p = realloc(b->p, b->cap);
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void sb_bytes(sbuf *b, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch < 32 || ch >= 127 || ch == '"' || ch == '\\') {
            char esc[8];
            snprintf(esc, sizeof(esc), "\\x%02x", ch);
            sb_put(b, esc, 4);
        } else {
            sb_put(b, &s[i], 1);
        }
    }
}

static void render_into(sbuf *b, const redisReply *r) {
    char num[32];
    switch (r->type) {
    case REDIS_REPLY_STRING:
        sb_put(b, "\"", 1);
        sb_bytes(b, r->str, r->len);
        sb_put(b, "\"", 1);
        break;
    case REDIS_REPLY_STATUS:
        sb_put(b, "+", 1);
        sb_bytes(b, r->str, r->len);
        break;
    case REDIS_REPLY_ERROR:
        sb_put(b, "-", 1);
        sb_bytes(b, r->str, r->len);
        break;
    case REDIS_REPLY_INTEGER:
        snprintf(num, sizeof(num), "%lld", r->integer);
        sb_put(b, num, strlen(num));
        break;
    case REDIS_REPLY_NIL:
        sb_put(b, "nil", 3);
        break;
    case REDIS_REPLY_ARRAY:
        sb_put(b, "[", 1);
        for (size_t i = 0; i < r->elements; i++) {
            if (i)
                sb_put(b, ",", 1);
            render_into(b, r->element[i]);
        }
        sb_put(b, "]", 1);
        break;
    }
}

static char *render(const redisReply *r) {
    sbuf b = {0};
    sb_put(&b, "", 0);
    render_into(&b, r);
    return b.p;
}

static void expect_on(eddy__mem_conn *cn, const char *line, const char *want) {
    long long block_ms = -5;
    redisReply *r = run_on(cn, line, &block_ms);
    cr_assert(r, "`%s` returned NULL (block_ms %lld)", line, block_ms);
    char *got = render(r);
    cr_expect_str_eq(got, want, "`%s`\n  got:  %s\n  want: %s", line, got, want);
    free(got);
    freeReplyObject(r);
}

#define EXPECT(line, want) expect_on(conn, line, want)

static long long integer(const char *line) {
    redisReply *r = run(line);
    cr_assert_eq(r->type, REDIS_REPLY_INTEGER, "`%s` is not an integer reply", line);
    long long v = r->integer;
    freeReplyObject(r);
    return v;
}

/* Runs a command that must block: NULL with *block_ms == want_block. */
static void expect_blocked(eddy__mem_conn *cn, const char *line, long long want_block) {
    long long block_ms = -5;
    redisReply *r = run_on(cn, line, &block_ms);
    cr_assert_null(r, "`%s` should block", line);
    cr_expect_eq(block_ms, want_block, "`%s`: block_ms %lld, want %lld", line, block_ms,
                 want_block);
}

/* Delivery count of one pending entry, from XPENDING's extended form. */
static long long delivery_count(const char *key, const char *group, const char *id) {
    char line[256];
    snprintf(line, sizeof(line), "XPENDING %s %s %s %s 1", key, group, id, id);
    redisReply *r = run(line);
    cr_assert_eq(r->type, REDIS_REPLY_ARRAY);
    cr_assert_eq(r->elements, 1, "%s is not pending", id);
    long long v = r->element[0]->element[3]->integer;
    freeReplyObject(r);
    return v;
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- generic commands --------------------------------------------------------------------- */

Test(memory, ping_time_and_unknown_commands) {
    EXPECT("PING", "+PONG");
    EXPECT("ping hello", "\"hello\"");
    EXPECT("PING a b", "-ERR wrong number of arguments for 'ping' command");
    EXPECT("FOO a b", "-ERR unknown command 'FOO', with args beginning with: 'a' 'b' ");
    EXPECT("FOO", "-ERR unknown command 'FOO', with args beginning with: ");
    EXPECT("\"a\\r\\nb\" x", "-ERR unknown command 'a  b', with args beginning with: 'x' ");
    EXPECT("TIME x", "-ERR wrong number of arguments for 'time' command");
    redisReply *r = run("TIME");
    cr_assert_eq(r->type, REDIS_REPLY_ARRAY);
    cr_assert_eq(r->elements, 2);
    long long secs = atoll(r->element[0]->str);
    cr_expect(secs > 1600000000 && atoll(r->element[1]->str) < 1000000);
    freeReplyObject(r);
    /* Long argument lists are cut at 128 bytes, as in Redis. */
    char line[1200];
    strcpy(line, "NOPE");
    for (int i = 0; i < 20; i++)
        strcat(line, " abcdefghijklmnopqrstuvwxyz");
    r = run(line);
    cr_assert_eq(r->type, REDIS_REPLY_ERROR);
    cr_expect(strlen(r->str) < 240, "%s", r->str);
    freeReplyObject(r);
}

Test(memory, empty_command_and_argvlen_null) {
    long long block_ms = 7;
    redisReply *r = eddy__mem_exec(conn, 0, NULL, NULL, &block_ms);
    cr_assert(r);
    cr_expect_str_eq(r->str, "ERR empty command");
    cr_expect_eq(block_ms, -1);
    freeReplyObject(r);
    const char *argv[] = {"SET", "k", "hello"};
    r = eddy__mem_exec(conn, 3, argv, NULL, NULL); /* lengths from strlen */
    cr_expect_str_eq(r->str, "OK");
    freeReplyObject(r);
    EXPECT("GET k", "\"hello\"");
    /* More than 16 arguments without lengths takes the heap path. */
    const char *many[] = {"SADD", "s",  "1",  "2",  "3",  "4",  "5",  "6",  "7",  "8",
                          "9",    "10", "11", "12", "13", "14", "15", "16", "17", "18"};
    r = eddy__mem_exec(conn, 20, many, NULL, NULL);
    cr_expect_eq(r->integer, 18);
    freeReplyObject(r);
}

Test(memory, arity_errors_use_full_names) {
    EXPECT("GET", "-ERR wrong number of arguments for 'get' command");
    EXPECT("get a b", "-ERR wrong number of arguments for 'get' command");
    EXPECT("XGROUP", "-ERR wrong number of arguments for 'xgroup' command");
    EXPECT("XGROUP FOO", "-ERR unknown subcommand 'FOO'. Try XGROUP HELP.");
    EXPECT("XINFO FOO k", "-ERR unknown subcommand 'FOO'. Try XINFO HELP.");
    EXPECT("XGROUP CREATE k", "-ERR wrong number of arguments for 'xgroup|create' command");
    EXPECT("XINFO GROUPS", "-ERR wrong number of arguments for 'xinfo|groups' command");
    EXPECT("XGROUP HELP x", "-ERR wrong number of arguments for 'xgroup|help' command");
    const char *arity[][2] = {
        {"DEL", "del"},
        {"EXISTS", "exists"},
        {"TYPE", "type"},
        {"EXPIRE k", "expire"},
        {"PEXPIRE k", "pexpire"},
        {"TTL", "ttl"},
        {"PTTL", "pttl"},
        {"PERSIST", "persist"},
        {"SET k", "set"},
        {"INCR", "incr"},
        {"INCRBY k", "incrby"},
        {"SADD k", "sadd"},
        {"SREM k", "srem"},
        {"SMEMBERS", "smembers"},
        {"SISMEMBER k", "sismember"},
        {"SCARD", "scard"},
        {"HSET k f", "hset"},
        {"HGET k", "hget"},
        {"HDEL k", "hdel"},
        {"HGETALL", "hgetall"},
        {"HLEN", "hlen"},
        {"ZADD k 1", "zadd"},
        {"ZREM k", "zrem"},
        {"ZRANGEBYSCORE k 1", "zrangebyscore"},
        {"ZSCORE k", "zscore"},
        {"ZCARD", "zcard"},
        {"ZREMRANGEBYSCORE k 1", "zremrangebyscore"},
        {"XADD k *", "xadd"},
        {"XLEN", "xlen"},
        {"XRANGE k -", "xrange"},
        {"XREVRANGE k +", "xrevrange"},
        {"XDEL k", "xdel"},
        {"XTRIM k MAXLEN", "xtrim"},
        {"XREAD STREAMS", "xread"},
        {"XREADGROUP GROUP g c STREAMS k", "xreadgroup"},
        {"XACK k g", "xack"},
        {"XPENDING k", "xpending"},
        {"XCLAIM k g c 0", "xclaim"},
        {"XAUTOCLAIM k g c 0", "xautoclaim"},
        {"DISCARD x", "discard"},
        {"MULTI x", "multi"},
        {"XGROUP SETID k g", "xgroup|setid"},
        {"XGROUP DESTROY k", "xgroup|destroy"},
        {"XGROUP CREATECONSUMER k g", "xgroup|createconsumer"},
        {"XGROUP DELCONSUMER k g", "xgroup|delconsumer"},
        {"XINFO STREAM", "xinfo|stream"},
        {"XINFO CONSUMERS k", "xinfo|consumers"},
        {"XINFO HELP x", "xinfo|help"},
    };
    for (size_t i = 0; i < sizeof(arity) / sizeof(arity[0]); i++) {
        char want[128];
        snprintf(want, sizeof(want), "-ERR wrong number of arguments for '%s' command",
                 arity[i][1]);
        EXPECT(arity[i][0], want);
    }
    EXPECT("EXEC x",
           "-EXECABORT Transaction discarded because of: wrong number of arguments for 'exec' "
           "command");
}

Test(memory, help_texts) {
    redisReply *r = run("XGROUP HELP");
    cr_assert_eq(r->type, REDIS_REPLY_ARRAY);
    cr_expect_eq(r->elements, 17);
    cr_expect_str_eq(r->element[0]->str,
                     "XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:");
    freeReplyObject(r);
    r = run("xinfo help");
    cr_expect_eq(r->elements, 9);
    cr_expect_eq(r->element[8]->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
}

Test(memory, flushall) {
    EXPECT("SET a 1", "+OK");
    EXPECT("XADD s 1-1 f v", "\"1-1\"");
    EXPECT("PEXPIRE a 100000", "1");
    EXPECT("FLUSHALL FOO", "-ERR syntax error");
    EXPECT("FLUSHALL SYNC ASYNC", "-ERR syntax error");
    EXPECT("FLUSHALL async", "+OK");
    EXPECT("EXISTS a s", "0");
    EXPECT("SET a 1", "+OK");
    EXPECT("FLUSHALL SYNC", "+OK");
    EXPECT("FLUSHALL", "+OK");
    EXPECT("EXISTS a", "0");
}

/* ---- strings ------------------------------------------------------------------------------ */

Test(memory, set_and_get) {
    EXPECT("GET k", "nil");
    EXPECT("SET k v NX", "+OK");
    EXPECT("SET k v NX", "nil");
    EXPECT("SET k v2 XX", "+OK");
    EXPECT("SET nk v XX", "nil");
    EXPECT("GET k", "\"v2\"");
    EXPECT("SET k v NX XX", "-ERR syntax error");
    EXPECT("SET k v XX NX", "-ERR syntax error");
    EXPECT("SET k v EX 0", "-ERR invalid expire time in 'set' command");
    EXPECT("SET k v EX -1", "-ERR invalid expire time in 'set' command");
    EXPECT("SET k v PX 0", "-ERR invalid expire time in 'set' command");
    EXPECT("SET k v EX x", "-ERR value is not an integer or out of range");
    EXPECT("SET k v EX 10 PX 10", "-ERR syntax error");
    EXPECT("SET k v EX", "-ERR syntax error");
    EXPECT("SET k v FOO", "-ERR syntax error");
    EXPECT("SET k v KEEPTTL EX 10", "-ERR syntax error");
    EXPECT("SET k v EX 10 KEEPTTL", "-ERR syntax error");
    EXPECT("SET k v EXAT 10 PXAT 10", "-ERR syntax error");
    EXPECT("SET k v EX 9223372036854775807", "-ERR invalid expire time in 'set' command");
    EXPECT("SET k v PX 9223372036854775807", "-ERR invalid expire time in 'set' command");
    EXPECT("SET k v GET", "\"v2\"");
    EXPECT("SET nk2 v GET", "nil");
    EXPECT("SET k v3 NX GET", "\"v\"");
    EXPECT("GET k", "\"v\"");
    EXPECT("SET k v EXAT 1", "+OK");
    EXPECT("GET k", "nil");
    EXPECT("SET k v PXAT 99999999999999 GET", "nil");
    EXPECT("SET k v2 KEEPTTL", "+OK");
    cr_expect_gt(integer("PTTL k"), 1000000);
    EXPECT("SET k v3", "+OK");
    EXPECT("TTL k", "-1");
    EXPECT("SET k v EX 100", "+OK");
    EXPECT("TTL k", "100");
    EXPECT("SET k v PX 100000 EX 100", "-ERR syntax error");
    EXPECT("SET k v ex 5 ex 7", "+OK");
    EXPECT("TTL k", "7");
    EXPECT("SADD set a", "1");
    EXPECT("SET set v GET", "-WRONGTYPE Operation against a key holding the wrong kind of value");
    EXPECT("GET set", "-WRONGTYPE Operation against a key holding the wrong kind of value");
    EXPECT("EXPIRE set 100", "1");
    EXPECT("SET set v KEEPTTL", "+OK");
    EXPECT("TYPE set", "+string");
    EXPECT("TTL set", "100");
    EXPECT("SET bin \"a\\x00b\\r\\n\"", "+OK");
    EXPECT("GET bin", "\"a\\x00b\\x0d\\x0a\"");
    EXPECT("SET empty \"\"", "+OK");
    EXPECT("GET empty", "\"\"");
}

Test(memory, incr_and_incrby) {
    EXPECT("INCR n", "1");
    EXPECT("INCRBY n 41", "42");
    EXPECT("INCRBY n -50", "-8");
    EXPECT("GET n", "\"-8\"");
    EXPECT("INCRBY n x", "-ERR value is not an integer or out of range");
    EXPECT("INCRBY n 1.5", "-ERR value is not an integer or out of range");
    EXPECT("SET n 9223372036854775807", "+OK");
    EXPECT("INCR n", "-ERR increment or decrement would overflow");
    EXPECT("INCRBY n -1", "9223372036854775806");
    EXPECT("INCRBY m -9223372036854775808", "-9223372036854775808");
    EXPECT("INCRBY m -1", "-ERR increment or decrement would overflow");
    EXPECT("SET n \" 5\"", "+OK");
    EXPECT("INCR n", "-ERR value is not an integer or out of range");
    EXPECT("SET n 007", "+OK");
    EXPECT("INCR n", "-ERR value is not an integer or out of range");
    EXPECT("SET n -0", "+OK");
    EXPECT("INCR n", "-ERR value is not an integer or out of range");
    EXPECT("SET n +1", "+OK");
    EXPECT("INCR n", "-ERR value is not an integer or out of range");
    EXPECT("SET n 99999999999999999999", "+OK");
    EXPECT("INCR n", "-ERR value is not an integer or out of range");
    EXPECT("SET n 10 EX 100", "+OK");
    EXPECT("INCR n", "11");
    EXPECT("TTL n", "100"); /* INCR keeps the TTL */
    EXPECT("HSET h f v", "1");
    EXPECT("INCR h", "-WRONGTYPE Operation against a key holding the wrong kind of value");
    EXPECT("INCRBY h 2", "-WRONGTYPE Operation against a key holding the wrong kind of value");
}

/* ---- keys and expiry ---------------------------------------------------------------------- */

Test(memory, del_exists_type) {
    EXPECT("SET s 1", "+OK");
    EXPECT("SADD set a", "1");
    EXPECT("HSET hash f v", "1");
    EXPECT("ZADD zset 1 m", "1");
    EXPECT("XADD stream 1-1 f v", "\"1-1\"");
    EXPECT("TYPE s", "+string");
    EXPECT("TYPE set", "+set");
    EXPECT("TYPE hash", "+hash");
    EXPECT("TYPE zset", "+zset");
    EXPECT("TYPE stream", "+stream");
    EXPECT("TYPE nokey", "+none");
    EXPECT("EXISTS s s set nokey", "3");
    EXPECT("DEL s set nokey s", "2");
    EXPECT("EXISTS s set", "0");
    EXPECT("DEL hash zset stream", "3");
    EXPECT("DEL nokey", "0");
}

Test(memory, expire_family) {
    EXPECT("SET n 10", "+OK");
    EXPECT("EXPIRE n 100", "1");
    EXPECT("TTL n", "100");
    cr_expect(integer("PTTL n") > 99000);
    EXPECT("EXPIRE n x", "-ERR value is not an integer or out of range");
    EXPECT("EXPIRE n 100 NX", "0");
    EXPECT("EXPIRE n 100 XX", "1");
    EXPECT("EXPIRE n 50 GT", "0");
    EXPECT("EXPIRE n 500 GT", "1");
    EXPECT("EXPIRE n 500 LT", "0");
    EXPECT("EXPIRE n 50 LT", "1");
    EXPECT("TTL n", "50");
    EXPECT("EXPIRE n 50 NX XX",
           "-ERR NX and XX, GT or LT options at the same time are not compatible");
    EXPECT("EXPIRE n 50 NX GT",
           "-ERR NX and XX, GT or LT options at the same time are not compatible");
    EXPECT("EXPIRE n 50 NX LT",
           "-ERR NX and XX, GT or LT options at the same time are not compatible");
    EXPECT("EXPIRE n 50 GT LT", "-ERR GT and LT options at the same time are not compatible");
    EXPECT("EXPIRE n 50 FOO", "-ERR Unsupported option FOO");
    EXPECT("EXPIRE n x FOO", "-ERR Unsupported option FOO");
    EXPECT("EXPIRE n 9223372036854775807", "-ERR invalid expire time in 'expire' command");
    EXPECT("EXPIRE n -9223372036854775807", "-ERR invalid expire time in 'expire' command");
    EXPECT("PEXPIRE n 9223372036854775807", "-ERR invalid expire time in 'pexpire' command");
    EXPECT("EXPIRE nokey 10", "0");
    EXPECT("PERSIST n", "1");
    EXPECT("PERSIST n", "0");
    EXPECT("PERSIST nokey", "0");
    EXPECT("TTL nokey", "-2");
    EXPECT("PTTL nokey", "-2");
    EXPECT("TTL n", "-1");
    EXPECT("PTTL n", "-1");
    EXPECT("EXPIRE n 10 XX", "0");
    EXPECT("EXPIRE n 10 GT", "0"); /* no TTL counts as infinite */
    EXPECT("EXPIRE n 10 LT", "1");
    EXPECT("EXPIRE n -1", "1");
    EXPECT("EXISTS n", "0");
    EXPECT("SET n 1", "+OK");
    EXPECT("PEXPIRE n 0", "1");
    EXPECT("EXISTS n", "0");
    EXPECT("SET n 1", "+OK");
    EXPECT("pexpire n 50000 nx", "1");
    cr_expect(integer("PTTL n") > 49000);
    EXPECT("TTL n", "50");
}

Test(memory, keys_expire_on_access_and_in_the_background) {
    EXPECT("SET a 1", "+OK");
    EXPECT("XADD inbox 1-1 f v", "\"1-1\"");
    EXPECT("PEXPIRE a 20", "1");
    EXPECT("PEXPIRE inbox 20", "1");
    EXPECT("EXISTS a inbox", "2");
    sleep_ms(40);
    /* A command on another key sweeps both, so an abandoned key does not linger. */
    EXPECT("PING", "+PONG");
    cr_expect_eq(eddy__mdict_size(&eng->keys), 0);
    cr_expect_eq(eng->expires.len, 0);
    EXPECT("EXISTS a inbox", "0");
    EXPECT("TTL a", "-2");
    /* Refreshing a TTL moves the key in the schedule rather than adding it twice. */
    EXPECT("SET b 1", "+OK");
    for (int i = 0; i < 10; i++)
        EXPECT("PEXPIRE b 100000", "1");
    cr_expect_eq(eng->expires.len, 1);
    EXPECT("DEL b", "1");
    cr_expect_eq(eng->expires.len, 0);
}

/* ---- sets, hashes, sorted sets ------------------------------------------------------------ */

Test(memory, sets) {
    EXPECT("SADD s a b a", "2");
    EXPECT("SADD s c", "1");
    EXPECT("SREM s a x", "1");
    EXPECT("SMEMBERS s", "[\"b\",\"c\"]");
    EXPECT("SISMEMBER s b", "1");
    EXPECT("SISMEMBER s x", "0");
    EXPECT("SCARD s", "2");
    EXPECT("SCARD nokey", "0");
    EXPECT("SMEMBERS nokey", "[]");
    EXPECT("SISMEMBER nokey a", "0");
    EXPECT("SREM nokey a", "0");
    EXPECT("SREM s b c", "2");
    EXPECT("EXISTS s", "0");
    EXPECT("SET str x", "+OK");
    const char *wrong = "-WRONGTYPE Operation against a key holding the wrong kind of value";
    EXPECT("SADD str a", wrong);
    EXPECT("SREM str a", wrong);
    EXPECT("SMEMBERS str", wrong);
    EXPECT("SISMEMBER str a", wrong);
    EXPECT("SCARD str", wrong);
    /* Many members: the table grows, shrinks and stays consistent. */
    for (int i = 0; i < 300; i++) {
        char line[64];
        snprintf(line, sizeof(line), "SADD big m%d", i);
        EXPECT(line, "1");
    }
    for (int i = 0; i < 300; i += 2) {
        char line[64];
        snprintf(line, sizeof(line), "SREM big m%d", i);
        EXPECT(line, "1");
    }
    EXPECT("SCARD big", "150");
    EXPECT("SISMEMBER big m1", "1");
    EXPECT("SISMEMBER big m2", "0");
}

Test(memory, hashes) {
    EXPECT("HSET h f", "-ERR wrong number of arguments for 'hset' command");
    EXPECT("HSET h f v g", "-ERR wrong number of arguments for 'hset' command");
    EXPECT("HSET h f v g w", "2");
    EXPECT("HSET h f v2", "0");
    EXPECT("HGET h f", "\"v2\"");
    EXPECT("HGET h x", "nil");
    EXPECT("HGET nokey x", "nil");
    EXPECT("HDEL h f x", "1");
    EXPECT("HGETALL h", "[\"g\",\"w\"]");
    EXPECT("HLEN h", "1");
    EXPECT("HLEN nokey", "0");
    EXPECT("HGETALL nokey", "[]");
    EXPECT("HDEL nokey f", "0");
    EXPECT("HDEL h g", "1");
    EXPECT("EXISTS h", "0");
    /* Insertion order, as Redis shows small hashes. */
    EXPECT("HSET h b 1 a 2 c 3", "3");
    EXPECT("HDEL h a", "1");
    EXPECT("HSET h a 4 b 5", "1");
    EXPECT("HGETALL h", "[\"b\",\"5\",\"c\",\"3\",\"a\",\"4\"]");
    EXPECT("SET str x", "+OK");
    const char *wrong = "-WRONGTYPE Operation against a key holding the wrong kind of value";
    EXPECT("HSET str a b", wrong);
    EXPECT("HGET str a", wrong);
    EXPECT("HDEL str a", wrong);
    EXPECT("HGETALL str", wrong);
    EXPECT("HLEN str", wrong);
}

Test(memory, sorted_sets) {
    EXPECT("ZADD z 1 a", "1");
    EXPECT("ZADD z x a", "-ERR value is not a valid float");
    EXPECT("ZADD z 1 a 2", "-ERR syntax error");
    EXPECT("ZADD z NX CH", "-ERR syntax error");
    EXPECT("ZADD z NX XX 1 a", "-ERR XX and NX options at the same time are not compatible");
    EXPECT("ZADD z NX GT 1 a",
           "-ERR GT, LT, and/or NX options at the same time are not compatible");
    EXPECT("ZADD z LT NX 1 a",
           "-ERR GT, LT, and/or NX options at the same time are not compatible");
    EXPECT("ZADD z GT LT 1 a",
           "-ERR GT, LT, and/or NX options at the same time are not compatible");
    EXPECT("ZADD z INCR 1 a 2 b", "-ERR INCR option supports a single increment-element pair");
    EXPECT("ZADD z INCR 5 a", "\"6\"");
    EXPECT("ZADD z INCR 0 a", "\"6\"");
    EXPECT("ZADD z CH 1 a 3 b", "2");
    EXPECT("ZADD z XX 3 c", "0");
    EXPECT("ZADD z GT 0 a", "0");
    EXPECT("ZADD z GT CH 2 a", "1");
    EXPECT("ZADD z LT CH 5 a", "0");
    EXPECT("ZADD z LT CH 0 a", "1");
    EXPECT("ZADD z NX INCR 1 a", "nil");
    EXPECT("ZADD z XX INCR 1 zz", "nil");
    EXPECT("ZADD nz XX 1 a", "0");
    EXPECT("EXISTS nz", "0");
    EXPECT("ZADD z 1.1 d", "1");
    EXPECT("ZSCORE z d", "\"1.1000000000000001\"");
    EXPECT("ZADD z inf e -inf f", "2");
    EXPECT("ZSCORE z e", "\"inf\"");
    EXPECT("ZSCORE z f", "\"-inf\"");
    EXPECT("ZADD z nan g", "-ERR value is not a valid float");
    EXPECT("ZADD z 1e400 g", "-ERR value is not a valid float");
    EXPECT("ZADD z \" 1\" g", "-ERR value is not a valid float");
    EXPECT("ZADD z \"\" g", "-ERR value is not a valid float");
    EXPECT("ZADD z INCR inf e", "\"inf\"");
    EXPECT("ZADD z INCR -inf e", "-ERR resulting score is not a number (NaN)");
    EXPECT("ZSCORE z x", "nil");
    EXPECT("ZSCORE nokey x", "nil");
    EXPECT("ZADD z 0.1 h 1e10 i 123456789012345678 j", "3");
    EXPECT("ZRANGEBYSCORE z -inf +inf WITHSCORES",
           "[\"f\",\"-inf\",\"a\",\"0\",\"h\",\"0.10000000000000001\",\"d\",\"1.1000000000000001\","
           "\"b\",\"3\",\"i\",\"10000000000\",\"j\",\"1.2345678901234568e+17\",\"e\",\"inf\"]");
    EXPECT("ZRANGEBYSCORE z (0 3", "[\"h\",\"d\",\"b\"]");
    EXPECT("ZRANGEBYSCORE z 0 (3 LIMIT 1 2", "[\"h\",\"d\"]");
    EXPECT("ZRANGEBYSCORE z 0 3 LIMIT 1", "-ERR syntax error");
    EXPECT("ZRANGEBYSCORE z 0 3 LIMIT x 1", "-ERR value is not an integer or out of range");
    EXPECT("ZRANGEBYSCORE z 0 3 LIMIT 0 y", "-ERR value is not an integer or out of range");
    EXPECT("ZRANGEBYSCORE z 0 3 LIMIT -1 5", "[]");
    EXPECT("ZRANGEBYSCORE z 0 3 LIMIT 0 -1", "[\"a\",\"h\",\"d\",\"b\"]");
    EXPECT("ZRANGEBYSCORE z 0 3 LIMIT 0 0", "[]");
    EXPECT("ZRANGEBYSCORE z 0 3 LIMIT 10 5", "[]");
    EXPECT("ZRANGEBYSCORE z 0 3 FOO", "-ERR syntax error");
    EXPECT("ZRANGEBYSCORE z x 3", "-ERR min or max is not a float");
    EXPECT("ZRANGEBYSCORE z 0 (x", "-ERR min or max is not a float");
    EXPECT("ZRANGEBYSCORE z nan 3", "-ERR min or max is not a float");
    EXPECT("ZRANGEBYSCORE z ( 3", "[\"h\",\"d\",\"b\"]");
    EXPECT("ZRANGEBYSCORE z 3 0", "[]");
    EXPECT("ZRANGEBYSCORE z (1 (1", "[]");
    EXPECT("ZRANGEBYSCORE nokey 0 3", "[]");
    EXPECT("ZRANGEBYSCORE z 0 3 WITHSCORES LIMIT 0 1 WITHSCORES", "[\"a\",\"0\"]");
    EXPECT("ZREMRANGEBYSCORE z (0 1", "1");
    EXPECT("ZREMRANGEBYSCORE z x 1", "-ERR min or max is not a float");
    EXPECT("ZREMRANGEBYSCORE nokey 0 1", "0");
    EXPECT("ZREMRANGEBYSCORE z 5 1", "0");
    EXPECT("ZCARD z", "7");
    EXPECT("ZREM z a b nokey", "2");
    EXPECT("ZCARD nokey", "0");
    EXPECT("ZADD z -0 m", "1");
    EXPECT("ZSCORE z m", "\"0\"");
    EXPECT("ZADD z 0x10 n", "1");
    EXPECT("ZSCORE z n", "\"16\"");
    EXPECT("ZADD same 1 b 1 a 1 c", "3");
    EXPECT("ZRANGEBYSCORE same 1 1", "[\"a\",\"b\",\"c\"]");
    EXPECT("ZADD same 0 c", "0");
    EXPECT("ZRANGEBYSCORE same -inf +inf", "[\"c\",\"a\",\"b\"]");
    EXPECT("ZREMRANGEBYSCORE same -inf +inf", "3");
    EXPECT("EXISTS same", "0");
    EXPECT("ZADD z2 5 x", "1");
    EXPECT("ZREM z2 x", "1");
    EXPECT("EXISTS z2", "0");
    EXPECT("SET str x", "+OK");
    const char *wrong = "-WRONGTYPE Operation against a key holding the wrong kind of value";
    EXPECT("ZADD str 1 a", wrong);
    EXPECT("ZREM str a", wrong);
    EXPECT("ZRANGEBYSCORE str 0 1", wrong);
    EXPECT("ZRANGEBYSCORE str x 1", "-ERR min or max is not a float");
    EXPECT("ZREMRANGEBYSCORE str 0 1", wrong);
    EXPECT("ZSCORE str a", wrong);
    EXPECT("ZCARD str", wrong);
}

Test(memory, sorted_set_scale) {
    /* Deadlines and heartbeats: many members, ranges from the front. */
    for (int i = 0; i < 2000; i++) {
        char line[64];
        snprintf(line, sizeof(line), "ZADD z %d m%d", (i * 7919) % 2000, i);
        EXPECT(line, "1");
    }
    EXPECT("ZCARD z", "2000");
    EXPECT("ZRANGEBYSCORE z 0 2 WITHSCORES", "[\"m0\",\"0\",\"m1679\",\"1\",\"m1358\",\"2\"]");
    EXPECT("ZREMRANGEBYSCORE z -inf (1000", "1000");
    EXPECT("ZRANGEBYSCORE z -inf +inf LIMIT 0 1 WITHSCORES", "[\"m1000\",\"1000\"]");
    EXPECT("ZRANGEBYSCORE z (1998 +inf", "[\"m321\"]");
}

/* ---- streams: XADD, XRANGE, XDEL, XTRIM --------------------------------------------------- */

Test(memory, xadd_ids) {
    EXPECT("XADD s 0-0 f v", "-ERR The ID specified in XADD must be greater than 0-0");
    EXPECT("EXISTS s", "0");
    EXPECT("XADD s 0-* f v", "\"0-1\"");
    EXPECT("XADD s 0-* f v", "\"0-2\"");
    EXPECT("XADD s 0-1 f v",
           "-ERR The ID specified in XADD is equal or smaller than the target stream top item");
    EXPECT("XADD s 5 f v", "\"5-0\"");
    EXPECT("XADD s 5-* f v", "\"5-1\"");
    EXPECT("XADD s 4-* f v",
           "-ERR The ID specified in XADD is equal or smaller than the target stream top item");
    EXPECT("XADD s bad f v", "-ERR Invalid stream ID specified as stream command argument");
    EXPECT("XADD s - f v", "-ERR Invalid stream ID specified as stream command argument");
    EXPECT("XADD s 1-2-3 f v", "-ERR Invalid stream ID specified as stream command argument");
    EXPECT("XADD s * f", "-ERR wrong number of arguments for 'xadd' command");
    EXPECT("XADD s * f v g", "-ERR wrong number of arguments for 'xadd' command");
    EXPECT("XADD s MAXLEN 5", "-ERR wrong number of arguments for 'xadd' command");
    EXPECT("XADD s 18446744073709551615-18446744073709551615 f v",
           "\"18446744073709551615-18446744073709551615\"");
    EXPECT("XADD s * f v",
           "-ERR The stream has exhausted the last possible ID, unable to add more items");
    EXPECT("XADD s2 01-01 f v", "\"1-1\"");
    EXPECT("XADD s2 \" 5\" f v", "\"5-0\"");
    EXPECT("XADD s2 +7 f v", "\"7-0\"");
    EXPECT("XADD s2 -05 f v", "-ERR Invalid stream ID specified as stream command argument");
    EXPECT("XADD s3 18446744073709551616-1 f v",
           "-ERR Invalid stream ID specified as stream command argument");
    EXPECT("XADD s3 1-18446744073709551615 f v", "\"1-18446744073709551615\"");
    EXPECT("XADD s3 1-* f v", "-ERR Elements are too large to be stored");
    EXPECT("XADD s3 2-* f v", "\"2-0\"");
    EXPECT("XADD nos NOMKSTREAM * f v", "nil");
    EXPECT("EXISTS nos", "0");
    EXPECT("SET str x", "+OK");
    EXPECT("XADD str * a b", "-WRONGTYPE Operation against a key holding the wrong kind of value");
    /* Automatic ids: wall-clock milliseconds, sequence within a millisecond, never backwards. */
    redisReply *a = run("XADD auto * f v");
    redisReply *b = run("XADD auto * f v");
    unsigned long long ams, aseq, bms, bseq;
    cr_assert_eq(sscanf(a->str, "%llu-%llu", &ams, &aseq), 2);
    cr_assert_eq(sscanf(b->str, "%llu-%llu", &bms, &bseq), 2);
    cr_expect(bms > ams || (bms == ams && bseq == aseq + 1));
    cr_expect(ams > 1600000000000ULL);
    freeReplyObject(a);
    freeReplyObject(b);
    EXPECT("XADD future 99999999999999-0 f v", "\"99999999999999-0\"");
    redisReply *f = run("XADD future * f v");
    cr_expect_str_eq(f->str, "99999999999999-1");
    freeReplyObject(f);
}

Test(memory, xadd_options_and_errors) {
    EXPECT("XADD s MAXLEN -1 * f v", "-ERR The MAXLEN argument must be >= 0.");
    EXPECT("XADD s MAXLEN x * f v", "-ERR value is not an integer or out of range");
    EXPECT("XADD s MAXLEN ~ * f v", "-ERR value is not an integer or out of range");
    EXPECT("XADD s MAXLEN 5 MINID 1 * f v",
           "-ERR syntax error, MAXLEN and MINID options at the same time are not compatible");
    EXPECT("XADD s LIMIT 5 * f v",
           "-ERR syntax error, LIMIT cannot be used without specifying a trimming strategy");
    EXPECT("XADD s LIMIT 0 1-1 f v",
           "-ERR syntax error, LIMIT cannot be used without the special ~ option");
    EXPECT("XADD s MAXLEN 5 LIMIT 5 * f v",
           "-ERR syntax error, LIMIT cannot be used without the special ~ option");
    EXPECT("XADD s MAXLEN = 5 LIMIT 5 * f v",
           "-ERR syntax error, LIMIT cannot be used without the special ~ option");
    EXPECT("XADD s MAXLEN ~ 5 LIMIT -1 * f v", "-ERR The LIMIT argument must be >= 0.");
    EXPECT("XADD s MAXLEN ~ 5 LIMIT x * f v", "-ERR value is not an integer or out of range");
    EXPECT("XADD s MINID bad * f v", "-ERR Invalid stream ID specified as stream command argument");
    EXPECT("XADD s FOO f v", "-ERR Invalid stream ID specified as stream command argument");
    EXPECT("EXISTS s", "0");
    EXPECT("XADD m NOMKSTREAM MAXLEN 2 9-1 a b", "nil");
    EXPECT("XADD m 1-1 a 1", "\"1-1\"");
    EXPECT("XADD m NOMKSTREAM MAXLEN 2 2-1 a 2", "\"2-1\"");
    EXPECT("XADD m MAXLEN = 2 3-1 a 3", "\"3-1\"");
    EXPECT("XADD m minid = 3-1 4-1 a 4", "\"4-1\"");
    EXPECT("XRANGE m - +", "[[\"3-1\",[\"a\",\"3\"]],[\"4-1\",[\"a\",\"4\"]]]");
    EXPECT("XADD m MAXLEN ~ 1 LIMIT 0 5-1 a 5", "\"5-1\"");
    EXPECT("XLEN m", "3"); /* one node, not removable whole */
    EXPECT("XADD m MAXLEN 0 6-1 a 6", "\"6-1\"");
    EXPECT("XLEN m", "0");
    EXPECT("XADD m 7-1 a 7 b 8", "\"7-1\"");
    EXPECT("XRANGE m - +", "[[\"7-1\",[\"a\",\"7\",\"b\",\"8\"]]]");
}

Test(memory, xrange_and_xrevrange) {
    EXPECT("XADD s 1-1 f v", "\"1-1\"");
    EXPECT("XADD s 2-1 f v a b", "\"2-1\"");
    EXPECT("XADD s 2-2 x y", "\"2-2\"");
    EXPECT("XADD s 3-0 \"\" \"\"", "\"3-0\"");
    EXPECT("XRANGE s - + COUNT 0", "nil");
    EXPECT("XRANGE s - + COUNT -1", "nil");
    EXPECT("XRANGE s - + COUNT x", "-ERR value is not an integer or out of range");
    EXPECT("XRANGE s - + FOO", "-ERR syntax error");
    EXPECT("XRANGE s - + COUNT", "-ERR syntax error");
    EXPECT("XRANGE s - + COUNT 2", "[[\"1-1\",[\"f\",\"v\"]],[\"2-1\",[\"f\",\"v\",\"a\",\"b\"]]]");
    EXPECT("XRANGE s ( +", "-ERR Invalid stream ID specified as stream command argument");
    EXPECT("XRANGE s (- +", "-ERR Invalid stream ID specified as stream command argument");
    EXPECT("XRANGE s - (+", "-ERR Invalid stream ID specified as stream command argument");
    EXPECT("XRANGE s (18446744073709551615-18446744073709551615 +",
           "-ERR invalid start ID for the interval");
    EXPECT("XRANGE s - (0-0", "-ERR invalid end ID for the interval");
    EXPECT("XRANGE s (1-1 (3-0", "[[\"2-1\",[\"f\",\"v\",\"a\",\"b\"]],[\"2-2\",[\"x\",\"y\"]]]");
    EXPECT("XRANGE s 2 2", "[[\"2-1\",[\"f\",\"v\",\"a\",\"b\"]],[\"2-2\",[\"x\",\"y\"]]]");
    EXPECT("XRANGE s 3 +", "[[\"3-0\",[\"\",\"\"]]]");
    EXPECT("XRANGE s 3 1", "[]");
    EXPECT("XRANGE nokey - +", "[]");
    EXPECT("XREVRANGE s + - COUNT 1", "[[\"3-0\",[\"\",\"\"]]]");
    EXPECT("XREVRANGE s (3-0 (1-1",
           "[[\"2-2\",[\"x\",\"y\"]],[\"2-1\",[\"f\",\"v\",\"a\",\"b\"]]]");
    EXPECT("XREVRANGE s - +", "[]");
    EXPECT("XREVRANGE s + - COUNT 0", "nil");
    EXPECT("XREVRANGE nokey + -", "[]");
    EXPECT("XDEL s 2-1", "1");
    EXPECT("XRANGE s 2 2", "[[\"2-2\",[\"x\",\"y\"]]]");
    EXPECT("XREVRANGE s 2-1 -", "[[\"1-1\",[\"f\",\"v\"]]]");
    EXPECT("SET str x", "+OK");
    EXPECT("XRANGE str - +", "-WRONGTYPE Operation against a key holding the wrong kind of value");
    EXPECT("XRANGE str bad +", "-ERR Invalid stream ID specified as stream command argument");
    EXPECT("XREVRANGE str + -",
           "-WRONGTYPE Operation against a key holding the wrong kind of value");
    EXPECT("XLEN str", "-WRONGTYPE Operation against a key holding the wrong kind of value");
    EXPECT("XLEN s", "3");
    EXPECT("XLEN nokey", "0");
}

Test(memory, xdel) {
    EXPECT("XDEL nokey bad", "0");
    EXPECT("XADD s 1-1 f v", "\"1-1\"");
    EXPECT("XADD s 2-1 f v", "\"2-1\"");
    EXPECT("XADD s 3-1 f v", "\"3-1\"");
    EXPECT("XDEL s bad", "-ERR Invalid stream ID specified as stream command argument");
    EXPECT("XDEL s 1-1 bad", "-ERR Invalid stream ID specified as stream command argument");
    EXPECT("XLEN s", "3"); /* all or nothing */
    EXPECT("XDEL s 99-1 1-1 1-1", "1");
    EXPECT("XDEL s 2-1 3-1", "2");
    EXPECT("XLEN s", "0");
    EXPECT("EXISTS s", "1"); /* empty streams stay */
    EXPECT("XADD s 2-1 f v",
           "-ERR The ID specified in XADD is equal or smaller than the target stream top item");
    EXPECT("SET str x", "+OK");
    EXPECT("XDEL str 1-1", "-WRONGTYPE Operation against a key holding the wrong kind of value");
    redisReply *r = run("XINFO STREAM s");
    cr_expect_str_eq(r->element[9]->str, "3-1");  /* max-deleted-entry-id */
    cr_expect_str_eq(r->element[13]->str, "0-0"); /* recorded-first-entry-id */
    freeReplyObject(r);
}

/* Entries' bytes are carved from shared chunks, big ones get their own: every way an entry
 * goes (XDEL, exact and approximate trimming, the key's deletion) gives its bytes back while
 * the others keep theirs intact (the sanitizer build sees any overrun or leak). */
Test(memory, entry_bytes_survive_deletes_and_trims) {
    static char big[6000];
    for (size_t i = 0; i < sizeof(big); i++)
        big[i] = (char)('a' + i % 26);
    for (int i = 1; i <= 300; i++) {
        char id[32], val[32];
        snprintf(id, sizeof(id), "%d-1", i);
        snprintf(val, sizeof(val), "v%d", i);
        bool huge = i % 7 == 0;
        const char *argv[] = {"XADD", "s", id, "f", huge ? big : val};
        size_t len[] = {4, 1, strlen(id), 1, huge ? sizeof(big) : strlen(val)};
        redisReply *r = eddy__mem_exec(conn, 5, argv, len, NULL);
        cr_assert(r && r->type == REDIS_REPLY_STRING);
        freeReplyObject(r);
        if (i % 3 == 0) {
            char line[64];
            snprintf(line, sizeof(line), "XDEL s %d-1", i - 1);
            freeReplyObject(run(line));
        }
    }
    long long len = integer("XLEN s");
    cr_assert_eq(len, 300 - 100);
    len -= integer("XTRIM s MAXLEN ~ 150");
    len -= integer("XTRIM s MINID 200-1");
    cr_assert_lt(len, 150);
    cr_assert_eq(integer("XLEN s"), len);
    redisReply *r = run("XRANGE s - +");
    cr_assert_eq((long long)r->elements, len);
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *id = r->element[i]->element[0], *v = r->element[i]->element[1];
        int n = atoi(id->str);
        cr_assert_geq(n, 200, "%s survived MINID 200-1", id->str);
        cr_assert_eq(v->elements, 2);
        if (n % 7 == 0) {
            cr_assert_eq(v->element[1]->len, sizeof(big), "%s", id->str);
            cr_assert_eq(memcmp(v->element[1]->str, big, sizeof(big)), 0, "%s", id->str);
        } else {
            char want[32];
            snprintf(want, sizeof(want), "v%d", n);
            cr_assert_str_eq(v->element[1]->str, want);
        }
    }
    freeReplyObject(r);
    cr_assert_null(eddy__mem_engine_check(eng));
    cr_assert_eq(integer("XTRIM s MAXLEN 0"), len);
    EXPECT("XADD s 999-1 f again", "\"999-1\""); /* the emptied chunk is filled again */
    EXPECT("XRANGE s - +", "[[\"999-1\",[\"f\",\"again\"]]]");
    EXPECT("DEL s", "1");
}

Test(memory, xtrim) {
    EXPECT("XTRIM s FOO 1", "-ERR syntax error");
    EXPECT("XTRIM s MAXLEN 1 FOO", "-ERR syntax error");
    EXPECT("XTRIM s LIMIT 5",
           "-ERR syntax error, LIMIT cannot be used without specifying a trimming strategy");
    EXPECT("XTRIM s LIMIT 0", "-ERR syntax error, XTRIM must be called with a trimming strategy");
    EXPECT("XTRIM s MAXLEN 1 LIMIT 5",
           "-ERR syntax error, LIMIT cannot be used without the special ~ option");
    EXPECT("XTRIM nokey MAXLEN 1", "0");
    EXPECT("XTRIM nokey MAXLEN x", "-ERR value is not an integer or out of range");
    EXPECT("SET str x", "+OK");
    EXPECT("XTRIM str MAXLEN 1",
           "-WRONGTYPE Operation against a key holding the wrong kind of value");
    EXPECT("XTRIM str MAXLEN x", "-ERR value is not an integer or out of range");
    for (int i = 1; i <= 250; i++) {
        char line[64];
        snprintf(line, sizeof(line), "XADD t %d-1 f v", i);
        freeReplyObject(run(line));
    }
    EXPECT("XLEN t", "250");
    EXPECT("XTRIM t MAXLEN ~ 120", "100"); /* whole 100-entry nodes only */
    EXPECT("XTRIM t MAXLEN ~ 10 LIMIT 50", "0");
    EXPECT("XTRIM t MINID ~ 230-1", "100");
    EXPECT("XTRIM t MINID = 230-1", "29");
    EXPECT("XRANGE t - + COUNT 1", "[[\"230-1\",[\"f\",\"v\"]]]");
    EXPECT("XTRIM t MAXLEN 20", "1");
    EXPECT("XTRIM t MAXLEN = 100", "0");
    EXPECT("XTRIM t MAXLEN 0", "20");
    EXPECT("XLEN t", "0");
}

Test(memory, xtrim_limit_and_xdel_nodes) {
    /* 300 entries = 3 full nodes; LIMIT caps the entries removed per call. */
    for (int i = 1; i <= 300; i++) {
        char line[64];
        snprintf(line, sizeof(line), "XADD t %d-1 f v", i);
        freeReplyObject(run(line));
    }
    EXPECT("XTRIM t MAXLEN ~ 0 LIMIT 150", "100");
    EXPECT("XTRIM t MAXLEN ~ 0 LIMIT 0", "200");
    /* Deleting a whole node frees it; the next append starts a new node. */
    for (int i = 301; i <= 450; i++) {
        char line[64];
        snprintf(line, sizeof(line), "XADD c %d-1 f v", i);
        freeReplyObject(run(line));
    }
    for (int i = 401; i <= 450; i++) {
        char line[64];
        snprintf(line, sizeof(line), "XDEL c %d-1", i);
        EXPECT(line, "1");
    }
    redisReply *r = run("XINFO STREAM c");
    cr_expect_eq(r->element[1]->integer, 100);
    cr_expect_eq(r->element[3]->integer, 1); /* radix-tree-keys */
    freeReplyObject(r);
    for (int i = 451; i <= 470; i++) {
        char line[64];
        snprintf(line, sizeof(line), "XADD c %d-1 f v", i);
        freeReplyObject(run(line));
    }
    r = run("XINFO STREAM c");
    cr_expect_eq(r->element[1]->integer, 120);
    cr_expect_eq(r->element[3]->integer, 2);
    freeReplyObject(r);
    /* Deleting scattered entries leaves tombstones that are squeezed out later. */
    for (int i = 301; i <= 399; i += 1) {
        char line[64];
        snprintf(line, sizeof(line), "XDEL c %d-1", i);
        EXPECT(line, "1");
    }
    EXPECT("XRANGE c - + COUNT 2", "[[\"400-1\",[\"f\",\"v\"]],[\"451-1\",[\"f\",\"v\"]]]");
    EXPECT("XREVRANGE c + - COUNT 1", "[[\"470-1\",[\"f\",\"v\"]]]");
    EXPECT("XLEN c", "21");
}

/* ---- XREAD -------------------------------------------------------------------------------- */

Test(memory, xread_errors) {
    EXPECT("XADD s 1-1 f v", "\"1-1\"");
    EXPECT("XREAD STREAMS s", "-ERR wrong number of arguments for 'xread' command");
    EXPECT("XREAD STREAMS s 0 x",
           "-ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be "
           "specified.");
    EXPECT("XREAD COUNT x STREAMS s 0", "-ERR value is not an integer or out of range");
    EXPECT("XREAD BLOCK x STREAMS s 0", "-ERR timeout is not an integer or out of range");
    EXPECT("XREAD BLOCK -1 STREAMS s 0", "-ERR timeout is negative");
    EXPECT("XREAD FOO STREAMS s 0", "-ERR syntax error");
    EXPECT("XREAD COUNT 1 BLOCK 1 s 0", "-ERR syntax error");
    EXPECT("XREAD GROUP g c STREAMS s 0",
           "-ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.");
    EXPECT("XREAD NOACK STREAMS s 0",
           "-ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.");
    EXPECT("XREAD STREAMS s >",
           "-ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> "
           "<consumer> option.");
    EXPECT("XREAD STREAMS s bad", "-ERR Invalid stream ID specified as stream command argument");
    EXPECT("XREAD STREAMS s -", "-ERR Invalid stream ID specified as stream command argument");
    EXPECT("SET str x", "+OK");
    EXPECT("XREAD STREAMS str 0",
           "-WRONGTYPE Operation against a key holding the wrong kind of value");
    EXPECT("XREAD STREAMS s str 0 bad",
           "-WRONGTYPE Operation against a key holding the wrong kind of value");
    EXPECT("XREAD STREAMS s str bad 0",
           "-ERR Invalid stream ID specified as stream command argument");
}

Test(memory, xread_serves_synchronously) {
    EXPECT("XADD s 1-1 f v", "\"1-1\"");
    EXPECT("XADD s 2-1 f v a b", "\"2-1\"");
    EXPECT("XREAD COUNT -5 STREAMS s 0",
           "[[\"s\",[[\"1-1\",[\"f\",\"v\"]],[\"2-1\",[\"f\",\"v\",\"a\",\"b\"]]]]]");
    EXPECT("XREAD COUNT 1 STREAMS s 0", "[[\"s\",[[\"1-1\",[\"f\",\"v\"]]]]]");
    EXPECT("XREAD STREAMS s $", "nil");
    EXPECT("XREAD STREAMS s 1-1", "[[\"s\",[[\"2-1\",[\"f\",\"v\",\"a\",\"b\"]]]]]");
    EXPECT("XREAD STREAMS s 1",
           "[[\"s\",[[\"1-1\",[\"f\",\"v\"]],[\"2-1\",[\"f\",\"v\",\"a\",\"b\"]]]]]");
    EXPECT("XREAD STREAMS s nokey 0 0",
           "[[\"s\",[[\"1-1\",[\"f\",\"v\"]],[\"2-1\",[\"f\",\"v\",\"a\",\"b\"]]]]]");
    EXPECT("XREAD STREAMS nokey 0", "nil");
    EXPECT("XREAD COUNT 1 STREAMS s s 0 1",
           "[[\"s\",[[\"1-1\",[\"f\",\"v\"]]]],[\"s\",[[\"1-1\",[\"f\",\"v\"]]]]]");
    EXPECT("XREAD BLOCK 10 STREAMS s 1-1", "[[\"s\",[[\"2-1\",[\"f\",\"v\",\"a\",\"b\"]]]]]");
    EXPECT("XDEL s 2-1", "1");
    EXPECT("XREAD STREAMS s 1-1", "nil");
    /* More than 16 streams in one command. */
    char line[1024] = "XREAD STREAMS";
    for (int i = 0; i < 20; i++)
        strcat(line, " s");
    for (int i = 0; i < 20; i++)
        strcat(line, " 0");
    redisReply *r = run(line);
    cr_expect_eq(r->elements, 20);
    freeReplyObject(r);
}

Test(memory, xread_block_reports_and_remembers_dollar) {
    expect_blocked(conn, "XREAD BLOCK 0 STREAMS s $", 0);
    expect_blocked(conn, "XREAD BLOCK 250 STREAMS s 0", 250);
    /* The blocked '$' meant "after 0-0" (no stream yet); an entry written meanwhile by another
     * connection must be seen when the command runs again. */
    expect_blocked(conn, "XREAD BLOCK 0 STREAMS s $", 0);
    eddy__mem_conn *other = eddy__mem_conn_new(eng);
    expect_on(other, "XADD s 1-1 f v", "\"1-1\"");
    EXPECT("XREAD BLOCK 0 STREAMS s $", "[[\"s\",[[\"1-1\",[\"f\",\"v\"]]]]]");
    /* Served: the next '$' is fresh again. */
    expect_blocked(conn, "XREAD BLOCK 0 STREAMS s $", 0);
    expect_on(other, "XADD s 2-1 f v", "\"2-1\"");
    expect_on(other, "XADD s 3-1 f v", "\"3-1\"");
    EXPECT("XREAD BLOCK 0 STREAMS s $",
           "[[\"s\",[[\"2-1\",[\"f\",\"v\"]],[\"3-1\",[\"f\",\"v\"]]]]]");
    /* A different command in between forgets the blocked one. */
    expect_blocked(conn, "XREAD BLOCK 0 STREAMS s $", 0);
    expect_on(other, "XADD s 4-1 f v", "\"4-1\"");
    EXPECT("PING", "+PONG");
    expect_blocked(conn, "XREAD BLOCK 0 STREAMS s $", 0);
    eddy__mem_conn_free(other);
}

/* ---- consumer groups ---------------------------------------------------------------------- */

Test(memory, xgroup_commands) {
    const char *nokey = "-ERR The XGROUP subcommand requires the key to exist. Note that for "
                        "CREATE you may want to use the MKSTREAM option to create an empty stream "
                        "automatically.";
    EXPECT("XGROUP CREATE k g $", nokey);
    EXPECT("XGROUP CREATE k g $ FOO",
           "-ERR unknown subcommand or wrong number of arguments for 'CREATE'. Try XGROUP HELP.");
    EXPECT("XGROUP CREATE k g bad MKSTREAM",
           "-ERR Invalid stream ID specified as stream command argument");
    EXPECT("EXISTS k", "0");
    EXPECT("XGROUP CREATE k g $ MKSTREAM", "+OK");
    EXPECT("XGROUP CREATE k g $ MKSTREAM", "-BUSYGROUP Consumer Group name already exists");
    EXPECT("XGROUP CREATE k g 0", "-BUSYGROUP Consumer Group name already exists");
    EXPECT("XGROUP CREATE k g2 -", "-ERR Invalid stream ID specified as stream command argument");
    EXPECT("XGROUP CREATE k g2 1-1 ENTRIESREAD -5",
           "-ERR value for ENTRIESREAD must be positive or -1");
    EXPECT("XGROUP CREATE k g2 1-1 ENTRIESREAD x", "-ERR value is not an integer or out of range");
    EXPECT("XGROUP CREATE k g2 1-1 ENTRIESREAD",
           "-ERR unknown subcommand or wrong number of arguments for 'CREATE'. Try XGROUP HELP.");
    EXPECT("XGROUP CREATE k g3 1-1 MKSTREAM MKSTREAM MKSTREAM MKSTREAM",
           "-ERR unknown subcommand or wrong number of arguments for 'CREATE'. Try XGROUP HELP.");
    EXPECT("XGROUP CREATE k g2 1-1 ENTRIESREAD 3 MKSTREAM", "+OK");
    EXPECT("XGROUP SETID k nog 0", "-NOGROUP No such consumer group 'nog' for key name 'k'");
    EXPECT("XGROUP SETID k g bad", "-ERR Invalid stream ID specified as stream command argument");
    EXPECT("XGROUP SETID k g 0 ENTRIESREAD x", "-ERR value is not an integer or out of range");
    EXPECT("XGROUP SETID k g 0 ENTRIESREAD -2",
           "-ERR value for ENTRIESREAD must be positive or -1");
    EXPECT("XGROUP SETID k g 0 FOO 5",
           "-ERR unknown subcommand or wrong number of arguments for 'SETID'. Try XGROUP HELP.");
    EXPECT("XGROUP SETID k g 0 ENTRIESREAD",
           "-ERR unknown subcommand or wrong number of arguments for 'SETID'. Try XGROUP HELP.");
    EXPECT("XGROUP SETID k g +", "+OK");
    EXPECT("XGROUP SETID k g 5 ENTRIESREAD 2", "+OK");
    EXPECT("XGROUP SETID nokey g 0", nokey);
    EXPECT("XGROUP DESTROY nokey g", nokey);
    EXPECT("XGROUP DESTROY k nog", "0");
    EXPECT("XGROUP CREATECONSUMER k g c1", "1");
    EXPECT("XGROUP CREATECONSUMER k g c1", "0");
    EXPECT("XGROUP CREATECONSUMER k nog c1",
           "-NOGROUP No such consumer group 'nog' for key name 'k'");
    EXPECT("XGROUP CREATECONSUMER nokey g c1", nokey);
    EXPECT("XGROUP DELCONSUMER k g c1", "0");
    EXPECT("XGROUP DELCONSUMER k g c1", "0");
    EXPECT("XGROUP DELCONSUMER k nog c1", "-NOGROUP No such consumer group 'nog' for key name 'k'");
    EXPECT("XINFO GROUPS k",
           "[[\"name\",\"g\",\"consumers\",0,\"pending\",0,\"last-delivered-id\",\"5-0\","
           "\"entries-read\",2,\"lag\",0],[\"name\",\"g2\",\"consumers\",0,\"pending\",0,"
           "\"last-delivered-id\",\"1-1\",\"entries-read\",3,\"lag\",0]]");
    EXPECT("XGROUP DESTROY k g", "1");
    EXPECT("XGROUP DESTROY k g", "0");
    EXPECT("SET str v", "+OK");
    const char *wrong = "-WRONGTYPE Operation against a key holding the wrong kind of value";
    EXPECT("XGROUP CREATE str g $", wrong);
    EXPECT("XGROUP CREATE str g $ MKSTREAM", wrong);
    EXPECT("XGROUP CREATE str g $ FOO",
           "-ERR unknown subcommand or wrong number of arguments for 'CREATE'. Try XGROUP HELP.");
    EXPECT("XGROUP SETID str g 0", wrong);
    EXPECT("XGROUP DESTROY str g", wrong);
    EXPECT("XGROUP CREATECONSUMER str g c", wrong);
    EXPECT("XGROUP DELCONSUMER str g c", wrong);
    EXPECT("XGROUP CREATE \"we\\r\\nird\" g $", nokey);
    EXPECT("XGROUP SETID k \"a\\r\\nb\" 0",
           "-NOGROUP No such consumer group 'a  b' for key name 'k'");
}

Test(memory, xreadgroup_errors) {
    EXPECT("XADD s 1-1 f v", "\"1-1\"");
    EXPECT("XREADGROUP STREAMS s 0", "-ERR wrong number of arguments for 'xreadgroup' command");
    EXPECT("XREADGROUP COUNT 1 BLOCK 0 STREAMS s >", "-ERR Missing GROUP option for XREADGROUP");
    EXPECT("XREADGROUP GROUP g c STREAMS s 0",
           "-NOGROUP No such key 's' or consumer group 'g' in XREADGROUP with GROUP option");
    EXPECT("XREADGROUP GROUP g c STREAMS nokey >",
           "-NOGROUP No such key 'nokey' or consumer group 'g' in XREADGROUP with GROUP option");
    EXPECT("XREADGROUP GROUP g c STREAMS s 0 x",
           "-ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be "
           "specified.");
    EXPECT("XREADGROUP GROUP g c FOO STREAMS s 0", "-ERR syntax error");
    EXPECT("XGROUP CREATE s g 0", "+OK");
    EXPECT("XREADGROUP GROUP g c STREAMS s $",
           "-ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the "
           "history of this consumer by specifying a proper ID, or use the > ID to get new "
           "messages. The $ ID would just return an empty result set.");
    EXPECT("XREADGROUP GROUP g c STREAMS s bad",
           "-ERR Invalid stream ID specified as stream command argument");
    EXPECT("XREADGROUP GROUP g c STREAMS s nokey > >",
           "-NOGROUP No such key 'nokey' or consumer group 'g' in XREADGROUP with GROUP option");
    EXPECT("SET str x", "+OK");
    EXPECT("XREADGROUP GROUP g c STREAMS str s > >",
           "-WRONGTYPE Operation against a key holding the wrong kind of value");
    EXPECT("XREADGROUP GROUP g c COUNT x STREAMS s >",
           "-ERR value is not an integer or out of range");
    EXPECT("XREADGROUP GROUP g c BLOCK -3 STREAMS s >", "-ERR timeout is negative");
    EXPECT("XINFO GROUPS s", "[[\"name\",\"g\",\"consumers\",0,\"pending\",0,\"last-delivered-id\","
                             "\"0-0\",\"entries-read\",nil,\"lag\",1]]");
}

Test(memory, xreadgroup_delivery_and_history) {
    EXPECT("XADD s 1-1 f v", "\"1-1\"");
    EXPECT("XADD s 2-1 f v a b", "\"2-1\"");
    EXPECT("XGROUP CREATE s g 0", "+OK");
    /* History of a consumer with nothing pending: the stream with an empty list, never a block. */
    EXPECT("XREADGROUP GROUP g c BLOCK 0 STREAMS s 0", "[[\"s\",[]]]");
    EXPECT("XREADGROUP GROUP g c STREAMS s >",
           "[[\"s\",[[\"1-1\",[\"f\",\"v\"]],[\"2-1\",[\"f\",\"v\",\"a\",\"b\"]]]]]");
    EXPECT("XREADGROUP GROUP g c STREAMS s >", "nil");
    cr_expect_eq(delivery_count("s", "g", "1-1"), 1);
    /* Reading one's own history counts as a delivery, as in Redis 7.0. */
    EXPECT("XREADGROUP GROUP g c STREAMS s 0",
           "[[\"s\",[[\"1-1\",[\"f\",\"v\"]],[\"2-1\",[\"f\",\"v\",\"a\",\"b\"]]]]]");
    cr_expect_eq(delivery_count("s", "g", "1-1"), 2);
    EXPECT("XREADGROUP GROUP g c COUNT 1 STREAMS s 1-1",
           "[[\"s\",[[\"2-1\",[\"f\",\"v\",\"a\",\"b\"]]]]]");
    cr_expect_eq(delivery_count("s", "g", "2-1"), 3);
    /* A pending entry deleted from the stream shows as [id, nil], and is not counted. */
    EXPECT("XDEL s 1-1", "1");
    EXPECT("XREADGROUP GROUP g c STREAMS s 0",
           "[[\"s\",[[\"1-1\",nil],[\"2-1\",[\"f\",\"v\",\"a\",\"b\"]]]]]");
    cr_expect_eq(delivery_count("s", "g", "1-1"), 2);
    /* Another consumer's history is its own (empty); it is created by the read. */
    EXPECT("XREADGROUP GROUP g c2 STREAMS s 0", "[[\"s\",[]]]");
    EXPECT("XINFO GROUPS s", "[[\"name\",\"g\",\"consumers\",2,\"pending\",2,\"last-delivered-id\","
                             "\"2-1\",\"entries-read\",2,\"lag\",0]]");
    /* A '>' read that finds nothing does not create its consumer. */
    EXPECT("XREADGROUP GROUP g c3 STREAMS s >", "nil");
    expect_blocked(conn, "XREADGROUP GROUP g c3 BLOCK 5 STREAMS s >", 5);
    EXPECT("XINFO GROUPS s", "[[\"name\",\"g\",\"consumers\",2,\"pending\",2,\"last-delivered-id\","
                             "\"2-1\",\"entries-read\",2,\"lag\",0]]");
    /* Several keys: only those with something to serve appear. */
    EXPECT("XREADGROUP GROUP g c STREAMS s s > 0",
           "[[\"s\",[[\"1-1\",nil],[\"2-1\",[\"f\",\"v\",\"a\",\"b\"]]]]]");
    EXPECT("XGROUP CREATE t g $ MKSTREAM", "+OK");
    EXPECT("XADD t 5-1 k v", "\"5-1\"");
    EXPECT("XADD s 3-1 x y", "\"3-1\"");
    EXPECT("XREADGROUP GROUP g c COUNT 1 STREAMS s t > >",
           "[[\"s\",[[\"3-1\",[\"x\",\"y\"]]]],[\"t\",[[\"5-1\",[\"k\",\"v\"]]]]]");
    /* NOACK: delivered and the group advances, but nothing becomes pending. */
    EXPECT("XADD s 4-1 n n", "\"4-1\"");
    EXPECT("XREADGROUP GROUP g c NOACK STREAMS s >", "[[\"s\",[[\"4-1\",[\"n\",\"n\"]]]]]");
    EXPECT("XPENDING s g", "[3,\"1-1\",\"3-1\",[[\"c\",\"3\"]]]");
    /* SETID back: pending entries change hands and their count starts again. */
    EXPECT("XGROUP SETID s g 2-1", "+OK");
    EXPECT("XREADGROUP GROUP g c2 COUNT 1 STREAMS s >", "[[\"s\",[[\"3-1\",[\"x\",\"y\"]]]]]");
    cr_expect_eq(delivery_count("s", "g", "3-1"), 1);
    EXPECT("XPENDING s g", "[3,\"1-1\",\"3-1\",[[\"c\",\"2\"],[\"c2\",\"1\"]]]");
    /* The literal maximum id means '>' too, as in Redis. */
    EXPECT("XREADGROUP GROUP g c2 STREAMS s 18446744073709551615-18446744073709551615",
           "[[\"s\",[[\"4-1\",[\"n\",\"n\"]]]]]");
    /* Group destroyed: a re-run of a blocked read now answers NOGROUP. */
    expect_blocked(conn, "XREADGROUP GROUP g c BLOCK 0 STREAMS t >", 0);
    EXPECT("XGROUP DESTROY t g", "1");
    EXPECT("XREADGROUP GROUP g c BLOCK 0 STREAMS t >",
           "-NOGROUP No such key 't' or consumer group 'g' in XREADGROUP with GROUP option");
}

Test(memory, xack) {
    EXPECT("XADD s 1-1 f 1", "\"1-1\"");
    EXPECT("XADD s 2-1 f 2", "\"2-1\"");
    EXPECT("XGROUP CREATE s g 0", "+OK");
    EXPECT("XREADGROUP GROUP g c STREAMS s >",
           "[[\"s\",[[\"1-1\",[\"f\",\"1\"]],[\"2-1\",[\"f\",\"2\"]]]]]");
    EXPECT("XACK s g bad", "-ERR Invalid stream ID specified as stream command argument");
    EXPECT("XACK s g 1-1 bad", "-ERR Invalid stream ID specified as stream command argument");
    EXPECT("XACK nokey g bad", "0");
    EXPECT("XACK s nog bad", "0");
    EXPECT("SET str x", "+OK");
    EXPECT("XACK str g bad", "-WRONGTYPE Operation against a key holding the wrong kind of value");
    EXPECT("XACK s g 1-1 1-1 9-9", "1");
    EXPECT("XACK s g 1-1", "0");
    EXPECT("XACK s g 2-1", "1");
    EXPECT("XPENDING s g", "[0,nil,nil,nil]");
}

Test(memory, xpending) {
    EXPECT("XADD s 1-1 f 1", "\"1-1\"");
    EXPECT("XADD s 2-1 f 2", "\"2-1\"");
    EXPECT("XADD s 3-1 f 3", "\"3-1\"");
    EXPECT("XGROUP CREATE s g 0", "+OK");
    EXPECT("XPENDING s g", "[0,nil,nil,nil]");
    EXPECT("XPENDING s g - + 10", "[]");
    EXPECT("XREADGROUP GROUP g c STREAMS s >",
           "[[\"s\",[[\"1-1\",[\"f\",\"1\"]],[\"2-1\",[\"f\",\"2\"]],[\"3-1\",[\"f\",\"3\"]]]]]");
    EXPECT("XCLAIM s g b 0 3-1 JUSTID", "[\"3-1\"]");
    EXPECT("XPENDING s g", "[3,\"1-1\",\"3-1\",[[\"b\",\"1\"],[\"c\",\"2\"]]]");
    EXPECT("XPENDING s g x", "-ERR syntax error");
    EXPECT("XPENDING s g - +", "-ERR syntax error");
    EXPECT("XPENDING s g - + x", "-ERR value is not an integer or out of range");
    EXPECT("XPENDING s g - + 10 c extra more more", "-ERR syntax error");
    EXPECT("XPENDING s g IDLE x - + 10", "-ERR value is not an integer or out of range");
    EXPECT("XPENDING s g IDLE 10 - +", "-ERR syntax error");
    EXPECT("XPENDING s g bad + 1", "-ERR Invalid stream ID specified as stream command argument");
    EXPECT("XPENDING s g ( + 1", "-ERR Invalid stream ID specified as stream command argument");
    EXPECT("XPENDING s g (18446744073709551615-18446744073709551615 + 10",
           "-ERR invalid start ID for the interval");
    EXPECT("XPENDING s g - (0-0 10", "-ERR invalid end ID for the interval");
    EXPECT("XPENDING nokey g", "-NOGROUP No such key 'nokey' or consumer group 'g'");
    EXPECT("XPENDING s nog - + 1", "-NOGROUP No such key 's' or consumer group 'nog'");
    EXPECT("SET str x", "+OK");
    EXPECT("XPENDING str g", "-WRONGTYPE Operation against a key holding the wrong kind of value");
    EXPECT("XPENDING nokey g - + x", "-ERR value is not an integer or out of range");
    EXPECT("XPENDING s g IDLE 100000 - + 10", "[]");
    EXPECT("XPENDING s g - + -1", "[]");
    EXPECT("XPENDING s g - + 10 nobody", "[]");
    redisReply *r = run("XPENDING s g IDLE 0 (1-1 + 10 c");
    cr_assert_eq(r->elements, 1);
    cr_expect_str_eq(r->element[0]->element[0]->str, "2-1");
    cr_expect_str_eq(r->element[0]->element[1]->str, "c");
    cr_expect(r->element[0]->element[2]->integer >= 0 && r->element[0]->element[2]->integer < 5000);
    cr_expect_eq(r->element[0]->element[3]->integer, 1);
    freeReplyObject(r);
    r = run("XPENDING s g - (3-1 1");
    cr_expect_eq(r->elements, 1);
    freeReplyObject(r);
    sleep_ms(30);
    r = run("XPENDING s g IDLE 20 - + 10 nobody");
    cr_expect_eq(r->elements, 0);
    freeReplyObject(r);
    r = run("XPENDING s g IDLE 20 - + 10");
    cr_expect_eq(r->elements, 3);
    cr_expect_geq(r->element[0]->element[2]->integer, 20);
    freeReplyObject(r);
}

Test(memory, xclaim) {
    for (int i = 1; i <= 4; i++) {
        char line[64];
        snprintf(line, sizeof(line), "XADD s %d-1 f %d", i, i);
        freeReplyObject(run(line));
    }
    EXPECT("XGROUP CREATE s g 0", "+OK");
    freeReplyObject(run("XREADGROUP GROUP g c STREAMS s >"));
    EXPECT("XACK s g 1-1", "1");
    EXPECT("XCLAIM s g c2 x 2-1", "-ERR Invalid min-idle-time argument for XCLAIM");
    EXPECT("XCLAIM nokey g c2 x 2-1", "-NOGROUP No such key 'nokey' or consumer group 'g'");
    EXPECT("XCLAIM s nog c2 0 2-1", "-NOGROUP No such key 's' or consumer group 'nog'");
    EXPECT("XCLAIM s g c2 0 bad", "-ERR Unrecognized XCLAIM option 'bad'");
    EXPECT("XCLAIM s g c2 0 2-1 IDLE x", "-ERR Invalid IDLE option argument for XCLAIM");
    EXPECT("XCLAIM s g c2 0 2-1 TIME x", "-ERR Invalid TIME option argument for XCLAIM");
    EXPECT("XCLAIM s g c2 0 2-1 RETRYCOUNT x",
           "-ERR Invalid RETRYCOUNT option argument for XCLAIM");
    EXPECT("XCLAIM s g c2 0 2-1 LASTID bad",
           "-ERR Invalid stream ID specified as stream command argument");
    EXPECT("XCLAIM s g c2 0 2-1 IDLE", "-ERR Unrecognized XCLAIM option 'IDLE'");
    EXPECT("XCLAIM s g c2 0 2-1 FOO", "-ERR Unrecognized XCLAIM option 'FOO'");
    EXPECT("SET str x", "+OK");
    EXPECT("XCLAIM str g c 0 1-1",
           "-WRONGTYPE Operation against a key holding the wrong kind of value");
    /* Claiming counts a delivery; ids not pending are skipped. */
    EXPECT("XCLAIM s g c2 0 2-1 1-1 9-9", "[[\"2-1\",[\"f\",\"2\"]]]");
    cr_expect_eq(delivery_count("s", "g", "2-1"), 2);
    EXPECT("XCLAIM s g c3 0 2-1 JUSTID", "[\"2-1\"]");
    cr_expect_eq(delivery_count("s", "g", "2-1"), 2); /* JUSTID does not count */
    EXPECT("XCLAIM s g c3 0 2-1 RETRYCOUNT 7 IDLE 5000", "[[\"2-1\",[\"f\",\"2\"]]]");
    cr_expect_eq(delivery_count("s", "g", "2-1"), 7);
    EXPECT("XCLAIM s g c3 10000 2-1", "[]");
    EXPECT("XCLAIM s g c3 1000 2-1", "[[\"2-1\",[\"f\",\"2\"]]]");
    EXPECT("XCLAIM s g c3 -5 2-1 JUSTID", "[\"2-1\"]");
    EXPECT("XCLAIM s g c3 0 2-1 TIME 1 JUSTID", "[\"2-1\"]");
    redisReply *r = run("XPENDING s g IDLE 1000000 - + 10");
    cr_expect_eq(r->elements, 1); /* TIME in the past is kept */
    freeReplyObject(r);
    EXPECT("XCLAIM s g c3 0 2-1 TIME 99999999999999 JUSTID", "[\"2-1\"]");
    r = run("XPENDING s g IDLE 1000000 - + 10");
    cr_expect_eq(r->elements, 0); /* a future TIME becomes now */
    freeReplyObject(r);
    /* FORCE creates a pending entry for an existing entry only. */
    EXPECT("XCLAIM s g c4 0 9-9 FORCE", "[]");
    EXPECT("XCLAIM s g c4 0 1-1 FORCE", "[[\"1-1\",[\"f\",\"1\"]]]");
    cr_expect_eq(delivery_count("s", "g", "1-1"), 2);
    /* An entry deleted from the stream is dropped from the PEL by a claim. */
    EXPECT("XDEL s 3-1", "1");
    EXPECT("XCLAIM s g c4 0 3-1 FORCE", "[]");
    r = run("XPENDING s g - + 10 c");
    cr_assert_eq(r->elements, 1);
    cr_expect_str_eq(r->element[0]->element[0]->str, "4-1");
    freeReplyObject(r);
    r = run("XPENDING s g");
    cr_expect_eq(r->element[0]->integer, 3);
    freeReplyObject(r);
    EXPECT("XCLAIM s g c5 0 2-1 LASTID 100-1 JUSTID", "[\"2-1\"]");
    EXPECT("XCLAIM s g c5 0 2-1 LASTID 1-1 JUSTID", "[\"2-1\"]");
    r = run("XINFO GROUPS s");
    cr_expect_str_eq(r->element[0]->element[7]->str, "100-1");
    freeReplyObject(r);
    EXPECT("XCLAIM s g c5 0 1-1 2-1 4-1 JUSTID RETRYCOUNT 0", "[\"1-1\",\"2-1\",\"4-1\"]");
    cr_expect_eq(delivery_count("s", "g", "4-1"), 0);
    EXPECT("XPENDING s g", "[3,\"1-1\",\"4-1\",[[\"c5\",\"3\"]]]");
}

Test(memory, xautoclaim) {
    for (int i = 1; i <= 5; i++) {
        char line[64];
        snprintf(line, sizeof(line), "XADD s %d-1 f %d", i, i);
        freeReplyObject(run(line));
    }
    EXPECT("XGROUP CREATE s g 0", "+OK");
    freeReplyObject(run("XREADGROUP GROUP g c STREAMS s >"));
    EXPECT("XAUTOCLAIM s g c2 x 0", "-ERR Invalid min-idle-time argument for XAUTOCLAIM");
    EXPECT("XAUTOCLAIM s g c2 0 bad",
           "-ERR Invalid stream ID specified as stream command argument");
    EXPECT("XAUTOCLAIM s g c2 0 0 COUNT 0", "-ERR COUNT must be > 0");
    EXPECT("XAUTOCLAIM s g c2 0 0 COUNT x", "-ERR COUNT must be > 0");
    EXPECT("XAUTOCLAIM s g c2 0 0 COUNT 9223372036854775807", "-ERR COUNT must be > 0");
    EXPECT("XAUTOCLAIM s g c2 0 0 COUNT", "-ERR syntax error");
    EXPECT("XAUTOCLAIM s g c2 0 0 FOO", "-ERR syntax error");
    EXPECT("XAUTOCLAIM nokey g c2 0 0", "-NOGROUP No such key 'nokey' or consumer group 'g'");
    EXPECT("XAUTOCLAIM nokey g c2 0 0 FOO", "-ERR syntax error");
    EXPECT("XAUTOCLAIM s g c2 0 (18446744073709551615-18446744073709551615",
           "-ERR invalid start ID for the interval");
    EXPECT("SET str x", "+OK");
    EXPECT("XAUTOCLAIM str g c 0 0",
           "-WRONGTYPE Operation against a key holding the wrong kind of value");
    EXPECT("XAUTOCLAIM s g c2 0 0 COUNT 2",
           "[\"3-1\",[[\"1-1\",[\"f\",\"1\"]],[\"2-1\",[\"f\",\"2\"]]],[]]");
    cr_expect_eq(delivery_count("s", "g", "1-1"), 2);
    EXPECT("XAUTOCLAIM s g c2 0 3-0 COUNT 2 JUSTID", "[\"5-1\",[\"3-1\",\"4-1\"],[]]");
    cr_expect_eq(delivery_count("s", "g", "3-1"), 1);
    /* Deleted entries leave the PEL and are listed in the third element. */
    EXPECT("XDEL s 1-1 4-1", "2");
    EXPECT("XAUTOCLAIM s g c3 0 0 COUNT 2", "[\"3-1\",[[\"2-1\",[\"f\",\"2\"]]],[\"1-1\"]]");
    EXPECT("XAUTOCLAIM s g c3 0 0",
           "[\"0-0\",[[\"2-1\",[\"f\",\"2\"]],[\"3-1\",[\"f\",\"3\"]],[\"5-1\",[\"f\",\"5\"]]],"
           "[\"4-1\"]]");
    EXPECT("XAUTOCLAIM s g c3 100000 0", "[\"0-0\",[],[]]");
    EXPECT("XAUTOCLAIM s g c3 0 (2-1",
           "[\"0-0\",[[\"3-1\",[\"f\",\"3\"]],[\"5-1\",[\"f\",\"5\"]]],[]]");
    EXPECT("XAUTOCLAIM s g c3 0 - COUNT 1", "[\"3-1\",[[\"2-1\",[\"f\",\"2\"]]],[]]");
    EXPECT("XAUTOCLAIM s g c3 0 + COUNT 1", "[\"0-0\",[],[]]");
    EXPECT("XPENDING s g", "[3,\"2-1\",\"5-1\",[[\"c3\",\"3\"]]]");
    /* Idle filter: attempts are bounded by 10 * COUNT, and the cursor resumes after them. */
    EXPECT("XAUTOCLAIM s g c4 100000 0 COUNT 1", "[\"0-0\",[],[]]");
    EXPECT("XGROUP DELCONSUMER s g c3", "3");
    EXPECT("XPENDING s g", "[0,nil,nil,nil]");
    EXPECT("XAUTOCLAIM s g c3 0 0", "[\"0-0\",[],[]]");
}

Test(memory, xautoclaim_attempts_bound) {
    for (int i = 1; i <= 30; i++) {
        char line[64];
        snprintf(line, sizeof(line), "XADD s %d-1 f %d", i, i);
        freeReplyObject(run(line));
    }
    EXPECT("XGROUP CREATE s g 0", "+OK");
    freeReplyObject(run("XREADGROUP GROUP g c STREAMS s >"));
    /* Nothing is idle enough: COUNT 1 allows 10 attempts, then the cursor is the 11th id. */
    EXPECT("XAUTOCLAIM s g c2 100000 0 COUNT 1", "[\"11-1\",[],[]]");
    EXPECT("XAUTOCLAIM s g c2 100000 11-1 COUNT 2", "[\"0-0\",[],[]]");
}

Test(memory, xinfo) {
    EXPECT("XINFO STREAM nokey", "-ERR no such key");
    EXPECT("XINFO GROUPS nokey", "-ERR no such key");
    EXPECT("XINFO CONSUMERS nokey g", "-ERR no such key");
    EXPECT("SET str x", "+OK");
    const char *wrong = "-WRONGTYPE Operation against a key holding the wrong kind of value";
    EXPECT("XINFO STREAM str", wrong);
    EXPECT("XINFO GROUPS str", wrong);
    EXPECT("XINFO CONSUMERS str g", wrong);
    EXPECT("XADD s 1-1 f 1", "\"1-1\"");
    EXPECT("XADD s 2-1 f 2 g 3", "\"2-1\"");
    EXPECT("XADD s 3-1 f 3", "\"3-1\"");
    EXPECT("XINFO CONSUMERS s nog", "-NOGROUP No such consumer group 'nog' for key name 's'");
    EXPECT("XINFO STREAM s FOO",
           "-ERR unknown subcommand or wrong number of arguments for 'STREAM'. Try XINFO HELP.");
    EXPECT("xinfo stream s foo",
           "-ERR unknown subcommand or wrong number of arguments for 'stream'. Try XINFO HELP.");
    EXPECT("XINFO STREAM s FULL COUNT",
           "-ERR unknown subcommand or wrong number of arguments for 'STREAM'. Try XINFO HELP.");
    EXPECT("XINFO STREAM s FULL COUNT x", "-ERR value is not an integer or out of range");
    EXPECT("XINFO GROUPS s", "[]");
    EXPECT("XINFO STREAM s",
           "[\"length\",3,\"radix-tree-keys\",1,\"radix-tree-nodes\",2,\"last-generated-id\","
           "\"3-1\",\"max-deleted-entry-id\",\"0-0\",\"entries-added\",3,"
           "\"recorded-first-entry-id\",\"1-1\",\"groups\",0,\"first-entry\",[\"1-1\",[\"f\","
           "\"1\"]],\"last-entry\",[\"3-1\",[\"f\",\"3\"]]]");
    EXPECT("XGROUP CREATE s b 0", "+OK");
    EXPECT("XGROUP CREATE s a $", "+OK");
    freeReplyObject(run("XREADGROUP GROUP b zed COUNT 2 STREAMS s >"));
    freeReplyObject(run("XREADGROUP GROUP b amy STREAMS s >"));
    EXPECT("XGROUP CREATECONSUMER s b bob", "1");
    EXPECT("XINFO GROUPS s",
           "[[\"name\",\"a\",\"consumers\",0,\"pending\",0,\"last-delivered-id\",\"3-1\","
           "\"entries-read\",nil,\"lag\",0],[\"name\",\"b\",\"consumers\",3,\"pending\",3,"
           "\"last-delivered-id\",\"3-1\",\"entries-read\",3,\"lag\",0]]");
    redisReply *r = run("XINFO CONSUMERS s b");
    cr_assert_eq(r->elements, 3);
    cr_expect_str_eq(r->element[0]->element[1]->str, "amy");
    cr_expect_eq(r->element[0]->element[3]->integer, 1);
    cr_expect_str_eq(r->element[1]->element[1]->str, "bob");
    cr_expect_str_eq(r->element[2]->element[1]->str, "zed");
    cr_expect_eq(r->element[2]->element[3]->integer, 2);
    cr_expect_str_eq(r->element[2]->element[4]->str, "idle");
    freeReplyObject(r);
    r = run("XINFO STREAM s FULL");
    cr_assert_eq(r->elements, 18);
    cr_expect_str_eq(r->element[14]->str, "entries");
    cr_expect_eq(r->element[15]->elements, 3);
    cr_expect_eq(r->element[17]->elements, 2);
    redisReply *gb = r->element[17]->element[1];
    cr_expect_str_eq(gb->element[1]->str, "b");
    cr_expect_eq(gb->element[9]->integer, 3);   /* pel-count */
    cr_expect_eq(gb->element[11]->elements, 3); /* pending */
    cr_expect_eq(gb->element[13]->elements, 3); /* consumers */
    cr_expect_str_eq(gb->element[13]->element[2]->element[1]->str, "zed");
    cr_expect_eq(gb->element[13]->element[2]->element[7]->elements, 2);
    freeReplyObject(r);
    r = run("XINFO STREAM s FULL COUNT 1");
    cr_expect_eq(r->element[15]->elements, 1);
    cr_expect_eq(r->element[17]->element[1]->element[11]->elements, 1);
    freeReplyObject(r);
    r = run("XINFO STREAM s FULL COUNT 0");
    cr_expect_eq(r->element[15]->elements, 3);
    freeReplyObject(r);
    r = run("XINFO STREAM s FULL COUNT -3");
    cr_expect_eq(r->element[15]->elements, 3);
    freeReplyObject(r);
    EXPECT("XTRIM s MAXLEN 0", "3");
    EXPECT("XINFO STREAM s",
           "[\"length\",0,\"radix-tree-keys\",0,\"radix-tree-nodes\",1,\"last-generated-id\","
           "\"3-1\",\"max-deleted-entry-id\",\"0-0\",\"entries-added\",3,"
           "\"recorded-first-entry-id\",\"0-0\",\"groups\",2,\"first-entry\",nil,\"last-entry\","
           "nil]");
}

Test(memory, entries_read_and_lag) {
    for (int i = 1; i <= 5; i++) {
        char line[64];
        snprintf(line, sizeof(line), "XADD d %d-1 f v", i);
        freeReplyObject(run(line));
    }
    EXPECT("XGROUP CREATE d g 0", "+OK");
    EXPECT("XGROUP CREATE d g2 $", "+OK");
    EXPECT("XGROUP CREATE d g3 3-1", "+OK");
    EXPECT("XGROUP CREATE d g4 0 ENTRIESREAD 2", "+OK");
    EXPECT("XINFO GROUPS d",
           "[[\"name\",\"g\",\"consumers\",0,\"pending\",0,\"last-delivered-id\",\"0-0\","
           "\"entries-read\",nil,\"lag\",5],[\"name\",\"g2\",\"consumers\",0,\"pending\",0,"
           "\"last-delivered-id\",\"5-1\",\"entries-read\",nil,\"lag\",0],[\"name\",\"g3\","
           "\"consumers\",0,\"pending\",0,\"last-delivered-id\",\"3-1\",\"entries-read\",nil,"
           "\"lag\",nil],[\"name\",\"g4\",\"consumers\",0,\"pending\",0,\"last-delivered-id\","
           "\"0-0\",\"entries-read\",2,\"lag\",3]]");
    freeReplyObject(run("XREADGROUP GROUP g c COUNT 2 STREAMS d >"));
    EXPECT("XDEL d 4-1", "1");
    freeReplyObject(run("XREADGROUP GROUP g c COUNT 1 STREAMS d >"));
    redisReply *r = run("XINFO GROUPS d");
    cr_expect_eq(r->element[0]->element[9]->type, REDIS_REPLY_NIL); /* tombstone ahead */
    cr_expect_eq(r->element[0]->element[11]->type, REDIS_REPLY_NIL);
    freeReplyObject(r);
    freeReplyObject(run("XREADGROUP GROUP g c STREAMS d >"));
    r = run("XINFO GROUPS d");
    cr_expect_eq(r->element[0]->element[9]->integer, 5); /* caught up: exact again */
    cr_expect_eq(r->element[0]->element[11]->integer, 0);
    freeReplyObject(r);
    EXPECT("XDEL d 1-1 2-1 3-1 5-1", "4");
    r = run("XINFO GROUPS d");
    cr_expect_eq(r->element[2]->element[11]->integer, 0); /* empty stream: everything read */
    cr_expect_eq(r->element[3]->element[11]->integer, 3);
    freeReplyObject(r);
}

/* ---- MULTI/EXEC --------------------------------------------------------------------------- */

Test(memory, multi_exec_discard) {
    EXPECT("EXEC", "-ERR EXEC without MULTI");
    EXPECT("DISCARD", "-ERR DISCARD without MULTI");
    EXPECT("MULTI", "+OK");
    EXPECT("MULTI", "-ERR MULTI calls can not be nested");
    EXPECT("SET a x", "+QUEUED");
    EXPECT("INCR a", "+QUEUED");
    EXPECT("XADD s 1-1 f v", "+QUEUED");
    EXPECT("XREAD BLOCK 0 STREAMS s $", "+QUEUED");
    EXPECT("XGROUP CREATE s g $", "+QUEUED");
    EXPECT("XREADGROUP GROUP g c BLOCK 0 STREAMS s >", "+QUEUED");
    EXPECT("XREADGROUP GROUP g c STREAMS s 0", "+QUEUED");
    EXPECT("GET a", "+QUEUED");
    EXPECT("EXEC", "[+OK,-ERR value is not an integer or out of range,\"1-1\",nil,+OK,nil,"
                   "[[\"s\",[]]],\"x\"]");
    EXPECT("MULTI", "+OK");
    EXPECT("EXEC", "[]");
    /* A command rejected while queueing dooms the transaction. */
    EXPECT("MULTI", "+OK");
    EXPECT("SET b 1", "+QUEUED");
    EXPECT("GET a b", "-ERR wrong number of arguments for 'get' command");
    EXPECT("EXEC", "-EXECABORT Transaction discarded because of previous errors.");
    EXPECT("EXISTS b", "0");
    EXPECT("MULTI", "+OK");
    EXPECT("FOO", "-ERR unknown command 'FOO', with args beginning with: ");
    EXPECT("XGROUP FOO", "-ERR unknown subcommand 'FOO'. Try XGROUP HELP.");
    EXPECT("EXEC", "-EXECABORT Transaction discarded because of previous errors.");
    EXPECT("MULTI", "+OK");
    EXPECT("SET b 1", "+QUEUED");
    EXPECT("EXEC x",
           "-EXECABORT Transaction discarded because of: wrong number of arguments for 'exec' "
           "command");
    EXPECT("EXEC", "-ERR EXEC without MULTI");
    EXPECT("EXISTS b", "0");
    EXPECT("MULTI", "+OK");
    EXPECT("SET b 1", "+QUEUED");
    EXPECT("DISCARD", "+OK");
    EXPECT("DISCARD", "-ERR DISCARD without MULTI");
    EXPECT("EXISTS b", "0");
    /* MULTI state is per connection. */
    eddy__mem_conn *other = eddy__mem_conn_new(eng);
    EXPECT("MULTI", "+OK");
    EXPECT("SET c 1", "+QUEUED");
    expect_on(other, "GET c", "nil");
    expect_on(other, "EXEC", "-ERR EXEC without MULTI");
    EXPECT("EXEC", "[+OK]");
    expect_on(other, "GET c", "\"1\"");
    /* A connection freed in the middle of MULTI releases its queue. */
    expect_on(other, "MULTI", "+OK");
    expect_on(other, "SET d 1", "+QUEUED");
    eddy__mem_conn_free(other);
    EXPECT("EXISTS d", "0");
    /* Large transactions. */
    EXPECT("MULTI", "+OK");
    for (int i = 0; i < 100; i++)
        EXPECT("INCR counter", "+QUEUED");
    redisReply *r = run("EXEC");
    cr_expect_eq(r->elements, 100);
    cr_expect_eq(r->element[99]->integer, 100);
    freeReplyObject(r);
}

static void *incr_in_transactions(void *arg) {
    eddy__mem_conn *c = eddy__mem_conn_new(arg);
    for (int i = 0; i < 200; i++) {
        expect_on(c, "MULTI", "+OK");
        expect_on(c, "INCR tx", "+QUEUED");
        expect_on(c, "INCR tx", "+QUEUED");
        redisReply *r = run_on(c, "EXEC", NULL);
        cr_assert(r && r->elements == 2);
        /* Atomic: the two increments of one EXEC are consecutive. */
        cr_assert_eq(r->element[1]->integer, r->element[0]->integer + 1);
        cr_assert_eq(r->element[0]->integer % 2, 1);
        freeReplyObject(r);
    }
    eddy__mem_conn_free(c);
    return NULL;
}

Test(memory, exec_is_atomic_across_threads) {
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, incr_in_transactions, eng);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    EXPECT("GET tx", "\"1600\"");
}

/* ---- registry, sequence, waits, listeners ------------------------------------------------- */

Test(memory, registry_shares_by_name) {
    char name[96];
    eddy_test_namespace(name, sizeof(name), "shared");
    eddy__mem_engine *a = eddy__mem_engine_acquire(name);
    eddy__mem_engine *b = eddy__mem_engine_acquire(name);
    eddy__mem_engine *other = eddy__mem_engine_acquire("");
    cr_assert(a && b && other);
    cr_expect_eq(a, b);
    cr_expect_neq(a, other);
    eddy__mem_conn *ca = eddy__mem_conn_new(a), *cb = eddy__mem_conn_new(b);
    cr_expect_eq(eddy__mem_conn_engine(ca), a);
    expect_on(ca, "SET k shared", "+OK");
    expect_on(cb, "GET k", "\"shared\"");
    eddy__mem_conn_free(ca);
    eddy__mem_conn_free(cb);
    eddy__mem_engine_release(a);
    /* Still referenced by b: the data survives. */
    eddy__mem_engine *again = eddy__mem_engine_acquire(name);
    cr_expect_eq(again, b);
    eddy__mem_conn *cc = eddy__mem_conn_new(again);
    expect_on(cc, "GET k", "\"shared\"");
    eddy__mem_conn_free(cc);
    eddy__mem_engine_release(again);
    eddy__mem_engine_release(b);
    /* Last release destroyed it: a new engine under the same name starts empty. */
    eddy__mem_engine *fresh = eddy__mem_engine_acquire(name);
    eddy__mem_conn *cf = eddy__mem_conn_new(fresh);
    expect_on(cf, "GET k", "nil");
    eddy__mem_conn_free(cf);
    eddy__mem_engine_release(fresh);
    eddy__mem_engine_release(other);
    eddy__mem_engine_release(NULL);
    eddy__mem_conn_free(NULL);
    eddy__mem_engine *nul = eddy__mem_engine_acquire(NULL); /* NULL is the name "" */
    cr_expect(nul);
    eddy__mem_engine_release(nul);
}

Test(memory, sequence_counts_writes_only) {
    uint64_t s0 = eddy__mem_engine_seq(eng);
    EXPECT("GET k", "nil");
    EXPECT("XRANGE s - +", "[]");
    EXPECT("SET k v NX XX", "-ERR syntax error");
    cr_expect_eq(eddy__mem_engine_seq(eng), s0);
    EXPECT("SET k v", "+OK");
    cr_expect_eq(eddy__mem_engine_seq(eng), s0 + 1);
    EXPECT("MULTI", "+OK");
    EXPECT("SET a 1", "+QUEUED");
    EXPECT("SET b 1", "+QUEUED");
    cr_expect_eq(eddy__mem_engine_seq(eng), s0 + 1);
    EXPECT("EXEC", "[+OK,+OK]");
    cr_expect_eq(eddy__mem_engine_seq(eng), s0 + 2); /* one bump per EXEC */
}

/* How many times the engine signalled fd since the last look (an eventfd: read resets it). */
static uint64_t signals_on(int fd) {
    uint64_t n = 0;
    return read(fd, &n, sizeof(n)) == (ssize_t)sizeof(n) ? n : 0;
}

/* Parks reader on a new blocking read of stream s (a PING first ends the one before, whose '$'
 * would otherwise still mean the ids it first saw), as the memory:// link does. */
static void park_on_s(eddy__mem_conn *reader, int fd) {
    long long block_ms;
    freeReplyObject(run_on(reader, "PING", &block_ms));
    cr_assert_null(run_on(reader, "XREAD BLOCK 0 STREAMS s $", &block_ms));
    cr_assert(eddy__mem_conn_park(reader, fd));
}

Test(memory, a_parked_read_is_signalled_by_the_writes_that_can_serve_it) {
    int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    cr_assert_geq(fd, 0);
    EXPECT("XADD s 1-1 f v", "\"1-1\"");
    EXPECT("XGROUP CREATE s g 0", "+OK");
    eddy__mem_conn *reader = eddy__mem_conn_new(eng);
    park_on_s(reader, fd);
    EXPECT("XADD other 1-1 f v", "\"1-1\""); /* another stream */
    /* Deliveries, acknowledgements and claims change data but serve no blocked read. */
    EXPECT("XREADGROUP GROUP g c STREAMS s >", "[[\"s\",[[\"1-1\",[\"f\",\"v\"]]]]]");
    EXPECT("XCLAIM s g d 0 1-1 JUSTID", "[\"1-1\"]");
    EXPECT("XAUTOCLAIM s g c 0 0 JUSTID", "[\"0-0\",[\"1-1\"],[]]");
    EXPECT("XACK s g 1-1", "1");
    cr_expect_eq(signals_on(fd), 0);
    EXPECT("XADD s 2-1 f v", "\"2-1\"");
    EXPECT("XADD s 3-1 f v", "\"3-1\"");
    cr_expect_eq(signals_on(fd), 1, "once until it parks again");
    eddy__mem_conn_unpark(reader);
    park_on_s(reader, fd);
    EXPECT("SET k v", "+OK"); /* any other kind of write may serve it */
    cr_expect_eq(signals_on(fd), 1);
    eddy__mem_conn_unpark(reader);
    park_on_s(reader, fd);
    EXPECT("XGROUP DESTROY s g", "1"); /* so does the group going away */
    cr_expect_eq(signals_on(fd), 1);
    eddy__mem_conn_unpark(reader);
    /* A write between the read and the park: nothing parks, the read runs again at once. */
    long long block_ms;
    cr_assert_null(run_on(reader, "XREAD BLOCK 0 STREAMS s $", &block_ms));
    EXPECT("XADD s 4-1 f v", "\"4-1\"");
    cr_expect(!eddy__mem_conn_park(reader, fd));
    park_on_s(reader, fd);
    eddy__mem_conn_free(reader); /* unparks: later writes touch no closed fd */
    EXPECT("XADD s 5-1 f v", "\"5-1\"");
    cr_expect_eq(signals_on(fd), 0);
    close(fd);
}

/* ---- the blocking protocol across threads ------------------------------------------------- */

typedef struct blocked_reader {
    eddy__mem_engine *eng;
    const char *cmd;
    redisReply *reply;
    atomic_int parks; /* how often it parked: the main thread writes once it is parked */
} blocked_reader;

/* What the memory:// link does: run, and while blocked park on an eventfd and poll it, then run
 * again. */
static void *blocked_reader_thread(void *arg) {
    blocked_reader *b = arg;
    eddy__mem_conn *c = eddy__mem_conn_new(b->eng);
    int fd = eventfd(0, EFD_CLOEXEC);
    for (;;) {
        long long block_ms;
        redisReply *r = run_on(c, b->cmd, &block_ms);
        if (r) {
            b->reply = r;
            break;
        }
        cr_assert_geq(block_ms, 0);
        if (eddy__mem_conn_park(c, fd)) {
            atomic_fetch_add(&b->parks, 1);
            struct pollfd p = {.fd = fd, .events = POLLIN};
            poll(&p, 1, -1);
            signals_on(fd);
            eddy__mem_conn_unpark(c);
        }
    }
    eddy__mem_conn_free(c);
    close(fd);
    return NULL;
}

typedef struct parks_wait {
    blocked_reader *b;
    int n;
} parks_wait;

static bool parked_n(void *arg) {
    parks_wait *w = arg;
    return atomic_load(&w->b->parks) >= w->n;
}

/* Waits until the reader has parked n times (polled, not slept). */
static void wait_parked(blocked_reader *b, int n) {
    parks_wait w = {b, n};
    cr_assert(eddy_test_wait_until(parked_n, &w, 10000), "the reader never parked %d times", n);
}

Test(memory, blocked_xreadgroup_woken_by_xadd) {
    EXPECT("XGROUP CREATE s g $ MKSTREAM", "+OK");
    blocked_reader b = {.eng = eng, .cmd = "XREADGROUP GROUP g c BLOCK 0 STREAMS s >"};
    atomic_init(&b.parks, 0);
    pthread_t t;
    pthread_create(&t, NULL, blocked_reader_thread, &b);
    wait_parked(&b, 1);
    EXPECT("SET unrelated 1", "+OK"); /* wakes the reader, which finds nothing and parks again */
    wait_parked(&b, 2);
    EXPECT("XADD s 7-1 hello world", "\"7-1\"");
    pthread_join(t, NULL);
    cr_assert(b.reply);
    char *got = render(b.reply);
    cr_expect_str_eq(got, "[[\"s\",[[\"7-1\",[\"hello\",\"world\"]]]]]");
    free(got);
    freeReplyObject(b.reply);
    cr_expect_eq(delivery_count("s", "g", "7-1"), 1);
}

Test(memory, blocked_xread_dollar_sees_entry_added_while_waiting) {
    EXPECT("XADD s 1-1 old v", "\"1-1\"");
    blocked_reader b = {.eng = eng, .cmd = "XREAD BLOCK 0 STREAMS s $"};
    atomic_init(&b.parks, 0);
    pthread_t t;
    pthread_create(&t, NULL, blocked_reader_thread, &b);
    wait_parked(&b, 1);
    EXPECT("XADD s 2-1 new v", "\"2-1\"");
    pthread_join(t, NULL);
    char *got = render(b.reply);
    cr_expect_str_eq(got, "[[\"s\",[[\"2-1\",[\"new\",\"v\"]]]]]");
    free(got);
    freeReplyObject(b.reply);
}

/* ---- concurrency smoke test --------------------------------------------------------------- */

#define PRODUCERS 3
#define CONSUMERS 3
#define PER_PRODUCER 400

typedef struct consumer_ctx {
    eddy__mem_engine *eng;
    int index;
    int received;
    int *seen; /* shared, indexed by producer * PER_PRODUCER + n */
    pthread_mutex_t *mu;
    int *total;
} consumer_ctx;

static void *producer_thread(void *arg) {
    consumer_ctx *p = arg;
    eddy__mem_conn *c = eddy__mem_conn_new(p->eng);
    for (int n = 0; n < PER_PRODUCER; n++) {
        char line[96];
        snprintf(line, sizeof(line), "XADD work * p %d n %d", p->index, n);
        redisReply *r = run_on(c, line, NULL);
        cr_assert(r && r->type == REDIS_REPLY_STRING);
        freeReplyObject(r);
    }
    eddy__mem_conn_free(c);
    return NULL;
}

static void *consumer_thread(void *arg) {
    consumer_ctx *k = arg;
    eddy__mem_conn *c = eddy__mem_conn_new(k->eng);
    char cmd[96];
    snprintf(cmd, sizeof(cmd), "XREADGROUP GROUP g c%d COUNT 7 BLOCK 50 STREAMS work >", k->index);
    for (;;) {
        pthread_mutex_lock(k->mu);
        bool done = *k->total == PRODUCERS * PER_PRODUCER;
        pthread_mutex_unlock(k->mu);
        if (done)
            break;
        long long block_ms;
        redisReply *r = run_on(c, cmd, &block_ms);
        if (!r) {
            cr_assert_eq(block_ms, 50);
            eddy_test_mem_wait(c, eddy_test_now_ms() + block_ms);
            continue;
        }
        cr_assert_eq(r->type, REDIS_REPLY_ARRAY);
        redisReply *entries = r->element[0]->element[1];
        for (size_t i = 0; i < entries->elements; i++) {
            redisReply *e = entries->element[i];
            int p = atoi(e->element[1]->element[1]->str), n = atoi(e->element[1]->element[3]->str);
            char ack[128];
            snprintf(ack, sizeof(ack), "XACK work g %s", e->element[0]->str);
            redisReply *a = run_on(c, ack, NULL);
            cr_assert(a && a->integer == 1, "ack of %s", e->element[0]->str);
            freeReplyObject(a);
            pthread_mutex_lock(k->mu);
            k->seen[p * PER_PRODUCER + n]++;
            (*k->total)++;
            pthread_mutex_unlock(k->mu);
            k->received++;
        }
        freeReplyObject(r);
    }
    eddy__mem_conn_free(c);
    return NULL;
}

Test(memory, concurrent_producers_and_consumers_lose_and_duplicate_nothing) {
    EXPECT("XGROUP CREATE work g $ MKSTREAM", "+OK");
    static int seen[PRODUCERS * PER_PRODUCER];
    int total = 0;
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    consumer_ctx prod[PRODUCERS], cons[CONSUMERS];
    pthread_t pt[PRODUCERS], ct[CONSUMERS];
    for (int i = 0; i < CONSUMERS; i++) {
        cons[i] = (consumer_ctx){eng, i, 0, seen, &mu, &total};
        pthread_create(&ct[i], NULL, consumer_thread, &cons[i]);
    }
    for (int i = 0; i < PRODUCERS; i++) {
        prod[i] = (consumer_ctx){eng, i, 0, seen, &mu, &total};
        pthread_create(&pt[i], NULL, producer_thread, &prod[i]);
    }
    for (int i = 0; i < PRODUCERS; i++)
        pthread_join(pt[i], NULL);
    for (int i = 0; i < CONSUMERS; i++)
        pthread_join(ct[i], NULL);
    for (int i = 0; i < PRODUCERS * PER_PRODUCER; i++)
        cr_assert_eq(seen[i], 1, "entry %d delivered %d times", i, seen[i]);
    EXPECT("XLEN work", "1200");
    EXPECT("XPENDING work g", "[0,nil,nil,nil]");
    int sum = 0;
    for (int i = 0; i < CONSUMERS; i++)
        sum += cons[i].received;
    cr_expect_eq(sum, PRODUCERS * PER_PRODUCER);
    check_invariants();
}

/* ---- out of memory ------------------------------------------------------------------------ */

static const char *const oom_script[] = {
    "SET k v",
    "SET k v2 EX 100",
    "INCR n",
    "SADD s a b c",
    "HSET h f v g w",
    "ZADD z 1 a 2 b",
    "ZADD z INCR 1 a",
    "XADD x 1-1 f v",
    "XADD x 2-1 f v g w",
    "XGROUP CREATE x g 0",
    "XGROUP CREATE y g $ MKSTREAM",
    "XREADGROUP GROUP g c COUNT 1 STREAMS x >",
    "XREADGROUP GROUP g c2 STREAMS x >",
    "XREADGROUP GROUP g c STREAMS x 0",
    "XCLAIM x g c3 0 1-1 2-1",
    "XCLAIM x g c4 0 1-1 FORCE",
    "XAUTOCLAIM x g c5 0 0",
    "XPENDING x g",
    "XPENDING x g - + 10",
    "XINFO STREAM x FULL",
    "XINFO GROUPS x",
    "XINFO CONSUMERS x g",
    "XADD x MAXLEN 1 3-1 f v",
    "XDEL x 3-1",
    "XGROUP CREATECONSUMER x g c9",
    "XGROUP DELCONSUMER x g c9",
    "MULTI",
    "SET m 1",
    "XADD x 4-1 a b",
    "EXEC",
    "XREAD BLOCK 0 STREAMS x $",
    "XRANGE x - +",
    "SMEMBERS s",
    "HGETALL h",
    "ZRANGEBYSCORE z -inf +inf WITHSCORES",
    "EXPIRE s 100",
    "PEXPIRE h 100",
    "PERSIST s",
    "FOO bar",
    "XREADGROUP GROUP g c STREAMS \"a very long key name that needs its own allocation for the "
    "error: "
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\" "
    ">",
    "XREADGROUP GROUP g c STREAMS x x x x x x x x x x x x x x x x x x > > > > > > > > > > > > > "
    "> > > > >",
    "DEL k n s h z x y",
    NULL,
};

/* Runs the script with allocation number `fail_at` failing (once, or from then on). Every
 * command must either reply or report OOM (NULL, block_ms -1); the engine must stay sound. */
static int run_oom_script(long fail_at, bool sticky) {
    char name[96];
    eddy_test_namespace(name, sizeof(name), "oom");
    eddy__mem_engine *e = eddy__mem_engine_acquire(name);
    eddy__mem_conn *c = e ? eddy__mem_conn_new(e) : NULL;
    if (!c) {
        eddy__mem_engine_release(e);
        return 0;
    }
    int failures = 0;
    eddy__falloc_fail_after(fail_at, sticky);
    for (int i = 0; oom_script[i]; i++) {
        long long block_ms = -5;
        redisReply *r = run_on(c, oom_script[i], &block_ms);
        if (r) {
            freeReplyObject(r);
        } else {
            if (block_ms == -1)
                failures++;
            else
                cr_assert_eq(block_ms, 0, "`%s`: unexpected block_ms %lld", oom_script[i],
                             block_ms);
        }
    }
    eddy__falloc_fail_after(0, false);
    const char *err = eddy__mem_engine_check(e);
    cr_assert_null(err, "after failing allocation %ld: %s", fail_at, err ? err : "");
    /* The engine still works. */
    long long block_ms;
    redisReply *r = run_on(c, "XADD after * f v", &block_ms);
    cr_assert(r && r->type == REDIS_REPLY_STRING);
    freeReplyObject(r);
    eddy__mem_conn_free(c);
    eddy__mem_engine_release(e);
    return failures;
}

Test(memory, out_of_memory_at_every_allocation) {
    unsigned long before = eddy__falloc_count();
    run_oom_script(0, false);
    long total = (long)(eddy__falloc_count() - before);
    cr_assert_gt(total, 100);
    int reported = 0;
    for (long n = 1; n <= total; n++)
        reported += run_oom_script(n, false) > 0;
    cr_expect_gt(reported, total / 2, "only %d of %ld failed allocations were reported", reported,
                 total);
}

Test(memory, out_of_memory_from_some_point_on) {
    unsigned long before = eddy__falloc_count();
    run_oom_script(0, false);
    long total = (long)(eddy__falloc_count() - before);
    for (long n = 1; n <= total; n += 3)
        run_oom_script(n, true);
}

Test(memory, out_of_memory_in_setup_calls) {
    char name[96];
    eddy_test_namespace(name, sizeof(name), "oomsetup");
    for (long n = 1; n <= 3; n++) {
        eddy__falloc_fail_after(n, false);
        eddy__mem_engine *e = eddy__mem_engine_acquire(name);
        eddy__falloc_fail_after(0, false);
        eddy__mem_engine_release(e);
    }
    eddy__falloc_fail_after(1, false);
    cr_expect_null(eddy__mem_conn_new(eng));
    /* A transaction whose queueing failed is aborted rather than run without a command. */
    EXPECT("MULTI", "+OK");
    eddy__falloc_fail_after(1, true);
    long long block_ms = 0;
    cr_expect_null(run_on(conn, "SET a 1", &block_ms));
    cr_expect_eq(block_ms, -1);
    eddy__falloc_fail_after(0, false);
    EXPECT("EXEC", "-EXECABORT Transaction discarded because of previous errors.");
    /* A blocked XREAD that cannot remember its '$' reports OOM instead of blocking. */
    eddy__falloc_fail_after(1, true);
    cr_expect_null(run_on(conn, "XREAD BLOCK 0 STREAMS s $", &block_ms));
    cr_expect_eq(block_ms, -1);
    eddy__falloc_fail_after(0, false);
}

/* ---- private data structures against reference models ------------------------------------- */

Test(memory, dict_matches_a_reference_model) {
    eddy__mdict d;
    eddy__mdict_init(&d);
    enum { N = 512 };
    static int present[N];
    memset(present, 0, sizeof(present));
    unsigned seed = 12345;
    for (int step = 0; step < 20000; step++) {
        seed = seed * 1103515245 + 12345;
        int k = (int)((seed >> 8) % N);
        char key[16];
        int klen = snprintf(key, sizeof(key), "k%d", k);
        if ((seed >> 20) % 3) {
            eddy__mdict_entry *e;
            int r = eddy__mdict_add(&d, key, (size_t)klen, (void *)(intptr_t)(k + 1), &e);
            cr_assert_eq(r, present[k] ? 0 : 1);
            cr_assert_eq((intptr_t)e->val, k + 1);
            present[k] = 1;
        } else {
            void *v = NULL;
            cr_assert_eq(eddy__mdict_del(&d, key, (size_t)klen, &v), present[k] == 1);
            if (present[k])
                cr_assert_eq((intptr_t)v, k + 1);
            present[k] = 0;
        }
    }
    size_t live = 0;
    for (int k = 0; k < N; k++) {
        char key[16];
        int klen = snprintf(key, sizeof(key), "k%d", k);
        cr_assert_eq(eddy__mdict_find(&d, key, (size_t)klen) != NULL, present[k] == 1);
        live += (size_t)present[k];
    }
    cr_assert_eq(eddy__mdict_size(&d), live);
    eddy__mdict_clear(&d, NULL);
}

static int int_cmp(const void *a, const void *b) {
    intptr_t x = (intptr_t)a, y = (intptr_t)b;
    return x < y ? -1 : x > y;
}

static bool int_before(const void *item, const void *arg) {
    return (intptr_t)item < *(const intptr_t *)arg;
}

Test(memory, skiplist_matches_a_reference_model) {
    eddy__mskl l;
    eddy__mskl_init(&l, int_cmp);
    enum { N = 1000 };
    static bool present[N];
    memset(present, 0, sizeof(present));
    unsigned seed = 99;
    for (int step = 0; step < 20000; step++) {
        seed = seed * 1103515245 + 12345;
        intptr_t k = (intptr_t)((seed >> 8) % N) + 1;
        if ((seed >> 20) % 2) {
            if (!present[k - 1]) {
                cr_assert_eq(eddy__mskl_insert(&l, (void *)k), 0);
                present[k - 1] = true;
            }
        } else {
            void *got = eddy__mskl_remove(&l, (void *)k);
            cr_assert_eq(got != NULL, present[k - 1]);
            present[k - 1] = false;
        }
    }
    size_t n = 0;
    intptr_t prev = 0;
    eddy__mskl_node *last = NULL;
    for (eddy__mskl_node *x = eddy__mskl_first(&l); x; x = eddy__mskl_next(x)) {
        cr_assert_gt((intptr_t)x->item, prev);
        cr_assert(present[(intptr_t)x->item - 1]);
        cr_assert_eq(x->prev, last);
        prev = (intptr_t)x->item;
        last = x;
        n++;
    }
    cr_assert_eq(l.tail, last);
    cr_assert_eq(l.len, n);
    for (intptr_t k = 1; k <= N; k++) {
        eddy__mskl_node *x = eddy__mskl_seek(&l, int_before, &k);
        intptr_t want = 0;
        for (intptr_t j = k; j <= N && !want; j++)
            if (present[j - 1])
                want = j;
        cr_assert_eq(x ? (intptr_t)x->item : 0, want);
        cr_assert_eq(eddy__mskl_find(&l, (void *)k) != NULL, present[k - 1]);
    }
    eddy__mskl_clear(&l, NULL);
}

/* Every level is in order, holds only nodes tall enough, and ends at the list's last[] node. */
static void check_levels(const eddy__mskl *l) {
    for (int i = 0; i < 32; i++) {
        eddy__mskl_node *end = NULL;
        intptr_t prev = 0;
        for (eddy__mskl_node *x = l->head ? l->head->next[i] : NULL; x; x = x->next[i]) {
            cr_assert_gt((intptr_t)x->item, prev, "level %d out of order", i);
            cr_assert_gt(x->height, i);
            prev = (intptr_t)x->item;
            end = x;
        }
        cr_assert_eq(l->last[i], end, "level %d's last node", i);
    }
}

/* A pending list's traffic: ids appended after the tail (linked without a search), acked from
 * the front, the back and the middle, and some put back in the middle (a claim's relink). */
Test(memory, skiplist_appends_after_the_tail) {
    eddy__mskl l;
    eddy__mskl_init(&l, int_cmp);
    intptr_t next = 1, lo = 1;
    unsigned seed = 7;
    for (int step = 0; step < 20000; step++) {
        seed = seed * 1103515245 + 12345;
        unsigned what = (seed >> 16) % 8;
        if (what < 4 || l.len == 0) {
            cr_assert_eq(eddy__mskl_insert(&l, (void *)next++), 0);
        } else if (what == 4) {
            eddy__mskl_node *first = eddy__mskl_first(&l);
            lo = (intptr_t)first->item;
            cr_assert_eq(eddy__mskl_remove(&l, (void *)lo), (void *)lo);
        } else if (what == 5) {
            intptr_t k = (intptr_t)l.tail->item;
            cr_assert_eq(eddy__mskl_remove(&l, (void *)k), (void *)k);
        } else {
            intptr_t k = lo + (intptr_t)((seed >> 4) % (unsigned)(next - lo));
            eddy__mskl_node *n = eddy__mskl_unlink(&l, (void *)k);
            if (n && what == 6)
                eddy__mskl_relink(&l, n);
            else if (n)
                eddy__mem_free(n);
        }
        if (step % 97 == 0)
            check_levels(&l);
    }
    check_levels(&l);
    cr_assert_null(eddy__mskl_find(&l, (void *)next), "after the tail: not there");
    while (l.len)
        eddy__mskl_remove(&l, eddy__mskl_first(&l)->item);
    check_levels(&l);
    cr_assert_null(l.tail);
    cr_assert_eq(eddy__mskl_insert(&l, (void *)next), 0);
    check_levels(&l);
    eddy__mskl_clear(&l, NULL);
}

Test(memory, number_parsers_follow_redis) {
    long long v;
    cr_expect(eddy__mparse_ll("0", 1, &v) && v == 0);
    cr_expect(eddy__mparse_ll("-9223372036854775808", 20, &v) && v == INT64_MIN);
    cr_expect(!eddy__mparse_ll("9223372036854775808", 19, &v));
    cr_expect(!eddy__mparse_ll("-", 1, &v));
    cr_expect(!eddy__mparse_ll("", 0, &v));
    cr_expect(!eddy__mparse_ll("1 ", 2, &v));
    double d;
    cr_expect(eddy__mparse_double("1e3", 3, &d) && d == 1000);
    cr_expect(!eddy__mparse_double("1e3x", 4, &d));
    char longnum[300];
    memset(longnum, '0', sizeof(longnum));
    longnum[0] = '1';
    cr_expect(eddy__mparse_double(longnum, sizeof(longnum), &d) && d > 1e298);
    bool ex;
    cr_expect(eddy__mparse_score_bound(longnum, sizeof(longnum), &d, &ex) && !ex);
    eddy__mid id;
    bool seq_given;
    cr_expect(eddy__mparse_id("5-*", 3, &id, 0, true, &seq_given) && !seq_given && id.ms == 5);
    cr_expect(!eddy__mparse_id("5-*", 3, &id, 0, true, NULL));
    cr_expect(!eddy__mparse_id(longnum, 200, &id, 0, true, NULL));
    cr_expect(eddy__mparse_id("7", 1, &id, UINT64_MAX, false, NULL) && id.seq == UINT64_MAX);
    eddy__mid max = EDDY__MID_MAX, zero = {0, 0};
    cr_expect(!eddy__mid_incr(&max));
    cr_expect(!eddy__mid_decr(&zero));
    eddy__mid carry = {1, UINT64_MAX};
    cr_expect(eddy__mid_incr(&carry) && carry.ms == 2 && carry.seq == 0);
    cr_expect(eddy__mid_decr(&carry) && carry.ms == 1 && carry.seq == UINT64_MAX);
}

/* ---- scale -------------------------------------------------------------------------------- */

Test(memory, large_stream_stays_fast, .timeout = 120) {
    /* One million entries through the engine's own structures: appends are amortised O(1),
     * lookups O(log n), trimming from the front O(removed). */
    enum { N = 1000000 };
    const char *argv[] = {"XADD", "big", NULL, "f", "v"};
    char id[32];
    argv[2] = id;
    long long t0 = eddy_test_now_ms();
    for (int i = 1; i <= N; i++) {
        snprintf(id, sizeof(id), "%d-0", i);
        redisReply *r = eddy__mem_exec(conn, 5, argv, NULL, NULL);
        cr_assert(r && r->type == REDIS_REPLY_STRING);
        freeReplyObject(r);
    }
    long long elapsed = eddy_test_now_ms() - t0;
    EXPECT("XLEN big", "1000000");
    EXPECT("XRANGE big 999999 + ", "[[\"999999-0\",[\"f\",\"v\"]],[\"1000000-0\",[\"f\",\"v\"]]]");
    EXPECT("XREVRANGE big + - COUNT 1", "[[\"1000000-0\",[\"f\",\"v\"]]]");
    EXPECT("XDEL big 500000-0", "1");
    EXPECT("XRANGE big 499999 500001",
           "[[\"499999-0\",[\"f\",\"v\"]],[\"500001-0\",[\"f\",\"v\"]]]");
    EXPECT("XGROUP CREATE big g 999990-0", "+OK");
    redisReply *r = run("XREADGROUP GROUP g c COUNT 100 STREAMS big >");
    cr_expect_eq(r->element[0]->element[1]->elements, 10);
    freeReplyObject(r);
    long long t1 = eddy_test_now_ms();
    EXPECT("XTRIM big MAXLEN ~ 1000", "10000"); /* ~ is capped at 100 nodes per call */
    EXPECT("XTRIM big MAXLEN ~ 1000 LIMIT 0", "988999");
    EXPECT("XTRIM big MINID 999500", "499");
    EXPECT("XLEN big", "501");
    long long trim = eddy_test_now_ms() - t1;
    cr_log_info("1M XADD in %lld ms, trim in %lld ms", elapsed, trim);
    cr_expect_lt(trim, 5000);
}
