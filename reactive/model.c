/* SPDX-License-Identifier: BSD-3-Clause */
/* Read models kept in Redis on the reactive front end: the commit a feed sends and the model's
 * reads, each one command through the rstore (store_call.h) completed on the loop. The core
 * (src/store/model.c) builds them and reads their replies. */
#include <stdlib.h>

#include "eddy/rmodel.h"
#include "error.h"
#include "store/model.h"
#include "store_call.h"

eddy_status eddy__rmodel_commit(eddy_rstore *store, const eddy__model *m, const eddy_writes *w,
                                bool page, eddy_rstore_done_fn done, void *user, eddy_error *err) {
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    eddy_status st = eddy__model_commit_cmd(m, w, page, &cmds, err);
    if (st == EDDY_OK)
        st = eddy__rstore_call(store, &cmds, eddy__model_committed, NULL, done, user, err);
    eddy__cmdlist_reset(&cmds);
    return st;
}

/* What a read waits with: the reading, and the user's callback (a position's or `done`). */
typedef struct mcall {
    eddy__model_reading rd;
    eddy_rstore_done_fn done;
    eddy_rmodel_position_fn on_position;
    void *user;
} mcall;

static void read_done(eddy_status st, const eddy_error *err, void *user) {
    mcall *c = user;
    if (c->on_position)
        c->on_position(st, st == EDDY_OK ? c->rd.position : 0, err, c->user);
    else
        c->done(st, err, c->user);
    free(c);
}

static eddy_status model_read(eddy_rstore *store, const char *feed_id, eddy__model_read what,
                              const char *key, eddy_model_item_fn each, eddy_rstore_done_fn done,
                              eddy_rmodel_position_fn on_position, void *user, eddy_error *err) {
    if (!store)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "store is NULL");
    mcall *c = calloc(1, sizeof(*c));
    if (!c)
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    c->done = done;
    c->on_position = on_position;
    c->user = user;
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    eddy_status st = eddy__model_reading_cmd(&c->rd, eddy__rstore_ns(store), feed_id, what, key,
                                             each, user, &cmds, err);
    if (st == EDDY_OK)
        st = eddy__rstore_call(store, &cmds, eddy__model_reading_result, &c->rd, read_done, c, err);
    eddy__cmdlist_reset(&cmds);
    if (st != EDDY_OK)
        free(c);
    return st;
}

eddy_status eddy_rstore_model_position(eddy_rstore *store, const char *feed_id,
                                       eddy_rmodel_position_fn done, void *user, eddy_error *err) {
    if (!done)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "done is NULL");
    return model_read(store, feed_id, EDDY__MODEL_POSITION, NULL, NULL, NULL, done, user, err);
}

static eddy_status read_items(eddy_rstore *store, const char *feed_id, eddy__model_read what,
                              const char *key, eddy_model_item_fn each, eddy_rstore_done_fn done,
                              void *user, eddy_error *err) {
    if (!each || !done)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "each or done is NULL");
    return model_read(store, feed_id, what, key, each, done, NULL, user, err);
}

eddy_status eddy_rstore_model_hash(eddy_rstore *store, const char *feed_id, const char *key,
                                   eddy_model_item_fn each, eddy_rstore_done_fn done, void *user,
                                   eddy_error *err) {
    return read_items(store, feed_id, EDDY__MODEL_HASH, key, each, done, user, err);
}

eddy_status eddy_rstore_model_set(eddy_rstore *store, const char *feed_id, const char *key,
                                  eddy_model_item_fn each, eddy_rstore_done_fn done, void *user,
                                  eddy_error *err) {
    return read_items(store, feed_id, EDDY__MODEL_SET, key, each, done, user, err);
}

eddy_status eddy_rstore_model_keys(eddy_rstore *store, const char *feed_id, eddy_model_item_fn each,
                                   eddy_rstore_done_fn done, void *user, eddy_error *err) {
    return read_items(store, feed_id, EDDY__MODEL_KEYS, NULL, each, done, user, err);
}
