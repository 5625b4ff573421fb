/* SPDX-License-Identifier: BSD-3-Clause */
/* Differential test of the memory:// engine against a real redis-server (the CTest fixture's).
 * Each script is a list of commands run on a fresh memory engine and, with the same key names
 * (one namespace per script), on the server; every reply is rendered to text and the two texts
 * must be equal. Stream ids are explicit wherever a reply shows them, and numbers that depend
 * on the clock (idle times, delivery times, TIME, PTTL) are masked before comparing.
 *
 * Script syntax: tokens split on spaces; "..." quotes with \r \n \\ \" and \xHH escapes;
 * @name becomes "<namespace>:name"; a leading "!" runs the command on both sides but ignores
 * the replies (for auto-generated ids). A BLOCK that finds nothing is waited for the way a
 * front end would (parked until a write or its deadline, then run again). */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "eddy_test.h"
#include "memory/engine.h"
#include "memory/internal.h"

/* ---- text rendering of replies ------------------------------------------------------------ */

typedef struct sbuf {
    char *p;
    size_t len, cap;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n) {
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        b->p = realloc(b->p, b->cap);
        cr_assert(b->p);
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...) {
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    sb_put(b, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

static void render_bytes(sbuf *b, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch < 32 || ch >= 127 || ch == '"' || ch == '\\')
            sb_printf(b, "\\x%02x", ch);
        else
            sb_put(b, (const char *)&s[i], 1);
    }
}

static void render(sbuf *b, const redisReply *r) {
    switch (r->type) {
    case REDIS_REPLY_STRING:
        sb_put(b, "\"", 1);
        render_bytes(b, r->str, r->len);
        sb_put(b, "\"", 1);
        break;
    case REDIS_REPLY_STATUS:
        sb_put(b, "+", 1);
        render_bytes(b, r->str, r->len);
        break;
    case REDIS_REPLY_ERROR:
        sb_put(b, "-", 1);
        render_bytes(b, r->str, r->len);
        break;
    case REDIS_REPLY_INTEGER:
        sb_printf(b, "%lld", r->integer);
        break;
    case REDIS_REPLY_NIL:
        sb_put(b, "nil", 3);
        break;
    case REDIS_REPLY_ARRAY:
        sb_put(b, "[", 1);
        for (size_t i = 0; i < r->elements; i++) {
            if (i)
                sb_put(b, ",", 1);
            render(b, r->element[i]);
        }
        sb_put(b, "]", 1);
        break;
    default:
        sb_printf(b, "?type%d", r->type);
    }
}

/* ---- masking of clock-dependent numbers --------------------------------------------------- */

static void mask_int(redisReply *r) {
    if (r && r->type == REDIS_REPLY_INTEGER)
        r->integer = -999;
}

/* In a flat [name, value, ...] array, masks the value after each listed name. */
static void mask_fields(redisReply *r, const char *const *names) {
    if (!r || r->type != REDIS_REPLY_ARRAY)
        return;
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        const redisReply *k = r->element[i];
        if (k->type != REDIS_REPLY_STRING)
            continue;
        for (const char *const *n = names; *n; n++)
            if (strcmp(k->str, *n) == 0)
                mask_int(r->element[i + 1]);
    }
}

static const char *const clock_fields[] = {"idle", "seen-time", "radix-tree-nodes", NULL};

static void mask_xinfo_full(redisReply *r) {
    mask_fields(r, clock_fields);
    if (!r || r->type != REDIS_REPLY_ARRAY)
        return;
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        if (strcmp(r->element[i]->str, "groups") != 0 ||
            r->element[i + 1]->type != REDIS_REPLY_ARRAY)
            continue;
        redisReply *groups = r->element[i + 1];
        for (size_t g = 0; g < groups->elements; g++) {
            redisReply *grp = groups->element[g];
            for (size_t j = 0; j + 1 < grp->elements; j += 2) {
                redisReply *v = grp->element[j + 1];
                if (strcmp(grp->element[j]->str, "pending") == 0)
                    for (size_t p = 0; p < v->elements; p++)
                        mask_int(v->element[p]->element[2]); /* delivery time */
                if (strcmp(grp->element[j]->str, "consumers") == 0) {
                    for (size_t k = 0; k < v->elements; k++) {
                        redisReply *cons = v->element[k];
                        mask_fields(cons, clock_fields);
                        for (size_t m = 0; m + 1 < cons->elements; m += 2)
                            if (strcmp(cons->element[m]->str, "pending") == 0)
                                for (size_t p = 0; p < cons->element[m + 1]->elements; p++)
                                    mask_int(cons->element[m + 1]->element[p]->element[1]);
                    }
                }
            }
        }
    }
}

static bool arg_is(const char *a, const char *b) { return strcasecmp(a, b) == 0; }

static void normalize(redisReply *r, int argc, char **argv) {
    if (!r || r->type == REDIS_REPLY_ERROR)
        return;
    if (arg_is(argv[0], "time")) {
        for (size_t i = 0; i < r->elements; i++)
            r->element[i]->len = 0;
    } else if (arg_is(argv[0], "pttl") && r->type == REDIS_REPLY_INTEGER && r->integer > 0) {
        r->integer = 1; /* a few milliseconds apart on the two sides */
    } else if (arg_is(argv[0], "xpending") && argc > 3 && r->type == REDIS_REPLY_ARRAY) {
        for (size_t i = 0; i < r->elements; i++)
            mask_int(r->element[i]->element[2]);
    } else if (arg_is(argv[0], "xinfo") && argc > 1 && arg_is(argv[1], "consumers")) {
        for (size_t i = 0; i < r->elements; i++)
            mask_fields(r->element[i], clock_fields);
    } else if (arg_is(argv[0], "xinfo") && argc > 1 && arg_is(argv[1], "stream")) {
        mask_xinfo_full(r);
    }
}

/* ---- script parsing ----------------------------------------------------------------------- */

typedef struct cmdline {
    int argc;
    char *argv[64];
    size_t len[64];
    bool ignore;
} cmdline;

static int hexval(char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c - 'A' + 10;
}

static void parse_line(const char *line, const char *ns, cmdline *out) {
    memset(out, 0, sizeof(*out));
    const char *p = line;
    if (*p == '!') {
        out->ignore = true;
        p++;
    }
    while (*p) {
        while (*p == ' ')
            p++;
        if (!*p)
            break;
        char tok[4096];
        size_t n = 0;
        if (*p == '"') {
            p++;
            while (*p && *p != '"') {
                if (*p == '\\') {
                    p++;
                    if (*p == 'x') {
                        tok[n++] = (char)(hexval(p[1]) * 16 + hexval(p[2]));
                        p += 3;
                        continue;
                    }
                    tok[n++] = *p == 'r' ? '\r' : *p == 'n' ? '\n' : *p;
                    p++;
                } else {
                    tok[n++] = *p++;
                }
            }
            if (*p == '"')
                p++;
        } else {
            while (*p && *p != ' ')
                tok[n++] = *p++;
        }
        char buf[4300];
        if (n > 1 && tok[0] == '@') {
            int w = snprintf(buf, sizeof(buf), "%s:%.*s", ns, (int)n - 1, tok + 1);
            memcpy(tok, buf, (size_t)w);
            n = (size_t)w;
        }
        cr_assert(out->argc < 64);
        out->argv[out->argc] = malloc(n + 1);
        memcpy(out->argv[out->argc], tok, n);
        out->argv[out->argc][n] = '\0';
        out->len[out->argc++] = n;
    }
}

