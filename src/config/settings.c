/* SPDX-License-Identifier: BSD-3-Clause */
/* The settings table (options.h): every field of eddy_settings is one row, and defaults,
 * validation, setting by name, the owned copy a bus keeps and docs/configuration.md come from
 * it. Names and namespaces end up inside Redis keys, so they are restricted to characters that
 * cannot break the key layout ("{ns}:..."): no braces, colons, spaces or control characters.
 * What one row cannot say (rules between two settings, the random instance, the request names)
 * is in eddy__settings_copy. */
#include "config/settings.h"

#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "error.h"
#include "util/options.h"

/* ---- the table ---------------------------------------------------------------------- */

#define S_OFF(f) offsetof(eddy_settings, f), sizeof(((eddy_settings *)0)->f)
#define C_OFF(f) offsetof(eddy__settings, f)
#define NO EDDY__OPT_NO_COPY
#define UMAX UINT_MAX
/* name, type, where it is copied, string default, number default, min, max, flags, unit,
 * default in words, range note, doc */
#define ROW(f, type, copy, dstr, def, min, max, flags, unit, ddoc, note, doc)                      \
    {                                                                                              \
#f, EDDY__OPT_##type, S_OFF(f), copy, dstr, def, min, max, flags, unit, ddoc, note, NULL,  \
            doc                                                                                    \
    }

