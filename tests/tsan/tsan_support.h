/* SPDX-License-Identifier: BSD-3-Clause */
/* Support for the ThreadSanitizer harnesses: failure counting without Criterion (which aborts
 * at start under TSan), a private redis-server, events with numbered ids, and a main that runs
 * one scenario on memory:// and on redis://. A harness passes when it exits 0: no check failed
 * and TSan (halt_on_error=1) reported nothing. */
#ifndef EDDY_TSAN_SUPPORT_H
#define EDDY_TSAN_SUPPORT_H

#include <stdatomic.h>
#include <stdbool.h>

#include "eddy/blocking.h"
#include "eddy/store.h"

extern atomic_int tsan_failures;

/* Prints the failed condition with its place and counts it; the run goes on, so one run shows
 * every failed check. Thread: any. */
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond))                                                                               \
            tsan_fail(__FILE__, __LINE__, #cond, __VA_ARGS__);                                     \
    } while (0)
/* A status that must be EDDY_OK; err may be NULL. */
#define CHECK_OK(st, err, what)                                                                    \
    do {                                                                                           \
        eddy_status st_ = (st);                                                                    \
        if (st_ != EDDY_OK)                                                                        \
            tsan_fail(__FILE__, __LINE__, what, "%s: %s", eddy_status_name(st_),                   \
                      (err) ? ((const eddy_error *)(err))->detail : "");                           \
    } while (0)

void tsan_fail(const char *file, int line, const char *cond, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* One scenario run: the backend's URL and a namespace of its own. */
typedef struct tsan_run {
    const char *url;
    const char *ns;
    const char *backend; /* "memory" or "redis": makes ids unique across the two runs */
} tsan_run;

/* Runs each scenario on memory:// and on a private redis-server, prints what it ran and how
 * long it took, and returns the exit code (0 when no check failed). With EDDY_TSAN_ONLY_MEMORY
 * set in the environment, only on memory://. */
typedef void (*tsan_scenario)(const tsan_run *run);
int tsan_main(const char *prog, const tsan_scenario *scenarios, const char *const *names, int n);

/* Settings for a run with short timings (redelivery, blocking reads, leases). */
void tsan_settings(eddy_settings *s, const tsan_run *run);

/* A valid event with id "<prefix>-<n>", type `type`, a few bytes of data. NULL on OOM (a check
 * fails). Ownership: the caller's. */
eddy_event *tsan_event(const char *prefix, int n, const char *type);
/* The n of an id made by tsan_event, -1 when it has none. */
int tsan_event_number(const char *id);

void tsan_sleep_ms(long ms);
long long tsan_mono_ms(void);

/* A log hook that keeps quiet unless EDDY_TSAN_VERBOSE is set in the environment (then it
 * prints every message to stderr). Thread-safe. */
void tsan_log(eddy_log_level level, const char *msg, void *user);

/* Appends events <prefix>-from .. <prefix>-(to - 1) of type "tsan.stored", one per append, to
 * streams "order-<n % streams>", each also published to subject (may be NULL). A failed append
 * fails a check. */
void tsan_append_history(eddy_store *store, const char *prefix, int from, int to,
                         const char *subject, int streams);

/* What the feed harnesses decode stored events into: the id and its number (tsan_event). */
typedef struct tsan_item {
    char id[96];
    int n;
} tsan_item;
/* The codec callbacks of an eddy_feed_config: a new tsan_item (freed with tsan_item_free), and
 * its id. */
eddy_status tsan_item_decode(const eddy_event *stored, const eddy_event_meta *meta, void **event,
                             eddy_error *err, void *user);
void tsan_item_free(void *event, void *user);
const char *tsan_item_id(const void *event, void *user);

#endif
