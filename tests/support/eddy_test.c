/* SPDX-License-Identifier: BSD-3-Clause */
/* Test helpers. The Redis fixture (tests/redis-fixture.sh) writes its URL into
 * $EDDY_TEST_REDIS_DIR/url; a missing URL is a test failure, never a skip. */
#include "eddy_test.h"

#include <criterion/criterion.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "memory/internal.h"

const char *eddy_test_redis_url(void) {
    static char url[256];
    if (url[0])
        return url;
    const char *dir = getenv("EDDY_TEST_REDIS_DIR");
    cr_assert(dir, "EDDY_TEST_REDIS_DIR is not set: run the tests through ctest");
    char path[1024];
    snprintf(path, sizeof(path), "%s/url", dir);
    FILE *f = fopen(path, "r");
    cr_assert(f, "no Redis fixture at %s: the redis.start fixture did not run", path);
    char *ok = fgets(url, sizeof(url), f);
    fclose(f);
    cr_assert(ok, "empty Redis fixture URL");
    url[strcspn(url, "\r\n")] = '\0';
    return url;
}

const char *eddy_test_namespace(char *buf, unsigned long size, const char *prefix) {
    static unsigned counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(buf, size, "%s-%ld-%u-%ld", prefix, (long)getpid(), ++counter, ts.tv_nsec);
    return buf;
}

long long eddy_test_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

bool eddy_test_wait_until(bool (*cond)(void *user), void *user, long long timeout_ms) {
    long long end = eddy_test_now_ms() + timeout_ms;
    for (;;) {
        if (cond(user))
            return true;
        if (eddy_test_now_ms() >= end)
            return cond(user);
        struct timespec pause = {0, 2000000};
        nanosleep(&pause, NULL);
    }
}

static bool count_reached(void *user) {
    const void **a = user;
    return atomic_load((const _Atomic int *)a[0]) >= *(const int *)a[1];
}

bool eddy_test_wait_count(const _Atomic int *count, int n, long long timeout_ms) {
    const void *a[2] = {count, &n};
    return eddy_test_wait_until(count_reached, a, timeout_ms);
}

/* EDDY_TEST_LOG=debug: every level, for a failing run's story. */
void eddy_test_log(eddy_log_level level, const char *msg, void *user) {
    static int least = -1;
    if (least < 0) {
        const char *v = getenv("EDDY_TEST_LOG");
        least = v && strcmp(v, "debug") == 0 ? EDDY_LOG_DEBUG : EDDY_LOG_WARN;
    }
    if ((int)level >= least)
        fprintf(stderr, "[eddy %s] %s\n", user ? (const char *)user : "", msg);
}

void eddy_test_mem_wait(struct eddy__mem_conn *conn, long long deadline_ms) {
    int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    cr_assert_geq(fd, 0, "eventfd");
    if (eddy__mem_conn_park(conn, fd)) {
        long long left = deadline_ms < 0 ? -1 : deadline_ms - eddy_test_now_ms();
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (deadline_ms < 0 || left > 0)
            poll(&p, 1, deadline_ms < 0 ? -1 : (int)left);
        eddy__mem_conn_unpark(conn);
    }
    close(fd);
}

bool eddy_test_mem_parked_on(const char *url, const char *key) {
    const char *name = url + strlen("memory://");
    cr_assert(strncmp(url, "memory://", strlen("memory://")) == 0, "not a memory:// URL: %s", url);
    char buf[256];
    snprintf(buf, sizeof(buf), "%.*s", (int)strcspn(name, "?"), name);
    eddy__mem_engine *e = eddy__mem_engine_acquire(buf);
    cr_assert(e);
    size_t klen = strlen(key);
    bool found = false;
    pthread_mutex_lock(&e->mu);
    /* The waiters' key list as engine.c writes it: (size_t length, bytes) per key. */
    for (const eddy__mem_conn *w = e->conn_waiters; w && !found; w = w->wait_next) {
        const char *p = w->wait_keys;
        for (int i = 0; i < w->wait_nkeys && !found; i++) {
            size_t len;
            memcpy(&len, p, sizeof(len));
            p += sizeof(len);
            found = len == klen && memcmp(p, key, len) == 0;
            p += len;
        }
    }
    pthread_mutex_unlock(&e->mu);
    eddy__mem_engine_release(e);
    return found;
}

void eddy_test_share_reads(eddy_settings *s) {
    const char *v = getenv("EDDY_TEST_SHARE_READS");
    if (v && *v)
        s->share_reads_from = (unsigned)strtoul(v, NULL, 10);
}