static const eddy__opt settings_rows[] = {
    ROW(url, STRING, C_OFF(url_text), "memory://", 0, 0, 0, EDDY__OPT_NULL_DEFAULT, "URL", NULL,
        NULL,
        "Backend: memory://[name], redis://[user:password@]host[:port][/db], rediss://... (TLS), "
        "unix:///path[?db=N], redis-sentinel://[user:password@]host[:port][,...]/master[/db]"),
    ROW(ns, STRING, C_OFF(ns), "eddy", 0, 0, 0, EDDY__OPT_NULL_DEFAULT | EDDY__OPT_KEY_SAFE, "",
        NULL, "1-128 printable characters without space, '{', '}' or ':'",
        "Namespace: every key of this bus is \"{ns}:...\""),
    ROW(source, STRING, C_OFF(source), NULL, 0, 0, 0, EDDY__OPT_NOT_EMPTY, "", "none", NULL,
        "CloudEvents source of the events the bus builds (publish_value, replies)"),
    ROW(instance, STRING, NO, NULL, 0, 0, 0, EDDY__OPT_KEY_SAFE, "", "random per bus",
        "1-128 printable characters without space, '{', '}' or ':'",
        "Consumer name in groups; a restart with the same name recovers its pending entries at "
        "once"),
    ROW(max_event_size, SIZE, C_OFF(max_event_size), NULL, 1024 * 1024, 1, SIZE_MAX, 0, "bytes",
        "1048576 (1 MiB)", NULL, "Largest event accepted on publish and on read"),
    ROW(workers, UNSIGNED, C_OFF(workers), NULL, 4, 1, 1024, 0, "threads", NULL, NULL,
        "Blocking front end: handler threads the bus owns"),
    ROW(max_deliveries, UNSIGNED, C_OFF(max_deliveries), NULL, 20, 1, UMAX, 0, "deliveries", NULL,
        NULL, "An AtLeastOnce entry is dead-lettered once it would be delivered once more"),
    ROW(redelivery_idle_ms, UNSIGNED, C_OFF(redelivery_idle_ms), NULL, 30000, 1, UMAX, 0, "ms",
        NULL, NULL,
        "An AtLeastOnce entry pending this long is claimed and delivered again; must exceed the "
        "longest handler"),
    ROW(read_batch, UNSIGNED, C_OFF(read_batch), NULL, 64, 1, UMAX, 0, "entries", NULL, NULL,
        "Entries read per round trip, and the most a subscription has in its handlers at once"),
    ROW(block_ms, UNSIGNED, C_OFF(block_ms), NULL, 1000, 1, UMAX, 0, "ms", NULL, NULL,
        "How long one blocking read waits before the reader looks around"),
    ROW(discovery_ms, UNSIGNED, C_OFF(discovery_ms), NULL, 250, 1, UMAX, 0, "ms", NULL, NULL,
        "How often the bus looks for new subjects for its pattern subscriptions"),
    ROW(connect_timeout_ms, UNSIGNED, C_OFF(connect_timeout_ms), NULL, 2000, 1, UMAX, 0, "ms", NULL,
        NULL, "Connect timeout (with Sentinel: the whole discovery)"),
    ROW(reconnect_min_ms, UNSIGNED, C_OFF(reconnect_min_ms), NULL, 50, 1, UMAX, 0, "ms", NULL, NULL,
        "Reconnect backoff, first wait"),
    ROW(reconnect_max_ms, UNSIGNED, C_OFF(reconnect_max_ms), NULL, 2000, 0, UMAX, 0, "ms", NULL,
        "at least reconnect_min_ms", "Reconnect backoff, longest wait"),
    ROW(stream_maxlen, LLONG, C_OFF(stream_maxlen), NULL, 0, 0, LLONG_MAX, 0, "entries", "0 (off)",
        NULL,
        "Trim subject streams to about this many entries on every publish (unsafe: prefer "
        "retention_max_len)"),
    ROW(log, CALLBACK, C_OFF(log.fn), NULL, 0, 0, 0, 0, "", "none", NULL,
        "Log hook (eddy_log_fn); the library never writes to stderr"),
    ROW(log_user, POINTER, C_OFF(log.user), NULL, 0, 0, 0, 0, "", "NULL", NULL,
        "The log hook's user pointer"),
    ROW(request_names, STRINGS, NO, NULL, 0, 0, 0, 0, "", "none", NULL,
        "Request names declared up front (one counter row each); non-empty and distinct"),
    ROW(request_name_count, COUNT, NO, NULL, 0, 0, 0, 0, "", NULL, NULL,
        "The number of request_names"),
    ROW(lease_ms, UNSIGNED, C_OFF(lease_ms), NULL, 10000, 1, UMAX, 0, "ms", NULL, NULL,
        "How long a subscription counts as live in the registry without a heartbeat"),
    ROW(redelivery_backoff_ms, UNSIGNED, C_OFF(redelivery_backoff_ms), NULL, 500, 0, UMAX, 0, "ms",
        NULL, "0 turns backoff off",
        "Redelivery backoff: the wait after a handler's first failure"),
    ROW(redelivery_backoff_factor, UNSIGNED, C_OFF(redelivery_backoff_factor), NULL, 2, 0, UMAX, 0,
        "", NULL, "> 0 when redelivery_backoff_ms is on",
        "Redelivery backoff: how much longer each further wait is"),
    ROW(redelivery_backoff_max_ms, UNSIGNED, C_OFF(redelivery_backoff_max_ms), NULL, 8000, 0, UMAX,
        0, "ms", NULL, "at least redelivery_backoff_ms when backoff is on",
        "Redelivery backoff: the longest wait (and at most redelivery_idle_ms)"),
    ROW(retention_interval_ms, UNSIGNED, C_OFF(retention_interval_ms), NULL, 60000, 0, UMAX, 0,
        "ms", NULL, "0 turns retention and clean-up off",
        "How often a retention pass runs, in one process of the namespace at a time"),
    ROW(retention_grace_ms, UNSIGNED, C_OFF(retention_grace_ms), NULL, 60000, 0, UMAX, 0, "ms",
        NULL, "at least discovery_ms when retention is on",
        "Entries younger than this are never trimmed by the safe rule"),
    ROW(retention_max_age_ms, ULLONG, C_OFF(retention_max_age_ms), NULL, 0, 0, ULLONG_MAX, 0, "ms",
        "0 (no limit)", NULL,
        "Limit that may drop unread entries: no entry older than this (counted and logged)"),
    ROW(retention_max_len, ULLONG, C_OFF(retention_max_len), NULL, 0, 0, ULLONG_MAX, 0, "entries",
        "0 (no limit)", NULL,
        "Limit that may drop unread entries: no more entries than this (counted and logged)"),
    ROW(consumer_idle_ms, UNSIGNED, C_OFF(consumer_idle_ms), NULL, 86400000, 0, UMAX, 0, "ms",
        "86400000 (a day)", "0 never removes one",
        "Retention removes a dead bus's consumer with nothing pending idle longer than this"),
    ROW(command_timeout_ms, UNSIGNED, C_OFF(command_timeout_ms), NULL, 5000, 1, UMAX, 0, "ms", NULL,
        NULL, "How long a call without a deadline of its own may wait for its replies"),
    ROW(tls_cacert, STRING, C_OFF(tls_cacert), NULL, 0, 0, 0, 0, "path", "none (system store)",
        NULL, "rediss://: CA certificate file (PEM) the server certificate is verified against"),
    ROW(tls_cacertdir, STRING, C_OFF(tls_cacertdir), NULL, 0, 0, 0, 0, "path",
        "none (system store)", NULL, "rediss://: directory of CA certificates"),
    ROW(tls_cert, STRING, C_OFF(tls_cert), NULL, 0, 0, 0, 0, "path", "none", "with tls_key",
        "rediss://: client certificate (PEM) for servers that ask for one"),
    ROW(tls_key, STRING, C_OFF(tls_key), NULL, 0, 0, 0, 0, "path", "none", "with tls_cert",
        "rediss://: the client certificate's key (PEM)"),
    ROW(tls_sni, STRING, C_OFF(tls_sni), NULL, 0, 0, 0, 0, "", "the URL's host", NULL,
        "rediss://: server name sent and verified"),
    ROW(tls_insecure, BOOL, C_OFF(tls_insecure), NULL, 0, 0, 1, 0, "", "false", NULL,
        "rediss://: skip certificate verification (tests only)"),
    ROW(claim_refresh, BOOL, C_OFF(claim_refresh), NULL, 0, 0, 1, 0, "", "false", "AtLeastOnce",
        "While a handler holds a delivery, tell Redis every third of redelivery_idle_ms that it "
        "is still being worked on"),
    ROW(on_connection, CALLBACK, NO, NULL, 0, 0, 0, 0, "", "none", NULL,
        "Told of each connection state change (eddy_connection_fn)"),
    ROW(on_connection_user, POINTER, NO, NULL, 0, 0, 0, 0, "", "NULL", NULL,
        "on_connection's user pointer"),
    ROW(publish_dedup_ms, UNSIGNED, C_OFF(publish_dedup_ms), NULL, 0, EDDY__PUBLISH_DEDUP_MIN_MS,
        EDDY__PUBLISH_DEDUP_MAX_MS, EDDY__OPT_ZERO_OFF, "ms", "0 (off)",
        " (a day); a shorter window would not cover a retry after a timeout",
        "Idempotent publish: an event id published again to its subject within this window "
        "appends nothing"),
    ROW(sentinel_password, STRING, C_OFF(sentinel_password), NULL, 0, 0, 0, 0, "", "none", NULL,
        "redis-sentinel://: the password the sentinels want"),
    ROW(wait_replicas, UNSIGNED, C_OFF(wait_replicas), NULL, 0, 0, UMAX, 0, "replicas",
        "0 (no WAIT)", "Redis only",
        "Every publish waits (WAIT) until this many replicas have it; fewer is EDDY_ERR_TIMEOUT"),
    ROW(wait_timeout_ms, UNSIGNED, C_OFF(wait_timeout_ms), NULL, 1000, 0, UMAX, 0, "ms", NULL,
        "with wait_replicas: 1 to below command_timeout_ms",
        "How long a publish's WAIT waits for wait_replicas"),
    ROW(share_reads_from, UNSIGNED, C_OFF(share_reads_from), NULL, 5, 0, UMAX, 0, "subscriptions",
        "5", NULL,
        "A bus with this many subscriptions or more reads them over a few shared connections "
        "(0: never)"),
};
#undef ROW

