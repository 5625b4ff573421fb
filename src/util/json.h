/* SPDX-License-Identifier: BSD-3-Clause */
/* A small JSON writer into a growing buffer, for the documents the library itself writes (stats):
 * the library does not depend on a JSON library. The writer places the commas: each open object
 * or array remembers whether it has a member yet. An allocation failure sticks, so a document is
 * written without checks and its failure is seen once, at eddy__json_finish. Strings are escaped
 * and bytes that are not UTF-8 become U+FFFD, so the output is always valid JSON. */
#ifndef EDDY_SRC_JSON_H
#define EDDY_SRC_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EDDY__JSON_MAX_DEPTH 32

typedef struct eddy__json {
    char *buf;
    size_t len, cap;
    bool failed; /* out of memory, or nested too deep */
    unsigned depth;
    bool has_member[EDDY__JSON_MAX_DEPTH + 1];
    bool is_array[EDDY__JSON_MAX_DEPTH + 1];
} eddy__json;

void eddy__json_init(eddy__json *j);
/* Every value takes a key: the member's name inside an object, NULL in an array or at the top. */
void eddy__json_object(eddy__json *j, const char *key);
void eddy__json_array(eddy__json *j, const char *key);
/* Closes the innermost object or array. */
void eddy__json_end(eddy__json *j);
/* A string (NULL writes null). */
void eddy__json_str(eddy__json *j, const char *key, const char *s);
void eddy__json_u64(eddy__json *j, const char *key, uint64_t v);
void eddy__json_i64(eddy__json *j, const char *key, long long v);
void eddy__json_bool(eddy__json *j, const char *key, bool v);
void eddy__json_null(eddy__json *j, const char *key);
/* A value given as JSON text the caller has checked (eddy__json_valid), copied as it is. */
void eddy__json_raw(eddy__json *j, const char *key, const char *text, size_t len);
/* The NUL-terminated document, the caller's (free), or NULL after a failure (nothing to free).
 * The writer is empty afterwards. */
char *eddy__json_finish(eddy__json *j);

#endif
