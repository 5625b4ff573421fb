/* SPDX-License-Identifier: BSD-3-Clause */
/* Requests on the reactive bus: the core runs the sequence (request_flow.h: checks, table,
 * registry, counting) and matches replies; this file sends each step the flow asks for on the
 * publishing connection (pipelined with every other op there) and completes the callback from
 * the loop: on the matching reply (control.c), on its deadline (one ev_timer for every
 * request, armed at the table's earliest deadline), on cancel, or when the bus stops or is
 * freed.
 *
 * Invariants:
 * - A request is in the core's table from the call that accepted it until exactly one of
 *   reply, deadline, cancel, stop/free, "no responders" or a failed step takes it out; whoever
 *   takes it out completes it, so its callback runs exactly once.
 * - Refusals (the core's checks, out of memory before anything was queued) are returned by
 *   the call and run no callback; every other outcome is delivered from the loop, never inside
 *   the call, except cancel's and teardown's, as reactive.h says.
 * - A scatter-gather request (eddy_rbus_request_all) is the same object in gather mode: the
 *   flow gathers its replies (gather.h); the control loop hands each to on_reply as it comes
 *   (eddy__rreq_gather_reply), pinning the object while it does (a callback may end it), and
 *   its completion hands over the list with the core's outcome.
 * - Memory per request in flight: the request object (with its flow's commands) and one table
 *   entry. A request object outlives its completion only while an op of the publishing
 *   connection still points at it; that op frees it.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "bus/bus_stats.h"
#include "bus/request_flow.h"
#include "error.h"
#include "internal.h"
#include "util/cancel.h"

struct eddy_rrequest {
    eddy_rbus *bus;
    eddy__request_flow flow; /* the sequence (request_flow.h): id, row, deadline, commands */
    eddy_reply_fn done;
    eddy_gather_reply_fn on_reply; /* a scatter-gather request (flow.is_gather): each reply */
    eddy_gather_fn gathered;       /* ... and its completion */
    void *user;
    bool completed;             /* its callback ran (or is running) */
    unsigned ops;               /* ops on the publishing connection that point at it */
    unsigned pins;              /* replies of a gather the control loop is handing over */
    eddy_cancel *cancel;        /* opts->cancel, while it is in the table */
    eddy__cancel_reg on_cancel; /* on it */
};

typedef struct eddy_rrequest rreq;

static void rreq_free(rreq *q) {
    q->bus->nrequests--;
    eddy__request_flow_reset(&q->flow);
    free(q);
}

/* Runs the callback (ownership of reply passes to it). The request left the table. */
static void complete(rreq *q, eddy_status st, eddy_event *reply) {
    q->completed = true;
    eddy__cancel_detach(q->cancel, &q->on_cancel);
    q->cancel = NULL;
    eddy_reply_fn done = q->done;
    eddy_gather_fn gathered = q->gathered;
    bool is_gather = q->flow.is_gather;
    st = eddy__request_flow_outcome(&q->flow, st, NULL);
    eddy_replies *replies = is_gather ? eddy__gather_take(&q->flow.gather) : NULL; /* NULL: OOM */
    void *user = q->user;
    if (q->ops == 0 && q->pins == 0)
        rreq_free(q);
    if (is_gather) {
        eddy_event_free(reply);
        if (gathered)
            gathered(st, replies, user);
        else
            eddy_replies_free(replies);
    } else if (done) {
        done(st, reply, user);
    } else {
        eddy_event_free(reply);
    }
}

void eddy__rreq_complete_waiter(void *waiter, eddy_status st, eddy_event *reply) {
    complete(waiter, st, reply);
}

void eddy__rreq_pin(void *waiter) { ((rreq *)waiter)->pins++; }

void eddy__rreq_gather_reply(const eddy__reply_done *d) {
    rreq *q = d->waiter;
    /* A callback before this one may have ended it (a cancel): then nothing is told. */
    if (!q->completed && q->on_reply)
        q->on_reply(d->last_st, d->reply, q->user);
    if (!q->completed && !d->more)
        complete(q, d->st, NULL);
    q->pins--;
    if (q->completed && q->ops == 0 && q->pins == 0)
        rreq_free(q);
}

/* ---- deadlines ------------------------------------------------------------------------------ */

/* Arms the one timer at the earliest deadline in the table. */
static void arm(eddy_rbus *bus) {
    long long next = eddy__requests_next_deadline(bus->core.requests);
    if (next == bus->deadline_at)
        return;
    bus->deadline_at = next;
    if (next < 0) {
        ev_timer_stop(bus->loop, &bus->deadline);
        return;
    }
    long long left = next - eddy_now_ms();
    eddy__rbus_timer_after(bus, &bus->deadline, left > 0 ? left : 0);
}