static void free_line(cmdline *c) {
    for (int i = 0; i < c->argc; i++)
        free(c->argv[i]);
}

/* ---- the two sides ------------------------------------------------------------------------ */

static redisContext *connect_redis(void) {
    const char *url = eddy_test_redis_url();
    char host[128];
    int port = 0;
    cr_assert(sscanf(url, "redis://%127[^:]:%d", host, &port) == 2, "bad fixture URL %s", url);
    redisContext *rc = redisConnect(host, port);
    cr_assert(rc && !rc->err, "cannot connect to %s", url);
    return rc;
}

static long long now_ms(void) { return eddy_test_now_ms(); }

/* Runs a command the way a blocking front end does: BLOCK that finds nothing waits for a write
 * or the deadline, then runs again; at the deadline the answer is Redis's timeout reply. */
static redisReply *mem_run(eddy__mem_conn *conn, cmdline *c) {
    long long deadline = -2;
    for (;;) {
        long long block_ms;
        redisReply *r = eddy__mem_exec(conn, c->argc, (const char **)c->argv, c->len, &block_ms);
        if (r)
            return r;
        cr_assert(block_ms >= 0, "memory engine out of memory");
        if (deadline == -2)
            deadline = block_ms == 0 ? -1 : now_ms() + block_ms;
        else if (deadline >= 0 && now_ms() >= deadline)
            return NULL; /* timed out: rendered as Redis's null reply */
        eddy_test_mem_wait(conn, deadline);
    }
}

/* The memory engine builds its replies itself: beyond what render shows, each node must be
 * what hiredis makes (a NUL-terminated str for the string types and none for the others, an
 * element vector exactly when an array is not empty) and the tree must have the server's
 * shape. */
static void expect_same_shape(const redisReply *m, const redisReply *r, const char *step) {
    cr_assert_eq(m->type, r->type, "`%s`: reply type %d, redis %d", step, m->type, r->type);
    switch (m->type) {
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR:
        cr_assert(m->str && m->str[m->len] == '\0', "`%s`: string not NUL-terminated", step);
        break;
    case REDIS_REPLY_ARRAY:
        cr_assert_eq(m->elements, r->elements, "`%s`: %zu elements, redis %zu", step, m->elements,
                     r->elements);
        cr_assert_eq(m->element == NULL, r->element == NULL, "`%s`: element vector", step);
        for (size_t i = 0; i < m->elements; i++)
            expect_same_shape(m->element[i], r->element[i], step);
        break;
    default:
        cr_assert(!m->str && !m->element, "`%s`: stray pointers in a scalar reply", step);
    }
}

static char *render_reply(redisReply *r, cmdline *c) {
    sbuf b = {0};
    if (!r) {
        sb_put(&b, "nil", 3);
    } else {
        normalize(r, c->argc, c->argv);
        render(&b, r);
    }
    return b.p;
}

typedef struct script {
    const char *name;
    const char *const *steps;
} script;

static void run_script(const script *s) {
    char ns[96];
    eddy_test_namespace(ns, sizeof(ns), s->name);
    eddy__mem_engine *eng = eddy__mem_engine_acquire(ns);
    cr_assert(eng);
    eddy__mem_conn *conn = eddy__mem_conn_new(eng);
    cr_assert(conn);
    redisContext *rc = connect_redis();
    for (int i = 0; s->steps[i]; i++) {
        cmdline c;
        parse_line(s->steps[i], ns, &c);
        redisReply *mr = mem_run(conn, &c);
        redisReply *rr = redisCommandArgv(rc, c.argc, (const char **)c.argv, c.len);
        cr_assert(rr, "redis connection failed: %s", rc->errstr);
        if (!c.ignore) {
            if (mr)
                expect_same_shape(mr, rr, s->steps[i]);
            char *mt = render_reply(mr, &c), *rt = render_reply(rr, &c);
            if (getenv("EDDY_TEST_TRANSCRIPT")) /* print what was compared, for reviewing */
                fprintf(stderr, "%s | %s\n    => %s\n", s->name, s->steps[i], mt);
            cr_expect_str_eq(mt, rt, "[%s] step %d `%s`\n  memory: %s\n  redis:  %s", s->name,
                             i + 1, s->steps[i], mt, rt);
            free(mt);
            free(rt);
        }
        if (mr)
            freeReplyObject(mr);
        freeReplyObject(rr);
        free_line(&c);
    }
    const char *broken = eddy__mem_engine_check(eng);
    cr_expect_null(broken, "[%s] engine invariant broken: %s", s->name, broken ? broken : "");
    redisFree(rc);
    eddy__mem_conn_free(conn);
    eddy__mem_engine_release(eng);
}

#define SCRIPT(name) static const char *const name[]

/* ---- scripts ------------------------------------------------------------------------------ */

SCRIPT(s_errors) = {
    "FOO a b",
    "FOO",
    "GET",
    "GET a b",
    "PING a b",
    "PING hello",
    "PING",
    "XGROUP",
    "XGROUP FOO",
    "XGROUP FOO a b",
    "XGROUP CREATE @k",
    "XINFO",
    "XINFO FOO",
    "XINFO HELP",
    "XGROUP HELP",
    "XGROUP HELP x",
    "multi x",
    "exec x",
    "Xadd @k",
    "\"\\r\\nX\" a",
    "FOO \"a\\x00b\" \"c\\r\\nd\"",
    "XADD @s 1-1 f v",
    "XREADGROUP GROUP \"g\\r\\nx\" c STREAMS @s >",
    "XPENDING \"a\\x00b\" g",
    "XGROUP SETID @s \"g\\x00h\" 0",
    NULL,
};

SCRIPT(s_strings) = {
    "SET @k v NX",
    "SET @k v NX",
    "SET @k v2 XX",
    "SET @k v NX XX",
    "SET @k v EX 0",
    "SET @k v EX -1",
    "SET @k v EX x",
    "SET @k v PX 0",
    "SET @k v EX 10 PX 10",
    "SET @k v EX",
    "SET @k v FOO",
    "SET @k v KEEPTTL EX 10",
    "SET @k v GET",
    "SET @nk v GET",
    "SET @k v EX 9223372036854775807",
    "SET @k v PX 9223372036854775807",
    "SET @k v EXAT 1",
    "GET @k",
    "EXISTS @k",
    "SET @k v PXAT 99999999999999 GET",
    "TTL @k",
    "SET @k v2 KEEPTTL",
    "TTL @k",
    "SET @k v3",
    "TTL @k",
    "SET @k v EX 100",
    "TTL @k",
    "PTTL @k",
    "SADD @set a",
    "SET @set v GET",
    "GET @set",
    "INCR @set",
    "INCR @k",
    "SET @n 9223372036854775807",
    "INCR @n",
    "INCRBY @n x",
    "INCRBY @n -1",
    "INCRBY @nn -9223372036854775808",
    "INCRBY @nn -1",
    "SET @n \" 5\"",
    "INCR @n",
    "SET @n 007",
    "INCR @n",
    "SET @n -0",
    "INCR @n",
    "INCR @fresh",
    "INCRBY @fresh 41",
    "GET @fresh",
    "SET @set overwritten",
    "TYPE @set",
    "GET @set",
    "SET @bin \"a\\x00b\\r\\n\"",
    "GET @bin",
    NULL,
};

