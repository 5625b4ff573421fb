/* SPDX-License-Identifier: BSD-3-Clause */
/* Events and their data as JSON. Events are the CloudEvents JSON format, read and written by the
 * library (eddy_event_from_json, eddy_event_to_json). Data: JSON given on the command line is
 * sent as msgpack through jansson and msgpack-c, and msgpack data read back is shown as JSON
 * beside the event ("data_value"); numbers keep their kind (integers stay integers); what JSON
 * cannot show inside such a value (binary, non-UTF-8 strings, msgpack extension types,
 * non-string map keys) is shown as {"base64": ...}, or with its key written as JSON text. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "eddy/msgpack.h"

/* ---- JSON to msgpack ---------------------------------------------------------------------- */

static void pack_json(msgpack_packer *pk, const json_t *v) {
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        msgpack_pack_map(pk, json_object_size(v));
        const char *key;
        json_t *item;
        json_object_foreach((json_t *)v, key, item) {
            size_t n = strlen(key);
            msgpack_pack_str(pk, n);
            msgpack_pack_str_body(pk, key, n);
            pack_json(pk, item);
        }
        break;
    }
    case JSON_ARRAY: {
        size_t i;
        json_t *item;
        msgpack_pack_array(pk, json_array_size(v));
        json_array_foreach(v, i, item) pack_json(pk, item);
        break;
    }
    case JSON_STRING:
        msgpack_pack_str(pk, json_string_length(v));
        msgpack_pack_str_body(pk, json_string_value(v), json_string_length(v));
        break;
    case JSON_INTEGER:
        msgpack_pack_int64(pk, json_integer_value(v));
        break;
    case JSON_REAL:
        msgpack_pack_double(pk, json_real_value(v));
        break;
    case JSON_TRUE:
        msgpack_pack_true(pk);
        break;
    case JSON_FALSE:
        msgpack_pack_false(pk);
        break;
    case JSON_NULL:
        msgpack_pack_nil(pk);
        break;
    }
}

bool cli_json_to_msgpack(const char *text, char **bytes, size_t *len, char *why, size_t whysize) {
    json_error_t e;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &e);
    if (!v) {
        snprintf(why, whysize, "line %d, column %d: %s", e.line, e.column, e.text);
        return false;
    }
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    pack_json(&pk, v);
    json_decref(v);
    *bytes = sb.data; /* msgpack_sbuffer_destroy frees it with free() */
    *len = sb.size;
    if (!sb.data) {
        snprintf(why, whysize, "out of memory");
        return false;
    }
    return true;
}

/* ---- msgpack to JSON ---------------------------------------------------------------------- */

char *cli_base64(const void *bytes, size_t len) {
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const unsigned char *b = bytes;
    char *out = malloc((len + 2) / 3 * 4 + 1), *o = out;
    if (!out)
        return NULL;
    for (size_t i = 0; i < len; i += 3) {
        unsigned v = (unsigned)b[i] << 16 | (i + 1 < len ? (unsigned)b[i + 1] << 8 : 0) |
                     (i + 2 < len ? b[i + 2] : 0);
        *o++ = tab[v >> 18 & 63];
        *o++ = tab[v >> 12 & 63];
        *o++ = i + 1 < len ? tab[v >> 6 & 63] : '=';
        *o++ = i + 2 < len ? tab[v & 63] : '=';
    }
    *o = '\0';
    return out;
}

static json_t *base64_object(const void *bytes, size_t len) {
    char *b64 = cli_base64(bytes, len);
    json_t *o = b64 ? json_pack("{s:s}", "base64", b64) : NULL;
    free(b64);
    return o;
}

/* The longest map key shown as JSON text when it is not a string (see to_json). */
#define KEY_TEXT_MAX 1024

