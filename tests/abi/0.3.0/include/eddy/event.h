/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * eddy — CloudEvents v1.0 events.
 *
 * An eddy_event is an opaque, owned CloudEvent: required attributes id, source, specversion
 * (always "1.0") and type; optional subject, time, datacontenttype and dataschema; extension
 * attributes; and binary-safe data. Setters copy their input. Validation names the first bad
 * attribute in the eddy_error detail.
 *
 * Thread: an event is not locked; use one from one thread at a time, or share it read-only.
 */
#ifndef EDDY_EVENT_H
#define EDDY_EVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "eddy/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct eddy_event eddy_event;

/** Longest extension attribute name eddy accepts. The CloudEvents spec says a name SHOULD NOT
 * exceed 20 characters; other producers' events carry longer ones, so eddy accepts them. */
#define EDDY_EXTENSION_NAME_MAX 255
/** The length the CloudEvents spec recommends an extension name not to exceed. */
#define EDDY_EXTENSION_NAME_RECOMMENDED 20

/** The CloudEvents type of an extension attribute's value. The value is always held as its
 * canonical string (Integer: decimal; Boolean: "true"/"false"; Binary: base64; Timestamp:
 * RFC 3339), so eddy_event_extension reads any of them as text; the type travels with it
 * through a stream entry and the JSON format (docs/wire-format.md). */
typedef enum eddy_ext_type {
    EDDY_EXT_STRING = 0,
    EDDY_EXT_BOOLEAN,
    EDDY_EXT_INTEGER, /**< 32-bit signed, as CloudEvents defines Integer */
    EDDY_EXT_BINARY,
    EDDY_EXT_URI,
    EDDY_EXT_URI_REF,
    EDDY_EXT_TIMESTAMP
} eddy_ext_type;

/** A new empty event with specversion "1.0". Ownership: caller frees with eddy_event_free.
 * Returns NULL only when out of memory. */
EDDY_EXPORT eddy_event *eddy_event_new(void);

/** A deep copy. Ownership: caller frees the copy. NULL when out of memory or ev is NULL. */
EDDY_EXPORT eddy_event *eddy_event_dup(const eddy_event *ev);

/** Frees the event and everything it owns. NULL is a no-op. */
EDDY_EXPORT void eddy_event_free(eddy_event *ev);

/* Setters copy `value`; NULL clears an optional attribute. They check only what can be
 * checked alone (no NUL bytes, lengths); eddy_event_validate checks the whole event, including
 * the CloudEvents String type's rules on every attribute. */
EDDY_EXPORT eddy_status eddy_event_set_id(eddy_event *ev, const char *value);
EDDY_EXPORT eddy_status eddy_event_set_source(eddy_event *ev, const char *value);
EDDY_EXPORT eddy_status eddy_event_set_type(eddy_event *ev, const char *value);
EDDY_EXPORT eddy_status eddy_event_set_subject(eddy_event *ev, const char *value);
/** RFC 3339 timestamp, e.g. "2026-11-30T02:11:20Z". */
EDDY_EXPORT eddy_status eddy_event_set_time(eddy_event *ev, const char *value);
EDDY_EXPORT eddy_status eddy_event_set_datacontenttype(eddy_event *ev, const char *value);
EDDY_EXPORT eddy_status eddy_event_set_dataschema(eddy_event *ev, const char *value);

/* Getters return a pointer the event owns, valid until the attribute changes or the event
 * is freed; NULL when unset. specversion is always "1.0". */
EDDY_EXPORT const char *eddy_event_id(const eddy_event *ev);
EDDY_EXPORT const char *eddy_event_source(const eddy_event *ev);
EDDY_EXPORT const char *eddy_event_specversion(const eddy_event *ev);
EDDY_EXPORT const char *eddy_event_type(const eddy_event *ev);
EDDY_EXPORT const char *eddy_event_subject(const eddy_event *ev);
EDDY_EXPORT const char *eddy_event_time(const eddy_event *ev);
EDDY_EXPORT const char *eddy_event_datacontenttype(const eddy_event *ev);
EDDY_EXPORT const char *eddy_event_dataschema(const eddy_event *ev);

/** Sets (or with value NULL removes) an extension attribute of type String. The name must be 1
 * to EDDY_EXTENSION_NAME_MAX characters of a-z and 0-9 and not a core attribute name or "data";
 * otherwise EDDY_ERR_INVALID_EVENT naming it. Both strings are copied. */
EDDY_EXPORT eddy_status eddy_event_set_extension(eddy_event *ev, const char *name,
                                                 const char *value, eddy_error *err);
/** The extension's value, owned by the event, or NULL when it is not set. */
EDDY_EXPORT const char *eddy_event_extension(const eddy_event *ev, const char *name);
/** Number of extensions, and the i-th in insertion order (name and value owned by the event). */
EDDY_EXPORT size_t eddy_event_extension_count(const eddy_event *ev);
EDDY_EXPORT eddy_status eddy_event_extension_at(const eddy_event *ev, size_t i, const char **name,
                                                const char **value);

