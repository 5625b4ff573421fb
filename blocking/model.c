/* SPDX-License-Identifier: BSD-3-Clause */
/* Read models kept in Redis on the blocking front end: the commit a feed sends and the model's
 * reads, each one command through the store (store_call.h). The core (src/store/model.c)
 * builds them and reads their replies. */
#include "eddy/model.h"
#include "error.h"
#include "store/model.h"
#include "store_call.h"

eddy_status eddy__bmodel_commit(eddy_store *store, const eddy__model *m, const eddy_writes *w,
                                bool page, eddy_error *err) {
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    eddy_status st = eddy__model_commit_cmd(m, w, page, &cmds, err);
    if (st == EDDY_OK)
        st = eddy__bstore_call(store, &cmds, eddy__model_committed, NULL, err);
    eddy__cmdlist_reset(&cmds);
    return st;
}

/* One read of feed_id's model; *position (may be NULL) gets a position read's. */
static eddy_status model_read(eddy_store *store, const char *feed_id, eddy__model_read what,
                              const char *key, eddy_model_item_fn each, void *user,
                              long long *position, eddy_error *err) {
    eddy__model_reading rd;
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    eddy_status st = eddy__model_reading_cmd(&rd, eddy__bstore_ns(store), feed_id, what, key, each,
                                             user, &cmds, err);
    if (st == EDDY_OK)
        st = eddy__bstore_call(store, &cmds, eddy__model_reading_result, &rd, err);
    eddy__cmdlist_reset(&cmds);
    if (st == EDDY_OK && position)
        *position = rd.position;
    return st;
}

eddy_status eddy_store_model_position(eddy_store *store, const char *feed_id, long long *position,
                                      eddy_error *err) {
    if (!store || !position)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "store or position is NULL");
    return model_read(store, feed_id, EDDY__MODEL_POSITION, NULL, NULL, NULL, position, err);
}

static eddy_status read_items(eddy_store *store, const char *feed_id, eddy__model_read what,
                              const char *key, eddy_model_item_fn each, void *user,
                              eddy_error *err) {
    if (!store || !each)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "store or each is NULL");
    return model_read(store, feed_id, what, key, each, user, NULL, err);
}

eddy_status eddy_store_model_hash(eddy_store *store, const char *feed_id, const char *key,
                                  eddy_model_item_fn each, void *user, eddy_error *err) {
    return read_items(store, feed_id, EDDY__MODEL_HASH, key, each, user, err);
}

eddy_status eddy_store_model_set(eddy_store *store, const char *feed_id, const char *key,
                                 eddy_model_item_fn each, void *user, eddy_error *err) {
    return read_items(store, feed_id, EDDY__MODEL_SET, key, each, user, err);
}

eddy_status eddy_store_model_keys(eddy_store *store, const char *feed_id, eddy_model_item_fn each,
                                  void *user, eddy_error *err) {
    return read_items(store, feed_id, EDDY__MODEL_KEYS, NULL, each, user, err);
}
