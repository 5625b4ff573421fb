/* SPDX-License-Identifier: BSD-3-Clause */
/* The fault suite's shared helpers: a private redis-server per scenario (started, killed,
 * restarted on its port, stopped and continued), worker processes (fork/exec of fault_worker,
 * which says "ready" on a pipe), raw Redis commands for the checks, the files workers record
 * into, and the FIG lines. No Criterion: the suite is a plain program whose exit status is the
 * verdict, since its workers are killed and its servers stopped on purpose. */
#ifndef EDDY_FAULTS_H
#define EDDY_FAULTS_H

#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "eddy/bus.h"

/* ---- time -------------------------------------------------------------------------------- */

long long fx_now_ms(void); /* monotonic */
void fx_sleep_ms(long long ms);

/* ---- verdict ----------------------------------------------------------------------------- */

/* Records a failed check of the running scenario (printed at once); fx_failures counts them. */
void fx_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define FX_CHECK(cond, ...)                                                                        \
    do {                                                                                           \
        if (!(cond))                                                                               \
            fx_fail(__VA_ARGS__);                                                                  \
    } while (0)
extern int fx_failures;

/* ---- redis-server -------------------------------------------------------------------------- */

typedef struct fx_redis {
    pid_t pid;
    int port;
    char url[64];
    char dir[160];
    const char *extra[16]; /* extra redis-server arguments, NULL-terminated */
    const char *password;  /* fx_cmd authenticates with it when set */
} fx_redis;

/* A free TCP port on 127.0.0.1 (bound and released). */
int fx_free_port(void);
/* Starts redis-server on a free loopback port with its data in a fresh directory; extra
 * arguments (NULL-terminated, may be NULL) are kept for restarts. Exits the suite on failure. */
void fx_redis_start(fx_redis *r, const char *const *extra);
/* SIGKILL and reap. */
void fx_redis_kill(fx_redis *r);
/* Starts it again on the same port and directory (an append-only file is reloaded). */
void fx_redis_restart(fx_redis *r);
/* Kills it and removes its directory. */
void fx_redis_stop(fx_redis *r);

/* A command on a fresh connection; NULL when the server cannot be reached. */
redisReply *fx_cmd(const fx_redis *r, const char *fmt, ...);
/* The reply's integer, or -1. */
long long fx_int(const fx_redis *r, const char *fmt, ...);
/* The pending count of a group on a subject ({ns}:s:<subject>), -1 on error. */
long long fx_pending(const fx_redis *r, const char *ns, const char *subject, const char *group);

/* ---- worker processes ---------------------------------------------------------------------- */

typedef struct fx_worker {
    pid_t pid;
    int out;            /* the worker's stdout (read end) */
    char instance[128]; /* its bus's consumer name, when it said ("instance <name>") */
} fx_worker;

/* fork/exec fault_worker (next to this program) with argv (NULL-terminated, without the program
 * name) and waits up to wait_ms for it to print "ready". False when it did not. */
bool fx_worker_start(fx_worker *w, const char *const *argv, long long wait_ms);
/* Reads one line of the worker's stdout within wait_ms; false on timeout or end of file. */
bool fx_worker_line(fx_worker *w, char *buf, size_t size, long long wait_ms);
/* SIGKILL and reap. */
void fx_worker_kill(fx_worker *w);
/* Entries of a group on a subject pending for one consumer, -1 on error. */
long long fx_pending_of(const fx_redis *r, const char *ns, const char *subject, const char *group,
                        const char *consumer);
/* SIGTERM (a clean stop), then waits up to wait_ms for its exit; its exit status, -1 if killed. */
int fx_worker_stop(fx_worker *w, long long wait_ms);

/* ---- records of ids ------------------------------------------------------------------------ */

/* How often each of the ids 0..n-1 was recorded: lines "<prefix><i>" in the given files. */
typedef struct fx_tally {
    size_t n;
    unsigned *count;
} fx_tally;

void fx_tally_init(fx_tally *t, size_t n);
/* Adds the records of a file; lines not of the form are ignored. */
void fx_tally_file(fx_tally *t, const char *path, char prefix);
size_t fx_tally_missing(const fx_tally *t); /* ids never recorded */
size_t fx_tally_extra(const fx_tally *t);   /* records beyond the first of each id */
size_t fx_tally_seen(const fx_tally *t);    /* ids recorded at least once */
void fx_tally_free(fx_tally *t);

/* ---- acknowledged publishes and what was consumed of them ------------------------------------ */

/* Publish i (event id "<prefix><i>") acknowledged (set by the publisher) and consumed how often
 * (counted by the handler, fx_acks_consumed, from any thread). */
typedef struct fx_acks {
    size_t n;
    char prefix;
    unsigned char *acked;
    _Atomic unsigned *seen;
} fx_acks;

typedef struct fx_acks_outcome {
    size_t acked;             /* publishes acknowledged */
    size_t lost;              /* acknowledged, never consumed */
    size_t dup;               /* consumptions beyond the first */
    size_t failed_but_stored; /* not acknowledged, consumed all the same */
    long long pending;        /* the group's pending count */
} fx_acks_outcome;

void fx_acks_init(fx_acks *a, size_t n, char prefix);
void fx_acks_free(fx_acks *a);
/* A handler's record of a delivered event id; ids of another form are ignored. */
void fx_acks_consumed(fx_acks *a, const char *event_id);
/* Waits up to wait_ms until every acknowledged publish was consumed and nothing is pending in
 * the group, then says how it stands. */
void fx_acks_settle(const fx_acks *a, const fx_redis *r, const char *ns, const char *subject,
                    const char *group, long long wait_ms, fx_acks_outcome *out);

/* ---- settings and the scenarios' environment ----------------------------------------------- */

/* Settings for a scenario's bus: short reads, a short redelivery, quick reconnects. */
void fx_settings(eddy_settings *s, const char *url, const char *ns);
/* A Competing subscription named `name` on pattern, in group, with the given delivery. */
void fx_competing(eddy_subscription_spec *sp, const char *name, const char *pattern,
                  const char *group, eddy_delivery_mode delivery);
/* A log hook that writes eddy's warnings and errors to stderr with `user` (a name) in front, at
 * most 20 lines per process (a fault makes many), and counts them all. */
void fx_log(eddy_log_level level, const char *msg, void *user);
extern _Atomic long fx_log_lines;

/* A directory for a scenario's files: /tmp/eddy-faults-<pid>/<name>. */
void fx_scratch(char *buf, size_t size, const char *name);

/* The long profile (EDDY_FAULTS_PROFILE=long): bigger counts, more kills. */
bool fx_long_profile(void);

#endif
