/* SPDX-License-Identifier: BSD-3-Clause */
/* The core's JSON writer (src/json.c): what it writes is valid JSON whatever the strings hold,
 * checked by parsing it back with jansson. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

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
