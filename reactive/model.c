/* SPDX-License-Identifier: BSD-3-Clause */
/* Read models kept in Redis on the reactive front end: the commit a feed sends and the model's
 * reads, each one command through the rstore (store_call.h) completed on the loop. The core
 * (src/store/model.c) builds and reads them. */
#include <stdio.h>
#include <stdlib.h>

#include "eddy/rmodel.h"
#include "error.h"
#include "store/model.h"
#include "store_call.h"

/* What a call waits with: its callbacks, and for the reads what the reply means. */
typedef struct mcall {
    const char *ns; /* the store's */
    char feed_id[129];
    eddy__model_read what;
    eddy_model_item_fn each;
    eddy_rstore_done_fn done;
    eddy_rmodel_position_fn on_position;
    void *user;
} mcall;

static eddy_status send(eddy_rstore *store, eddy__cmdlist *cmds, eddy__rstore_reply_fn fn, mcall *c,
                        eddy_error *err) {
    eddy_status st = eddy__rstore_call(store, cmds, fn, c, err);
    if (st != EDDY_OK)
        free(c);
    eddy__cmdlist_reset(cmds);
    return st;
}

static void committed(eddy_status st, const redisReply *r, const eddy_error *err, void *user) {
    mcall *c = user;
    eddy_error e = {0};
    if (st == EDDY_OK)
        st = eddy__model_commit_result(r, NULL, &e);
    else if (err)
        e = *err;
    c->done(st, st == EDDY_OK ? NULL : &e, c->user);
    free(c);
}

eddy_status eddy__rmodel_commit(eddy_rstore *store, const eddy__model *m, const eddy_writes *w,
                                bool page, eddy_rstore_done_fn done, void *user, eddy_error *err) {
    mcall *c = calloc(1, sizeof(*c));
    if (!c)
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    c->done = done;
    c->user = user;
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    eddy_status st = eddy__model_commit_cmd(m, w, page, &cmds, err);
    if (st != EDDY_OK) {
        free(c);
        eddy__cmdlist_reset(&cmds);
        return st;
    }
    return send(store, &cmds, committed, c, err);
}

static void position_read(eddy_status st, const redisReply *r, const eddy_error *err, void *user) {
    mcall *c = user;
    eddy_error e = {0};
    long long pos = 0;
    if (st == EDDY_OK)
        st = eddy__model_position_result(r, &pos, &e);
    else if (err)
        e = *err;
    c->on_position(st, st == EDDY_OK ? pos : 0, st == EDDY_OK ? NULL : &e, c->user);
    free(c);
}

/* A new call for a read of feed_id's model (the feed id is checked by the command's builder). */
static eddy_status mcall_new(eddy_rstore *store, const char *feed_id, eddy__model_read what,
                             mcall **out, eddy_error *err) {
    if (!store)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "store is NULL");
    mcall *c = calloc(1, sizeof(*c));
    if (!c)
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    c->ns = eddy__rstore_ns(store);
    c->what = what;
    if (feed_id)
        snprintf(c->feed_id, sizeof(c->feed_id), "%s", feed_id);
    *out = c;
    return EDDY_OK;
}

/* Sends c's read (c->what) of feed_id's model, key for a hash or a set; frees c when refused. */
static eddy_status send_read(eddy_rstore *store, mcall *c, const char *feed_id, const char *key,
                             eddy__rstore_reply_fn fn, eddy_error *err) {
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    eddy_status st = eddy__model_read_cmd(c->ns, feed_id, c->what, key, &cmds, err);
    if (st != EDDY_OK) {
        free(c);
        return st;
    }
    return send(store, &cmds, fn, c, err);
}

eddy_status eddy_rstore_model_position(eddy_rstore *store, const char *feed_id,
                                       eddy_rmodel_position_fn done, void *user, eddy_error *err) {
    if (!done)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "done is NULL");
    mcall *c = NULL;
    eddy_status st = mcall_new(store, feed_id, EDDY__MODEL_POSITION, &c, err);
    if (st != EDDY_OK)
        return st;
    c->on_position = done;
    c->user = user;
    return send_read(store, c, feed_id, NULL, position_read, err);
}

static void items_read(eddy_status st, const redisReply *r, const eddy_error *err, void *user) {
    mcall *c = user;
    eddy_error e = {0};
    if (st == EDDY_OK)
        st = eddy__model_items_result(c->ns, c->feed_id, c->what, r, c->each, c->user, &e);
    else if (err)
        e = *err;
    c->done(st, st == EDDY_OK ? NULL : &e, c->user);
    free(c);
}

static eddy_status read_items(eddy_rstore *store, const char *feed_id, eddy__model_read what,
                              const char *key, eddy_model_item_fn each, eddy_rstore_done_fn done,
                              void *user, eddy_error *err) {
    if (!each || !done)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "each or done is NULL");
    mcall *c = NULL;
    eddy_status st = mcall_new(store, feed_id, what, &c, err);
    if (st != EDDY_OK)
        return st;
    c->each = each;
    c->done = done;
    c->user = user;
    return send_read(store, c, feed_id, key, items_read, err);
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
