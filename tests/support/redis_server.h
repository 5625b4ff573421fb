/* SPDX-License-Identifier: BSD-3-Clause */
/* A private redis-server for tests that kill, restart or stop it (the shared fixture must not
 * be disturbed). It binds 127.0.0.1 on a free port and keeps no data on disk. */
#ifndef EDDY_TEST_REDIS_SERVER_H
#define EDDY_TEST_REDIS_SERVER_H

#include <hiredis/hiredis.h>

#include <sys/types.h>

typedef struct eddy_test_redis {
    pid_t pid;
    int port;
    char url[64];
    char dir[128];
} eddy_test_redis;

/* Starts a server on a free port (port 0) or on the given port; fails the test on error. */
void eddy_test_redis_start(eddy_test_redis *r, int port);
/* Same, with extra redis-server arguments (NULL-terminated), e.g. {"--requirepass", "pw", 0}. */
void eddy_test_redis_start_with(eddy_test_redis *r, int port, const char *const *extra);
/* SIGKILL, and wait for the process to be gone. */
void eddy_test_redis_kill(eddy_test_redis *r);
/* Sends a command through redis-cli-like hiredis and returns the reply's integer, -1 when
 * it is not an integer. For checks such as XLEN and XPENDING counts. */
long long eddy_test_redis_int(const char *url, const char *fmt, ...);

/* A free TCP port on 127.0.0.1 (bound and released: good enough for tests). */
int eddy_test_free_port(void);
/* One command to the server on 127.0.0.1:port, with 5 s timeouts (NULL when it does not
 * answer); the caller frees the reply. */
redisReply *eddy_test_cmd_at(int port, const char *fmt, ...);

#endif
