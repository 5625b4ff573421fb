/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * eddy — the msgpack value codec.
 *
 * "Publish a value" means: the caller packs one msgpack value with msgpack-c's packer, eddy
 * stores the bytes as the event's data with datacontenttype "application/msgpack".
 * "Decode a delivery into a value" means: eddy checks the data is exactly one well-formed
 * msgpack value whose declared sizes and counts fit the bytes present and whose nesting is
 * bounded, and only then lets msgpack-c unpack it (msgpack-c reserves memory from declared
 * counts, so unchecked input could make it reserve gigabytes).
 *
 * This header needs no msgpack-c headers: a value is opaque here. Reading a decoded value's
 * msgpack_object, and its fields by path, is in eddy/msgpack.h, the one header that ties a
 * program to msgpack-c's types.
 */
#ifndef EDDY_VALUE_H
#define EDDY_VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "eddy/event.h"
#include "eddy/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Content type the value codec writes and expects. */
#define EDDY_MSGPACK_CONTENT_TYPE "application/msgpack"
/** Deepest array/map nesting the decoder accepts (msgpack-c's unpacker stops at 32). */
#define EDDY_VALUE_MAX_DEPTH 32

/** msgpack-c's packer, opaque here: only eddy/msgpack.h (which includes <msgpack.h>) gives it
 * a definition. */
struct msgpack_packer;
/** Packs one value. Return EDDY_OK, or an error that aborts the publish. */
typedef eddy_status (*eddy_pack_fn)(struct msgpack_packer *pk, void *user); /* as bus.h */

/** A decoded value: a msgpack_object and the zone that owns its memory (read it with
 * eddy_value_object, eddy/msgpack.h). */
typedef struct eddy_value eddy_value;

/** Runs `pack` and stores the bytes as the event's data with datacontenttype
 * "application/msgpack". The packed bytes must be exactly one msgpack value, or
 * EDDY_ERR_MALFORMED. Ownership: the event keeps a copy. */
EDDY_EXPORT eddy_status eddy_event_set_value(eddy_event *ev, eddy_pack_fn pack, void *user,
                                             eddy_error *err);

/** Decodes the event's data into a value. EDDY_ERR_MALFORMED when the data is not exactly
 * one bounded msgpack value. Ownership: on EDDY_OK *out is the caller's, freed with
 * eddy_value_free; the event is not referenced afterwards. */
EDDY_EXPORT eddy_status eddy_event_decode_value(const eddy_event *ev, eddy_value **out,
                                                eddy_error *err);

/** Same check and decode on raw bytes. */
EDDY_EXPORT eddy_status eddy_value_decode(const void *bytes, size_t len, eddy_value **out,
                                          eddy_error *err);

/** Frees the value and its zone. NULL is a no-op. */
EDDY_EXPORT void eddy_value_free(eddy_value *v);

/** Checks without allocating that bytes[0..len) is exactly one msgpack value, that every
 * declared length and element count fits the bytes that remain, and that nesting stays within
 * max_depth (at most 256). EDDY_OK or EDDY_ERR_MALFORMED. Thread: any. */
EDDY_EXPORT eddy_status eddy_msgpack_check(const void *bytes, size_t len, unsigned max_depth);

#ifdef __cplusplus
}
#endif
#endif
