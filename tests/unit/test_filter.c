/* SPDX-License-Identifier: BSD-3-Clause */
/* Filters: every kind (types, source, subject, time range, data conditions, and/or), the
 * built-in msgpack data field reader, RFC 3339 parsing into instants, the comparison rules of
 * data conditions, short-circuit evaluation, readers written by users, and copies. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "eddy/filter.h"
#include "eddy/msgpack.h"
#include "util/rfc3339.h"

/* ---- helpers ---------------------------------------------------------------------------- */

static eddy_event *event(const char *type, const char *source) {
    eddy_event *ev = eddy_event_new();
    cr_assert_not_null(ev);
    cr_assert_eq(eddy_event_set_id(ev, "1"), EDDY_OK);
    cr_assert_eq(eddy_event_set_type(ev, type), EDDY_OK);
    cr_assert_eq(eddy_event_set_source(ev, source), EDDY_OK);
    return ev;
}

static void pack_str(msgpack_packer *pk, const char *s) {
    msgpack_pack_str(pk, strlen(s));
    msgpack_pack_str_body(pk, s, strlen(s));
}

/* The document most data tests read:
 * {"i": 42, "neg": -7, "big": UINT64_MAX, "d": 2.5, "f32": 1.5f, "one": 1.0, "s": "hello",
 *  "empty": "", "b": true, "n": nil, "arr": [1, 2], "bin": <bin "xy">, "ext": <ext 1 "z">,
 *  "m": {"x": {"y": "deep"}, "k": 1, "a.b": 3}, 7: "int key", "dup": 1, "dup": 2,
 *  "i64min": INT64_MIN, "u63": 2^63, "nul": "a\0b", {"s": "not me"}: "value of a container key",
 *  "last": 1} */
static eddy_status pack_doc(msgpack_packer *pk, void *user) {
    (void)user;
    msgpack_pack_map(pk, 22);
    pack_str(pk, "i");
    msgpack_pack_int(pk, 42);
    pack_str(pk, "neg");
    msgpack_pack_int(pk, -7);
    pack_str(pk, "big");
    msgpack_pack_uint64(pk, UINT64_MAX);
    pack_str(pk, "d");
    msgpack_pack_double(pk, 2.5);
    pack_str(pk, "f32");
    msgpack_pack_float(pk, 1.5f);
    pack_str(pk, "one");
    msgpack_pack_double(pk, 1.0);
    pack_str(pk, "s");
    pack_str(pk, "hello");
    pack_str(pk, "empty");
    pack_str(pk, "");
    pack_str(pk, "b");
    msgpack_pack_true(pk);
    pack_str(pk, "n");
    msgpack_pack_nil(pk);
    pack_str(pk, "arr");
    msgpack_pack_array(pk, 2);
    msgpack_pack_int(pk, 1);
    msgpack_pack_int(pk, 2);
    pack_str(pk, "bin");
    msgpack_pack_bin(pk, 2);
    msgpack_pack_bin_body(pk, "xy", 2);
    pack_str(pk, "ext");
    msgpack_pack_ext(pk, 1, 1);
    msgpack_pack_ext_body(pk, "z", 1);
    pack_str(pk, "m");
    msgpack_pack_map(pk, 3);
    pack_str(pk, "x");
    msgpack_pack_map(pk, 1);
    pack_str(pk, "y");
    pack_str(pk, "deep");
    pack_str(pk, "k");
    msgpack_pack_int(pk, 1);
    pack_str(pk, "a.b");
    msgpack_pack_int(pk, 3);
    msgpack_pack_int(pk, 7);
    pack_str(pk, "int key");
    pack_str(pk, "dup");
    msgpack_pack_int(pk, 1);
    pack_str(pk, "dup");
    msgpack_pack_int(pk, 2);
    pack_str(pk, "i64min");
    msgpack_pack_int64(pk, INT64_MIN);
    pack_str(pk, "u63");
    msgpack_pack_uint64(pk, (uint64_t)1 << 63);
    pack_str(pk, "nul");
    msgpack_pack_str(pk, 3);
    msgpack_pack_str_body(pk, "a\0b", 3);
    /* A key that is a container, to be skipped whole. */
    msgpack_pack_map(pk, 1);
    pack_str(pk, "s");
    pack_str(pk, "not me");
    pack_str(pk, "value of a container key");
    pack_str(pk, "last");
    msgpack_pack_int(pk, 1);
    return EDDY_OK;
}

static eddy_event *doc_event(void) {
    eddy_event *ev = event("t", "src");
    eddy_error err = {0};
    cr_assert_eq(eddy_event_set_value(ev, pack_doc, NULL, &err), EDDY_OK, "%s", err.detail);
    return ev;
}

/* Matches with the msgpack reader and expects EDDY_OK. */
static bool m(const eddy_filter *f, const eddy_event *ev) {
    bool out = !false;
    eddy_error err = {0};
    eddy_status st = eddy_filter_match(f, ev, eddy_msgpack_reader(), &out, &err);
    cr_assert_eq(st, EDDY_OK, "%s: %s", eddy_status_name(st), err.detail);
    cr_assert_eq(out, eddy_filter_matches(f, ev));
    return out;
}

static bool data(const eddy_event *ev, const char *path, eddy_data_op op, eddy_field v) {
    eddy_filter *f = eddy_filter_data(path, op, &v);
    cr_assert_not_null(f, "path %s", path);
    bool r = m(f, ev);
    eddy_filter *c = eddy_filter_dup(f);
    cr_assert_not_null(c);
    cr_assert_eq(m(c, ev), r, "copy of %s", path);
    eddy_filter_free(c);
    eddy_filter_free(f);
    return r;
}

static eddy_status pack_v(msgpack_packer *pk, void *user) {
    msgpack_pack_map(pk, 1);
    pack_str(pk, "v");
    msgpack_pack_int64(pk, *(const int64_t *)user);
    return EDDY_OK;
}

/* An event whose data is {"v": v}. */
static eddy_event *int_event(int64_t v) {
    eddy_event *ev = event("t", "s");
    cr_assert_eq(eddy_event_set_value(ev, pack_v, &v, NULL), EDDY_OK);
    return ev;
}

static eddy_field ufield(uint64_t u) {
    eddy_field f = {.kind = EDDY_FIELD_UINT, .u = u};
    return f;
}

/* ---- types, source, subject ------------------------------------------------------------- */

