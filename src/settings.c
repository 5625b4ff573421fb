/* SPDX-License-Identifier: BSD-3-Clause */
/* Settings defaults, validation and the owned copy a bus keeps. Names and namespaces end up
 * inside Redis keys, so they are restricted to characters that cannot break the key layout
 * ("{ns}:..."): no braces, colons, spaces or control characters. */
#include "settings.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "error.h"
#include "requests.h"

void eddy_settings_init(eddy_settings *s) {
    memset(s, 0, sizeof(*s));
    s->url = "memory://";
    s->ns = "eddy";
    s->max_event_size = 1024 * 1024;
    s->workers = 4;
    s->max_deliveries = 20;
    s->redelivery_idle_ms = 30000;
    s->read_batch = 64;
    s->block_ms = 1000;
    s->discovery_ms = 250;
    s->connect_timeout_ms = 2000;
    s->reconnect_min_ms = 50;
    s->reconnect_max_ms = 2000;
    s->lease_ms = 10000;
    s->redelivery_backoff_ms = 500;
    s->redelivery_backoff_factor = 2;
    s->redelivery_backoff_max_ms = 8000;
    s->retention_interval_ms = 60000;
    s->retention_grace_ms = 60000;
    s->consumer_idle_ms = 86400000;
    s->command_timeout_ms = 5000;
    /* off: publishing twice appends twice. Not on by default: it costs ~87% of the pipelined
     * publish rate and 50-60% of the single one (bench_pubsub, publish_dedup_vs_plain_*). */
    s->publish_dedup_ms = 0;
    s->wait_timeout_ms = 1000;
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

/* A name that is safe inside a key: 1..128 printable ASCII, no space, '{', '}', ':'. */
static int key_safe(const char *s) {
    size_t n = strlen(s);
    if (n == 0 || n > 128)
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c <= ' ' || c >= 127 || c == '{' || c == '}' || c == ':')
            return 0;
    }
    return 1;
}

eddy_status eddy__settings_copy(eddy__settings *dst, const eddy_settings *src, eddy_error *err) {
    eddy_settings defaults;
    eddy_settings_init(&defaults);
    if (!src)
        src = &defaults;
    memset(dst, 0, sizeof(*dst));
    const char *url = src->url ? src->url : defaults.url;
    const char *ns = src->ns ? src->ns : defaults.ns;
    if (!key_safe(ns))
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC,
                          "settings.ns '%s': 1-128 printable characters without space, '{', "
                          "'}' or ':'",
                          ns);
    if (src->instance && !key_safe(src->instance))
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC,
                          "settings.instance '%s': 1-128 printable characters without space, "
                          "'{', '}' or ':'",
                          src->instance);
    if (src->source && !src->source[0])
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC, "settings.source is empty");
#define NEED_POSITIVE(field)                                                                       \
    if (src->field == 0)                                                                           \
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC, "settings." #field " must be > 0");
    NEED_POSITIVE(max_event_size)
    NEED_POSITIVE(workers)
    NEED_POSITIVE(max_deliveries)
    NEED_POSITIVE(redelivery_idle_ms)
    NEED_POSITIVE(read_batch)
    NEED_POSITIVE(block_ms)
    NEED_POSITIVE(discovery_ms)
    NEED_POSITIVE(connect_timeout_ms)
    NEED_POSITIVE(reconnect_min_ms)
    NEED_POSITIVE(lease_ms)
    NEED_POSITIVE(command_timeout_ms)
