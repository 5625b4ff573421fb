/* SPDX-License-Identifier: BSD-3-Clause */
/* Events as stream entries: the encoding's layout, round trips through the argument vector
 * an XADD would send, and every way the decoder refuses an entry (with the field it names). */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events/entry.h"
#include "util/cmd.h"

#define PREFIX 3 /* "XADD key *" */
#define BIG ((size_t)1 << 20)

static eddy_event *full_event(void) {
    eddy_event *ev = eddy_event_new();
    cr_assert(ev);
    cr_assert_eq(eddy_event_set_id(ev, "evt-1"), EDDY_OK);
    cr_assert_eq(eddy_event_set_source(ev, "https://example.com/orders"), EDDY_OK);
    cr_assert_eq(eddy_event_set_type(ev, "com.example.order.created"), EDDY_OK);
    cr_assert_eq(eddy_event_set_subject(ev, "orders.42"), EDDY_OK);
    cr_assert_eq(eddy_event_set_time(ev, "2026-11-30T02:11:20.5+01:00"), EDDY_OK);
    cr_assert_eq(eddy_event_set_datacontenttype(ev, "application/octet-stream"), EDDY_OK);
    cr_assert_eq(eddy_event_set_dataschema(ev, "urn:schema:order"), EDDY_OK);
    cr_assert_eq(eddy_event_set_extension(ev, "traceparent",
                                          "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                                          NULL),
                 EDDY_OK);
    cr_assert_eq(eddy_event_set_extension(ev, "partition", "7", NULL), EDDY_OK);
    cr_assert_eq(eddy_event_set_extension(ev, "empty", "", NULL), EDDY_OK);
    static const unsigned char data[] = {0x00, 0x01, 'x', 0x00, 0xff, 0x00};
    cr_assert_eq(eddy_event_set_data(ev, data, sizeof(data)), EDDY_OK);
    return ev;
}

static eddy_event *minimal_event(void) {
    eddy_event *ev = eddy_event_new();
    cr_assert(ev);
    eddy_event_set_id(ev, "1");
    eddy_event_set_source(ev, "/s");
    eddy_event_set_type(ev, "t");
    return ev;
}

/* Encodes ev after an "XADD key *" prefix, as the publisher does. */
static void encode(const eddy_event *ev, eddy__cmd *cmd) {
    eddy__cmd_init(cmd);
    eddy__cmd_str(cmd, "XADD");
    eddy__cmd_str(cmd, "key");
    eddy__cmd_str(cmd, "*");
    cr_assert_eq(eddy__entry_encode(ev, cmd), EDDY_OK);
    cr_assert_eq((cmd->argc - PREFIX) % 2, 0);
}

static const char *const *fv_of(const eddy__cmd *cmd) { return eddy__cmd_argv(cmd) + PREFIX; }
static const size_t *len_of(const eddy__cmd *cmd) { return cmd->argvlen + PREFIX; }
static size_t n_of(const eddy__cmd *cmd) { return (size_t)cmd->argc - PREFIX; }

static size_t total_of(const eddy__cmd *cmd) {
    size_t total = 0;
    for (size_t i = 0; i < n_of(cmd); i++)
        total += len_of(cmd)[i];
    return total;
}

static void expect_same_str(const char *a, const char *b, const char *what) {
    if (!a || !b)
        cr_expect(a == b, "%s: %s vs %s", what, a ? a : "(null)", b ? b : "(null)");
    else
        cr_expect_str_eq(a, b, "%s", what);
}

static void expect_same_event(const eddy_event *a, const eddy_event *b) {
    expect_same_str(eddy_event_id(a), eddy_event_id(b), "id");
    expect_same_str(eddy_event_source(a), eddy_event_source(b), "source");
    expect_same_str(eddy_event_specversion(a), eddy_event_specversion(b), "specversion");
    expect_same_str(eddy_event_type(a), eddy_event_type(b), "type");
    expect_same_str(eddy_event_subject(a), eddy_event_subject(b), "subject");
    expect_same_str(eddy_event_time(a), eddy_event_time(b), "time");
    expect_same_str(eddy_event_datacontenttype(a), eddy_event_datacontenttype(b),
                    "datacontenttype");
    expect_same_str(eddy_event_dataschema(a), eddy_event_dataschema(b), "dataschema");
    cr_assert_eq(eddy_event_extension_count(a), eddy_event_extension_count(b));
    for (size_t i = 0; i < eddy_event_extension_count(a); i++) {
        const char *an, *av, *bn, *bv;
        eddy_event_extension_at(a, i, &an, &av);
        eddy_event_extension_at(b, i, &bn, &bv);
        cr_expect_str_eq(an, bn, "extension %zu name", i);
        cr_expect_str_eq(av, bv, "extension %zu value", i);
    }
    size_t alen, blen;
    const void *ad = eddy_event_data(a, &alen), *bd = eddy_event_data(b, &blen);
    cr_expect_eq(ad == NULL, bd == NULL, "data presence");
    cr_assert_eq(alen, blen, "data length");
    if (alen)
        cr_expect_arr_eq(ad, bd, alen);
}

/* Decoding fv must fail with status st and a detail containing `names`. */
static void expect_refused(const char *const *fv, const size_t *len, size_t n, size_t max,
                           eddy_status st, const char *names) {
    eddy_error err = {0};
    eddy_event *out = (eddy_event *)&err; /* must be reset to NULL */
    cr_expect_eq(eddy__entry_decode(fv, len, n, max, &out, &err), st, "expected %s, detail '%s'",
                 eddy_status_name(st), err.detail);
    cr_expect_null(out);
    cr_expect_eq(err.status, st);
    cr_expect(strstr(err.detail, names), "detail '%s' should contain '%s'", err.detail, names);
    /* and without an error struct */
    cr_expect_eq(eddy__entry_decode(fv, len, n, max, &out, NULL), st);
    /* the view decode refuses the same way, leaving nothing to release */
    eddy__event_view view;
    const eddy_event *vout = (const eddy_event *)&err;
    eddy_error verr = {0};
    cr_expect_eq(eddy__entry_decode_view(fv, len, n, max, &view, &vout, &verr), st,
                 "view: expected %s, detail '%s'", eddy_status_name(st), verr.detail);
    cr_expect_null(vout);
    cr_expect_null(view.owned);
    cr_expect_str_eq(verr.detail, err.detail);
}

/* A field/value list given as C strings; lengths computed. */
struct entry {
    const char *fv[64];
    size_t len[64];
    size_t n;
};

static void add(struct entry *e, const char *field, const char *value) {
    e->fv[e->n] = field;
    e->len[e->n++] = strlen(field);
    e->fv[e->n] = value;
    e->len[e->n++] = strlen(value);
}

static struct entry minimal_entry(void) {
    struct entry e = {.n = 0};
    add(&e, "specversion", "1.0");
    add(&e, "id", "1");
    add(&e, "source", "/s");
    add(&e, "type", "t");
    return e;
}

Test(entry, encode_layout) {
    eddy_event *ev = full_event();
    eddy__cmd cmd;
    encode(ev, &cmd);
    static const char *const fields[] = {
        "specversion",     "id",         "source",        "type",        "subject", "time",
        "datacontenttype", "dataschema", "x-traceparent", "x-partition", "x-empty", "data",
    };
    size_t nf = sizeof(fields) / sizeof(fields[0]);
    cr_assert_eq(n_of(&cmd), 2 * nf);
    for (size_t i = 0; i < nf; i++)
        cr_expect_str_eq(fv_of(&cmd)[2 * i], fields[i], "field %zu", i);
    cr_expect_str_eq(fv_of(&cmd)[1], "1.0");
    cr_expect_eq(len_of(&cmd)[2 * nf - 1], 6, "data keeps its NUL bytes");
    cr_expect_eq(eddy_event_size(ev), total_of(&cmd), "eddy_event_size is the entry's size");
    cr_expect_str_eq(eddy__cmd_argv(&cmd)[0], "XADD", "the caller's prefix is untouched");
    eddy__cmd_reset(&cmd);
    eddy_event_free(ev);
}

Test(entry, encode_arguments) {
    eddy__cmd cmd;
    eddy__cmd_init(&cmd);
    eddy_event *ev = eddy_event_new();
    cr_expect_eq(eddy__entry_encode(NULL, &cmd), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy__entry_encode(ev, NULL), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy__entry_encode(ev, &cmd), EDDY_ERR_INVALID_EVENT, "no required attributes");
    cr_expect_eq(cmd.argc, 0, "nothing appended");
    eddy_event_free(ev);
}

Test(entry, round_trip_full) {
    eddy_event *ev = full_event();
    eddy__cmd cmd;
    encode(ev, &cmd);
    eddy_event *out = NULL;
    eddy_error err = {0};
    cr_assert_eq(
        eddy__entry_decode(fv_of(&cmd), len_of(&cmd), n_of(&cmd), total_of(&cmd), &out, &err),
        EDDY_OK, "%s", err.detail);
    cr_assert(out);
    expect_same_event(ev, out);
    eddy_event_free(out);
    /* one byte under the entry's size is too large */
    expect_refused(fv_of(&cmd), len_of(&cmd), n_of(&cmd), total_of(&cmd) - 1, EDDY_ERR_TOO_LARGE,
                   "entry");
    eddy__cmd_reset(&cmd);
    eddy_event_free(ev);
}

Test(entry, round_trip_minimal_and_empty_data) {
    eddy_event *ev = minimal_event();
    eddy__cmd cmd;
    encode(ev, &cmd);
    cr_expect_eq(n_of(&cmd), 8, "no optional fields, no data field");
    eddy_event *out = NULL;
    cr_assert_eq(eddy__entry_decode(fv_of(&cmd), len_of(&cmd), n_of(&cmd), BIG, &out, NULL),
                 EDDY_OK);
    expect_same_event(ev, out);
    cr_expect_null(eddy_event_data(out, NULL));
    eddy_event_free(out);
    eddy__cmd_reset(&cmd);

    eddy_event_set_data(ev, "", 0);
    encode(ev, &cmd);
    cr_expect_eq(n_of(&cmd), 10, "an empty data field");
    cr_assert_eq(eddy__entry_decode(fv_of(&cmd), len_of(&cmd), n_of(&cmd), BIG, &out, NULL),
                 EDDY_OK);
    size_t len = 1;
    cr_expect(eddy_event_data(out, &len), "empty data survives as present");
    cr_expect_eq(len, 0);
    eddy_event_free(out);
    eddy__cmd_reset(&cmd);
    eddy_event_free(ev);
}

Test(entry, round_trip_many_extensions) {
    eddy_event *ev = minimal_event();
    char name[16], value[16];
    for (int i = 0; i < 1000; i++) {
        snprintf(name, sizeof(name), "e%d", i);
        snprintf(value, sizeof(value), "%d", i * 3);
        cr_assert_eq(eddy_event_set_extension(ev, name, value, NULL), EDDY_OK);
    }
    eddy__cmd cmd;
    encode(ev, &cmd);
    eddy_event *out = NULL;
    eddy_error err = {0};
    cr_assert_eq(eddy__entry_decode(fv_of(&cmd), len_of(&cmd), n_of(&cmd), BIG, &out, &err),
                 EDDY_OK, "%s", err.detail);
    expect_same_event(ev, out);
    eddy_event_free(out);

    /* a duplicate among many (the sorted path) */
    size_t n = n_of(&cmd);
    const char **fv = malloc((n + 2) * sizeof(*fv));
    size_t *len = malloc((n + 2) * sizeof(*len));
    memcpy(fv, fv_of(&cmd), n * sizeof(*fv));
    memcpy(len, len_of(&cmd), n * sizeof(*len));
    fv[n] = "x-e500";
    len[n] = 6;
    fv[n + 1] = "again";
    len[n + 1] = 5;
    expect_refused(fv, len, n + 2, BIG, EDDY_ERR_MALFORMED, "'x-e500': duplicate");
    free(fv);
    free(len);
    eddy__cmd_reset(&cmd);
    eddy_event_free(ev);
}

Test(entry, metadata_fields_are_skipped) {
    struct entry e = minimal_entry();
    add(&e, "_reply_to", "inbox.1");
    add(&e, "_", "");
    add(&e, "_bin", "has\x01control");
    e.fv[e.n] = "_nul";
    e.len[e.n++] = 4;
    e.fv[e.n] = "a\0b";
    e.len[e.n++] = 3;
    eddy_event *out = NULL;
    eddy_error err = {0};
    cr_assert_eq(eddy__entry_decode(e.fv, e.len, e.n, BIG, &out, &err), EDDY_OK, "%s", err.detail);
    cr_expect_eq(eddy_event_extension_count(out), 0);
    cr_expect_str_eq(eddy_event_id(out), "1");
    eddy_event_free(out);
    /* the caller reads them itself */
    size_t len = 0;
    const char *v = eddy__entry_field(e.fv, e.len, e.n, "_reply_to", &len);
    cr_assert(v);
    cr_expect_eq(len, 7);
    cr_expect_arr_eq(v, "inbox.1", 7);
}

Test(entry, binary_data_with_nul) {
    struct entry e = minimal_entry();
    static const char data[] = {'\0', 'a', '\0', '\xff'};
    e.fv[e.n] = "data";
    e.len[e.n++] = 4;
    e.fv[e.n] = data;
    e.len[e.n++] = sizeof(data);
    eddy_event *out = NULL;
    cr_assert_eq(eddy__entry_decode(e.fv, e.len, e.n, BIG, &out, NULL), EDDY_OK);
    size_t len;
    const char *d = eddy_event_data(out, &len);
    cr_assert_eq(len, 4);
    cr_expect_arr_eq(d, data, 4);
    eddy_event_free(out);
}

/* An entry whose pieces are not NUL-terminated (id "XY", source "/s", type "t", x-k "val"),
 * though the byte past each is readable. */
static void loose_entry(const char *fv[10], size_t len[10]) {
    static const char blob[] = "specversion1.0idXYZsource/stypetx-kvalue";
    static const size_t at[10] = {0, 11, 14, 16, 19, 25, 27, 31, 32, 35};
    static const size_t n[10] = {11, 3, 2, 2, 6, 2, 4, 1, 3, 3};
    for (int i = 0; i < 10; i++) {
        fv[i] = blob + at[i];
        len[i] = n[i];
    }
}

/* Values that are not NUL-terminated: the decoder must rely on lengths only. */
Test(entry, values_need_not_be_terminated) {
    const char *fv[10];
    size_t len[10];
    loose_entry(fv, len);
    eddy_event *out = NULL;
    eddy_error err = {0};
    cr_assert_eq(eddy__entry_decode(fv, len, 10, BIG, &out, &err), EDDY_OK, "%s", err.detail);
    cr_expect_str_eq(eddy_event_id(out), "XY");
    cr_expect_str_eq(eddy_event_source(out), "/s");
    cr_expect_str_eq(eddy_event_type(out), "t");
    cr_expect_str_eq(eddy_event_extension(out, "k"), "val");
    eddy_event_free(out);
}

Test(entry, missing_required_fields) {
    static const char *const required[] = {"specversion", "id", "source", "type"};
    for (size_t skip = 0; skip < 4; skip++) {
        struct entry full = minimal_entry(), e = {.n = 0};
        for (size_t i = 0; i < full.n; i += 2) {
            if (i / 2 != skip)
                add(&e, full.fv[i], full.fv[i + 1]);
        }
        char want[64];
        snprintf(want, sizeof(want), "'%s': missing", required[skip]);
        expect_refused(e.fv, e.len, e.n, BIG, EDDY_ERR_MALFORMED, want);
    }
    expect_refused(NULL, NULL, 0, BIG, EDDY_ERR_MALFORMED, "'specversion': missing");
}

Test(entry, duplicate_fields) {
    static const char *const fields[] = {"specversion", "id",   "source",          "type",
                                         "subject",     "time", "datacontenttype", "dataschema",
                                         "data"};
    static const char *const values[] = {"1.0", "1",     "/s", "t", "s", "2026-01-01T00:00:00Z",
                                         "a/b", "urn:x", "d"};
    for (size_t i = 0; i < 9; i++) {
        struct entry e = minimal_entry();
        if (i >= 4)
            add(&e, fields[i], values[i]);
        add(&e, fields[i], values[i]);
        char want[64];
        snprintf(want, sizeof(want), "'%s': duplicate field", fields[i]);
        expect_refused(e.fv, e.len, e.n, BIG, EDDY_ERR_MALFORMED, want);
    }
    struct entry e = minimal_entry();
    add(&e, "x-a", "1");
    add(&e, "x-b", "2");
    add(&e, "x-a", "3");
    expect_refused(e.fv, e.len, e.n, BIG, EDDY_ERR_MALFORMED, "'x-a': duplicate field");
}

Test(entry, unknown_fields) {
    static const char *const unknown[] = {
        "foo", "x-",    "x-Bad", "x-data", "x-id",    "x-specversion", "X-foo",      "",
        "ID",  "x-a-b", "y-abc", "data ",  "x-a:int", "x-a:",          "x-:integer", "x-A:integer",
    };
    for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
        struct entry e = minimal_entry();
        add(&e, unknown[i], "v");
        char want[64];
        snprintf(want, sizeof(want), "'%s': unknown field", unknown[i]);
        expect_refused(e.fv, e.len, e.n, BIG, EDDY_ERR_MALFORMED, want);
    }
    /* a field name with control characters and NUL is named printably */
    struct entry e = minimal_entry();
    e.fv[e.n] = "bad\n\0name";
    e.len[e.n++] = 9;
    e.fv[e.n] = "v";
    e.len[e.n++] = 1;
    expect_refused(e.fv, e.len, e.n, BIG, EDDY_ERR_MALFORMED, "'bad??name': unknown field");
    /* 20-character and longer extension names are fine (other producers write them) */
    e = minimal_entry();
    add(&e, "x-abcdefghijklmnopqrst", "v");
    add(&e, "x-abcdefghijklmnopqrstuvwxyz0123456789", "w");
    eddy_event *out = NULL;
    cr_expect_eq(eddy__entry_decode(e.fv, e.len, e.n, BIG, &out, NULL), EDDY_OK);
    cr_expect_str_eq(eddy_event_extension(out, "abcdefghijklmnopqrstuvwxyz0123456789"), "w");
    eddy_event_free(out);
}

