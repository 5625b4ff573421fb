/* SPDX-License-Identifier: BSD-3-Clause */
/* The fault suite's helpers (faults.h): redis-server processes, worker processes, raw
 * commands, id tallies. Shared by fault_suite and fault_worker. */
#include "faults.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int fx_failures;
_Atomic long fx_log_lines;

long long fx_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void fx_sleep_ms(long long ms) {
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

void fx_fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stdout, "FAIL ");
    vfprintf(stdout, fmt, ap);
    fprintf(stdout, "\n");
    fflush(stdout);
    va_end(ap);
    fx_failures++;
}

bool fx_long_profile(void) {
    const char *p = getenv("EDDY_FAULTS_PROFILE");
    return p && strcmp(p, "long") == 0;
}

void fx_scratch(char *buf, size_t size, const char *name) {
    char base[64];
    snprintf(base, sizeof(base), "/tmp/eddy-faults-%d", (int)getpid());
    mkdir(base, 0700);
    snprintf(buf, size, "%s/%s", base, name);
    mkdir(buf, 0700);
}

/* ---- redis-server -------------------------------------------------------------------------- */

int fx_free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        perror("free port");
        exit(2);
    }
    socklen_t len = sizeof(a);
    getsockname(fd, (struct sockaddr *)&a, &len);
    close(fd);
    return ntohs(a.sin_port);
}

