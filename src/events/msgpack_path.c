/* SPDX-License-Identifier: BSD-3-Clause */
/* Reading fields of decoded msgpack data by path (value.h): "order.lines.0.sku" walks map keys
 * (str keys equal to the segment) and array indexes. Only reads the decoded object: no
 * allocation, and a missing field is told apart from one of another type. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "eddy/msgpack.h"
#include "error.h"

/* The step from obj for the segment seg[0..n), or NULL. */
static const msgpack_object *step(const msgpack_object *obj, const char *seg, size_t n) {
    if (obj->type == MSGPACK_OBJECT_MAP) {
        for (uint32_t i = 0; i < obj->via.map.size; i++) {
            const msgpack_object *k = &obj->via.map.ptr[i].key;
            if (k->type == MSGPACK_OBJECT_STR && k->via.str.size == n &&
                memcmp(k->via.str.ptr, seg, n) == 0)
                return &obj->via.map.ptr[i].val;
        }
        return NULL;
    }
    if (obj->type == MSGPACK_OBJECT_ARRAY && n > 0 && n <= 10) {
        uint64_t at = 0;
        for (size_t i = 0; i < n; i++) {
            if (seg[i] < '0' || seg[i] > '9')
                return NULL;
            at = at * 10 + (uint64_t)(seg[i] - '0');
        }
        return at < obj->via.array.size ? &obj->via.array.ptr[at] : NULL;
    }
    return NULL;
}

const msgpack_object *eddy_msgpack_find(const msgpack_object *obj, const char *path) {
    if (!obj || !path)
        return NULL;
    for (const char *p = path; obj && *p;) {
        size_t n = strcspn(p, ".");
        obj = step(obj, p, n);
        p += n;
        if (*p == '.' && !*++p)
            return NULL; /* a trailing '.' names nothing */
    }
    return obj;
}

static const char *type_name(msgpack_object_type t) {
    switch (t) {
    case MSGPACK_OBJECT_NIL:
        return "nil";
    case MSGPACK_OBJECT_BOOLEAN:
        return "a boolean";
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
        return "an integer";
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64:
        return "a float";
    case MSGPACK_OBJECT_STR:
        return "a string";
    case MSGPACK_OBJECT_ARRAY:
        return "an array";
    case MSGPACK_OBJECT_MAP:
        return "a map";
    default:
        return "binary or an extension";
    }
}

/* The object at path, or NULL with err set: EDDY_ERR_NOT_FOUND. */
static const msgpack_object *find(const msgpack_object *obj, const char *path, eddy_status *st,
                                  eddy_error *err) {
    if (!obj || !path) {
        *st = eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "msgpack get: object or path is NULL");
        return NULL;
    }
    const msgpack_object *o = eddy_msgpack_find(obj, path);
    *st = o ? EDDY_OK : eddy__fail(err, EDDY_ERR_NOT_FOUND, "'%s': no such field", path);
    return o;
}

static eddy_status wrong_type(const msgpack_object *o, const char *path, const char *want,
                              eddy_error *err) {
    return eddy__fail(err, EDDY_ERR_MALFORMED, "'%s' is %s, not %s", path, type_name(o->type),
                      want);
}

eddy_status eddy_msgpack_get_str(const msgpack_object *obj, const char *path, const char **str,
                                 size_t *len, eddy_error *err) {
    eddy_status st;
    const msgpack_object *o = find(obj, path, &st, err);
    if (!o)
        return st;
    if (o->type != MSGPACK_OBJECT_STR)
        return wrong_type(o, path, "a string", err);
    if (str)
        *str = o->via.str.ptr;
    if (len)
        *len = o->via.str.size;
    return EDDY_OK;
}

eddy_status eddy_msgpack_get_int(const msgpack_object *obj, const char *path, int64_t *out,
                                 eddy_error *err) {
    eddy_status st;
    const msgpack_object *o = find(obj, path, &st, err);
    if (!o)
        return st;
    if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
        *out = o->via.i64;
        return EDDY_OK;
    }
    if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
        return wrong_type(o, path, "an integer", err);
    if (o->via.u64 > INT64_MAX)
        return eddy__fail(err, EDDY_ERR_MALFORMED, "'%s' is %" PRIu64 ", above INT64_MAX", path,
                          o->via.u64);
    *out = (int64_t)o->via.u64;
    return EDDY_OK;
}

eddy_status eddy_msgpack_get_double(const msgpack_object *obj, const char *path, double *out,
                                    eddy_error *err) {
    eddy_status st;
    const msgpack_object *o = find(obj, path, &st, err);
    if (!o)
        return st;
    switch (o->type) {
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64:
        *out = o->via.f64;
        return EDDY_OK;
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
        *out = (double)o->via.u64;
        return EDDY_OK;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
        *out = (double)o->via.i64;
        return EDDY_OK;
    default:
        return wrong_type(o, path, "a number", err);
    }
}

eddy_status eddy_msgpack_get_bool(const msgpack_object *obj, const char *path, bool *out,
                                  eddy_error *err) {
    eddy_status st;
    const msgpack_object *o = find(obj, path, &st, err);
    if (!o)
        return st;
    if (o->type != MSGPACK_OBJECT_BOOLEAN)
        return wrong_type(o, path, "a boolean", err);
    *out = o->via.boolean;
    return EDDY_OK;
}
