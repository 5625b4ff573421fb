/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared helpers for eddy's tests: the fixture's Redis URL, unique namespaces, waiting. */
#ifndef EDDY_TEST_H
#define EDDY_TEST_H

#include <stdbool.h>

/* URL of the fixture's redis-server ("redis://127.0.0.1:PORT"). Fails the test (never skips)
 * when the fixture is not running. The string is static. */
const char *eddy_test_redis_url(void);

/* A namespace no other test uses: "<prefix>-<pid>-<counter>-<random>". Static buffer per call
 * site is not needed: the result is written into buf. */
const char *eddy_test_namespace(char *buf, unsigned long size, const char *prefix);

/* A log hook for tests: eddy's warnings and errors go to stderr, where ctest shows them on a
 * failure. */
#include "eddy/bus.h"
void eddy_test_log(eddy_log_level level, const char *msg, void *user);
/* With EDDY_TEST_SHARE_READS=N in the environment, sets s->share_reads_from to N: the suite runs
 * the reactive scenarios once more with every subscription's reads on shared connections. */
void eddy_test_share_reads(eddy_settings *s);

/* Monotonic milliseconds. */
long long eddy_test_now_ms(void);
/* For a memory:// connection whose last command was a blocking read that found nothing: waits,
 * as the memory:// link does (parked, polling an eventfd), until a write that can serve the read
 * or deadline_ms (eddy_test_now_ms's clock; <0 waits without limit), then returns so that the
 * caller runs the read again. */
struct eddy__mem_conn;
void eddy_test_mem_wait(struct eddy__mem_conn *conn, long long deadline_ms);
/* Whether a connection of the memory:// engine of url ("memory://NAME") is parked in a blocking
 * read of key (the read found nothing and waits for a write to key): for a test that must write
 * only once a reader waits, without a sleep. Reads waiting on unknown keys do not count. */
bool eddy_test_mem_parked_on(const char *url, const char *key);

/* Polls cond(user) until it is true or timeout_ms passes; returns its last value. For
 * conditions no callback announces (another process's progress). */
bool eddy_test_wait_until(bool (*cond)(void *user), void *user, long long timeout_ms);
/* Polls *count (another thread's progress) until it reaches n or timeout_ms passes; whether it
 * did. */
bool eddy_test_wait_count(const _Atomic int *count, int n, long long timeout_ms);

#endif
