/* SPDX-License-Identifier: BSD-3-Clause */
/* Settings as a bus holds them: an owned copy with defaults applied and the URL parsed. */
#ifndef EDDY_SRC_SETTINGS_H
#define EDDY_SRC_SETTINGS_H

#include <stddef.h>

#include "config/conn_state.h"
#include "eddy/bus.h"
#include "log.h"
#include "util/url.h"

typedef struct eddy__settings {
    char *url_text;
    eddy__url url;
    char *ns;
    char *source;   /* NULL when not set */
    char *instance; /* never NULL: random when not set */
    size_t max_event_size;
    unsigned workers;
    unsigned max_deliveries;
    unsigned redelivery_idle_ms;
    unsigned read_batch;
    unsigned block_ms;
    unsigned discovery_ms;
    unsigned connect_timeout_ms;
    unsigned reconnect_min_ms;
    unsigned reconnect_max_ms;
    long long stream_maxlen;
    eddy__logger log;
    char **request_names;
    size_t nrequest_names;
    unsigned lease_ms;
    unsigned redelivery_backoff_ms;
    unsigned redelivery_backoff_factor;
    unsigned redelivery_backoff_max_ms;
    bool instance_random; /* settings.instance was NULL */
    unsigned retention_interval_ms;
    unsigned retention_grace_ms;
    unsigned long long retention_max_age_ms;
    unsigned long long retention_max_len;
    unsigned consumer_idle_ms;
    unsigned command_timeout_ms;
    char *tls_cacert, *tls_cacertdir, *tls_cert, *tls_key, *tls_sni; /* NULL when not set */
    bool tls_insecure;
    /* The state of this handle's connections (conn_state.h): each connection reports here. The
     * settings own it; it is NULL only in a copy that failed. */
    eddy__conn_state *conn_state;
    unsigned publish_dedup_ms; /* 0: publish without deduplication */
    char *sentinel_password;   /* NULL when not set */
    unsigned wait_replicas;    /* 0: publish without WAIT */
    unsigned wait_timeout_ms;
    bool claim_refresh;        /* handlers keep their claim while they run */
    unsigned share_reads_from; /* subscriptions from which reads share connections */
} eddy__settings;

/* The size of eddy 0.3.0's eddy_settings (the end of its last field): what a struct_size of 0
 * stands for. Frozen: fields added later come after it. */
#define EDDY__SETTINGS_SIZE_0_3 (offsetof(eddy_settings, wait_timeout_ms) + sizeof(unsigned))

/* The range of a publish_dedup_ms that is not 0. */
#define EDDY__PUBLISH_DEDUP_MIN_MS 1000
#define EDDY__PUBLISH_DEDUP_MAX_MS 86400000

/* The wait before the redelivery of an AtLeastOnce delivery whose attempt-th delivery failed
 * (see eddy_settings.redelivery_backoff_ms); 0 when backoff is off. */
unsigned eddy__redelivery_backoff_ms(const eddy__settings *s, unsigned attempt);

/* How long the front ends wait, decided once for both. How long a subscription may take to
 * become ready (eddy__consumer_ready) after it was started: a connect and a couple of
 * reconnect attempts. */
long long eddy__ready_timeout_ms(const eddy__settings *s);

/* How long a call may wait for the replies of its commands (settings.command_timeout_ms), a
 * blocking read of block_ms (>= 0; -1 for none) included: block_ms more. */
long long eddy__command_timeout_ms(const eddy__settings *s, long long block_ms);

/* Copies and checks src (NULL means all defaults). EDDY_ERR_INVALID_SPEC naming a bad field,
 * EDDY_ERR_INVALID_URL for the URL. On failure dst holds nothing to free. */
eddy_status eddy__settings_copy(eddy__settings *dst, const eddy_settings *src, eddy_error *err);
void eddy__settings_free(eddy__settings *s);

/* Writes 32 random lowercase hex characters and a NUL into out (33 bytes). */
void eddy__random_hex(char out[33]);

#endif
