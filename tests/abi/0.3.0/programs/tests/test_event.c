/* SPDX-License-Identifier: BSD-3-Clause */
/* CloudEvents events: setters and getters, extensions in insertion order, binary data, deep
 * copies, the size measure, and every validation rule with the attribute it names. */
#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eddy/event.h"

static eddy_event *valid_event(void) {
    eddy_event *ev = eddy_event_new();
    cr_assert(ev);
    cr_assert_eq(eddy_event_set_id(ev, "42"), EDDY_OK);
    cr_assert_eq(eddy_event_set_source(ev, "/orders"), EDDY_OK);
    cr_assert_eq(eddy_event_set_type(ev, "com.example.order.created"), EDDY_OK);
    return ev;
}

/* Expects validation to fail with the detail starting "<attr>:". */
static void expect_invalid(const eddy_event *ev, const char *attr, const char *what) {
    eddy_error err = {0};
    char prefix[64];
    snprintf(prefix, sizeof(prefix), "%s:", attr);
    cr_expect_eq(eddy_event_validate(ev, &err), EDDY_ERR_INVALID_EVENT, "%s: accepted", what);
    cr_expect_eq(err.status, EDDY_ERR_INVALID_EVENT, "%s", what);
    cr_expect(strncmp(err.detail, prefix, strlen(prefix)) == 0, "%s: detail '%s' should name %s",
              what, err.detail, attr);
}

static bool printable(const char *s) {
    for (; *s; s++) {
        if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
            return false;
    }
    return true;
}

static void expect_valid(const eddy_event *ev, const char *what) {
    eddy_error err = {0};
    cr_expect_eq(eddy_event_validate(ev, &err), EDDY_OK, "%s: refused: %s", what, err.detail);
}

Test(event, new_is_empty_with_specversion) {
    eddy_event *ev = eddy_event_new();
    cr_assert(ev);
    cr_expect_str_eq(eddy_event_specversion(ev), "1.0");
    cr_expect_null(eddy_event_id(ev));
    cr_expect_null(eddy_event_source(ev));
    cr_expect_null(eddy_event_type(ev));
    cr_expect_null(eddy_event_subject(ev));
    cr_expect_null(eddy_event_time(ev));
    cr_expect_null(eddy_event_datacontenttype(ev));
    cr_expect_null(eddy_event_dataschema(ev));
    cr_expect_eq(eddy_event_extension_count(ev), 0);
    size_t len = 99;
    cr_expect_null(eddy_event_data(ev, &len));
    cr_expect_eq(len, 0);
    eddy_event_free(ev);
    eddy_event_free(NULL);
}

Test(event, setters_copy_and_getters_return) {
    eddy_event *ev = eddy_event_new();
    char buf[32];
    strcpy(buf, "id-1");
    cr_assert_eq(eddy_event_set_id(ev, buf), EDDY_OK);
    strcpy(buf, "changed");
    cr_expect_str_eq(eddy_event_id(ev), "id-1");
    cr_assert_eq(eddy_event_set_source(ev, "urn:src"), EDDY_OK);
    cr_assert_eq(eddy_event_set_type(ev, "t"), EDDY_OK);
    cr_assert_eq(eddy_event_set_subject(ev, "orders.42"), EDDY_OK);
    cr_assert_eq(eddy_event_set_time(ev, "2026-11-30T02:11:20Z"), EDDY_OK);
    cr_assert_eq(eddy_event_set_datacontenttype(ev, "application/json"), EDDY_OK);
    cr_assert_eq(eddy_event_set_dataschema(ev, "https://example.com/s.json"), EDDY_OK);
    cr_expect_str_eq(eddy_event_source(ev), "urn:src");
    cr_expect_str_eq(eddy_event_type(ev), "t");
    cr_expect_str_eq(eddy_event_subject(ev), "orders.42");
    cr_expect_str_eq(eddy_event_time(ev), "2026-11-30T02:11:20Z");
    cr_expect_str_eq(eddy_event_datacontenttype(ev), "application/json");
    cr_expect_str_eq(eddy_event_dataschema(ev), "https://example.com/s.json");
    /* replacing */
    cr_assert_eq(eddy_event_set_id(ev, "id-2"), EDDY_OK);
    cr_expect_str_eq(eddy_event_id(ev), "id-2");
    expect_valid(ev, "all attributes");
    eddy_event_free(ev);
}

