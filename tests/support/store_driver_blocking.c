/* SPDX-License-Identifier: BSD-3-Clause */
/* The blocking store behind the store scenario driver: a direct mapping. */
#include <criterion/criterion.h>

#include "eddy/store.h"
#include "recorder.h"
#include "store_driver.h"

static eddy_status b_open(const eddy_settings *s, tstore **out, eddy_error *err) {
    return eddy_store_open(s, (eddy_store **)out, err);
}
static void b_close(tstore *st) { eddy_store_close((eddy_store *)st); }
static eddy_status b_append(tstore *st, const char *stream_id, const eddy_event *const *evs,
                            size_t n, const eddy_append_opts *opts, long long *new_version,
                            eddy_error *err) {
    return eddy_store_append((eddy_store *)st, stream_id, evs, n, opts, new_version, err);
}
static eddy_status b_read_stream(tstore *st, const char *stream_id, long long after,
                                 eddy_stored_fn fn, void *user, eddy_error *err) {
    return eddy_store_read_stream((eddy_store *)st, stream_id, after, fn, user, err);
}
static eddy_status b_read_all(tstore *st, long long after, size_t max, const eddy_filter *f,
                              eddy_stored_fn fn, void *user, long long *next, eddy_error *err) {
    return eddy_store_read_page((eddy_store *)st, after, max, f, fn, user, next, err);
}
static eddy_status b_head(tstore *st, long long *position, eddy_error *err) {
    return eddy_store_head((eddy_store *)st, position, err);
}
static eddy_checkpoints b_checkpoints(tstore *st) {
    return eddy_store_checkpoints((eddy_store *)st);
}

static eddy_status nop_fn(const eddy_event *ev, const eddy_event_meta *m, void *user) {
    (void)ev;
    (void)m;
    (void)user;
    return EDDY_OK;
}

static void b_shape_refusals(const eddy_settings *s, tstore *open) {
    eddy_store *st = (eddy_store *)open;
    eddy_error err = {0};
    cr_expect_eq(eddy_store_open(s, NULL, &err), EDDY_ERR_INVALID_ARGUMENT);
    eddy_event *good = make_event("g", "t");
    const eddy_event *one[] = {good};
    cr_expect_eq(eddy_store_append(NULL, "s", one, 1, NULL, NULL, &err), EDDY_ERR_INVALID_ARGUMENT);
    long long next, h;
    cr_expect_eq(eddy_store_read_stream(NULL, "s", 0, nop_fn, NULL, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_store_read_stream(st, "s", 0, NULL, NULL, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_store_read_page(NULL, 0, 1, NULL, nop_fn, NULL, &next, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_store_read_page(st, 0, 1, NULL, NULL, NULL, &next, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_store_read_page(st, 0, 1, NULL, nop_fn, NULL, NULL, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_store_read_page(st, -5, 1, NULL, nop_fn, NULL, &next, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(next, -5, "next_position is set even on a refusal");
    cr_expect_eq(eddy_store_head(NULL, &h, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_store_head(st, NULL, &err), EDDY_ERR_INVALID_ARGUMENT);
    /* The checkpoint operations' out-pointers and buffer. */
    eddy_checkpoints cp = eddy_store_checkpoints(st);
    bool b;
    char buf[8];
    cr_expect_eq(cp.ops->read(cp.self, "f", NULL, 8, &b, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(cp.ops->read(cp.self, "f", buf, 0, &b, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(cp.ops->read(cp.self, "f", buf, 8, NULL, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(cp.ops->exists(cp.self, "f", NULL, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(cp.ops->exists(NULL, "f", &b, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(cp.ops->save(NULL, "f", "1", &err), EDDY_ERR_INVALID_ARGUMENT);
    eddy_store_close(NULL);
    eddy_event_free(good);
}

static void *b_native(tstore *st) { return st; }
static struct rloop *b_loop(tstore *st) {
    (void)st;
    return NULL;
}

const store_driver blocking_store_driver = {
    .name = "blocking",
    .reactive = false,
    .open = b_open,
    .close = b_close,
    .append = b_append,
    .read_stream = b_read_stream,
    .read_all = b_read_all,
    .head = b_head,
    .checkpoints = b_checkpoints,
    .shape_refusals = b_shape_refusals,
    .native = b_native,
    .loop = b_loop,
};
