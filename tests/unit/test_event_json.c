/* SPDX-License-Identifier: BSD-3-Clause */
/* The CloudEvents JSON event format: every example of the JSON format document (v1.0.2) and of
 * the CloudEvents spec read, checked attribute by attribute, written and read back; the data
 * rules (data_base64, JSON inline, strings); batches; and the refusals, each with the status and
 * the attribute or byte offset it names. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eddy/event.h"

static eddy_event *read_ok(const char *json) {
    eddy_event *ev = NULL;
    eddy_error err = {0};
    cr_assert_eq(eddy_event_from_json(json, strlen(json), &ev, &err), EDDY_OK, "%s\n%s", err.detail,
                 json);
    cr_assert(ev);
    return ev;
}

static char *write_ok(const eddy_event *ev) {
    char *out = NULL;
    size_t len = 0;
    eddy_error err = {0};
    cr_assert_eq(eddy_event_to_json(ev, &out, &len, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(strlen(out), len);
    return out;
}

static void same_str(const char *a, const char *b, const char *what) {
    if (!a || !b)
        cr_expect(a == b, "%s: %s vs %s", what, a ? a : "(null)", b ? b : "(null)");
    else
        cr_expect_str_eq(a, b, "%s", what);
}

static void expect_same(const eddy_event *a, const eddy_event *b) {
    same_str(eddy_event_id(a), eddy_event_id(b), "id");
    same_str(eddy_event_source(a), eddy_event_source(b), "source");
    same_str(eddy_event_type(a), eddy_event_type(b), "type");
    same_str(eddy_event_subject(a), eddy_event_subject(b), "subject");
    same_str(eddy_event_time(a), eddy_event_time(b), "time");
    same_str(eddy_event_datacontenttype(a), eddy_event_datacontenttype(b), "datacontenttype");
    same_str(eddy_event_dataschema(a), eddy_event_dataschema(b), "dataschema");
    cr_assert_eq(eddy_event_extension_count(a), eddy_event_extension_count(b));
    for (size_t i = 0; i < eddy_event_extension_count(a); i++) {
        const char *an, *av;
        eddy_ext_type at, bt;
        eddy_event_extension_at(a, i, &an, &av);
        eddy_event_extension_type_at(a, i, &at);
        same_str(eddy_event_extension(b, an), av, an);
        cr_expect_eq(eddy_event_ext_type(b, an, &bt), EDDY_OK);
        cr_expect_eq(at, bt, "%s type", an);
    }
    size_t al, bl;
    const void *ad = eddy_event_data(a, &al), *bd = eddy_event_data(b, &bl);
    cr_expect_eq(ad == NULL, bd == NULL, "data presence");
    cr_assert_eq(al, bl, "data length");
    if (al)
        cr_expect_arr_eq(ad, bd, al);
}

/* Reads json, writes it, checks the writing is `want` (when given), reads that back and
 * expects the same event. Returns the event read first. */
static eddy_event *round_trip(const char *json, const char *want) {
    eddy_event *ev = read_ok(json);
    char *out = write_ok(ev);
    if (want)
        cr_expect_str_eq(out, want);
    eddy_event *back = read_ok(out);
    expect_same(ev, back);
    char *again = write_ok(back);
    cr_expect_str_eq(out, again, "writing is stable");
    free(again);
    free(out);
    eddy_event_free(back);
    return ev;
}

static void expect_data(const eddy_event *ev, const char *want) {
    size_t len;
    const char *d = eddy_event_data(ev, &len);
    cr_assert(d, "no data");
    cr_expect_eq(len, strlen(want), "data '%.*s'", (int)len, d);
    cr_expect(memcmp(d, want, strlen(want)) == 0, "data '%.*s' want '%s'", (int)len, d, want);
}

/* JSON format, section 3.1.1 (the binary data example; the document's placeholder
 * "... base64 encoded string ..." is not base64, so real base64 stands in for it). */
