/* SPDX-License-Identifier: BSD-3-Clause */
/* Conveniences with no server: UUIDv7 ids, the event builder, W3C trace context (traceparent and
 * tracestate checks, carrying a context from one event to another) and reading fields of msgpack
 * map data by path. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eddy/bus.h"
#include "eddy/event.h"
#include "eddy/msgpack.h"
#include "events/event_internal.h"

/* ---- UUIDv7 ------------------------------------------------------------------------------- */

static bool uuid_shaped(const char *u) {
    if (strlen(u) != 36)
        return false;
    for (int i = 0; i < 36; i++) {
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? u[i] != '-' : !strchr("0123456789abcdef", u[i]))
            return false;
    }
    return u[14] == '7' && strchr("89ab", u[19]);
}

Test(uuid7, is_a_version_7_uuid_in_increasing_order) {
    char prev[EDDY_UUID_SIZE], cur[EDDY_UUID_SIZE];
    eddy_uuid7(prev);
    cr_assert(uuid_shaped(prev), "%s", prev);
    for (int i = 0; i < 20000; i++) {
        eddy_uuid7(cur);
        cr_assert(uuid_shaped(cur), "%s", cur);
        cr_assert_gt(strcmp(cur, prev), 0, "%s after %s", cur, prev);
        memcpy(prev, cur, sizeof(cur));
    }
}

Test(uuid7, starts_with_the_time_in_ms) {
    char u[EDDY_UUID_SIZE];
    long long before = eddy_now_ms();
    eddy_uuid7(u);
    char hex[13];
    memcpy(hex, u, 8);
    memcpy(hex + 8, u + 9, 4);
    hex[12] = '\0';
    long long ms = strtoll(hex, NULL, 16);
    cr_expect_geq(ms, before);
    cr_expect_leq(ms, eddy_now_ms() + 1000, "at most the counter's borrowed milliseconds ahead");
}

/* ---- the event builder -------------------------------------------------------------------- */

Test(event_create, fills_id_source_type_and_time) {
    eddy_event *ev = NULL;
    eddy_error err = {0};
    cr_assert_eq(eddy_event_create("/orders", "order.placed", &ev, &err), EDDY_OK, "%s",
                 err.detail);
    cr_expect(uuid_shaped(eddy_event_id(ev)));
    cr_expect_str_eq(eddy_event_source(ev), "/orders");
    cr_expect_str_eq(eddy_event_type(ev), "order.placed");
    cr_expect(eddy_event_time(ev) && strlen(eddy_event_time(ev)) == 24, "%s", eddy_event_time(ev));
    cr_expect_eq(eddy_event_validate(ev, NULL), EDDY_OK);
    eddy_event_free(ev);
}