SCRIPT(s_keys) = {
    "SET @n 10",
    "EXPIRE @n 100",
    "INCR @n",
    "TTL @n",
    "EXPIRE @n x",
    "EXPIRE @n 100 NX",
    "EXPIRE @n 100 XX",
    "EXPIRE @n 50 GT",
    "EXPIRE @n 500 GT",
    "EXPIRE @n 500 LT",
    "EXPIRE @n 50 LT",
    "TTL @n",
    "EXPIRE @n 50 NX XX",
    "EXPIRE @n 50 GT LT",
    "EXPIRE @n 50 NX GT",
    "EXPIRE @n 50 FOO",
    "EXPIRE @n x FOO",
    "EXPIRE @n 9223372036854775807",
    "PEXPIRE @n 9223372036854775807",
    "EXPIRE @n 92233720368547758",
    "EXPIRE @nokey 10",
    "PERSIST @n",
    "PERSIST @n",
    "PERSIST @nokey",
    "TTL @nokey",
    "PTTL @nokey",
    "TTL @n",
    "PTTL @n",
    "EXPIRE @n -1",
    "EXISTS @n",
    "SET @n 1",
    "PEXPIRE @n 0",
    "EXISTS @n",
    "SET @p 1",
    "EXPIRE @p 10 GT",
    "EXPIRE @p 10 LT",
    "TTL @p",
    "PEXPIRE @p 100000",
    "PTTL @p",
    "TYPE @p",
    "SADD @set a",
    "HSET @hash f v",
    "ZADD @zset 1 m",
    "XADD @stream 1-1 f v",
    "TYPE @set",
    "TYPE @hash",
    "TYPE @zset",
    "TYPE @stream",
    "TYPE @nokey",
    "EXISTS @p @p @set @nokey",
    "DEL @p @set @nokey @p",
    "EXISTS @p @set",
    "EXPIRE @stream 100",
    "TTL @stream",
    "XLEN @stream",
    NULL,
};

SCRIPT(s_sets_hashes) = {
    "SADD @s a b a",      "SREM @s a x",   "SMEMBERS @s",     "SISMEMBER @s b",
    "SISMEMBER @s x",     "SCARD @s",      "SCARD @nokey",    "SMEMBERS @nokey",
    "SISMEMBER @nokey a", "SREM @nokey a", "SREM @s b",       "EXISTS @s",
    "HSET @h f",          "HSET @h f v g", "HSET @h f v g w", "HSET @h f v2",
    "HGET @h f",          "HGET @h x",     "HGET @nokey x",   "HDEL @h f x",
    "HGETALL @h",         "HLEN @h",       "HLEN @nokey",     "HGETALL @nokey",
    "HDEL @nokey f",      "HDEL @h g",     "EXISTS @h",       "HSET @h b 1 a 2 c 3",
    "HDEL @h a",          "HSET @h a 4",   "HSET @h b 5",     "HGETALL @h",
    "SET @str x",         "SADD @str a",   "SREM @str a",     "SMEMBERS @str",
    "SISMEMBER @str a",   "SCARD @str",    "HSET @str a b",   "HGET @str a",
    "HDEL @str a",        "HGETALL @str",  "HLEN @str",       NULL,
};

SCRIPT(s_zsets) = {
    "ZADD @z 1 a",
    "ZADD @z x a",
    "ZADD @z 1 a 2",
    "ZADD @z NX XX 1 a",
    "ZADD @z NX GT 1 a",
    "ZADD @z GT LT 1 a",
    "ZADD @z INCR 1 a 2 b",
    "ZADD @z INCR 5 a",
    "ZADD @z INCR 0 a",
    "ZADD @z CH 1 a 3 b",
    "ZADD @z XX 3 c",
    "ZADD @z GT 0 a",
    "ZADD @z LT 0 a",
    "ZADD @z NX INCR 1 a",
    "ZADD @z XX INCR 1 zz",
    "ZADD @nz XX 1 a",
    "EXISTS @nz",
    "ZADD @z 1.1 d",
    "ZSCORE @z d",
    "ZADD @z inf e -inf f",
    "ZSCORE @z e",
    "ZSCORE @z f",
    "ZADD @z nan g",
    "ZADD @z INCR inf e",
    "ZADD @z INCR -inf e",
    "ZSCORE @z x",
    "ZSCORE @nokey x",
    "ZADD @z 0.1 h 1e10 i 123456789012345678 j",
    "ZRANGEBYSCORE @z -inf +inf WITHSCORES",
    "ZRANGEBYSCORE @z (0 3",
    "ZRANGEBYSCORE @z 0 (3 LIMIT 1 2",
    "ZRANGEBYSCORE @z 0 3 LIMIT 1",
    "ZRANGEBYSCORE @z 0 3 LIMIT x 1",
    "ZRANGEBYSCORE @z 0 3 LIMIT -1 5",
    "ZRANGEBYSCORE @z 0 3 LIMIT 0 -1",
    "ZRANGEBYSCORE @z 0 3 LIMIT 0 0",
    "ZRANGEBYSCORE @z 0 3 LIMIT 10 5",
    "ZRANGEBYSCORE @z 0 3 FOO",
    "ZRANGEBYSCORE @z x 3",
    "ZRANGEBYSCORE @z ( 3",
    "ZRANGEBYSCORE @z nan 3",
    "ZRANGEBYSCORE @z 3 0",
    "ZRANGEBYSCORE @z (1 (1",
    "ZRANGEBYSCORE @nokey 0 3",
    "ZRANGEBYSCORE @z 0 3 WITHSCORES LIMIT 0 1 WITHSCORES",
    "ZREMRANGEBYSCORE @z (0 1",
    "ZREMRANGEBYSCORE @z x 1",
    "ZREMRANGEBYSCORE @nokey 0 1",
    "ZCARD @z",
    "ZREM @z a b nokey",
    "ZCARD @nokey",
    "ZRANGEBYSCORE @z -inf +inf WITHSCORES",
    "ZADD @z -0 m",
    "ZSCORE @z m",
    "ZADD @z 1e400 n",
    "ZADD @z \" 1\" n",
    "ZADD @z 0x10 n",
    "ZSCORE @z n",
    "ZADD @same 1 b 1 a 1 c",
    "ZRANGEBYSCORE @same 1 1",
    "ZREMRANGEBYSCORE @same -inf +inf",
    "EXISTS @same",
    "ZADD @z2 5 x",
    "ZREM @z2 x",
    "EXISTS @z2",
    "SET @str x",
    "ZADD @str 1 a",
    "ZREM @str a",
    "ZRANGEBYSCORE @str 0 1",
    "ZRANGEBYSCORE @str x 1",
    "ZREMRANGEBYSCORE @str 0 1",
    "ZSCORE @str a",
    "ZCARD @str",
    NULL,
};

