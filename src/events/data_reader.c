/* SPDX-License-Identifier: BSD-3-Clause */
/* The built-in data field reader: msgpack data, read in place.
 *
 * The data is first run through eddy_msgpack_check (no allocation, bounded depth), so a
 * malformed value is refused the same way whatever path is asked for, and the walk below can
 * rely on every length and count fitting the bytes present. The walk still checks its bounds
 * (cheaply) rather than trusting that: it is the one place that indexes the bytes.
 *
 * The walk keeps no stack: to skip a value it counts the elements still owed (a container
 * adds its own), which is enough to find where the value ends. Paths are split on '.' as they
 * are walked, so nothing is allocated; a string field points into the event's data.
 *
 * A map key matches a path segment when it is a msgpack str with the same bytes; other keys
 * are skipped. With duplicate keys, the first one wins. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "eddy/filter.h"
#include "eddy/value.h"
#include "error.h"

/* One msgpack item: its type byte's class, and what follows the header. */
typedef enum item_class {
    IT_NIL,
    IT_BOOL,
    IT_UINT,
    IT_INT,
    IT_FLOAT32,
    IT_FLOAT64,
    IT_STR,
    IT_MAP,
    IT_ARRAY,
    IT_OTHER /* bin, ext */
} item_class;

typedef struct item {
    item_class cls;
    uint64_t u;              /* IT_BOOL, IT_UINT, IT_FLOAT*: the raw bits */
    int64_t i;               /* IT_INT */
    const unsigned char *at; /* IT_STR: the bytes */
    size_t len;              /* IT_STR: their length */
    uint64_t count;          /* IT_MAP, IT_ARRAY: elements that follow (a map's keys + values) */
} item;

typedef struct cursor {
    const unsigned char *p;
    size_t len;
    size_t pos;
} cursor;

