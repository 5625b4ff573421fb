/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * eddy — msgpack-c's types: a decoded value's msgpack_object and its fields by path.
 *
 * Opt-in: this header includes <msgpack.h>, so a program that includes it is tied to
 * msgpack-c's headers and types, and links msgpack-c when it calls msgpack-c itself
 * (pkg-config --cflags --libs eddy msgpack, or the CMake target eddy::msgpack). None of
 * eddy's other headers includes it or needs msgpack-c: bus.h, blocking.h, reactive.h and value.h
 * see the packer and the value only as opaque pointers. Include it to pack values (eddy_pack_fn's
 * packer is a msgpack_packer) or to read a decoded one.
 */
#ifndef EDDY_MSGPACK_H
#define EDDY_MSGPACK_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "eddy/status.h"
#include "eddy/value.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The decoded object, owned by the value. */
EDDY_EXPORT const msgpack_object *eddy_value_object(const eddy_value *v);

/* ---- reading fields ---------------------------------------------------------------------- */

/** The object at `path` inside obj (e.g. eddy_value_object(v)): dot-separated segments, each a
 * map's string key or, in an array, a decimal index ("order.lines.0.sku"); "" is obj itself.
 * NULL when a step is missing (a key with a '.' in it is reached with several calls).
 * Ownership: borrowed from obj. Thread: any, on a value no one frees. */
EDDY_EXPORT const msgpack_object *eddy_msgpack_find(const msgpack_object *obj, const char *path);

/* Typed getters of the field at a path (as eddy_msgpack_find reads it): EDDY_OK with the value;
 * EDDY_ERR_NOT_FOUND when there is no such field; EDDY_ERR_MALFORMED when it has another type
 * (the detail names both); the output is untouched on failure. */

/** A string field: *str points into obj and is not NUL-terminated; *len is its length (either
 * may be NULL). */
EDDY_EXPORT eddy_status eddy_msgpack_get_str(const msgpack_object *obj, const char *path,
                                             const char **str, size_t *len, eddy_error *err);
/** An integer field; one above INT64_MAX is EDDY_ERR_MALFORMED. */
EDDY_EXPORT eddy_status eddy_msgpack_get_int(const msgpack_object *obj, const char *path,
                                             int64_t *out, eddy_error *err);
/** A number field: a float, or an integer converted. */
EDDY_EXPORT eddy_status eddy_msgpack_get_double(const msgpack_object *obj, const char *path,
                                                double *out, eddy_error *err);
/** A boolean field. */
EDDY_EXPORT eddy_status eddy_msgpack_get_bool(const msgpack_object *obj, const char *path,
                                              bool *out, eddy_error *err);

#ifdef __cplusplus
}
#endif
#endif