SCRIPT(s_xadd) = {
    "XADD @s 0-0 f v",
    "XADD @s 0-* f v",
    "XADD @s 0-* f v",
    "XADD @s 0-1 f v",
    "XADD @s 5 f v",
    "XADD @s 5-* f v",
    "XADD @s 4-* f v",
    "XADD @s bad f v",
    "XADD @s * f",
    "XADD @s *",
    "XADD @s MAXLEN",
    "XADD @s MAXLEN 5",
    "XADD @s MAXLEN -1 * f v",
    "XADD @s MAXLEN x * f v",
    "XADD @s MAXLEN ~ * f v",
    "XADD @s MAXLEN 5 MINID 1 * f v",
    "XADD @s LIMIT 5 * f v",
    "XADD @s LIMIT 0 6-1 f v",
    "XADD @s MAXLEN 5 LIMIT 5 * f v",
    "XADD @s MAXLEN = 5 LIMIT 5 * f v",
    "XADD @s MAXLEN ~ 5 LIMIT -1 * f v",
    "XADD @s MAXLEN ~ 5 LIMIT x * f v",
    "XADD @s MINID bad * f v",
    "XADD @s MINID - * f v",
    "XADD @s FOO f v",
    "XADD @nos NOMKSTREAM * f v",
    "EXISTS @nos",
    "XADD @s 18446744073709551615-18446744073709551615 f v",
    "XADD @s * f v",
    "XADD @s 18446744073709551615-* f v",
    "XADD @s2 01-01 f v",
    "XADD @s2 \" 5\" f v",
    "XADD @s2 +7 f v",
    "XADD @s2 -05 f v",
    "XADD @s2 - f v",
    "XADD @s2 7-5 a 1 b 2 c 3",
    "XADD @s3 18446744073709551616-1 f v",
    "XADD @s3 1-18446744073709551615 f v",
    "XADD @s3 1-* f v",
    "XADD @s3 2-* f v",
    "XRANGE @s2 - +",
    "XRANGE @s3 - +",
    "XLEN @s2",
    "XLEN @nokey",
    "SET @str x",
    "XADD @str * a b",
    "XADD @str NOMKSTREAM * a b",
    "XLEN @str",
    "XADD @m NOMKSTREAM MAXLEN 2 9-1 a b",
    "XADD @m 1-1 a 1",
    "XADD @m NOMKSTREAM MAXLEN 2 2-1 a 2",
    "XADD @m MAXLEN = 2 3-1 a 3",
    "XADD @m MINID = 3-1 4-1 a 4",
    "XRANGE @m - +",
    "XADD @m MAXLEN 0 5-1 a 5",
    "XLEN @m",
    "XINFO STREAM @m",
    "!XADD @auto * a b",
    "!XADD @auto * a b",
    "XLEN @auto",
    NULL,
};

SCRIPT(s_xrange) = {
    "XADD @s 1-1 f v",
    "XADD @s 2-1 f v a b",
    "XADD @s 2-2 x y",
    "XADD @s 3-0 \"\" \"\"",
    "XADD @s 18446744073709551615-18446744073709551615 end end",
    "XRANGE @s - + COUNT 0",
    "XRANGE @s - + COUNT -1",
    "XRANGE @s - + COUNT x",
    "XRANGE @s - + FOO",
    "XRANGE @s - + COUNT",
    "XRANGE @s - + COUNT 2",
    "XRANGE @s - + COUNT 2 COUNT 3",
    "XRANGE @s ( +",
    "XRANGE @s (- +",
    "XRANGE @s - (+",
    "XRANGE @s (18446744073709551615-18446744073709551615 +",
    "XRANGE @s - (0-0",
    "XRANGE @s (0 +",
    "XRANGE @s (1-1 (3-0",
    "XRANGE @s 2 2",
    "XRANGE @s 2-1 2-1",
    "XRANGE @s 3 1",
    "XRANGE @nokey - +",
    "XRANGE @s 0-2 0-1",
    "XREVRANGE @s + -",
    "XREVRANGE @s + - COUNT 1",
    "XREVRANGE @s (3-0 -",
    "XREVRANGE @s 2 2",
    "XREVRANGE @s - +",
    "XREVRANGE @s + - COUNT 0",
    "XREVRANGE @s (2-2 (1-1",
    "XREVRANGE @nokey + -",
    "XDEL @s 2-1",
    "XRANGE @s - +",
    "XREVRANGE @s + -",
    "SET @str x",
    "XRANGE @str - +",
    "XRANGE @str bad +",
    "XREVRANGE @str + -",
    NULL,
};

SCRIPT(s_xdel_xtrim) = {
    "XDEL @nokey bad",
    "XDEL @nokey 1-1",
    "XADD @s 1-1 f v",
    "XADD @s 2-1 f v",
    "XADD @s 3-1 f v",
    "XDEL @s bad",
    "XDEL @s 1-1 bad",
    "XLEN @s",
    "XDEL @s 99-1 1-1 1-1",
    "XINFO STREAM @s",
    "XDEL @s 2-1 3-1",
    "XINFO STREAM @s",
    "XADD @s 4-1 f v",
    "XINFO STREAM @s",
    "XTRIM @s",
    "XTRIM @s FOO",
    "XTRIM @s MAXLEN",
    "XTRIM @s MAXLEN 1 FOO",
    "XTRIM @s LIMIT 5",
    "XTRIM @s LIMIT 5 MAXLEN 1",
    "XTRIM @s MAXLEN 1 LIMIT 5",
    "XTRIM @nokey MAXLEN 1",
    "XTRIM @nokey MAXLEN x",
    "SET @str x",
    "XTRIM @str MAXLEN 1",
    "XTRIM @str MAXLEN x",
    "XLEN @str",
    "XDEL @str bad",
    "XDEL @str 1-1",
    NULL,
};

/* Node-level trimming: "~" removes whole listpack nodes (100 entries or 4 KB each). */
SCRIPT(s_trim_nodes) = {
    "XADD @t 1-1 f v",
    "XADD @t 2-1 f v",
    "XADD @t 3-1 f v",
    "XADD @t MAXLEN ~ 1 4-1 f v",
    "XLEN @t",
    "XTRIM @t MAXLEN ~ 0",
    "XLEN @t",
    "XTRIM @t MAXLEN = 2",
    "XRANGE @t - +",
    "XTRIM @t MINID 4-1",
    "XRANGE @t - +",
    "XINFO STREAM @t",
    "XTRIM @t MAXLEN 0",
    "XINFO STREAM @t",
    NULL,
};

