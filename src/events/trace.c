/* SPDX-License-Identifier: BSD-3-Clause */
/* W3C Trace Context (https://www.w3.org/TR/trace-context/) as CloudEvents extension attributes
 * (the Distributed Tracing extension): "traceparent" and "tracestate".
 *
 * Rules kept here:
 * - A value set through eddy_event_set_extension, and every event published or appended, is
 *   checked; an event read from a stream is not, since a receiver of a bad traceparent is to
 *   ignore it rather than refuse the message. So what is carried (a request's context into its
 *   reply, eddy_event_continue_trace) is checked again and a bad one is not carried.
 * - tracestate belongs to its traceparent: it is carried only with one, and a bad tracestate is
 *   dropped while the traceparent is still carried (the recommendation for an invalid list).
 * - Checks only read; carrying allocates everything before it changes the destination. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "eddy/event.h"
#include "error.h"
#include "events/event_internal.h"

static bool lower_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

/* n lowercase hex digits at p; *zero tells whether they are all '0'. */
static bool hex_field(const char *p, size_t n, bool *zero) {
    *zero = true;
    for (size_t i = 0; i < n; i++) {
        if (!lower_hex(p[i]))
            return false;
        *zero = *zero && p[i] == '0';
    }
    return true;
}

eddy_status eddy_traceparent_check(const char *value, eddy_error *err) {
    if (!value)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "traceparent is NULL");
    char shown[80];
    const char *v = eddy__printable(shown, sizeof(shown), value, strlen(value));
    size_t len = strlen(value);
    bool zero;
    /* version "-" trace-id "-" parent-id "-" trace-flags: 2, 32, 16 and 2 hex digits */
    if (len < 55 || value[2] != '-' || value[35] != '-' || value[52] != '-')
        return eddy__fail(err, EDDY_ERR_INVALID_EVENT,
                          "traceparent '%s': not version-traceid-parentid-flags (2, 32, 16 and 2 "
                          "lowercase hex digits joined by '-')",
                          v);
    if (!hex_field(value, 2, &zero) || strncmp(value, "ff", 2) == 0)
        return eddy__fail(err, EDDY_ERR_INVALID_EVENT,
                          "traceparent '%s': version is not 2 lowercase hex digits other than ff",
                          v);
    /* Version 00 is exactly 55 characters; a later version may add fields after a '-'. */
    if ((strncmp(value, "00", 2) == 0 && len != 55) || (len > 55 && value[55] != '-'))
        return eddy__fail(err, EDDY_ERR_INVALID_EVENT,
                          "traceparent '%s': %zu characters; version %.2s has 55", v, len, value);
    if (!hex_field(value + 3, 32, &zero))
        return eddy__fail(err, EDDY_ERR_INVALID_EVENT,
                          "traceparent '%s': trace-id is not 32 lowercase hex digits", v);
    if (zero)
        return eddy__fail(err, EDDY_ERR_INVALID_EVENT, "traceparent '%s': trace-id is all zeros",
                          v);
    if (!hex_field(value + 36, 16, &zero))
        return eddy__fail(err, EDDY_ERR_INVALID_EVENT,
                          "traceparent '%s': parent-id is not 16 lowercase hex digits", v);
    if (zero)
        return eddy__fail(err, EDDY_ERR_INVALID_EVENT, "traceparent '%s': parent-id is all zeros",
                          v);
    if (!hex_field(value + 53, 2, &zero))
        return eddy__fail(err, EDDY_ERR_INVALID_EVENT,
                          "traceparent '%s': trace-flags is not 2 lowercase hex digits", v);
    return EDDY_OK;
}

static bool lcalpha(char c) { return c >= 'a' && c <= 'z'; }
static bool key_char(char c) {
    return lcalpha(c) || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '*' || c == '/';
}
/* nblk-chr: printable ASCII but ',' and '='. */
static bool value_char(char c) { return c >= 0x21 && c <= 0x7e && c != ',' && c != '='; }

/* simple-key = lcalpha 0*255(keychar); multi-tenant-key = tenant-id "@" system-id, tenant-id =
 * (lcalpha / DIGIT) 0*240(keychar), system-id = lcalpha 0*13(keychar). */
static bool key_ok(const char *k, size_t n) {
    const char *at = memchr(k, '@', n);
    size_t t = at ? (size_t)(at - k) : n; /* the tenant-id, or the whole simple key */
    bool ok = at ? t >= 1 && t <= 241 && (lcalpha(k[0]) || (k[0] >= '0' && k[0] <= '9'))
                 : n >= 1 && n <= 256 && lcalpha(k[0]);
    for (size_t i = 1; ok && i < t; i++)
        ok = key_char(k[i]);
    if (ok && at) {
        size_t s = n - t - 1;
        ok = s >= 1 && s <= 14 && lcalpha(at[1]);
        for (size_t i = 2; ok && i <= s; i++)
            ok = key_char(at[i]);
    }
    return ok;
}

