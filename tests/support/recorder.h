/* SPDX-License-Identifier: BSD-3-Clause */
/* A thread-safe record of what handlers received, and a handler with scripted failures, for
 * scenario tests. Waiting is on a condition variable signalled by each delivery, never a
 * fixed sleep. */
#ifndef EDDY_TEST_RECORDER_H
#define EDDY_TEST_RECORDER_H

#include <pthread.h>
#include <stdbool.h>

#include "eddy/bus.h"

#define REC_MAX 4096

typedef struct rec_entry {
    char sub[64];
    char subject[128];
    char event_id[64];
    char type[64];
    unsigned attempt;
    eddy_status result;
    long long at_ms; /* CLOCK_MONOTONIC milliseconds when the handler ran */
} rec_entry;

typedef struct recorder {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    rec_entry entries[REC_MAX];
    int n;
    /* Scripted behaviour: each event fails its first `fail_times` attempts; events of
     * `poison_type` always fail. */
    unsigned fail_times;
    const char *poison_type;
} recorder;

void rec_init(recorder *r);
void rec_destroy(recorder *r);
/* The handler: records, then succeeds or fails as scripted. user is a recorder. */
eddy_status rec_handler(eddy_delivery *d, void *user);
/* Waits until at least n deliveries were recorded (true) or timeout_ms passed (false). */
bool rec_wait(recorder *r, int n, long long timeout_ms);
/* Waits until `pred(r)` holds, re-checked after every delivery. */
bool rec_wait_for(recorder *r, bool (*pred)(recorder *r, void *arg), void *arg,
                  long long timeout_ms);
int rec_count(recorder *r);
/* Deliveries whose handler succeeded, for event id `id`. */
int rec_handled(recorder *r, const char *id);
/* Any deliveries of event id `id` at all. */
int rec_seen(recorder *r, const char *id);

/* A valid event with the given id and type, and data "payload-<id>". Caller frees. */
eddy_event *make_event(const char *id, const char *type);

#endif