/** Sets an extension of the given type from its canonical text (see eddy_ext_type);
 * EDDY_ERR_INVALID_EVENT naming the extension when the text is not a value of the type, and
 * the name rules of eddy_event_set_extension. value NULL removes it. Ownership: copied. */
EDDY_EXPORT eddy_status eddy_event_set_ext_typed(eddy_event *ev, const char *name,
                                                 eddy_ext_type type, const char *value,
                                                 eddy_error *err);
/** Typed setters: an Integer, a Boolean, Binary bytes (held as base64). Errors as
 * eddy_event_set_extension, EDDY_ERR_NOMEM leaving the event unchanged. Ownership: copied.
 * Thread: the event is being changed. */
EDDY_EXPORT eddy_status eddy_event_set_ext_int(eddy_event *ev, const char *name, int32_t value,
                                               eddy_error *err);
EDDY_EXPORT eddy_status eddy_event_set_ext_bool(eddy_event *ev, const char *name, bool value,
                                                eddy_error *err);
EDDY_EXPORT eddy_status eddy_event_set_ext_binary(eddy_event *ev, const char *name,
                                                  const void *bytes, size_t len, eddy_error *err);
/** The extension's type: EDDY_OK, or EDDY_ERR_NOT_FOUND when it is not set. Thread: any, on an
 * event no one is changing (as every getter here). */
EDDY_EXPORT eddy_status eddy_event_ext_type(const eddy_event *ev, const char *name,
                                            eddy_ext_type *type);
/** The i-th extension's type (insertion order); EDDY_ERR_INVALID_ARGUMENT past the end. */
EDDY_EXPORT eddy_status eddy_event_extension_type_at(const eddy_event *ev, size_t i,
                                                     eddy_ext_type *type);
/** Typed getters: EDDY_ERR_NOT_FOUND when unset, EDDY_ERR_INVALID_ARGUMENT when the extension
 * has another type. Ownership: Binary's *bytes is the caller's (free), with a NUL past *len;
 * EDDY_ERR_NOMEM when it cannot be allocated. */
EDDY_EXPORT eddy_status eddy_event_ext_int(const eddy_event *ev, const char *name, int32_t *value);
EDDY_EXPORT eddy_status eddy_event_ext_bool(const eddy_event *ev, const char *name, bool *value);
EDDY_EXPORT eddy_status eddy_event_ext_binary(const eddy_event *ev, const char *name, void **bytes,
                                              size_t *len);
/** The CloudEvents name of a type ("Integer", "URI-reference", ...); never NULL. */
EDDY_EXPORT const char *eddy_ext_type_name(eddy_ext_type type);

/** Copies `len` bytes of data (may contain NUL; data NULL with len 0 clears it). */
EDDY_EXPORT eddy_status eddy_event_set_data(eddy_event *ev, const void *data, size_t len);
/** Data owned by the event, and its length; NULL with *len 0 when there is none. */
EDDY_EXPORT const void *eddy_event_data(const eddy_event *ev, size_t *len);

/* ---- builders -------------------------------------------------------------------------- */

/** Size of a UUID's text with its NUL. */
#define EDDY_UUID_SIZE 37

/** Writes a fresh UUIDv7 (RFC 9562: the Unix time in ms, then random bits) as 36 lowercase
 * characters with hyphens and a NUL. Ids written later by one process sort after earlier ones,
 * within the same millisecond too (a counter in the random part). Thread: any. */
EDDY_EXPORT void eddy_uuid7(char out[EDDY_UUID_SIZE]);

/** A new event with a fresh UUIDv7 id (eddy_uuid7), the given source and type, and the
 * current time. EDDY_ERR_INVALID_ARGUMENT when source or type is NULL, EDDY_ERR_INVALID_EVENT
 * when source is not a URI reference or type is empty, or either is not a CloudEvents String
 * (see eddy_event_validate). Ownership: on EDDY_OK *out is the
 * caller's (eddy_event_free); the strings are copied. Thread: any. The buses' own builders
 * (eddy_bus_new_event, eddy_rbus_new_event) take the source from their settings. */
EDDY_EXPORT eddy_status eddy_event_create(const char *source, const char *type, eddy_event **out,
                                          eddy_error *err);

/* ---- W3C trace context ----------------------------------------------------------------- */

/** The Distributed Tracing extension's attributes: a W3C traceparent
 * ("00-<32 hex trace-id>-<16 hex parent-id>-<2 hex flags>", lowercase, ids not all zero) and
 * its tracestate (up to 32 "key=value" members, 512 characters). eddy_event_set_extension
 * refuses a malformed value of either with EDDY_ERR_INVALID_EVENT saying what is wrong, and
 * publish and append refuse an event carrying one; an event read from a stream keeps what its
 * producer wrote (a receiver ignores a bad context rather than refusing the message). */
