/* SPDX-License-Identifier: BSD-3-Clause */
/* Read models kept in Redis on the blocking front end: the commit a feed sends and the model's
 * reads, each one command through the store (store_call.h). The core (src/store/model.c)
 * builds and reads them. */
#include "eddy/model.h"
#include "error.h"
#include "store/model.h"
#include "store_call.h"

static eddy_status commit_read(const redisReply *r, void *user, eddy_error *err) {
    (void)user;
    return eddy__model_commit_result(r, NULL, err);
}

eddy_status eddy__bmodel_commit(eddy_store *store, const eddy__model *m, const eddy_writes *w,
                                bool page, eddy_error *err) {
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    eddy_status st = eddy__model_commit_cmd(m, w, page, &cmds, err);
    if (st == EDDY_OK)
        st = eddy__bstore_call(store, &cmds, commit_read, NULL, err);
    eddy__cmdlist_reset(&cmds);
    return st;
}

static eddy_status position_read(const redisReply *r, void *user, eddy_error *err) {
    return eddy__model_position_result(r, user, err);
}

eddy_status eddy_store_model_position(eddy_store *store, const char *feed_id, long long *position,
                                      eddy_error *err) {
    if (!store || !position)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "store or position is NULL");
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    eddy_status st = eddy__model_read_cmd(eddy__bstore_ns(store), feed_id, EDDY__MODEL_POSITION,
                                          NULL, &cmds, err);
    if (st == EDDY_OK)
        st = eddy__bstore_call(store, &cmds, position_read, position, err);
    eddy__cmdlist_reset(&cmds);
    return st;
}

typedef struct items_ctx {
    const char *ns, *feed_id;
    eddy__model_read what;
    eddy_model_item_fn each;
    void *user;
} items_ctx;

static eddy_status items_read(const redisReply *r, void *user, eddy_error *err) {
    items_ctx *c = user;
    return eddy__model_items_result(c->ns, c->feed_id, c->what, r, c->each, c->user, err);
}

static eddy_status read_items(eddy_store *store, const char *feed_id, eddy__model_read what,
                              const char *key, eddy_model_item_fn each, void *user,
                              eddy_error *err) {
    if (!store || !each)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "store or each is NULL");
    items_ctx c = {eddy__bstore_ns(store), feed_id, what, each, user};
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    eddy_status st = eddy__model_read_cmd(c.ns, feed_id, what, key, &cmds, err);
    if (st == EDDY_OK)
        st = eddy__bstore_call(store, &cmds, items_read, &c, err);
    eddy__cmdlist_reset(&cmds);
    return st;
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