Test(filter, types) {
    const char *types[] = {"c", "a", "b", "a", "c"};
    eddy_filter *f = eddy_filter_types(types, 5);
    cr_assert_not_null(f);
    cr_expect_not(eddy_filter_needs_data(f));
    for (int i = 0; i < 4; i++) {
        const char *t = (const char *[]){"a", "b", "c", "d"}[i];
        eddy_event *ev = event(t, "s");
        cr_expect_eq(m(f, ev), i < 3, "type %s", t);
        eddy_event_free(ev);
    }
    eddy_filter_free(f);

    eddy_event *ev = event("a", "s");
    f = eddy_filter_types(NULL, 0);
    cr_assert_not_null(f);
    cr_expect_not(m(f, ev), "no types: no event");
    eddy_filter_free(f);
    f = eddy_filter_type("a");
    cr_expect(m(f, ev));
    eddy_filter_free(f);
    f = eddy_filter_type("ab");
    cr_expect_not(m(f, ev));
    eddy_filter_free(f);
    cr_expect(m(NULL, ev), "a NULL filter matches everything");
    eddy_event_free(ev);

    cr_expect_null(eddy_filter_types(NULL, 1));
    cr_expect_null(eddy_filter_types((const char *[]){"a", NULL}, 2));
    cr_expect_null(eddy_filter_type(NULL));
}

Test(filter, source_and_subject) {
    eddy_event *ev = event("t", "/orders");
    eddy_filter *src = eddy_filter_source("/orders");
    eddy_filter *other = eddy_filter_source("/order");
    eddy_filter *subj = eddy_filter_subject("42");
    cr_expect(m(src, ev));
    cr_expect_not(m(other, ev));
    cr_expect_not(m(subj, ev), "no subject: no match");
    cr_assert_eq(eddy_event_set_subject(ev, "42"), EDDY_OK);
    cr_expect(m(subj, ev));
    cr_assert_eq(eddy_event_set_subject(ev, "420"), EDDY_OK);
    cr_expect_not(m(subj, ev));
    eddy_filter_free(src);
    eddy_filter_free(other);
    eddy_filter_free(subj);
    eddy_event_free(ev);
    cr_expect_null(eddy_filter_source(NULL));
    cr_expect_null(eddy_filter_subject(NULL));
}

/* ---- RFC 3339 and time ranges ----------------------------------------------------------- */

static eddy__instant at(const char *s) {
    eddy__instant t = {-1, -1};
    cr_assert(eddy__rfc3339_parse(s, &t), "refused %s", s);
    return t;
}

#define EXPECT_AT(s, sec_, nsec_)                                                                  \
    do {                                                                                           \
        eddy__instant t_ = at(s);                                                                  \
        cr_expect_eq(t_.sec, (int64_t)(sec_), "%s: sec %lld", s, (long long)t_.sec);               \
        cr_expect_eq(t_.nsec, (int32_t)(nsec_), "%s: nsec %d", s, (int)t_.nsec);                   \
    } while (0)

Test(rfc3339, valid) {
    EXPECT_AT("1970-01-01T00:00:00Z", 0, 0);
    EXPECT_AT("1970-01-01t00:00:00z", 0, 0);
    EXPECT_AT("1970-01-01 00:00:01Z", 1, 0);
    EXPECT_AT("1969-12-31T23:59:59Z", -1, 0);
    EXPECT_AT("2000-01-01T00:00:00Z", 946684800, 0);
    EXPECT_AT("2000-02-29T00:00:00Z", 951782400, 0); /* leap day of a century leap year */
    EXPECT_AT("2024-02-29T12:00:00Z", 1709208000, 0);
    EXPECT_AT("2026-11-30T02:11:20Z", 1796004680, 0);
    EXPECT_AT("0000-01-01T00:00:00Z", -62167219200LL, 0);
    EXPECT_AT("9999-12-31T23:59:59Z", 253402300799LL, 0);
    /* offsets: local time minus the offset is UTC */
    EXPECT_AT("1970-01-01T01:00:00+01:00", 0, 0);
    EXPECT_AT("1969-12-31T19:30:00-04:30", 0, 0);
    EXPECT_AT("1970-01-01T00:00:00-00:00", 0, 0);
    EXPECT_AT("1970-01-01T00:00:00+23:59", -(23 * 3600 + 59 * 60), 0);
    /* fractions of any length, truncated to the nanosecond */
    EXPECT_AT("1970-01-01T00:00:00.5Z", 0, 500000000);
    EXPECT_AT("1970-01-01T00:00:00.25+00:00", 0, 250000000);
    EXPECT_AT("1970-01-01T00:00:00.000000001Z", 0, 1);
    EXPECT_AT("1970-01-01T00:00:00.123456789Z", 0, 123456789);
    EXPECT_AT("1970-01-01T00:00:00.1234567899999Z", 0, 123456789);
    EXPECT_AT("1969-12-31T23:59:59.999999999Z", -1, 999999999);
    /* a leap second is the first second of the next minute */
    EXPECT_AT("1998-12-31T23:59:60Z", 915148800, 0);
}

Test(rfc3339, invalid) {
    const char *bad[] = {
        "",
        "2026-11-30",
        "2026-11-30T12:00:00",       /* no offset */
        "2026-13-01T00:00:00Z",      /* month 13 */
        "2026-00-01T00:00:00Z",      /* month 0 */
        "2026-11-00T00:00:00Z",      /* day 0 */
        "2026-11-31T00:00:00Z",      /* November has 30 days */
        "2026-02-29T00:00:00Z",      /* not a leap year */
        "1900-02-29T00:00:00Z",      /* century, not a leap year */
        "2026-11-30T24:00:00Z",      /* hour 24 */
        "2026-11-30T12:60:00Z",      /* minute 60 */
        "2026-11-30T12:00:61Z",      /* second 61 */
        "2026-11-30T12:00:00.Z",     /* empty fraction */
        "2026-11-30T12:00:00,5Z",    /* comma fraction */
        "2026-11-30X12:00:00Z",      /* bad separator */
        "2026-11-30T12:00Z",         /* no seconds */
        "2026-11-30T12:00:00+0100",  /* offset without colon */
        "2026-11-30T12:00:00+01",    /* short offset */
        "2026-11-30T12:00:00+24:00", /* offset hour 24 */
        "2026-11-30T12:00:00+01:60", /* offset minute 60 */
        "2026-11-30T12:00:00ZZ",     /* trailing */
        "2026-11-30T12:00:00Z ",     /* trailing space */
        " 2026-11-30T12:00:00Z",     /* leading space */
        "26-11-30T12:00:00Z",        /* short year */
        "+2026-11-30T12:00:00Z",     /* sign on the year */
        "2026-1-30T12:00:00Z",       /* one-digit month */
        "2026-11-30T1:00:00Z",       /* one-digit hour */
        "2026-11-30T12:00:00UTC",    /* named zone */
        "２026-11-30T12:00:00Z",     /* not ASCII digits */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        eddy__instant t = {7, 7};
        cr_expect_not(eddy__rfc3339_parse(bad[i], &t), "accepted '%s'", bad[i]);
        cr_expect(t.sec == 7 && t.nsec == 7, "%s: out changed", bad[i]);
        cr_expect_null(eddy_filter_time_range(bad[i], NULL), "from '%s'", bad[i]);
        cr_expect_null(eddy_filter_time_range(NULL, bad[i]), "to '%s'", bad[i]);
    }
    cr_expect_not(eddy__rfc3339_parse(NULL, &(eddy__instant){0, 0}));
}

