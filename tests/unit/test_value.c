/* SPDX-License-Identifier: BSD-3-Clause */
/* The msgpack value codec: the allocation-free check on every msgpack type and every way bytes
 * can lie (truncation, counts beyond the input, nesting, trailing bytes), decoding into owned
 * values, and publishing values into events. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "eddy/msgpack.h"

#define B(...) ((const unsigned char[]){__VA_ARGS__}), sizeof((const unsigned char[]){__VA_ARGS__})

static void ok(const unsigned char *p, size_t n, const char *what) {
    cr_expect_eq(eddy_msgpack_check(p, n, EDDY_VALUE_MAX_DEPTH), EDDY_OK, "%s refused", what);
    eddy_value *v = NULL;
    eddy_error err = {0};
    cr_expect_eq(eddy_value_decode(p, n, &v, &err), EDDY_OK, "%s: %s", what, err.detail);
    eddy_value_free(v);
}

static void bad(const unsigned char *p, size_t n, const char *what) {
    cr_expect_eq(eddy_msgpack_check(p, n, EDDY_VALUE_MAX_DEPTH), EDDY_ERR_MALFORMED, "%s accepted",
                 what);
    eddy_value *v = (eddy_value *)&n;
    eddy_error err = {0};
    cr_expect_eq(eddy_value_decode(p, n, &v, &err), EDDY_ERR_MALFORMED, "%s", what);
    cr_expect_null(v);
    cr_expect_eq(err.status, EDDY_ERR_MALFORMED);
    cr_expect(strncmp(err.detail, "data:", 5) == 0, "%s: detail '%s'", what, err.detail);
}

#define OK(what, ...) ok(B(__VA_ARGS__), what)
#define BAD(what, ...) bad(B(__VA_ARGS__), what)

Test(value, scalars) {
    OK("nil", 0xc0);
    OK("false", 0xc2);
    OK("true", 0xc3);
    OK("positive fixint", 0x7f);
    OK("zero", 0x00);
    OK("negative fixint", 0xe0);
    OK("-1", 0xff);
    OK("uint8", 0xcc, 0xff);
    OK("uint16", 0xcd, 0xff, 0xff);
    OK("uint32", 0xce, 0, 0, 0, 1);
    OK("uint64", 0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff);
    OK("int8", 0xd0, 0x80);
    OK("int16", 0xd1, 0x80, 0x00);
    OK("int32", 0xd2, 0x80, 0, 0, 0);
    OK("int64", 0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0);
    OK("float32", 0xca, 0x3f, 0x80, 0, 0);
    OK("float64", 0xcb, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0);
}

Test(value, strings_bins_exts) {
    OK("empty fixstr", 0xa0);
    OK("fixstr", 0xa3, 'a', 'b', 'c');
    OK("str8", 0xd9, 2, 'h', 'i');
    OK("str8 empty", 0xd9, 0);
    OK("str16", 0xda, 0, 1, 'x');
    OK("str32", 0xdb, 0, 0, 0, 1, 'x');
    OK("bin8", 0xc4, 3, 0, 1, 2);
    OK("bin8 empty", 0xc4, 0);
    OK("bin16", 0xc5, 0, 2, 0, 0);
    OK("bin32", 0xc6, 0, 0, 0, 1, 0);
    OK("fixext1", 0xd4, 1, 0xaa);
    OK("fixext2", 0xd5, 1, 0, 0);
    OK("fixext4 timestamp", 0xd6, 0xff, 0, 0, 0, 1);
    OK("fixext8", 0xd7, 1, 0, 0, 0, 0, 0, 0, 0, 0);
    OK("fixext16", 0xd8, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    OK("ext8", 0xc7, 2, 5, 0xaa, 0xbb);
    OK("ext8 empty", 0xc7, 0, 5);
    OK("ext16", 0xc8, 0, 1, 5, 0xaa);
    OK("ext32", 0xc9, 0, 0, 0, 1, 5, 0xaa);
}

Test(value, containers) {
    OK("empty fixarray", 0x90);
    OK("empty fixmap", 0x80);
    OK("fixarray", 0x93, 1, 2, 3);
    OK("fixmap", 0x82, 0xa1, 'a', 1, 0xa1, 'b', 0x90);
    OK("array16", 0xdc, 0, 2, 0xc0, 0xc3);
    OK("array32", 0xdd, 0, 0, 0, 1, 0xc0);
    OK("map16", 0xde, 0, 1, 1, 2);
    OK("map32", 0xdf, 0, 0, 0, 1, 0xa0, 0xc0);
    OK("empty array16", 0xdc, 0, 0);
    OK("empty map32", 0xdf, 0, 0, 0, 0);
    OK("nested", 0x92, 0x91, 0x81, 0xa1, 'k', 0x92, 0xc4, 1, 0, 0xd4, 1, 2, 0x80);
    OK("map with container keys", 0x81, 0x91, 1, 0x80);
}

Test(value, empty_and_reserved) {
    cr_expect_eq(eddy_msgpack_check("", 0, 8), EDDY_ERR_MALFORMED, "no value at all");
    cr_expect_eq(eddy_msgpack_check(NULL, 0, 8), EDDY_ERR_MALFORMED);
    cr_expect_eq(eddy_msgpack_check(NULL, 5, 8), EDDY_ERR_MALFORMED);
    eddy_value *v = NULL;
    eddy_error err = {0};
    cr_expect_eq(eddy_value_decode("", 0, &v, &err), EDDY_ERR_MALFORMED);
    cr_expect_null(v);
    BAD("reserved 0xc1", 0xc1);
    BAD("0xc1 inside an array", 0x92, 0x01, 0xc1);
}

Test(value, truncated) {
    BAD("fixstr short", 0xa3, 'a', 'b');
    BAD("str8 short", 0xd9, 5, 'a', 'b');
    BAD("str8 no length", 0xd9);
    BAD("str16 half length", 0xda, 0);
    BAD("str32 short", 0xdb, 0, 0, 0, 9, 'x');
    BAD("str32 huge", 0xdb, 0xff, 0xff, 0xff, 0xff);
    BAD("bin8 short", 0xc4, 2, 0);
    BAD("bin16 short", 0xc5, 1, 0, 0);
    BAD("bin32 header short", 0xc6, 0, 0, 0);
    BAD("bin32 huge", 0xc6, 0xff, 0xff, 0xff, 0xff, 0);
    BAD("ext8 missing type", 0xc7, 0);
    BAD("ext8 missing data", 0xc7, 1, 5);
    BAD("ext16 short", 0xc8, 0, 2, 5, 0);
    BAD("ext32 huge", 0xc9, 0xff, 0xff, 0xff, 0xff, 5);
    BAD("fixext1 short", 0xd4, 1);
    BAD("fixext16 short", 0xd8, 1, 0, 0, 0);
    BAD("uint8 short", 0xcc);
    BAD("uint16 short", 0xcd, 0);
    BAD("uint32 short", 0xce, 0, 0, 0);
    BAD("uint64 short", 0xcf, 0, 0, 0, 0, 0, 0, 0);
    BAD("int64 short", 0xd3, 0);
    BAD("float32 short", 0xca, 0, 0);
    BAD("float64 short", 0xcb, 0, 0, 0, 0, 0, 0, 0);
    BAD("array missing element", 0x92, 0x01);
    BAD("map missing value", 0x81, 0x01);
    BAD("array16 header short", 0xdc, 0);
    BAD("map32 header short", 0xdf, 0, 0);
    BAD("nested truncation", 0x91, 0x91, 0xa2, 'x');
}

/* Five bytes declaring four billion elements: msgpack-c would reserve ~100 GB for it. */
Test(value, huge_declared_counts_are_refused_without_allocation) {
    BAD("array32 of 2^32-1", 0xdd, 0xff, 0xff, 0xff, 0xff);
    BAD("map32 of 2^32-1", 0xdf, 0xff, 0xff, 0xff, 0xff);
    BAD("array16 of 65535", 0xdc, 0xff, 0xff);
    BAD("map16 of 65535", 0xde, 0xff, 0xff);
    BAD("fixarray of 15 with 14", 0x9f, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14);
    BAD("fixmap of 1 with one byte", 0x81, 0x01);
    /* counts are checked against the bytes left after what is already owed */
    BAD("inner count fits the input but not with the outer's", 0x92, 0x92, 0, 0);
    BAD("map counts two elements per entry", 0x82, 1, 2, 3);
    /* refused as soon as the count is read, not later as a truncation */
    eddy_error err = {0};
    eddy_value *v = NULL;
    cr_expect_eq(eddy_value_decode(B(0x92, 0x92, 0, 0), &v, &err), EDDY_ERR_MALFORMED);
    cr_expect(strstr(err.detail, "more elements than bytes remain at byte 1"), "%s", err.detail);
    cr_expect_eq(eddy_value_decode(B(0xdd, 0xff, 0xff, 0xff, 0xff), &v, &err), EDDY_ERR_MALFORMED);
    cr_expect(strstr(err.detail, "more elements than bytes remain at byte 0"), "%s", err.detail);
    /* the biggest count the input allows is fine */
    OK("array32 of 3", 0xdd, 0, 0, 0, 3, 1, 2, 3);
}

