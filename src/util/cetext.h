/* SPDX-License-Identifier: BSD-3-Clause */
/* CloudEvents text rules shared by the event, its entry codec and its JSON format: the String
 * type's character rules (UTF-8 without control characters, noncharacters or surrogates), the
 * typed extension values' canonical string forms, and base64 (RFC 4648, padded). */
#ifndef EDDY_SRC_CETEXT_H
#define EDDY_SRC_CETEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "eddy/event.h"

/* Checks s[0..len) against the CloudEvents String type. Returns true, or false with *pos the
 * offset of the first bad byte and *why a static phrase ("control character U+000A", "not
 * UTF-8", ...), written into why[0..whysize). */
bool eddy__ce_string_ok(const char *s, size_t len, size_t *pos, char *why, size_t whysize);

/* Length of the well-formed UTF-8 sequence at s (n bytes left, n > 0) and its code point, or 0
 * when it is not one (overlong, out of range, surrogate, truncated). */
size_t eddy__utf8_decode(const unsigned char *s, size_t n, uint32_t *cp);

/* Base64 with padding. encode: a NUL-terminated malloc'd string, NULL on OOM. decode: true with
 * *out (malloc'd, one NUL past *len) on canonical input; false on bad input (*out NULL) or OOM
 * (*nomem set when given). */
char *eddy__base64_encode(const void *bytes, size_t len);
bool eddy__base64_decode(const char *s, size_t n, unsigned char **out, size_t *len, bool *nomem);
bool eddy__base64_ok(const char *s, size_t n);

/* True when the text is a canonical value of the type (Integer: a decimal int32 without
 * leading zeros or '+'; Boolean: true or false; Binary: base64; URI: absolute; URI-reference;
 * Timestamp: RFC 3339; String: any). */
bool eddy__ext_value_ok(eddy_ext_type type, const char *s);
/* Shared with event.c's attribute rules. */
bool eddy__uri_reference_ok(const char *s);
bool eddy__absolute_uri_ok(const char *s);
bool eddy__rfc3339_ok(const char *s);
/* The suffix a typed extension's entry field carries after "x-<name>" (":integer" ...; "" for
 * a String), the one statement of wire format 2's type names (entry.c, eddy_event_size). */
const char *eddy__ext_type_suffix(eddy_ext_type type);
/* Parses a canonical Integer value. */
bool eddy__ce_int_parse(const char *s, int32_t *out);

#endif
