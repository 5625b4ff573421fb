/* SPDX-License-Identifier: BSD-3-Clause */
/* Subjects and patterns: validation, matching and overlap.
 *
 * Everything here walks the strings in place, token by token; nothing allocates, so the
 * functions are safe on any thread and on the error path. Matching and overlap assume inputs
 * that passed the checks (no empty tokens, '>' only as the last token), which is what lets
 * them decide token by token without backtracking. */
#include "events/subject.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "error.h"

/* Longest stretch of user text quoted into a detail; the rest is elided with "...", so a
 * 512-byte subject still leaves room for the explanation in the 256-byte detail. */
#define QUOTE_MAX 48

/* Copies s into buf for use in a detail, escaping bytes that are not printable ASCII, because
 * control characters are a reason for failing and would garble the message if quoted raw. */
static const char *quote(char *buf, size_t size, const char *s) {
    size_t n = 0;
    size_t i = 0;
    for (; s[i] && i < QUOTE_MAX && n + 5 < size; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f)
            buf[n++] = (char)c;
        else
            n += (size_t)snprintf(buf + n, size - n, "\\x%02x", c);
    }
    if (s[i] && n + 4 <= size) {
        memcpy(buf + n, "...", 3);
        n += 3;
    }
    buf[n] = '\0';
    return buf;
}

static bool is_star(const char *tok, size_t len) { return len == 1 && tok[0] == '*'; }
static bool is_gt(const char *tok, size_t len) { return len == 1 && tok[0] == '>'; }

/* One validator for both kinds, since a pattern is a subject that may also hold wildcard
 * tokens; `what` names the kind in the detail. */
static eddy_status check(const char *text, bool pattern, eddy_error *err) {
    const char *what = pattern ? "pattern" : "subject";
    eddy_status st = pattern ? EDDY_ERR_INVALID_PATTERN : EDDY_ERR_INVALID_SUBJECT;
    char q[QUOTE_MAX * 4 + 8];

    if (!text)
        return eddy__fail(err, st, "%s is NULL", what);
    size_t len = strlen(text);
    if (len == 0)
        return eddy__fail(err, st, "%s is empty", what);
    if (len > EDDY__SUBJECT_MAX)
        return eddy__fail(err, st, "%s '%s': %zu bytes, more than the %d allowed", what,
                          quote(q, sizeof(q), text), len, EDDY__SUBJECT_MAX);

    size_t start = 0; /* offset of the current token */
    for (size_t i = 0;; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == '.' || c == '\0') {
            size_t tlen = i - start;
            if (tlen == 0) {
                const char *where = start == 0  ? " (leading '.')"
                                    : c == '\0' ? " (trailing '.')"
                                                : "";
                return eddy__fail(err, st, "%s '%s': empty token at %zu%s", what,
                                  quote(q, sizeof(q), text), start, where);
            }
            if (pattern && is_gt(text + start, tlen) && c != '\0')
                return eddy__fail(err, st, "%s '%s': '>' at %zu must be the last token", what,
                                  quote(q, sizeof(q), text), start);
            if (c == '\0')
                return EDDY_OK;
            start = i + 1;
            continue;
        }
        if (c == '*' || c == '>') {
            if (!pattern)
                return eddy__fail(err, st,
                                  "subject '%s': wildcard '%c' at %zu (only patterns take "
                                  "wildcards)",
                                  quote(q, sizeof(q), text), c, i);
            /* A wildcard glued to text ("a*") is rejected rather than read as a literal, so
             * nobody mistakes it for a prefix match. */
            if (i != start || (text[i + 1] != '.' && text[i + 1] != '\0'))
                return eddy__fail(err, st, "pattern '%s': '%c' at %zu must be a whole token",
                                  quote(q, sizeof(q), text), c, i);
            continue;
        }
        if (c == ' ')
            return eddy__fail(err, st, "%s '%s': space at %zu", what, quote(q, sizeof(q), text), i);
        if (c < 0x20 || c >= 0x7f)
            return eddy__fail(err, st, "%s '%s': byte 0x%02x at %zu is not printable ASCII", what,
                              quote(q, sizeof(q), text), c, i);
    }
}

eddy_status eddy__subject_check(const char *subject, eddy_error *err) {
    return check(subject, false, err);
}

eddy_status eddy__pattern_check(const char *pattern, eddy_error *err) {
    return check(pattern, true, err);
}

bool eddy__pattern_is_literal(const char *pattern) {
    /* In a valid pattern '*' and '>' only occur as whole tokens, so any occurrence is a
     * wildcard. */
    return pattern && !strpbrk(pattern, "*>");
}

bool eddy__pattern_match(const char *pattern, const char *subject) {
    if (!pattern || !subject)
        return false;
    const char *p = pattern, *s = subject;
    for (;;) {
        /* Both sides have a current token here: valid inputs have no empty tokens. */
        size_t pl = strcspn(p, "."), sl = strcspn(s, ".");
        if (is_gt(p, pl))
            return true; /* s has at least this one token left */
        if (!is_star(p, pl) && (pl != sl || memcmp(p, s, pl) != 0))
            return false;
        p += pl;
        s += sl;
        if (*p == '\0' || *s == '\0')
            return *p == '\0' && *s == '\0';
        p++;
        s++;
    }
}

/* Two patterns overlap iff, walking them in step, every pair of tokens can be the same
 * concrete token (equal literals, or either is '*'), until either reaches '>' (which absorbs
 * whatever the other still needs, at least one token being present) or both end together.
 * Positions are independent because '*' may stand for any token, so no search is needed. */
bool eddy__pattern_overlap(const char *a, const char *b) {
    if (!a || !b)
        return false;
    for (;;) {
        size_t al = strcspn(a, "."), bl = strcspn(b, ".");
        if (is_gt(a, al) || is_gt(b, bl))
            return true;
        if (!is_star(a, al) && !is_star(b, bl) && (al != bl || memcmp(a, b, al) != 0))
            return false;
        a += al;
        b += bl;
        /* One pattern ending before the other fixes the subject's length below what the other
         * requires (its remaining token, even '>', needs at least one more). */
        if (*a == '\0' || *b == '\0')
            return *a == '\0' && *b == '\0';
        a++;
        b++;
    }
}