Test(value, trailing_bytes) {
    BAD("two values", 0x01, 0x02);
    BAD("nil then garbage", 0xc0, 0xff);
    BAD("array then extra", 0x91, 0x01, 0x02);
    BAD("str then extra", 0xa1, 'a', 'b');
}

static unsigned char *nested(unsigned depth, size_t *len) {
    unsigned char *p = malloc(depth + 1);
    memset(p, 0x91, depth); /* [[[...nil...]]] */
    p[depth] = 0xc0;
    *len = depth + 1;
    return p;
}

Test(value, depth_limit) {
    size_t len;
    unsigned char *p = nested(EDDY_VALUE_MAX_DEPTH, &len);
    cr_expect_eq(eddy_msgpack_check(p, len, EDDY_VALUE_MAX_DEPTH), EDDY_OK);
    cr_expect_eq(eddy_msgpack_check(p, len, EDDY_VALUE_MAX_DEPTH - 1), EDDY_ERR_MALFORMED);
    free(p);
    p = nested(EDDY_VALUE_MAX_DEPTH + 1, &len);
    cr_expect_eq(eddy_msgpack_check(p, len, EDDY_VALUE_MAX_DEPTH), EDDY_ERR_MALFORMED);
    eddy_value *v = NULL;
    eddy_error err = {0};
    cr_expect_eq(eddy_value_decode(p, len, &v, &err), EDDY_ERR_MALFORMED);
    cr_expect(strstr(err.detail, "deep"), "detail: %s", err.detail);
    free(p);

    /* an empty container is a level too */
    const unsigned char two[] = {0x91, 0x90};
    cr_expect_eq(eddy_msgpack_check(two, 2, 2), EDDY_OK);
    cr_expect_eq(eddy_msgpack_check(two, 2, 1), EDDY_ERR_MALFORMED);
    const unsigned char map[] = {0x81, 0x80, 0x90};
    cr_expect_eq(eddy_msgpack_check(map, 3, 2), EDDY_OK);
    cr_expect_eq(eddy_msgpack_check(map, 3, 1), EDDY_ERR_MALFORMED);
    /* depth 0 admits scalars only */
    cr_expect_eq(eddy_msgpack_check(B(0x01), 0), EDDY_OK);
    cr_expect_eq(eddy_msgpack_check(B(0x90), 0), EDDY_ERR_MALFORMED);
    /* siblings do not add up: depth is nesting, not count */
    const unsigned char wide[] = {0x93, 0x91, 0x01, 0x91, 0x02, 0x91, 0x03};
    cr_expect_eq(eddy_msgpack_check(wide, sizeof(wide), 2), EDDY_OK);

    /* a deep but valid value: the limit holds however large max_depth is */
    p = nested(100000, &len);
    cr_expect_eq(eddy_msgpack_check(p, len, 100), EDDY_ERR_MALFORMED);
    cr_expect_eq(eddy_msgpack_check(p, len, UINT32_MAX), EDDY_ERR_MALFORMED);
    free(p);
}

