/* SPDX-License-Identifier: BSD-3-Clause */
/* A small strict JSON reader (RFC 8259) for the documents the library reads (CloudEvents in the
 * JSON format): the library does not depend on a JSON library. It is a pull reader over bytes:
 * the caller asks for what it expects next (a string, a value, a ',' or '}'), so nothing is
 * built that is not kept. Strict: no comments, no trailing commas, no leading zeros, no control
 * characters in strings, only well-formed UTF-8, no lone surrogate escapes, nesting at most
 * EDDY__JR_MAX_DEPTH deep, and nothing but whitespace after the document. The first failure is
 * kept with its byte offset; every later call then fails too. */
#ifndef EDDY_SRC_JSON_READ_H
#define EDDY_SRC_JSON_READ_H

#include <stdbool.h>
#include <stddef.h>

#define EDDY__JR_MAX_DEPTH 64

typedef struct eddy__jr {
    const char *s;
    size_t len, pos;
    bool failed, nomem;
    size_t errpos;
    char why[80];
} eddy__jr;

void eddy__jr_init(eddy__jr *r, const char *s, size_t len);
/* Records a failure at the current position (the first one wins); returns false. */
bool eddy__jr_fail(eddy__jr *r, const char *why);
/* After whitespace: the next byte ('"', '{', '[', 't', 'f', 'n', '-' or a digit for the start of
 * a value), or 0 at the end or after a failure. Consumes only the whitespace. */
char eddy__jr_peek(eddy__jr *r);
/* After whitespace, consumes c when it is next; false (no failure recorded) otherwise. */
bool eddy__jr_take(eddy__jr *r, char c);
/* Like take, but a missing c is a failure: "expected 'c'". */
bool eddy__jr_expect(eddy__jr *r, char c);
/* A string: *out is malloc'd, unescaped, NUL-terminated (it may contain NUL bytes, counted in
 * *len). */
bool eddy__jr_string(eddy__jr *r, char **out, size_t *len);
/* Skips (and checks) any one value; [*start, *end) is its text in the input. */
bool eddy__jr_value(eddy__jr *r, size_t *start, size_t *end);
/* True when only whitespace remains (a failure recorded otherwise). */
bool eddy__jr_end(eddy__jr *r);
/* Checks that s[0..len) is exactly one JSON value (surrounding whitespace allowed). */
bool eddy__json_valid(const char *s, size_t len);
/* Copies the valid JSON text s[0..len) to out without whitespace outside strings; returns the
 * length written (out needs len bytes at most). */
size_t eddy__json_minify(const char *s, size_t len, char *out);

#endif
