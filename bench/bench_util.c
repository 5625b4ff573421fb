/* SPDX-License-Identifier: BSD-3-Clause */
/* See bench_util.h. The private redis-server is started here (fork + exec), pinned to the second
 * CPU when --pin is given, the bench process itself to the first, before any thread exists so
 * that every thread the libraries start inherits the placement. */
#define _GNU_SOURCE /* sched_setaffinity, CPU_SET */
#include "bench_util.h"

#include <ev.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "eddy/blocking.h"

double bench_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void bench_die(const char *what, const char *detail) {
    fprintf(stderr, "bench: %s: %s\n", what, detail ? detail : "failed");
    exit(1);
}

/* ---- the command line, the server, the placement ---------------------------------------- */

int bench_free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        if (fd >= 0)
            close(fd);
        return 0;
    }
    socklen_t len = sizeof(a);
    getsockname(fd, (struct sockaddr *)&a, &len);
    close(fd);
    return ntohs(a.sin_port);
}

/* The first two CPUs this process may run on (the second is the first when there is one). */
static void two_cpus(int *client, int *server) {
    cpu_set_t set;
    *client = *server = -1;
    if (sched_getaffinity(0, sizeof(set), &set) != 0)
        return;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set)) {
            if (*client < 0)
                *client = c;
            else if (*server < 0)
                *server = c;
        }
    if (*server < 0)
        *server = *client;
}

static void pin_to(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof(set), &set) != 0)
        bench_die("sched_setaffinity", "cannot pin");
}

static pid_t start_redis(bench_env *env, int server_cpu) {
    env->port = bench_free_port();
    if (!env->port)
        return 0;
    pid_t pid = fork();
    if (pid == 0) {
        if (server_cpu >= 0)
            pin_to(server_cpu);
        char p[16];
        snprintf(p, sizeof(p), "%d", env->port);
        execlp("redis-server", "redis-server", "--bind", "127.0.0.1", "--port", p, "--dir", "/tmp",
               "--save", "", "--appendonly", "no", "--loglevel", "warning", "--logfile",
               "/dev/null", (char *)NULL);
        _exit(127);
    }
    for (int i = 0; pid > 0 && i < 200; i++) {
        redisContext *c = redisConnect("127.0.0.1", env->port);
        bool up = c && !c->err;
        if (c)
            redisFree(c);
        if (up) {
            snprintf(env->url, sizeof(env->url), "redis://127.0.0.1:%d", env->port);
            return pid;
        }
        struct timespec pause = {0, 25000000};
        nanosleep(&pause, NULL);
    }
    if (pid > 0) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    return 0;
}

static void usage_exit(const char *prog, const char *usage) {
    fprintf(stderr,
            "usage: %s [redis://127.0.0.1:PORT] [--pin] [--reps R] [-n N] [--only NAME]%s%s\n"
            "  without a URL a private redis-server is started on a free 127.0.0.1 port;\n"
            "  --pin puts this process on one CPU and that server on another\n",
            prog, usage ? " " : "", usage ? usage : "");
    exit(2);
}

static bool is_extra(const char *arg, const char *const *extra) {
    for (size_t i = 0; extra && extra[i]; i++)
        if (strcmp(arg, extra[i]) == 0)
            return true;
    return false;
}

static void redis_version(const bench_env *env, char *out, size_t size) {
    snprintf(out, size, "unknown");
    redisContext *c = bench_connect(env);
    redisReply *r = redisCommand(c, "INFO server");
    const char *v = r && r->type == REDIS_REPLY_STRING ? strstr(r->str, "redis_version:") : NULL;
    if (v)
        sscanf(v + strlen("redis_version:"), "%31[^\r\n]", out);
    freeReplyObject(r);
    redisFree(c);
}

int bench_default_reps = 5;

