/* SPDX-License-Identifier: BSD-3-Clause */
/* Event builders: fresh time-ordered ids (UUIDv7, RFC 9562) and events that carry one, their
 * source and the current time.
 *
 * An id is 48 bits of Unix ms, the version (7), 12 bits that count within a millisecond (started
 * at a random value below 2048 each new millisecond, so there is room to count), the variant
 * and 62 random bits. The last (ms, counter) pair is kept under a lock so that one process's
 * ids are strictly increasing: a clock that steps back, or 2048+ ids in one ms, borrow the next
 * millisecond instead. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "config/settings.h"
#include "eddy/event.h"
#include "error.h"
#include "events/event_internal.h"

static pthread_mutex_t clock_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t last_ms;
static unsigned last_count;

static void random_bytes(unsigned char *out, size_t n) {
    if (getrandom(out, n, 0) == (ssize_t)n)
        return;
    /* No getrandom (seccomp, old kernel): the hex helper has its own fallbacks. */
    char hex[33];
    eddy__random_hex(hex);
    for (size_t i = 0; i < n && i < 16; i++) {
        unsigned hi = (unsigned)(hex[2 * i] <= '9' ? hex[2 * i] - '0' : hex[2 * i] - 'a' + 10);
        unsigned lo =
            (unsigned)(hex[2 * i + 1] <= '9' ? hex[2 * i + 1] - '0' : hex[2 * i + 1] - 'a' + 10);
        out[i] = (unsigned char)(hi << 4 | lo);
    }
}

void eddy_uuid7(char out[EDDY_UUID_SIZE]) {
    unsigned char b[16];
    random_bytes(b, sizeof(b));
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t ms = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
    pthread_mutex_lock(&clock_lock);
    unsigned count;
    if (ms > last_ms) {
        count = ((unsigned)b[6] << 8 | b[7]) & 0x7ff;
    } else if (last_count < 0xfff) {
        ms = last_ms;
        count = last_count + 1;
    } else {
        ms = last_ms + 1;
        count = ((unsigned)b[6] << 8 | b[7]) & 0x7ff;
    }
    last_ms = ms;
    last_count = count;
    pthread_mutex_unlock(&clock_lock);
    for (int i = 0; i < 6; i++)
        b[i] = (unsigned char)(ms >> (40 - 8 * i));
    b[6] = (unsigned char)(0x70 | (count >> 8));
    b[7] = (unsigned char)count;
    b[8] = (unsigned char)(0x80 | (b[8] & 0x3f));
    static const char hex[] = "0123456789abcdef";
    char *p = out;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            *p++ = '-';
        *p++ = hex[b[i] >> 4];
        *p++ = hex[b[i] & 15];
    }
    *p = '\0';
}

/* The current time as RFC 3339 in UTC with milliseconds. */
static void now_rfc3339(char out[64]) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    snprintf(out, 64, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000);
}

eddy_status eddy_event_create(const char *source, const char *type, eddy_event **out,
                              eddy_error *err) {
    if (!out)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "event builder: out is NULL");
    *out = NULL;
    if (!source || !type)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "event builder: source or type is NULL");
    eddy_event *ev = eddy_event_new();
    if (!ev)
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    char id[EDDY_UUID_SIZE], now[64];
    eddy_uuid7(id);
    now_rfc3339(now);
    eddy_status st = eddy_event_set_id(ev, id);
    if (st == EDDY_OK)
        st = eddy_event_set_source(ev, source);
    if (st == EDDY_OK)
        st = eddy_event_set_type(ev, type);
    if (st == EDDY_OK)
        st = eddy_event_set_time(ev, now);
    if (st != EDDY_OK) {
        eddy_event_free(ev);
        return eddy__fail(err, st, "event builder: could not set the attributes");
    }
    if ((st = eddy_event_validate(ev, err)) != EDDY_OK) {
        eddy_event_free(ev);
        return st;
    }
    *out = ev;
    return EDDY_OK;
}

eddy_status eddy__event_create_for(const char *source, const char *type, const char *what,
                                   eddy_event **out, eddy_error *err) {
    if (out)
        *out = NULL;
    if (!source)
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC,
                          "%s needs settings.source for the event's source", what);
    return eddy_event_create(source, type, out, err);
}