#define EDDY_TRACEPARENT "traceparent"
#define EDDY_TRACESTATE "tracestate"

/** Checks a traceparent value: EDDY_OK, or EDDY_ERR_INVALID_EVENT naming the field at fault
 * (EDDY_ERR_INVALID_ARGUMENT for NULL). A version above 00 (never ff) may carry more fields
 * after the four, as the specification allows. Thread: any. */
EDDY_EXPORT eddy_status eddy_traceparent_check(const char *value, eddy_error *err);
/** Checks a tracestate value in the same way. */
EDDY_EXPORT eddy_status eddy_tracestate_check(const char *value, eddy_error *err);

/** Puts dst in src's trace: src's traceparent, and its tracestate when that is valid, replace
 * dst's (dst's tracestate goes when src has none). Nothing changes when src carries no
 * traceparent (EDDY_OK) or a malformed one (EDDY_ERR_INVALID_EVENT), or on EDDY_ERR_NOMEM.
 * For a handler that publishes on behalf of the event it handles:
 * eddy_event_continue_trace(out, eddy_delivery_event(d), &err). A responder's reply gets its
 * request's context without this (see eddy_responder_fn). Thread: dst is being changed. */
EDDY_EXPORT eddy_status eddy_event_continue_trace(eddy_event *dst, const eddy_event *src,
                                                  eddy_error *err);

/** Checks the whole event against CloudEvents v1.0: every attribute and extension value a
 * CloudEvents String (valid UTF-8; no control characters U+0000-U+001F, U+007F-U+009F; no
 * noncharacters; no surrogates), with the byte position of the first bad one in the detail;
 * typed extensions canonical values of their type; required attributes present and
 * non-empty, time in RFC 3339, datacontenttype of the form type/subtype, dataschema an
 * absolute URI, source a URI reference. EDDY_ERR_INVALID_EVENT with the attribute's name
 * in err->detail otherwise. Thread: any, on an event no one is changing. */
EDDY_EXPORT eddy_status eddy_event_validate(const eddy_event *ev, eddy_error *err);

/* ---- the CloudEvents JSON event format (structured mode) -------------------------------- */

/** The media types of the JSON event format and its batches. */
#define EDDY_CLOUDEVENTS_JSON "application/cloudevents+json"
#define EDDY_CLOUDEVENTS_BATCH_JSON "application/cloudevents-batch+json"

/** Reads one event in the CloudEvents JSON format (json[0..len), UTF-8, need not be
 * NUL-terminated). Attributes are JSON strings (null: unset); an extension that is a JSON
 * number is an Integer, true/false a Boolean, a string a String. `data_base64` is binary data;
 * `data` is the data's JSON text (kept as written, without whitespace) when datacontenttype is
 * JSON (application/json, any type ending in +json) or absent, and must be a JSON string,
 * taken as the data's bytes, otherwise. EDDY_ERR_MALFORMED for text that is not strict JSON
 * (the detail gives the byte offset), EDDY_ERR_INVALID_EVENT naming the attribute for a
 * missing required attribute, a wrong JSON type, both data and data_base64, a duplicate
 * member, or an event eddy_event_validate refuses. Ownership: on EDDY_OK *out is the caller's.
 * Thread: any. */
EDDY_EXPORT eddy_status eddy_event_from_json(const char *json, size_t len, eddy_event **out,
                                             eddy_error *err);
/** Writes a valid event as one line of the JSON format: typed extensions as their JSON type
 * (Integer a number, Boolean true/false, others strings); data inline when datacontenttype is
 * JSON or absent and the data is one JSON value, as a string when the content type is text
 * (text/ types, XML and a few other textual types) and the data is UTF-8, and otherwise as
 * `data_base64`. EDDY_ERR_INVALID_EVENT when validation fails. Ownership: *out is the
 * caller's (free), NUL-terminated, *len (may be NULL) its length. Thread: any. */
EDDY_EXPORT eddy_status eddy_event_to_json(const eddy_event *ev, char **out, size_t *len,
                                           eddy_error *err);
/** A JSON batch (an array of events, possibly empty). On EDDY_OK *events is a malloc'd array
 * of *count events: free each with eddy_event_free and the array with free. A refusal names
 * the index ("event 2: ..."); nothing is left allocated then. Thread: any. */
EDDY_EXPORT eddy_status eddy_event_batch_from_json(const char *json, size_t len,
                                                   eddy_event ***events, size_t *count,
                                                   eddy_error *err);
/** Writes count events as a JSON batch on one line. Ownership, errors and threads as
 * eddy_event_to_json; a refusal names the index. */
EDDY_EXPORT eddy_status eddy_event_batch_to_json(const eddy_event *const *events, size_t count,
                                                 char **out, size_t *len, eddy_error *err);

/** Approximate encoded size in bytes (attributes plus data), as checked against limits. */
EDDY_EXPORT size_t eddy_event_size(const eddy_event *ev);

#ifdef __cplusplus
}
#endif
#endif
