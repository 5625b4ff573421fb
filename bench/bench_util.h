/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared pieces of the benchmarks, so that every bench measures the same way:
 * - the command line: [redis://127.0.0.1:PORT] [--pin] [--reps R] [-n N] (and the bench's own
 *   options); without a URL a private redis-server is started on a free 127.0.0.1 port;
 * - the header every bench prints first: `placement ...` and `machine cpus=.. redis=.. reps=..`;
 * - repetitions: every side runs R times (default 5), the first side to run rotating from one
 *   repetition to the next, and each figure is the median over the repetitions; a ratio is the
 *   median of the per-repetition ratios (each pairs the two sides' runs of one repetition, made
 *   back to back), printed with their min and max;
 * - the events both sides write (eddy's exact fields and bytes: bench_event, bench_xadd_argv);
 * - the raw consume at its best (XREADGROUP COUNT 256, one XACK per batch, pipelined);
 * - server command counts (INFO commandstats) and process usage (getrusage);
 * - result lines: `bench <name> eddy=<x> hiredis=<y> ratio=<x/y> min=<r> max=<r> reps=<R>`. */
#ifndef EDDY_BENCH_UTIL_H
#define EDDY_BENCH_UTIL_H

#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <sys/types.h>

#include "eddy/bus.h"
#include "eddy/reactive.h"

/* The batch both sides publish and read: eddy's read_batch is set to it. */
#define BENCH_BATCH 256
/* The data of every bench event: 120 bytes of 'p'. */
#define BENCH_DATA_LEN 120
#define BENCH_SOURCE "/bench"
#define BENCH_TYPE "bench.order.placed.v1"

typedef struct bench_env {
    char url[128];
    int port;
    pid_t server; /* 0: an external server */
    bool pinned;
    int reps;
    long n;         /* -n N, or the bench's default */
    char tag[48];   /* unique to this run: in every key and namespace the bench makes */
    bool keep_keys; /* bench_sides leaves the keys between repetitions (shared read-only data) */
    int argc;
    char **argv;
    const char *only; /* --only NAME: run only that measurement (for a profile) */
} bench_env;

/* Repetitions when --reps is not given (5; a long bench may set it lower before bench_setup). */
extern int bench_default_reps;
/* Parses the command line (exits with usage on an unknown option; `extra` lists the bench's own
 * options that take a value, NULL-terminated), pins when asked, starts the private server when
 * no URL is given, and prints the header. */
void bench_setup(bench_env *env, int argc, char **argv, long default_n, const char *const *extra,
                 const char *usage);
/* Whether the measurement `name` runs: every one, unless --only names another. */
bool bench_wanted(const bench_env *env, const char *name);
/* A bench option's value (one of `extra`), or def when it was not given. */
long bench_opt(const bench_env *env, const char *name, long def);
/* Deletes this run's keys, stops the private server. */
void bench_teardown(bench_env *env);

double bench_now(void);
void bench_die(const char *what, const char *detail);
/* A free 127.0.0.1 TCP port (0 when none could be had). */
int bench_free_port(void);
/* Connects to the bench's server; exits on failure. */
redisContext *bench_connect(const bench_env *env);
/* A namespace (or key prefix) for one side in one repetition: "<tag>-<side>-<rep>". */
void bench_ns(const bench_env *env, char *out, size_t size, const char *side, int rep);
/* UNLINKs every key containing this run's tag (both sides' keys of the repetitions so far). */
void bench_delete_keys(const bench_env *env);

/* Default settings on the bench's server with namespace ns and read_batch BENCH_BATCH (so eddy
 * reads as many entries per round trip as the raw side). ns is borrowed. */
void bench_settings(const bench_env *env, eddy_settings *s, const char *ns);
/* A competing AtLeastOnce subscription "count" of group "bench" on subject "orders". */
void bench_consume_spec(eddy_subscription_spec *sp, eddy_handler_fn handler);

/* ---- repetitions ---------------------------------------------------------------------- */

/* One side's run: fills out[0..nout) with its figures for repetition rep. */
typedef void (*bench_side_fn)(const bench_env *env, int rep, double *out, void *user);
typedef struct bench_side {
    const char *name;
    bench_side_fn run;
    void *user;
} bench_side;
/* Runs each side env->reps times; in repetition r the sides run in the order r, r+1, ... (mod
 * nsides), so with two sides the first runs first in repetitions 1, 3, ... and second in 2, 4.
 * Deletes the run's keys after each repetition unless env->keep_keys. medians[s * nout + k] is the
 * median of side s's figure k. Prints each repetition's figures as a `#` line. */
void bench_sides(const bench_env *env, const bench_side *sides, int nsides, int nout,
                 double *medians);
double bench_median(double *v, int n);

/* ---- result lines --------------------------------------------------------------------- */

/* `bench <name> eddy=<x> hiredis=<y> ratio=<x/y>` (a rate, or with a name ending in _us a
 * latency; either way the ratio is eddy over hiredis). */
void bench_print(const char *name, double eddy, double hiredis);
/* `bench <name> eddy=<x> hiredis=<y> ratio=<r> min=<r> max=<r> reps=<R>` for two figures of the
 * last bench_sides call, named by their index in its medians array: x and y are their medians,
 * r the median, min and max of the per-repetition ratios eddy/hiredis. */
void bench_print_med(const char *name, int eddy_index, int raw_index);
/* The same line for n paired runs of the two sides (eddy[r] and hiredis[r] made back to back). */
void bench_print_runs(const char *name, const double *eddy, const double *hiredis, int n);
/* `bench <name> eddy=<x>`: no hiredis counterpart. */
void bench_print1(const char *name, double eddy);
/* `bench <name> eddy=<x> min=<m> max=<M> reps=<R>`: figure `index` of the last bench_sides call,
 * its median and its range over the repetitions (no counterpart). */
void bench_print1_med(const char *name, int index);

/* ---- the events ----------------------------------------------------------------------- */

/* Event i as the benches publish it: id "ev-<i>", source /bench, type bench.order.placed.v1,
 * 120 bytes of data. Exits on OOM. */
eddy_event *bench_event(long i);
/* n events 0..n-1 (bench_events_free releases them). */
eddy_event **bench_events(long n);
void bench_events_free(eddy_event **evs, long n);
/* The raw XADD of event i, with exactly the fields and bytes eddy writes for bench_event(i):
 * XADD key * specversion 1.0 id ev-<i> source /bench type bench.order.placed.v1 data <120 p>.
 * id must have room for 24 bytes and live until the command is appended. Returns argc (13). */
#define BENCH_XADD_ARGC 13
int bench_xadd_argv(const char *key, long i, char *id, const char **argv, size_t *lens);
/* Publishes n bench events to subject on the bus of settings, BENCH_BATCH per
 * eddy_bus_publish_batch (untimed setup: the entries both consume sides read). */
void bench_fill(const eddy_settings *settings, const char *subject, long n);

/* The raw side's entries: n bench events published by eddy (untimed) to subject "orders" of
 * namespace ns, and a group "raw" at 0 on its stream, whose key is written to key. */
void bench_fill_for_raw(const bench_env *env, const char *ns, long n, char *key, size_t size);

/* The raw consume at its best: XREADGROUP GROUP <group> c COUNT 256 on key until n entries were
 * read, each batch's XACK pipelined with the next read (the group must exist). Returns the
 * seconds it took. */
double bench_raw_consume(const bench_env *env, const char *key, const char *group, long n);

/* A reactive bus on loop, started, once it is ready (the loop run until then). Exits on failure. */
eddy_rbus *bench_rbus_started(struct ev_loop *loop, const eddy_settings *s,
                              const eddy_subscription_spec *specs, size_t n);

/* ---- server command counts and process usage ------------------------------------------ */

#define BENCH_MAX_CMDS 128
typedef struct bench_cmdstats {
    int n;
    char name[BENCH_MAX_CMDS][48];
    long long calls[BENCH_MAX_CMDS];
} bench_cmdstats;
/* INFO commandstats on c (one INFO call, counted by the server in later readings). */
void bench_cmdstats_read(redisContext *c, bench_cmdstats *out);
/* Every command counted between two readings, less the `info` calls own_info made. */
long long bench_cmdstats_total(const bench_cmdstats *before, const bench_cmdstats *after,
                               long long own_info);
/* `# <label> commands per <unit>: xadd=1.00 ...` (INFO excluded). */
void bench_cmdstats_print(const char *label, const char *unit, const bench_cmdstats *before,
                          const bench_cmdstats *after, double per);

/* The server's counts around a side's first repetition (nothing is read in later ones). */
typedef struct bench_counting {
    redisContext *c;
    bench_cmdstats before;
} bench_counting;
void bench_counting_start(const bench_env *env, int rep, bench_counting *k);
/* Prints the `# <label> commands per <unit>` line (first repetition only). */
void bench_counting_end(bench_counting *k, const char *label, const char *unit, double per);

typedef struct bench_usage {
    double cpu_us; /* user + system, every thread of the process */
    double ctxsw;  /* voluntary + involuntary context switches, every thread */
} bench_usage;
bench_usage bench_usage_now(void);
/* The same for the calling thread only. */
bench_usage bench_usage_thread(void);

/* A field of /proc/self/status in its unit ("VmRSS:", "VmHWM:", "Threads:"). */
long bench_status_field(const char *field);
/* The resident set in KiB, from /proc/self/statm. */
long bench_rss_kib(void);

#endif