Test(event_json, spec_example_binary_data) {
    eddy_event *ev =
        round_trip("{\n"
                   "    \"specversion\" : \"1.0\",\n"
                   "    \"type\" : \"com.example.someevent\",\n"
                   "    \"source\" : \"/mycontext\",\n"
                   "    \"id\" : \"A234-1234-1234\",\n"
                   "    \"time\" : \"2018-04-05T17:31:00Z\",\n"
                   "    \"comexampleextension1\" : \"value\",\n"
                   "    \"comexampleothervalue\" : 5,\n"
                   "    \"datacontenttype\" : \"application/vnd.apache.thrift.binary\",\n"
                   "    \"data_base64\" : \"AAECA/8=\"\n"
                   "}",
                   "{\"specversion\":\"1.0\",\"id\":\"A234-1234-1234\",\"source\":"
                   "\"/mycontext\",\"type\":\"com.example.someevent\",\"time\":"
                   "\"2018-04-05T17:31:00Z\",\"datacontenttype\":\"application/"
                   "vnd.apache.thrift.binary\",\"comexampleextension1\":\"value\","
                   "\"comexampleothervalue\":5,\"data_base64\":\"AAECA/8=\"}");
    cr_expect_str_eq(eddy_event_specversion(ev), "1.0");
    cr_expect_str_eq(eddy_event_type(ev), "com.example.someevent");
    cr_expect_str_eq(eddy_event_extension(ev, "comexampleextension1"), "value");
    int32_t n = 0;
    cr_expect_eq(eddy_event_ext_int(ev, "comexampleothervalue", &n), EDDY_OK);
    cr_expect_eq(n, 5);
    size_t len;
    const unsigned char *d = eddy_event_data(ev, &len);
    cr_assert_eq(len, 5);
    cr_expect(memcmp(d, "\x00\x01\x02\x03\xff", 5) == 0);
    eddy_event_free(ev);
}

/* JSON format, section 3.1.1: JSON data inline, and a null attribute that is unset. */
Test(event_json, spec_example_json_data) {
    eddy_event *ev = round_trip("{\n"
                                "    \"specversion\" : \"1.0\",\n"
                                "    \"type\" : \"com.example.someevent\",\n"
                                "    \"source\" : \"/mycontext\",\n"
                                "    \"subject\": null,\n"
                                "    \"id\" : \"C234-1234-1234\",\n"
                                "    \"time\" : \"2018-04-05T17:31:00Z\",\n"
                                "    \"comexampleextension1\" : \"value\",\n"
                                "    \"comexampleothervalue\" : 5,\n"
                                "    \"datacontenttype\" : \"application/json\",\n"
                                "    \"data\" : {\n"
                                "        \"appinfoA\" : \"abc\",\n"
                                "        \"appinfoB\" : 123,\n"
                                "        \"appinfoC\" : true\n"
                                "    }\n"
                                "}",
                                "{\"specversion\":\"1.0\",\"id\":\"C234-1234-1234\",\"source\":"
                                "\"/mycontext\",\"type\":\"com.example.someevent\",\"time\":"
                                "\"2018-04-05T17:31:00Z\",\"datacontenttype\":\"application/"
                                "json\",\"comexampleextension1\":\"value\","
                                "\"comexampleothervalue\":5,\"data\":{\"appinfoA\":\"abc\","
                                "\"appinfoB\":123,\"appinfoC\":true}}");
    cr_expect_null(eddy_event_subject(ev));
    expect_data(ev, "{\"appinfoA\":\"abc\",\"appinfoB\":123,\"appinfoC\":true}");
    eddy_event_free(ev);
}

/* JSON format, section 3.1.1: XML data as a string, and an unset extension. */
Test(event_json, spec_example_xml_data) {
    eddy_event *ev = round_trip("{\n"
                                "    \"specversion\" : \"1.0\",\n"
                                "    \"type\" : \"com.example.someevent\",\n"
                                "    \"source\" : \"/mycontext\",\n"
                                "    \"id\" : \"B234-1234-1234\",\n"
                                "    \"time\" : \"2018-04-05T17:31:00Z\",\n"
                                "    \"comexampleextension1\" : \"value\",\n"
                                "    \"comexampleothervalue\" : 5,\n"
                                "    \"unsetextension\": null,\n"
                                "    \"datacontenttype\" : \"application/xml\",\n"
                                "    \"data\" : \"<much wow=\\\"xml\\\"/>\"\n"
                                "}",
                                "{\"specversion\":\"1.0\",\"id\":\"B234-1234-1234\",\"source\":"
                                "\"/mycontext\",\"type\":\"com.example.someevent\",\"time\":"
                                "\"2018-04-05T17:31:00Z\",\"datacontenttype\":\"application/"
                                "xml\",\"comexampleextension1\":\"value\","
                                "\"comexampleothervalue\":5,\"data\":\"<much wow=\\\"xml\\\"/>\"}");
    cr_expect_null(eddy_event_extension(ev, "unsetextension"));
    cr_expect_eq(eddy_event_extension_count(ev), 2);
    expect_data(ev, "<much wow=\"xml\"/>");
    eddy_event_free(ev);
}