Test(event, null_clears_optional_but_not_required) {
    eddy_event *ev = valid_event();
    cr_assert_eq(eddy_event_set_subject(ev, "s"), EDDY_OK);
    cr_assert_eq(eddy_event_set_time(ev, "2026-01-01T00:00:00Z"), EDDY_OK);
    cr_assert_eq(eddy_event_set_datacontenttype(ev, "text/plain"), EDDY_OK);
    cr_assert_eq(eddy_event_set_dataschema(ev, "urn:x"), EDDY_OK);
    cr_expect_eq(eddy_event_set_subject(ev, NULL), EDDY_OK);
    cr_expect_eq(eddy_event_set_time(ev, NULL), EDDY_OK);
    cr_expect_eq(eddy_event_set_datacontenttype(ev, NULL), EDDY_OK);
    cr_expect_eq(eddy_event_set_dataschema(ev, NULL), EDDY_OK);
    cr_expect_null(eddy_event_subject(ev));
    cr_expect_null(eddy_event_time(ev));
    cr_expect_null(eddy_event_datacontenttype(ev));
    cr_expect_null(eddy_event_dataschema(ev));
    cr_expect_eq(eddy_event_set_id(ev, NULL), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_event_set_source(ev, NULL), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_event_set_type(ev, NULL), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_str_eq(eddy_event_id(ev), "42", "a refused setter changes nothing");
    expect_valid(ev, "after clearing optionals");
    eddy_event_free(ev);
}

Test(event, null_event_arguments) {
    cr_expect_eq(eddy_event_set_id(NULL, "x"), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_event_set_source(NULL, "x"), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_event_set_type(NULL, "x"), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_event_set_subject(NULL, "x"), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_event_set_time(NULL, "x"), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_event_set_datacontenttype(NULL, "x"), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_event_set_dataschema(NULL, "x"), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_event_set_data(NULL, "x", 1), EDDY_ERR_INVALID_ARGUMENT);
    eddy_error err = {0};
    cr_expect_eq(eddy_event_set_extension(NULL, "a", "b", &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(err.status, EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_null(eddy_event_id(NULL));
    cr_expect_null(eddy_event_source(NULL));
    cr_expect_null(eddy_event_specversion(NULL));
    cr_expect_null(eddy_event_type(NULL));
    cr_expect_null(eddy_event_subject(NULL));
    cr_expect_null(eddy_event_time(NULL));
    cr_expect_null(eddy_event_datacontenttype(NULL));
    cr_expect_null(eddy_event_dataschema(NULL));
    cr_expect_null(eddy_event_extension(NULL, "a"));
    cr_expect_eq(eddy_event_extension_count(NULL), 0);
    cr_expect_eq(eddy_event_extension_at(NULL, 0, NULL, NULL), EDDY_ERR_INVALID_ARGUMENT);
    size_t len = 7;
    cr_expect_null(eddy_event_data(NULL, &len));
    cr_expect_eq(len, 0);
    cr_expect_null(eddy_event_dup(NULL));
    cr_expect_eq(eddy_event_size(NULL), 0);
    cr_expect_eq(eddy_event_validate(NULL, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_event_validate(NULL, NULL), EDDY_ERR_INVALID_ARGUMENT);
}

Test(event, extensions_keep_insertion_order) {
    eddy_event *ev = valid_event();
    eddy_error err = {0};
    cr_assert_eq(eddy_event_set_extension(ev, "zeta", "1", &err), EDDY_OK);
    cr_assert_eq(eddy_event_set_extension(ev, "alpha", "2", &err), EDDY_OK);
    cr_assert_eq(eddy_event_set_extension(ev, "m1d", "", NULL), EDDY_OK);
    cr_assert_eq(eddy_event_extension_count(ev), 3);
    const char *name, *value;
    cr_assert_eq(eddy_event_extension_at(ev, 0, &name, &value), EDDY_OK);
    cr_expect_str_eq(name, "zeta");
    cr_expect_str_eq(value, "1");
    cr_assert_eq(eddy_event_extension_at(ev, 1, &name, &value), EDDY_OK);
    cr_expect_str_eq(name, "alpha");
    cr_assert_eq(eddy_event_extension_at(ev, 2, &name, NULL), EDDY_OK);
    cr_expect_str_eq(name, "m1d");
    cr_assert_eq(eddy_event_extension_at(ev, 2, NULL, &value), EDDY_OK);
    cr_expect_str_eq(value, "", "an empty extension value is allowed");
    cr_expect_eq(eddy_event_extension_at(ev, 3, &name, &value), EDDY_ERR_INVALID_ARGUMENT);

    /* Replacing keeps the first insertion's position. */
    cr_assert_eq(eddy_event_set_extension(ev, "zeta", "one", &err), EDDY_OK);
    cr_assert_eq(eddy_event_extension_count(ev), 3);
    eddy_event_extension_at(ev, 0, &name, &value);
    cr_expect_str_eq(name, "zeta");
    cr_expect_str_eq(value, "one");
    cr_expect_str_eq(eddy_event_extension(ev, "zeta"), "one");
    cr_expect_str_eq(eddy_event_extension(ev, "alpha"), "2");
    cr_expect_null(eddy_event_extension(ev, "nope"));
    cr_expect_null(eddy_event_extension(ev, NULL));

    /* Removing keeps the others in order; removing an absent one is not an error. */
    cr_assert_eq(eddy_event_set_extension(ev, "zeta", NULL, &err), EDDY_OK);
    cr_assert_eq(eddy_event_set_extension(ev, "absent", NULL, &err), EDDY_OK);
    cr_assert_eq(eddy_event_extension_count(ev), 2);
    eddy_event_extension_at(ev, 0, &name, &value);
    cr_expect_str_eq(name, "alpha");
    eddy_event_extension_at(ev, 1, &name, &value);
    cr_expect_str_eq(name, "m1d");
    cr_expect_null(eddy_event_extension(ev, "zeta"));
    expect_valid(ev, "with extensions");
    eddy_event_free(ev);
}

Test(event, many_extensions) {
    eddy_event *ev = valid_event();
    char name[16], value[16];
    for (int i = 0; i < 200; i++) {
        snprintf(name, sizeof(name), "e%d", i);
        snprintf(value, sizeof(value), "v%d", i);
        cr_assert_eq(eddy_event_set_extension(ev, name, value, NULL), EDDY_OK);
    }
    cr_assert_eq(eddy_event_extension_count(ev), 200);
    const char *n, *v;
    eddy_event_extension_at(ev, 199, &n, &v);
    cr_expect_str_eq(n, "e199");
    cr_expect_str_eq(v, "v199");
    expect_valid(ev, "200 extensions");
    eddy_event_free(ev);
}

Test(event, extension_names_are_checked) {
    static const char *const bad[] = {
        "",
        "Upper",
        "with-dash",
        "under_score",
        "sp ace",
        "dot.ted",
        "caf\xc3\xa9",
        "id",
        "source",
        "specversion",
        "type",
        "subject",
        "time",
        "datacontenttype",
        "dataschema",
        "data",
        "a256aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    };
    eddy_event *ev = valid_event();
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        eddy_error err = {0};
        cr_expect_eq(eddy_event_set_extension(ev, bad[i], "v", &err), EDDY_ERR_INVALID_EVENT,
                     "'%s' accepted", bad[i]);
        cr_expect_eq(err.status, EDDY_ERR_INVALID_EVENT);
        cr_expect(strncmp(err.detail, "extension '", 11) == 0, "detail: %s", err.detail);
        if (bad[i][0] && printable(bad[i]) && strlen(bad[i]) < 40) {
            char quoted[64];
            snprintf(quoted, sizeof(quoted), "'%s'", bad[i]);
            cr_expect(strstr(err.detail, quoted), "detail '%s' should name %s", err.detail, bad[i]);
        }
        /* without an error struct */
        cr_expect_eq(eddy_event_set_extension(ev, bad[i], "v", NULL), EDDY_ERR_INVALID_EVENT);
    }
    cr_expect_eq(eddy_event_extension_count(ev), 0);
    cr_expect_eq(eddy_event_set_extension(ev, NULL, "v", NULL), EDDY_ERR_INVALID_ARGUMENT);
    /* a long, control-character name is reported printable and truncated */
    char longname[300];
    memset(longname, 'a', sizeof(longname) - 1);
    longname[0] = '\n';
    longname[sizeof(longname) - 1] = '\0';
    eddy_error err = {0};
    cr_expect_eq(eddy_event_set_extension(ev, longname, "v", &err), EDDY_ERR_INVALID_EVENT);
    cr_expect(strncmp(err.detail, "extension '?aaa", 15) == 0, "detail: %s", err.detail);
    cr_expect(strstr(err.detail, "...'"), "detail: %s", err.detail);

    cr_expect_eq(eddy_event_set_extension(ev, "abcdefghijklmnopqrst", "20", NULL), EDDY_OK);
    cr_expect_eq(eddy_event_set_extension(ev, "0123456789", "digits", NULL), EDDY_OK);
    cr_expect_eq(eddy_event_set_extension(ev, "datax", "close to data", NULL), EDDY_OK);
    cr_expect_eq(eddy_event_extension_count(ev), 3);
    expect_valid(ev, "valid extension names");
    eddy_event_free(ev);
}

Test(event, data_is_binary_safe) {
    eddy_event *ev = valid_event();
    const unsigned char bytes[] = {0x00, 'a', 0x00, 0xff, 'b', 0x00};
    cr_assert_eq(eddy_event_set_data(ev, bytes, sizeof(bytes)), EDDY_OK);
    size_t len = 0;
    const unsigned char *d = eddy_event_data(ev, &len);
    cr_assert(d);
    cr_assert_eq(len, sizeof(bytes));
    cr_expect_arr_eq(d, bytes, sizeof(bytes));
    cr_expect_eq(d[len], 0, "data is followed by a NUL for text use");
    cr_expect(eddy_event_data(ev, NULL), "len may be NULL");

    /* present but empty is not the same as absent */
    cr_assert_eq(eddy_event_set_data(ev, "", 0), EDDY_OK);
    d = eddy_event_data(ev, &len);
    cr_expect(d);
    cr_expect_eq(len, 0);

    cr_assert_eq(eddy_event_set_data(ev, NULL, 0), EDDY_OK);
    cr_expect_null(eddy_event_data(ev, &len));
    cr_expect_eq(len, 0);

    cr_assert_eq(eddy_event_set_data(ev, "text", 4), EDDY_OK);
    cr_expect_eq(eddy_event_set_data(ev, NULL, 3), EDDY_ERR_INVALID_ARGUMENT);
    d = eddy_event_data(ev, &len);
    cr_expect_eq(len, 4, "a refused set_data changes nothing");
    cr_expect_str_eq((const char *)d, "text");
    eddy_event_free(ev);
}

Test(event, dup_is_deep_and_independent) {
    eddy_event *ev = valid_event();
    eddy_event_set_subject(ev, "s");
    eddy_event_set_time(ev, "2026-11-30T02:11:20.123+01:00");
    eddy_event_set_datacontenttype(ev, "application/octet-stream");
    eddy_event_set_dataschema(ev, "urn:schema");
    eddy_event_set_extension(ev, "b", "2", NULL);
    eddy_event_set_extension(ev, "a", "1", NULL);
    const char bin[] = {1, 0, 2};
    eddy_event_set_data(ev, bin, sizeof(bin));

    eddy_event *d = eddy_event_dup(ev);
    cr_assert(d);
    eddy_event_set_id(ev, "changed");
    eddy_event_set_extension(ev, "b", "changed", NULL);
    eddy_event_set_data(ev, NULL, 0);
    eddy_event_set_subject(ev, NULL);

    cr_expect_str_eq(eddy_event_id(d), "42");
    cr_expect_str_eq(eddy_event_source(d), "/orders");
    cr_expect_str_eq(eddy_event_type(d), "com.example.order.created");
    cr_expect_str_eq(eddy_event_subject(d), "s");
    cr_expect_str_eq(eddy_event_time(d), "2026-11-30T02:11:20.123+01:00");
    cr_expect_str_eq(eddy_event_datacontenttype(d), "application/octet-stream");
    cr_expect_str_eq(eddy_event_dataschema(d), "urn:schema");
    cr_assert_eq(eddy_event_extension_count(d), 2);
    const char *n, *v;
    eddy_event_extension_at(d, 0, &n, &v);
    cr_expect_str_eq(n, "b");
    cr_expect_str_eq(v, "2");
    eddy_event_extension_at(d, 1, &n, &v);
    cr_expect_str_eq(n, "a");
    size_t len;
    const char *data = eddy_event_data(d, &len);
    cr_assert_eq(len, 3);
    cr_expect_arr_eq(data, bin, 3);
    expect_valid(d, "dup");
    eddy_event_free(ev);

    /* a minimal event, and an empty one, copy too */
    eddy_event *e = eddy_event_new();
    eddy_event *de = eddy_event_dup(e);
    cr_assert(de);
    cr_expect_null(eddy_event_id(de));
    cr_expect_null(eddy_event_data(de, NULL));
    eddy_event_free(e);
    eddy_event_free(de);
    eddy_event_free(d);
}

Test(event, required_attributes) {
    eddy_event *ev = eddy_event_new();
    expect_invalid(ev, "id", "empty event");
    eddy_event_set_id(ev, "");
    expect_invalid(ev, "id", "empty id");
    eddy_event_set_id(ev, "1");
    expect_invalid(ev, "source", "no source");
    eddy_event_set_source(ev, "");
    expect_invalid(ev, "source", "empty source");
    eddy_event_set_source(ev, "/s");
    expect_invalid(ev, "type", "no type");
    eddy_event_set_type(ev, "");
    expect_invalid(ev, "type", "empty type");
    eddy_event_set_type(ev, "t");
    expect_valid(ev, "minimal");
    cr_expect_eq(eddy_event_validate(ev, NULL), EDDY_OK);
    eddy_event_free(ev);

    /* the first bad attribute in spec order is the one named */
    ev = eddy_event_new();
    eddy_event_set_time(ev, "bad");
    expect_invalid(ev, "id", "id before time");
    eddy_event_free(ev);
}

Test(event, validate_leaves_err_alone_on_success) {
    eddy_event *ev = valid_event();
    eddy_error err = {.status = EDDY_ERR_IO, .detail = "untouched"};
    cr_expect_eq(eddy_event_validate(ev, &err), EDDY_OK);
    cr_expect_eq(err.status, EDDY_ERR_IO);
    cr_expect_str_eq(err.detail, "untouched");
    eddy_event_free(ev);
}

Test(event, source_is_a_uri_reference) {
    static const char *const good[] = {
        "/orders",
        "https://github.com/cloudevents/spec/pull/123",
        "urn:event:from:myapi/resource/123",
        "mailto:cncf-wg-serverless@lists.cncf.io",
        "relative/path?q=1&r=2#frag",
        "%41%2f",
        "/caf\xc3\xa9",
        "a",
        "//host:8080/p",
        "urn:uuid:6e8bc430-9c3a-11d9-9669-0800200c9a66",
        "http://[::1]:80/x",
        "?query",
        "#frag",
    };
    static const char *const bad[] = {
        "has space", "tab\there", "new\nline", "del\x7f",   "<angle>", "quote\"", "back\\slash",
        "caret^",    "brace{",    "pipe|",     "tick`",     "%4",      "%zz",     "%",
        "1abc:x",    ":nothing",  "a#b#c",     "sch eme:x", "a_b:c",
    };
    eddy_event *ev = valid_event();
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        eddy_event_set_source(ev, good[i]);
        expect_valid(ev, good[i]);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        eddy_event_set_source(ev, bad[i]);
        expect_invalid(ev, "source", bad[i]);
    }
    eddy_event_free(ev);
}

Test(event, subject_non_empty_when_set) {
    eddy_event *ev = valid_event();
    eddy_event_set_subject(ev, "");
    expect_invalid(ev, "subject", "empty subject");
    eddy_event_set_subject(ev, "x");
    expect_valid(ev, "subject x");
    eddy_event_free(ev);
}

Test(event, time_is_rfc3339) {
    static const char *const good[] = {
        "2026-11-30T02:11:20Z",
        "2026-11-30t02:11:20z",
        "1985-04-12T23:20:50.52Z",
        "1996-12-19T16:39:57-08:00",
        "1990-12-31T23:59:60Z",
        "1990-12-31T15:59:60-08:00",
        "1937-01-01T12:00:27.87+00:20",
        "2024-02-29T00:00:00Z",
        "2000-02-29T00:00:00Z",
        "0000-01-01T00:00:00Z",
        "9999-12-31T23:59:59.999999999+23:59",
        "2026-01-31T00:00:00.0Z",
    };
    static const char *const bad[] = {
        "",
        "2026-11-30",
        "2026-11-30T02:11:20",
        "2026-11-30 02:11:20Z",
        "2026-11-30T02:11Z",
        "26-11-30T02:11:20Z",
        "2026-1-30T02:11:20Z",
        "2026-11-30T2:11:20Z",
        "2026-00-30T02:11:20Z",
        "2026-13-30T02:11:20Z",
        "2026-11-00T02:11:20Z",
        "2026-11-31T02:11:20Z",
        "2023-02-29T00:00:00Z",
        "1900-02-29T00:00:00Z",
        "2026-11-30T24:00:00Z",
        "2026-11-30T23:60:00Z",
        "2026-11-30T23:59:61Z",
        "2026-11-30T02:11:20.Z",
        "2026-11-30T02:11:20,5Z",
        "2026-11-30T02:11:20+0100",
        "2026-11-30T02:11:20+01",
        "2026-11-30T02:11:20+24:00",
        "2026-11-30T02:11:20+01:60",
        "2026-11-30T02:11:20ZZ",
        "2026-11-30T02:11:20Z ",
        " 2026-11-30T02:11:20Z",
        "2026/11/30T02:11:20Z",
        "2026-11-30X02:11:20Z",
        "2026-11-30T02-11-20Z",
        "2026-11-30T02:11:20UTC",
        "2026-11-30T02:11:20+1:00",
        "2026-11-30T02:11:20.5",
        "abcd-ef-ghTij:kl:mnZ",
    };
    eddy_event *ev = valid_event();
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        eddy_event_set_time(ev, good[i]);
        expect_valid(ev, good[i]);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        eddy_event_set_time(ev, bad[i]);
        expect_invalid(ev, "time", bad[i]);
    }
    eddy_event_free(ev);
}

Test(event, datacontenttype_is_a_media_type) {
    static const char *const good[] = {
        "application/json",
        "text/plain;charset=utf-8",
        "text/plain; charset=utf-8",
        "text/plain ; charset=\"utf-8\"",
        "application/vnd.example+json; v=1; q=\"a \\\"quoted\\\" b\"",
        "application/cloudevents+json",
        "*/*",
        "x-custom/x.y_z-1",
    };
    static const char *const bad[] = {
        "",
        "json",
        "application/",
        "/json",
        "application/json/x",
        "application /json",
        "application/ json",
        "text/plain;",
        "text/plain; ",
        "text/plain;charset",
        "text/plain;charset=",
        "text/plain;=utf-8",
        "text/plain;charset=\"open",
        "text/plain;charset=\"bad\x01\"",
        "text/plain;charset=utf 8",
        "text/plain charset=utf-8",
        "text/plain ",
        "te(x)t/plain",
        "text/pl@in",
    };
    eddy_event *ev = valid_event();
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        eddy_event_set_datacontenttype(ev, good[i]);
        expect_valid(ev, good[i]);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        eddy_event_set_datacontenttype(ev, bad[i]);
        expect_invalid(ev, "datacontenttype", bad[i]);
    }
    eddy_event_free(ev);
}

Test(event, dataschema_is_an_absolute_uri) {
    static const char *const good[] = {
        "https://example.com/schemas/order.json",
        "urn:schema:order:v1",
        "http://example.com/s.json#/definitions/a",
        "x+y-z.w:opaque",
        "file:///tmp/s.json",
    };
    static const char *const bad[] = {
        "",
        "/relative/path",
        "relative",
        "//host/path",
        ":noscheme",
        "1http://x",
        "ht tp://x",
        "http://exa mple.com",
        "http://x/%g0",
        "path/with:colon",
        "?q:x",
    };
    eddy_event *ev = valid_event();
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        eddy_event_set_dataschema(ev, good[i]);
        expect_valid(ev, good[i]);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        eddy_event_set_dataschema(ev, bad[i]);
        expect_invalid(ev, "dataschema", bad[i]);
    }
    eddy_event_free(ev);
}

Test(event, size_counts_fields_and_data) {
    eddy_event *ev = valid_event();
    /* specversion+1.0, id+42, source+/orders, type+com.example.order.created */
    size_t base = 11 + 3 + 2 + 2 + 6 + 7 + 4 + 25;
    cr_expect_eq(eddy_event_size(ev), base);
    eddy_event_set_subject(ev, "abc");               /* 7 + 3 */
    eddy_event_set_extension(ev, "ext", "vv", NULL); /* "x-ext" 5 + 2 */
    eddy_event_set_data(ev, "\0\0\0\0", 4);          /* "data" 4 + 4 */
    cr_expect_eq(eddy_event_size(ev), base + 10 + 7 + 8);
    eddy_event_set_data(ev, "", 0); /* an empty data field is still a field */
    cr_expect_eq(eddy_event_size(ev), base + 10 + 7 + 4);
    eddy_event_free(ev);
}

/* The spec says an extension name SHOULD NOT exceed 20 characters; other producers' events carry
 * longer ones, so eddy takes them (up to EDDY_EXTENSION_NAME_MAX). */
Test(event, long_extension_names_are_accepted) {
    eddy_event *ev = valid_event();
    char name[EDDY_EXTENSION_NAME_MAX + 1];
    memset(name, 'z', EDDY_EXTENSION_NAME_MAX);
    name[EDDY_EXTENSION_NAME_MAX] = '\0';
    cr_expect_eq(eddy_event_set_extension(ev, "abcdefghijklmnopqrstu", "v", NULL), EDDY_OK);
    cr_expect_eq(eddy_event_set_extension(ev, name, "v", NULL), EDDY_OK);
    expect_valid(ev, "long extension names");
    cr_expect_str_eq(eddy_event_extension(ev, "abcdefghijklmnopqrstu"), "v");
    eddy_event_free(ev);
}

/* The CloudEvents String type: valid UTF-8 without control characters, noncharacters or
 * surrogates. Each case sets one attribute of a valid event; a refusal names the attribute and
 * the byte position. */
static eddy_status set_named(eddy_event *ev, const char *attr, const char *v) {
    if (strcmp(attr, "id") == 0)
        return eddy_event_set_id(ev, v);
    if (strcmp(attr, "source") == 0)
        return eddy_event_set_source(ev, v);
    if (strcmp(attr, "type") == 0)
        return eddy_event_set_type(ev, v);
    if (strcmp(attr, "subject") == 0)
        return eddy_event_set_subject(ev, v);
    return eddy_event_set_extension(ev, attr, v, NULL);
}

Test(event, string_type_table) {
    static const struct {
        const char *attr, *value;
        long pos; /* -1: accepted */
        const char *why;
    } cases[] = {
        /* accepted */
        {"id", "plain ascii", -1, NULL},
        {"subject", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", -1, NULL}, /* é € emoji */
        {"type", "tab\xc2\xa0nbsp", -1, NULL},                              /* U+00A0 */
        {"subject", "\xef\xbf\xbd", -1, NULL},                              /* U+FFFD */
        {"myext", "\xf4\x8f\xbf\xbd", -1, NULL},                            /* U+10FFFD */
        {"subject", "\xef\xb7\x8f", -1, NULL},                              /* U+FDCF */
        {"subject", "\xef\xb7\xb0", -1, NULL},                              /* U+FDF0 */
        {"subject", "~\x7e", -1, NULL},                                     /* ~ is not DEL */
        /* refused */
        {"id", "line\nbreak", 4, "control character U+000A"},
        {"subject", "del\x7f", 3, "control character U+007F"},
        {"type", "next\xc2\x85line", 4, "control character U+0085"},
        {"type", "\xc2\x9f", 0, "control character U+009F"},
        {"myext", "a\nb", 1, "control character U+000A"},
        {"subject", "tab\there", 3, "control character U+0009"},
        {"subject", "\x1b[31m", 0, "control character U+001B"},
        {"subject", "x\xef\xbf\xbe", 1, "noncharacter U+FFFE"},
        {"subject", "\xef\xbf\xbf", 0, "noncharacter U+FFFF"},
        {"subject", "ab\xef\xb7\x90", 2, "noncharacter U+FDD0"},
        {"subject", "\xef\xb7\xaf", 0, "noncharacter U+FDEF"},
        {"subject", "\xf0\x9f\xbf\xbe", 0, "noncharacter U+1FFFE"},
        {"subject", "\xf4\x8f\xbf\xbf", 0, "noncharacter U+10FFFF"},
        {"subject", "s\xed\xa0\x80", 1, "surrogate"}, /* lone U+D800 as CESU-8 */
        {"subject", "\xed\xbf\xbf", 0, "surrogate"},  /* U+DFFF */
        {"id", "raw\xff", 3, "not UTF-8"},
        {"id", "\xc0\xaf", 0, "not UTF-8"},         /* overlong '/' */
        {"id", "\xe2\x82", 0, "not UTF-8"},         /* truncated */
        {"id", "\xf4\x90\x80\x80", 0, "not UTF-8"}, /* above U+10FFFF */
        {"id", "a\x80", 1, "not UTF-8"},            /* stray continuation byte */
        {"source", "/a\n", 2, "control character U+000A"},
        /* past the eight-byte steps of the ASCII fast path, and on their edges */
        {"subject", "abcdefgh\x1f", 8, "control character U+001F"},
        {"subject", "abcdefg\x7f", 7, "control character U+007F"},
        {"subject", "0123456789abcdef\x7fq", 16, "control character U+007F"},
        {"subject", "0123456789abcdefghijklm\xc2\x85", 23, "control character U+0085"},
        {"subject", "0123456789abcdef\xc3\xa9\xef\xbf\xbe", 18, "noncharacter U+FFFE"},
        {"subject", "0123456789abcdef0123456789abcdef\xff", 32, "not UTF-8"},
        {"subject", "0123456789abcdef0123456789abcdef~ \xc3\xa9", -1, NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        eddy_event *ev = valid_event();
        cr_assert_eq(set_named(ev, cases[i].attr, cases[i].value), EDDY_OK, "case %zu", i);
        eddy_error err = {0};
        eddy_status st = eddy_event_validate(ev, &err);
        if (cases[i].pos < 0) {
            cr_expect_eq(st, EDDY_OK, "case %zu (%s) refused: %s", i, cases[i].attr, err.detail);
        } else {
            cr_expect_eq(st, EDDY_ERR_INVALID_EVENT, "case %zu (%s) accepted", i, cases[i].attr);
            char want[128];
            snprintf(want, sizeof(want), "%s: not a CloudEvents String: ", cases[i].attr);
            cr_expect(strncmp(err.detail, want, strlen(want)) == 0, "case %zu: detail '%s'", i,
                      err.detail);
            cr_expect(strstr(err.detail, cases[i].why), "case %zu: detail '%s' lacks '%s'", i,
                      err.detail, cases[i].why);
            snprintf(want, sizeof(want), "at byte %ld", cases[i].pos);
            cr_expect(strstr(err.detail, want), "case %zu: detail '%s' lacks '%s'", i, err.detail,
                      want);
            cr_expect(printable(err.detail), "case %zu: detail not printable", i);
        }
        eddy_event_free(ev);
    }
}

Test(event, typed_extensions) {
    eddy_event *ev = valid_event();
    eddy_error err = {0};
    cr_assert_eq(eddy_event_set_ext_int(ev, "count", -2147483647 - 1, &err), EDDY_OK);
    cr_assert_eq(eddy_event_set_ext_bool(ev, "flag", true, &err), EDDY_OK);
    cr_assert_eq(eddy_event_set_ext_binary(ev, "blob", "\x00\x01\xff", 3, &err), EDDY_OK);
    cr_assert_eq(eddy_event_set_ext_typed(ev, "home", EDDY_EXT_URI, "https://e.com/x", &err),
                 EDDY_OK);
    cr_assert_eq(eddy_event_set_ext_typed(ev, "rel", EDDY_EXT_URI_REF, "../x", &err), EDDY_OK);
    cr_assert_eq(
        eddy_event_set_ext_typed(ev, "when", EDDY_EXT_TIMESTAMP, "2020-01-01T00:00:00Z", &err),
        EDDY_OK);
    cr_assert_eq(eddy_event_set_extension(ev, "plain", "7", &err), EDDY_OK);
    expect_valid(ev, "typed");
    /* the string accessors read the canonical text */
    cr_expect_str_eq(eddy_event_extension(ev, "count"), "-2147483648");
    cr_expect_str_eq(eddy_event_extension(ev, "flag"), "true");
    cr_expect_str_eq(eddy_event_extension(ev, "blob"), "AAH/");
    int32_t n = 0;
    bool b = false;
    cr_expect_eq(eddy_event_ext_int(ev, "count", &n), EDDY_OK);
    cr_expect_eq(n, INT32_MIN);
    cr_expect_eq(eddy_event_ext_bool(ev, "flag", &b), EDDY_OK);
    cr_expect(b);
    void *bytes = NULL;
    size_t len = 0;
    cr_expect_eq(eddy_event_ext_binary(ev, "blob", &bytes, &len), EDDY_OK);
    cr_expect_eq(len, 3);
    cr_expect_arr_eq(bytes, "\x00\x01\xff", 3);
    free(bytes);
    eddy_ext_type t = EDDY_EXT_STRING;
    cr_expect_eq(eddy_event_ext_type(ev, "when", &t), EDDY_OK);
    cr_expect_eq(t, EDDY_EXT_TIMESTAMP);
    cr_expect_eq(eddy_event_ext_type(ev, "plain", &t), EDDY_OK);
    cr_expect_eq(t, EDDY_EXT_STRING);
    cr_expect_eq(eddy_event_extension_type_at(ev, 4, &t), EDDY_OK);
    cr_expect_eq(t, EDDY_EXT_URI_REF);
    cr_expect_eq(eddy_event_extension_type_at(ev, 99, &t), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_str_eq(eddy_ext_type_name(EDDY_EXT_URI_REF), "URI-reference");
    /* wrong type or missing */
    cr_expect_eq(eddy_event_ext_int(ev, "plain", &n), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_event_ext_bool(ev, "count", &b), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_event_ext_int(ev, "nope", &n), EDDY_ERR_NOT_FOUND);
    cr_expect_eq(eddy_event_ext_type(ev, "nope", &t), EDDY_ERR_NOT_FOUND);
    cr_expect_eq(eddy_event_ext_binary(ev, "nope", &bytes, &len), EDDY_ERR_NOT_FOUND);
    /* a string setter on a typed one makes it a String; the copy keeps types */
    eddy_event *copy = eddy_event_dup(ev);
    cr_expect_eq(eddy_event_set_extension(ev, "count", "x", NULL), EDDY_OK);
    cr_expect_eq(eddy_event_ext_type(ev, "count", &t), EDDY_OK);
    cr_expect_eq(t, EDDY_EXT_STRING);
    cr_expect_eq(eddy_event_ext_int(copy, "count", &n), EDDY_OK);
    cr_expect_eq(n, INT32_MIN);
    eddy_event_free(copy);
    eddy_event_free(ev);
}

Test(event, typed_extension_values_are_checked) {
    static const struct {
        eddy_ext_type type;
        const char *value;
        bool ok;
    } cases[] = {
        {EDDY_EXT_INTEGER, "0", true},
        {EDDY_EXT_INTEGER, "2147483647", true},
        {EDDY_EXT_INTEGER, "-2147483648", true},
        {EDDY_EXT_INTEGER, "2147483648", false},
        {EDDY_EXT_INTEGER, "-2147483649", false},
        {EDDY_EXT_INTEGER, "007", false},
        {EDDY_EXT_INTEGER, "+1", false},
        {EDDY_EXT_INTEGER, "1.0", false},
        {EDDY_EXT_INTEGER, "", false},
        {EDDY_EXT_INTEGER, "-0", false},
        {EDDY_EXT_BOOLEAN, "true", true},
        {EDDY_EXT_BOOLEAN, "false", true},
        {EDDY_EXT_BOOLEAN, "TRUE", false},
        {EDDY_EXT_BOOLEAN, "1", false},
        {EDDY_EXT_BINARY, "", true},
        {EDDY_EXT_BINARY, "AQ==", true},
        {EDDY_EXT_BINARY, "AQ=", false},
        {EDDY_EXT_BINARY, "AR==", false},
        {EDDY_EXT_BINARY, "A*==", false},
        {EDDY_EXT_URI, "urn:x", true},
        {EDDY_EXT_URI, "/rel", false},
        {EDDY_EXT_URI_REF, "/rel", true},
        {EDDY_EXT_URI_REF, "a b", false},
        {EDDY_EXT_TIMESTAMP, "2020-02-29T10:00:00+01:00", true},
        {EDDY_EXT_TIMESTAMP, "2021-02-29T10:00:00Z", false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        eddy_event *ev = valid_event();
        eddy_error err = {0};
        eddy_status st = eddy_event_set_ext_typed(ev, "x", cases[i].type, cases[i].value, &err);
        cr_expect_eq(st, cases[i].ok ? EDDY_OK : EDDY_ERR_INVALID_EVENT, "case %zu '%s': %s", i,
                     cases[i].value, err.detail);
        if (!cases[i].ok) {
            cr_expect(strncmp(err.detail, "x: not a CloudEvents ", 21) == 0, "detail %s",
                      err.detail);
            cr_expect_null(eddy_event_extension(ev, "x"));
        }
        eddy_event_free(ev);
    }
    eddy_event *ev = valid_event();
    cr_expect_eq(eddy_event_set_ext_typed(ev, "x", (eddy_ext_type)99, "1", NULL),
                 EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_event_set_ext_binary(ev, "x", NULL, 1, NULL), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_event_set_ext_int(ev, "Bad", 1, NULL), EDDY_ERR_INVALID_EVENT);
    eddy_event_free(ev);
}

Test(event, the_builder_checks_the_string_type) {
    eddy_event *ev = (eddy_event *)&ev;
    eddy_error err = {0};
    cr_expect_eq(eddy_event_create("/s", "t\x7f", &ev, &err), EDDY_ERR_INVALID_EVENT);
    cr_expect_null(ev);
    cr_expect_str_eq(err.detail,
                     "type: not a CloudEvents String: control character U+007F at byte 1");
    cr_expect_eq(eddy_event_create("/s\xc2\x85", "t", &ev, &err), EDDY_ERR_INVALID_EVENT);
    cr_expect(strncmp(err.detail, "source: not a CloudEvents String", 32) == 0, "%s", err.detail);
    cr_expect_eq(eddy_event_create("/s", "caf\xc3\xa9", &ev, &err), EDDY_OK, "%s", err.detail);
    eddy_event_free(ev);
}