SCRIPT(s_xread) = {
    "XADD @s 1-1 f v",
    "XADD @s 2-1 f v a b",
    "XREAD STREAMS @s",
    "XREAD STREAMS @s 0 x",
    "XREAD COUNT x STREAMS @s 0",
    "XREAD COUNT -5 STREAMS @s 0",
    "XREAD COUNT 0 STREAMS @s 0",
    "XREAD COUNT 1 STREAMS @s 0",
    "XREAD BLOCK x STREAMS @s 0",
    "XREAD BLOCK -1 STREAMS @s 0",
    "XREAD BLOCK 9223372036854775807 STREAMS @s 0",
    "XREAD FOO STREAMS @s 0",
    "XREAD GROUP g c STREAMS @s 0",
    "XREAD NOACK STREAMS @s 0",
    "XREAD STREAMS @s >",
    "XREAD STREAMS @s bad",
    "XREAD STREAMS @s $",
    "XREAD STREAMS @s 1-1",
    "XREAD STREAMS @s @nokey 0 0",
    "XREAD STREAMS @nokey 0",
    "XREAD COUNT 1 STREAMS @s @s 0 1",
    "SET @str x",
    "XREAD STREAMS @str 0",
    "XREAD STREAMS @s @str 0 bad",
    "XREAD STREAMS @s @str bad 0",
    "XREAD BLOCK 10 STREAMS @s $",
    "XREAD BLOCK 10 STREAMS @s 1-1",
    "XREAD BLOCK 10 STREAMS @nokey $",
    "XREAD STREAMS @s -",
    "XREAD STREAMS @s +",
    "XREAD STREAMS @s 1",
    "XREAD STREAMS @s 18446744073709551615-18446744073709551615",
    "XDEL @s 2-1",
    "XREAD STREAMS @s 1-1",
    "XREAD STREAMS @s 0",
    "xread count 1 block 5 streams @s 0",
    NULL,
};

SCRIPT(s_xreadgroup) = {
    "XADD @s 1-1 f v",
    "XADD @s 2-1 f v a b",
    "XREADGROUP STREAMS @s 0",
    "XREADGROUP GROUP g c STREAMS @s 0",
    "XREADGROUP GROUP g c STREAMS @s >",
    "XREADGROUP GROUP g c STREAMS @s $",
    "XREADGROUP GROUP g c STREAMS @s 0 x",
    "XREADGROUP GROUP g STREAMS @s 0",
    "XREADGROUP GROUP g c FOO STREAMS @s 0",
    "XREADGROUP COUNT 1 STREAMS @s 0 x",
    "XREADGROUP COUNT 1 STREAMS @s x",
    "XREADGROUP COUNT 1 BLOCK 0 STREAMS @s >",
    "XGROUP CREATE @s g 0",
    "XREADGROUP GROUP g c STREAMS @s $",
    "XREADGROUP GROUP g c STREAMS @s bad",
    "XREADGROUP GROUP g c STREAMS @s @nokey > >",
    "SET @str x",
    "XREADGROUP GROUP g c STREAMS @str @s > >",
    "XREADGROUP GROUP g c STREAMS @s",
    "XREADGROUP GROUP g c STREAMS @s 0",
    "XINFO GROUPS @s",
    "XREADGROUP GROUP g c STREAMS @s >",
    "XREADGROUP GROUP g c STREAMS @s >",
    "XREADGROUP GROUP g c BLOCK 10 STREAMS @s >",
    "XREADGROUP GROUP g c STREAMS @s 0",
    "XREADGROUP GROUP g c STREAMS @s 1-1",
    "XPENDING @s g - + 10",
    "XREADGROUP GROUP g c COUNT 1 STREAMS @s 0",
    "XPENDING @s g - + 10",
    "XDEL @s 1-1",
    "XREADGROUP GROUP g c STREAMS @s 0",
    "XPENDING @s g - + 10",
    "XREADGROUP GROUP g c2 STREAMS @s 0",
    "XINFO GROUPS @s",
    "XREADGROUP GROUP g c3 BLOCK 10 STREAMS @s >",
    "XINFO GROUPS @s",
    "XINFO CONSUMERS @s g",
    "XREADGROUP GROUP g c STREAMS @s @s > 0",
    "XADD @s 3-1 x y",
    "XREADGROUP GROUP g c NOACK STREAMS @s >",
    "XPENDING @s g",
    "XINFO GROUPS @s",
    "XINFO STREAM @s",
    "XADD @s 4-1 a 1",
    "XADD @s 5-1 a 2",
    "XADD @s 6-1 a 3",
    "XREADGROUP GROUP g c4 COUNT 2 STREAMS @s >",
    "XREADGROUP GROUP g c4 COUNT 0 STREAMS @s >",
    "XGROUP SETID @s g 3-1",
    "XREADGROUP GROUP g c5 COUNT 1 STREAMS @s >",
    "XPENDING @s g - + 10",
    "XPENDING @s g",
    "XGROUP CREATE @t g2 0 MKSTREAM",
    "XADD @t 1-1 k v",
    "XREADGROUP GROUP g2 c STREAMS @s @t > >",
    "XGROUP CREATE @s g2 $",
    "XREADGROUP GROUP g2 c STREAMS @s @t > >",
    "XREADGROUP GROUP g2 c STREAMS @s @t 0 0",
    "XREADGROUP GROUP g2 c STREAMS @s @t 18446744073709551615-18446744073709551615 0",
    "xreadgroup group g2 c count 1 streams @t 0-0",
    NULL,
};

SCRIPT(s_xgroup) = {
    "XGROUP CREATE @k g $",
    "XGROUP CREATE @k g $ FOO",
    "XGROUP CREATE @k g $ MKSTREAM FOO",
    "XGROUP CREATE @k g bad MKSTREAM",
    "EXISTS @k",
    "XGROUP CREATE @k g $ MKSTREAM",
    "XGROUP CREATE @k g $ MKSTREAM",
    "XGROUP CREATE @k g 0",
    "XGROUP CREATE @k g2 bad",
    "XGROUP CREATE @k g2 -",
    "XGROUP CREATE @k g2 1-1 ENTRIESREAD -5",
    "XGROUP CREATE @k g2 1-1 ENTRIESREAD x",
    "XGROUP CREATE @k g2 1-1 ENTRIESREAD",
    "XGROUP CREATE @k g2 1-1 ENTRIESREAD 3 MKSTREAM",
    "XGROUP CREATE @k g3 1-1 MKSTREAM MKSTREAM MKSTREAM MKSTREAM",
    "XGROUP SETID @k nog 0",
    "XGROUP SETID @k g bad",
    "XGROUP SETID @k g 0 ENTRIESREAD x",
    "XGROUP SETID @k g 0 FOO 5",
    "XGROUP SETID @k g 0 ENTRIESREAD 5 x",
    "XGROUP SETID @k g 0 ENTRIESREAD",
    "XGROUP SETID @k g 0 ENTRIESREAD -2",
    "XGROUP SETID @k g +",
    "XGROUP SETID @k g 5 ENTRIESREAD 2",
    "XGROUP SETID @nokey g 0",
    "XGROUP DESTROY @nokey g",
    "XGROUP DESTROY @k nog",
    "XGROUP CREATECONSUMER @k g c1",
    "XGROUP CREATECONSUMER @k g c1",
    "XGROUP CREATECONSUMER @k nog c1",
    "XGROUP CREATECONSUMER @nokey g c1",
    "XGROUP DELCONSUMER @k g c1",
    "XGROUP DELCONSUMER @k g c1",
    "XGROUP DELCONSUMER @k nog c1",
    "XINFO GROUPS @k",
    "XGROUP DESTROY @k g",
    "XGROUP DESTROY @k g",
    "XINFO GROUPS @k",
    "SET @str v",
    "XGROUP CREATE @str g $",
    "XGROUP CREATE @str g $ MKSTREAM",
    "XGROUP CREATE @str g $ FOO",
    "XGROUP SETID @str g 0",
    "XGROUP DESTROY @str g",
    "XGROUP CREATECONSUMER @str g c",
    "XGROUP DELCONSUMER @str g c",
    "XADD @d 1-1 f v",
    "XADD @d 2-1 f v",
    "XADD @d 3-1 f v",
    "XADD @d 4-1 f v",
    "XADD @d 5-1 f v",
    "XGROUP CREATE @d g 0",
    "XGROUP CREATE @d g2 $",
    "XGROUP CREATE @d g3 3-1",
    "XGROUP CREATE @d g4 0 ENTRIESREAD 2",
    "XINFO GROUPS @d",
    "XREADGROUP GROUP g c COUNT 2 STREAMS @d >",
    "XINFO GROUPS @d",
    "XDEL @d 4-1",
    "XINFO GROUPS @d",
    "XREADGROUP GROUP g c COUNT 1 STREAMS @d >",
    "XINFO GROUPS @d",
    "XREADGROUP GROUP g c STREAMS @d >",
    "XINFO GROUPS @d",
    "XGROUP SETID @d g 0",
    "XINFO GROUPS @d",
    "XGROUP SETID @d g $ ENTRIESREAD 3",
    "XINFO GROUPS @d",
    "XDEL @d 1-1 2-1 3-1 5-1",
    "XINFO GROUPS @d",
    "XINFO STREAM @d",
    "XGROUP DELCONSUMER @d g c",
    "XPENDING @d g",
    NULL,
};