void bench_setup(bench_env *env, int argc, char **argv, long default_n, const char *const *extra,
                 const char *usage) {
    memset(env, 0, sizeof(*env));
    env->reps = bench_default_reps;
    env->n = default_n;
    env->argc = argc;
    env->argv = argv;
    const char *url = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "redis://", 8) == 0)
            url = a;
        else if (strcmp(a, "--pin") == 0)
            env->pinned = true;
        else if (strcmp(a, "--reps") == 0 && i + 1 < argc)
            env->reps = atoi(argv[++i]);
        else if (strcmp(a, "-n") == 0 && i + 1 < argc)
            env->n = atol(argv[++i]);
        else if (strcmp(a, "--only") == 0 && i + 1 < argc)
            env->only = argv[++i];
        else if (is_extra(a, extra) && i + 1 < argc)
            i++;
        else
            usage_exit(argv[0], usage);
    }
    if (env->reps < 1 || env->n < 1)
        usage_exit(argv[0], usage);
    int client_cpu = -1, server_cpu = -1;
    if (env->pinned) {
        two_cpus(&client_cpu, &server_cpu);
        if (client_cpu < 0)
            bench_die("--pin", "no CPU to pin to");
        pin_to(client_cpu);
    }
    if (url) {
        snprintf(env->url, sizeof(env->url), "%s", url);
        if (sscanf(url, "redis://127.0.0.1:%d", &env->port) != 1)
            usage_exit(argv[0], usage);
    } else if (!(env->server = start_redis(env, server_cpu))) {
        bench_die("redis-server", "could not start it");
    }
    snprintf(env->tag, sizeof(env->tag), "bench%ld-%ld", (long)time(NULL), (long)getpid());

    if (!env->pinned)
        printf("placement unpinned\n");
    else if (env->server)
        printf("placement client=cpu%d server=cpu%d\n", client_cpu, server_cpu);
    else
        printf("placement client=cpu%d server=external\n", client_cpu);
    char version[32];
    redis_version(env, version, sizeof(version));
    printf("machine cpus=%ld redis=%s reps=%d n=%ld\n", sysconf(_SC_NPROCESSORS_ONLN), version,
           env->reps, env->n);
    fflush(stdout);
}

bool bench_wanted(const bench_env *env, const char *name) {
    return !env->only || strcmp(env->only, name) == 0;
}

long bench_opt(const bench_env *env, const char *name, long def) {
    for (int i = 1; i + 1 < env->argc; i++)
        if (strcmp(env->argv[i], name) == 0)
            return atol(env->argv[i + 1]);
    return def;
}

void bench_teardown(bench_env *env) {
    bench_delete_keys(env);
    if (env->server > 0) {
        kill(env->server, SIGTERM);
        waitpid(env->server, NULL, 0);
        env->server = 0;
    }
}

redisContext *bench_connect(const bench_env *env) {
    redisContext *c = redisConnect("127.0.0.1", env->port);
    if (!c || c->err)
        bench_die("connect", c ? c->errstr : "out of memory");
    return c;
}

void bench_ns(const bench_env *env, char *out, size_t size, const char *side, int rep) {
    snprintf(out, size, "%s-%s-%d", env->tag, side, rep);
}

void bench_delete_keys(const bench_env *env) {
    redisContext *c = bench_connect(env);
    char cursor[32] = "0", match[80];
    snprintf(match, sizeof(match), "*%s*", env->tag);
    do {
        redisReply *r = redisCommand(c, "SCAN %s MATCH %s COUNT 1000", cursor, match);
        if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2)
            bench_die("SCAN", c->errstr);
        snprintf(cursor, sizeof(cursor), "%s", r->element[0]->str);
        redisReply *keys = r->element[1];
        for (size_t i = 0; i < keys->elements; i++)
            redisAppendCommand(c, "UNLINK %b", keys->element[i]->str, keys->element[i]->len);
        for (size_t i = 0; i < keys->elements; i++) {
            void *u;
            if (redisGetReply(c, &u) != REDIS_OK)
                bench_die("UNLINK", c->errstr);
            freeReplyObject(u);
        }
        freeReplyObject(r);
    } while (strcmp(cursor, "0") != 0);
    redisFree(c);
}

