/* SPDX-License-Identifier: BSD-3-Clause */
/* A RESP pre-scanner in front of hiredis's reader (link.c feeds the socket's bytes through it):
 * a bulk string that cannot be part of an acceptable reply is discarded as its bytes arrive,
 * never buffered, and the reader is handed a small marker bulk in its place, so a hostile
 * entry of any size costs the reading process a few buffers, not its size.
 *
 * What is skipped, with `limit` (settings.max_event_size):
 *   - any bulk string longer than limit;
 *   - inside an array nested 3 deep or more (where stream entries' field/value lists sit: an
 *     XRANGE entry's list is at depth 3, an XREADGROUP or XAUTOCLAIM one's at 4), a bulk that
 *     takes that array's bulks past limit + EDDY__RESP_SCAN_SLACK bytes (an entry made of many
 *     fields each under the limit). Shallower arrays (SMEMBERS, ZRANGE) are not summed.
 * The marker is the bulk EDDY__SKIPPED_PREFIX "<original length>": entry.c reads it as an
 * entry over the limit (EDDY_ERR_TOO_LARGE), the consumer dead-letters it without its payload.
 *
 * Thread: one scanner per link, used by whoever uses the link. Sans-IO: no allocation. */
#ifndef EDDY_SRC_RESP_SCAN_H
#define EDDY_SRC_RESP_SCAN_H

#include <hiredis/read.h>
#include <stdbool.h>
#include <stddef.h>

#include "eddy/status.h"

/* The marker's value: these bytes, then the skipped bulk's length in decimal. The NUL makes it
 * no text any attribute can hold. */
#define EDDY__SKIPPED_PREFIX "\0eddy:skipped:"
#define EDDY__SKIPPED_PREFIX_LEN (sizeof(EDDY__SKIPPED_PREFIX) - 1)
/* The bus's own '_' fields beside an event's: what an entry's list may add to the limit. */
#define EDDY__RESP_SCAN_SLACK 65536
#define EDDY__RESP_SCAN_DEPTH 16

typedef struct eddy__resp_scan {
    int mode;                /* what the next bytes are (resp_scan.c) */
    char hdr[32];            /* a bulk's header line so far */
    size_t nhdr;             /* its length */
    unsigned long long left; /* bytes of the bulk (and its CRLF) still to pass or skip */
    struct {
        long long elems;          /* elements still to come */
        unsigned long long bulks; /* bytes of its bulks so far */
    } stack[EDDY__RESP_SCAN_DEPTH];
    int depth;                  /* arrays open (may exceed the stack: those are not summed) */
    unsigned long long skipped; /* bulks skipped so far (for tests and logs) */
} eddy__resp_scan;

void eddy__resp_scan_init(eddy__resp_scan *sc);

/* Feeds n bytes of the socket to rd, skipping as above. EDDY_ERR_NOMEM when the reader could
 * not take them. Bytes that are not RESP are passed on as they are: the reader reports them. */
eddy_status eddy__resp_scan_feed(eddy__resp_scan *sc, redisReader *rd, const char *buf, size_t n,
                                 size_t limit);

/* The bytes held back (the start of a header whose CRLF has not come yet), for a check that
 * wants everything fed so far: *bytes and their count, 0 when none. */
size_t eddy__resp_scan_held(const eddy__resp_scan *sc, const char **bytes);

/* Whether a value is the marker of a skipped bulk, and its original length. */
bool eddy__resp_skipped(const char *v, size_t len, unsigned long long *size);

#endif