eddy_status eddy_tracestate_check(const char *value, eddy_error *err) {
    if (!value)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "tracestate is NULL");
    char shown[80];
    const char *v = eddy__printable(shown, sizeof(shown), value, strlen(value));
    if (strlen(value) > 512)
        return eddy__fail(err, EDDY_ERR_INVALID_EVENT,
                          "tracestate '%s': longer than 512 characters", v);
    /* Keys seen, to refuse a duplicate: at most 32 members. */
    const char *keys[32];
    size_t klens[32], nkeys = 0;
    for (const char *p = value;;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        /* OWS around the member; an empty member is allowed */
        while (n && (*p == ' ' || *p == '\t'))
            p++, n--;
        while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
            n--;
        if (n) {
            const char *eq = memchr(p, '=', n);
            size_t kn = eq ? (size_t)(eq - p) : 0, vn = eq ? n - kn - 1 : 0;
            if (!eq || !key_ok(p, kn))
                return eddy__fail(
                    err, EDDY_ERR_INVALID_EVENT,
                    "tracestate '%s': member %zu is not key=value with a key of "
                    "lowercase letters, digits, '_', '-', '*', '/' (or tenant@system)",
                    v, nkeys + 1);
            bool ok = vn >= 1 && vn <= 256 && value_char(eq[vn]);
            for (size_t i = 1; ok && i < vn; i++)
                ok = value_char(eq[i]) || eq[i] == ' ';
            if (!ok)
                return eddy__fail(err, EDDY_ERR_INVALID_EVENT,
                                  "tracestate '%s': the value of member %zu is not 1-256 printable "
                                  "characters without ',' or '=' (and not ending in a space)",
                                  v, nkeys + 1);
            if (nkeys == 32)
                return eddy__fail(err, EDDY_ERR_INVALID_EVENT,
                                  "tracestate '%s': more than 32 members", v);
            for (size_t i = 0; i < nkeys; i++)
                if (klens[i] == kn && memcmp(keys[i], p, kn) == 0)
                    return eddy__fail(err, EDDY_ERR_INVALID_EVENT,
                                      "tracestate '%s': key '%.*s' appears twice", v, (int)kn, p);
            keys[nkeys] = p;
            klens[nkeys++] = kn;
        }
        if (!end)
            return EDDY_OK;
        p = end + 1;
    }
}

eddy_status eddy__trace_check_value(const char *name, const char *value, eddy_error *err) {
    if (strcmp(name, EDDY_TRACEPARENT) == 0)
        return eddy_traceparent_check(value, err);
    if (strcmp(name, EDDY_TRACESTATE) == 0)
        return eddy_tracestate_check(value, err);
    return EDDY_OK;
}

eddy_status eddy__event_check_trace(const eddy_event *ev, eddy_error *err) {
    if (eddy_event_extension_count(ev) == 0)
        return EDDY_OK; /* the common case, on every publish */
    const char *tp = eddy_event_extension(ev, EDDY_TRACEPARENT);
    const char *ts = eddy_event_extension(ev, EDDY_TRACESTATE);
    eddy_status st = tp ? eddy_traceparent_check(tp, err) : EDDY_OK;
    if (st == EDDY_OK && ts)
        st = eddy_tracestate_check(ts, err);
    return st;
}

eddy_status eddy_event_continue_trace(eddy_event *dst, const eddy_event *src, eddy_error *err) {
    if (!dst || !src)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "continue_trace: an event is NULL");
    const char *tp = eddy_event_extension(src, EDDY_TRACEPARENT);
    if (!tp)
        return EDDY_OK;
    eddy_status st = eddy_traceparent_check(tp, err);
    if (st != EDDY_OK)
        return st;
    const char *ts = eddy_event_extension(src, EDDY_TRACESTATE);
    if (ts && eddy_tracestate_check(ts, NULL) != EDDY_OK)
        ts = NULL;
    const char *names[2] = {EDDY_TRACEPARENT, EDDY_TRACESTATE};
    const char *values[2] = {tp, ts}; /* no tracestate: dst's goes with its old traceparent */
    if (eddy__event_set_extensions(dst, 2, names, values) != EDDY_OK)
        return eddy__fail(err, EDDY_ERR_NOMEM, "continue_trace: out of memory");
    return EDDY_OK;
}