Test(entry, odd_count) {
    struct entry e = minimal_entry();
    expect_refused(e.fv, e.len, e.n - 1, BIG, EDDY_ERR_MALFORMED, "odd");
}

Test(entry, too_large_before_touching_anything) {
    struct entry e = minimal_entry();
    size_t total = 0;
    for (size_t i = 0; i < e.n; i++)
        total += e.len[i];
    eddy_event *out = NULL;
    cr_expect_eq(eddy__entry_decode(e.fv, e.len, e.n, total, &out, NULL), EDDY_OK);
    eddy_event_free(out);
    expect_refused(e.fv, e.len, e.n, total - 1, EDDY_ERR_TOO_LARGE, "exceed");
    expect_refused(e.fv, e.len, e.n, 0, EDDY_ERR_TOO_LARGE, "exceed 0 bytes");

    /* Lengths that lie about tiny buffers: refused by size alone, the bytes are never read
     * (reading them would run off the buffers) and nothing is sized from them. */
    const char *fv[] = {"data", "x", "id", "y"};
    size_t huge[] = {4, SIZE_MAX / 2, 2, SIZE_MAX / 2};
    expect_refused(fv, huge, 4, BIG, EDDY_ERR_TOO_LARGE, "entry");
    /* and a sum that would overflow size_t */
    expect_refused(fv, huge, 4, SIZE_MAX - 1, EDDY_ERR_TOO_LARGE, "entry");
    size_t over[] = {4, SIZE_MAX, 2, 1};
    expect_refused(fv, over, 4, SIZE_MAX, EDDY_ERR_TOO_LARGE, "entry");
}

