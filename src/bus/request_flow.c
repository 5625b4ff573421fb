/* SPDX-License-Identifier: BSD-3-Clause */
/* A request's sequence; see request_flow.h. The table (requests.c) decides who ends a
 * request: every step that ends one here goes through eddy__requests_unsent, and only when
 * that finds it still waiting is it this flow's to end. */
#include "bus/request_flow.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"

/* Both kinds of request; f->is_gather (and f->gather) set by the caller beforehand. */
static eddy_status begin(eddy__request_flow *f, const eddy__request_ctx *ctx,
                         const eddy_request_opts *opts, const char *subject, const eddy_event *ev,
                         void *waiter, long long now_ms, eddy_error *err) {
    eddy__cmdlist_init(&f->ask);
    f->requests = ctx->requests;
    f->cache = ctx->cache;
    f->publisher = ctx->publisher;
    eddy_status st = eddy__request_begin(ctx->requests, ctx->publisher, opts, ctx->cancelled,
                                         ctx->active, ctx->caps, subject, ev, ctx->reply_to, now_ms,
                                         f->is_gather, &f->out, err);
    if (st != EDDY_OK) {
        eddy__gather_reset(&f->gather);
        return st;
    }
    bool cached = false;
    f->asked_ms = now_ms;
    if (!(f->subject = strdup(subject)))
        st = EDDY_ERR_NOMEM;
    if (st == EDDY_OK)
        st = eddy__registry_ask_kind(ctx->cache, ctx->ns, subject, f->is_gather ? 'g' : 0, now_ms,
                                     &f->ask, 0, &cached);
    /* In the table before anything is sent: the reply may beat the send's own answer, and a
     * deadline, cancel or stop may end it while a step is out. */
    if (st == EDDY_OK)
        st = eddy__requests_add_gather(ctx->requests, f->out.id, waiter, f->out.row,
                                       f->out.deadline_ms, f->is_gather ? &f->gather : NULL);
    if (st != EDDY_OK) {
        eddy__request_flow_reset(f);
        return eddy__fail(err, st, "out of memory");
    }
    f->step = cached ? EDDY__REQ_SEND : EDDY__REQ_ASK;
    return EDDY_OK;
}

eddy_status eddy__request_flow_begin(eddy__request_flow *f, const eddy__request_ctx *ctx,
                                     const eddy_request_opts *opts, const char *subject,
                                     const eddy_event *ev, void *waiter, long long now_ms,
                                     eddy_error *err) {
    memset(f, 0, sizeof(*f));
    return begin(f, ctx, opts, subject, ev, waiter, now_ms, err);
}

eddy_status eddy__request_flow_begin_gather(eddy__request_flow *f, const eddy__request_ctx *ctx,
                                            const eddy_gather_opts *opts, bool each,
                                            const char *subject, const eddy_event *ev, void *waiter,
                                            long long now_ms, eddy_error *err) {
    memset(f, 0, sizeof(*f));
    f->is_gather = true;
    eddy_request_opts ropts;
    bool has;
    if (eddy__gather_init(&f->gather, opts, each, &ropts, &has) != EDDY_OK) {
        eddy__gather_reset(&f->gather);
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    }
    return begin(f, ctx, has ? &ropts : NULL, subject, ev, waiter, now_ms, err);
}

const eddy__cmdlist *eddy__request_flow_cmds(const eddy__request_flow *f) {
    return f->step == EDDY__REQ_ASK ? &f->ask : &f->out.cmds;
}

/* Ends the request here with st, if it is still this flow's to end. */
static eddy__req_step end(eddy__request_flow *f, eddy_status st, const eddy_error *err) {
    if (!eddy__requests_unsent(f->requests, f->out.id))
        return f->step = EDDY__REQ_ENDED;
    if (st == EDDY_ERR_NO_RESPONDERS) {
        eddy__requests_count_no_responders(f->requests, f->out.row);
        if (f->is_gather)
            eddy__fail(&f->err, st, "no gather responder is subscribed to '%s'", f->subject);
        else
            eddy__fail(&f->err, st, "nothing is subscribed to '%s'", f->subject);
    } else if (err && err->status == st) {
        f->err = *err;
    } else {
        eddy__fail(&f->err, st, "request %s could not be sent", f->out.id);
    }
    f->st = st;
    return f->step = EDDY__REQ_END;
}

/* A step Redis did not answer in time (EDDY_ERR_TIMEOUT: written, outcome unknown) leaves the
 * request to its deadline, as if the answer were late: the entry may have gone out and its
 * reply may still come, and the outcome must not depend on which of two timers fired first.
 * An entry is counted Sent now; a question is counted as the deadline counts it. */