static json_t *to_json(const msgpack_object *o) {
    switch (o->type) {
    case MSGPACK_OBJECT_NIL:
        return json_null();
    case MSGPACK_OBJECT_BOOLEAN:
        return json_boolean(o->via.boolean);
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
        return o->via.u64 > (uint64_t)INT64_MAX ? json_real((double)o->via.u64)
                                                : json_integer((json_int_t)o->via.u64);
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
        return json_integer((json_int_t)o->via.i64);
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64:
        return json_real(o->via.f64);
    case MSGPACK_OBJECT_STR: {
        /* NULL: not UTF-8. An empty string's ptr may be NULL. */
        json_t *s =
            o->via.str.size ? json_stringn(o->via.str.ptr, o->via.str.size) : json_string("");
        return s ? s : base64_object(o->via.str.ptr, o->via.str.size);
    }
    case MSGPACK_OBJECT_BIN:
        return base64_object(o->via.bin.ptr, o->via.bin.size);
    case MSGPACK_OBJECT_EXT: {
        json_t *e = base64_object(o->via.ext.ptr, o->via.ext.size);
        if (e)
            json_object_set_new(e, "ext", json_integer(o->via.ext.type));
        return e;
    }
    case MSGPACK_OBJECT_ARRAY: {
        json_t *a = json_array();
        for (uint32_t i = 0; a && i < o->via.array.size; i++)
            json_array_append_new(a, to_json(&o->via.array.ptr[i]));
        return a;
    }
    case MSGPACK_OBJECT_MAP: {
        json_t *m = json_object();
        for (uint32_t i = 0; m && i < o->via.map.size; i++) {
            const msgpack_object_kv *kv = &o->via.map.ptr[i];
            json_t *val = to_json(&kv->val);
            if (kv->key.type == MSGPACK_OBJECT_STR) {
                char *k = kv->key.via.str.size ? strndup(kv->key.via.str.ptr, kv->key.via.str.size)
                                               : strdup(""); /* ptr may be NULL */
                if (k && strlen(k) == kv->key.via.str.size && json_object_set_new(m, k, val) == 0)
                    val = NULL;
                free(k);
            }
            if (val) { /* a key JSON cannot name: written as JSON text */
                json_t *kj = to_json(&kv->key);
                char *k = kj ? json_dumps(kj, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
                json_decref(kj);
                if (k && strlen(k) > KEY_TEXT_MAX) {
                    /* Keys within keys are escaped once more at each level, which doubles
                     * them: past the bound, the key is named, not shown. */
                    char named[96];
                    snprintf(named, sizeof(named), "(key %u: %zu bytes of JSON, not shown)",
                             (unsigned)i, strlen(k));
                    free(k);
                    k = strdup(named);
                }
                if (k)
                    json_object_set_new(m, k, val);
                else
                    json_decref(val);
                free(k);
            }
        }
        return m;
    }
    }
    return json_null();
}

json_t *cli_msgpack_to_json(const void *bytes, size_t len) {
    eddy_value *v;
    if (eddy_value_decode(bytes, len, &v, NULL) != EDDY_OK)
        return NULL;
    json_t *j = to_json(eddy_value_object(v));
    eddy_value_free(v);
    return j;
}

/* ---- events ------------------------------------------------------------------------------- */

/* The CloudEvents JSON format is the library's (eddy_event_to_json): binary data as data_base64,
 * JSON data inline, text as a string, typed extensions as their JSON type. */
json_t *cli_event_json(const eddy_event *ev) {
    char *text;
    size_t len;
    if (eddy_event_to_json(ev, &text, &len, NULL) != EDDY_OK)
        return NULL;
    json_t *o = json_loadb(text, len, 0, NULL);
    free(text);
    return o;
}

json_t *cli_data_value(const eddy_event *ev) {
    size_t len;
    const void *data = eddy_event_data(ev, &len);
    const char *ct = eddy_event_datacontenttype(ev);
    if (!data || !ct || strcmp(ct, EDDY_MSGPACK_CONTENT_TYPE) != 0)
        return NULL;
    return cli_msgpack_to_json(data, len);
}

bool cli_read_events(const char *text, size_t len, eddy_event ***events, size_t *count, char *why,
                     size_t whysize) {
    size_t i = 0;
    while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r'))
        i++;
    eddy_error err = {0};
    eddy_status st;
    if (i < len && text[i] == '[') {
        st = eddy_event_batch_from_json(text, len, events, count, &err);
    } else {
        eddy_event *ev = NULL;
        st = eddy_event_from_json(text, len, &ev, &err);
        if (st == EDDY_OK && !(*events = malloc(sizeof(**events)))) {
            eddy_event_free(ev);
            st = EDDY_ERR_NOMEM;
        }
        if (st == EDDY_OK) {
            (*events)[0] = ev;
            *count = 1;
        }
    }
    if (st != EDDY_OK)
        snprintf(why, whysize, "%s", err.detail[0] ? err.detail : eddy_status_str(st));
    return st == EDDY_OK;
}

bool cli_print_line(json_t *v) {
    bool ok = v && json_dumpf(v, stdout, JSON_COMPACT | JSON_ENCODE_ANY) == 0;
    json_decref(v);
    return fputc('\n', stdout) != EOF && fflush(stdout) == 0 && ok;
}

bool cli_print_raw(const eddy_event *ev) {
    size_t len = 0;
    const void *data = eddy_event_data(ev, &len);
    const char *ct = eddy_event_datacontenttype(ev);
    bool ok = true;
    json_t *j = data && ct && strcmp(ct, EDDY_MSGPACK_CONTENT_TYPE) == 0
                    ? cli_msgpack_to_json(data, len)
                    : NULL;
    if (j) /* msgpack is eddy's encoding, not the user's: shown as the JSON it was given as */
        ok = json_dumpf(j, stdout, JSON_COMPACT | JSON_ENCODE_ANY) == 0;
    else if (data && len > 0)
        ok = fwrite(data, 1, len, stdout) == len;
    bool ends_a_line = !j && data && len > 0 && ((const char *)data)[len - 1] == '\n';
    json_decref(j);
    if (!ends_a_line && fputc('\n', stdout) == EOF) /* one event, one line */
        ok = false;
    return fflush(stdout) == 0 && ok;
}

bool cli_print_pretty(json_t *v) {
    bool ok = v && json_dumpf(v, stdout, JSON_INDENT(2) | JSON_ENCODE_ANY) == 0;
    json_decref(v);
    return fputc('\n', stdout) != EOF && fflush(stdout) == 0 && ok;
}