Test(rfc3339, order) {
    cr_expect_lt(
        eddy__instant_cmp(at("2026-01-01T00:00:00Z"), at("2026-01-01T00:00:00.000000001Z")), 0);
    cr_expect_eq(eddy__instant_cmp(at("2026-01-01T01:00:00+01:00"), at("2026-01-01T00:00:00Z")), 0);
    cr_expect_gt(eddy__instant_cmp(at("2026-01-01T00:00:00-00:01"), at("2026-01-01T00:00:59Z")), 0);
    cr_expect_lt(eddy__instant_cmp(at("1969-12-31T23:59:59.5Z"), at("1970-01-01T00:00:00Z")), 0);
}

static bool time_match(const eddy_filter *f, const char *time) {
    eddy_event *ev = event("t", "s");
    cr_assert_eq(eddy_event_set_time(ev, time), EDDY_OK);
    bool r = m(f, ev);
    eddy_event_free(ev);
    return r;
}

Test(filter, time_range) {
    eddy_filter *f = eddy_filter_time_range("2026-11-30T12:00:00Z", "2026-11-30T13:00:00.5+01:00");
    cr_assert_not_null(f);
    /* [12:00:00, 12:00:00.5) UTC */
    cr_expect_not(time_match(f, "2026-11-30T11:59:59.999999999Z"));
    cr_expect(time_match(f, "2026-11-30T12:00:00Z"), "from is inclusive");
    cr_expect(time_match(f, "2026-11-30T13:00:00+01:00"));
    cr_expect(time_match(f, "2026-11-30T12:00:00.499999999Z"));
    cr_expect_not(time_match(f, "2026-11-30T12:00:00.5Z"), "to is exclusive");
    cr_expect_not(time_match(f, "2026-11-30T07:00:00.6-05:00"));
    cr_expect(time_match(f, "2026-11-30T07:00:00.4-05:00"));

    eddy_event *ev = event("t", "s");
    cr_expect_not(m(f, ev), "no time: no match");
    eddy_filter_free(f);

    f = eddy_filter_time_range(NULL, "2000-01-01T00:00:00Z");
    cr_expect(time_match(f, "1999-12-31T23:59:59Z"));
    cr_expect(time_match(f, "0001-01-01T00:00:00Z"));
    cr_expect_not(time_match(f, "2000-01-01T00:00:00Z"));
    eddy_filter_free(f);
    f = eddy_filter_time_range("2000-01-01T00:00:00Z", NULL);
    cr_expect_not(time_match(f, "1999-12-31T23:59:59Z"));
    cr_expect(time_match(f, "9999-12-31T23:59:59Z"));
    eddy_filter_free(f);
    f = eddy_filter_time_range(NULL, NULL);
    cr_expect(time_match(f, "2000-01-01T00:00:00Z"), "both ends open: any time");
    cr_expect_not(m(f, ev), "but a time is needed");
    eddy_filter_free(f);
    f = eddy_filter_time_range("2001-01-01T00:00:00Z", "2000-01-01T00:00:00Z");
    cr_assert_not_null(f);
    cr_expect_not(time_match(f, "2000-06-01T00:00:00Z"), "an empty range matches nothing");
    eddy_filter_free(f);
    eddy_event_free(ev);
}

/* ---- data conditions -------------------------------------------------------------------- */