/* The CloudEvents spec's own example (spec.md, "Example"): text/xml data as a string. */
Test(event_json, cloudevents_spec_example) {
    eddy_event *ev = round_trip("{\n"
                                "    \"specversion\" : \"1.0\",\n"
                                "    \"type\" : \"com.github.pull_request.opened\",\n"
                                "    \"source\" : \"https://github.com/cloudevents/spec/pull\",\n"
                                "    \"subject\" : \"123\",\n"
                                "    \"id\" : \"A234-1234-1234\",\n"
                                "    \"time\" : \"2018-04-05T17:31:00Z\",\n"
                                "    \"comexampleextension1\" : \"value\",\n"
                                "    \"comexampleothervalue\" : 5,\n"
                                "    \"datacontenttype\" : \"text/xml\",\n"
                                "    \"data\" : \"<much wow=\\\"xml\\\"/>\"\n"
                                "}",
                                NULL);
    cr_expect_str_eq(eddy_event_subject(ev), "123");
    cr_expect_str_eq(eddy_event_source(ev), "https://github.com/cloudevents/spec/pull");
    expect_data(ev, "<much wow=\"xml\"/>");
    eddy_event_free(ev);
}

/* JSON format, section 4: a batch, the empty batch included. */
Test(event_json, spec_batch) {
    const char *json = "[\n"
                       "  {\"specversion\":\"1.0\",\"type\":\"com.example.someevent\","
                       "\"source\":\"/mycontext\",\"id\":\"1\",\"data\":{\"a\":1}},\n"
                       "  {\"specversion\":\"1.0\",\"type\":\"com.example.someevent\","
                       "\"source\":\"/mycontext\",\"id\":\"2\",\"datacontenttype\":"
                       "\"application/octet-stream\",\"data_base64\":\"AQI=\"}\n"
                       "]";
    eddy_event **evs = NULL;
    size_t n = 0;
    eddy_error err = {0};
    cr_assert_eq(eddy_event_batch_from_json(json, strlen(json), &evs, &n, &err), EDDY_OK, "%s",
                 err.detail);
    cr_assert_eq(n, 2);
    cr_expect_str_eq(eddy_event_id(evs[1]), "2");
    expect_data(evs[0], "{\"a\":1}");
    char *out;
    size_t len;
    cr_assert_eq(eddy_event_batch_to_json((const eddy_event *const *)evs, n, &out, &len, &err),
                 EDDY_OK, "%s", err.detail);
    cr_expect_str_eq(out, "[{\"specversion\":\"1.0\",\"id\":\"1\",\"source\":\"/mycontext\","
                          "\"type\":\"com.example.someevent\",\"data\":{\"a\":1}},"
                          "{\"specversion\":\"1.0\",\"id\":\"2\",\"source\":\"/mycontext\","
                          "\"type\":\"com.example.someevent\",\"datacontenttype\":"
                          "\"application/octet-stream\",\"data_base64\":\"AQI=\"}]");
    eddy_event **back;
    size_t m;
    cr_assert_eq(eddy_event_batch_from_json(out, len, &back, &m, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(m, n);
    for (size_t i = 0; i < n; i++) {
        expect_same(evs[i], back[i]);
        eddy_event_free(evs[i]);
        eddy_event_free(back[i]);
    }
    free(evs);
    free(back);
    free(out);
    cr_assert_eq(eddy_event_batch_from_json(" [ ] ", 5, &evs, &n, &err), EDDY_OK);
    cr_expect_eq(n, 0);
    free(evs);
    cr_assert_eq(eddy_event_batch_to_json(NULL, 0, &out, &len, &err), EDDY_OK);
    cr_expect_str_eq(out, "[]");
    free(out);
    /* a bad event in a batch is named by its index; nothing is left allocated */
    const char *bad = "[{\"specversion\":\"1.0\",\"type\":\"t\",\"source\":\"/s\",\"id\":\"1\"},"
                      "{\"specversion\":\"1.0\",\"type\":\"t\",\"source\":\"/s\"}]";
    cr_expect_eq(eddy_event_batch_from_json(bad, strlen(bad), &evs, &n, &err),
                 EDDY_ERR_INVALID_EVENT);
    cr_expect_str_eq(err.detail, "event 1: id: required attribute is missing");
    cr_expect_null(evs);
    cr_expect_eq(n, 0);
    cr_expect_eq(eddy_event_batch_from_json("{}", 2, &evs, &n, &err), EDDY_ERR_INVALID_EVENT);
    cr_expect(strstr(err.detail, "batch: must be a JSON array"), "%s", err.detail);
    const eddy_event *none[] = {NULL};
    cr_expect_eq(eddy_event_batch_to_json(none, 1, &out, &len, &err), EDDY_ERR_INVALID_ARGUMENT);
}

/* Data without a content type is JSON (the spec implies application/json); other data that a
 * JSON string cannot carry unchanged goes as data_base64. */
Test(event_json, data_rules_when_writing) {
    static const struct {
        const char *ct;
        const char *data;
        size_t len;
        const char *want; /* the data member as written */
    } cases[] = {
        {NULL, "{\"k\": [1, 2]}", 13, "\"data\":{\"k\":[1,2]}"},
        {NULL, "\"str\"", 5, "\"data\":\"str\""},
        {NULL, "not json", 8, "\"data_base64\":\"bm90IGpzb24=\""},
        {"application/json; charset=utf-8", " 42 ", 4, "\"data\":42"},
        {"application/cloudevents+json", "[true,null]", 11, "\"data\":[true,null]"},
        {"application/json", "{bad", 4, "\"data_base64\":\"e2JhZA==\""},
        {"text/plain", "line 1\nline 2 \xc3\xa9", 16, "\"data\":\"line 1\\nline 2 \xc3\xa9\""},
        {"application/xml", "<a/>", 4, "\"data\":\"<a/>\""},
        {"application/atom+xml", "<a/>", 4, "\"data\":\"<a/>\""},
        {"text/plain", "raw \xff", 5, "\"data_base64\":\"cmF3IP8=\""},
        {"text/plain", "nul\0", 4, "\"data_base64\":\"bnVsAA==\""},
        {"application/octet-stream", "text", 4, "\"data_base64\":\"dGV4dA==\""},
        {"application/msgpack", "\x81\xa1k\x01", 4, "\"data_base64\":\"gaFrAQ==\""},
        {"text/plain", "", 0, "\"data\":\"\""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        eddy_event *ev = eddy_event_new();
        eddy_event_set_id(ev, "1");
        eddy_event_set_source(ev, "/s");
        eddy_event_set_type(ev, "t");
        eddy_event_set_datacontenttype(ev, cases[i].ct);
        eddy_event_set_data(ev, cases[i].data, cases[i].len);
        char *out = write_ok(ev);
        cr_expect(strstr(out, cases[i].want), "case %zu: %s lacks %s", i, out, cases[i].want);
        eddy_event *back = read_ok(out);
        if (cases[i].ct && strstr(cases[i].ct, "json") == NULL) {
            expect_same(ev, back); /* non-JSON data comes back byte for byte */
        } else {
            size_t len;
            const char *d = eddy_event_data(back, &len);
            cr_expect(d && len > 0, "case %zu", i);
        }
        free(out);
        eddy_event_free(back);
        eddy_event_free(ev);
    }
}

/* Reading: data_base64 and string data are bytes; JSON data keeps its text. */
Test(event_json, data_rules_when_reading) {
    eddy_event *ev = read_ok("{\"specversion\":\"1.0\",\"id\":\"1\",\"source\":\"/s\",\"type\":"
                             "\"t\",\"data\":\"plain\"}");
    expect_data(ev, "\"plain\""); /* no content type: JSON, so the JSON text */
    eddy_event_free(ev);
    ev = read_ok("{\"specversion\":\"1.0\",\"id\":\"1\",\"source\":\"/s\",\"type\":\"t\","
                 "\"data\":\"caf\\u00e9 \\ud83d\\ude00\",\"datacontenttype\":\"text/plain\"}");
    expect_data(ev, "caf\xc3\xa9 \xf0\x9f\x98\x80"); /* content type after data */
    eddy_event_free(ev);
    ev = read_ok("{\"specversion\":\"1.0\",\"id\":\"1\",\"source\":\"/s\",\"type\":\"t\","
                 "\"data_base64\":\"\",\"data\":null}");
    expect_data(ev, "");
    eddy_event_free(ev);
    ev = read_ok("{\"specversion\":\"1.0\",\"id\":\"1\",\"source\":\"/s\",\"type\":\"t\","
                 "\"data\":null}");
    cr_expect_null(eddy_event_data(ev, NULL));
    eddy_event_free(ev);
}

Test(event_json, extension_types) {
    eddy_event *ev = read_ok("{\"specversion\":\"1.0\",\"id\":\"1\",\"source\":\"/s\",\"type\":"
                             "\"t\",\"num\":-2147483648,\"yes\":true,\"no\":false,\"str\":\"5\","
                             "\"averyveryverylongextensionname\":\"x\"}");
    int32_t n;
    bool b = true;
    eddy_ext_type t;
    cr_expect_eq(eddy_event_ext_int(ev, "num", &n), EDDY_OK);
    cr_expect_eq(n, INT32_MIN);
    cr_expect_eq(eddy_event_ext_bool(ev, "no", &b), EDDY_OK);
    cr_expect(!b);
    cr_expect_eq(eddy_event_ext_type(ev, "str", &t), EDDY_OK);
    cr_expect_eq(t, EDDY_EXT_STRING);
    char *out = write_ok(ev);
    cr_expect(strstr(out, "\"num\":-2147483648,\"yes\":true,\"no\":false,\"str\":\"5\""), "%s",
              out);
    free(out);
    eddy_event_free(ev);
    /* typed extensions set in C come out as their JSON type; URI and Binary as strings */
    ev = read_ok("{\"specversion\":\"1.0\",\"id\":\"1\",\"source\":\"/s\",\"type\":\"t\"}");
    eddy_event_set_ext_binary(ev, "bin", "\x01", 1, NULL);
    eddy_event_set_ext_typed(ev, "uri", EDDY_EXT_URI, "urn:x", NULL);
    eddy_event_set_ext_int(ev, "i", 7, NULL);
    out = write_ok(ev);
    cr_expect(strstr(out, "\"bin\":\"AQ==\",\"uri\":\"urn:x\",\"i\":7"), "%s", out);
    free(out);
    eddy_event_free(ev);
}

static void expect_refused(const char *json, eddy_status st, const char *detail) {
    eddy_event *ev = (eddy_event *)&ev;
    eddy_error err = {0};
    cr_expect_eq(eddy_event_from_json(json, strlen(json), &ev, &err), st, "%s: got %s (%s)", json,
                 eddy_status_name(err.status), err.detail);
    cr_expect_null(ev);
    cr_expect(strstr(err.detail, detail), "%s: detail '%s' lacks '%s'", json, err.detail, detail);
    cr_expect_eq(eddy_event_from_json(json, strlen(json), &ev, NULL), st);
}

#define BASE "\"specversion\":\"1.0\",\"id\":\"1\",\"source\":\"/s\",\"type\":\"t\""

Test(event_json, refusals) {
    /* required attributes */
    expect_refused("{\"id\":\"1\",\"source\":\"/s\",\"type\":\"t\"}", EDDY_ERR_INVALID_EVENT,
                   "specversion: required attribute is missing");
    expect_refused("{\"specversion\":\"1.0\",\"source\":\"/s\",\"type\":\"t\"}",
                   EDDY_ERR_INVALID_EVENT, "id: required attribute is missing");
    expect_refused("{\"specversion\":\"1.0\",\"id\":\"1\",\"type\":\"t\"}", EDDY_ERR_INVALID_EVENT,
                   "source: required attribute is missing");
    expect_refused("{\"specversion\":\"1.0\",\"id\":\"1\",\"source\":\"/s\",\"type\":null}",
                   EDDY_ERR_INVALID_EVENT, "type: required attribute is missing");
    expect_refused("{\"specversion\":\"0.3\",\"id\":\"1\",\"source\":\"/s\",\"type\":\"t\"}",
                   EDDY_ERR_INVALID_EVENT, "specversion: must be \"1.0\"");
    expect_refused("{\"specversion\":\"1.0\",\"id\":\"\",\"source\":\"/s\",\"type\":\"t\"}",
                   EDDY_ERR_INVALID_EVENT, "id: must not be empty");
    /* wrong types */
    expect_refused("{\"specversion\":\"1.0\",\"id\":1,\"source\":\"/s\",\"type\":\"t\"}",
                   EDDY_ERR_INVALID_EVENT, "id: must be a string, not a number");
    expect_refused("{" BASE ",\"time\":true}", EDDY_ERR_INVALID_EVENT,
                   "time: must be a string, not a boolean");
    expect_refused("{" BASE ",\"subject\":{}}", EDDY_ERR_INVALID_EVENT,
                   "subject: must be a string, not an object");
    expect_refused("{" BASE ",\"ext\":[1]}", EDDY_ERR_INVALID_EVENT,
                   "ext: an extension cannot be an array");
    expect_refused("{" BASE ",\"ext\":1.5}", EDDY_ERR_INVALID_EVENT, "ext: a number must be a");
    expect_refused("{" BASE ",\"ext\":2147483648}", EDDY_ERR_INVALID_EVENT,
                   "ext: a number must be a");
    expect_refused("{" BASE ",\"ext\":1e3}", EDDY_ERR_INVALID_EVENT, "ext: a number must be a");
    expect_refused("{" BASE ",\"data_base64\":5}", EDDY_ERR_INVALID_EVENT,
                   "data_base64: must be a base64 string");
    expect_refused("{" BASE ",\"data_base64\":\"AQ=\"}", EDDY_ERR_INVALID_EVENT,
                   "data_base64: not base64");
    expect_refused("{" BASE ",\"datacontenttype\":\"text/plain\",\"data\":{\"a\":1}}",
                   EDDY_ERR_INVALID_EVENT, "data: must be a JSON string");
    expect_refused("[]", EDDY_ERR_INVALID_EVENT, "event: an event must be a JSON object, not an");
    /* data and data_base64 together */
    expect_refused("{" BASE ",\"data\":{},\"data_base64\":\"AQ==\"}", EDDY_ERR_INVALID_EVENT,
                   "data: an event carries data or data_base64, not both");
    /* names and duplicates */
    expect_refused("{" BASE ",\"Upper\":\"x\"}", EDDY_ERR_INVALID_EVENT,
                   "Upper: not a CloudEvents attribute name");
    expect_refused("{" BASE ",\"with-dash\":\"x\"}", EDDY_ERR_INVALID_EVENT,
                   "with-dash: not a CloudEvents attribute name");
    expect_refused("{" BASE ",\"id\":\"2\"}", EDDY_ERR_INVALID_EVENT, "id: duplicate member");
    expect_refused("{" BASE ",\"e\":\"1\",\"f\":1,\"e\":null}", EDDY_ERR_INVALID_EVENT,
                   "e: duplicate member");
    expect_refused("{" BASE ",\"data\":1,\"data\":2}", EDDY_ERR_INVALID_EVENT,
                   "data: duplicate member");
    expect_refused("{" BASE ",\"a\\u0000b\":\"x\"}", EDDY_ERR_INVALID_EVENT,
                   "member: a NUL character");
    /* the String type, through JSON escapes too */
    expect_refused("{" BASE ",\"subject\":\"a\\nb\"}", EDDY_ERR_INVALID_EVENT,
                   "subject: not a CloudEvents String: control character U+000A at byte 1");
    expect_refused("{" BASE ",\"subject\":\"\\ufffe\"}", EDDY_ERR_INVALID_EVENT,
                   "subject: not a CloudEvents String: noncharacter U+FFFE at byte 0");
    expect_refused("{" BASE ",\"x\":\"a\\u0000\"}", EDDY_ERR_INVALID_EVENT,
                   "x: not a CloudEvents String: NUL");
    expect_refused("{" BASE ",\"time\":\"today\"}", EDDY_ERR_INVALID_EVENT,
                   "time: not an RFC 3339 timestamp");
    /* not strict JSON: the byte offset is named */
    expect_refused("", EDDY_ERR_MALFORMED, "JSON: unexpected end of input at byte 0");
    expect_refused("{" BASE ",}", EDDY_ERR_MALFORMED, "JSON: expected a member name at byte 55");
    expect_refused("{" BASE "} x", EDDY_ERR_MALFORMED,
                   "JSON: text after the end of the document at byte 56");
    expect_refused("{\"id\":\"\\ud800\"}", EDDY_ERR_MALFORMED, "lone surrogate escape");
    expect_refused("{\"id\":\"\\udc00x\"}", EDDY_ERR_MALFORMED, "lone surrogate escape");
    expect_refused("{\"id\":\"\xff\"}", EDDY_ERR_MALFORMED, "JSON: not UTF-8 at byte 7");
    expect_refused("{\"id\":\"a\nb\"}", EDDY_ERR_MALFORMED, "control character in a string");
    expect_refused("{\"n\":01}", EDDY_ERR_MALFORMED, "leading zero");
    expect_refused("{\"n\":-}", EDDY_ERR_MALFORMED, "bad number");
    expect_refused("{\"n\":1.}", EDDY_ERR_MALFORMED, "bad number");
    expect_refused("{\"n\":tru}", EDDY_ERR_MALFORMED, "unexpected character");
    expect_refused("{\"n\":\"\\x\"}", EDDY_ERR_MALFORMED, "bad escape");
    expect_refused("{\"n\":\"\\u12\"}", EDDY_ERR_MALFORMED, "bad \\u escape");
    expect_refused("{\"n\" 1}", EDDY_ERR_MALFORMED, "expected ':'");
    expect_refused("{\"n\":1", EDDY_ERR_MALFORMED, "unexpected end of input");
    expect_refused("// c\n{}", EDDY_ERR_MALFORMED, "unexpected character at byte 0");
    char deep[200];
    memset(deep, '[', 100);
    memset(deep + 100, ']', 99);
    deep[199] = '\0';
    expect_refused(deep, EDDY_ERR_MALFORMED, "nested too deep");
    /* arguments */
    eddy_event *ev;
    cr_expect_eq(eddy_event_from_json(NULL, 0, &ev, NULL), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_event_from_json("{}", 2, NULL, NULL), EDDY_ERR_INVALID_ARGUMENT);
    char *out;
    cr_expect_eq(eddy_event_to_json(NULL, &out, NULL, NULL), EDDY_ERR_INVALID_ARGUMENT);
    /* an invalid event is not written */
    ev = eddy_event_new();
    eddy_error err = {0};
    cr_expect_eq(eddy_event_to_json(ev, &out, NULL, &err), EDDY_ERR_INVALID_EVENT);
    cr_expect_null(out);
    cr_expect_str_eq(err.detail, "id: required attribute is missing");
    eddy_event_free(ev);
}

/* Input need not be NUL-terminated, and whitespace is allowed around the document. */
Test(event_json, length_counted_input) {
    const char *json = " \t\r\n{" BASE "}\n garbage";
    eddy_event *ev = NULL;
    cr_expect_eq(eddy_event_from_json(json, strlen(json) - strlen("garbage"), &ev, NULL), EDDY_OK);
    eddy_event_free(ev);
}

/* The CloudEvents v1.0.2 rules as a table of events in the JSON format, each accepted or refused
 * with the attribute it names: the cases SDK conformance suites check (required attributes,
 * URI-references, timestamps, media types, extension names and types, the String type). */
Test(event_json, spec_validation_table) {
    static const struct {
        const char *members; /* after the BASE members, or the whole object when it starts '{' */
        const char *refused; /* NULL: accepted; else the start of the detail */
    } cases[] = {
        /* accepted */
        {"", NULL},
        {",\"subject\":\"s\",\"time\":\"2018-04-05T17:31:00Z\",\"dataschema\":\"https://e.com/s\","
         "\"datacontenttype\":\"application/json; charset=utf-8\"",
         NULL},
        {",\"time\":\"2018-04-05T17:31:00.123456789+05:30\"", NULL},
        {",\"time\":\"2020-02-29t23:59:60z\"", NULL},
        {",\"dataschema\":\"urn:example:schema\"", NULL},
        {",\"abcdefghijklmnopqrstu\":\"21 characters\"", NULL},
        {",\"x\":\"\"", NULL},
        {",\"x\":0,\"y\":-1,\"z\":2147483647", NULL},
        {",\"subject\":\"\\u00e9\\u20ac\\ud83d\\ude00\"", NULL},
        {"{\"specversion\":\"1.0\",\"id\":\"1\",\"source\":\"https://github.com/cloudevents\","
         "\"type\":\"t\"}",
         NULL},
        {"{\"specversion\":\"1.0\",\"id\":\"1\",\"source\":\"mailto:cncf-wg-serverless@lists.cncf."
         "io\","
         "\"type\":\"t\"}",
         NULL},
        {"{\"specversion\":\"1.0\",\"id\":\"1\",\"source\":\"urn:uuid:6e8bc430-9c3a-11d9-9669-"
         "0800200c9a66\",\"type\":\"t\"}",
         NULL},
        {"{\"specversion\":\"1.0\",\"id\":\"1\",\"source\":\"/cloudevents/spec/pull/123\","
         "\"type\":\"t\"}",
         NULL},
        {"{\"specversion\":\"1.0\",\"id\":\"1\",\"source\":\"relative/path\",\"type\":\"t\"}",
         NULL},
        /* refused */
        {"{\"id\":\"1\",\"source\":\"/s\",\"type\":\"t\"}", "specversion: required"},
        {"{\"specversion\":\"1.0\",\"source\":\"/s\",\"type\":\"t\"}", "id: required"},
        {"{\"specversion\":\"1.0\",\"id\":\"1\",\"type\":\"t\"}", "source: required"},
        {"{\"specversion\":\"1.0\",\"id\":\"1\",\"source\":\"/s\"}", "type: required"},
        {"{\"specversion\":\"1.0\",\"id\":\"\",\"source\":\"/s\",\"type\":\"t\"}",
         "id: must not be"},
        {"{\"specversion\":\"1.0\",\"id\":\"1\",\"source\":\"\",\"type\":\"t\"}",
         "source: must not"},
        {"{\"specversion\":\"1.0\",\"id\":\"1\",\"source\":\"/s\",\"type\":\"\"}",
         "type: must not"},
        {"{\"specversion\":\"1.0\",\"id\":\"1\",\"source\":\"a b\",\"type\":\"t\"}",
         "source: not a URI"},
        {"{\"specversion\":\"1.0\",\"id\":\"1\",\"source\":\"1http:x\",\"type\":\"t\"}",
         "source: not a URI"},
        {"{\"specversion\":\"2.0\",\"id\":\"1\",\"source\":\"/s\",\"type\":\"t\"}", "specversion:"},
        {"{\"specversion\":1.0,\"id\":\"1\",\"source\":\"/s\",\"type\":\"t\"}",
         "specversion: must be a"},
        {",\"subject\":\"\"", "subject: must not be empty"},
        {",\"time\":\"2018-04-05\"", "time:"},
        {",\"time\":\"2018-04-05T17:31:00\"", "time:"},
        {",\"time\":\"2021-02-29T00:00:00Z\"", "time:"},
        {",\"time\":\"\"", "time:"},
        {",\"dataschema\":\"/relative\"", "dataschema:"},
        {",\"dataschema\":\"\"", "dataschema:"},
        {",\"datacontenttype\":\"json\"", "datacontenttype:"},
        {",\"datacontenttype\":\"\"", "datacontenttype:"},
        {",\"ABC\":\"x\"", "ABC: not a CloudEvents attribute name"},
        {",\"a_b\":\"x\"", "a_b: not a CloudEvents attribute name"},
        {",\"\":\"x\"", ": not a CloudEvents attribute name"},
        {",\"x\":{}", "x: an extension cannot be an object"},
        {",\"x\":2147483648", "x: a number must be"},
        {",\"x\":-2147483649", "x: a number must be"},
        {",\"x\":1.0", "x: a number must be"},
        {",\"id2\":\"a\\u007fb\"", "id2: not a CloudEvents String: control character U+007F"},
        {",\"subject\":\"\\u0085\"", "subject: not a CloudEvents String: control character U+0085"},
        {",\"subject\":\"\\ufdd0\"", "subject: not a CloudEvents String: noncharacter U+FDD0"},
        {",\"subject\":\"\\ud83f\\udffe\"",
         "subject: not a CloudEvents String: noncharacter U+1FFFE"},
        {",\"subject\":\"\\ud800\"", "JSON: lone surrogate escape"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char json[512];
        if (cases[i].members[0] == '{')
            snprintf(json, sizeof(json), "%s", cases[i].members);
        else
            snprintf(json, sizeof(json), "{" BASE "%s}", cases[i].members);
        eddy_event *ev = NULL;
        eddy_error err = {0};
        eddy_status st = eddy_event_from_json(json, strlen(json), &ev, &err);
        if (!cases[i].refused) {
            cr_expect_eq(st, EDDY_OK, "case %zu refused: %s\n%s", i, err.detail, json);
            if (ev) { /* and what was accepted is written and read back the same */
                char *out = write_ok(ev);
                eddy_event *back = read_ok(out);
                expect_same(ev, back);
                eddy_event_free(back);
                free(out);
            }
        } else {
            cr_expect_neq(st, EDDY_OK, "case %zu accepted: %s", i, json);
            cr_expect(strncmp(err.detail, cases[i].refused, strlen(cases[i].refused)) == 0,
                      "case %zu: detail '%s' should start '%s'", i, err.detail, cases[i].refused);
        }
        eddy_event_free(ev);
    }
}
