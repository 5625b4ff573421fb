/* SPDX-License-Identifier: BSD-3-Clause */
/* The RESP pre-scanner; see resp_scan.h.
 *
 * It follows RESP's framing only: every element starts a line with its type byte; a bulk's
 * header gives how many bytes follow (and a CRLF); an aggregate's header how many elements.
 * The headers of bulks and aggregates are read (at most 31 bytes) to their CRLF, then passed
 * on or, for a bulk to skip, replaced by the marker; a header whose CRLF has not come yet is
 * held for the next call. Everything else is passed on as it came, in one run per call up to
 * a skip (one redisReaderFeed per page of entries, not one per header and bulk). The stack of open aggregates only serves the sums: framing never depends
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

/* What one call has not handed to the reader yet: the bytes from `from` on are passed on as
 * one run (one redisReaderFeed, not one per element), up to a bulk that is skipped or a
 * header held for the next call. `hdr_at` is where the current header began in this call's
 * bytes, NULL when it began in an earlier call (then its bytes are in sc->hdr only). */
typedef struct run {
    redisReader *rd;
    const char *from;
    const char *hdr_at;
} run;

/* Hands the reader the bytes of the run before `to`. */
static bool flush(run *r, const char *to) {
    bool ok = feed(r->rd, r->from, (size_t)(to - r->from));
    r->from = to;
    return ok;
}

/* The header just completed (it ends before p) goes on as it came: in the run when it began in
 * this call, else from sc->hdr. */
static bool pass_header(eddy__resp_scan *sc, run *r, const char *p) {
    if (r->hdr_at)
        return true;
    r->from = p;
    return feed(r->rd, sc->hdr, sc->nhdr);
}

/* A complete header in sc->hdr, ending before p: passed on, or replaced by a marker. */
static bool header_done(eddy__resp_scan *sc, run *r, const char *p, size_t limit) {
    bool ok;
    long long v = header_value(sc, &ok);
    char t = sc->hdr[0];
    if (!ok) { /* not RESP we follow: the reader says what is wrong */
        sc->mode = M_START;
        return pass_header(sc, r, p);
    }
    if (is_aggregate(t)) {
        sc->mode = M_START;
        if (v <= 0) {
            complete(sc);
        } else if (sc->depth++ < EDDY__RESP_SCAN_DEPTH) {
            sc->stack[sc->depth - 1].elems = (t == '%' || t == '|') ? 2 * v : v;
            sc->stack[sc->depth - 1].bulks = 0;
        }
        return pass_header(sc, r, p);
    }
    /* a bulk */
    if (v < 0) {
        sc->mode = M_START;
        complete(sc);
        return pass_header(sc, r, p);
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
        return pass_header(sc, r, p);
    }
    /* What came before the header goes on; the header and the bulk do not. */
    if (!flush(r, r->hdr_at ? r->hdr_at : r->from))
        return false;
    r->from = p;
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
    return feed(r->rd, marker, (size_t)hn + mlen + 2);
}

eddy_status eddy__resp_scan_feed(eddy__resp_scan *sc, redisReader *rd, const char *buf, size_t n,
                                 size_t limit) {
    const char *p = buf, *end = buf + n;
    run r = {rd, buf, NULL};
    while (p < end) {
        switch (sc->mode) {
        case M_START:
            if (is_bulk(*p) || is_aggregate(*p)) {
                sc->mode = M_HDR;
                sc->nhdr = 0;
                r.hdr_at = p;
            } else {
                sc->mode = M_LINE;
            }
            break;
        case M_LINE: { /* a line passed on as it is, to its '\n' */
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            p = nl ? nl + 1 : end;
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
                if (!header_done(sc, &r, p, limit))
                    return EDDY_ERR_NOMEM;
            } else if (sc->nhdr == sizeof(sc->hdr)) { /* no header this long: not ours */
                if (!pass_header(sc, &r, p))
                    return EDDY_ERR_NOMEM;
                sc->mode = M_LINE;
            }
            break;
        case M_PASS:
        case M_SKIP: {
            size_t take = (size_t)(end - p) < sc->left ? (size_t)(end - p) : (size_t)sc->left;
            p += take;
            if (sc->mode == M_SKIP)
                r.from = p; /* skipped bytes never reach the reader */
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
    /* A header not complete yet is held (in sc->hdr) for the next call. */
    const char *to = sc->mode == M_HDR ? (r.hdr_at ? r.hdr_at : r.from) : p;
    return flush(&r, to) ? EDDY_OK : EDDY_ERR_NOMEM;
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
