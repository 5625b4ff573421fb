/* SPDX-License-Identifier: BSD-3-Clause */
/* Subjects and patterns.
 *
 * A subject is one or more dot-separated tokens; a token is non-empty and made of printable
 * ASCII other than space, '.', '*' and '>' (at most EDDY__SUBJECT_MAX bytes in all). A
 * pattern is the same, except that a token may be '*' (exactly one token) and the last token
 * may be '>' (one or more trailing tokens). */
#ifndef EDDY_SRC_SUBJECT_H
#define EDDY_SRC_SUBJECT_H

#include <stdbool.h>

#include "eddy/status.h"

#define EDDY__SUBJECT_MAX 512

eddy_status eddy__subject_check(const char *subject, eddy_error *err); /* INVALID_SUBJECT */
eddy_status eddy__pattern_check(const char *pattern, eddy_error *err); /* INVALID_PATTERN */
/* True when a pattern has no wildcard, i.e. it names exactly one subject. */
bool eddy__pattern_is_literal(const char *pattern);
/* True when the valid subject matches the valid pattern. */
bool eddy__pattern_match(const char *pattern, const char *subject);
/* True when some subject matches both valid patterns (decided exactly for '*' and '>'). */
bool eddy__pattern_overlap(const char *a, const char *b);

#endif