const eddy__opt_table eddy__settings_table = {
    .prefix = "settings",
    .type_name = "eddy_settings",
    .init_name = "eddy_settings_init",
    .rows = settings_rows,
    .nrows = sizeof(settings_rows) / sizeof(settings_rows[0]),
    .size = sizeof(eddy_settings),
    .size_0_3 = EDDY__SETTINGS_SIZE_0_3,
    .doc = "The settings of a bus (eddy_bus_new, eddy_rbus_new), and of a store, dead-letter "
           "handle or admin handle, which use the part they need (include/eddy/bus.h).",
};

void eddy_settings_init_sized(eddy_settings *s, size_t size) {
    if (s)
        eddy__opts_init(&eddy__settings_table, s, size);
}

eddy_status eddy_settings_set(eddy_settings *s, const char *name, const char *value,
                              eddy_error *err) {
    return eddy__opts_set(&eddy__settings_table, s, name, value, err);
}

const char *eddy_settings_name(size_t i) {
    return i < eddy__settings_table.nrows ? eddy__settings_table.rows[i].name : NULL;
}

eddy_status eddy_settings_get(const eddy_settings *s, const char *name, char *buf, size_t len,
                              eddy_error *err) {
    if (!s)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "settings_get: NULL settings");
    return eddy__opts_get(&eddy__settings_table, s, name, buf, len, err);
}