Test(event_create, refuses_what_would_not_validate) {
    eddy_event *ev = (eddy_event *)1;
    eddy_error err = {0};
    cr_expect_eq(eddy_event_create(NULL, "t", &ev, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_null(ev);
    cr_expect_eq(eddy_event_create("/s", NULL, &ev, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_event_create("/s", "", &ev, &err), EDDY_ERR_INVALID_EVENT);
    cr_expect_eq(eddy_event_create("a b", "t", &ev, &err), EDDY_ERR_INVALID_EVENT);
    cr_expect(strstr(err.detail, "source"), "%s", err.detail);
    cr_expect_null(ev);
    cr_expect_eq(eddy_event_create("/s", "t", NULL, &err), EDDY_ERR_INVALID_ARGUMENT);
}

/* ---- traceparent and tracestate ----------------------------------------------------------- */

#define TP "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

Test(trace, valid_traceparents) {
    const char *ok[] = {
        TP, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00",
        "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-09",      /* a later version */
        "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-09-what", /* with more fields */
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        eddy_error err = {0};
        cr_expect_eq(eddy_traceparent_check(ok[i], &err), EDDY_OK, "%s: %s", ok[i], err.detail);
    }
}

Test(trace, invalid_traceparents_say_what_is_wrong) {
    struct {
        const char *value, *why;
    } bad[] = {
        {"", "not version-traceid-parentid-flags"},
        {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7", "not version-traceid"},
        {"00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "not version-traceid"},
        {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-", "55"},
        {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-010", "55"},
        {"cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x", "55"},
        {"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "version"},
        {"0g-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "version"},
        {"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", "trace-id is not"},
        {"00-4bf92f3577b34da6a3ce929d0e0e473z-00f067aa0ba902b7-01", "trace-id is not"},
        {"00-00000000000000000000000000000000-00f067aa0ba902b7-01", "trace-id is all zeros"},
        {"00-4bf92f3577b34da6a3ce929d0e0e4736-00F067AA0BA902B7-01", "parent-id is not"},
        {"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", "parent-id is all zeros"},
        {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g", "trace-flags"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        eddy_error err = {0};
        cr_expect_eq(eddy_traceparent_check(bad[i].value, &err), EDDY_ERR_INVALID_EVENT, "'%s'",
                     bad[i].value);
        cr_expect(strstr(err.detail, bad[i].why), "'%s': %s", bad[i].value, err.detail);
    }
    cr_expect_eq(eddy_traceparent_check(NULL, NULL), EDDY_ERR_INVALID_ARGUMENT);
}

Test(trace, tracestates) {
    const char *ok[] = {
        "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE",
        "a=b",
        " a=b , ,c=d e ,",           /* spaces around members, empty members, a space inside */
        "tenant1@sys=x,0tenant@s=y", /* multi-tenant keys */
        "a_-*/b=!~",
        "",
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        eddy_error err = {0};
        cr_expect_eq(eddy_tracestate_check(ok[i], &err), EDDY_OK, "'%s': %s", ok[i], err.detail);
    }
    char many[600] = "", member[16];
    for (int i = 0; i < 33; i++) {
        snprintf(member, sizeof(member), "%sk%d=v", i ? "," : "", i);
        strcat(many, member);
    }
    char long_value[600];
    memset(long_value, 'v', sizeof(long_value));
    memcpy(long_value, "a=", 2);
    long_value[514] = '\0';
    struct {
        const char *value, *why;
    } bad[] = {
        {"A=b", "member 1 is not key=value"},
        {"1a=b", "member 1 is not key=value"},
        {"a", "member 1 is not key=value"},
        {"a=b,=c", "member 2 is not key=value"},
        {"a@=b", "member 1 is not key=value"},
        {"a@0s=b", "member 1 is not key=value"},
        {"a@abcdefghijklmno=b", "member 1 is not key=value"},
        {"a=", "the value of member 1"},
        {"a=b=c", "the value of member 1"},
        {"a=b,c=\x01", "the value of member 2"},
        {"a=b,a=c", "key 'a' appears twice"},
        {many, "more than 32 members"},
        {long_value, "longer than 512"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        eddy_error err = {0};
        cr_expect_eq(eddy_tracestate_check(bad[i].value, &err), EDDY_ERR_INVALID_EVENT, "'%.40s'",
                     bad[i].value);
        cr_expect(strstr(err.detail, bad[i].why), "'%.40s': %s", bad[i].value, err.detail);
    }
}

static eddy_event *ev_new(const char *id) {
    eddy_event *ev = NULL;
    cr_assert_eq(eddy_event_create("/t", "t", &ev, NULL), EDDY_OK);
    cr_assert_eq(eddy_event_set_id(ev, id), EDDY_OK);
    return ev;
}

Test(trace, set_extension_refuses_a_malformed_context) {
    eddy_event *ev = ev_new("e");
    eddy_error err = {0};
    cr_assert_eq(eddy_event_set_extension(ev, EDDY_TRACEPARENT, TP, &err), EDDY_OK);
    cr_expect_eq(eddy_event_set_extension(ev, EDDY_TRACEPARENT, "00-xyz", &err),
                 EDDY_ERR_INVALID_EVENT);
    cr_expect(strstr(err.detail, "traceparent '00-xyz'"), "%s", err.detail);
    cr_expect_str_eq(eddy_event_extension(ev, EDDY_TRACEPARENT), TP, "unchanged");
    cr_expect_eq(eddy_event_set_extension(ev, EDDY_TRACESTATE, "A=1", &err),
                 EDDY_ERR_INVALID_EVENT);
    cr_expect_null(eddy_event_extension(ev, EDDY_TRACESTATE));
    cr_expect_eq(eddy_event_set_extension(ev, EDDY_TRACEPARENT, NULL, &err), EDDY_OK, "removed");
    cr_expect_null(eddy_event_extension(ev, EDDY_TRACEPARENT));
    eddy_event_free(ev);
}

Test(trace, continue_trace_carries_a_valid_context) {
    eddy_event *src = ev_new("src"), *dst = ev_new("dst");
    eddy_error err = {0};
    /* Nothing to carry: dst keeps its own. */
    cr_assert_eq(eddy_event_set_extension(dst, EDDY_TRACESTATE, "old=1", &err), EDDY_OK);
    cr_expect_eq(eddy_event_continue_trace(dst, src, &err), EDDY_OK);
    cr_expect_str_eq(eddy_event_extension(dst, EDDY_TRACESTATE), "old=1");
    /* A traceparent alone replaces dst's context, tracestate included. */
    cr_assert_eq(eddy_event_set_extension(src, EDDY_TRACEPARENT, TP, &err), EDDY_OK);
    cr_expect_eq(eddy_event_continue_trace(dst, src, &err), EDDY_OK);
    cr_expect_str_eq(eddy_event_extension(dst, EDDY_TRACEPARENT), TP);
    cr_expect_null(eddy_event_extension(dst, EDDY_TRACESTATE));
    /* With its tracestate. */
    cr_assert_eq(eddy_event_set_extension(src, EDDY_TRACESTATE, "rojo=1", &err), EDDY_OK);
    cr_expect_eq(eddy_event_continue_trace(dst, src, &err), EDDY_OK);
    cr_expect_str_eq(eddy_event_extension(dst, EDDY_TRACESTATE), "rojo=1");
    eddy_event_free(src);
    eddy_event_free(dst);
}

Test(trace, continue_trace_does_not_carry_a_malformed_context) {
    eddy_event *src = ev_new("src"), *dst = ev_new("dst");
    eddy_error err = {0};
    /* As a decoded event could carry them: written without the setter's check. */
    cr_assert_eq(eddy__event_append_extension_n(src, "traceparent", 11, "00-00", 5), EDDY_OK);
    cr_assert_eq(eddy_event_set_extension(dst, EDDY_TRACEPARENT, TP, &err), EDDY_OK);
    cr_expect_eq(eddy_event_continue_trace(dst, src, &err), EDDY_ERR_INVALID_EVENT);
    cr_expect_str_eq(eddy_event_extension(dst, EDDY_TRACEPARENT), TP, "unchanged");
    eddy_event_free(src);
    /* A bad tracestate beside a good traceparent is dropped. */
    src = ev_new("src");
    cr_assert_eq(eddy_event_set_extension(src, EDDY_TRACEPARENT, TP, &err), EDDY_OK);
    cr_assert_eq(eddy__event_append_extension_n(src, "tracestate", 10, "A=B", 3), EDDY_OK);
    cr_assert_eq(eddy_event_set_extension(dst, EDDY_TRACESTATE, "x=1", &err), EDDY_OK);
    cr_expect_eq(eddy_event_continue_trace(dst, src, &err), EDDY_OK);
    cr_expect_str_eq(eddy_event_extension(dst, EDDY_TRACEPARENT), TP);
    cr_expect_null(eddy_event_extension(dst, EDDY_TRACESTATE));
    cr_expect_eq(eddy_event_continue_trace(NULL, src, &err), EDDY_ERR_INVALID_ARGUMENT);
    eddy_event_free(src);
    eddy_event_free(dst);
}

/* ---- msgpack fields by path ---------------------------------------------------------------- */

static void pack_str(msgpack_packer *pk, const char *s) {
    msgpack_pack_str(pk, strlen(s));
    msgpack_pack_str_body(pk, s, strlen(s));
}

static eddy_status pack_order(msgpack_packer *pk, void *user) {
    (void)user;
    msgpack_pack_map(pk, 8);
    pack_str(pk, "name");
    pack_str(pk, "widget");
    pack_str(pk, "n");
    msgpack_pack_int64(pk, -5);
    pack_str(pk, "big");
    msgpack_pack_uint64(pk, UINT64_MAX);
    pack_str(pk, "pi");
    msgpack_pack_double(pk, 3.5);
    pack_str(pk, "ok");
    msgpack_pack_true(pk);
    pack_str(pk, "nested");
    msgpack_pack_map(pk, 1);
    pack_str(pk, "a");
    msgpack_pack_map(pk, 1);
    pack_str(pk, "b");
    msgpack_pack_int(pk, 7);
    pack_str(pk, "lines");
    msgpack_pack_array(pk, 2);
    msgpack_pack_int(pk, 1);
    msgpack_pack_map(pk, 1);
    pack_str(pk, "sku");
    pack_str(pk, "x-1");
    pack_str(pk, "f");
    msgpack_pack_float(pk, 0.25f);
    return EDDY_OK;
}

static eddy_value *order(void) {
    eddy_event *ev = ev_new("e");
    cr_assert_eq(eddy_event_set_value(ev, pack_order, NULL, NULL), EDDY_OK);
    eddy_value *v = NULL;
    cr_assert_eq(eddy_event_decode_value(ev, &v, NULL), EDDY_OK);
    eddy_event_free(ev);
    return v;
}

Test(msgpack_get, reads_fields_of_each_type_by_path) {
    eddy_value *v = order();
    const msgpack_object *o = eddy_value_object(v);
    eddy_error err = {0};
    const char *s;
    size_t len;
    cr_assert_eq(eddy_msgpack_get_str(o, "name", &s, &len, &err), EDDY_OK, "%s", err.detail);
    cr_expect(len == 6 && memcmp(s, "widget", 6) == 0);
    cr_assert_eq(eddy_msgpack_get_str(o, "lines.1.sku", &s, &len, &err), EDDY_OK, "%s", err.detail);
    cr_expect(len == 3 && memcmp(s, "x-1", 3) == 0);
    int64_t i;
    cr_assert_eq(eddy_msgpack_get_int(o, "n", &i, &err), EDDY_OK);
    cr_expect_eq(i, -5);
    cr_assert_eq(eddy_msgpack_get_int(o, "nested.a.b", &i, &err), EDDY_OK);
    cr_expect_eq(i, 7);
    cr_assert_eq(eddy_msgpack_get_int(o, "lines.0", &i, &err), EDDY_OK);
    cr_expect_eq(i, 1);
    double d;
    cr_assert_eq(eddy_msgpack_get_double(o, "pi", &d, &err), EDDY_OK);
    cr_expect_eq(d, 3.5);
    cr_assert_eq(eddy_msgpack_get_double(o, "f", &d, &err), EDDY_OK);
    cr_expect_eq(d, 0.25);
    cr_assert_eq(eddy_msgpack_get_double(o, "n", &d, &err), EDDY_OK, "an integer is a number");
    cr_expect_eq(d, -5.0);
    bool b = false;
    cr_assert_eq(eddy_msgpack_get_bool(o, "ok", &b, &err), EDDY_OK);
    cr_expect(b);
    cr_expect_eq(eddy_msgpack_find(o, ""), o);
    cr_expect_eq(eddy_msgpack_find(o, "nested.a")->type, MSGPACK_OBJECT_MAP);
    eddy_value_free(v);
}

Test(msgpack_get, tells_a_missing_field_from_one_of_another_type) {
    eddy_value *v = order();
    const msgpack_object *o = eddy_value_object(v);
    eddy_error err = {0};
    int64_t i = 42;
    const char *missing[] = {"nope",     "nested.a.c", "lines.2",  "lines.x",
                             "name.sub", "nested.",    "lines.-1", "nested..a"};
    for (size_t k = 0; k < sizeof(missing) / sizeof(missing[0]); k++) {
        cr_expect_eq(eddy_msgpack_get_int(o, missing[k], &i, &err), EDDY_ERR_NOT_FOUND, "%s",
                     missing[k]);
        cr_expect(strstr(err.detail, "no such field"), "%s", err.detail);
    }
    cr_expect_eq(i, 42, "untouched");
    cr_expect_eq(eddy_msgpack_get_int(o, "name", &i, &err), EDDY_ERR_MALFORMED);
    cr_expect_str_eq(err.detail, "'name' is a string, not an integer");
    cr_expect_eq(eddy_msgpack_get_int(o, "big", &i, &err), EDDY_ERR_MALFORMED);
    cr_expect(strstr(err.detail, "above INT64_MAX"), "%s", err.detail);
    cr_expect_eq(eddy_msgpack_get_int(o, "pi", &i, &err), EDDY_ERR_MALFORMED);
    const char *s = NULL;
    cr_expect_eq(eddy_msgpack_get_str(o, "n", &s, NULL, &err), EDDY_ERR_MALFORMED);
    cr_expect_null(s);
    bool b;
    cr_expect_eq(eddy_msgpack_get_bool(o, "nested", &b, &err), EDDY_ERR_MALFORMED);
    cr_expect_str_eq(err.detail, "'nested' is a map, not a boolean");
    double d;
    cr_expect_eq(eddy_msgpack_get_double(o, "ok", &d, &err), EDDY_ERR_MALFORMED);
    cr_expect_eq(eddy_msgpack_get_int(NULL, "n", &i, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_null(eddy_msgpack_find(o, NULL));
    eddy_value_free(v);
}
