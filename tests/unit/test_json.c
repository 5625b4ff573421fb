/* SPDX-License-Identifier: BSD-3-Clause */
/* The core's JSON writer (src/util/json.c): what it writes is valid JSON whatever the strings hold,
 * checked by parsing it back with jansson; and the strict reader (src/util/json_read.c), checked
 * against jansson on documents both must accept, and on what only a strict reader refuses. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "util/json.h"
#include "util/json_read.h"

static json_t *parse(char *doc) {
    cr_assert(doc, "the writer failed");
    json_error_t e;
    json_t *v = json_loads(doc, 0, &e);
    cr_assert(v, "not JSON (%s): %s", e.text, doc);
    free(doc);
    return v;
}

Test(json, nests_objects_and_arrays_with_commas_in_place) {
    eddy__json j;
    eddy__json_init(&j);
    eddy__json_object(&j, NULL);
    eddy__json_str(&j, "a", "x");
    eddy__json_array(&j, "list");
    eddy__json_u64(&j, NULL, 4294967296ull); /* jansson holds up to INT64_MAX */
    eddy__json_i64(&j, NULL, -5);
    eddy__json_object(&j, NULL);
    eddy__json_end(&j);
    eddy__json_array(&j, NULL);
    eddy__json_end(&j);
    eddy__json_end(&j);
    eddy__json_bool(&j, "t", true);
    eddy__json_null(&j, "n");
    eddy__json_str(&j, "s", NULL);
    eddy__json_end(&j);
    json_t *v = parse(eddy__json_finish(&j));
    cr_assert_str_eq(json_string_value(json_object_get(v, "a")), "x");
    json_t *list = json_object_get(v, "list");
    cr_assert_eq(json_array_size(list), 4);
    cr_assert_eq(json_integer_value(json_array_get(list, 1)), -5);
    cr_assert(json_is_object(json_array_get(list, 2)));
    cr_assert(json_is_true(json_object_get(v, "t")));
    cr_assert(json_is_null(json_object_get(v, "n")) && json_is_null(json_object_get(v, "s")));
    json_decref(v);
}

Test(json, escapes_quotes_controls_and_replaces_bytes_that_are_not_utf8) {
    eddy__json j;
    eddy__json_init(&j);
    eddy__json_object(&j, NULL);
    eddy__json_str(&j, "q\"k", "a\"b\\c\n\x01\t");
    eddy__json_str(&j, "utf8", "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
    eddy__json_str(&j, "bad", "x\xff\xc3(\xed\xa0\x80\xc0\xafy");
    eddy__json_end(&j);
    json_t *v = parse(eddy__json_finish(&j));
    cr_assert_str_eq(json_string_value(json_object_get(v, "q\"k")), "a\"b\\c\n\x01\t");
    cr_assert_str_eq(json_string_value(json_object_get(v, "utf8")),
                     "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
    const char *bad = json_string_value(json_object_get(v, "bad"));
    cr_assert(bad && bad[0] == 'x' && bad[strlen(bad) - 1] == 'y', "%s", bad);
    cr_assert(strstr(bad, "\xef\xbf\xbd"), "U+FFFD for each bad byte: %s", bad);
    json_decref(v);
}

Test(json, an_unclosed_or_too_deep_document_fails) {
    eddy__json j;
    eddy__json_init(&j);
    eddy__json_object(&j, NULL);
    cr_assert_null(eddy__json_finish(&j), "unclosed");
    eddy__json_init(&j);
    for (int i = 0; i < EDDY__JSON_MAX_DEPTH + 1; i++)
        eddy__json_array(&j, NULL);
    for (int i = 0; i < EDDY__JSON_MAX_DEPTH + 1; i++)
        eddy__json_end(&j);
    cr_assert_null(eddy__json_finish(&j), "too deep");
}

Test(json, the_reader_accepts_what_rfc_8259_allows) {
    static const char *const ok[] = {
        "0",
        "-0",
        "1.5e-3",
        "-12E+2",
        "true",
        "false",
        "null",
        "\"\"",
        "[]",
        "{}",
        " [1, [2, [3]], {\"a\": {\"b\": null}}] ",
        "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\"",
        "\"\\ud83d\\ude00\"",
        "\"\xc3\xa9\xf0\x9f\x98\x80\"",
        "{\"a\":1,\"a\":2}",
        "\"\\u0000\"",
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        cr_expect(eddy__json_valid(ok[i], strlen(ok[i])), "refused: %s", ok[i]);
        json_error_t e;
        json_t *v = json_loadb(ok[i], strlen(ok[i]), JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
        cr_expect(v, "jansson refuses %s: %s", ok[i], e.text);
        json_decref(v);
    }
    static const char *const bad[] = {
        "",          " ",           "01",           "1.",
        ".5",        "+1",          "1e",           "tru",
        "nul",       "[1,]",        "{\"a\":1,}",   "{a:1}",
        "'a'",       "[1 2]",       "\"a",          "\"\\x\"",
        "\"\\u12\"", "\"\\ud800\"", "\"\\udc00\"",  "\"\t\"",
        "1 2",       "\"\xff\"",    "\"\xc0\xaf\"", "\"\xed\xa0\x80\"",
        "/*c*/1",    "[",           "{\"a\"}",      "NaN",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_expect(!eddy__json_valid(bad[i], strlen(bad[i])), "accepted: %s", bad[i]);
    /* the first failure is kept with its offset */
    eddy__jr r;
    eddy__jr_init(&r, "[1, x]", 6);
    cr_expect(!eddy__jr_value(&r, NULL, NULL));
    cr_expect_eq(r.errpos, 4);
    cr_expect_str_eq(r.why, "unexpected character");
    cr_expect_eq(eddy__jr_peek(&r), 0);
    /* strings come back unescaped, NUL bytes counted */
    eddy__jr_init(&r, " \"a\\u0000\\n\\ud83d\\ude00\"", 25);
    char *str;
    size_t len;
    cr_assert(eddy__jr_string(&r, &str, &len));
    cr_expect_eq(len, 7);
    cr_expect(memcmp(str, "a\0\n\xf0\x9f\x98\x80", 7) == 0);
    free(str);
}

Test(json, minify_drops_whitespace_outside_strings_only) {
    const char *in = " { \"a b\" : [ 1 , \"x\\\" y\" ] ,\n\t\"c\" : true } ";
    char out[64];
    size_t n = eddy__json_minify(in, strlen(in), out);
    out[n] = '\0';
    cr_expect_str_eq(out, "{\"a b\":[1,\"x\\\" y\"],\"c\":true}");
}

Test(json, short_escapes_for_common_controls) {
    eddy__json j;
    eddy__json_init(&j);
    eddy__json_str(&j, NULL, "\b\t\n\v\f\r\x1f");
    char *doc = eddy__json_finish(&j);
    cr_assert(doc);
    cr_expect_str_eq(doc, "\"\\b\\t\\n\\u000b\\f\\r\\u001f\"");
    free(doc);
}
