/* SPDX-License-Identifier: BSD-3-Clause */
/* RFC 3339 timestamps as comparable instants, for time-range filters.
 *
 * Parsed without the C library's time functions: no locale, no timegm, no TZ. */
#ifndef EDDY_SRC_RFC3339_H
#define EDDY_SRC_RFC3339_H

#include <stdbool.h>
#include <stdint.h>

/* An instant: seconds since 1970-01-01T00:00:00Z and nanoseconds within the second. Ordered
 * by (sec, nsec). */
typedef struct eddy__instant {
    int64_t sec;
    int32_t nsec; /* 0 .. 999999999 */
} eddy__instant;

/* Parses full-date ('T' / 't' / ' ') partial-time [secfrac] offset, where offset is 'Z' / 'z'
 * or '+'/'-' hh:mm, into *out. Fractions longer than nine digits are truncated to the
 * nanosecond. A second of 60 (a leap second) counts as the first second of the next minute.
 * False (and *out untouched) when s is NULL or not such a timestamp. Thread: any. */
bool eddy__rfc3339_parse(const char *s, eddy__instant *out);

/* <0, 0 or >0 as a is before, at or after b. */
int eddy__instant_cmp(eddy__instant a, eddy__instant b);

#endif
