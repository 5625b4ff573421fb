/* SPDX-License-Identifier: BSD-3-Clause */
/* Support for the ThreadSanitizer harnesses; see tsan_support.h. The redis-server is started
 * the way tests/support/redis_server.c starts one (that file asserts through Criterion, so it
 * is not linked here): fork and exec on a free loopback port, no persistence, killed with the
 * harness. It is started before any eddy thread exists, so the fork copies one thread. */
#include "tsan_support.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

atomic_int tsan_failures;
static pthread_mutex_t print_mu = PTHREAD_MUTEX_INITIALIZER;

void tsan_fail(const char *file, int line, const char *cond, const char *fmt, ...) {
    atomic_fetch_add(&tsan_failures, 1);
    pthread_mutex_lock(&print_mu);
    fprintf(stderr, "FAILED %s:%d: %s: ", file, line, cond);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    pthread_mutex_unlock(&print_mu);
}

void tsan_log(eddy_log_level level, const char *msg, void *user) {
    (void)user;
    static const char *const names[] = {"debug", "info", "warn", "error"};
    if (!getenv("EDDY_TSAN_VERBOSE"))
        return;
    pthread_mutex_lock(&print_mu);
    fprintf(stderr, "  log %s: %s\n", names[level & 3], msg);
    pthread_mutex_unlock(&print_mu);
}

void tsan_sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

long long tsan_mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void tsan_settings(eddy_settings *s, const tsan_run *run) {
    eddy_settings_init(s);
    s->url = run->url;
    s->ns = run->ns;
    s->source = "/eddy/tsan";
    s->workers = 4;
    s->redelivery_idle_ms = 150;
    s->block_ms = 50;
    s->discovery_ms = 50;
    s->lease_ms = 3000;
    s->log = tsan_log;
    /* EDDY_TEST_SHARE_READS=N: reads shared from N subscriptions (blocking/share.h) */
    const char *share = getenv("EDDY_TEST_SHARE_READS");
    if (share && *share)
        s->share_reads_from = (unsigned)strtoul(share, NULL, 10);
}

eddy_event *tsan_event(const char *prefix, int n, const char *type) {
    char id[96], data[64];
    snprintf(id, sizeof(id), "%s-%d", prefix, n);
    int len = snprintf(data, sizeof(data), "payload %d", n);
    eddy_event *ev = eddy_event_new();
    if (!ev || eddy_event_set_id(ev, id) || eddy_event_set_source(ev, "/eddy/tsan") ||
        eddy_event_set_type(ev, type) || eddy_event_set_data(ev, data, (size_t)len)) {
        CHECK(0, "cannot build event %s", id);
        eddy_event_free(ev);
        return NULL;
    }
    return ev;
}

int tsan_event_number(const char *id) {
    const char *dash = id ? strrchr(id, '-') : NULL;
    return dash && dash[1] ? atoi(dash + 1) : -1;
}

/* ---- the private redis-server ------------------------------------------------------------- */

static int free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return 0;
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    int port = 0;
    if (bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    close(fd);
    return port;
}

static int pings(int port) {
    struct timeval tv = {0, 200000};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
    int ok = 0;
    if (c && !c->err) {
        redisReply *r = redisCommand(c, "PING");
        ok = r && r->type == REDIS_REPLY_STATUS;
        if (r)
            freeReplyObject(r);
    }
    if (c)
        redisFree(c);
    return ok;
}