/* The decoder goes as deep as msgpack-c can; what it cannot is refused as malformed, not as
 * out of memory. */
Test(value, decode_depth) {
    unsigned deepest = 0;
    for (unsigned d = 1; d <= EDDY_VALUE_MAX_DEPTH + 1; d++) {
        size_t len;
        unsigned char *p = nested(d, &len);
        eddy_value *v = NULL;
        eddy_status st = eddy_value_decode(p, len, &v, NULL);
        cr_assert(st == EDDY_OK || st == EDDY_ERR_MALFORMED, "depth %u: %s", d,
                  eddy_status_name(st));
        if (st == EDDY_OK) {
            cr_assert_eq(deepest, d - 1, "accepted depths are contiguous");
            deepest = d;
            const msgpack_object *o = eddy_value_object(v);
            for (unsigned i = 0; i < d; i++) {
                cr_assert_eq(o->type, MSGPACK_OBJECT_ARRAY);
                cr_assert_eq(o->via.array.size, 1);
                o = &o->via.array.ptr[0];
            }
            cr_expect_eq(o->type, MSGPACK_OBJECT_NIL);
        }
        eddy_value_free(v);
        free(p);
    }
    cr_expect_geq(deepest, 32, "at least msgpack-c's own depth");
    cr_expect_leq(deepest, EDDY_VALUE_MAX_DEPTH);
}

