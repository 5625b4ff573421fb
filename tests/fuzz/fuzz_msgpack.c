/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target for eddy_value_decode and eddy_msgpack_check, which guard msgpack-c from
 * data anyone may have published.
 *
 * Properties beyond "no crash": a larger depth limit never refuses what a smaller one
 * accepts; whatever the check accepts at the decode depth, msgpack-c decodes (decode may only
 * say out of memory, never that msgpack-c refused bytes the check passed); and a decoded
 * value re-packs into bytes that pass the check and decode to a value that packs the same. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "eddy/msgpack.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Packs o into a fresh buffer; NULL on allocation failure. */
static char *pack(const msgpack_object *o, size_t *len) {
    msgpack_sbuffer sbuf;
    msgpack_sbuffer_init(&sbuf);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sbuf, msgpack_sbuffer_write);
    if (msgpack_pack_object(&pk, *o) != 0) {
        msgpack_sbuffer_destroy(&sbuf);
        return NULL;
    }
    *len = sbuf.size;
    return sbuf.data;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    eddy_status shallow = eddy_msgpack_check(data, size, 1);
    eddy_status normal = eddy_msgpack_check(data, size, EDDY_VALUE_MAX_DEPTH);
    eddy_status unbounded = eddy_msgpack_check(data, size, UINT32_MAX);
    if (eddy_msgpack_check(data, size, 0) == EDDY_OK && shallow != EDDY_OK)
        abort();
    if (shallow == EDDY_OK && normal != EDDY_OK)
        abort();
    if (normal == EDDY_OK && unbounded != EDDY_OK)
        abort();

    eddy_value *v = NULL;
    eddy_error err;
    eddy_status st = eddy_value_decode(data, size, &v, &err);
    if (st == EDDY_OK) {
        if (normal != EDDY_OK || !v)
            abort();
        size_t len1, len2;
        char *bytes1 = pack(eddy_value_object(v), &len1);
        if (bytes1) {
            eddy_value *w = NULL;
            if (eddy_msgpack_check(bytes1, len1, EDDY_VALUE_MAX_DEPTH) != EDDY_OK)
                abort();
            st = eddy_value_decode(bytes1, len1, &w, NULL);
            if (st == EDDY_OK) {
                char *bytes2 = pack(eddy_value_object(w), &len2);
                if (bytes2 && (len1 != len2 || memcmp(bytes1, bytes2, len1) != 0))
                    abort();
                free(bytes2);
            } else if (st != EDDY_ERR_NOMEM) {
                abort();
            }
            eddy_value_free(w);
            free(bytes1);
        }
    } else if (v || (st != EDDY_ERR_MALFORMED && st != EDDY_ERR_NOMEM)) {
        abort();
    } else if (st == EDDY_ERR_MALFORMED && strstr(err.detail, "msgpack-c refused")) {
        abort(); /* the check passed something msgpack-c cannot parse */
    }
    eddy_value_free(v);
    return 0;
}
