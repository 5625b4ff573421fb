/* SPDX-License-Identifier: BSD-3-Clause */
/* One CloudEvent as one Redis stream entry: a field per attribute, data as raw bytes.
 *
 * Fields: "specversion", "id", "source", "type", optional "subject", "time",
 * "datacontenttype", "dataschema", "data", and one field per extension named "x-<name>".
 * Fields whose name starts with '_' are eddy's own metadata (request/reply, dead letters)
 * and are not attributes; the decoder skips them and the caller reads them itself.
 * Decoding takes the entry's field/value pairs as bytes, so it is independent of hiredis and
 * can be fuzzed directly. */
#ifndef EDDY_SRC_ENTRY_H
#define EDDY_SRC_ENTRY_H

#include <stddef.h>

#include "eddy/event.h"
#include "eddy/status.h"
#include "events/event_internal.h"
#include "util/cmd.h"

/* Reasons an entry is dead-lettered, written as the dead-letter entry's "reason" field. */
#define EDDY_REASON_MALFORMED "malformed"           /* missing/duplicate fields, bad attribute */
#define EDDY_REASON_TOO_LARGE "too_large"           /* bigger than the bus's max event size */
#define EDDY_REASON_MAX_DELIVERIES "max_deliveries" /* failed max_deliveries times */

/* Appends the event's fields to cmd (after the caller's "XADD key *" prefix). The event must
 * already be valid. */
eddy_status eddy__entry_encode(const eddy_event *ev, eddy__cmd *cmd);

/* Decodes an entry. fv[0..nfv) alternate field, value (nfv even); fvlen gives their lengths.
 * Refuses, without allocating more than the entry's own size: an odd count, an entry whose
 * bytes (field names and values, '_' fields not counted: they are never copied) exceed
 * max_size (EDDY_ERR_TOO_LARGE; the same measure as eddy_event_size), a missing required attribute,
 * a duplicate field, a field that is neither an attribute, "data", "x-<valid name>" nor
 * '_'-prefixed, attribute text with NUL bytes, and an event that fails eddy_event_validate (all
 * EDDY_ERR_MALFORMED, naming the field in err). The event is one allocation (struct and
 * strings together). Ownership: *out is the caller's (eddy_event_free). */
eddy_status eddy__entry_decode(const char *const *fv, const size_t *fvlen, size_t nfv,
                               size_t max_size, eddy_event **out, eddy_error *err);

/* The same checks and refusals as eddy__entry_decode, but the event is a view: its strings are
 * the entry's own bytes and its struct is *view, so a decode allocates nothing. It falls back to
 * one packed allocation (kept in view->owned) when a string is not followed by a NUL where it
 * lies (hiredis replies always are) or the entry has more than EDDY__VIEW_EXT extensions. So
 * the byte just past each field and value (fv[i][fvlen[i]]) must be readable, as it is in a
 * redisReply (hiredis allocates every string with its NUL).
 * Lifetime: *out is valid until the first of
 *   - eddy__event_view_release(view), which the caller must call once per successful decode
 *     (it frees the fallback copy, if any; after a failed decode there is nothing to release),
 *   - the end of *view's storage (a stack variable, a slot in a delivery or an arena),
 *   - the freeing of the bytes fv points to (the redisReply the fields came from).
 * fv and fvlen themselves may be discarded right after the call. Whoever must keep the event
 * longer keeps eddy_event_dup(*out) (one allocation). *out must not be passed to
 * eddy_event_free (it ignores a view) or to a setter.
 * Thread: a view is read-only; any thread may read it while it is valid. */
eddy_status eddy__entry_decode_view(const char *const *fv, const size_t *fvlen, size_t nfv,
                                    size_t max_size, eddy__event_view *view, const eddy_event **out,
                                    eddy_error *err);

/* Looks up a field's value among fv pairs; NULL if absent. */
const char *eddy__entry_field(const char *const *fv, const size_t *fvlen, size_t nfv,
                              const char *name, size_t *len);

#endif
