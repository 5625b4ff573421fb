/* SPDX-License-Identifier: BSD-3-Clause */
/* Backend URLs: a table of every accepted form with the fields it yields, a table of every
 * refusal with what its detail must say, and the invariants around them: the password never
 * reaches a detail, *out is zeroed on failure, and nothing leaks, including when any one
 * allocation fails.
 *
 * Allocation failures are injected by defining malloc and free in this executable, forwarding
 * to glibc's __libc_malloc/__libc_free. Counting is thread-local and armed only around the
 * call under test, so Criterion's own threads and allocations are never affected. Where the
 * override cannot work (not glibc, sanitizers, valgrind's own malloc) the tests that need it
 * skip and the leak counters simply stay at zero. */
#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "util/url.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) ||                         \
    __has_feature(memory_sanitizer)
#define SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#endif

#if defined(__GLIBC__) && !defined(SANITIZED)
#define FAULTS 1
extern void *__libc_malloc(size_t size);
extern void __libc_free(void *ptr);

/* Volatile because the compiler knows malloc as a builtin that reads no globals, and would
 * otherwise drop the stores around a call it can see (as in faults_work). */
static _Thread_local volatile bool armed;   /* count and inject only inside the window */
static _Thread_local volatile long fail_at; /* index of the allocation to fail, -1 for none */
static _Thread_local volatile long allocs;  /* allocations made in the window */
static _Thread_local volatile long live;    /* allocations made minus blocks freed */

void *malloc(size_t size) {
    if (armed) {
        if (allocs++ == fail_at)
            return NULL;
        void *p = __libc_malloc(size);
        live += p != NULL;
        return p;
    }
    return __libc_malloc(size);
}

void free(void *ptr) {
    if (armed && ptr)
        live--;
    __libc_free(ptr);
}

static void arm(long fail) {
    allocs = live = 0;
    fail_at = fail;
    armed = true;
}
/* Counts again without resetting, to match a parse's allocations against the frees. */
static void resume(void) { armed = true; }
static void disarm(void) { armed = false; }

/* True when this executable's malloc is the one being called (valgrind replaces it). */
static bool faults_work(void) {
    arm(0);
    void *volatile p = malloc(1);
    disarm();
    free(p);
    return p == NULL;
}
#else
static long live;
static void arm(long fail) { (void)fail; }
static void resume(void) {}
static void disarm(void) {}
static bool faults_work(void) { return false; }
#endif

/* Every byte zero, padding included: the contract is a zeroed struct, not NULL pointers. */
static bool is_zero(const eddy__url *u) {
    static const unsigned char zero[sizeof(eddy__url)];
    return memcmp(u, zero, sizeof(zero)) == 0;
}

static void expect_str(const char *what, const char *url, const char *got, const char *want) {
    if (!want)
        cr_expect_null(got, "%s: %s should be NULL, is '%s'", url, what, got);
    else if (!got)
        cr_expect_fail("%s: %s is NULL, want '%s'", url, what, want);
    else
        cr_expect_str_eq(got, want, "%s: %s", url, what);
}

struct good {
    const char *text;
    eddy__url_kind kind;
    const char *name, *host;
    int port;
    const char *path, *user, *password;
    int db;
};

#define MEM(text, name)                                                                            \
    { text, EDDY__URL_MEMORY, name, NULL, 0, NULL, NULL, NULL, 0 }
#define TCP(text, host, port, user, password, db)                                                  \
    { text, EDDY__URL_TCP, NULL, host, port, NULL, user, password, db }
#define UNX(text, path, db)                                                                        \
    { text, EDDY__URL_UNIX, NULL, NULL, 0, path, NULL, NULL, db }