static eddy__req_step unanswered(eddy__request_flow *f) {
    if (!eddy__requests_waiting(f->requests, f->out.id))
        return f->step = EDDY__REQ_ENDED;
    if (f->step == EDDY__REQ_SEND)
        eddy__requests_sent(f->requests, f->out.id);
    return f->step = EDDY__REQ_WAIT;
}

static eddy__req_step asked(eddy__request_flow *f, eddy_status st, redisReply **replies,
                            const eddy_error *err) {
    bool any = false;
    eddy_error e;
    if (st == EDDY_OK) {
        redisReply *reply = replies[0];
        replies[0] = NULL;
        st = eddy__registry_answer_kind(f->cache, reply, f->subject, f->is_gather ? 'g' : 0,
                                        f->asked_ms, &any, &e);
        err = &e;
    } else {
        eddy__registry_unanswered(f->cache);
        if (st == EDDY_ERR_TIMEOUT)
            return unanswered(f);
    }
    if (st == EDDY_OK && !any)
        st = EDDY_ERR_NO_RESPONDERS;
    if (st != EDDY_OK)
        return end(f, st, err);
    /* Ended while the question was out: nothing goes out after that. */
    if (!eddy__requests_waiting(f->requests, f->out.id))
        return f->step = EDDY__REQ_ENDED;
    return f->step = EDDY__REQ_SEND;
}

static eddy__req_step sent(eddy__request_flow *f, eddy_status st, redisReply **replies,
                           const eddy_error *err) {
    eddy_error e;
    if (st == EDDY_OK) {
        size_t next;
        st = eddy__publish_result(f->publisher, &f->out.cmds, 0, replies, &next, NULL, 0, &e);
        err = &e;
    }
    if (st == EDDY_ERR_TIMEOUT) /* also a WAIT for replicas that fell short: it is stored */
        return unanswered(f);
    if (st != EDDY_OK)
        return end(f, st, err);
    /* Counted even when the request ended meanwhile: it went out. */
    eddy__requests_sent(f->requests, f->out.id);
    return f->step = EDDY__REQ_WAIT;
}

eddy__req_step eddy__request_flow_feed(eddy__request_flow *f, eddy_status st, redisReply **replies,
                                       const eddy_error *err) {
    switch (f->step) {
    case EDDY__REQ_ASK:
        return asked(f, st, replies, err);
    case EDDY__REQ_SEND:
        return sent(f, st, replies, err);
    default:
        return f->step;
    }
}

eddy_status eddy__request_flow_outcome(const eddy__request_flow *f, eddy_status st,
                                       eddy_error *err) {
    const char *id = f->out.id;
    if (f->is_gather && f->gather.ended)
        st = f->gather.outcome;
    if (st == EDDY_OK && f->is_gather && f->gather.dropped > 0)
        /* Answered, and counted so, but the caller does not have every reply. */
        st = eddy__fail(err, EDDY_ERR_NOMEM,
                        "request %s: %zu of its %zu replies could not be kept (out of memory)", id,
                        f->gather.dropped, f->gather.came);
    else if (st == EDDY_ERR_NO_REPLY && f->is_gather)
        eddy__fail(err, st,
                   "request %s: %zu replies before its deadline, cancel or stop; %zu asked", id,
                   f->gather.came, f->gather.max);
    else if (st == EDDY_ERR_RESPONDER_FAILED && f->is_gather)
        eddy__fail(err, st, "a responder failed on request %s", id);
    else if (st == EDDY_ERR_NO_REPLY)
        eddy__fail(err, st, "no reply to request %s before its deadline, cancel or stop", id);
    else if (st == EDDY_ERR_RESPONDER_FAILED)
        eddy__fail(err, st, "the responder failed on request %s", id);
    return st;
}

void eddy__request_flow_reset(eddy__request_flow *f) {
    eddy__gather_reset(&f->gather);
    eddy__request_out_reset(&f->out);
    eddy__cmdlist_reset(&f->ask);
    free(f->subject);
    f->subject = NULL;
}

eddy_status eddy__request_value_event(const eddy__settings *s, const eddy_request_opts *opts,
                                      bool cancelled, bool active, unsigned caps, const char *type,
                                      eddy_pack_fn pack, void *user, long long now_ms,
                                      eddy_event **out, eddy_error *err) {
    *out = NULL;
    eddy_status st = eddy__request_precheck(opts, cancelled, active, caps, NULL, now_ms, err);
    return st == EDDY_OK ? eddy__publish_value_event(s, type, pack, user, out, err) : st;
}
