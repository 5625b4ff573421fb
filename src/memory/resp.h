/* SPDX-License-Identifier: BSD-3-Clause */
/* Reply writer of the memory engine. Commands write their reply, under the engine lock, as a
 * compact record stream into a buffer the connection reuses (no allocation in steady state,
 * no printing); once the lock is released, eddy__mresp_build turns the records into the
 * redisReply tree hiredis would have made from the same RESP: the same types (STATUS, ERROR,
 * INTEGER, STRING, NIL for both $-1 and *-1, ARRAY with element NULL when empty), strings
 * NUL-terminated, every node, string and element vector a separate malloc'd block, so callers
 * free it with freeReplyObject as before. Private to src/memory/.
 *
 * Record format (host byte order): a type byte, then for an integer a long long, for a string
 * (status, error, bulk) a size_t length and the bytes, for an array a size_t element count
 * followed by that many records; nil has no payload. Counts are fixed-width so a deferred
 * array's count is patched in place. */
#ifndef EDDY_SRC_MEMORY_RESP_H
#define EDDY_SRC_MEMORY_RESP_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

typedef struct eddy__mresp {
    char *buf;
    size_t len, cap;
    bool oom; /* an append failed: the records are incomplete and must not be built */
    /* eddy__mresp_prepare's reserve: the node and string block of a one-node reply */
    redisReply *spare;
    char *spare_str;
    /* eddy__mem_conn_set_arena: the tree is built in it instead (nothing freed one by one) */
    struct eddy__reply_arena *arena;
} eddy__mresp;

void eddy__mresp_init(eddy__mresp *r);
void eddy__mresp_release(eddy__mresp *r);
/* Makes sure a one-node reply (an integer, nil, status or string up to EDDY__MRESP_SPARE_STR
 * bytes, error texts included) can be written and built without allocating, so a command that
 * changed data and answers with one of those cannot then fail for memory: call it before the
 * command runs. False on OOM (nothing run yet). */
#define EDDY__MRESP_SPARE_STR 128
bool eddy__mresp_prepare(eddy__mresp *r);
/* Empties the buffer, keeping a modest allocation for the next command. */
void eddy__mresp_reset(eddy__mresp *r);
/* Drops everything written after mark (a previous r->len or eddy__mresp_defer). */
void eddy__mresp_truncate(eddy__mresp *r, size_t mark);
/* Whether the record at mark (the start of a command's reply) is an error. */
bool eddy__mresp_is_error_at(const eddy__mresp *r, size_t mark);

/* Appends whole replies written in another writer (a scratch writer for a part of the reply
 * known only later). */
void eddy__mresp_append(eddy__mresp *r, const eddy__mresp *other);
void eddy__mresp_status(eddy__mresp *r, const char *text);
/* text is the whole message with its code ("ERR ...", "NOGROUP ..."); CR and LF become spaces,
 * as Redis does, so user-supplied names read the same as from a server. */
void eddy__mresp_error(eddy__mresp *r, const char *text);
void eddy__mresp_errorf(eddy__mresp *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void eddy__mresp_verrorf(eddy__mresp *r, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
void eddy__mresp_int(eddy__mresp *r, long long v);
void eddy__mresp_bulk(eddy__mresp *r, const void *data, size_t len);
void eddy__mresp_cstr(eddy__mresp *r, const char *s);
void eddy__mresp_bulk_ll(eddy__mresp *r, long long v);
/* Redis 7.0's addReplyDouble for RESP2: "%.17g", and "inf"/"-inf". */
void eddy__mresp_double(eddy__mresp *r, double v);
void eddy__mresp_id(eddy__mresp *r, uint64_t ms, uint64_t seq);
void eddy__mresp_nil(eddy__mresp *r);       /* $-1 */
void eddy__mresp_nil_array(eddy__mresp *r); /* *-1: hiredis makes both NIL */
void eddy__mresp_array(eddy__mresp *r, size_t n);
/* An array whose length is known only after its elements: defer writes its header and returns
 * the mark; write the elements, then set the length. A deferred array that is not wanted after
 * all is dropped with eddy__mresp_truncate(r, mark). */
size_t eddy__mresp_defer(eddy__mresp *r);
void eddy__mresp_set_array(eddy__mresp *r, size_t mark, size_t n);

/* Builds the tree of the one reply in the buffer. NULL on OOM (nothing is left allocated) or
 * when the buffer holds no complete reply. A one-node reply takes the prepared reserve and
 * cannot fail. */
redisReply *eddy__mresp_build(eddy__mresp *r);

#endif