#undef NEED_POSITIVE
    if (src->reconnect_max_ms < src->reconnect_min_ms)
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC,
                          "settings.reconnect_max_ms is below reconnect_min_ms");
    if (src->stream_maxlen < 0)
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC, "settings.stream_maxlen is negative");
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
    if (src->publish_dedup_ms && (src->publish_dedup_ms < EDDY__PUBLISH_DEDUP_MIN_MS ||
                                  src->publish_dedup_ms > EDDY__PUBLISH_DEDUP_MAX_MS))
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC,
                          "settings.publish_dedup_ms %u: 0 (off) or %d to %d (a day); a shorter "
                          "window would not cover a retry after a timeout",
                          src->publish_dedup_ms, EDDY__PUBLISH_DEDUP_MIN_MS,
                          EDDY__PUBLISH_DEDUP_MAX_MS);
    if (src->workers > 1024)
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC, "settings.workers above 1024");
    /* WAIT 0 would wait for ever, and past command_timeout_ms the connection is given up. */
    if (src->wait_replicas &&
        (src->wait_timeout_ms == 0 || src->wait_timeout_ms >= src->command_timeout_ms))
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC,
                          "settings.wait_timeout_ms %u: with wait_replicas, 1 to below "
                          "command_timeout_ms (%u)",
                          src->wait_timeout_ms, src->command_timeout_ms);

    eddy_status st = eddy__requests_check_names(src, err);
    if (st != EDDY_OK)
        return st;
    if ((st = eddy__url_parse(url, &dst->url, err)) != EDDY_OK)
        return st;
    if (src->wait_replicas && dst->url.kind == EDDY__URL_MEMORY) {
        eddy__url_free(&dst->url);
        return eddy__fail(
            err, EDDY_ERR_INVALID_SPEC,
            "settings.wait_replicas needs a Redis server (memory:// has no replicas)");
    }
    if (src->request_name_count) {
        dst->request_names = calloc(src->request_name_count, sizeof(char *));
        for (size_t i = 0; dst->request_names && i < src->request_name_count; i++) {
            if (!(dst->request_names[i] = strdup(src->request_names[i]))) {
                eddy__settings_free(dst);
                return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory copying settings");
            }
            dst->nrequest_names++;
        }
        if (!dst->request_names) {
            eddy__settings_free(dst);
            return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory copying settings");
        }
    }
    char random_instance[36] = "i-";
    if (!src->instance)
        eddy__random_hex(random_instance + 2);
    dst->url_text = strdup(url);
    dst->ns = strdup(ns);
    dst->source = src->source ? strdup(src->source) : NULL;
    dst->instance = strdup(src->instance ? src->instance : random_instance);
    bool tls_ok = true;
#define COPY_OPT(field)                                                                            \
    if (src->field && !(dst->field = strdup(src->field)))                                          \
        tls_ok = false;
    COPY_OPT(tls_cacert)
    COPY_OPT(tls_cacertdir)
    COPY_OPT(tls_cert)
    COPY_OPT(tls_key)
    COPY_OPT(tls_sni)
    COPY_OPT(sentinel_password)
#undef COPY_OPT
    if (!dst->url_text || !dst->ns || !dst->instance || (src->source && !dst->source) || !tls_ok) {
        eddy__settings_free(dst);
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory copying settings");
    }
    dst->max_event_size = src->max_event_size;
    dst->workers = src->workers;
    dst->max_deliveries = src->max_deliveries;
    dst->redelivery_idle_ms = src->redelivery_idle_ms;
    dst->read_batch = src->read_batch;
    dst->block_ms = src->block_ms;
    dst->discovery_ms = src->discovery_ms;
    dst->connect_timeout_ms = src->connect_timeout_ms;
    dst->reconnect_min_ms = src->reconnect_min_ms;
    dst->reconnect_max_ms = src->reconnect_max_ms;
    dst->stream_maxlen = src->stream_maxlen;
    dst->log.fn = src->log;
    dst->log.user = src->log_user;
    dst->lease_ms = src->lease_ms;
    dst->redelivery_backoff_ms = src->redelivery_backoff_ms;
    dst->redelivery_backoff_factor = src->redelivery_backoff_factor;
    dst->redelivery_backoff_max_ms = src->redelivery_backoff_max_ms;
    dst->instance_random = !src->instance;
    dst->retention_interval_ms = src->retention_interval_ms;
    dst->retention_grace_ms = src->retention_grace_ms;
    dst->retention_max_age_ms = src->retention_max_age_ms;
    dst->retention_max_len = src->retention_max_len;
    dst->consumer_idle_ms = src->consumer_idle_ms;
    dst->command_timeout_ms = src->command_timeout_ms;
    dst->tls_insecure = src->tls_insecure;
    dst->wait_replicas = src->wait_replicas;
    dst->wait_timeout_ms = src->wait_timeout_ms;
    dst->publish_dedup_ms = src->publish_dedup_ms;
    if (!(dst->conn_state = eddy__conn_state_new(&dst->url, &dst->log, src->on_connection,
                                                 src->on_connection_user, dst->reconnect_max_ms))) {
        eddy__settings_free(dst);
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory copying settings");
    }
    return EDDY_OK;
}

void eddy__settings_free(eddy__settings *s) {
    if (!s)
        return;
    free(s->url_text);
    eddy__url_free(&s->url);
    free(s->ns);
    free(s->source);
    free(s->instance);
    free(s->tls_cacert);
    free(s->tls_cacertdir);
    free(s->tls_cert);
    free(s->tls_key);
    free(s->tls_sni);
    free(s->sentinel_password);
    for (size_t i = 0; i < s->nrequest_names; i++)
        free(s->request_names[i]);
    free(s->request_names);
    eddy__conn_state_free(s->conn_state);
    memset(s, 0, sizeof(*s));
}