void bench_settings(const bench_env *env, eddy_settings *s, const char *ns) {
    eddy_settings_init(s);
    s->url = env->url;
    s->ns = ns;
    s->read_batch = BENCH_BATCH;
}

void bench_consume_spec(eddy_subscription_spec *sp, eddy_handler_fn handler) {
    eddy_subscription_spec_init(sp);
    sp->name = "count";
    sp->pattern = "orders";
    sp->group = "bench";
    sp->delivery = EDDY_AT_LEAST_ONCE;
    sp->handler = handler;
}

/* ---- repetitions ---------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_median(double *v, int n) {
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void print_value(double v) {
    if (v >= 1000 || v <= -1000)
        printf("%.0f", v);
    else
        printf("%.4g", v);
}

/* The per-repetition figures of the last bench_sides call, for bench_print_med's ratios. */
static struct {
    double *all; /* all[(s * reps + r) * nout + k] */
    int reps, nsides, nout;
} last;

void bench_sides(const bench_env *env, const bench_side *sides, int nsides, int nout,
                 double *medians) {
    double *all = calloc((size_t)(env->reps * nsides * nout), sizeof(*all));
    if (!all)
        bench_die("repetitions", "out of memory");
    for (int r = 0; r < env->reps; r++) {
        for (int k = 0; k < nsides; k++) {
            int s = (r + k) % nsides;
            double *out = all + ((size_t)s * env->reps + r) * nout;
            sides[s].run(env, r, out, sides[s].user);
            printf("# rep %d %s:", r + 1, sides[s].name);
            for (int j = 0; j < nout; j++) {
                printf(" ");
                print_value(out[j]);
            }
            printf("\n");
            fflush(stdout);
        }
        if (!env->keep_keys)
            bench_delete_keys(env);
    }
    double *column = malloc((size_t)env->reps * sizeof(*column));
    if (!column)
        bench_die("repetitions", "out of memory");
    for (int s = 0; s < nsides; s++)
        for (int j = 0; j < nout; j++) {
            for (int r = 0; r < env->reps; r++)
                column[r] = all[((size_t)s * env->reps + r) * nout + j];
            medians[s * nout + j] = bench_median(column, env->reps);
        }
    free(column);
    free(last.all);
    last.all = all;
    last.reps = env->reps;
    last.nsides = nsides;
    last.nout = nout;
}

/* ---- result lines --------------------------------------------------------------------- */

void bench_print(const char *name, double eddy, double hiredis) {
    printf("bench %s eddy=", name);
    print_value(eddy);
    printf(" hiredis=");
    print_value(hiredis);
    printf(" ratio=%.3f\n", hiredis != 0 ? eddy / hiredis : 0.0);
    fflush(stdout);
}

static double last_figure(int index, int r) {
    int s = index / last.nout, k = index % last.nout;
    return last.all[((size_t)s * last.reps + r) * last.nout + k];
}

void bench_print_runs(const char *name, const double *eddy, const double *hiredis, int n) {
    double *e = malloc((size_t)n * sizeof(*e) * 3);
    if (!e)
        bench_die("bench_print_runs", "out of memory");
    double *h = e + n, *ratio = h + n;
    int nr = 0;
    for (int r = 0; r < n; r++) {
        e[r] = eddy[r];
        h[r] = hiredis[r];
        if (h[r] != 0)
            ratio[nr++] = e[r] / h[r];
    }
    printf("bench %s eddy=", name);
    print_value(bench_median(e, n));
    printf(" hiredis=");
    print_value(bench_median(h, n));
    if (nr > 0) {
        double med = bench_median(ratio, nr); /* sorts ratio */
        printf(" ratio=%.3f min=%.3f max=%.3f reps=%d\n", med, ratio[0], ratio[nr - 1], nr);
    } else {
        printf(" ratio=0 reps=0\n");
    }
    fflush(stdout);
    free(e);
}