/* The bus's '_' fields do not count: the limit is the publisher's eddy_event_size, so an event
 * accepted at publish still decodes once a dead letter or a reply adds its metadata. */
Test(entry, metadata_does_not_count_toward_the_limit) {
    eddy_event *ev = minimal_event();
    eddy_event_set_data(ev, "payload", 7);
    eddy__cmd cmd;
    encode(ev, &cmd);
    size_t limit = eddy_event_size(ev);
    cr_assert_eq(limit, total_of(&cmd));
    eddy__cmd_str(&cmd, "_dlq_reason");
    eddy__cmd_str(&cmd, "too_large");
    eddy__cmd_str(&cmd, "_");
    eddy__cmd_arg(&cmd, NULL, 0);
    eddy_event *out = NULL;
    eddy_error err = {0};
    cr_expect_eq(eddy__entry_decode(fv_of(&cmd), len_of(&cmd), n_of(&cmd), limit, &out, &err),
                 EDDY_OK, "%s", err.detail);
    eddy_event_free(out);
    expect_refused(fv_of(&cmd), len_of(&cmd), n_of(&cmd), limit - 1, EDDY_ERR_TOO_LARGE, "exceed");
    /* a lying length on a '_' field is never read either */
    const char *fv[] = {"_big", "x"};
    size_t len[] = {4, SIZE_MAX};
    cr_expect_eq(eddy__entry_decode(fv, len, 2, 10, &out, &err), EDDY_ERR_MALFORMED,
                 "only the missing attributes are reported");
    eddy__cmd_reset(&cmd);
    eddy_event_free(ev);
}

