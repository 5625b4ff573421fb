/* SPDX-License-Identifier: BSD-3-Clause */
/* The RESP pre-scanner; see resp_scan.h.
 *
 * It follows RESP's framing only: every element starts a line with its type byte; a bulk's
 * header gives how many bytes follow (and a CRLF); an aggregate's header how many elements.
 * The headers of bulks and aggregates are held (at most 31 bytes) until their CRLF, then
 * passed on or, for a bulk to skip, replaced by the marker; everything else is passed on in
 * runs as it comes. The stack of open aggregates only serves the sums: framing never depends
 * on it, so a stack that overflows (deeper than EDDY__RESP_SCAN_DEPTH) only ends the sums. */
#include "util/resp_scan.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { M_START, M_LINE, M_HDR, M_PASS, M_SKIP };

void eddy__resp_scan_init(eddy__resp_scan *sc) { memset(sc, 0, sizeof(*sc)); }

static bool feed(redisReader *rd, const char *p, size_t n) {
    return n == 0 || redisReaderFeed(rd, p, n) == REDIS_OK;
}

static bool is_bulk(char t) { return t == '$' || t == '=' || t == '!'; }
static bool is_aggregate(char t) {
    return t == '*' || t == '%' || t == '~' || t == '>' || t == '|';
}

/* An element ended: the aggregates it completes end too. */
static void complete(eddy__resp_scan *sc) {
    while (sc->depth > 0) {
        if (sc->depth > EDDY__RESP_SCAN_DEPTH)
            return; /* untracked: see above */
        if (--sc->stack[sc->depth - 1].elems > 0)
            return;
        sc->depth--;
    }
}

static long long header_value(const eddy__resp_scan *sc, bool *ok) {
    /* hdr: type byte, digits (maybe '-'), "\r\n" */
    char num[32];
    size_t n = sc->nhdr >= 3 ? sc->nhdr - 3 : 0;
    memcpy(num, sc->hdr + 1, n);
    num[n] = '\0';
    char *end;
    long long v = strtoll(num, &end, 10);
    *ok = n > 0 && *end == '\0';
    return v;
}

/* A complete header in sc->hdr: passed on, or replaced by a marker. */
static bool header_done(eddy__resp_scan *sc, redisReader *rd, size_t limit) {
    bool ok;
    long long v = header_value(sc, &ok);
    char t = sc->hdr[0];
    if (!ok) { /* not RESP we follow: the reader says what is wrong */
        sc->mode = M_START;
        return feed(rd, sc->hdr, sc->nhdr);
    }
    if (is_aggregate(t)) {
        if (!feed(rd, sc->hdr, sc->nhdr))
            return false;
        sc->mode = M_START;
        if (v <= 0) {
            complete(sc);
        } else if (sc->depth++ < EDDY__RESP_SCAN_DEPTH) {
            sc->stack[sc->depth - 1].elems = (t == '%' || t == '|') ? 2 * v : v;
            sc->stack[sc->depth - 1].bulks = 0;
        }
        return true;
    }
    /* a bulk */
    if (v < 0) {
        sc->mode = M_START;
        if (!feed(rd, sc->hdr, sc->nhdr))
            return false;
        complete(sc);
        return true;
    }
    unsigned long long len = (unsigned long long)v;
    bool summed = sc->depth >= 3 && sc->depth <= EDDY__RESP_SCAN_DEPTH;
    unsigned long long *sum = summed ? &sc->stack[sc->depth - 1].bulks : NULL;
    unsigned long long cap = (unsigned long long)limit > ULLONG_MAX - EDDY__RESP_SCAN_SLACK
                                 ? ULLONG_MAX
                                 : (unsigned long long)limit + EDDY__RESP_SCAN_SLACK;
    bool skip = len > limit || (sum && (len > cap || *sum > cap - len));
    sc->left = len + 2;
    if (!skip) {
        if (sum)
            *sum += len;
        sc->mode = M_PASS;
        return feed(rd, sc->hdr, sc->nhdr);
    }
    char marker[96], value[64];
    int vn = snprintf(value, sizeof(value), "%s%llu", "", len);
    size_t mlen = EDDY__SKIPPED_PREFIX_LEN + (size_t)vn;
    int hn = snprintf(marker, sizeof(marker), "$%zu\r\n", mlen);
    memcpy(marker + hn, EDDY__SKIPPED_PREFIX, EDDY__SKIPPED_PREFIX_LEN);
    memcpy(marker + hn + EDDY__SKIPPED_PREFIX_LEN, value, (size_t)vn);
    memcpy(marker + hn + mlen, "\r\n", 2);
    if (sum)
        *sum += mlen;
    sc->skipped++;
    sc->mode = M_SKIP;
    return feed(rd, marker, (size_t)hn + mlen + 2);
}

eddy_status eddy__resp_scan_feed(eddy__resp_scan *sc, redisReader *rd, const char *buf, size_t n,
                                 size_t limit) {
    const char *p = buf, *end = buf + n;
    while (p < end) {
        switch (sc->mode) {
        case M_START:
            if (is_bulk(*p) || is_aggregate(*p)) {
                sc->mode = M_HDR;
                sc->nhdr = 0;
            } else {
                sc->mode = M_LINE;
            }
            break;
        case M_LINE: { /* a line passed on as it is, to its '\n' */
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            const char *to = nl ? nl + 1 : end;
            if (!feed(rd, p, (size_t)(to - p)))
                return EDDY_ERR_NOMEM;
            p = to;
            if (nl) {
                sc->mode = M_START;
                complete(sc);
            }
            break;
        }
        case M_HDR:
            while (p < end && sc->nhdr < sizeof(sc->hdr) && *p != '\n')
                sc->hdr[sc->nhdr++] = *p++;
            if (p < end && *p == '\n' && sc->nhdr < sizeof(sc->hdr)) {
                sc->hdr[sc->nhdr++] = *p++;
                if (!header_done(sc, rd, limit))
                    return EDDY_ERR_NOMEM;
            } else if (sc->nhdr == sizeof(sc->hdr)) { /* no header this long: not ours */
                if (!feed(rd, sc->hdr, sc->nhdr))
                    return EDDY_ERR_NOMEM;
                sc->mode = M_LINE;
            }
            break;
        case M_PASS:
        case M_SKIP: {
            size_t take = (size_t)(end - p) < sc->left ? (size_t)(end - p) : (size_t)sc->left;
            if (sc->mode == M_PASS && !feed(rd, p, take))
                return EDDY_ERR_NOMEM;
            p += take;
            sc->left -= take;
            if (sc->left == 0) {
                sc->mode = M_START;
                complete(sc);
            }
            break;
        }
        default:
            return EDDY_ERR_PROTOCOL;
        }
    }
    return EDDY_OK;
}

size_t eddy__resp_scan_held(const eddy__resp_scan *sc, const char **bytes) {
    *bytes = sc->hdr;
    return sc->mode == M_HDR ? sc->nhdr : 0;
}

bool eddy__resp_skipped(const char *v, size_t len, unsigned long long *size) {
    if (!v || len <= EDDY__SKIPPED_PREFIX_LEN || len > EDDY__SKIPPED_PREFIX_LEN + 20 ||
        memcmp(v, EDDY__SKIPPED_PREFIX, EDDY__SKIPPED_PREFIX_LEN) != 0)
        return false;
    unsigned long long n = 0;
    for (size_t i = EDDY__SKIPPED_PREFIX_LEN; i < len; i++) {
        if (v[i] < '0' || v[i] > '9')
            return false;
        n = n * 10 + (unsigned long long)(v[i] - '0');
    }
    if (size)
        *size = n;
    return true;
}
