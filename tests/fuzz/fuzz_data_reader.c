/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target for the built-in msgpack data field reader (eddy_msgpack_reader), which
 * walks data anyone may have published, and for the RFC 3339 parser behind time filters.
 *
 * Input: one byte giving the path's length (mod 8), the path's bytes, then the data.
 * Properties beyond "no crash": the reader refuses exactly what eddy_msgpack_check refuses;
 * what it finds agrees with msgpack-c's decoding of the same bytes (same kind, same value, a
 * string pointing into the event's data); a path with an empty segment is refused as an
 * argument; an accepted timestamp has its nanoseconds in range. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "eddy/filter.h"
#include "eddy/msgpack.h"
#include "util/rfc3339.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The field at path in o, the way the reader defines it; NULL when absent. */
static const msgpack_object *lookup(const msgpack_object *o, const char *path) {
    const char *seg = path;
    for (;;) {
        const char *dot = strchr(seg, '.');
        size_t n = dot ? (size_t)(dot - seg) : strlen(seg);
        if (o->type != MSGPACK_OBJECT_MAP)
            return NULL;
        const msgpack_object *next = NULL;
        for (uint32_t i = 0; i < o->via.map.size && !next; i++) {
            const msgpack_object *k = &o->via.map.ptr[i].key;
            if (k->type == MSGPACK_OBJECT_STR && k->via.str.size == n &&
                memcmp(k->via.str.ptr, seg, n) == 0)
                next = &o->via.map.ptr[i].val;
        }
        if (!next)
            return NULL;
        o = next;
        if (!dot)
            return o;
        seg = dot + 1;
    }
}

static bool same_double(double a, double b) { return memcmp(&a, &b, sizeof(a)) == 0; }

static void agree(const msgpack_object *o, const eddy_field *f) {
    switch (o->type) {
    case MSGPACK_OBJECT_NIL:
        if (f->kind != EDDY_FIELD_NIL)
            abort();
        break;
    case MSGPACK_OBJECT_BOOLEAN:
        if (f->kind != EDDY_FIELD_BOOL || f->b != o->via.boolean)
            abort();
        break;
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
        if (o->via.u64 > INT64_MAX ? f->kind != EDDY_FIELD_UINT || f->u != o->via.u64
                                   : f->kind != EDDY_FIELD_INT || f->i != (int64_t)o->via.u64)
            abort();
        break;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
        if (f->kind != EDDY_FIELD_INT || f->i != o->via.i64)
            abort();
        break;
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64:
        if (f->kind != EDDY_FIELD_DOUBLE || !same_double(f->d, o->via.f64))
            abort();
        break;
    case MSGPACK_OBJECT_STR:
        if (f->kind != EDDY_FIELD_STRING || f->len != o->via.str.size ||
            (f->len && memcmp(f->s, o->via.str.ptr, f->len) != 0))
            abort();
        break;
    default:
        if (f->kind != EDDY_FIELD_OTHER)
            abort();
        break;
    }
}

static void fuzz_time(const uint8_t *data, size_t size) {
    char *s = malloc(size + 1);
    if (!s)
        return;
    memcpy(s, data, size);
    s[size] = '\0';
    eddy__instant t;
    if (eddy__rfc3339_parse(s, &t) && (t.nsec < 0 || t.nsec > 999999999))
        abort();
    free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_time(data, size);
    if (size < 1)
        return 0;
    size_t plen = data[0] % 8;
    if (size < 1 + plen)
        return 0;
    char path[8];
    for (size_t i = 0; i < plen; i++)
        path[i] = data[1 + i] ? (char)data[1 + i] : 'a';
    path[plen] = '\0';
    const uint8_t *bytes = data + 1 + plen;
    size_t len = size - 1 - plen;

    eddy_event *ev = eddy_event_new();
    if (!ev || eddy_event_set_data(ev, bytes, len) != EDDY_OK ||
        eddy_event_set_datacontenttype(ev, EDDY_MSGPACK_CONTENT_TYPE) != EDDY_OK) {
        eddy_event_free(ev);
        return 0;
    }
    bool path_ok = plen > 0 && path[0] != '.' && path[plen - 1] != '.' && !strstr(path, "..");
    const eddy_data_reader *r = eddy_msgpack_reader();
    eddy_field f;
    bool found = false;
    eddy_error err;
    eddy_status st = r->read(r->self, ev, path, &f, &found, &err);
    if (!path_ok) {
        if (st != EDDY_ERR_INVALID_ARGUMENT)
            abort();
        eddy_event_free(ev);
        return 0;
    }
    bool well_formed = eddy_msgpack_check(bytes, len, EDDY_VALUE_MAX_DEPTH) == EDDY_OK;
    if (len == 0) {
        if (st != EDDY_OK || found)
            abort(); /* no data: no fields */
    } else if (!well_formed) {
        if (st != EDDY_ERR_MALFORMED || found)
            abort();
    } else {
        if (st != EDDY_OK)
            abort();
        size_t dlen;
        const char *d = eddy_event_data(ev, &dlen);
        if (found && f.kind == EDDY_FIELD_STRING && f.len && (f.s < d || f.s + f.len > d + dlen))
            abort();
        eddy_value *v = NULL;
        eddy_status dst = eddy_value_decode(bytes, len, &v, NULL);
        if (dst == EDDY_OK) {
            const msgpack_object *o = lookup(eddy_value_object(v), path);
            if (!o != !found)
                abort();
            if (o)
                agree(o, &f);
        } else if (dst != EDDY_ERR_NOMEM) {
            abort();
        }
        eddy_value_free(v);
    }
    eddy_event_free(ev);
    return 0;
}
