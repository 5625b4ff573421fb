/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * eddy — filters of stored and live CloudEvents, and data field readers.
 *
 * A filter decides whether an event is one a reader of the store, or a domain feed's
 * projection, wants. The same filter drives a catch-up's read of the store and the routing of
 * live events (see domain.h), so a projection sees the same events either way.
 *
 * Kinds: the event's type (one of a set), source, subject, time (a range), and conditions on
 * fields of the event's data named by a dotted path ("customer.address.city"), combined with
 * and/or. A data condition needs a data field reader that understands the data's encoding: the
 * built-in one (eddy_msgpack_reader) reads msgpack data (eddy_event_set_value); implement
 * eddy_data_reader for other formats.
 *
 * Comparing a data field with a condition's value:
 * - integers and doubles compare as numbers (1 equals 1.0); strings byte by byte; booleans
 *   equal only booleans; a nil field equals only a nil value;
 * - values of different kinds are never equal, never less and never greater (so NE is true);
 * - a field that is absent (or not a scalar: a map or an array) fails every condition but
 *   EDDY_DATA_NE, which it passes, and EDDY_DATA_EXISTS, which is true for any present field.
 *
 * Ownership: every constructor returns a filter the caller owns (eddy_filter_free) or NULL on
 * bad arguments or OOM; strings and values are copied. eddy_filter_and / eddy_filter_or take
 * ownership of their operands, also when they fail.
 *
 * Thread: filters are immutable once built; matching is safe from any thread.
 */
#ifndef EDDY_FILTER_H
#define EDDY_FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "eddy/event.h"
#include "eddy/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct eddy_filter eddy_filter;

/* ---- data fields ---------------------------------------------------------------------- */

typedef enum eddy_field_kind {
    EDDY_FIELD_NIL,
    EDDY_FIELD_BOOL,
    EDDY_FIELD_INT,    /**< a signed 64-bit integer (msgpack positive and negative ints) */
    EDDY_FIELD_UINT,   /**< an integer above INT64_MAX */
    EDDY_FIELD_DOUBLE, /**< float32 and float64 */
    EDDY_FIELD_STRING, /**< bytes, not NUL-terminated */
    EDDY_FIELD_OTHER   /**< present but not a scalar (map, array, binary, extension) */
} eddy_field_kind;

/** One scalar value: a field a reader found, or the value a condition compares with. */
typedef struct eddy_field {
    eddy_field_kind kind;
    bool b;
    int64_t i;
    uint64_t u;
    double d;
    const char *s; /**< STRING: the bytes (borrowed, see eddy_data_reader) */
    size_t len;    /**< STRING: their length */
} eddy_field;

EDDY_EXPORT eddy_field eddy_field_nil(void);
EDDY_EXPORT eddy_field eddy_field_bool(bool b);
EDDY_EXPORT eddy_field eddy_field_int(int64_t i);
EDDY_EXPORT eddy_field eddy_field_double(double d);
/** s is borrowed by the field (a filter built from it copies it); NULL gives a nil field. */
EDDY_EXPORT eddy_field eddy_field_string(const char *s);

/** Reads the field at a dotted path of an event's data. */
typedef struct eddy_data_reader {
    /** Finds the field at path ("a.b.c": key "c" of the map at key "b" of the map at key "a"
     * of the data's top-level map). *found false (EDDY_OK) when the data has no such field,
     * when the event has no data, or when its data is not in the reader's format (its
     * datacontenttype says another one): such an event simply does not match. An error
     * (EDDY_ERR_MALFORMED: data in the reader's format that does not decode) makes the
     * matching call fail with it. out->s may point into the event's data or into storage of
     * the reader; it must stay valid until the reader is called again on the same thread.
     * Thread: called from any thread, concurrently. */
    eddy_status (*read)(void *self, const eddy_event *ev, const char *path, eddy_field *out,
                        bool *found, eddy_error *err);
    void *self;
} eddy_data_reader;

/** The built-in reader of msgpack data (datacontenttype "application/msgpack", as
 * eddy_event_set_value writes): walks the bytes without allocating; strings point into the
 * event's data. Data of another content type has no fields. A static object. */
EDDY_EXPORT const eddy_data_reader *eddy_msgpack_reader(void);

/* ---- building filters ------------------------------------------------------------------ */

/** Events whose type is one of types[0..n) (n == 0: no event). */
EDDY_EXPORT eddy_filter *eddy_filter_types(const char *const *types, size_t n);
/** Events whose type is type. */
EDDY_EXPORT eddy_filter *eddy_filter_type(const char *type);
/** Events whose source is source. */
EDDY_EXPORT eddy_filter *eddy_filter_source(const char *source);
/** Events whose subject attribute is subject (events without one do not match). */
EDDY_EXPORT eddy_filter *eddy_filter_subject(const char *subject);
/** Events whose time attribute (RFC 3339) lies in [from, to): NULL leaves that end open. from
 * and to are RFC 3339 timestamps ("2026-11-30T12:00:00Z", "...T12:00:00.250+01:00"); NULL
 * returned when one does not parse. Events without a time, or with one that does not parse, do
 * not match. Compared to the nanosecond. */
EDDY_EXPORT eddy_filter *eddy_filter_time_range(const char *from, const char *to);

typedef enum eddy_data_op {
    EDDY_DATA_EQ,
    EDDY_DATA_NE,
    EDDY_DATA_LT,
    EDDY_DATA_LE,
    EDDY_DATA_GT,
    EDDY_DATA_GE,
    EDDY_DATA_EXISTS /**< the value is ignored (may be NULL) */
} eddy_data_op;

/** A condition on the data field at path (dotted, non-empty segments). value is copied (NULL
 * only for EDDY_DATA_EXISTS). A filter holding a data condition needs a reader to match (see
 * eddy_filter_match). */
EDDY_EXPORT eddy_filter *eddy_filter_data(const char *path, eddy_data_op op,
                                          const eddy_field *value);
/** Both must match / either must match (evaluated left to right, stopping early). Takes
 * ownership of a and b (freed when the call fails); NULL operands give NULL. */
EDDY_EXPORT eddy_filter *eddy_filter_and(eddy_filter *a, eddy_filter *b);
EDDY_EXPORT eddy_filter *eddy_filter_or(eddy_filter *a, eddy_filter *b);
/** A copy (NULL on OOM or for NULL). */
EDDY_EXPORT eddy_filter *eddy_filter_dup(const eddy_filter *f);
/** NULL is a no-op. */
EDDY_EXPORT void eddy_filter_free(eddy_filter *f);

/* ---- matching --------------------------------------------------------------------------- */

/** True when f (or any part of it) holds a data condition. */
EDDY_EXPORT bool eddy_filter_needs_data(const eddy_filter *f);

/** Matches ev against f (a NULL filter matches everything), reading data fields with reader.
 * EDDY_ERR_UNREADABLE_FILTER when f needs data and reader is NULL (*matches false); a
 * reader's error is returned as is. */
EDDY_EXPORT eddy_status eddy_filter_match(const eddy_filter *f, const eddy_event *ev,
                                          const eddy_data_reader *reader, bool *matches,
                                          eddy_error *err);

/** True when ev passes f, data fields read with eddy_msgpack_reader; an error of the reader
 * counts as no match. This is what the store's reads use. */
EDDY_EXPORT bool eddy_filter_matches(const eddy_filter *f, const eddy_event *ev);

#ifdef __cplusplus
}
#endif
#endif