void bench_print_med(const char *name, int eddy_index, int raw_index) {
    int n = last.nsides * last.nout;
    if (!last.all || eddy_index < 0 || raw_index < 0 || eddy_index >= n || raw_index >= n)
        bench_die("bench_print_med", "no such figure of the last bench_sides");
    double *v = malloc((size_t)last.reps * 2 * sizeof(*v));
    if (!v)
        bench_die("bench_print_med", "out of memory");
    for (int r = 0; r < last.reps; r++) {
        v[r] = last_figure(eddy_index, r);
        v[last.reps + r] = last_figure(raw_index, r);
    }
    bench_print_runs(name, v, v + last.reps, last.reps);
    free(v);
}

void bench_print1(const char *name, double eddy) {
    printf("bench %s eddy=", name);
    print_value(eddy);
    printf("\n");
    fflush(stdout);
}

void bench_print1_med(const char *name, int index) {
    if (!last.all || index < 0 || index >= last.nsides * last.nout)
        bench_die("bench_print1_med", "no such figure of the last bench_sides");
    double *v = malloc((size_t)last.reps * sizeof(*v));
    if (!v)
        bench_die("bench_print1_med", "out of memory");
    double lo = 0, hi = 0;
    for (int r = 0; r < last.reps; r++) {
        v[r] = last_figure(index, r);
        lo = r == 0 || v[r] < lo ? v[r] : lo;
        hi = r == 0 || v[r] > hi ? v[r] : hi;
    }
    printf("bench %s eddy=", name);
    print_value(bench_median(v, last.reps));
    printf(" min=");
    print_value(lo);
    printf(" max=");
    print_value(hi);
    printf(" reps=%d\n", last.reps);
    fflush(stdout);
    free(v);
}

/* ---- the events ----------------------------------------------------------------------- */

/* 120 bytes of 'p', made once (the benches are single-threaded until they build a bus). */
static const char *bench_data(void) {
    static char data[BENCH_DATA_LEN];
    if (!data[0])
        memset(data, 'p', sizeof(data));
    return data;
}

eddy_event *bench_event(long i) {
    eddy_event *ev = eddy_event_new();
    char id[24];
    snprintf(id, sizeof(id), "ev-%ld", i);
    if (!ev || eddy_event_set_id(ev, id) != EDDY_OK ||
        eddy_event_set_source(ev, BENCH_SOURCE) != EDDY_OK ||
        eddy_event_set_type(ev, BENCH_TYPE) != EDDY_OK ||
        eddy_event_set_data(ev, bench_data(), BENCH_DATA_LEN) != EDDY_OK)
        bench_die("event", "out of memory");
    return ev;
}

eddy_event **bench_events(long n) {
    eddy_event **evs = calloc((size_t)n, sizeof(*evs));
    if (!evs)
        bench_die("events", "out of memory");
    for (long i = 0; i < n; i++)
        evs[i] = bench_event(i);
    return evs;
}

void bench_events_free(eddy_event **evs, long n) {
    for (long i = 0; i < n; i++)
        eddy_event_free(evs[i]);
    free(evs);
}

int bench_xadd_argv(const char *key, long i, char *id, const char **argv, size_t *lens) {
    int idlen = snprintf(id, 24, "ev-%ld", i);
    const char *args[BENCH_XADD_ARGC - 1] = {"XADD",       key,    "*",        "specversion",
                                             "1.0",        "id",   id,         "source",
                                             BENCH_SOURCE, "type", BENCH_TYPE, "data"};
    for (int k = 0; k < BENCH_XADD_ARGC - 1; k++) {
        argv[k] = args[k];
        lens[k] = strlen(args[k]);
    }
    lens[6] = (size_t)idlen;
    argv[12] = bench_data();
    lens[12] = BENCH_DATA_LEN;
    return BENCH_XADD_ARGC;
}

