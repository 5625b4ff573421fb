/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target for the eddy tool's conversions (cli/event_json.c): msgpack data anyone may
 * have published, shown as JSON, and JSON a user types, sent as msgpack.
 *
 * Properties beyond "no crash": whatever msgpack is shown, it is shown as JSON that jansson
 * reads back; JSON that converts to msgpack converts to bytes that pass eddy_msgpack_check and
 * come back as the same JSON value. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "eddy/value.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t depth(const json_t *v) {
    size_t deepest = 0, i;
    const char *key;
    json_t *item;
    if (json_is_array(v))
        json_array_foreach(v, i, item) if (depth(item) > deepest) deepest = depth(item);
    if (json_is_object(v))
        json_object_foreach((json_t *)v, key, item) if (depth(item) > deepest) deepest =
            depth(item);
    return json_is_array(v) || json_is_object(v) ? deepest + 1 : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    json_t *shown = cli_msgpack_to_json(data, size);
    if (shown) {
        char *text = json_dumps(shown, JSON_COMPACT | JSON_ENCODE_ANY);
        json_t *back = text ? json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL) : NULL;
        if (text && !back)
            abort(); /* shown as text that is not JSON */
        json_decref(back);
        free(text);
        json_decref(shown);
    }
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    char *bytes, why[200];
    size_t len;
    if (cli_json_to_msgpack(text, &bytes, &len, why, sizeof(why))) {
        json_t *in = json_loads(text, JSON_DECODE_ANY, NULL),
               *out = cli_msgpack_to_json(bytes, len);
        if (in && depth(in) < 256 && eddy_msgpack_check(bytes, len, 256) != EDDY_OK)
            abort(); /* packed bytes eddy refuses */
        /* deeper than the decoder's limit: refused on the way back, which is fine */
        if (in && out && !json_equal(in, out))
            abort(); /* the value changed on the way */
        json_decref(in);
        json_decref(out);
        free(bytes);
    }
    free(text);
    return 0;
}
