/* SPDX-License-Identifier: BSD-3-Clause */
/* The msgpack value codec: publish a packed value as event data, decode data into a value.
 *
 * msgpack-c sizes its allocations from the counts a message declares, so a five-byte message
 * declaring a 4-billion-element array makes it reserve ~100 GB. Nothing reaches msgpack-c
 * before eddy_msgpack_check has walked the bytes without allocating and proved that they are
 * exactly one value, that every length fits the bytes present, that the elements still owed
 * fit them too (each takes at least one byte), and that nesting is bounded. After the check
 * msgpack-c's allocations are linear in the input size.
 *
 * msgpack-c's C unpacker has a fixed stack of MSGPACK_EMBED_STACK_SIZE (32) containers and
 * fails beyond it, so decoding and publishing use the smaller of that and
 * EDDY_VALUE_MAX_DEPTH: whatever eddy_event_set_value accepts, eddy_event_decode_value reads.
 *
 * A decoded value is one allocation holding a private copy of the bytes (str, bin and ext
 * objects point into it) plus the msgpack_unpacked whose zone holds the object tree.
 */
#include "eddy/msgpack.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "events/event_internal.h"

/* For MSGPACK_EMBED_STACK_SIZE, the depth msgpack-c's unpacker was built with. */
#include <msgpack/unpack_define.h>

#define DECODE_DEPTH                                                                               \
    (EDDY_VALUE_MAX_DEPTH < MSGPACK_EMBED_STACK_SIZE ? EDDY_VALUE_MAX_DEPTH                        \
                                                     : MSGPACK_EMBED_STACK_SIZE)

/* The checker keeps one counter per open container. Depths beyond this are refused whatever
 * max_depth says, so that the check stays allocation-free with a small, fixed stack. */
#define CHECK_STACK 256

struct eddy_value {
    msgpack_unpacked unpacked;
    char bytes[]; /* the decoded copy; the object tree points into it */
};

static uint64_t be(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

/* The walk behind eddy_msgpack_check, with a reason and an offset for error detail.
 *
 * `owed` counts the elements still to read in all open containers (plus the top-level value);
 * as each needs at least one byte, owed > remaining bytes means truncation, and a container
 * whose count would push owed past the bytes remaining is refused before anyone trusts it. */
static eddy_status check(const unsigned char *p, size_t len, unsigned max_depth, const char **why,
                         size_t *at) {
    size_t left[CHECK_STACK]; /* elements still owed by each open container */
    unsigned depth = 0;
    size_t owed = 1;
    size_t pos = 0;
    if (max_depth > CHECK_STACK)
        max_depth = CHECK_STACK;
    *why = NULL;
    while (owed > 0) {
        *at = pos;
        if (owed > len - pos) {
            *why = "truncated";
            return EDDY_ERR_MALFORMED;
        }
        unsigned char b = p[pos++];
        owed--;
        if (depth)
            left[depth - 1]--;
        size_t rest = len - pos;
        int hdr = 0;          /* bytes of length or count after the type byte */
        uint64_t payload = 0; /* bytes of data after the header */
        uint64_t count = 0;   /* elements of a container (maps: keys and values) */
        bool container = false;
        if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3) {
            /* fixint, nil, bool: the type byte is the whole value */
        } else if (b <= 0x8f) {
            container = true;
            count = 2u * (b & 0x0f);
        } else if (b <= 0x9f) {
            container = true;
            count = b & 0x0f;
        } else if (b <= 0xbf) {
            payload = b & 0x1f;
        } else if (b == 0xc1) {
            *why = "reserved type byte 0xc1";
            return EDDY_ERR_MALFORMED;
        } else if (b >= 0xc4 && b <= 0xc6) { /* bin 8/16/32 */
            hdr = 1 << (b - 0xc4);
        } else if (b >= 0xc7 && b <= 0xc9) { /* ext 8/16/32: length, then a type byte */
            hdr = 1 << (b - 0xc7);
        } else if (b == 0xca || b == 0xcb) { /* float 32/64 */
            payload = b == 0xca ? 4 : 8;
        } else if (b >= 0xcc && b <= 0xd3) { /* uint and int 8/16/32/64 */
            payload = 1u << ((b - 0xcc) & 3);
        } else if (b >= 0xd4 && b <= 0xd8) { /* fixext 1/2/4/8/16, plus a type byte */
            payload = 1 + (1u << (b - 0xd4));
        } else if (b >= 0xd9 && b <= 0xdb) { /* str 8/16/32 */
            hdr = 1 << (b - 0xd9);
        } else { /* 0xdc-0xdf: array 16/32, map 16/32 */
            container = true;
            hdr = (b == 0xdc || b == 0xde) ? 2 : 4;
        }
        if ((size_t)hdr > rest) {
            *why = "truncated length";
            return EDDY_ERR_MALFORMED;
        }
        if (hdr) {
            uint64_t n = be(p + pos, hdr);
            pos += (size_t)hdr;
            rest -= (size_t)hdr;
            if (!container)
                payload = n + (b >= 0xc7 && b <= 0xc9 ? 1 : 0);
            else
                count = b >= 0xde ? 2 * n : n;
        }
        if (container) {
            if (depth + 1 > max_depth) {
                *why = "nested too deeply";
                return EDDY_ERR_MALFORMED;
            }
            /* owed <= rest was established above for everything but this header. */
            if (owed > rest || count > rest - owed) {
                *why = "container declares more elements than bytes remain";
                return EDDY_ERR_MALFORMED;
            }
            if (count) {
                left[depth++] = (size_t)count;
                owed += (size_t)count;
            }
        } else {
            if (payload > rest) {
                *why = "length runs past the end";
                return EDDY_ERR_MALFORMED;
            }
            pos += (size_t)payload;
        }
        while (depth && left[depth - 1] == 0)
            depth--;
    }
    if (pos != len) {
        *at = pos;
        *why = "trailing bytes after the value";
        return EDDY_ERR_MALFORMED;
    }
    return EDDY_OK;
}

