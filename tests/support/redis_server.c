/* SPDX-License-Identifier: BSD-3-Clause */
/* Private redis-server processes for tests; see redis_server.h. */
#include "redis_server.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int eddy_test_free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert(fd >= 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert(bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
    socklen_t len = sizeof(a);
    getsockname(fd, (struct sockaddr *)&a, &len);
    close(fd);
    return ntohs(a.sin_port);
}

static int pings(int port) {
    struct timeval tv = {0, 200000};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
    int ok = 0;
    if (c && !c->err) {
        redisReply *r = redisCommand(c, "PING");
        /* A server with a password answers NOAUTH: it is up all the same. */
        ok = r && (r->type == REDIS_REPLY_STATUS ||
                   (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOAUTH", 6) == 0));
        if (r)
            freeReplyObject(r);
    }
    if (c)
        redisFree(c);
    return ok;
}

void eddy_test_redis_start(eddy_test_redis *r, int port) {
    eddy_test_redis_start_with(r, port, NULL);
}

void eddy_test_redis_start_with(eddy_test_redis *r, int port, const char *const *extra) {
    for (int attempt = 0; attempt < 20; attempt++) {
        int p = port ? port : eddy_test_free_port();
        snprintf(r->dir, sizeof(r->dir), "/tmp/eddy-test-redis-%d-%d", (int)getpid(), p);
        char mk[256];
        snprintf(mk, sizeof(mk), "mkdir -p %s", r->dir);
        cr_assert(system(mk) == 0);
        pid_t pid = fork();
        cr_assert(pid >= 0);
        if (pid == 0) {
            /* Dies with the test process, even when a failed assertion ends it before its
             * cleanup; and keeps no copy of the test's output pipes open. */
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            int devnull = open("/dev/null", O_RDWR);
            if (devnull >= 0) {
                dup2(devnull, 0);
                dup2(devnull, 1);
                dup2(devnull, 2);
            }
            char ports[16];
            snprintf(ports, sizeof(ports), "%d", p);
            const char *args[64] = {"redis-server", "--bind",    "127.0.0.1", "--port",
                                    ports,          "--save",    "",          "--appendonly",
                                    "no",           "--dir",     r->dir,      "--loglevel",
                                    "warning",      "--logfile", "redis.log"};
            int n = 15;
            for (int i = 0; extra && extra[i] && n < 63; i++)
                args[n++] = extra[i];
            args[n] = NULL;
            execvp("redis-server", (char *const *)args);
            _exit(127);
        }
        for (int i = 0; i < 200; i++) {
            if (pings(p)) {
                r->pid = pid;
                r->port = p;
                snprintf(r->url, sizeof(r->url), "redis://127.0.0.1:%d", p);
                return;
            }
            if (waitpid(pid, NULL, WNOHANG) == pid)
                break; /* it exited: port taken? try another */
            struct timespec pause = {0, 25000000};
            nanosleep(&pause, NULL);
        }
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        if (port) { /* the same port may need a moment to be released */
            struct timespec pause = {0, 100000000};
            nanosleep(&pause, NULL);
        }
    }
    cr_assert_fail("could not start redis-server");
}

void eddy_test_redis_kill(eddy_test_redis *r) {
    if (r->pid > 0) {
        kill(r->pid, SIGKILL);
        waitpid(r->pid, NULL, 0);
        r->pid = 0;
    }
}

long long eddy_test_redis_int(const char *url, const char *fmt, ...) {
    int port = 0;
    cr_assert(sscanf(url, "redis://127.0.0.1:%d", &port) == 1, "bad url %s", url);
    redisContext *c = redisConnect("127.0.0.1", port);
    cr_assert(c && !c->err);
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    long long v = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    if (r)
        freeReplyObject(r);
    redisFree(c);
    return v;
}

redisReply *eddy_test_cmd_at(int port, const char *fmt, ...) {
    struct timeval tv = {5, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
    if (!c || c->err) {
        if (c)
            redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, tv);
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    redisFree(c);
    return r;
}
