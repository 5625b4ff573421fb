/* Event internals shared by the codecs (entry.c, value.c): length-counted setters that skip
 * checks their callers already made, and safe rendering of untrusted bytes for error detail. */
#ifndef EDDY_SRC_EVENT_INTERNAL_H
#define EDDY_SRC_EVENT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "eddy/event.h"

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
/* Replaces data and datacontenttype together, or changes neither. */
eddy_status eddy__event_set_data_typed(eddy_event *ev, const void *data, size_t len,
                                       const char *content_type);
/* Writes a printable, truncated rendering of bytes into buf for error detail: untrusted names
 * must not put control characters into logs. Returns buf. */
const char *eddy__printable(char *buf, size_t size, const char *bytes, size_t len);

#endif
