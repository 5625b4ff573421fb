/* SPDX-License-Identifier: BSD-3-Clause */
/* One event-store request and the reading of its replies, for both front ends: see
 * store_req.h. */
#include "store/store_req.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "link/library.h"
#include "link/link_drive.h"
#include "timing.h"

static void req_init(eddy__store_req *q, eddy__store_req_kind kind) {
    memset(q, 0, sizeof(*q));
    q->kind = kind;
    eddy__store_op_init(&q->op, kind == EDDY__SREQ_APPEND, 0);
}

void eddy__store_req_reset(eddy__store_req *q) {
    eddy__store_op_reset(&q->op);
    free(q->stream_id);
    q->stream_id = NULL;
    if (q->own_buf)
        free(q->buf);
    q->buf = NULL;
    q->own_buf = false;
}

eddy_status eddy__store_req_load(eddy__store_req *q, eddy_error *err) {
    req_init(q, EDDY__SREQ_LOAD);
    if (eddy__library_load_cmds(&q->op.cmds) != EDDY_OK)
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    return EDDY_OK;
}

eddy_status eddy__store_req_append(eddy__store_req *q, const eddy__store *core,
                                   const char *stream_id, const eddy_event *const *evs, size_t n,
                                   const eddy_append_opts *opts, eddy_error *err) {
    req_init(q, EDDY__SREQ_APPEND);
    q->op.until = eddy__link_call_deadline(eddy__store_settings(core), eddy__mono_ms(), 0, 0);
    return eddy__store_append_prepare(core, stream_id, evs, n, opts, &q->op.cmds, err);
}

eddy_status eddy__store_req_read_all(eddy__store_req *q, const eddy__store *core,
                                     long long after_position, size_t max_entries,
                                     const eddy_filter *filter, eddy_stored_fn each, void *user,
                                     eddy_error *err) {
    req_init(q, EDDY__SREQ_READ_ALL);
    q->after = q->at = after_position;
    q->filter = filter;
    q->each = each;
    q->each_user = user;
    return eddy__store_read_all_cmd(core, after_position, max_entries, &q->op.cmds, err);
}

eddy_status eddy__store_req_read_stream(eddy__store_req *q, const eddy__store *core,
                                        const char *stream_id, long long after_version, bool whole,
                                        eddy_stored_fn each, void *user, eddy_error *err) {
    req_init(q, EDDY__SREQ_READ_STREAM);
    q->whole = whole;
    q->after = q->at = after_version;
    q->each = each;
    q->each_user = user;
    eddy_status st = eddy__store_read_stream_cmd(core, stream_id, after_version, &q->op.cmds, err);
    if (st == EDDY_OK && !(q->stream_id = strdup(stream_id)))
        st = eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    return st;
}

eddy_status eddy__store_req_head(eddy__store_req *q, const eddy__store *core, eddy_error *err) {
    req_init(q, EDDY__SREQ_HEAD);
    if (eddy__store_head_cmd(core, &q->op.cmds) != EDDY_OK)
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    return EDDY_OK;
}

eddy_status eddy__store_req_ckpt(eddy__store_req *q, const eddy__store *core, eddy__ckpt_op op,
                                 const char *feed_id, const char *value, char *buf, size_t size,
                                 eddy_error *err) {
    req_init(q, EDDY__SREQ_CKPT);
    q->ckop = op;
    q->buf = buf;
    q->size = size;
    return eddy__ckpt_cmd(core, op, feed_id, value, &q->op.cmds, err);
}

void eddy__store_req_call(eddy__store_req *q, eddy__cmdlist *cmds, eddy__store_reply_fn read,
                          void *user) {
    req_init(q, EDDY__SREQ_CALL);
    q->op.cmds = *cmds;
    eddy__cmdlist_init(cmds);
    q->read = read;
    q->read_user = user;
}

/* A checkpoint's reply, by its operation. */
static eddy_status ckpt_done(eddy__store_req *q, const redisReply *r, eddy_error *err) {
    switch (q->ckop) {
    case EDDY__CKPT_EXISTS:
        return eddy__ckpt_exists_result(r, &q->exists, err);
    case EDDY__CKPT_READ:
        if (!q->buf) {
            q->size = r && r->type == REDIS_REPLY_STRING ? r->len + 1 : 1;
            if (!(q->buf = malloc(q->size)))
                return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
            q->own_buf = true;
        }
        return eddy__ckpt_read_result(r, q->buf, q->size, &q->found, err);
    case EDDY__CKPT_SAVE:
    case EDDY__CKPT_REMOVE:
        break;
    }
    return eddy__ckpt_write_result(r, q->ckop, err);
}

/* A whole stream's read goes on after a full page: the next page's command, with the retry
 * budget of a new op. */
static bool next_page(eddy__store_req *q, const eddy__store *core, eddy_error *err) {
    eddy__store_op_reset(&q->op);
    eddy__store_op_init(&q->op, false, 0);
    q->after = q->at;
    q->st = eddy__store_read_stream_cmd(core, q->stream_id, q->at, &q->op.cmds, err);
    return q->st == EDDY_OK;
}

bool eddy__store_req_done(eddy__store_req *q, const eddy__store *core, redisReply **replies,
                          const eddy__logger *log, eddy_error *err) {
    bool again = false;
    size_t at = 0;
    const redisReply *r = replies[0];
    switch (q->kind) {
    case EDDY__SREQ_LOAD:
        q->st = eddy__library_load_result(&q->op.cmds, 0, replies, NULL, err);
        break;
    case EDDY__SREQ_APPEND: /* at stays 0 unless it succeeds */
        q->at = 0;
        q->st = eddy__store_op_append_result(&q->op, replies, &q->at, &again, log, err);
        break;
    case EDDY__SREQ_CALL:
        q->st = eddy__store_op_call_result(&q->op, replies, &at, &again, log, err);
        if (q->st == EDDY_OK && !again)
            q->st = q->read(replies[at], q->read_user, err);
        break;
    case EDDY__SREQ_READ_ALL:
        q->st = eddy__store_read_all_page(core, r, q->filter, q->each, q->each_user, q->after,
                                          &q->at, err);
        break;
    case EDDY__SREQ_READ_STREAM:
        q->st = eddy__store_read_stream_page(core, q->stream_id, r, q->each, q->each_user, &q->at,
                                             &q->more, err);
        if (q->st == EDDY_OK && q->more && q->whole)
            again = next_page(q, core, err);
        break;
    case EDDY__SREQ_HEAD:
        q->at = 0;
        q->st = eddy__store_head_result(r, &q->at, err);
        break;
    case EDDY__SREQ_CKPT:
        q->st = ckpt_done(q, r, err);
        break;
    }
    return again;
}
