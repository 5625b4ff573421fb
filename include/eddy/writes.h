/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * eddy — the write sets of a read model kept in Redis, shared by both front ends: what
 * eddy_feed_config.writes fills for each event, and what the model's reads hand back.
 * eddy/model.h (blocking) says what the model is, how it commits and where it stops, and reads
 * it; eddy/rmodel.h reads it on a libev loop.
 */
#ifndef EDDY_WRITES_H
#define EDDY_WRITES_H

#include <stddef.h>

#include "eddy/bus.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The write set of the events a feed is committing; filled by eddy_feed_config.writes with the
 * functions below. Keys: 1-256 printable ASCII characters other than space, '{' and '}' (':'
 * is allowed). A key is a hash or a set, by the first write that creates it; a write of the
 * other kind to it is refused by the commit (WRONGTYPE, EDDY_ERR_BACKEND) unless an earlier
 * write deleted it. Fields, members and values are binary-safe; fields and members up to 64 KiB,
 * values up to 1 MiB, at most 1000 writes per event (EDDY_ERR_TOO_LARGE). A refused write
 * changes nothing; the callback may return the error to fail the event.
 * Thread: the thread running the callback, during the call only. */
typedef struct eddy_writes eddy_writes;

/** Asks for the write set of one event (the user's event, as decode made it; meta is its store
 * metadata). Return EDDY_OK to commit it (an empty write set commits the event's version and
 * changes nothing else), any error to fail the event as a failed apply does. Must not call the
 * feed; may run again for the same event (a retried commit). user is the projection's user. */
typedef eddy_status (*eddy_feed_writes_fn)(void *event, const eddy_event_meta *meta, eddy_writes *w,
                                           eddy_error *err, void *user);

/** HSET key field value. */
EDDY_EXPORT eddy_status eddy_writes_hset(eddy_writes *w, const char *key, const void *field,
                                         size_t field_len, const void *value, size_t value_len,
                                         eddy_error *err);
/** HDEL key field (a hash left empty goes, as in Redis). */
EDDY_EXPORT eddy_status eddy_writes_hdel(eddy_writes *w, const char *key, const void *field,
                                         size_t field_len, eddy_error *err);
/** HINCRBY key field by: a counter (a missing field counts from 0). */
EDDY_EXPORT eddy_status eddy_writes_hincr(eddy_writes *w, const char *key, const void *field,
                                          size_t field_len, long long by, eddy_error *err);
/** SADD key member. */
EDDY_EXPORT eddy_status eddy_writes_sadd(eddy_writes *w, const char *key, const void *member,
                                         size_t member_len, eddy_error *err);
/** SREM key member (a set left empty goes). */
EDDY_EXPORT eddy_status eddy_writes_srem(eddy_writes *w, const char *key, const void *member,
                                         size_t member_len, eddy_error *err);
/** DEL key. */
EDDY_EXPORT eddy_status eddy_writes_del(eddy_writes *w, const char *key, eddy_error *err);

/** One item of a model key or of the model's key list: a hash's field and value, a set's
 * member (value NULL, value_len 0), or a key's name and its kind ("hash" or "set"). Borrowed
 * for the call; return EDDY_OK to go on, anything else stops the read and is returned. */
typedef eddy_status (*eddy_model_item_fn)(const char *name, size_t name_len, const char *value,
                                          size_t value_len, void *user);

#ifdef __cplusplus
}
#endif

#endif