static bool pings(int port) {
    struct timeval tv = {0, 200000};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
    bool ok = false;
    if (c && !c->err) {
        redisReply *r = redisCommand(c, "PING");
        ok = r && (r->type == REDIS_REPLY_STATUS ||
                   (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOAUTH", 6) == 0));
        if (r)
            freeReplyObject(r);
    }
    if (c)
        redisFree(c);
    return ok;
}

static pid_t spawn_server(fx_redis *r) {
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        exit(2);
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlives the suite */
        int devnull = open("/dev/null", O_RDWR);
        dup2(devnull, 0);
        dup2(devnull, 1);
        dup2(devnull, 2);
        char port[16];
        snprintf(port, sizeof(port), "%d", r->port);
        const char *args[48] = {"redis-server", "--bind",       "127.0.0.1", "--port",
                                port,           "--save",       "",          "--dir",
                                r->dir,         "--loglevel",   "warning",   "--logfile",
                                "redis.log",    "--maxclients", "4000"};
        int n = 15;
        for (int i = 0; r->extra[i] && n < 47; i++)
            args[n++] = r->extra[i];
        args[n] = NULL;
        execvp("redis-server", (char *const *)args);
        _exit(127);
    }
    return pid;
}

/* Starts the server on r->port; false when it did not answer (port taken, say). */
static bool launch(fx_redis *r) {
    pid_t pid = spawn_server(r);
    for (int i = 0; i < 400; i++) {
        if (pings(r->port)) {
            r->pid = pid;
            return true;
        }
        if (waitpid(pid, NULL, WNOHANG) == pid)
            return false;
        fx_sleep_ms(25);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return false;
}

void fx_redis_start(fx_redis *r, const char *const *extra) {
    memset(r, 0, sizeof(*r));
    for (int i = 0; extra && extra[i] && i < 15; i++)
        r->extra[i] = extra[i];
    for (int attempt = 0; attempt < 20; attempt++) {
        r->port = fx_free_port();
        char name[32];
        snprintf(name, sizeof(name), "redis-%d", r->port);
        fx_scratch(r->dir, sizeof(r->dir), name);
        if (launch(r)) {
            snprintf(r->url, sizeof(r->url), "redis://127.0.0.1:%d", r->port);
            return;
        }
    }
    fprintf(stderr, "could not start redis-server\n");
    exit(2);
}

void fx_redis_kill(fx_redis *r) {
    if (r->pid > 0) {
        kill(r->pid, SIGKILL);
        waitpid(r->pid, NULL, 0);
        r->pid = 0;
    }
}

void fx_redis_restart(fx_redis *r) {
    fx_redis_kill(r);
    for (int attempt = 0; attempt < 40; attempt++) {
        if (launch(r))
            return;
        fx_sleep_ms(100); /* the port may need a moment */
    }
    fprintf(stderr, "could not restart redis-server on port %d\n", r->port);
    exit(2);
}

void fx_redis_stop(fx_redis *r) {
    fx_redis_kill(r);
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", r->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", r->dir);
}

static redisReply *vcmd(const fx_redis *r, const char *fmt, va_list ap) {
    struct timeval tv = {2, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", r->port, tv);
    redisReply *reply = NULL;
    if (c && !c->err) {
        redisSetTimeout(c, (struct timeval){10, 0});
        redisReply *auth = r->password ? redisCommand(c, "AUTH %s", r->password) : NULL;
        if (auth)
            freeReplyObject(auth);
        reply = redisvCommand(c, fmt, ap);
    }
    if (c)
        redisFree(c);
    return reply;
}

redisReply *fx_cmd(const fx_redis *r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *reply = vcmd(r, fmt, ap);
    va_end(ap);
    return reply;
}

long long fx_int(const fx_redis *r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *reply = vcmd(r, fmt, ap);
    va_end(ap);
    long long v = reply && reply->type == REDIS_REPLY_INTEGER ? reply->integer : -1;
    if (reply)
        freeReplyObject(reply);
    return v;
}

long long fx_pending(const fx_redis *r, const char *ns, const char *subject, const char *group) {
    redisReply *reply = fx_cmd(r, "XPENDING {%s}:s:%s %s", ns, subject, group);
    long long v = -1;
    if (reply && reply->type == REDIS_REPLY_ARRAY && reply->elements >= 1 &&
        reply->element[0]->type == REDIS_REPLY_INTEGER)
        v = reply->element[0]->integer;
    if (reply)
        freeReplyObject(reply);
    return v;
}

long long fx_pending_of(const fx_redis *r, const char *ns, const char *subject, const char *group,
                        const char *consumer) {
    redisReply *reply =
        fx_cmd(r, "XPENDING {%s}:s:%s %s - + 100000 %s", ns, subject, group, consumer);
    long long v = reply && reply->type == REDIS_REPLY_ARRAY ? (long long)reply->elements : -1;
    if (reply)
        freeReplyObject(reply);
    return v;
}

/* ---- worker processes ---------------------------------------------------------------------- */

static void worker_path(char *buf, size_t size) {
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0) {
        perror("readlink /proc/self/exe");
        exit(2);
    }
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    *slash = '\0';
    if ((size_t)snprintf(buf, size, "%s/fault_worker", self) >= size)
        exit(2);
}

bool fx_worker_start(fx_worker *w, const char *const *argv, long long wait_ms) {
    char path[PATH_MAX + 32];
    worker_path(path, sizeof(path));
    int fds[2];
    if (pipe(fds) != 0) {
        perror("pipe");
        exit(2);
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        exit(2);
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        const char *args[32] = {path};
        int n = 1;
        for (int i = 0; argv[i] && n < 31; i++)
            args[n++] = argv[i];
        args[n] = NULL;
        execv(path, (char *const *)args);
        _exit(127);
    }
    close(fds[1]);
    w->pid = pid;
    w->out = fds[0];
    w->instance[0] = '\0';
    char line[128];
    while (fx_worker_line(w, line, sizeof(line), wait_ms)) {
        if (strncmp(line, "instance ", 9) == 0)
            snprintf(w->instance, sizeof(w->instance), "%s", line + 9);
        if (strcmp(line, "ready") == 0)
            return true;
    }
    return false;
}

bool fx_worker_line(fx_worker *w, char *buf, size_t size, long long wait_ms) {
    long long end = fx_now_ms() + wait_ms;
    size_t n = 0;
    for (;;) {
        long long left = end - fx_now_ms();
        if (left <= 0)
            return false;
        struct pollfd p = {w->out, POLLIN, 0};
        int rc = poll(&p, 1, (int)left);
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc <= 0)
            return false;
        char c;
        ssize_t got = read(w->out, &c, 1); /* a byte at a time: lines are rare */
        if (got <= 0)
            return false;
        if (c == '\n') {
            buf[n] = '\0';
            return true;
        }
        if (n + 1 < size)
            buf[n++] = c;
    }
}

void fx_worker_kill(fx_worker *w) {
    if (w->pid > 0) {
        kill(w->pid, SIGKILL);
        waitpid(w->pid, NULL, 0);
        w->pid = 0;
    }
    if (w->out >= 0)
        close(w->out);
    w->out = -1;
}

int fx_worker_stop(fx_worker *w, long long wait_ms) {
    int status = -1;
    if (w->pid > 0) {
        kill(w->pid, SIGTERM);
        long long end = fx_now_ms() + wait_ms;
        int ws;
        while (fx_now_ms() < end) {
            if (waitpid(w->pid, &ws, WNOHANG) == w->pid) {
                status = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
                w->pid = 0;
                break;
            }
            fx_sleep_ms(10);
        }
        if (w->pid > 0)
            fx_worker_kill(w);
    }
    if (w->out >= 0)
        close(w->out);
    w->out = -1;
    return status;
}