SCRIPT(s_xack_xpending) = {
    "XADD @s 1-1 f 1",
    "XADD @s 2-1 f 2",
    "XADD @s 3-1 f 3",
    "XADD @s 4-1 f 4",
    "XGROUP CREATE @s g 0",
    "XPENDING @s g",
    "XPENDING @s g - + 10",
    "XREADGROUP GROUP g c STREAMS @s >",
    "XACK @s g bad",
    "XACK @nokey g bad",
    "XACK @s nog bad",
    "SET @str x",
    "XACK @str g bad",
    "XACK @s g 1-1 1-1 9-9",
    "XACK @s g 1-1",
    "XACK @s g 1-1 bad",
    "XPENDING @s",
    "XPENDING @s g x",
    "XPENDING @s g - +",
    "XPENDING @s g - + x",
    "XPENDING @s g - + 10 c extra",
    "XPENDING @s g - + 10 c extra more more",
    "XPENDING @s g IDLE x - + 10",
    "XPENDING @s g IDLE 10 - +",
    "XPENDING @s g IDLE 100000 - + 10",
    "XPENDING @s g IDLE 100000 - + 10 c",
    "XPENDING @s g IDLE 0 - + 10 c",
    "XPENDING @s g - + -1",
    "XPENDING @s g - + 0",
    "XPENDING @s g - + 2",
    "XPENDING @s g bad + 1",
    "XPENDING @s g ( + 1",
    "XPENDING @s g (2-1 + 10",
    "XPENDING @s g - (3-1 10",
    "XPENDING @s g (18446744073709551615-18446744073709551615 + 10",
    "XPENDING @s g - (0-0 10",
    "XPENDING @s g 3 3 10",
    "XPENDING @s g - + 10 nobody",
    "XPENDING @s g - + 10 c",
    "XPENDING @nokey g",
    "XPENDING @s nog",
    "XPENDING @str g",
    "XPENDING @nokey g - + x",
    "XPENDING @str g - + 1",
    "XREADGROUP GROUP g b COUNT 1 STREAMS @s 0",
    "XCLAIM @s g b 0 4-1",
    "XCLAIM @s g a 0 2-1",
    "XPENDING @s g",
    "XACK @s g 2-1 3-1 4-1",
    "XPENDING @s g",
    "XINFO CONSUMERS @s g",
    NULL,
};

SCRIPT(s_xclaim) = {
    "XADD @s 1-1 f 1",
    "XADD @s 2-1 f 2",
    "XADD @s 3-1 f 3",
    "XADD @s 4-1 f 4",
    "XGROUP CREATE @s g 0",
    "XREADGROUP GROUP g c STREAMS @s >",
    "XACK @s g 1-1",
    "XCLAIM @s g c2 x 2-1",
    "XCLAIM @nokey g c2 x 2-1",
    "XCLAIM @s nog c2 0 2-1",
    "XCLAIM @s g c2 0 bad",
    "XCLAIM @s g c2 0 2-1 IDLE x",
    "XCLAIM @s g c2 0 2-1 TIME x",
    "XCLAIM @s g c2 0 2-1 RETRYCOUNT x",
    "XCLAIM @s g c2 0 2-1 LASTID bad",
    "XCLAIM @s g c2 0 2-1 IDLE",
    "XCLAIM @s g c2 0 2-1 FOO",
    "XCLAIM @s g c2 0 2-1 1-1 9-9",
    "XPENDING @s g - + 10",
    "XCLAIM @s g c3 0 2-1 JUSTID",
    "XPENDING @s g - + 10",
    "XCLAIM @s g c3 0 2-1 RETRYCOUNT 7 IDLE 5000",
    "XPENDING @s g - + 10",
    "XCLAIM @s g c3 10000 2-1",
    "XCLAIM @s g c3 1000 2-1",
    "XCLAIM @s g c3 -5 2-1",
    "XCLAIM @s g c3 0 2-1 TIME 1",
    "XPENDING @s g IDLE 1000000 - + 10",
    "XCLAIM @s g c3 0 2-1 TIME 99999999999999",
    "XPENDING @s g IDLE 1000000 - + 10",
    "XCLAIM @s g c4 0 9-9 FORCE",
    "XCLAIM @s g c4 0 1-1 FORCE",
    "XPENDING @s g - + 10",
    "XDEL @s 3-1",
    "XCLAIM @s g c4 0 3-1",
    "XPENDING @s g - + 10",
    "XCLAIM @s g c4 0 3-1 FORCE",
    "XINFO CONSUMERS @s g",
    "XCLAIM @s g c5 0 2-1 LASTID 100-1",
    "XCLAIM @s g c5 0 2-1 LASTID 1-1 JUSTID FORCE",
    "XINFO GROUPS @s",
    "XCLAIM @s g c5 0 1-1 2-1 4-1 JUSTID RETRYCOUNT 0",
    "XPENDING @s g - + 10",
    "SET @str x",
    "XCLAIM @str g c 0 1-1",
    "XCLAIM @s g c 0 1-1 IDLE -5",
    "XPENDING @s g - + 10 c",
    NULL,
};