Test(entry, nul_in_attribute_text) {
    static const char *const fields[] = {"id",   "source",          "type",       "subject",
                                         "time", "datacontenttype", "dataschema", "x-ext"};
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        struct entry e = {.n = 0};
        add(&e, "specversion", "1.0");
        if (strcmp(fields[i], "id"))
            add(&e, "id", "1");
        if (strcmp(fields[i], "source"))
            add(&e, "source", "/s");
        if (strcmp(fields[i], "type"))
            add(&e, "type", "t");
        e.fv[e.n] = fields[i];
        e.len[e.n++] = strlen(fields[i]);
        e.fv[e.n] = "ab\0c";
        e.len[e.n++] = 4;
        char want[64];
        snprintf(want, sizeof(want), "'%s': NUL byte", fields[i]);
        expect_refused(e.fv, e.len, e.n, BIG, EDDY_ERR_MALFORMED, want);
    }
    struct entry e = minimal_entry();
    e.fv[0] = "specversion";
    e.fv[1] = "1.0\0";
    e.len[1] = 4;
    expect_refused(e.fv, e.len, e.n, BIG, EDDY_ERR_MALFORMED, "'specversion'");
}

Test(entry, wrong_specversion) {
    static const char *const versions[] = {"0.3", "1", "1.0 ", "", "1.00", "2.0"};
    for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
        struct entry e = minimal_entry();
        e.fv[1] = versions[i];
        e.len[1] = strlen(versions[i]);
        expect_refused(e.fv, e.len, e.n, BIG, EDDY_ERR_MALFORMED, "'specversion': must be");
    }
}

