/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target for the CloudEvents JSON format reader (eddy_event_from_json and the batch
 * reader), which reads text users and other producers write.
 *
 * Input layout: one byte choosing a single event (even) or a batch (odd), then the JSON text,
 * copied into an allocation of exactly its size (no terminator), so ASan catches a read past
 * the length.
 *
 * Properties beyond "no crash": the reader refuses as malformed exactly the texts the strict
 * JSON reader refuses; an accepted event validates and is written; what is written reads back
 * as the same attributes, and is a fixed point (written again, the same text). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "eddy/event.h"
#include "util/json_read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_str(const char *a, const char *b) {
    if ((a == NULL) != (b == NULL) || (a && strcmp(a, b) != 0))
        abort();
}

static void check_attrs(const eddy_event *a, const eddy_event *b) {
    check_str(eddy_event_id(a), eddy_event_id(b));
    check_str(eddy_event_source(a), eddy_event_source(b));
    check_str(eddy_event_type(a), eddy_event_type(b));
    check_str(eddy_event_subject(a), eddy_event_subject(b));
    check_str(eddy_event_time(a), eddy_event_time(b));
    check_str(eddy_event_datacontenttype(a), eddy_event_datacontenttype(b));
    check_str(eddy_event_dataschema(a), eddy_event_dataschema(b));
    size_t n = eddy_event_extension_count(a);
    if (n != eddy_event_extension_count(b))
        abort();
    for (size_t i = 0; i < n; i++) {
        const char *an, *av, *bn, *bv;
        eddy_ext_type at, bt;
        eddy_event_extension_at(a, i, &an, &av);
        eddy_event_extension_at(b, i, &bn, &bv);
        eddy_event_extension_type_at(a, i, &at);
        eddy_event_extension_type_at(b, i, &bt);
        check_str(an, bn);
        check_str(av, bv);
        if (at != bt)
            abort();
    }
    size_t al, bl;
    const void *ad = eddy_event_data(a, &al), *bd = eddy_event_data(b, &bl);
    if ((ad == NULL) != (bd == NULL))
        abort();
}

static void check_data(const eddy_event *a, const eddy_event *b) {
    size_t al, bl;
    const void *ad = eddy_event_data(a, &al), *bd = eddy_event_data(b, &bl);
    if ((ad == NULL) != (bd == NULL) || al != bl || (al && memcmp(ad, bd, al) != 0))
        abort();
}

/* Writes ev, reads it back, writes that again: same attributes, same text. */
static void check_written(const eddy_event *ev) {
    char *j1, *j2;
    size_t l1, l2;
    eddy_event *back, *again;
    if (eddy_event_validate(ev, NULL) != EDDY_OK)
        abort();
    if (eddy_event_to_json(ev, &j1, &l1, NULL) != EDDY_OK)
        abort();
    if (eddy_event_from_json(j1, l1, &back, NULL) != EDDY_OK)
        abort();
    check_attrs(ev, back); /* JSON data may lose insignificant whitespace once */
    if (eddy_event_to_json(back, &j2, &l2, NULL) != EDDY_OK || l1 != l2 || memcmp(j1, j2, l1))
        abort();
    if (eddy_event_from_json(j2, l2, &again, NULL) != EDDY_OK)
        abort();
    check_attrs(back, again);
    check_data(back, again);
    eddy_event_free(again);
    eddy_event_free(back);
    free(j1);
    free(j2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1)
        return 0;
    bool batch = data[0] & 1;
    size_t len = size - 1;
    char *text = malloc(len ? len : 1);
    if (!text)
        return 0;
    memcpy(text, data + 1, len);
    bool valid = eddy__json_valid(text, len);
    eddy_status st;
    if (batch) {
        eddy_event **evs;
        size_t n;
        st = eddy_event_batch_from_json(text, len, &evs, &n, NULL);
        if (st == EDDY_OK) {
            for (size_t i = 0; i < n; i++)
                check_written(evs[i]);
            char *out;
            size_t olen;
            if (eddy_event_batch_to_json((const eddy_event *const *)evs, n, &out, &olen, NULL) !=
                EDDY_OK)
                abort();
            eddy_event **back;
            size_t m;
            if (eddy_event_batch_from_json(out, olen, &back, &m, NULL) != EDDY_OK || m != n)
                abort();
            for (size_t i = 0; i < n; i++) {
                check_attrs(evs[i], back[i]);
                eddy_event_free(evs[i]);
                eddy_event_free(back[i]);
            }
            free(evs);
            free(back);
            free(out);
        }
    } else {
        eddy_event *ev;
        st = eddy_event_from_json(text, len, &ev, NULL);
        if (st == EDDY_OK) {
            check_written(ev);
            eddy_event_free(ev);
        }
    }
    if ((st == EDDY_ERR_MALFORMED) != !valid)
        abort();
    free(text);
    return 0;
}