static const struct good goods[] = {
    MEM("memory://", ""),
    MEM("memory://orders", "orders"),
    MEM("memory://Orders_v2.test-1", "Orders_v2.test-1"),
    MEM("MEMORY://x", "x"), /* schemes are case-insensitive (RFC 3986) */

    TCP("redis://localhost", "localhost", 6379, NULL, NULL, 0),
    TCP("redis://localhost:6380", "localhost", 6380, NULL, NULL, 0),
    TCP("redis://localhost/3", "localhost", 6379, NULL, NULL, 3),
    TCP("redis://localhost:6380/15", "localhost", 6380, NULL, NULL, 15),
    TCP("redis://h/0", "h", 6379, NULL, NULL, 0),
    TCP("redis://127.0.0.1:1", "127.0.0.1", 1, NULL, NULL, 0),
    TCP("redis://h:65535", "h", 65535, NULL, NULL, 0),
    TCP("redis://h:06380/07", "h", 6380, NULL, NULL, 7),
    TCP("redis://redis_1.svc-a.local", "redis_1.svc-a.local", 6379, NULL, NULL, 0),
    TCP("Redis://H", "H", 6379, NULL, NULL, 0),
    TCP("redis://user:pw@h", "h", 6379, "user", "pw", 0),
    TCP("redis://user:pw@h:7000/2", "h", 7000, "user", "pw", 2),
    TCP("redis://:pw@h", "h", 6379, NULL, "pw", 0),
    TCP("redis://:pw@h:7000/2", "h", 7000, NULL, "pw", 2),
    TCP("redis://[::1]", "::1", 6379, NULL, NULL, 0),
    TCP("redis://[::1]:6380/1", "::1", 6380, NULL, NULL, 1),
    TCP("redis://[2001:DB8::a]/4", "2001:DB8::a", 6379, NULL, NULL, 4),
    TCP("redis://[::ffff:127.0.0.1]:7", "::ffff:127.0.0.1", 7, NULL, NULL, 0),
    TCP("redis://u:pw@[::1]:6380/1", "::1", 6380, "u", "pw", 1),
    /* Credentials end at the last '@', and the password runs to it, so it may hold ':', '@'
     * and '/' unescaped. */
    TCP("redis://:p@ss@h", "h", 6379, NULL, "p@ss", 0),
    TCP("redis://u:a:b@h", "h", 6379, "u", "a:b", 0),
    TCP("redis://:pa/ss@h/1", "h", 6379, NULL, "pa/ss", 1),
    /* Only %40, %3A and %25 are decoded, in either case; other escapes stay as written. */
    TCP("redis://u%3Ax%40y:p%40ss%3Aw%25rd@h", "h", 6379, "u:x@y", "p@ss:w%rd", 0),
    TCP("redis://u:%3a%3A@h", "h", 6379, "u", "::", 0),
    TCP("redis://u:%2540@h", "h", 6379, "u", "%40", 0),
    TCP("redis://u:%41%2F%4@h", "h", 6379, "u", "%41%2F%4", 0),
    TCP("redis://u:%@h", "h", 6379, "u", "%", 0),

    UNX("unix:///tmp/redis.sock", "/tmp/redis.sock", 0),
    UNX("unix:///tmp/redis.sock?db=5", "/tmp/redis.sock", 5),
    UNX("unix:///tmp/redis.sock?db=15", "/tmp/redis.sock", 15),
    UNX("unix:///tmp/redis.sock?db=16", "/tmp/redis.sock", 16), /* no cap: the server decides */
    UNX("unix:///var/run/my redis/r.sock", "/var/run/my redis/r.sock", 0),
    UNX("UNIX:///a", "/a", 0),
};

static void check_good(const struct good *g) {
    eddy__url u;
    eddy_error err = {.status = EDDY_ERR_CANCELLED, .detail = "untouched"};
    arm(-1);
    eddy_status st = eddy__url_parse(g->text, &u, &err);
    disarm();
    cr_expect_eq(st, EDDY_OK, "%s: %s (%s)", g->text, eddy_status_name(st), err.detail);
    if (st != EDDY_OK)
        return;
    cr_expect_eq(err.status, EDDY_ERR_CANCELLED, "%s: error struct touched", g->text);
    cr_expect_eq(u.kind, g->kind, "%s: kind", g->text);
    expect_str("name", g->text, u.name, g->name);
    expect_str("host", g->text, u.host, g->host);
    cr_expect_eq(u.port, g->port, "%s: port %d, want %d", g->text, u.port, g->port);
    expect_str("path", g->text, u.path, g->path);
    expect_str("user", g->text, u.user, g->user);
    expect_str("password", g->text, u.password, g->password);
    cr_expect_eq(u.db, g->db, "%s: db %d, want %d", g->text, u.db, g->db);
    resume();
    eddy__url_free(&u);
    disarm();
    cr_expect(is_zero(&u), "%s: eddy__url_free leaves the struct zeroed", g->text);
    cr_expect_eq(live, 0, "%s: %ld allocation(s) not freed by eddy__url_free", g->text, live);
}