void bench_fill(const eddy_settings *settings, const char *subject, long n) {
    eddy_bus *bus;
    eddy_error err;
    if (eddy_bus_new(settings, NULL, 0, &bus, &err) != EDDY_OK)
        bench_die("fill bus", err.detail);
    eddy_event *evs[BENCH_BATCH];
    for (long i = 0; i < n; i += BENCH_BATCH) {
        size_t k = n - i < BENCH_BATCH ? (size_t)(n - i) : BENCH_BATCH;
        for (size_t j = 0; j < k; j++)
            evs[j] = bench_event(i + (long)j);
        if (eddy_bus_publish_batch(bus, subject, (const eddy_event *const *)evs, k, NULL, &err) !=
            EDDY_OK)
            bench_die("fill", err.detail);
        for (size_t j = 0; j < k; j++)
            eddy_event_free(evs[j]);
    }
    eddy_bus_free(bus);
}

void bench_fill_for_raw(const bench_env *env, const char *ns, long n, char *key, size_t size) {
    eddy_settings s;
    bench_settings(env, &s, ns);
    bench_fill(&s, "orders", n);
    snprintf(key, size, "{%s}:s:orders", ns);
    redisContext *c = bench_connect(env);
    redisReply *r = redisCommand(c, "XGROUP CREATE %s raw 0", key);
    if (!r || r->type == REDIS_REPLY_ERROR)
        bench_die("XGROUP CREATE", r ? r->str : c->errstr);
    freeReplyObject(r);
    redisFree(c);
}

static void on_ready(eddy_status st, const eddy_error *err, void *loop) {
    if (st != EDDY_OK)
        bench_die("eddy_rbus_start", err ? err->detail : eddy_status_name(st));
    ev_break(loop, EVBREAK_ALL);
}

eddy_rbus *bench_rbus_started(struct ev_loop *loop, const eddy_settings *s,
                              const eddy_subscription_spec *specs, size_t n) {
    eddy_rbus *bus;
    eddy_error err;
    if (!loop || eddy_rbus_new(loop, s, specs, n, &bus, &err) != EDDY_OK ||
        eddy_rbus_start(bus, on_ready, loop, &err) != EDDY_OK)
        bench_die("reactive bus", loop ? err.detail : "no loop");
    ev_run(loop, 0);
    return bus;
}

double bench_raw_consume(const bench_env *env, const char *key, const char *group, long n) {
    redisContext *c = bench_connect(env);
    const char *read_argv[] = {"XREADGROUP", "GROUP",   group, "c1", "COUNT",
                               "256",        "STREAMS", key,   ">"};
    size_t read_lens[9];
    for (int i = 0; i < 9; i++)
        read_lens[i] = strlen(read_argv[i]);
    const char *ack_argv[3 + BENCH_BATCH] = {"XACK", key, group};
    size_t ack_lens[3 + BENCH_BATCH] = {4, strlen(key), strlen(group)};
    long got = 0;
    double t0 = bench_now();
    redisAppendCommandArgv(c, 9, read_argv, read_lens);
    redisReply *ack = NULL;
    while (got < n) {
        redisReply *r;
        if (ack)
            freeReplyObject(ack), ack = NULL;
        if (redisGetReply(c, (void **)&r) != REDIS_OK || r->type != REDIS_REPLY_ARRAY)
            bench_die("raw XREADGROUP", c->err ? c->errstr : "no entries");
        redisReply *entries = r->element[0]->element[1];
        for (size_t i = 0; i < entries->elements; i++) {
            ack_argv[3 + i] = entries->element[i]->element[0]->str;
            ack_lens[3 + i] = entries->element[i]->element[0]->len;
        }
        got += (long)entries->elements;
        redisAppendCommandArgv(c, 3 + (int)entries->elements, ack_argv, ack_lens);
        if (got < n)
            redisAppendCommandArgv(c, 9, read_argv, read_lens);
        freeReplyObject(r);
        if (redisGetReply(c, (void **)&ack) != REDIS_OK || ack->type != REDIS_REPLY_INTEGER)
            bench_die("raw XACK", c->errstr);
    }
    double seconds = bench_now() - t0;
    freeReplyObject(ack);
    redisFree(c);
    return seconds;
}

