/* SPDX-License-Identifier: BSD-3-Clause */
/* One event-store request, for both front ends (blocking/store.c, reactive/store.c): what it
 * asks (its kind and arguments), its commands with the store's rules (store_op.h), and the
 * reading of its replies into one result, whatever its kind. A front end builds a request with
 * one of the builders, sends op.cmds, hands the replies to eddy__store_req_done (and sends again
 * when it says so), then completes its caller from the result in one place.
 *
 * Invariants:
 * - Every builder leaves the request safe to eddy__store_req_reset, whether it succeeded or not.
 * - The result (st, at, more, exists, found) is the request's own until the next
 *   eddy__store_req_done (eddy__store_req_reset keeps it, but for an owned buf); `at` starts at the `after` a read was asked for, so a read that failed
 *   before its replies came still says where to resume.
 * - An append's or a head's `at` is 0 unless st is EDDY_OK.
 *
 * Thread: none of its own; one thread drives a request at a time. */
#ifndef EDDY_SRC_STORE_STORE_REQ_H
#define EDDY_SRC_STORE_STORE_REQ_H

#include <hiredis/hiredis.h>
#include <stdbool.h>

#include "eddy/store.h"
#include "log.h"
#include "store/store.h"
#include "store/store_op.h"

typedef enum eddy__store_req_kind {
    EDDY__SREQ_LOAD, /* the function library, on a new connection */
    EDDY__SREQ_APPEND,
    EDDY__SREQ_READ_ALL,
    EDDY__SREQ_READ_STREAM,
    EDDY__SREQ_HEAD,
    EDDY__SREQ_CKPT, /* ckop says which */
    EDDY__SREQ_CALL  /* one idempotent command whose reply `read` reads */
} eddy__store_req_kind;

/* Reads a call's reply (borrowed for the call). */
typedef eddy_status (*eddy__store_reply_fn)(const redisReply *r, void *user, eddy_error *err);

typedef struct eddy__store_req {
    eddy__store_req_kind kind;
    eddy__store_op op; /* its commands, and what a loss or a reply means */
    /* what was asked */
    eddy__ckpt_op ckop;
    char *stream_id; /* a stream read's (owned) */
    bool whole;      /* a stream read's: page after page to its end */
    long long after; /* a read's position or version */
    const eddy_filter *filter;
    eddy_stored_fn each; /* a read's; each_user is its user */
    void *each_user;
    eddy__store_reply_fn read; /* a call's; read_user is its user */
    void *read_user;
    char *buf; /* a checkpoint read's; owned when own_buf (sized to the marker) */
    size_t size;
    bool own_buf;
    /* the result */
    eddy_status st;
    long long at; /* the new version, the head, a page's next position, a stream's last version */
    bool more;    /* a stream page was full */
    bool exists;  /* a checkpoint exists */
    bool found;   /* a checkpoint read found one, in buf */
} eddy__store_req;

/* The builders: each checks what it is given and builds the commands (store.h), failing with
 * the builders' statuses (EDDY_ERR_NOMEM among them). Borrowed: filter, the callbacks' users;
 * copied: ids, values, events. */
eddy_status eddy__store_req_load(eddy__store_req *q, eddy_error *err);
/* The append's deadline for a cluster's refusals is the settings' command timeout from now. */
eddy_status eddy__store_req_append(eddy__store_req *q, const eddy__store *core,
                                   const char *stream_id, const eddy_event *const *evs, size_t n,
                                   const eddy_append_opts *opts, eddy_error *err);
eddy_status eddy__store_req_read_all(eddy__store_req *q, const eddy__store *core,
                                     long long after_position, size_t max_entries,
                                     const eddy_filter *filter, eddy_stored_fn each, void *user,
                                     eddy_error *err);
/* whole: the stream's every page, in one request (`at` the last version delivered); else one
 * page (`more` when it was full). */
eddy_status eddy__store_req_read_stream(eddy__store_req *q, const eddy__store *core,
                                        const char *stream_id, long long after_version, bool whole,
                                        eddy_stored_fn each, void *user, eddy_error *err);
eddy_status eddy__store_req_head(eddy__store_req *q, const eddy__store *core, eddy_error *err);
/* value: SAVE's only. buf (size bytes) receives a READ's marker; NULL: one sized to the marker,
 * the request's. */
eddy_status eddy__store_req_ckpt(eddy__store_req *q, const eddy__store *core, eddy__ckpt_op op,
                                 const char *feed_id, const char *value, char *buf, size_t size,
                                 eddy_error *err);
/* Moves *cmds (one command) in; *cmds is left empty. */
void eddy__store_req_call(eddy__store_req *q, eddy__cmdlist *cmds, eddy__store_reply_fn read,
                          void *user);
void eddy__store_req_reset(eddy__store_req *q);

/* Reads the replies of q's commands (one per command, borrowed) into q's result: st, and err
 * (may be NULL) on a failure. A read's entries go to its `each` and a call's reply to its `read`
 * from here. True: send op.cmds, and feed their replies here again: either the server had lost
 * the library and they now load it in front of the same commands, or a whole stream's read goes
 * on with its next page (which may be sent again after a loss, as the first could). The result
 * is then not the request's last. */
bool eddy__store_req_done(eddy__store_req *q, const eddy__store *core, redisReply **replies,
                          const eddy__logger *log, eddy_error *err);

#endif