unsigned eddy__redelivery_backoff_ms(const eddy__settings *s, unsigned attempt) {
    unsigned long long delay = s->redelivery_backoff_ms;
    unsigned long long cap = s->redelivery_backoff_max_ms < s->redelivery_idle_ms
                                 ? s->redelivery_backoff_max_ms
                                 : s->redelivery_idle_ms;
    for (unsigned i = 1; i < attempt && delay < cap; i++)
        delay *= s->redelivery_backoff_factor;
    return (unsigned)(delay < cap ? delay : cap);
}

void eddy__random_hex(char out[33]) {
    unsigned char bytes[16];
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    ssize_t got = fd >= 0 ? read(fd, bytes, sizeof(bytes)) : -1;
    if (fd >= 0)
        close(fd);
    if (got != (ssize_t)sizeof(bytes)) {
        /* No urandom (chroot): time and address bits still make collisions unlikely. */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        unsigned long long x = (unsigned long long)ts.tv_nsec ^
                               ((unsigned long long)ts.tv_sec << 20) ^
                               (unsigned long long)(uintptr_t)out ^ (unsigned long long)getpid();
        for (size_t i = 0; i < sizeof(bytes); i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            bytes[i] = (unsigned char)x;
        }
    }
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < sizeof(bytes); i++) {
        out[2 * i] = hex[bytes[i] >> 4];
        out[2 * i + 1] = hex[bytes[i] & 15];
    }
    out[32] = '\0';
}

/* Request/reply's settings rules: request names non-empty and distinct. */
static eddy_status check_request_names(const eddy_settings *s, eddy_error *err) {
    if (!s || s->request_name_count == 0)
        return EDDY_OK;
    if (!s->request_names)
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC, "settings.request_names is NULL");
    for (size_t i = 0; i < s->request_name_count; i++) {
        const char *n = s->request_names[i];
        if (!n || !n[0])
            return eddy__fail(err, EDDY_ERR_INVALID_SPEC, "settings.request_names[%zu] is empty",
                              i);
        for (size_t j = 0; j < i; j++)
            if (strcmp(s->request_names[j], n) == 0)
                return eddy__fail(err, EDDY_ERR_INVALID_SPEC,
                                  "settings.request_names: '%s' is declared twice", n);
    }
    return EDDY_OK;
}