/* ---- server command counts and process usage ------------------------------------------ */

void bench_cmdstats_read(redisContext *c, bench_cmdstats *out) {
    redisReply *r = redisCommand(c, "INFO commandstats");
    if (!r || r->type != REDIS_REPLY_STRING)
        bench_die("INFO commandstats", c->errstr);
    out->n = 0;
    for (const char *line = r->str; line && *line && out->n < BENCH_MAX_CMDS;) {
        long long calls;
        char name[48];
        if (sscanf(line, "cmdstat_%47[^:]:calls=%lld", name, &calls) == 2) {
            snprintf(out->name[out->n], sizeof(out->name[0]), "%s", name);
            out->calls[out->n++] = calls;
        }
        line = strchr(line, '\n');
        if (line)
            line++;
    }
    freeReplyObject(r);
}

static long long calls_of(const bench_cmdstats *s, const char *name) {
    for (int j = 0; j < s->n; j++)
        if (strcmp(s->name[j], name) == 0)
            return s->calls[j];
    return 0;
}

long long bench_cmdstats_total(const bench_cmdstats *before, const bench_cmdstats *after,
                               long long own_info) {
    long long total = 0;
    for (int i = 0; i < after->n; i++)
        total += after->calls[i] - calls_of(before, after->name[i]);
    return total - own_info;
}

void bench_cmdstats_print(const char *label, const char *unit, const bench_cmdstats *before,
                          const bench_cmdstats *after, double per) {
    printf("# %s commands per %s:", label, unit);
    for (int i = 0; i < after->n; i++) {
        long long d = after->calls[i] - calls_of(before, after->name[i]);
        if (d > 0 && strcmp(after->name[i], "info") != 0)
            printf(" %s=%.3g", after->name[i], (double)d / per);
    }
    printf("\n");
    fflush(stdout);
}

void bench_counting_start(const bench_env *env, int rep, bench_counting *k) {
    k->c = NULL;
    if (rep == 0) {
        k->c = bench_connect(env);
        bench_cmdstats_read(k->c, &k->before);
    }
}

void bench_counting_end(bench_counting *k, const char *label, const char *unit, double per) {
    if (!k->c)
        return;
    bench_cmdstats *after = malloc(sizeof(*after));
    if (!after)
        bench_die("cmdstats", "out of memory");
    bench_cmdstats_read(k->c, after);
    bench_cmdstats_print(label, unit, &k->before, after, per);
    free(after);
    redisFree(k->c);
    k->c = NULL;
}

static bench_usage usage_of(int who) {
    struct rusage ru;
    getrusage(who, &ru);
    bench_usage u;
    u.cpu_us = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
               (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
    u.ctxsw = (double)(ru.ru_nvcsw + ru.ru_nivcsw);
    return u;
}

bench_usage bench_usage_now(void) { return usage_of(RUSAGE_SELF); }

bench_usage bench_usage_thread(void) { return usage_of(RUSAGE_THREAD); }

long bench_status_field(const char *field) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    size_t n = strlen(field);
    while (f && fgets(line, sizeof(line), f))
        if (strncmp(line, field, n) == 0) {
            v = strtol(line + n, NULL, 10);
            break;
        }
    if (f)
        fclose(f);
    if (v < 0)
        bench_die("/proc/self/status", field);
    return v;
}

long bench_rss_kib(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    long size = 0, resident = -1;
    if (!f || fscanf(f, "%ld %ld", &size, &resident) != 2)
        bench_die("/proc/self/statm", "unreadable");
    fclose(f);
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}