Test(value, decoded_value_owns_its_bytes) {
    unsigned char *p = malloc(16);
    const unsigned char src[] = {0x82, 0xa1, 'k', 0xa3, 'v', 'a', 'l', 0xc4, 2, 0, 1, 0xa0};
    /* {"k": "val", bin(00 01): ""} */
    memcpy(p, src, sizeof(src));
    eddy_value *v = NULL;
    eddy_error err = {0};
    cr_assert_eq(eddy_value_decode(p, sizeof(src), &v, &err), EDDY_OK, "%s", err.detail);
    memset(p, 0xee, 16);
    free(p);
    const msgpack_object *o = eddy_value_object(v);
    cr_assert_eq(o->type, MSGPACK_OBJECT_MAP);
    cr_assert_eq(o->via.map.size, 2);
    const msgpack_object_kv *kv = o->via.map.ptr;
    cr_assert_eq(kv[0].key.type, MSGPACK_OBJECT_STR);
    cr_expect_arr_eq(kv[0].key.via.str.ptr, "k", 1);
    cr_assert_eq(kv[0].val.type, MSGPACK_OBJECT_STR);
    cr_assert_eq(kv[0].val.via.str.size, 3);
    cr_expect_arr_eq(kv[0].val.via.str.ptr, "val", 3);
    cr_assert_eq(kv[1].key.type, MSGPACK_OBJECT_BIN);
    cr_assert_eq(kv[1].key.via.bin.size, 2);
    cr_expect_arr_eq(kv[1].key.via.bin.ptr, "\0\1", 2);
    eddy_value_free(v);
}

