/* SPDX-License-Identifier: BSD-3-Clause */
/* See test_codec.h. */
#include "test_codec.h"

#include <criterion/criterion.h>
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eddy/msgpack.h"
#include "recorder.h"

eddy_status uev_decode(const eddy_event *ev, const eddy_event_meta *meta, void **out,
                       eddy_error *err, void *user) {
    (void)meta, (void)err, (void)user;
    uev *e = calloc(1, sizeof(*e));
    if (!e)
        return EDDY_ERR_NOMEM;
    snprintf(e->id, sizeof(e->id), "%s", eddy_event_id(ev));
    *out = e;
    return EDDY_OK;
}

void uev_free(void *event, void *user) {
    (void)user;
    free(event);
}

const char *uev_id(const void *event, void *user) {
    (void)user;
    return ((const uev *)event)->id;
}

bool uev_known_type(const eddy_event *ev, eddy_error *err) {
    const char *type = eddy_event_type(ev);
    if (strcmp(type, "order.placed") == 0 || strcmp(type, "order.big") == 0)
        return true;
    snprintf(err->detail, sizeof(err->detail), "unknown type %s", type);
    return false;
}

static eddy_status pack_amount(msgpack_packer *pk, void *user) {
    msgpack_pack_map(pk, 1);
    msgpack_pack_str(pk, 6);
    msgpack_pack_str_body(pk, "amount", 6);
    msgpack_pack_int(pk, *(int *)user);
    return EDDY_OK;
}

eddy_event *amount_event(const char *id, int amount) {
    eddy_event *ev = make_event(id, "order.big");
    cr_assert(ev);
    cr_assert_eq(eddy_event_set_value(ev, pack_amount, &amount, NULL), EDDY_OK);
    return ev;
}

eddy_filter *amount_over(int n) {
    eddy_field v = eddy_field_int(n);
    eddy_filter *f = eddy_filter_data("amount", EDDY_DATA_GT, &v);
    cr_assert(f, "eddy_filter_data is not implemented yet (src/events/filter.c)");
    return f;
}