Test(filter, data_ops_on_every_kind) {
    eddy_event *ev = doc_event();
    eddy_field i42 = eddy_field_int(42);
    /* int field */
    cr_expect(data(ev, "i", EDDY_DATA_EQ, i42));
    cr_expect_not(data(ev, "i", EDDY_DATA_NE, i42));
    cr_expect_not(data(ev, "i", EDDY_DATA_LT, i42));
    cr_expect(data(ev, "i", EDDY_DATA_LE, i42));
    cr_expect_not(data(ev, "i", EDDY_DATA_GT, i42));
    cr_expect(data(ev, "i", EDDY_DATA_GE, i42));
    cr_expect(data(ev, "i", EDDY_DATA_LT, eddy_field_int(43)));
    cr_expect(data(ev, "i", EDDY_DATA_GT, eddy_field_int(41)));
    cr_expect(data(ev, "i", EDDY_DATA_EXISTS, eddy_field_nil()));
    cr_expect(data(ev, "neg", EDDY_DATA_LT, eddy_field_int(0)));
    cr_expect(data(ev, "neg", EDDY_DATA_EQ, eddy_field_int(-7)));
    cr_expect(data(ev, "i64min", EDDY_DATA_EQ, eddy_field_int(INT64_MIN)));
    cr_expect(data(ev, "i64min", EDDY_DATA_LT, eddy_field_double(-9.2e18)));
    /* double fields */
    cr_expect(data(ev, "d", EDDY_DATA_EQ, eddy_field_double(2.5)));
    cr_expect(data(ev, "d", EDDY_DATA_GT, eddy_field_int(2)));
    cr_expect(data(ev, "d", EDDY_DATA_LT, eddy_field_int(3)));
    cr_expect(data(ev, "d", EDDY_DATA_NE, eddy_field_int(2)));
    cr_expect(data(ev, "f32", EDDY_DATA_EQ, eddy_field_double(1.5)), "float32 reads as a double");
    cr_expect(data(ev, "one", EDDY_DATA_EQ, eddy_field_int(1)), "1.0 equals 1");
    cr_expect(data(ev, "i", EDDY_DATA_EQ, eddy_field_double(42.0)), "42 equals 42.0");
    cr_expect(data(ev, "i", EDDY_DATA_LT, eddy_field_double(42.000001)));
    cr_expect(data(ev, "i", EDDY_DATA_GT, eddy_field_double(41.999999)));
    cr_expect_not(data(ev, "d", EDDY_DATA_EQ, eddy_field_double(NAN)), "NaN equals nothing");
    cr_expect(data(ev, "d", EDDY_DATA_NE, eddy_field_double(NAN)));
    cr_expect_not(data(ev, "d", EDDY_DATA_LE, eddy_field_double(NAN)));
    cr_expect_not(data(ev, "i", EDDY_DATA_GE, eddy_field_double(NAN)));
    /* string field */
    cr_expect(data(ev, "s", EDDY_DATA_EQ, eddy_field_string("hello")));
    cr_expect_not(data(ev, "s", EDDY_DATA_EQ, eddy_field_string("hell")));
    cr_expect(data(ev, "s", EDDY_DATA_GT, eddy_field_string("hell")), "a prefix is less");
    cr_expect(data(ev, "s", EDDY_DATA_LT, eddy_field_string("help")));
    cr_expect(data(ev, "s", EDDY_DATA_LE, eddy_field_string("hello")));
    cr_expect(data(ev, "s", EDDY_DATA_GE, eddy_field_string("hello")));
    cr_expect(data(ev, "s", EDDY_DATA_NE, eddy_field_string("Hello")));
    cr_expect(data(ev, "empty", EDDY_DATA_EQ, eddy_field_string("")));
    cr_expect(data(ev, "empty", EDDY_DATA_LT, eddy_field_string("a")));
    eddy_field nul = {.kind = EDDY_FIELD_STRING, .s = "a\0b", .len = 3};
    eddy_field nul2 = {.kind = EDDY_FIELD_STRING, .s = "a\0c", .len = 3};
    cr_expect(data(ev, "nul", EDDY_DATA_EQ, nul), "strings are bytes, NUL included");
    cr_expect(data(ev, "nul", EDDY_DATA_LT, nul2));
    cr_expect_not(data(ev, "nul", EDDY_DATA_EQ, eddy_field_string("a")));
    /* bool field */
    cr_expect(data(ev, "b", EDDY_DATA_EQ, eddy_field_bool(true)));
    cr_expect(data(ev, "b", EDDY_DATA_NE, eddy_field_bool(false)));
    cr_expect(data(ev, "b", EDDY_DATA_GT, eddy_field_bool(false)), "false < true");
    cr_expect_not(data(ev, "b", EDDY_DATA_EQ, eddy_field_int(1)), "a bool is not a number");
    /* nil field */
    cr_expect(data(ev, "n", EDDY_DATA_EQ, eddy_field_nil()));
    cr_expect(data(ev, "n", EDDY_DATA_LE, eddy_field_nil()));
    cr_expect_not(data(ev, "n", EDDY_DATA_LT, eddy_field_nil()));
    cr_expect(data(ev, "n", EDDY_DATA_EXISTS, eddy_field_nil()), "a nil field is present");
    cr_expect_not(data(ev, "n", EDDY_DATA_EQ, eddy_field_int(0)));
    cr_expect_not(data(ev, "i", EDDY_DATA_EQ, eddy_field_nil()));
    cr_expect(data(ev, "i", EDDY_DATA_NE, eddy_field_nil()));
    eddy_event_free(ev);
}

Test(filter, different_kinds_never_compare) {
    eddy_event *ev = doc_event();
    struct {
        const char *path;
        eddy_field v;
    } cases[] = {
        {"i", eddy_field_string("42")},  {"s", eddy_field_int(1)}, {"b", eddy_field_string("true")},
        {"n", eddy_field_bool(false)},   {"d", eddy_field_nil()},  {"s", eddy_field_bool(true)},
        {"arr", eddy_field_int(1)},      {"m", eddy_field_nil()},  {"bin", eddy_field_string("xy")},
        {"ext", eddy_field_string("z")},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *p = cases[i].path;
        cr_expect_not(data(ev, p, EDDY_DATA_EQ, cases[i].v), "%s EQ", p);
        cr_expect(data(ev, p, EDDY_DATA_NE, cases[i].v), "%s NE", p);
        cr_expect_not(data(ev, p, EDDY_DATA_LT, cases[i].v), "%s LT", p);
        cr_expect_not(data(ev, p, EDDY_DATA_LE, cases[i].v), "%s LE", p);
        cr_expect_not(data(ev, p, EDDY_DATA_GT, cases[i].v), "%s GT", p);
        cr_expect_not(data(ev, p, EDDY_DATA_GE, cases[i].v), "%s GE", p);
        cr_expect(data(ev, p, EDDY_DATA_EXISTS, cases[i].v), "%s EXISTS", p);
    }
    eddy_event_free(ev);
}

Test(filter, missing_and_nested_fields) {
    eddy_event *ev = doc_event();
    const char *absent[] = {"nope",  "m.nope", "m.x.nope", "m.x.y.z", /* below a string */
                            "s.x",   "i.x",    "arr.0",    "arr.x",   /* not maps */
                            "bin.x", "m.a",    "m.a.b",    "7",       /* int keys never match */
                            "I",     "hello",  "int key",  "not me"};
    for (size_t i = 0; i < sizeof(absent) / sizeof(absent[0]); i++) {
        const char *p = absent[i];
        for (int op = EDDY_DATA_EQ; op <= EDDY_DATA_GE; op++)
            cr_expect_eq(data(ev, p, (eddy_data_op)op, eddy_field_int(1)), op == EDDY_DATA_NE,
                         "%s op %d", p, op);
        cr_expect_not(data(ev, p, EDDY_DATA_EXISTS, eddy_field_nil()), "%s EXISTS", p);
    }
    cr_expect(data(ev, "m.x.y", EDDY_DATA_EQ, eddy_field_string("deep")));
    cr_expect(data(ev, "m.k", EDDY_DATA_EQ, eddy_field_int(1)));
    cr_expect(data(ev, "m.x", EDDY_DATA_EXISTS, eddy_field_nil()), "a map is present");
    cr_expect(data(ev, "m.x", EDDY_DATA_NE, eddy_field_string("deep")));
    cr_expect(data(ev, "dup", EDDY_DATA_EQ, eddy_field_int(1)), "the first of duplicate keys");
    cr_expect(data(ev, "last", EDDY_DATA_EXISTS, eddy_field_nil()),
              "keys after a container key are reached");
    eddy_event_free(ev);

    /* Top-level data that is not a map has no fields. */
    ev = event("t", "s");
    cr_assert_eq(eddy_event_set_data(ev, "\x2a", 1), EDDY_OK);
    cr_assert_eq(eddy_event_set_datacontenttype(ev, "application/msgpack"), EDDY_OK);
    cr_expect_not(data(ev, "a", EDDY_DATA_EXISTS, eddy_field_nil()));
    cr_expect(data(ev, "a", EDDY_DATA_NE, eddy_field_int(42)));
    eddy_event_free(ev);
}