static uint64_t be(const unsigned char *p, size_t n) {
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

/* Reads the header of the next item and moves past it and its payload (a container's
 * elements stay to be read). False when the bytes end too early. */
static bool next(cursor *c, item *it) {
    if (c->pos >= c->len)
        return false;
    unsigned char b = c->p[c->pos++];
    size_t rest = c->len - c->pos;
    size_t hdr = 0;      /* bytes of length or count after the type byte */
    uint64_t fixed = 0;  /* bytes of payload known from the type byte */
    bool counted = true; /* a payload whose length hdr gives */
    memset(it, 0, sizeof(*it));
    if (b <= 0x7f) {
        it->cls = IT_INT;
        it->i = b;
        return true;
    }
    if (b >= 0xe0) {
        it->cls = IT_INT;
        it->i = (int64_t)b - 256;
        return true;
    }
    if (b <= 0x8f) {
        it->cls = IT_MAP;
        it->count = 2u * (b & 0x0fu);
        return true;
    }
    if (b <= 0x9f) {
        it->cls = IT_ARRAY;
        it->count = b & 0x0fu;
        return true;
    }
    if (b <= 0xbf) {
        it->cls = IT_STR;
        fixed = b & 0x1fu;
        counted = false;
    } else if (b == 0xc0) {
        it->cls = IT_NIL;
        return true;
    } else if (b == 0xc2 || b == 0xc3) {
        it->cls = IT_BOOL;
        it->u = b == 0xc3;
        return true;
    } else if (b >= 0xc4 && b <= 0xc6) { /* bin 8/16/32 */
        it->cls = IT_OTHER;
        hdr = (size_t)1 << (b - 0xc4);
    } else if (b >= 0xc7 && b <= 0xc9) { /* ext 8/16/32: length, then a type byte */
        it->cls = IT_OTHER;
        hdr = (size_t)1 << (b - 0xc7);
        fixed = 1;
    } else if (b == 0xca || b == 0xcb) {
        it->cls = b == 0xca ? IT_FLOAT32 : IT_FLOAT64;
        fixed = b == 0xca ? 4 : 8;
        counted = false;
    } else if (b >= 0xcc && b <= 0xcf) {
        it->cls = IT_UINT;
        fixed = (uint64_t)1 << (b - 0xcc);
        counted = false;
    } else if (b >= 0xd0 && b <= 0xd3) {
        it->cls = IT_INT;
        fixed = (uint64_t)1 << (b - 0xd0);
        counted = false;
    } else if (b >= 0xd4 && b <= 0xd8) { /* fixext 1/2/4/8/16, plus a type byte */
        it->cls = IT_OTHER;
        fixed = 1 + ((uint64_t)1 << (b - 0xd4));
        counted = false;
    } else if (b >= 0xd9 && b <= 0xdb) { /* str 8/16/32 */
        it->cls = IT_STR;
        hdr = (size_t)1 << (b - 0xd9);
    } else if (b >= 0xdc && b <= 0xdf) { /* array 16/32, map 16/32 */
        if (rest < (b == 0xdc || b == 0xde ? 2u : 4u))
            return false;
        size_t n = b == 0xdc || b == 0xde ? 2 : 4;
        uint64_t count = be(c->p + c->pos, n);
        c->pos += n;
        it->cls = b >= 0xde ? IT_MAP : IT_ARRAY;
        it->count = b >= 0xde ? 2 * count : count;
        return true;
    } else { /* 0xc1, reserved */
        return false;
    }
    uint64_t payload = fixed;
    if (counted) {
        if (hdr > rest)
            return false;
        payload += be(c->p + c->pos, hdr);
        c->pos += hdr;
        rest -= hdr;
    }
    if (payload > rest)
        return false;
    const unsigned char *at = c->p + c->pos;
    c->pos += (size_t)payload;
    switch (it->cls) {
    case IT_STR:
        it->at = at;
        it->len = (size_t)payload;
        break;
    case IT_UINT:
    case IT_FLOAT32:
    case IT_FLOAT64:
        it->u = be(at, (size_t)payload);
        break;
    case IT_INT: {
        /* Sign-extend the big-endian two's complement value of `payload` bytes. */
        uint64_t v = be(at, (size_t)payload);
        unsigned bits = (unsigned)payload * 8;
        if (bits < 64 && (v >> (bits - 1)) & 1)
            v |= ~(uint64_t)0 << bits;
        memcpy(&it->i, &v, sizeof(v));
        break;
    }
    default:
        break;
    }
    return true;
}

/* Skips `owed` whole items. Each item takes at least one byte, so owed never needs to exceed
 * the bytes that remain; a count that would make it do so is malformed. */
static bool skip(cursor *c, uint64_t owed) {
    while (owed > 0) {
        item it;
        if (!next(c, &it))
            return false;
        owed--;
        if (it.cls == IT_MAP || it.cls == IT_ARRAY) {
            size_t rest = c->len - c->pos;
            if (owed > rest || it.count > rest - owed)
                return false;
            owed += it.count;
        }
    }
    return true;
}

static void to_field(const item *it, eddy_field *out) {
    memset(out, 0, sizeof(*out));
    switch (it->cls) {
    case IT_NIL:
        out->kind = EDDY_FIELD_NIL;
        break;
    case IT_BOOL:
        out->kind = EDDY_FIELD_BOOL;
        out->b = it->u != 0;
        break;
    case IT_UINT:
        if (it->u > INT64_MAX) {
            out->kind = EDDY_FIELD_UINT;
            out->u = it->u;
        } else {
            out->kind = EDDY_FIELD_INT;
            out->i = (int64_t)it->u;
        }
        break;
    case IT_INT:
        out->kind = EDDY_FIELD_INT;
        out->i = it->i;
        break;
    case IT_FLOAT32: {
        uint32_t bits = (uint32_t)it->u;
        float f;
        memcpy(&f, &bits, sizeof(f));
        out->kind = EDDY_FIELD_DOUBLE;
        out->d = f;
        break;
    }
    case IT_FLOAT64: {
        double d;
        memcpy(&d, &it->u, sizeof(d));
        out->kind = EDDY_FIELD_DOUBLE;
        out->d = d;
        break;
    }
    case IT_STR:
        out->kind = EDDY_FIELD_STRING;
        out->s = (const char *)it->at;
        out->len = it->len;
        break;
    default:
        out->kind = EDDY_FIELD_OTHER;
        break;
    }
}

/* Walks data down path. EDDY_OK with *found set, or EDDY_ERR_MALFORMED. */
static eddy_status walk(const unsigned char *data, size_t len, const char *path, eddy_field *out,
                        bool *found, eddy_error *err) {
    cursor c = {data, len, 0};
    const char *seg = path;
    for (;;) {
        const char *dot = strchr(seg, '.');
        size_t seg_len = dot ? (size_t)(dot - seg) : strlen(seg);
        item it;
        if (!next(&c, &it))
            goto malformed;
        if (it.cls != IT_MAP)
            return EDDY_OK; /* a scalar or an array where a map was needed: not found */
        bool hit = false;
        for (uint64_t k = 0; k < it.count / 2; k++) {
            item key;
            if (!next(&c, &key))
                goto malformed;
            if (key.cls == IT_STR && key.len == seg_len && memcmp(key.at, seg, seg_len) == 0) {
                hit = true;
                break;
            }
            /* Skip the rest of the key (a container key's elements) and its value. */
            uint64_t owed = 1 + (key.cls == IT_MAP || key.cls == IT_ARRAY ? key.count : 0);
            if (!skip(&c, owed))
                goto malformed;
        }
        if (!hit)
            return EDDY_OK;
        if (!dot)
            break;
        seg = dot + 1;
    }
    item v;
    if (!next(&c, &v))
        goto malformed;
    to_field(&v, out);
    *found = true;
    return EDDY_OK;
malformed:
    return eddy__fail(err, EDDY_ERR_MALFORMED, "data: malformed msgpack near byte %zu (path '%s')",
                      c.pos, path);
}

static eddy_status msgpack_read(void *self, const eddy_event *ev, const char *path, eddy_field *out,
                                bool *found, eddy_error *err) {
    (void)self;
    if (!ev || !path || !out || !found)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "msgpack reader: NULL argument");
    *found = false;
    memset(out, 0, sizeof(*out));
    for (const char *p = path;; p++) {
        if (*p == '.' || *p == '\0') {
            if (p == path || p[-1] == '.')
                return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "data path '%s': empty segment",
                                  path);
            if (!*p)
                break;
        }
    }
    const char *ct = eddy_event_datacontenttype(ev);
    if (!ct || strcmp(ct, EDDY_MSGPACK_CONTENT_TYPE) != 0)
        return EDDY_OK;
    size_t len;
    const unsigned char *data = eddy_event_data(ev, &len);
    if (!data || len == 0)
        return EDDY_OK;
    if (eddy_msgpack_check(data, len, EDDY_VALUE_MAX_DEPTH) != EDDY_OK)
        return eddy__fail(err, EDDY_ERR_MALFORMED,
                          "data: not one well-formed msgpack value (path '%s')", path);
    return walk(data, len, path, out, found, err);
}

static const eddy_data_reader msgpack_reader = {msgpack_read, NULL};

const eddy_data_reader *eddy_msgpack_reader(void) { return &msgpack_reader; }