eddy_status eddy_msgpack_check(const void *bytes, size_t len, unsigned max_depth) {
    const char *why;
    size_t at;
    if (!bytes && len)
        return EDDY_ERR_MALFORMED;
    return check(bytes, len, max_depth, &why, &at);
}

static eddy_status check_detail(const void *bytes, size_t len, eddy_error *err) {
    const char *why;
    size_t at;
    if (check(bytes, len, DECODE_DEPTH, &why, &at) != EDDY_OK)
        return eddy__fail(err, EDDY_ERR_MALFORMED, "data: not one msgpack value: %s at byte %zu",
                          why, at);
    return EDDY_OK;
}

/* msgpack_sbuffer_write reports a failed realloc only to the packer, and packers ignore
 * what pack callbacks ignore; recording it here turns it into EDDY_ERR_NOMEM. */
struct sink {
    msgpack_sbuffer sbuf;
    bool failed;
};

static int sink_write(void *data, const char *buf, size_t len) {
    struct sink *s = data;
    int rc = msgpack_sbuffer_write(&s->sbuf, buf, len);
    if (rc != 0)
        s->failed = true;
    return rc;
}

eddy_status eddy_event_set_value(eddy_event *ev, eddy_pack_fn pack, void *user, eddy_error *err) {
    if (!ev || !pack)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "value: event or pack is NULL");
    struct sink s = {.failed = false};
    msgpack_sbuffer_init(&s.sbuf);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &s, sink_write);
    eddy_status st = pack(&pk, user);
    if (st != EDDY_OK)
        st = eddy__fail(err, st, "value: the pack callback failed: %s", eddy_status_str(st));
    else if (s.failed)
        st = eddy__fail(err, EDDY_ERR_NOMEM, "value: out of memory while packing");
    else if ((st = check_detail(s.sbuf.data, s.sbuf.size, err)) == EDDY_OK &&
             (st = eddy__event_set_data_typed(ev, s.sbuf.data ? s.sbuf.data : "", s.sbuf.size,
                                              EDDY_MSGPACK_CONTENT_TYPE)) != EDDY_OK)
        st = eddy__fail(err, st, "value: out of memory");
    msgpack_sbuffer_destroy(&s.sbuf);
    return st;
}

eddy_status eddy_value_decode(const void *bytes, size_t len, eddy_value **out, eddy_error *err) {
    if (out)
        *out = NULL;
    if (!out || (!bytes && len))
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "value: NULL argument");
    eddy_status st = check_detail(bytes, len, err);
    if (st != EDDY_OK)
        return st;
    if (len > SIZE_MAX - sizeof(eddy_value))
        return eddy__fail(err, EDDY_ERR_NOMEM, "value: out of memory");
    eddy_value *v = malloc(sizeof(*v) + len);
    if (!v)
        return eddy__fail(err, EDDY_ERR_NOMEM, "value: out of memory");
    memcpy(v->bytes, bytes, len);
    msgpack_unpacked_init(&v->unpacked);
    size_t off = 0;
    msgpack_unpack_return rc = msgpack_unpack_next(&v->unpacked, v->bytes, len, &off);
    if (rc == MSGPACK_UNPACK_SUCCESS && off == len) {
        *out = v;
        return EDDY_OK;
    }
    eddy_value_free(v);
    /* The check accepted the bytes, so msgpack-c can only have run out of memory; a parse
     * error here would mean the two disagree, which the fuzz target looks for. */
    if (rc == MSGPACK_UNPACK_NOMEM_ERROR)
        return eddy__fail(err, EDDY_ERR_NOMEM, "value: out of memory");
    return eddy__fail(err, EDDY_ERR_MALFORMED, "data: msgpack-c refused the value (%d)", (int)rc);
}

/* Media types compare case-insensitively and parameters do not change the format. */
static bool is_msgpack_type(const char *ct) {
    size_t n = strlen(EDDY_MSGPACK_CONTENT_TYPE);
    for (size_t i = 0; i < n; i++) {
        char c = ct[i];
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (c != EDDY_MSGPACK_CONTENT_TYPE[i])
            return false;
    }
    return ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ' || ct[n] == '\t';
}

eddy_status eddy_event_decode_value(const eddy_event *ev, eddy_value **out, eddy_error *err) {
    if (out)
        *out = NULL;
    if (!ev || !out)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "value: NULL argument");
    /* Data declared as something else is not a value even if its bytes happen to parse; data
     * without a content type is tried. */
    const char *ct = eddy_event_datacontenttype(ev);
    if (ct && !is_msgpack_type(ct))
        return eddy__fail(err, EDDY_ERR_MALFORMED,
                          "datacontenttype: not " EDDY_MSGPACK_CONTENT_TYPE);
    size_t len;
    const void *data = eddy_event_data(ev, &len);
    if (!data)
        return eddy__fail(err, EDDY_ERR_MALFORMED, "data: the event has no data");
    return eddy_value_decode(data, len, out, err);
}

const msgpack_object *eddy_value_object(const eddy_value *v) {
    return v ? &v->unpacked.data : NULL;
}

void eddy_value_free(eddy_value *v) {
    if (!v)
        return;
    msgpack_unpacked_destroy(&v->unpacked);
    free(v);
}