/* ---- tallies --------------------------------------------------------------------------------- */

void fx_tally_init(fx_tally *t, size_t n) {
    t->n = n;
    t->count = calloc(n ? n : 1, sizeof(*t->count));
    if (!t->count)
        exit(2);
}

void fx_tally_file(fx_tally *t, const char *path, char prefix) {
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char line[256];
    while (fgets(line, sizeof(line), f)) {
        char *end;
        if (line[0] != prefix)
            continue;
        unsigned long i = strtoul(line + 1, &end, 10);
        if (end != line + 1 && i < t->n)
            t->count[i]++;
    }
    fclose(f);
}

size_t fx_tally_missing(const fx_tally *t) {
    size_t m = 0;
    for (size_t i = 0; i < t->n; i++)
        m += t->count[i] == 0;
    return m;
}

size_t fx_tally_extra(const fx_tally *t) {
    size_t m = 0;
    for (size_t i = 0; i < t->n; i++)
        m += t->count[i] > 1 ? t->count[i] - 1 : 0;
    return m;
}

size_t fx_tally_seen(const fx_tally *t) { return t->n - fx_tally_missing(t); }

void fx_tally_free(fx_tally *t) {
    free(t->count);
    t->count = NULL;
}

/* ---- settings ----------------------------------------------------------------------------------
 */

void fx_log(eddy_log_level level, const char *msg, void *user) {
    if (level < EDDY_LOG_WARN)
        return;
    long n = atomic_fetch_add(&fx_log_lines, 1);
    if (n < 20)
        fprintf(stderr, "[%s] %s\n", user ? (const char *)user : "eddy", msg);
}

void fx_settings(eddy_settings *s, const char *url, const char *ns) {
    eddy_settings_init(s);
    s->url = url;
    s->ns = ns;
    s->source = "/faults";
    s->block_ms = 200;
    s->redelivery_idle_ms = 1000;
    s->redelivery_backoff_ms = 100;
    s->connect_timeout_ms = 1000;
    s->reconnect_min_ms = 20;
    s->reconnect_max_ms = 200;
    s->workers = 4;
    s->max_deliveries = 1000; /* a fault is no reason to dead-letter anything */
    s->log = fx_log;
}

void fx_competing(eddy_subscription_spec *sp, const char *name, const char *pattern,
                  const char *group, eddy_delivery_mode delivery) {
    eddy_subscription_spec_init(sp);
    sp->name = name;
    sp->pattern = pattern;
    sp->shape = EDDY_COMPETING;
    sp->group = group;
    sp->delivery = delivery;
}

/* ---- acknowledged publishes ------------------------------------------------------------------ */

void fx_acks_init(fx_acks *a, size_t n, char prefix) {
    a->n = n;
    a->prefix = prefix;
    a->acked = calloc(n ? n : 1, 1);
    a->seen = calloc(n ? n : 1, sizeof(*a->seen));
    if (!a->acked || !a->seen)
        exit(2);
}

void fx_acks_free(fx_acks *a) {
    free(a->acked);
    free((void *)a->seen);
}

void fx_acks_consumed(fx_acks *a, const char *event_id) {
    char *end;
    unsigned long i = event_id && event_id[0] == a->prefix ? strtoul(event_id + 1, &end, 10) : 0;
    if (event_id && event_id[0] == a->prefix && end != event_id + 1 && i < a->n)
        atomic_fetch_add(&a->seen[i], 1);
}

void fx_acks_settle(const fx_acks *a, const fx_redis *r, const char *ns, const char *subject,
                    const char *group, long long wait_ms, fx_acks_outcome *out) {
    long long deadline = fx_now_ms() + wait_ms;
    for (;;) {
        memset(out, 0, sizeof(*out));
        for (size_t i = 0; i < a->n; i++) {
            unsigned n = atomic_load(&a->seen[i]);
            out->acked += a->acked[i];
            out->lost += a->acked[i] && n == 0;
            out->dup += n > 1 ? n - 1 : 0;
            out->failed_but_stored += !a->acked[i] && n > 0;
        }
        out->pending = fx_pending(r, ns, subject, group);
        if ((out->lost == 0 && out->pending == 0) || fx_now_ms() > deadline)
            return;
        fx_sleep_ms(100);
    }
}