Test(value, decode_arguments) {
    eddy_value *v = NULL;
    eddy_error err = {0};
    cr_expect_eq(eddy_value_decode(B(0xc0), NULL, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_value_decode(NULL, 3, &v, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_null(eddy_value_object(NULL));
    eddy_value_free(NULL);
}

/* ---- publishing values ---- */

struct sample {
    int64_t n;
    const char *s;
};

static eddy_status pack_sample(msgpack_packer *pk, void *user) {
    const struct sample *x = user;
    msgpack_pack_map(pk, 4);
    msgpack_pack_str_with_body(pk, "n", 1);
    msgpack_pack_int64(pk, x->n);
    msgpack_pack_str_with_body(pk, "s", 1);
    msgpack_pack_str_with_body(pk, x->s, strlen(x->s));
    msgpack_pack_str_with_body(pk, "list", 4);
    msgpack_pack_array(pk, 4);
    msgpack_pack_true(pk);
    msgpack_pack_nil(pk);
    msgpack_pack_double(pk, 2.5);
    msgpack_pack_array(pk, 1);
    msgpack_pack_map(pk, 0);
    msgpack_pack_str_with_body(pk, "bin", 3);
    msgpack_pack_bin_with_body(pk, "\0\1\2", 3);
    return EDDY_OK;
}

static eddy_event *valid_event(void) {
    eddy_event *ev = eddy_event_new();
    eddy_event_set_id(ev, "1");
    eddy_event_set_source(ev, "/s");
    eddy_event_set_type(ev, "t");
    return ev;
}

Test(value, set_value_round_trip) {
    eddy_event *ev = valid_event();
    struct sample x = {-1234567890123LL, "hello"};
    eddy_error err = {0};
    cr_assert_eq(eddy_event_set_value(ev, pack_sample, &x, &err), EDDY_OK, "%s", err.detail);
    cr_expect_str_eq(eddy_event_datacontenttype(ev), EDDY_MSGPACK_CONTENT_TYPE);
    cr_expect_eq(eddy_event_validate(ev, NULL), EDDY_OK);

    eddy_value *v = NULL;
    cr_assert_eq(eddy_event_decode_value(ev, &v, &err), EDDY_OK, "%s", err.detail);
    eddy_event_free(ev); /* the value does not reference the event */
    const msgpack_object *o = eddy_value_object(v);
    cr_assert_eq(o->type, MSGPACK_OBJECT_MAP);
    cr_assert_eq(o->via.map.size, 4);
    const msgpack_object_kv *kv = o->via.map.ptr;
    cr_expect_eq(kv[0].val.type, MSGPACK_OBJECT_NEGATIVE_INTEGER);
    cr_expect_eq(kv[0].val.via.i64, -1234567890123LL);
    cr_expect_arr_eq(kv[1].val.via.str.ptr, "hello", 5);
    const msgpack_object *list = &kv[2].val;
    cr_assert_eq(list->type, MSGPACK_OBJECT_ARRAY);
    cr_assert_eq(list->via.array.size, 4);
    cr_expect_eq(list->via.array.ptr[0].type, MSGPACK_OBJECT_BOOLEAN);
    cr_expect(list->via.array.ptr[0].via.boolean);
    cr_expect_eq(list->via.array.ptr[1].type, MSGPACK_OBJECT_NIL);
    cr_expect_eq(list->via.array.ptr[2].type, MSGPACK_OBJECT_FLOAT64);
    cr_expect_eq(list->via.array.ptr[2].via.f64, 2.5);
    cr_assert_eq(list->via.array.ptr[3].type, MSGPACK_OBJECT_ARRAY);
    cr_expect_eq(list->via.array.ptr[3].via.array.ptr[0].type, MSGPACK_OBJECT_MAP);
    cr_expect_eq(kv[3].val.type, MSGPACK_OBJECT_BIN);
    cr_expect_arr_eq(kv[3].val.via.bin.ptr, "\0\1\2", 3);
    eddy_value_free(v);
}

static eddy_status pack_failing(msgpack_packer *pk, void *user) {
    msgpack_pack_int(pk, 1);
    return EDDY_ERR_HANDLER_FAILED;
}

static eddy_status pack_two(msgpack_packer *pk, void *user) {
    msgpack_pack_int(pk, 1);
    msgpack_pack_int(pk, 2);
    return EDDY_OK;
}

static eddy_status pack_nothing(msgpack_packer *pk, void *user) { return EDDY_OK; }

static eddy_status pack_half(msgpack_packer *pk, void *user) {
    msgpack_pack_array(pk, 3);
    msgpack_pack_int(pk, 1);
    return EDDY_OK;
}

static eddy_status pack_deep(msgpack_packer *pk, void *user) {
    for (unsigned i = 0; i < *(unsigned *)user; i++)
        msgpack_pack_array(pk, 1);
    msgpack_pack_nil(pk);
    return EDDY_OK;
}

static void expect_set_value_refused(eddy_pack_fn fn, void *user, eddy_status st) {
    eddy_event *ev = valid_event();
    eddy_event_set_data(ev, "old", 3);
    eddy_event_set_datacontenttype(ev, "text/plain");
    eddy_error err = {0};
    cr_expect_eq(eddy_event_set_value(ev, fn, user, &err), st, "got detail '%s'", err.detail);
    cr_expect_eq(err.status, st);
    cr_expect_neq(err.detail[0], '\0');
    size_t len;
    const char *d = eddy_event_data(ev, &len);
    cr_expect_eq(len, 3, "the event is unchanged");
    cr_expect_arr_eq(d, "old", 3);
    cr_expect_str_eq(eddy_event_datacontenttype(ev), "text/plain");
    cr_expect_eq(eddy_event_set_value(ev, fn, user, NULL), st);
    eddy_event_free(ev);
}

Test(value, set_value_refusals) {
    expect_set_value_refused(pack_failing, NULL, EDDY_ERR_HANDLER_FAILED);
    expect_set_value_refused(pack_two, NULL, EDDY_ERR_MALFORMED);
    expect_set_value_refused(pack_nothing, NULL, EDDY_ERR_MALFORMED);
    expect_set_value_refused(pack_half, NULL, EDDY_ERR_MALFORMED);
    unsigned deep = EDDY_VALUE_MAX_DEPTH + 1;
    expect_set_value_refused(pack_deep, &deep, EDDY_ERR_MALFORMED);
    eddy_error err = {0};
    cr_expect_eq(eddy_event_set_value(NULL, pack_two, NULL, &err), EDDY_ERR_INVALID_ARGUMENT);
    eddy_event *ev = valid_event();
    cr_expect_eq(eddy_event_set_value(ev, NULL, NULL, &err), EDDY_ERR_INVALID_ARGUMENT);
    eddy_event_free(ev);
}

/* Whatever set_value accepts, decode_value reads back. */
Test(value, set_value_depth_matches_decode) {
    for (unsigned d = 0; d <= EDDY_VALUE_MAX_DEPTH + 1; d++) {
        eddy_event *ev = valid_event();
        eddy_status st = eddy_event_set_value(ev, pack_deep, &d, NULL);
        eddy_value *v = NULL;
        if (st == EDDY_OK)
            cr_expect_eq(eddy_event_decode_value(ev, &v, NULL), EDDY_OK, "depth %u", d);
        else
            cr_expect_eq(st, EDDY_ERR_MALFORMED);
        eddy_value_free(v);
        eddy_event_free(ev);
    }
}

Test(value, decode_value_from_events) {
    eddy_event *ev = valid_event();
    eddy_value *v = (eddy_value *)ev;
    eddy_error err = {0};
    cr_expect_eq(eddy_event_decode_value(ev, &v, &err), EDDY_ERR_MALFORMED, "no data");
    cr_expect_null(v);
    cr_expect(strncmp(err.detail, "data:", 5) == 0, "%s", err.detail);

    /* data without a content type is tried */
    eddy_event_set_data(ev, "\x93\x01\x02\x03", 4);
    cr_assert_eq(eddy_event_decode_value(ev, &v, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(eddy_value_object(v)->via.array.size, 3);
    eddy_value_free(v);

    /* the msgpack type, in any case and with parameters */
    eddy_event_set_datacontenttype(ev, "Application/MsgPack; v=1");
    cr_expect_eq(eddy_event_decode_value(ev, &v, &err), EDDY_OK, "%s", err.detail);
    eddy_value_free(v);

    /* data declared as something else is not a value */
    static const char *const others[] = {"application/json", "application/msgpackx",
                                         "application/msgpac", "text/plain"};
    for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
        eddy_event_set_datacontenttype(ev, others[i]);
        cr_expect_eq(eddy_event_decode_value(ev, &v, &err), EDDY_ERR_MALFORMED, "%s", others[i]);
        cr_expect(strncmp(err.detail, "datacontenttype:", 16) == 0, "%s", err.detail);
        cr_expect_null(v);
    }

    /* malformed bytes under the right type */
    eddy_event_set_datacontenttype(ev, EDDY_MSGPACK_CONTENT_TYPE);
    eddy_event_set_data(ev, "\xdd\xff\xff\xff\xff", 5);
    cr_expect_eq(eddy_event_decode_value(ev, &v, &err), EDDY_ERR_MALFORMED);
    cr_expect(strstr(err.detail, "more elements"), "%s", err.detail);
    eddy_event_set_data(ev, "", 0);
    cr_expect_eq(eddy_event_decode_value(ev, &v, &err), EDDY_ERR_MALFORMED);

    cr_expect_eq(eddy_event_decode_value(NULL, &v, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_event_decode_value(ev, NULL, &err), EDDY_ERR_INVALID_ARGUMENT);
    eddy_event_free(ev);
}