Test(filter, integers_doubles_and_big_uints) {
    eddy_event *ev = doc_event();
    /* UINT64_MAX: above every int, equal to itself, and compared exactly with doubles. */
    cr_expect(data(ev, "big", EDDY_DATA_EQ, ufield(UINT64_MAX)));
    cr_expect(data(ev, "big", EDDY_DATA_GT, eddy_field_int(INT64_MAX)));
    cr_expect(data(ev, "big", EDDY_DATA_GT, ufield(UINT64_MAX - 1)));
    cr_expect(data(ev, "big", EDDY_DATA_LT, eddy_field_double(18446744073709551616.0)),
              "2^64 - 1 < 2^64 (as a double they would be equal)");
    cr_expect(data(ev, "big", EDDY_DATA_GT, eddy_field_double(9.2e18)));
    cr_expect(data(ev, "big", EDDY_DATA_NE, eddy_field_int(-1)));
    cr_expect(data(ev, "u63", EDDY_DATA_EQ, eddy_field_double(9223372036854775808.0)));
    cr_expect(data(ev, "u63", EDDY_DATA_GT, eddy_field_int(INT64_MAX)));
    cr_expect(data(ev, "u63", EDDY_DATA_LT, ufield(UINT64_MAX)));
    /* A UINT condition value at or below INT64_MAX is the same number as an INT. */
    cr_expect(data(ev, "i", EDDY_DATA_EQ, ufield(42)));
    cr_expect(data(ev, "i", EDDY_DATA_LT, ufield((uint64_t)1 << 63)));
    eddy_event_free(ev);

    /* Integers beyond 2^53 against doubles: no rounding through double. */
    int64_t v = ((int64_t)1 << 53) + 1;
    ev = int_event(v);
    cr_expect_not(data(ev, "v", EDDY_DATA_EQ, eddy_field_double(9007199254740992.0)),
                  "2^53 + 1 is not 2^53");
    cr_expect(data(ev, "v", EDDY_DATA_GT, eddy_field_double(9007199254740992.0)));
    cr_expect(data(ev, "v", EDDY_DATA_LT, eddy_field_double(9007199254740994.0)));
    eddy_event_free(ev);
    ev = int_event(INT64_MAX);
    cr_expect(data(ev, "v", EDDY_DATA_LT, eddy_field_double(9223372036854775808.0)));
    cr_expect_not(data(ev, "v", EDDY_DATA_EQ, eddy_field_double(9223372036854775808.0)));
    eddy_event_free(ev);
    ev = int_event(-3);
    cr_expect(data(ev, "v", EDDY_DATA_LT, eddy_field_double(-2.5)));
    cr_expect(data(ev, "v", EDDY_DATA_GT, eddy_field_double(-3.5)));
    cr_expect(data(ev, "v", EDDY_DATA_EQ, eddy_field_double(-3.0)));
    cr_expect(data(ev, "v", EDDY_DATA_GT, eddy_field_double(-INFINITY)));
    cr_expect(data(ev, "v", EDDY_DATA_LT, eddy_field_double(INFINITY)));
    cr_expect(data(ev, "v", EDDY_DATA_GT, eddy_field_double(-1e300)));
    eddy_event_free(ev);
}

Test(filter, other_content_types_and_no_data) {
    eddy_event *ev = doc_event();
    cr_assert_eq(eddy_event_set_datacontenttype(ev, "application/json"), EDDY_OK);
    cr_expect_not(data(ev, "i", EDDY_DATA_EQ, eddy_field_int(42)), "json has no fields");
    cr_expect(data(ev, "i", EDDY_DATA_NE, eddy_field_int(42)));
    cr_expect_not(data(ev, "i", EDDY_DATA_EXISTS, eddy_field_nil()));
    cr_assert_eq(eddy_event_set_datacontenttype(ev, NULL), EDDY_OK);
    cr_expect_not(data(ev, "i", EDDY_DATA_EXISTS, eddy_field_nil()), "no content type");
    eddy_event_free(ev);

    ev = event("t", "s");
    cr_assert_eq(eddy_event_set_datacontenttype(ev, "application/msgpack"), EDDY_OK);
    cr_expect_not(data(ev, "i", EDDY_DATA_EXISTS, eddy_field_nil()), "no data");
    cr_expect(data(ev, "i", EDDY_DATA_NE, eddy_field_nil()));
    eddy_event_free(ev);
}

static void expect_malformed(const void *bytes, size_t len, const char *what) {
    eddy_event *ev = event("t", "s");
    cr_assert_eq(eddy_event_set_data(ev, bytes, len), EDDY_OK);
    cr_assert_eq(eddy_event_set_datacontenttype(ev, "application/msgpack"), EDDY_OK);
    eddy_field v = eddy_field_int(1);
    eddy_filter *f = eddy_filter_data("a.b", EDDY_DATA_NE, &v);
    bool out = true;
    eddy_error err = {0};
    cr_expect_eq(eddy_filter_match(f, ev, eddy_msgpack_reader(), &out, &err), EDDY_ERR_MALFORMED,
                 "%s", what);
    cr_expect_not(out);
    cr_expect_eq(err.status, EDDY_ERR_MALFORMED);
    cr_expect(strstr(err.detail, "msgpack") && strstr(err.detail, "a.b"), "%s: %s", what,
              err.detail);
    cr_expect_not(eddy_filter_matches(f, ev), "%s: an error is no match", what);
    eddy_filter_free(f);
    eddy_event_free(ev);
}

Test(filter, malformed_msgpack) {
    expect_malformed("\x81\xa1", 2, "truncated key");
    expect_malformed("\x81\xa1"
                     "a",
                     3, "missing value");
    expect_malformed("\xc1", 1, "reserved byte");
    expect_malformed("\xdf\xff\xff\xff\xff", 5, "huge map count");
    expect_malformed("\x81\xa1"
                     "a\x01\x00",
                     5, "trailing bytes");
    expect_malformed("\x82\xa1"
                     "z\x01\xa1"
                     "a\xd9\x05"
                     "ab",
                     10, "str length beyond the end");
    /* nested beyond the depth bound */
    char deep[40];
    memset(deep, 0x91, sizeof(deep));
    deep[sizeof(deep) - 1] = 0;
    expect_malformed(deep, sizeof(deep), "too deep");
}