SCRIPT(s_xautoclaim) = {
    "XADD @s 1-1 f 1",
    "XADD @s 2-1 f 2",
    "XADD @s 3-1 f 3",
    "XADD @s 4-1 f 4",
    "XADD @s 5-1 f 5",
    "XGROUP CREATE @s g 0",
    "XREADGROUP GROUP g c STREAMS @s >",
    "XAUTOCLAIM @s g c2 x 0",
    "XAUTOCLAIM @s g c2 0 bad",
    "XAUTOCLAIM @s g c2 0 0 COUNT 0",
    "XAUTOCLAIM @s g c2 0 0 COUNT x",
    "XAUTOCLAIM @s g c2 0 0 COUNT -1",
    "XAUTOCLAIM @s g c2 0 0 COUNT 9223372036854775807",
    "XAUTOCLAIM @s g c2 0 0 COUNT",
    "XAUTOCLAIM @s g c2 0 0 FOO",
    "XAUTOCLAIM @nokey g c2 0 0",
    "XAUTOCLAIM @s nog c2 0 0",
    "XAUTOCLAIM @nokey g c2 0 0 FOO",
    "XAUTOCLAIM @s g c2 0 (18446744073709551615-18446744073709551615",
    "XAUTOCLAIM @s g c2 0 0 COUNT 2",
    "XAUTOCLAIM @s g c2 0 3-0 COUNT 2 JUSTID",
    "XPENDING @s g - + 10",
    "XDEL @s 1-1 4-1",
    "XAUTOCLAIM @s g c3 0 0 COUNT 2",
    "XPENDING @s g - + 10",
    "XAUTOCLAIM @s g c3 0 0",
    "XAUTOCLAIM @s g c3 100000 0",
    "XAUTOCLAIM @s g c4 100000 0 COUNT 1",
    "XAUTOCLAIM @s g c3 0 (2-1",
    "XAUTOCLAIM @s g c3 0 - COUNT 1",
    "XAUTOCLAIM @s g c3 0 + COUNT 1",
    "XPENDING @s g",
    "XINFO CONSUMERS @s g",
    "XGROUP DELCONSUMER @s g c3",
    "XPENDING @s g",
    "XAUTOCLAIM @s g c3 0 0",
    "SET @str x",
    "XAUTOCLAIM @str g c 0 0",
    NULL,
};

SCRIPT(s_xinfo) = {
    "XINFO STREAM @nokey",
    "XINFO GROUPS @nokey",
    "XINFO CONSUMERS @nokey g",
    "XADD @s 1-1 f 1",
    "XADD @s 2-1 f 2 g 3",
    "XADD @s 3-1 f 3",
    "XINFO STREAM @s",
    "XINFO CONSUMERS @s nog",
    "XINFO STREAM @s FOO",
    "XINFO STREAM @s FULL COUNT",
    "XINFO STREAM @s FULL FOO 1",
    "XINFO STREAM @s FULL COUNT x",
    "XINFO GROUPS @s",
    "XGROUP CREATE @s b 0",
    "XGROUP CREATE @s a $",
    "XGROUP CREATE @s ab 2-1",
    "XREADGROUP GROUP b zed COUNT 2 STREAMS @s >",
    "XREADGROUP GROUP b amy STREAMS @s >",
    "XGROUP CREATECONSUMER @s b bob",
    "XINFO GROUPS @s",
    "XINFO CONSUMERS @s b",
    "XINFO STREAM @s",
    "XINFO STREAM @s FULL",
    "XINFO STREAM @s FULL COUNT 1",
    "XINFO STREAM @s FULL COUNT 0",
    "XINFO STREAM @s FULL COUNT -3",
    "xinfo stream @s foo",
    "SET @str x",
    "XINFO STREAM @str",
    "XINFO GROUPS @str",
    "XINFO CONSUMERS @str g",
    NULL,
};

SCRIPT(s_multi) = {
    "EXEC",
    "DISCARD",
    "MULTI",
    "MULTI",
    "SET @a 1",
    "INCR @a",
    "XADD @s 1-1 f v",
    "XREAD BLOCK 0 STREAMS @s $",
    "XREADGROUP GROUP g c BLOCK 0 STREAMS @s >",
    "GET @a b",
    "EXEC",
    "EXISTS @a",
    "MULTI",
    "SET @a 1",
    "FOO",
    "EXEC",
    "GET @a",
    "MULTI",
    "SET @a x",
    "INCR @a",
    "XGROUP CREATE @s g $",
    "XGROUP FOO",
    "XGROUP CREATE @s",
    "EXEC",
    "MULTI",
    "SET @a x",
    "INCR @a",
    "XADD @s 1-1 f v",
    "XREAD BLOCK 0 STREAMS @s $",
    "XGROUP CREATE @s g $",
    "XREADGROUP GROUP g c BLOCK 0 STREAMS @s >",
    "XREADGROUP GROUP g c STREAMS @s 0",
    "XADD @s 2-1 f v",
    "XREADGROUP GROUP g c BLOCK 0 STREAMS @s >",
    "XACK @s g 2-1",
    "GET @a",
    "EXEC",
    "MULTI",
    "EXEC",
    "MULTI",
    "XGROUP CREATE @s g2 $",
    "XREADGROUP GROUP g2 c BLOCK 0 STREAMS @s >",
    "DISCARD",
    "DISCARD",
    "XINFO GROUPS @s",
    "multi",
    "exec",
    NULL,
};

/* Blocking reads that are satisfied or time out; the memory side waits like a front end. */
SCRIPT(s_blocking) = {
    "XREAD BLOCK 30 STREAMS @s 0",
    "XREAD BLOCK 30 STREAMS @s $",
    "XGROUP CREATE @s g $ MKSTREAM",
    "XREADGROUP GROUP g c BLOCK 30 STREAMS @s >",
    "XINFO CONSUMERS @s g",
    "XADD @s 1-1 f v",
    "XREADGROUP GROUP g c BLOCK 30 STREAMS @s >",
    "XREADGROUP GROUP g c BLOCK 30 STREAMS @s 0",
    "XREAD BLOCK 30 STREAMS @s 0",
    "XREAD BLOCK 30 COUNT 1 STREAMS @nokey @s $ 0",
    NULL,
};

/* Reply shapes the engine builds for eddy's own traffic: CloudEvents-shaped entries read in
 * batches from several streams (one empty), empty and binary values, integer-looking values,
 * ids of every width and spelling, nothing to read, and a transaction's nested replies. */
