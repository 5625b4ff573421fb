/* SPDX-License-Identifier: BSD-3-Clause */
/* Event internals shared by the codecs (entry.c, value.c): the event's layout, so a decoder can
 * build an event in one block or as a view over bytes it does not own, length-counted setters
 * that skip checks their callers already made, and safe rendering of untrusted bytes for error
 * detail. */
#ifndef EDDY_SRC_EVENT_INTERNAL_H
#define EDDY_SRC_EVENT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "eddy/event.h"

/* The core attributes, in the order the entry encoding writes them. */
enum eddy__attr {
    EDDY__A_ID,
    EDDY__A_SOURCE,
    EDDY__A_TYPE,
    EDDY__A_SUBJECT,
    EDDY__A_TIME,
    EDDY__A_DATACONTENTTYPE,
    EDDY__A_DATASCHEMA,
    EDDY__A_COUNT
};

/* An extension; in an event built piece by piece, name and value share one allocation that
 * starts at name. */
struct eddy__ext {
    char *name;
    char *value;
    eddy_ext_type type; /* value is the type's canonical text */
};

/* Every string is NUL-terminated without inner NUL bytes; data (NULL: none) has a NUL after its
 * datalen bytes. A pointer inside [fixed_lo, fixed_hi) is not an allocation of its own and is
 * never freed by itself: that range is the event's own block for a packed event (one
 * allocation, see eddy__event_packed_new), everything for a view (eddy__event_view), and empty
 * for an event built by the setters. */
struct eddy_event {
    char *attr[EDDY__A_COUNT];
    struct eddy__ext *ext;
    size_t next;
    size_t extcap;
    unsigned char *data;
    size_t datalen;
    uintptr_t fixed_lo, fixed_hi;
};

/* An event in one allocation: the struct, an extension array of `next` entries (ext, extcap
 * set, next 0) and `bytes` bytes for strings, which the caller copies in with
 * eddy__event_packed_put from *cursor on. eddy_event_free frees it; the setters work on it as
 * on any event. NULL on OOM or when the size overflows. */
eddy_event *eddy__event_packed_new(size_t next, size_t bytes, char **cursor);
/* Copies s[0..len) and a NUL to *cursor, advances it past them and returns the copy. */
char *eddy__event_packed_put(char **cursor, const char *s, size_t len);

/* Caller-owned storage for an event that borrows every string from bytes it does not own
 * (entry.h's eddy__entry_decode_view): no allocation for up to EDDY__VIEW_EXT extensions.
 * `owned` is a packed event used instead when the bytes cannot be borrowed; release frees it. */
#define EDDY__VIEW_EXT 8
typedef struct eddy__event_view {
    struct eddy_event ev;
    struct eddy__ext ext[EDDY__VIEW_EXT];
    eddy_event *owned;
} eddy__event_view;

/* Makes view->ev an empty event that owns nothing (eddy_event_free ignores it). */
eddy_event *eddy__event_view_init(eddy__event_view *view);
/* Frees what the view allocated (its fallback copy); the view may be initialised again. */
void eddy__event_view_release(eddy__event_view *view);

/* True when name[0..len) is 1..EDDY_EXTENSION_NAME_MAX of [a-z0-9] and not reserved. */
bool eddy__extension_name_ok(const char *name, size_t len);
/* Sets the core attribute called `attr` ("id", "source", "type", "subject", "time",
 * "datacontenttype", "dataschema") from value[0..len); value NULL clears it. NUL bytes inside
 * the value or an unknown attribute give EDDY_ERR_INVALID_ARGUMENT. */
eddy_status eddy__event_set_attr_n(eddy_event *ev, const char *attr, const char *value, size_t len);
/* Appends an extension without looking for one of the same name: the caller has checked the
 * name and ruled out duplicates (which makes decoding many extensions linear). */
eddy_status eddy__event_append_extension_n(eddy_event *ev, const char *name, size_t nlen,
                                           const char *value, size_t vlen);
/* Sets (value NULL: removes) up to 4 extensions of checked names together, or changes
 * nothing (EDDY_ERR_NOMEM). */
eddy_status eddy__event_set_extensions(eddy_event *ev, size_t n, const char *const *names,
                                       const char *const *values);
/* trace.c: the check of a traceparent or tracestate value (EDDY_OK for any other name), and
 * of an event's trace context as publish and append require it. */
eddy_status eddy__trace_check_value(const char *name, const char *value, eddy_error *err);
eddy_status eddy__event_check_trace(const eddy_event *ev, eddy_error *err);
/* event_build.c: eddy_event_create with the source of a bus's settings; without one
 * EDDY_ERR_INVALID_SPEC naming `what` (the call that needs it). */
eddy_status eddy__event_create_for(const char *source, const char *type, const char *what,
                                   eddy_event **out, eddy_error *err);
/* Replaces data and datacontenttype together, or changes neither. */
eddy_status eddy__event_set_data_typed(eddy_event *ev, const void *data, size_t len,
                                       const char *content_type);
/* Writes a printable, truncated rendering of bytes into buf for error detail: untrusted names
 * must not put control characters into logs. Returns buf. */
const char *eddy__printable(char *buf, size_t size, const char *bytes, size_t len);

#endif