Test(url, valid) {
    for (size_t i = 0; i < N(goods); i++)
        check_good(&goods[i]);
}

struct bad {
    const char *text;
    const char *needle;
};

/* Rows holding "s3cret" check that it stays out of the detail: each puts the secret where a
 * careless parser would echo it. */
static const struct bad bads[] = {
    {"", "URL is empty"},
    {"localhost:6379", "unknown scheme 'localhost'"},
    {"http://h", "unknown scheme 'http'"},
    {"redis+unix:///tmp/s", "unknown scheme 'redis+unix'"},
    {"tcp://h:6379", "unknown scheme 'tcp'"},
    {"redis:h", "scheme 'redis' must be followed by '://'"},
    {"redis:/h", "scheme 'redis' must be followed by '://'"},
    {"memory:", "scheme 'memory' must be followed by '://'"},
    {"unix:/tmp/s", "scheme 'unix' must be followed by '://'"},
    {"localhost", "no scheme"},
    {"//h", "no scheme"},
    {"://h", "no scheme"},
    {":s3cret@h", "no scheme"},
    {"u s:s3cret@h", "no scheme"},
    {"user:s3cret@host", "unknown scheme 'user'"},

    {"memory://a/b", "memory name: bad character at 1 after 'a'"},
    {"memory://a b", "bad character at 1"},
    {"memory://a:b", "bad character at 1"},
    {"memory://x\x01", "bad character at 1 after 'x'"},
    {"memory://u:s3cret@x", "memory name: bad character at 1 after 'u'"},

    {"redis://", "empty host"},
    {"redis://:6379", "empty host"},
    {"redis:///0", "empty host"},
    {"redis://:s3cret@", "empty host"},
    {"redis://:s3cret@:6379", "empty host"},
    {"redis://:s3cret", "empty host"},
    {"redis://h h", "host 'h h': bad character at 1"},
    {"redis://h?db=1", "host 'h?db=1': bad character at 1"},
    {"redis://h\t", "host 'h\\x09': bad character at 1"},
    {"redis://h:", "empty port (expected 1..65535)"},
    {"redis://h:/0", "empty port"},
    {"redis://h:0", "port out of range (expected 1..65535)"},
    {"redis://h:65536", "port out of range"},
    {"redis://h:99999999999999999999999", "port out of range"},
    {"redis://h:-1", "port is not a decimal number"},
    {"redis://h:+1", "port is not a decimal number"},
    {"redis://h:abc", "port is not a decimal number"},
    {"redis://h:6379x", "junk after the port at 4"},
    {"redis://h:6379 ", "junk after the port at 4"},
    {"redis://h:6379:1", "junk after the port at 4"},
    {"redis://h:6379?db=1", "junk after the port"},
    {"redis://h/", "empty db (expected 0..2147483647)"},
    {"redis://h/2147483648", "db out of range (expected 0..2147483647)"},
    {"redis://h/99999999999999999999999", "db out of range"},
    {"redis://h/-1", "db is not a decimal number"},
    {"redis://h/x", "db is not a decimal number"},
    {"redis://h/1x", "junk after the db at 1"},
    {"redis://h/0/", "junk after the db at 1"},
    {"redis://h/0?x=1", "junk after the db"},
    {"redis://user@h", "credentials need a ':'"},
    {"redis://@h", "credentials need a ':'"},
    {"redis://u:@h", "empty password"},
    {"redis://:@h", "empty password"},
    {"redis://[::1", "IPv6 host without a closing ']'"},
    {"redis://[]", "empty host"},
    {"redis://[]:6379", "empty host"},
    {"redis://[::1]x", "junk after the IPv6 host at 5"},
    {"redis://[::1]]", "junk after the IPv6 host"},
    {"redis://[1.2.3.4]", "IPv6 host '[1.2.3.4]' is not an IPv6 address"},
    {"redis://[::g]", "IPv6 host '[::g]': bad character at 3"},
    {"redis://[::1%eth0]", "bad character at 4"},
    {"redis://[::1]:", "empty port"},
    {"redis://[::1]:70000", "port out of range"},
    /* The '@' forgotten: the password lands in the port or db, which are never echoed. */
    {"redis://u:s3cret", "port is not a decimal number"},
    {"redis://u:12s3cret", "junk after the port at 2"},
    {"redis://u:99s3cret/1", "junk after the port"},
    {"redis://h/s3cret", "db is not a decimal number"},
    {"redis://u:s3cret@h:x", "port is not a decimal number"},
    {"redis://u:s3cret@h/99999999999", "db out of range"},
    {"redis://u:s3cret@bad host", "host 'bad host'"},
    {"redis://u:s3cret@[::1", "closing ']'"},

    {"redis-sentinel://h:26379", "missing master name"},
    {"redis-sentinel://h:26379/", "missing master name"},
    {"redis-sentinel://a:1,b:2", "missing master name"},
    {"redis-sentinel://:s3cret@h", "missing master name"},
    {"redis-sentinel://h/m y", "master name: bad character at 1 after 'm'"},
    {"redis-sentinel://h:0/m", "port out of range"},
    {"redis-sentinel://a:1,b:x/m", "sentinel 2 of 2: port is not a decimal number"},
    {"redis-sentinel://a:1,,c/m", "sentinel 2 of 3: empty host"},
    {"redis-sentinel://a:1,/m", "sentinel 2 of 2: empty host"},
    {"redis-sentinel:///m", "empty host"},
    {"redis-sentinel://h/m/x", "db is not a decimal number"},
    {"redis-sentinel://h/m/1/2", "junk after the db at 1"},
    {"redis-sentinel://u@h/m", "credentials need a ':'"},
    {"redis-sentinel://u:s3cret/m", "port is not a decimal number"},
    {"redis-sentinel:h/m", "scheme 'redis-sentinel' must be followed by '://'"},
    {"redis-sentinels://h/m", "unknown scheme 'redis-sentinels'"},
    {"redis-cluster://h/1", "db 1: a Redis Cluster has db 0 only"},
    {"redis-cluster://a:1,b:x", "node 2 of 2: port is not a decimal number"},
    {"redis-cluster://a:1,,c", "node 2 of 3: empty host"},
    {"redis-cluster://", "empty host"},
    {"redis-cluster://h/x", "db is not a decimal number"},
    {"redis-cluster:h", "scheme 'redis-cluster' must be followed by '://'"},

    {"unix://", "missing socket path"},
    {"unix:///", "missing socket path"},
    {"unix:///?db=1", "missing socket path"},
    {"unix://tmp/s", "socket path must be absolute"},
    {"unix://localhost/tmp/s", "socket path must be absolute"},
    {"unix://:s3cret@/tmp/s", "socket path must be absolute"},
    {"unix:///tmp/s\x01", "socket path '/tmp/s\\x01': control character at 6"},
    {"unix:///tmp/s\x7f", "control character at 6"},
    {"unix:///tmp/s?", "unknown query after the socket path (only ?db=N)"},
    {"unix:///tmp/s?database=1", "unknown query"},
    {"unix:///tmp/s?DB=1", "unknown query"},
    {"unix:///tmp/s?db=", "empty db"},
    {"unix:///tmp/s?db=2147483648", "db out of range"},
    {"unix:///tmp/s?db=x", "db is not a decimal number"},
    {"unix:///tmp/s?db=1&x=2", "junk after the db at 1"},
    {"unix:///tmp/s?db=1?db=2", "junk after the db"},
};

