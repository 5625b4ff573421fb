/* SPDX-License-Identifier: BSD-3-Clause */
/* See recorder.h. */
#include "recorder.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "eddy/event.h"

void rec_init(recorder *r) {
    memset(r, 0, sizeof(*r));
    pthread_mutex_init(&r->lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&r->cond, &attr);
    pthread_condattr_destroy(&attr);
}

void rec_destroy(recorder *r) {
    pthread_mutex_destroy(&r->lock);
    pthread_cond_destroy(&r->cond);
}

eddy_status rec_handler(eddy_delivery *d, void *user) {
    recorder *r = user;
    const eddy_event *ev = eddy_delivery_event(d);
    const char *type = eddy_event_type(ev);
    eddy_status result = EDDY_OK;
    if (eddy_delivery_attempt(d) <= r->fail_times ||
        (r->poison_type && strcmp(type, r->poison_type) == 0))
        result = EDDY_ERR_HANDLER_FAILED;
    pthread_mutex_lock(&r->lock);
    if (r->n < REC_MAX) {
        rec_entry *e = &r->entries[r->n++];
        snprintf(e->sub, sizeof(e->sub), "%s", eddy_delivery_subscription(d));
        snprintf(e->subject, sizeof(e->subject), "%s", eddy_delivery_subject(d));
        snprintf(e->event_id, sizeof(e->event_id), "%s", eddy_event_id(ev));
        snprintf(e->type, sizeof(e->type), "%s", type);
        e->attempt = eddy_delivery_attempt(d);
        e->result = result;
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        e->at_ms = (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000;
    }
    pthread_cond_broadcast(&r->cond);
    pthread_mutex_unlock(&r->lock);
    return result;
}

static struct timespec deadline_after(long long ms) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (ms % 1000) * 1000000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    return ts;
}

bool rec_wait_for(recorder *r, bool (*pred)(recorder *r, void *arg), void *arg,
                  long long timeout_ms) {
    struct timespec deadline = deadline_after(timeout_ms);
    pthread_mutex_lock(&r->lock);
    bool ok;
    while (!(ok = pred(r, arg)))
        if (pthread_cond_timedwait(&r->cond, &r->lock, &deadline) == ETIMEDOUT) {
            ok = pred(r, arg);
            break;
        }
    pthread_mutex_unlock(&r->lock);
    return ok;
}

static bool at_least(recorder *r, void *arg) { return r->n >= *(int *)arg; }

bool rec_wait(recorder *r, int n, long long timeout_ms) {
    return rec_wait_for(r, at_least, &n, timeout_ms);
}

int rec_count(recorder *r) {
    pthread_mutex_lock(&r->lock);
    int n = r->n;
    pthread_mutex_unlock(&r->lock);
    return n;
}

static int count_where(recorder *r, const char *id, bool handled_only) {
    pthread_mutex_lock(&r->lock);
    int n = 0;
    for (int i = 0; i < r->n; i++)
        if (strcmp(r->entries[i].event_id, id) == 0 &&
            (!handled_only || r->entries[i].result == EDDY_OK))
            n++;
    pthread_mutex_unlock(&r->lock);
    return n;
}

int rec_handled(recorder *r, const char *id) { return count_where(r, id, true); }
int rec_seen(recorder *r, const char *id) { return count_where(r, id, false); }

eddy_event *make_event(const char *id, const char *type) {
    eddy_event *ev = eddy_event_new();
    cr_assert(ev);
    cr_assert_eq(eddy_event_set_id(ev, id), EDDY_OK);
    cr_assert_eq(eddy_event_set_source(ev, "/tests"), EDDY_OK);
    cr_assert_eq(eddy_event_set_type(ev, type), EDDY_OK);
    char data[128];
    int n = snprintf(data, sizeof(data), "payload-%s", id);
    cr_assert_eq(eddy_event_set_data(ev, data, (size_t)n), EDDY_OK);
    return ev;
}