eddy_status eddy__settings_copy(eddy__settings *dst, const eddy_settings *caller, eddy_error *err) {
    const eddy__opt_table *t = &eddy__settings_table;
    eddy_settings full; /* the caller's fields, and the defaults of those its headers lack */
    eddy__opts_widen(t, &full, caller);
    const eddy_settings *src = &full;
    memset(dst, 0, sizeof(*dst));
    eddy_status st = eddy__opts_check(t, src, err);
    if (st != EDDY_OK)
        return st;
    /* Rules between two settings. */
    if (src->reconnect_max_ms < src->reconnect_min_ms)
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC,
                          "settings.reconnect_max_ms is below reconnect_min_ms");
    if (src->redelivery_backoff_ms && (src->redelivery_backoff_factor == 0 ||
                                       src->redelivery_backoff_max_ms < src->redelivery_backoff_ms))
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC,
                          "settings.redelivery_backoff_factor must be > 0 and "
                          "redelivery_backoff_max_ms at least redelivery_backoff_ms");
    if (src->retention_interval_ms && src->retention_grace_ms < src->discovery_ms)
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC,
                          "settings.retention_grace_ms must be at least discovery_ms (a pattern "
                          "subscription must find a new subject before its entries may go)");
    if ((src->tls_cert != NULL) != (src->tls_key != NULL))
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC,
                          "settings.tls_cert and tls_key go together (a certificate and its key)");
    /* WAIT 0 would wait for ever, and past command_timeout_ms the connection is given up. */
    if (src->wait_replicas &&
        (src->wait_timeout_ms == 0 || src->wait_timeout_ms >= src->command_timeout_ms))
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC,
                          "settings.wait_timeout_ms %u: with wait_replicas, 1 to below "
                          "command_timeout_ms (%u)",
                          src->wait_timeout_ms, src->command_timeout_ms);
    if ((st = check_request_names(src, err)) != EDDY_OK)
        return st;
    if ((st = eddy__url_parse(src->url ? src->url : "memory://", &dst->url, err)) != EDDY_OK)
        return st;
    if (src->wait_replicas && dst->url.kind == EDDY__URL_MEMORY) {
        eddy__url_free(&dst->url);
        return eddy__fail(
            err, EDDY_ERR_INVALID_SPEC,
            "settings.wait_replicas needs a Redis server (memory:// has no replicas)");
    }
    if ((st = eddy__opts_copy(t, dst, src, err)) != EDDY_OK) {
        eddy__settings_free(dst);
        return st;
    }
    /* By hand: the random instance, the request names, and what the settings become. */
    char random_instance[36] = "i-";
    if (!src->instance)
        eddy__random_hex(random_instance + 2);
    dst->instance_random = !src->instance;
    dst->instance = strdup(src->instance ? src->instance : random_instance);
    if (src->request_name_count) {
        dst->request_names = calloc(src->request_name_count, sizeof(char *));
        for (size_t i = 0; dst->request_names && i < src->request_name_count; i++) {
            if (!(dst->request_names[i] = strdup(src->request_names[i])))
                break;
            dst->nrequest_names++;
        }
    }
    if (!dst->instance || dst->nrequest_names != src->request_name_count ||
        !(dst->conn_state = eddy__conn_state_new(&dst->url, &dst->log, src->on_connection,
                                                 src->on_connection_user, dst->reconnect_max_ms))) {
        eddy__settings_free(dst);
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory copying settings");
    }
    return EDDY_OK;
}

void eddy__settings_free(eddy__settings *s) {
    if (!s)
        return;
    eddy__opts_free(&eddy__settings_table, s);
    eddy__url_free(&s->url);
    free(s->instance);
    for (size_t i = 0; i < s->nrequest_names; i++)
        free(s->request_names[i]);
    free(s->request_names);
    eddy__conn_state_free(s->conn_state);
    memset(s, 0, sizeof(*s));
}

long long eddy__ready_timeout_ms(const eddy__settings *s) {
    return 2LL * s->connect_timeout_ms + 2LL * s->reconnect_max_ms;
}

long long eddy__command_timeout_ms(const eddy__settings *s, long long block_ms) {
    return (block_ms > 0 ? block_ms : 0) + (long long)s->command_timeout_ms;
}
