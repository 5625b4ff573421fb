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

#include "cmd.h"
#include "eddy/event.h"
#include "eddy/status.h"

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
 * EDDY_ERR_MALFORMED, naming the field in err). Ownership: *out is the caller's. */
eddy_status eddy__entry_decode(const char *const *fv, const size_t *fvlen, size_t nfv,
                               size_t max_size, eddy_event **out, eddy_error *err);

/* Looks up a field's value among fv pairs; NULL if absent. */
const char *eddy__entry_field(const char *const *fv, const size_t *fvlen, size_t nfv,
                              const char *name, size_t *len);

#endif