/* A reader that counts its calls and answers "v" = 1 for every path. */
typedef struct counting {
    int calls;
    eddy_status fail; /* returned when not EDDY_OK */
    bool set_detail;
} counting;

static eddy_status count_read(void *self, const eddy_event *ev, const char *path, eddy_field *out,
                              bool *found, eddy_error *err) {
    counting *c = self;
    c->calls++;
    if (c->fail != EDDY_OK) {
        if (c->set_detail && err) {
            err->status = c->fail;
            strcpy(err->detail, "custom detail");
        }
        return c->fail;
    }
    *out = eddy_field_int(1);
    *found = true;
    return EDDY_OK;
}

static eddy_filter *cond(const char *path, int64_t v) {
    eddy_field f = eddy_field_int(v);
    return eddy_filter_data(path, EDDY_DATA_EQ, &f);
}

Test(filter, and_or_short_circuit) {
    counting c = {0};
    eddy_data_reader r = {count_read, &c};
    eddy_event *ev = event("t", "s");
    bool out;

    /* and: stops at the first operand that fails */
    eddy_filter *f = eddy_filter_and(cond("a", 2), eddy_filter_and(cond("b", 1), cond("c", 1)));
    cr_assert_not_null(f);
    cr_expect(eddy_filter_needs_data(f));
    cr_assert_eq(eddy_filter_match(f, ev, &r, &out, NULL), EDDY_OK);
    cr_expect_not(out);
    cr_expect_eq(c.calls, 1);
    eddy_filter_free(f);

    c.calls = 0;
    f = eddy_filter_and(eddy_filter_and(cond("a", 1), cond("b", 1)), cond("c", 1));
    cr_assert_eq(eddy_filter_match(f, ev, &r, &out, NULL), EDDY_OK);
    cr_expect(out);
    cr_expect_eq(c.calls, 3);
    eddy_filter_free(f);

    /* a non-data operand that fails first: the reader is never called */
    c.calls = 0;
    f = eddy_filter_and(eddy_filter_type("other"), cond("a", 1));
    cr_assert_eq(eddy_filter_match(f, ev, &r, &out, NULL), EDDY_OK);
    cr_expect_not(out);
    cr_expect_eq(c.calls, 0);
    eddy_filter_free(f);

    /* or: stops at the first operand that passes */
    c.calls = 0;
    f = eddy_filter_or(cond("a", 2), eddy_filter_or(cond("b", 1), cond("c", 1)));
    cr_assert_eq(eddy_filter_match(f, ev, &r, &out, NULL), EDDY_OK);
    cr_expect(out);
    cr_expect_eq(c.calls, 2);
    eddy_filter_free(f);

    c.calls = 0;
    f = eddy_filter_or(eddy_filter_or(eddy_filter_type("t"), cond("b", 1)), cond("c", 1));
    cr_assert_eq(eddy_filter_match(f, ev, &r, &out, NULL), EDDY_OK);
    cr_expect(out);
    cr_expect_eq(c.calls, 0);
    eddy_filter_free(f);

    c.calls = 0;
    f = eddy_filter_or(cond("a", 2), cond("b", 3));
    cr_assert_eq(eddy_filter_match(f, ev, &r, &out, NULL), EDDY_OK);
    cr_expect_not(out);
    cr_expect_eq(c.calls, 2);
    eddy_filter_free(f);

    /* mixed: (a=2 and b=1) or (c=1 and d=1) */
    c.calls = 0;
    f = eddy_filter_or(eddy_filter_and(cond("a", 2), cond("b", 1)),
                       eddy_filter_and(cond("c", 1), cond("d", 1)));
    cr_assert_eq(eddy_filter_match(f, ev, &r, &out, NULL), EDDY_OK);
    cr_expect(out);
    cr_expect_eq(c.calls, 3);
    eddy_filter_free(f);

    /* a reader's error stops the evaluation and is returned as is */
    c = (counting){0, EDDY_ERR_MALFORMED, true};
    f = eddy_filter_or(cond("a", 1), cond("b", 1));
    eddy_error err = {0};
    out = true;
    cr_expect_eq(eddy_filter_match(f, ev, &r, &out, &err), EDDY_ERR_MALFORMED);
    cr_expect_not(out);
    cr_expect_eq(c.calls, 1);
    cr_expect_str_eq(err.detail, "custom detail");
    /* a reader that fails without a detail still leaves one */
    c = (counting){0, EDDY_ERR_IO, false};
    memset(&err, 0, sizeof(err));
    cr_expect_eq(eddy_filter_match(f, ev, &r, &out, &err), EDDY_ERR_IO);
    cr_expect_eq(err.status, EDDY_ERR_IO);
    cr_expect(strstr(err.detail, "'a'"), "%s", err.detail);
    cr_expect_eq(eddy_filter_match(f, ev, &r, &out, NULL), EDDY_ERR_IO, "err is optional");
    eddy_filter_free(f);
    eddy_event_free(ev);
}

Test(filter, unreadable_without_a_reader) {
    eddy_event *ev = event("t", "s");
    /* The type operand alone would decide, but the answer must not depend on the event. */
    eddy_filter *f = eddy_filter_or(eddy_filter_type("t"), cond("customer.city", 1));
    bool out = true;
    eddy_error err = {0};
    cr_expect_eq(eddy_filter_match(f, ev, NULL, &out, &err), EDDY_ERR_UNREADABLE_FILTER);
    cr_expect_not(out);
    cr_expect_eq(err.status, EDDY_ERR_UNREADABLE_FILTER);
    cr_expect(strstr(err.detail, "customer.city"), "%s", err.detail);
    eddy_data_reader empty = {NULL, NULL};
    cr_expect_eq(eddy_filter_match(f, ev, &empty, &out, NULL), EDDY_ERR_UNREADABLE_FILTER);
    eddy_filter_free(f);

    /* Filters without data conditions need no reader. */
    f = eddy_filter_and(eddy_filter_type("t"), eddy_filter_source("s"));
    cr_expect_not(eddy_filter_needs_data(f));
    cr_expect_eq(eddy_filter_match(f, ev, NULL, &out, NULL), EDDY_OK);
    cr_expect(out);
    eddy_filter_free(f);
    cr_expect_not(eddy_filter_needs_data(NULL));
    cr_expect_eq(eddy_filter_match(NULL, ev, NULL, &out, NULL), EDDY_OK);
    cr_expect(out);
    eddy_event_free(ev);
}