static void check_bad(const char *text, const char *needle) {
    eddy__url u;
    memset(&u, 0xa5, sizeof(u)); /* *out must be zeroed, not merely left alone */
    eddy_error err = {0};
    arm(-1);
    eddy_status st = eddy__url_parse(text, &u, &err);
    disarm();
    cr_expect_eq(st, EDDY_ERR_INVALID_URL, "%s: got %s", text, eddy_status_name(st));
    cr_expect_eq(err.status, EDDY_ERR_INVALID_URL, "%s: err.status", text);
    cr_expect(strstr(err.detail, needle) != NULL, "%s: detail \"%s\" lacks \"%s\"", text,
              err.detail, needle);
    cr_expect(!strstr(err.detail, "s3cret"), "%s: detail \"%s\" reveals the password", text,
              err.detail);
    cr_expect(is_zero(&u), "%s: *out not zeroed on failure", text);
    cr_expect_eq(live, 0, "%s: %ld allocation(s) leaked on failure", text, live);
    if (st == EDDY_OK)
        eddy__url_free(&u);

    memset(&u, 0xa5, sizeof(u));
    cr_expect_eq(eddy__url_parse(text, &u, NULL), EDDY_ERR_INVALID_URL, "%s with NULL error", text);
    cr_expect(is_zero(&u), "%s: *out not zeroed on failure (NULL error)", text);
}