SCRIPT(s_reply_shapes) = {
    "XGROUP CREATE @a g $ MKSTREAM",
    "XGROUP CREATE @b g $ MKSTREAM",
    "XADD @a 1-1 specversion 1.0 id ev-1 source /bench type t.v1 data \"pp\\r\\npp\\x00\"",
    "XADD @a 1-2 specversion 1.0 id ev-2 source /bench type t.v1 data \"\"",
    "XADD @a 1-* specversion 1.0 id 7 source -12 type 00 data 18446744073709551616",
    "XADD @a 9999999999999-0 f v",
    "XADD @a 9999999999999-18446744073709551615 f v",
    "XREADGROUP GROUP g c COUNT 2 STREAMS @b @a > >",
    "XREADGROUP GROUP g c COUNT 256 STREAMS @a @b > >",
    "XREADGROUP GROUP g c COUNT 256 STREAMS @a @b > >",
    "XREADGROUP GROUP g c COUNT 256 STREAMS @a @b 0 0",
    "XREAD STREAMS @a @b @nokey 9999999999999-18446744073709551615 0 0",
    "XREAD COUNT 1 STREAMS @a 0-0",
    "XPENDING @a g",
    "XPENDING @a g - + 10 c",
    "XACK @a g 1-3 18446744073709551616-0",
    "XACK @a g 0001-01 1-2 01-3 9999999999999-0 9999999999999-0",
    "XACK @a g 1-3 x",
    "XACK @a g 1",
    "XPENDING @a g - + 10",
    "XCLAIM @a g d 0 1-1 1-2 9999999999999-18446744073709551615 FORCE",
    "XCLAIM @a g d 0 1-2 FORCE JUSTID",
    "XAUTOCLAIM @a g e 0 0 COUNT 1",
    "XDEL @a 1-1",
    "XAUTOCLAIM @a g e 0 0",
    "XPENDING @a g - + 10",
    "XGROUP DELCONSUMER @a g e",
    "XPENDING @a g",
    "MULTI",
    "XADD @b 5-1 f v",
    "XREADGROUP GROUP g c STREAMS @a @b > >",
    "XRANGE @a - + COUNT 0",
    "XACK @b g 5-1",
    "PING",
    "EXEC",
    "XINFO STREAM @a FULL",
    "XGROUP DESTROY @a g",
    "XINFO GROUPS @a",
    NULL,
};

#define RUN(steps) run_script(&(struct script){#steps, steps})

Test(memory_vs_redis, errors) { RUN(s_errors); }
Test(memory_vs_redis, strings) { RUN(s_strings); }
Test(memory_vs_redis, keys) { RUN(s_keys); }
Test(memory_vs_redis, sets_hashes) { RUN(s_sets_hashes); }
Test(memory_vs_redis, zsets) { RUN(s_zsets); }
Test(memory_vs_redis, xadd) { RUN(s_xadd); }
Test(memory_vs_redis, xrange) { RUN(s_xrange); }
Test(memory_vs_redis, xdel_xtrim) { RUN(s_xdel_xtrim); }
Test(memory_vs_redis, trim_nodes) { RUN(s_trim_nodes); }
Test(memory_vs_redis, xread) { RUN(s_xread); }
Test(memory_vs_redis, xreadgroup) { RUN(s_xreadgroup); }
Test(memory_vs_redis, xgroup) { RUN(s_xgroup); }
Test(memory_vs_redis, xack_xpending) { RUN(s_xack_xpending); }
Test(memory_vs_redis, xclaim) { RUN(s_xclaim); }
Test(memory_vs_redis, xautoclaim) { RUN(s_xautoclaim); }
Test(memory_vs_redis, xinfo) { RUN(s_xinfo); }
Test(memory_vs_redis, multi) { RUN(s_multi); }
Test(memory_vs_redis, blocking) { RUN(s_blocking); }
Test(memory_vs_redis, reply_shapes) { RUN(s_reply_shapes); }

/* ---- generated scripts: node boundaries of large streams ---------------------------------- */

/* Adds n entries with a value of vlen bytes (ids i-1), then trims in several ways, comparing
 * lengths and node counts; this pins the listpack size model to Redis's. */
static void node_model_case(int n, int vlen, bool mixed_fields) {
    char ns[96];
    eddy_test_namespace(ns, sizeof(ns), "nodes");
    eddy__mem_engine *eng = eddy__mem_engine_acquire(ns);
    eddy__mem_conn *conn = eddy__mem_conn_new(eng);
    redisContext *rc = connect_redis();
    char key[128], id[32], field[32], value[4096];
    snprintf(key, sizeof(key), "%s:t", ns);
    memset(value, 'x', (size_t)vlen);
    value[vlen] = '\0';
    char *cmds[][8] = {
        {"XTRIM", key, "MAXLEN", "~", "120", NULL},
        {"XTRIM", key, "MAXLEN", "~", "10", "LIMIT", "50", NULL},
        {"XTRIM", key, "MINID", "~", "130-1", NULL},
        {"XTRIM", key, "MAXLEN", "=", "30", NULL},
        {"XTRIM", key, "MAXLEN", "~", "5", NULL},
    };
    for (int i = 1; i <= n; i++) {
        snprintf(id, sizeof(id), "%d-1", i);
        snprintf(field, sizeof(field), mixed_fields ? "field%d" : "field", i % 3);
        const char *argv[] = {"XADD", key, id, field, value, "n", id};
        int argc = mixed_fields ? 7 : 5;
        redisReply *m = eddy__mem_exec(conn, argc, argv, NULL, NULL);
        redisReply *r = redisCommandArgv(rc, argc, argv, NULL);
        cr_assert(m && r);
        freeReplyObject(m);
        freeReplyObject(r);
    }
    for (size_t k = 0; k <= sizeof(cmds) / sizeof(cmds[0]); k++) {
        const char *info[] = {"XINFO", "STREAM", key};
        const char **argv = k == 0 ? info : (const char **)cmds[k - 1];
        int argc = 0;
        while (k > 0 && argv[argc])
            argc++;
        if (k == 0)
            argc = 3;
        cmdline c = {.argc = argc};
        for (int i = 0; i < argc; i++)
            c.argv[i] = (char *)argv[i];
        redisReply *m = eddy__mem_exec(conn, argc, argv, NULL, NULL);
        redisReply *r = redisCommandArgv(rc, argc, argv, NULL);
        char *mt = render_reply(m, &c), *rt = render_reply(r, &c);
        cr_expect_str_eq(mt, rt, "n=%d vlen=%d mixed=%d step %zu\n  memory: %s\n  redis:  %s", n,
                         vlen, mixed_fields, k, mt, rt);
        free(mt);
        free(rt);
        freeReplyObject(m);
        freeReplyObject(r);
        if (k > 0) { /* node count after each trim */
            m = eddy__mem_exec(conn, 3, info, NULL, NULL);
            r = redisCommandArgv(rc, 3, info, NULL);
            c.argc = 3;
            c.argv[0] = "XINFO";
            c.argv[1] = "STREAM";
            mt = render_reply(m, &c);
            rt = render_reply(r, &c);
            cr_expect_str_eq(mt, rt, "after trim %zu (n=%d vlen=%d)\n  memory: %s\n  redis:  %s", k,
                             n, vlen, mt, rt);
            free(mt);
            free(rt);
            freeReplyObject(m);
            freeReplyObject(r);
        }
    }
    redisFree(rc);
    eddy__mem_conn_free(conn);
    eddy__mem_engine_release(eng);
}

Test(memory_vs_redis, listpack_nodes_small_values) { node_model_case(250, 1, false); }
Test(memory_vs_redis, listpack_nodes_medium_values) { node_model_case(200, 50, false); }
Test(memory_vs_redis, listpack_nodes_large_values) { node_model_case(200, 300, false); }
Test(memory_vs_redis, listpack_nodes_mixed_fields) { node_model_case(200, 20, true); }
Test(memory_vs_redis, listpack_nodes_huge_values) { node_model_case(40, 3000, false); }