/* A user's reader of "key=value;key=value" text data (content type text/x-kv): values that
 * parse as integers are INT, "true"/"false" BOOL, the rest STRING pointing into the data.
 * Paths are single keys. */
static eddy_status kv_read(void *self, const eddy_event *ev, const char *path, eddy_field *out,
                           bool *found, eddy_error *err) {
    (void)self;
    const char *ct = eddy_event_datacontenttype(ev);
    size_t len;
    const char *d = eddy_event_data(ev, &len);
    if (!ct || strcmp(ct, "text/x-kv") != 0 || !d)
        return EDDY_OK;
    size_t plen = strlen(path);
    const char *end = d + len;
    for (const char *p = d; p < end;) {
        const char *semi = memchr(p, ';', (size_t)(end - p));
        if (!semi)
            semi = end;
        const char *eq = memchr(p, '=', (size_t)(semi - p));
        if (!eq) {
            if (err) {
                err->status = EDDY_ERR_MALFORMED;
                strcpy(err->detail, "kv: no '='");
            }
            return EDDY_ERR_MALFORMED;
        }
        if ((size_t)(eq - p) == plen && memcmp(p, path, plen) == 0) {
            const char *v = eq + 1;
            size_t vlen = (size_t)(semi - v);
            char *stop;
            char buf[32];
            *found = true;
            if (vlen == 4 && memcmp(v, "true", 4) == 0) {
                *out = eddy_field_bool(true);
            } else if (vlen == 5 && memcmp(v, "false", 5) == 0) {
                *out = eddy_field_bool(false);
            } else if (vlen > 0 && vlen < sizeof(buf)) {
                memcpy(buf, v, vlen);
                buf[vlen] = 0;
                long long n = strtoll(buf, &stop, 10);
                if (*stop == 0)
                    *out = eddy_field_int(n);
                else
                    *out = (eddy_field){.kind = EDDY_FIELD_STRING, .s = v, .len = vlen};
            } else {
                *out = (eddy_field){.kind = EDDY_FIELD_STRING, .s = v, .len = vlen};
            }
            return EDDY_OK;
        }
        p = semi + 1;
    }
    return EDDY_OK;
}

Test(filter, user_reader) {
    eddy_data_reader kv = {kv_read, NULL};
    eddy_event *ev = event("t", "s");
    const char *text = "city=Paris;n=12;vip=true";
    cr_assert_eq(eddy_event_set_data(ev, text, strlen(text)), EDDY_OK);
    cr_assert_eq(eddy_event_set_datacontenttype(ev, "text/x-kv"), EDDY_OK);
    eddy_field paris = eddy_field_string("Paris");
    eddy_field ten = eddy_field_double(10.5);
    eddy_filter *f =
        eddy_filter_and(eddy_filter_data("city", EDDY_DATA_EQ, &paris),
                        eddy_filter_and(eddy_filter_data("n", EDDY_DATA_GT, &ten),
                                        eddy_filter_data("vip", EDDY_DATA_EXISTS, NULL)));
    cr_assert_not_null(f);
    bool out = false;
    cr_expect_eq(eddy_filter_match(f, ev, &kv, &out, NULL), EDDY_OK);
    cr_expect(out);
    cr_expect_not(eddy_filter_matches(f, ev), "the msgpack reader sees no fields in text/x-kv");
    eddy_field lyon = eddy_field_string("Lyon");
    eddy_filter *g = eddy_filter_data("city", EDDY_DATA_EQ, &lyon);
    cr_expect_eq(eddy_filter_match(g, ev, &kv, &out, NULL), EDDY_OK);
    cr_expect_not(out);
    eddy_filter_free(g);

    const char *bad = "city";
    cr_assert_eq(eddy_event_set_data(ev, bad, strlen(bad)), EDDY_OK);
    eddy_error err = {0};
    cr_expect_eq(eddy_filter_match(f, ev, &kv, &out, &err), EDDY_ERR_MALFORMED);
    cr_expect_str_eq(err.detail, "kv: no '='");
    eddy_filter_free(f);
    eddy_event_free(ev);
}

