/* SPDX-License-Identifier: BSD-3-Clause */
/* Redis's number parsers, reproduced rule for rule: whether "007", " 5", "+1", "-0", "0x10" or
 * "(" is accepted decides which commands fail, and the memory engine must fail the same ones.
 * Arguments are binary (pointer and length, not NUL-terminated), so anything handed to strtod
 * is first copied into a terminated buffer. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "memory/util.h"

#define LONG_STR_SIZE 21

bool eddy__mparse_ll(const char *s, size_t slen, long long *out) {
    const char *p = s;
    size_t plen = 0;
    bool negative = false;
    unsigned long long v;

    if (slen == 0 || slen >= LONG_STR_SIZE)
        return false;
    if (slen == 1 && p[0] == '0') {
        *out = 0;
        return true;
    }
    if (p[0] == '-') {
        negative = true;
        p++;
        plen++;
        if (plen == slen)
            return false;
    }
    if (p[0] >= '1' && p[0] <= '9') {
        v = (unsigned long long)(p[0] - '0');
        p++;
        plen++;
    } else {
        return false;
    }
    while (plen < slen && p[0] >= '0' && p[0] <= '9') {
        if (v > ULLONG_MAX / 10)
            return false;
        v *= 10;
        if (v > ULLONG_MAX - (unsigned long long)(p[0] - '0'))
            return false;
        v += (unsigned long long)(p[0] - '0');
        p++;
        plen++;
    }
    if (plen < slen)
        return false;
    if (negative) {
        if (v > (unsigned long long)(-(LLONG_MIN + 1)) + 1)
            return false;
        *out = v == (unsigned long long)LLONG_MAX + 1 ? LLONG_MIN : -(long long)v;
    } else {
        if (v > LLONG_MAX)
            return false;
        *out = (long long)v;
    }
    return true;
}

/* Copies into buf (or a heap buffer for long input) so strtod sees a terminated string. */
static char *terminated(const char *s, size_t len, char *buf, size_t bufsize) {
    if (len < bufsize) {
        memcpy(buf, s, len);
        buf[len] = '\0';
        return buf;
    }
    return eddy__mem_memdup(s, len);
}

bool eddy__mparse_double(const char *s, size_t len, double *out) {
    char buf[128];
    if (len == 0 || isspace((unsigned char)s[0]))
        return false;
    char *str = terminated(s, len, buf, sizeof(buf));
    if (!str)
        return false;
    char *end;
    errno = 0;
    double v = strtod(str, &end);
    bool ok = (size_t)(end - str) == len &&
              !(errno == ERANGE && (v == HUGE_VAL || v == -HUGE_VAL || fpclassify(v) == FP_ZERO)) &&
              !isnan(v);
    if (str != buf)
        eddy__mem_free(str);
    if (ok)
        *out = v;
    return ok;
}

bool eddy__mparse_score_bound(const char *s, size_t len, double *out, bool *exclusive) {
    char buf[128];
    *exclusive = len > 0 && s[0] == '(';
    if (*exclusive) {
        s++;
        len--;
    }
    char *str = terminated(s, len, buf, sizeof(buf));
    if (!str)
        return false;
    char *end;
    double v = strtod(str, &end); /* Redis accepts "" (0) and leading spaces here */
    bool ok = end[0] == '\0' && !isnan(v);
    if (str != buf)
        eddy__mem_free(str);
    if (ok)
        *out = v;
    return ok;
}

bool eddy__marg_is(const char *arg, size_t len, const char *word) {
    size_t wlen = strlen(word);
    if (len != wlen)
        return false;
    for (size_t i = 0; i < len; i++)
        if (tolower((unsigned char)arg[i]) != tolower((unsigned char)word[i]))
            return false;
    return true;
}