static pid_t redis_start(char *url, size_t size) {
    for (int attempt = 0; attempt < 20; attempt++) {
        int port = free_port();
        if (!port)
            continue;
        char dir[128];
        snprintf(dir, sizeof(dir), "/tmp/eddy-tsan-redis-%d-%d", (int)getpid(), port);
        mkdir(dir, 0700);
        pid_t pid = fork();
        if (pid < 0)
            return -1;
        if (pid == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL); /* dies with the harness, whatever ends it */
            int devnull = open("/dev/null", O_RDWR);
            if (devnull >= 0) {
                dup2(devnull, 0);
                dup2(devnull, 1);
                dup2(devnull, 2);
            }
            char ports[16];
            snprintf(ports, sizeof(ports), "%d", port);
            execlp("redis-server", "redis-server", "--bind", "127.0.0.1", "--port", ports, "--save",
                   "", "--appendonly", "no", "--dir", dir, "--loglevel", "warning", "--logfile",
                   "redis.log", (char *)NULL);
            _exit(127);
        }
        for (int i = 0; i < 200; i++) {
            if (pings(port)) {
                snprintf(url, size, "redis://127.0.0.1:%d", port);
                return pid;
            }
            if (waitpid(pid, NULL, WNOHANG) == pid)
                break; /* it exited: port taken, or no redis-server */
            tsan_sleep_ms(25);
        }
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    return -1;
}

static void redis_stop(pid_t pid) {
    if (pid > 0) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
}

/* ---- main --------------------------------------------------------------------------------- */

int tsan_main(const char *prog, const tsan_scenario *scenarios, const char *const *names, int n) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    char redis_url[64];
    pid_t redis = redis_start(redis_url, sizeof(redis_url));
    if (redis < 0) {
        fprintf(stderr, "%s: could not start redis-server on 127.0.0.1\n", prog);
        return 1;
    }
    char memory_url[96];
    snprintf(memory_url, sizeof(memory_url), "memory://%s", prog);
    const char *urls[2] = {memory_url, redis_url};
    const char *backends[2] = {"memory", "redis"};
    for (int b = 0; b < (getenv("EDDY_TSAN_ONLY_MEMORY") ? 1 : 2); b++) {
        for (int i = 0; i < n; i++) {
            char ns[128];
            snprintf(ns, sizeof(ns), "tsan-%s-%d-%s", names[i], (int)getpid(), backends[b]);
            tsan_run run = {urls[b], ns, backends[b]};
            int before = atomic_load(&tsan_failures);
            long long t0 = tsan_mono_ms();
            scenarios[i](&run);
            int failed = atomic_load(&tsan_failures) - before;
            printf("%s: %-8s %-24s %s (%lld ms)\n", prog, backends[b], names[i],
                   failed ? "FAILED" : "ok", tsan_mono_ms() - t0);
        }
    }
    redis_stop(redis);
    int failures = atomic_load(&tsan_failures);
    if (failures)
        fprintf(stderr, "%s: %d check(s) failed\n", prog, failures);
    return failures ? 1 : 0;
}

eddy_status tsan_item_decode(const eddy_event *stored, const eddy_event_meta *meta, void **event,
                             eddy_error *err, void *user) {
    (void)meta, (void)err, (void)user;
    tsan_item *it = calloc(1, sizeof(*it));
    if (!it)
        return EDDY_ERR_NOMEM;
    snprintf(it->id, sizeof(it->id), "%s", eddy_event_id(stored));
    it->n = tsan_event_number(it->id);
    *event = it;
    return EDDY_OK;
}

void tsan_item_free(void *event, void *user) {
    (void)user;
    free(event);
}

const char *tsan_item_id(const void *event, void *user) {
    (void)user;
    return ((const tsan_item *)event)->id;
}

void tsan_append_history(eddy_store *store, const char *prefix, int from, int to,
                         const char *subject, int streams) {
    eddy_append_opts ao;
    eddy_append_opts_init(&ao);
    ao.publish_subject = subject;
    for (int n = from; n < to; n++) {
        char stream[64];
        snprintf(stream, sizeof(stream), "order-%d", n % streams);
        eddy_event *ev = tsan_event(prefix, n, "tsan.stored");
        eddy_error err;
        CHECK_OK(
            eddy_store_append(store, stream, (const eddy_event *const *)&ev, 1, &ao, NULL, &err),
            &err, "append");
        eddy_event_free(ev);
    }
}