/* Fields that are present and well-formed as fields but fail CloudEvents validation. */
Test(entry, invalid_attributes) {
    static const struct {
        const char *field, *value;
    } cases[] = {
        {"id", ""},
        {"source", ""},
        {"source", "has space"},
        {"type", ""},
        {"subject", ""},
        {"time", "yesterday"},
        {"datacontenttype", "json"},
        {"dataschema", "/relative"},
        /* the CloudEvents String type */
        {"id", "a\nb"},
        {"subject", "del\x7f"},
        {"type", "t\xc2\x85"},
        {"subject", "\xef\xbf\xbe"},
        {"subject", "\xed\xa0\x80"},
        {"id", "\xff"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct entry base = minimal_entry(), e = {.n = 0};
        for (size_t j = 0; j < base.n; j += 2) {
            if (strcmp(base.fv[j], cases[i].field))
                add(&e, base.fv[j], base.fv[j + 1]);
        }
        add(&e, cases[i].field, cases[i].value);
        char want[64];
        snprintf(want, sizeof(want), "field '%s': ", cases[i].field);
        expect_refused(e.fv, e.len, e.n, BIG, EDDY_ERR_MALFORMED, want);
    }
}

Test(entry, decode_arguments) {
    struct entry e = minimal_entry();
    eddy_error err = {0};
    cr_expect_eq(eddy__entry_decode(e.fv, e.len, e.n, BIG, NULL, &err), EDDY_ERR_INVALID_ARGUMENT);
    eddy_event *out = NULL;
    cr_expect_eq(eddy__entry_decode(NULL, e.len, e.n, BIG, &out, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy__entry_decode(e.fv, NULL, e.n, BIG, &out, &err), EDDY_ERR_INVALID_ARGUMENT);
    e.fv[3] = NULL;
    cr_expect_eq(eddy__entry_decode(e.fv, e.len, e.n, BIG, &out, &err), EDDY_ERR_INVALID_ARGUMENT,
                 "NULL value with a length");
    cr_expect_null(out);
    /* NULL with length 0 is an empty value */
    e = minimal_entry();
    add(&e, "x-k", "");
    e.fv[e.n - 1] = NULL;
    cr_expect_eq(eddy__entry_decode(e.fv, e.len, e.n, BIG, &out, &err), EDDY_OK, "%s", err.detail);
    cr_expect_str_eq(eddy_event_extension(out, "k"), "");
    eddy_event_free(out);
}

Test(entry, field_lookup) {
    struct entry e = minimal_entry();
    add(&e, "_deadline", "12345");
    size_t len = 99;
    const char *v = eddy__entry_field(e.fv, e.len, e.n, "source", &len);
    cr_assert(v);
    cr_expect_eq(len, 2);
    cr_expect_arr_eq(v, "/s", 2);
    cr_expect(eddy__entry_field(e.fv, e.len, e.n, "_deadline", NULL));
    len = 99;
    cr_expect_null(eddy__entry_field(e.fv, e.len, e.n, "missing", &len));
    cr_expect_eq(len, 0);
    cr_expect_null(eddy__entry_field(e.fv, e.len, e.n, "1.0", &len), "values are not fields");
    cr_expect_null(eddy__entry_field(e.fv, e.len, e.n, "sourc", &len), "no prefix match");
    cr_expect_null(eddy__entry_field(e.fv, e.len, e.n - 1, "_deadline", &len),
                   "a dangling field has no value");
    cr_expect_null(eddy__entry_field(NULL, NULL, 0, "id", &len));
    cr_expect_null(eddy__entry_field(e.fv, e.len, e.n, NULL, &len));
    /* the first occurrence wins, and an empty name can be looked up */
    add(&e, "id", "second");
    add(&e, "", "anon");
    v = eddy__entry_field(e.fv, e.len, e.n, "id", &len);
    cr_expect_arr_eq(v, "1", 1);
    v = eddy__entry_field(e.fv, e.len, e.n, "", &len);
    cr_assert(v);
    cr_expect_eq(len, 4);
}

/* ---- views ------------------------------------------------------------------------------ */

/* A view borrows every string from the entry: no copy, the same bytes. */
Test(entry, a_view_borrows_the_entry_bytes) {
    struct entry e = minimal_entry();
    add(&e, "subject", "orders.42");
    add(&e, "x-partition", "7");
    add(&e, "x-empty", "");
    add(&e, "_stream", "s-1");
    add(&e, "data", "payload");
    eddy__event_view view;
    const eddy_event *ev = NULL;
    eddy_error err = {0};
    cr_assert_eq(eddy__entry_decode_view(e.fv, e.len, e.n, BIG, &view, &ev, &err), EDDY_OK, "%s",
                 err.detail);
    cr_expect_null(view.owned, "nothing allocated");
    cr_expect_eq(eddy_event_id(ev), e.fv[3], "id is the entry's own bytes");
    cr_expect_eq(eddy_event_subject(ev), e.fv[9]);
    size_t len;
    cr_expect_eq(eddy_event_data(ev, &len), (const void *)e.fv[17]);
    cr_expect_eq(len, 7);
    cr_expect_str_eq(eddy_event_extension(ev, "partition"), "7");
    cr_expect_str_eq(eddy_event_extension(ev, "empty"), "");
    cr_expect_eq(eddy_event_extension_count(ev), 2);
    /* what it decodes is what the copying decode gives */
    eddy_event *copy = NULL;
    cr_assert_eq(eddy__entry_decode(e.fv, e.len, e.n, BIG, &copy, &err), EDDY_OK);
    expect_same_event(ev, copy);
    /* a dup is an ordinary event that outlives the view */
    eddy_event *kept = eddy_event_dup(ev);
    cr_assert(kept);
    eddy_event_free((eddy_event *)ev); /* ignored: a view owns nothing */
    eddy__event_view_release(&view);
    expect_same_event(kept, copy);
    eddy_event_free(kept);
    eddy_event_free(copy);
}

/* Bytes not followed by a NUL, or more extensions than a view holds: one copy instead. */
Test(entry, a_view_falls_back_to_one_copy) {
    const char *fv[10];
    size_t len[10];
    loose_entry(fv, len);
    eddy__event_view view;
    const eddy_event *ev = NULL;
    eddy_error err = {0};
    cr_assert_eq(eddy__entry_decode_view(fv, len, 10, BIG, &view, &ev, &err), EDDY_OK, "%s",
                 err.detail);
    cr_expect_not_null(view.owned);
    cr_expect_eq(ev, view.owned);
    cr_expect_str_eq(eddy_event_id(ev), "XY");
    cr_expect_str_eq(eddy_event_extension(ev, "k"), "val");
    eddy__event_view_release(&view);
    cr_expect_null(view.owned);

    struct entry e = minimal_entry();
    char names[EDDY__VIEW_EXT + 1][16];
    for (int i = 0; i <= EDDY__VIEW_EXT; i++) {
        snprintf(names[i], sizeof(names[i]), "x-e%d", i);
        add(&e, names[i], "v");
    }
    cr_assert_eq(eddy__entry_decode_view(e.fv, e.len, e.n, BIG, &view, &ev, &err), EDDY_OK, "%s",
                 err.detail);
    cr_expect_not_null(view.owned, "%d extensions do not fit a view", EDDY__VIEW_EXT + 1);
    cr_expect_eq(eddy_event_extension_count(ev), EDDY__VIEW_EXT + 1);
    cr_expect_str_eq(eddy_event_extension(ev, "e8"), "v");
    eddy__event_view_release(&view);
}

/* A decoded event is one block; every setter still works on it, growing out of the block. */
Test(entry, a_decoded_event_is_an_ordinary_event) {
    eddy__cmd cmd;
    eddy_event *ev = full_event();
    encode(ev, &cmd);
    eddy_event *out = NULL;
    cr_assert_eq(eddy__entry_decode(fv_of(&cmd), len_of(&cmd), n_of(&cmd), BIG, &out, NULL),
                 EDDY_OK);
    cr_expect_eq(eddy_event_set_id(out, "evt-2"), EDDY_OK);
    cr_expect_eq(eddy_event_set_subject(out, NULL), EDDY_OK);
    cr_expect_eq(eddy_event_set_extension(out, "partition", "8", NULL), EDDY_OK);
    cr_expect_eq(eddy_event_set_extension(out, "empty", NULL, NULL), EDDY_OK);
    for (int i = 0; i < 10; i++) {
        char name[16];
        snprintf(name, sizeof(name), "more%d", i);
        cr_expect_eq(eddy_event_set_extension(out, name, name, NULL), EDDY_OK);
    }
    cr_expect_eq(eddy_event_set_data(out, "new", 3), EDDY_OK);
    cr_expect_str_eq(eddy_event_id(out), "evt-2");
    cr_expect_null(eddy_event_subject(out));
    cr_expect_str_eq(eddy_event_extension(out, "partition"), "8");
    cr_expect_null(eddy_event_extension(out, "empty"));
    cr_expect_str_eq(eddy_event_extension(out, "more9"), "more9");
    cr_expect_eq(eddy_event_extension_count(out), 12);
    cr_expect_str_eq(eddy_event_source(out), "https://example.com/orders", "untouched");
    cr_expect_eq(eddy_event_validate(out, NULL), EDDY_OK);
    eddy_event_free(out);
    eddy_event_free(ev);
    eddy__cmd_reset(&cmd);
}

/* An extension's type travels in its field name ("x-<name>:<type>"); a String keeps the plain
 * "x-<name>" of wire format 1. */
Test(entry, typed_extensions_round_trip) {
    eddy_event *ev = minimal_event();
    cr_assert_eq(eddy_event_set_ext_int(ev, "count", 42, NULL), EDDY_OK);
    cr_assert_eq(eddy_event_set_ext_bool(ev, "flag", false, NULL), EDDY_OK);
    cr_assert_eq(eddy_event_set_ext_binary(ev, "blob", "ab", 2, NULL), EDDY_OK);
    cr_assert_eq(eddy_event_set_ext_typed(ev, "u", EDDY_EXT_URI, "urn:a", NULL), EDDY_OK);
    cr_assert_eq(eddy_event_set_ext_typed(ev, "r", EDDY_EXT_URI_REF, "/r", NULL), EDDY_OK);
    cr_assert_eq(
        eddy_event_set_ext_typed(ev, "t", EDDY_EXT_TIMESTAMP, "2020-01-01T00:00:00Z", NULL),
        EDDY_OK);
    cr_assert_eq(eddy_event_set_extension(ev, "s", "42", NULL), EDDY_OK);
    eddy__cmd cmd;
    encode(ev, &cmd);
    static const char *const want[] = {"x-count:integer",
                                       "x-flag:boolean",
                                       "x-blob:binary",
                                       "x-u:uri",
                                       "x-r:uriref",
                                       "x-t:timestamp",
                                       "x-s"};
    size_t k = 0;
    for (size_t i = 0; i < n_of(&cmd); i += 2) {
        if (strncmp(fv_of(&cmd)[i], "x-", 2) == 0) {
            cr_assert_lt(k, 7);
            cr_expect_str_eq(fv_of(&cmd)[i], want[k], "field %zu", k);
            k++;
        }
    }
    cr_expect_eq(k, 7);
    cr_expect_eq(total_of(&cmd), eddy_event_size(ev), "size measure");
    for (int v = 0; v < 2; v++) {
        eddy__event_view view;
        const eddy_event *out = NULL;
        eddy_event *owned = NULL;
        eddy_error err = {0};
        if (v)
            cr_assert_eq(eddy__entry_decode_view(fv_of(&cmd), len_of(&cmd), n_of(&cmd), BIG, &view,
                                                 &out, &err),
                         EDDY_OK, "%s", err.detail);
        else
            cr_assert_eq(
                eddy__entry_decode(fv_of(&cmd), len_of(&cmd), n_of(&cmd), BIG, &owned, &err),
                EDDY_OK, "%s", err.detail);
        if (!v)
            out = owned;
        expect_same_event(ev, out);
        int32_t n = 0;
        bool b = true;
        eddy_ext_type t;
        cr_expect_eq(eddy_event_ext_int(out, "count", &n), EDDY_OK);
        cr_expect_eq(n, 42);
        cr_expect_eq(eddy_event_ext_bool(out, "flag", &b), EDDY_OK);
        cr_expect(!b);
        cr_expect_str_eq(eddy_event_extension(out, "count"), "42");
        for (size_t i = 0; i < 7; i++) {
            eddy_ext_type a, c;
            eddy_event_extension_type_at(ev, i, &a);
            cr_expect_eq(eddy_event_extension_type_at(out, i, &c), EDDY_OK);
            cr_expect_eq(a, c, "extension %zu type", i);
        }
        cr_expect_eq(eddy_event_ext_type(out, "s", &t), EDDY_OK);
        cr_expect_eq(t, EDDY_EXT_STRING);
        if (v)
            eddy__event_view_release(&view);
        else
            eddy_event_free(owned);
    }
    eddy__cmd_reset(&cmd);
    eddy_event_free(ev);
}

/* Entries written before types travelled (wire format 1) read as they always did: every
 * extension a String. */
Test(entry, format_1_entries_stay_readable) {
    struct entry e = minimal_entry();
    add(&e, "x-count", "42");
    add(&e, "x-flag", "true");
    eddy_event *out = NULL;
    cr_assert_eq(eddy__entry_decode(e.fv, e.len, e.n, BIG, &out, NULL), EDDY_OK);
    eddy_ext_type t = EDDY_EXT_INTEGER;
    cr_expect_eq(eddy_event_ext_type(out, "count", &t), EDDY_OK);
    cr_expect_eq(t, EDDY_EXT_STRING);
    cr_expect_str_eq(eddy_event_extension(out, "count"), "42");
    cr_expect_str_eq(eddy_event_extension(out, "flag"), "true");
    eddy_event_free(out);
}

Test(entry, typed_extension_refusals) {
    static const struct {
        const char *field, *value, *why;
    } cases[] = {
        {"x-n:integer", "4.5", "'x-n:integer': not a CloudEvents Integer"},
        {"x-n:integer", "99999999999", "'x-n:integer': not a CloudEvents Integer"},
        {"x-b:boolean", "yes", "'x-b:boolean': not a CloudEvents Boolean"},
        {"x-d:binary", "!!", "'x-d:binary': not a CloudEvents Binary"},
        {"x-u:uri", "/rel", "'x-u:uri': not a CloudEvents URI"},
        {"x-t:timestamp", "now", "'x-t:timestamp': not a CloudEvents Timestamp"},
        {"x-s", "a\nb", "'x-s': not a CloudEvents String"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct entry e = minimal_entry();
        add(&e, cases[i].field, cases[i].value);
        expect_refused(e.fv, e.len, e.n, BIG, EDDY_ERR_MALFORMED, cases[i].why);
    }
    /* the same extension twice, once typed */
    struct entry e = minimal_entry();
    add(&e, "x-a", "1");
    add(&e, "x-a:integer", "1");
    expect_refused(e.fv, e.len, e.n, BIG, EDDY_ERR_MALFORMED, "duplicate field");
}