Test(filter, msgpack_reader_directly) {
    eddy_event *ev = doc_event();
    const eddy_data_reader *r = eddy_msgpack_reader();
    cr_assert_not_null(r);
    cr_expect_eq(r, eddy_msgpack_reader(), "a static object");
    size_t len;
    const char *d = eddy_event_data(ev, &len);
    eddy_field out;
    bool found = false;
    cr_assert_eq(r->read(r->self, ev, "m.x.y", &out, &found, NULL), EDDY_OK);
    cr_expect(found);
    cr_expect_eq(out.kind, EDDY_FIELD_STRING);
    cr_expect_eq(out.len, 4);
    cr_expect(out.s > d && out.s + out.len <= d + len, "points into the event's data");
    cr_expect(memcmp(out.s, "deep", 4) == 0);
    cr_assert_eq(r->read(r->self, ev, "big", &out, &found, NULL), EDDY_OK);
    cr_expect_eq(out.kind, EDDY_FIELD_UINT);
    cr_expect_eq(out.u, UINT64_MAX);
    cr_assert_eq(r->read(r->self, ev, "u63", &out, &found, NULL), EDDY_OK);
    cr_expect_eq(out.kind, EDDY_FIELD_UINT);
    cr_assert_eq(r->read(r->self, ev, "i", &out, &found, NULL), EDDY_OK);
    cr_expect_eq(out.kind, EDDY_FIELD_INT, "a positive int in range is INT");
    cr_expect_eq(out.i, 42);
    cr_assert_eq(r->read(r->self, ev, "i64min", &out, &found, NULL), EDDY_OK);
    cr_expect_eq(out.i, INT64_MIN);
    cr_assert_eq(r->read(r->self, ev, "f32", &out, &found, NULL), EDDY_OK);
    cr_expect_eq(out.kind, EDDY_FIELD_DOUBLE);
    cr_assert_eq(r->read(r->self, ev, "arr", &out, &found, NULL), EDDY_OK);
    cr_expect(found);
    cr_expect_eq(out.kind, EDDY_FIELD_OTHER);
    cr_assert_eq(r->read(r->self, ev, "ext", &out, &found, NULL), EDDY_OK);
    cr_expect_eq(out.kind, EDDY_FIELD_OTHER);
    cr_assert_eq(r->read(r->self, ev, "nope", &out, &found, NULL), EDDY_OK);
    cr_expect_not(found);
    cr_expect_eq(r->read(r->self, ev, "a..b", &out, &found, NULL), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(r->read(r->self, ev, NULL, &out, &found, NULL), EDDY_ERR_INVALID_ARGUMENT);
    eddy_event_free(ev);
}

Test(filter, bad_arguments) {
    eddy_field one = eddy_field_int(1);
    const char *paths[] = {NULL, "", ".", "a.", ".a", "a..b"};
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
        cr_expect_null(eddy_filter_data(paths[i], EDDY_DATA_EQ, &one), "path %zu", i);
    cr_expect_null(eddy_filter_data("a", EDDY_DATA_EQ, NULL), "a value is needed");
    cr_expect_null(eddy_filter_data("a", (eddy_data_op)(EDDY_DATA_EXISTS + 1), &one));
    cr_expect_null(eddy_filter_data("a", (eddy_data_op)-1, &one));
    eddy_field other = {.kind = EDDY_FIELD_OTHER};
    cr_expect_null(eddy_filter_data("a", EDDY_DATA_EQ, &other));
    eddy_field broken = {.kind = EDDY_FIELD_STRING, .s = NULL, .len = 3};
    cr_expect_null(eddy_filter_data("a", EDDY_DATA_EQ, &broken));
    eddy_filter *f = eddy_filter_data("a", EDDY_DATA_EXISTS, NULL);
    cr_expect_not_null(f);
    eddy_filter_free(f);
    f = eddy_filter_data("a", EDDY_DATA_EXISTS, &other); /* the value is ignored */
    cr_expect_not_null(f);
    eddy_filter_free(f);

    /* and/or take their operands, also when they fail (the leak checker would tell). */
    cr_expect_null(eddy_filter_and(NULL, eddy_filter_type("x")));
    cr_expect_null(eddy_filter_or(eddy_filter_type("x"), NULL));
    cr_expect_null(eddy_filter_and(NULL, NULL));
    cr_expect_null(eddy_filter_dup(NULL));
    eddy_filter_free(NULL);

    eddy_event *ev = event("t", "s");
    cr_expect_eq(eddy_filter_match(NULL, ev, NULL, NULL, NULL), EDDY_ERR_INVALID_ARGUMENT);
    f = eddy_filter_type("t");
    bool out = true;
    cr_expect_eq(eddy_filter_match(f, NULL, NULL, &out, NULL), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_not(out);
    cr_expect_not(eddy_filter_matches(f, NULL));
    cr_expect(eddy_filter_matches(NULL, ev));
    eddy_filter_free(f);
    eddy_event_free(ev);

    /* field helpers */
    eddy_field s = eddy_field_string(NULL);
    cr_expect_eq(s.kind, EDDY_FIELD_NIL);
    s = eddy_field_string("abc");
    cr_expect_eq(s.kind, EDDY_FIELD_STRING);
    cr_expect_eq(s.len, 3);
}

Test(filter, nesting_depth) {
    /* A long chain of one operation is flattened and does not nest. */
    eddy_filter *f = eddy_filter_type("t0");
    for (int i = 1; i < 2000; i++) {
        char name[16];
        snprintf(name, sizeof(name), "t%d", i);
        f = eddy_filter_or(f, eddy_filter_type(name));
        cr_assert_not_null(f, "operand %d", i);
    }
    eddy_event *ev = event("t1999", "s");
    cr_expect(m(f, ev));
    eddy_filter *c = eddy_filter_dup(f);
    cr_expect(m(c, ev));
    eddy_filter_free(c);
    eddy_filter_free(f);

    /* Alternating and/or nests; beyond the bound the constructor refuses. */
    f = eddy_filter_type("t1999");
    int levels = 0;
    for (; levels < 1000 && f; levels++) {
        if (levels % 2)
            f = eddy_filter_or(f, eddy_filter_type("x"));
        else
            f = eddy_filter_and(f, eddy_filter_source("s"));
    }
    cr_expect_null(f);
    cr_expect_gt(levels, 32);
    cr_expect_lt(levels, 1000);
    eddy_event_free(ev);
}

Test(filter, dup_is_equivalent) {
    const char *types[] = {"b", "a"};
    eddy_field paris = eddy_field_string("Paris");
    eddy_field ten = eddy_field_int(10);
    eddy_filter *f = eddy_filter_and(
        eddy_filter_or(eddy_filter_types(types, 2), eddy_filter_source("s2")),
        eddy_filter_and(
            eddy_filter_time_range("2026-01-01T00:00:00Z", NULL),
            eddy_filter_or(eddy_filter_data("m.city", EDDY_DATA_EQ, &paris),
                           eddy_filter_and(eddy_filter_subject("vip"),
                                           eddy_filter_data("v", EDDY_DATA_GE, &ten)))));
    cr_assert_not_null(f);
    eddy_filter *c = eddy_filter_dup(f);
    cr_assert_not_null(c);
    cr_expect(eddy_filter_needs_data(c));
    /* events over the combinations */
    const char *ev_types[] = {"a", "c"};
    const char *sources[] = {"s1", "s2"};
    const char *times[] = {"2025-12-31T23:59:59Z", "2026-06-01T00:00:00Z"};
    const char *subjects[] = {NULL, "vip"};
    int64_t ns[] = {9, 10};
    int matched = 0;
    for (int k = 0; k < 32; k++) {
        eddy_event *ev = int_event(ns[k >> 4 & 1]);
        cr_assert_eq(eddy_event_set_type(ev, ev_types[k & 1]), EDDY_OK);
        cr_assert_eq(eddy_event_set_source(ev, sources[k >> 1 & 1]), EDDY_OK);
        cr_assert_eq(eddy_event_set_time(ev, times[k >> 2 & 1]), EDDY_OK);
        cr_assert_eq(eddy_event_set_subject(ev, subjects[k >> 3 & 1]), EDDY_OK);
        bool want = m(f, ev);
        matched += want;
        cr_expect_eq(m(c, ev), want, "event %d", k);
        eddy_event_free(ev);
    }
    cr_expect_eq(matched, 3, "(a or s2: 3 of 4) x time (1 of 2) x (vip and v >= 10: 1 of 4)");
    eddy_filter_free(f);
    /* the copy owns everything it needs */
    eddy_event *ev = int_event(10);
    cr_assert_eq(eddy_event_set_time(ev, "2026-06-01T00:00:00Z"), EDDY_OK);
    cr_assert_eq(eddy_event_set_subject(ev, "vip"), EDDY_OK);
    cr_assert_eq(eddy_event_set_type(ev, "b"), EDDY_OK);
    cr_expect(m(c, ev));
    eddy_event_free(ev);
    eddy_filter_free(c);
}