Test(url, invalid) {
    for (size_t i = 0; i < N(bads); i++)
        check_bad(bads[i].text, bads[i].needle);
}

/* The socket path limit is the platform's sun_path less the NUL. */
Test(url, unix_path_length) {
    size_t max = sizeof(((struct sockaddr_un *)0)->sun_path) - 1;
    char text[512], want[512];
    strcpy(text, "unix://");
    want[0] = '/';
    memset(want + 1, 'p', max - 1);
    want[max] = '\0';
    strcat(text, want);

    struct good g = UNX(text, want, 0);
    check_good(&g);

    strcat(text, "p");
    char needle[64];
    snprintf(needle, sizeof(needle), "%zu bytes, more than the %zu a socket takes", max + 1, max);
    check_bad(text, needle);
}

Test(url, null_arguments) {
    eddy_error err = {0};
    cr_expect_eq(eddy__url_parse("memory://", NULL, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect(strstr(err.detail, "output is NULL"), "detail: %s", err.detail);
    cr_expect_eq(eddy__url_parse("memory://", NULL, NULL), EDDY_ERR_INVALID_ARGUMENT);

    eddy__url u;
    memset(&u, 0xa5, sizeof(u));
    cr_expect_eq(eddy__url_parse(NULL, &u, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect(strstr(err.detail, "URL is NULL"), "detail: %s", err.detail);
    cr_expect(is_zero(&u));
}

Test(url, free_is_idempotent) {
    eddy__url_free(NULL);
    eddy__url u;
    cr_assert_eq(eddy__url_parse("redis://u:pw@h", &u, NULL), EDDY_OK);
    eddy__url_free(&u);
    cr_expect(is_zero(&u));
    eddy__url_free(&u); /* zeroed by the first free, so a second one is harmless */
}

/* Fails each allocation of a parse in turn: every one must give NOMEM with *out zeroed and
 * nothing leaked, and the count of allocations must reach the number of fields set. */
Test(url, allocation_failures) {
    if (!faults_work())
        cr_skip_test("malloc cannot be intercepted in this build (sanitizer, valgrind, libc)");
    static const struct {
        const char *text;
        long allocs;
    } cases[] = {
        {"memory://", 1},
        {"memory://x", 1},
        {"redis://h", 1},
        {"redis://:pw@h", 2},
        {"redis://u:pw@h/1", 3},
        {"redis://u:pw@[::1]:1", 3},
        {"unix:///tmp/s?db=1", 1},
        {"redis-sentinel://:pw@a:1,b/m", 5},
        {"redis-cluster://:pw@a:1,b", 4},
    };
    for (size_t i = 0; i < N(cases); i++) {
        const char *text = cases[i].text;
        long n = 0;
        for (;; n++) {
            eddy__url u;
            memset(&u, 0xa5, sizeof(u));
            eddy_error err = {0};
            arm(n);
            eddy_status st = eddy__url_parse(text, &u, &err);
            disarm();
            if (st == EDDY_OK) {
                resume();
                eddy__url_free(&u);
                disarm();
                cr_expect_eq(live, 0, "%s: leak after free", text);
                break;
            }
            cr_expect_eq(st, EDDY_ERR_NOMEM, "%s, allocation %ld failing: %s", text, n,
                         eddy_status_name(st));
            cr_expect(strstr(err.detail, "out of memory"), "%s: detail %s", text, err.detail);
            cr_expect(is_zero(&u), "%s, allocation %ld failing: *out not zeroed", text, n);
            cr_expect_eq(live, 0, "%s, allocation %ld failing: %ld leaked", text, n, live);
            if (n > 16)
                cr_assert_fail("%s: still failing after %ld allocations", text, n);
        }
        cr_expect_eq(n, cases[i].allocs, "%s: %ld allocations, want %ld", text, n, cases[i].allocs);
    }
}

Test(url, rediss_is_redis_over_tls) {
    eddy__url u;
    eddy_error err;
    cr_assert_eq(eddy__url_parse("rediss://u:pw@cache.example:6380/2", &u, &err), EDDY_OK, "%s",
                 err.detail);
    cr_expect_eq(u.kind, EDDY__URL_TCP);
    cr_expect(u.tls);
    cr_expect_str_eq(u.host, "cache.example");
    cr_expect_eq(u.port, 6380);
    cr_expect_str_eq(u.password, "pw");
    cr_expect_eq(u.db, 2);
    eddy__url_free(&u);
    cr_assert_eq(eddy__url_parse("redis://h", &u, &err), EDDY_OK);
    cr_expect(!u.tls);
    eddy__url_free(&u);
}

/* Several sentinels, ports defaulting to 26379, the master's name, credentials and db. */
Test(url, sentinel) {
    eddy__url u;
    eddy_error err;
    cr_assert_eq(
        eddy__url_parse("redis-sentinel://u:pw@s1:26380,[::1],s3.local:7/mymaster/2", &u, &err),
        EDDY_OK, "%s", err.detail);
    cr_expect_eq(u.kind, EDDY__URL_SENTINEL);
    cr_expect(!u.tls);
    cr_assert_eq(u.nsentinels, 3);
    cr_expect_str_eq(u.sentinels[0].host, "s1");
    cr_expect_eq(u.sentinels[0].port, 26380);
    cr_expect_str_eq(u.sentinels[1].host, "::1");
    cr_expect_eq(u.sentinels[1].port, 26379);
    cr_expect_str_eq(u.sentinels[2].host, "s3.local");
    cr_expect_eq(u.sentinels[2].port, 7);
    cr_expect_str_eq(u.name, "mymaster");
    cr_expect_str_eq(u.user, "u");
    cr_expect_str_eq(u.password, "pw");
    cr_expect_eq(u.db, 2);
    cr_expect_null(u.host);
    eddy__url_free(&u);
    cr_expect(is_zero(&u));

    cr_assert_eq(eddy__url_parse("rediss-sentinel://h/m", &u, &err), EDDY_OK, "%s", err.detail);
    cr_expect(u.tls);
    cr_expect_eq(u.nsentinels, 1);
    cr_expect_eq(u.sentinels[0].port, 26379);
    cr_expect_str_eq(u.name, "m");
    cr_expect_null(u.password);
    cr_expect_eq(u.db, 0);
    eddy__url_free(&u);
}

/* Seed nodes, ports defaulting to 6379, credentials; /0 is the only db. */
Test(url, cluster) {
    eddy__url u;
    eddy_error err = {0};
    cr_assert_eq(eddy__url_parse("redis-cluster://u:pw@n1:7000,[::1],n3.local/0", &u, &err),
                 EDDY_OK, "%s", err.detail);
    cr_expect_eq(u.kind, EDDY__URL_CLUSTER);
    cr_assert_eq(u.nsentinels, 3);
    cr_expect_str_eq(u.sentinels[0].host, "n1");
    cr_expect_eq(u.sentinels[0].port, 7000);
    cr_expect_str_eq(u.sentinels[1].host, "::1");
    cr_expect_eq(u.sentinels[1].port, 6379);
    cr_expect_str_eq(u.sentinels[2].host, "n3.local");
    cr_expect_str_eq(u.user, "u");
    cr_expect_str_eq(u.password, "pw");
    cr_expect_eq(u.db, 0);
    cr_expect(!u.tls);
    cr_expect_null(u.host);
    eddy__url_free(&u);
    cr_expect(is_zero(&u));

    cr_assert_eq(eddy__url_parse("rediss-cluster://h", &u, &err), EDDY_OK, "%s", err.detail);
    cr_expect(u.tls);
    cr_expect_eq(u.nsentinels, 1);
    cr_expect_eq(u.sentinels[0].port, 6379);
    eddy__url_free(&u);
}