void eddy__rreq_expire(eddy_rbus *bus) {
    long long now = eddy_now_ms();
    void *w;
    while ((w = eddy__requests_pop_expired(bus->core.requests, now)))
        complete(w, EDDY_ERR_NO_REPLY, NULL);
    arm(bus);
}

static void on_deadline(struct ev_loop *loop, ev_timer *w, int revents) {
    eddy_rbus *bus = w->data;
    eddy__rbus_enter(bus);
    bus->deadline_at = -1; /* fired: not armed any more */
    eddy__rreq_expire(bus);
    eddy__rbus_leave(bus);
}

void eddy__rreq_setup(eddy_rbus *bus) {
    ev_init(&bus->deadline, on_deadline);
    bus->deadline.data = bus;
    bus->deadline_at = -1;
}

static void abandoned(void *waiter, void *user) { complete(waiter, EDDY_ERR_NO_REPLY, NULL); }

void eddy__rreq_abandon_all(eddy_rbus *bus) {
    ev_timer_stop(bus->loop, &bus->deadline);
    bus->deadline_at = -1;
    eddy__requests_abandon_all(bus->core.requests, abandoned, NULL);
}

/* ---- sending ---------------------------------------------------------------------------- */

static void stepped(eddy_rbus *bus, rpub *p, eddy_status st, const eddy_error *err);

/* Queues the flow's step (ASK or SEND) on the publishing connection. */
static eddy_status send_step(eddy_rbus *bus, rreq *q) {
    rpub *p = eddy__rpub_new(stepped, q);
    if (!p)
        return EDDY_ERR_NOMEM;
    p->ext = eddy__request_flow_cmds(&q->flow); /* q outlives its ops */
    eddy_status st = eddy__rpub_submit(bus, p);
    if (st != EDDY_OK) {
        eddy__rpub_free(p);
        return st;
    }
    q->ops++;
    return EDDY_OK;
}

/* Does what the flow says next, from the loop: send a step, or complete q (END). */
static void advance(eddy_rbus *bus, rreq *q, eddy__req_step step) {
    if (step == EDDY__REQ_ASK || step == EDDY__REQ_SEND) {
        eddy_status st = send_step(bus, q);
        if (st == EDDY_OK)
            return;
        redisReply *none[EDDY__REQUEST_MAX_CMDS] = {NULL, NULL};
        step = eddy__request_flow_feed(&q->flow, st, none, NULL);
    }
    if (step == EDDY__REQ_END)
        complete(q, q->flow.st, NULL);
    /* WAIT: the reply stream, the deadline or a cancel ends it; ENDED: it was completed */
}

static void stepped(eddy_rbus *bus, rpub *p, eddy_status st, const eddy_error *err) {
    rreq *q = p->user;
    q->ops--;
    /* The registry's answer is taken by the flow: keep it (the last reply is borrowed). */
    if (st == EDDY_OK && q->flow.step == EDDY__REQ_ASK &&
        !(p->replies[0] = eddy__rconn_keep(bus->pub_conn, p->replies[0])))
        st = EDDY_ERR_NOMEM;
    /* Fed even when q already ended: a written entry still counts Sent (the core knows). */
    eddy__req_step step = eddy__request_flow_feed(&q->flow, st, p->replies, err);
    if (q->completed) {
        if (q->ops == 0 && q->pins == 0)
            rreq_free(q);
        return;
    }
    advance(bus, q, step);
}

/* ---- interface ---------------------------------------------------------------------------- */

/* opts->cancel fired (on the loop's thread): as eddy_rrequest_cancel. The token already took
 * the registration off. */
static void token_fired(eddy__cancel_reg *r) {
    rreq *q = (rreq *)((char *)r - offsetof(rreq, on_cancel));
    q->cancel = NULL;
    eddy_rrequest_cancel(q);
}

/* What both kinds of request are given: a single request's options and callback, or a
 * gather's (its options widened by the flow). */
typedef struct req_args {
    const eddy_request_opts *opts;
    eddy_reply_fn done;
    const eddy_gather_opts *gopts;
    bool gather;
    eddy_gather_reply_fn on_reply;
    eddy_gather_fn gathered;
} req_args;

