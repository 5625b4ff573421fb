/* RESP2 reply writer of the memory engine. Commands write Redis's wire bytes; the engine then
 * parses them with hiredis's own reader, so callers get genuine redisReply trees (freed with
 * freeReplyObject) that are shaped exactly like a server's. Private to src/memory/. */
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
    bool oom; /* an append failed: the bytes are incomplete and must not be parsed */
} eddy__mresp;

void eddy__mresp_init(eddy__mresp *r);
void eddy__mresp_release(eddy__mresp *r);
/* Empties the buffer, keeping a modest allocation for the next command. */
void eddy__mresp_reset(eddy__mresp *r);
/* Drops everything written after mark (a previous r->len). */
void eddy__mresp_truncate(eddy__mresp *r, size_t mark);

/* Appends bytes that are already RESP (a reply built in a scratch writer). */
void eddy__mresp_raw(eddy__mresp *r, const void *data, size_t len);
void eddy__mresp_status(eddy__mresp *r, const char *text);
/* text is the whole message with its code ("ERR ...", "NOGROUP ..."); CR and LF become spaces,
 * as Redis does, so user-supplied names cannot break the protocol. */
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
void eddy__mresp_nil_array(eddy__mresp *r); /* *-1 */
void eddy__mresp_array(eddy__mresp *r, size_t n);
/* An array whose length is known only after its elements: remember the position, write the
 * elements, then set the length (the header is inserted at the mark). */
static inline size_t eddy__mresp_defer(const eddy__mresp *r) { return r->len; }
void eddy__mresp_set_array(eddy__mresp *r, size_t mark, size_t n);

/* Parses one complete reply. NULL on OOM (hiredis's reader included). */
redisReply *eddy__mresp_parse(const char *buf, size_t len);

#endif
