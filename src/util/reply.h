/* SPDX-License-Identifier: BSD-3-Clause */
/* Reading Redis stream replies (XREADGROUP, XAUTOCLAIM, XPENDING, TIME, SMEMBERS) into flat
 * views over the hiredis reply. Nothing is copied: views live as long as the reply. Every
 * shape is checked; anything unexpected is EDDY_ERR_PROTOCOL, never a crash. */
#ifndef EDDY_SRC_REPLY_H
#define EDDY_SRC_REPLY_H

#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stddef.h>

#include "eddy/status.h"

/* One entry: its id, and its field/value pairs as parallel arrays (fv NULL, nfv 0 for an
 * entry that was deleted while pending: Redis answers [id, nil]). */
typedef struct eddy__entry_view {
    const char *id;
    size_t idlen;
    const redisReply *fields; /* the array of fields and values, or NULL */
} eddy__entry_view;

/* Checks `r` is an array of [id, fields] entries. */
eddy_status eddy__reply_entries(const redisReply *r);
/* The i-th entry of a checked entries array. */
eddy__entry_view eddy__reply_entry(const redisReply *entries, size_t i);

/* Flattens an entry's fields into argv-like arrays (caller provides room for nfv pointers;
 * nfv is fields->elements). Returns false when a field is not a string. */
bool eddy__entry_flatten(const redisReply *fields, const char **fv, size_t *fvlen);

/* A string or status reply (not NULL). */
bool eddy__reply_is_str(const redisReply *r);

/* The value named `name` in a flat [name, value, ...] record (an XINFO reply), or NULL when
 * the record is not an array or has no such name. */
const redisReply *eddy__reply_field(const redisReply *rec, const char *name);

/* TIME -> milliseconds since the epoch. */
eddy_status eddy__reply_time_ms(const redisReply *r, long long *ms);

/* An XPENDING extended reply: delivery count of `id`, or 0 when it is not listed. */
unsigned eddy__reply_pending_count(const redisReply *r, const char *id);

/* A nil reply object (what a blocking read answers on timeout), for backends that time out
 * on the client side. NULL on OOM. The caller frees it with freeReplyObject. */
redisReply *eddy__reply_nil(void);
#endif