static eddy_status request(eddy_rbus *bus, const char *subject, const eddy_event *ev,
                           const req_args *a, void *user, eddy_rrequest **handle, eddy_error *err) {
    if (handle)
        *handle = NULL;
    if (!bus)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "bus is NULL");
    if (bus->freeing)
        return eddy__fail(err, EDDY_ERR_CLOSED, "the bus is being freed");
    rreq *q = calloc(1, sizeof(*q));
    if (!q)
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    q->bus = bus;
    q->done = a->done;
    q->on_reply = a->on_reply;
    q->gathered = a->gathered;
    q->user = user;
    eddy_request_opts gathering;
    const eddy_request_opts *opts =
        a->gather ? eddy__gather_request_opts(a->gopts, &gathering) : a->opts;
    eddy_cancel *cancel = opts ? opts->cancel : NULL;
    bool cancelled = eddy_cancel_fired(cancel);
    eddy__request_ctx ctx =
        eddy__bus_core_request_ctx(&bus->core, &bus->s, bus->active, cancelled,
                                   bus->ctl ? eddy__rctl_inbox_key(bus->ctl) : NULL);
    eddy__rbus_enter(bus);
    eddy_status st =
        a->gather
            ? eddy__request_flow_begin_gather(&q->flow, &ctx, a->gopts, a->on_reply != NULL,
                                              subject, ev, q, eddy_now_ms(), err)
            : eddy__request_flow_begin(&q->flow, &ctx, a->opts, subject, ev, q, eddy_now_ms(), err);
    if (st != EDDY_OK) {
        free(q);
        eddy__rbus_leave(bus);
        return st;
    }
    bus->nrequests++;
    if ((st = send_step(bus, q)) != EDDY_OK) {
        /* Nothing went out: the flow takes it back (not counted); refused from the call. */
        redisReply *none[EDDY__REQUEST_MAX_CMDS] = {NULL, NULL};
        eddy__request_flow_feed(&q->flow, st, none, NULL);
        rreq_free(q);
        eddy__fail(err, st, "out of memory");
    } else {
        if (cancel) {
            q->cancel = cancel;
            q->on_cancel = (eddy__cancel_reg){NULL, NULL, token_fired, NULL};
            eddy__cancel_attach(q->cancel, &q->on_cancel);
        }
        arm(bus);
        if (handle)
            *handle = q;
    }
    eddy__rbus_leave(bus);
    return st;
}

eddy_status eddy_rbus_request(eddy_rbus *bus, const char *subject, const eddy_event *ev,
                              const eddy_request_opts *opts, eddy_reply_fn done, void *user,
                              eddy_rrequest **handle, eddy_error *err) {
    req_args a = {.opts = opts, .done = done};
    return request(bus, subject, ev, &a, user, handle, err);
}

eddy_status eddy_rbus_request_all(eddy_rbus *bus, const char *subject, const eddy_event *ev,
                                  const eddy_gather_opts *opts, eddy_gather_reply_fn on_reply,
                                  eddy_gather_fn done, void *user, eddy_error *err) {
    req_args a = {.gopts = opts, .gather = true, .on_reply = on_reply, .gathered = done};
    return request(bus, subject, ev, &a, user, NULL, err);
}

eddy_status eddy_rbus_request_value(eddy_rbus *bus, const char *subject, const char *type,
                                    eddy_pack_fn pack, void *pack_user,
                                    const eddy_request_opts *opts, eddy_reply_fn done, void *user,
                                    eddy_rrequest **handle, eddy_error *err) {
    if (handle)
        *handle = NULL;
    if (!bus)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "bus is NULL");
    if (bus->freeing)
        return eddy__fail(err, EDDY_ERR_CLOSED, "the bus is being freed");
    eddy_event *ev;
    eddy_status st = eddy__request_value_event(
        &bus->s, opts, opts && eddy_cancel_fired(opts->cancel), bus->active, bus->core.caps, type,
        pack, pack_user, eddy_now_ms(), &ev, err);
    if (st == EDDY_OK)
        st = eddy_rbus_request(bus, subject, ev, opts, done, user, handle, err);
    eddy_event_free(ev);
    return st;
}

void eddy_rrequest_cancel(eddy_rrequest *q) {
    if (!q || q->completed)
        return;
    eddy_rbus *bus = q->bus;
    eddy__rbus_enter(bus);
    if (eddy__requests_give_up(bus->core.requests, q->flow.out.id)) {
        complete(q, EDDY_ERR_NO_REPLY, NULL);
        arm(bus);
    }
    eddy__rbus_leave(bus);
}

eddy_status eddy_rbus_request_stats(eddy_rbus *bus, const char *name, eddy_request_stats *out) {
    return bus ? eddy__bus_request_stats(bus->core.requests, name, out) : EDDY_ERR_INVALID_ARGUMENT;
}

void eddy__rbus_request_counts(eddy_rbus *bus, size_t *in_table, size_t *alive, size_t *ops) {
    *in_table = eddy__requests_in_flight(bus->core.requests);
    *alive = bus->nrequests;
    *ops = eddy__mux_queued(&bus->pub_mux);
}
