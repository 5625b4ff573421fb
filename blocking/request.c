/* SPDX-License-Identifier: BSD-3-Clause */
/* Requests on the blocking bus: the core runs the sequence (request_flow.h: checks, table,
 * registry, counting) and matches replies; this file sends each step on the publishing
 * connection (multiplexed: other threads' requests and publishes go out meanwhile) and makes
 * the calling thread wait, on a condition variable of its own, for the reply, the deadline, a
 * cancel token or the bus stopping.
 *
 * The entry's step (SEND) is sent without waiting for its acknowledgement (eddy__bpub_send):
 * the thread sleeps once, for the outcome. Whoever reads the acknowledgement feeds it to the
 * flow there and then (entry_done: the request counts Sent while it waits, as the rules say),
 * and wakes the thread early only when the entry failed; a failed step is fed by the thread
 * itself once it collected the step (eddy__bpub_finish), so the flow still sees every step's
 * answer, in order and from one thread at a time (the thread does not touch the flow while
 * the step is out, and entry_done runs before the step can be collected).
 *
 * A scatter-gather request (eddy_bus_request_all) runs the same way: the flow gathers its
 * replies (gather.h), and the thread waits for the table to take it out, as for one reply. */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bus/bus_stats.h"
#include "bus/request_flow.h"
#include "error.h"
#include "internal.h"
#include "link/link_drive.h"
#include "timing.h"
#include "util/cancel.h"

struct step_io;

typedef struct bwait {
    eddy__request_flow *flow; /* for entry_done */
    struct step_io *io;
    pthread_mutex_t m;
    pthread_cond_t cond;
    bool done;
    bool send_failed; /* the entry's commands failed: the flow must hear it now */
    eddy_status st;
    eddy_event *reply;
    eddy__cancel_reg on_cancel; /* while it waits, on its request's cancel token */
} bwait;

void eddy__bwait_complete(void *waiter, eddy_status st, eddy_event *reply) {
    bwait *w = waiter;
    pthread_mutex_lock(&w->m);
    w->done = true;
    w->st = st;
    w->reply = reply;
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->m);
}

/* Declared below: the SEND step's commands and replies. */
static bool entry_acked(bwait *w);

/* The entry's commands are answered (or failed): an answer is the flow's at once, a failure
 * wakes the thread, which feeds it after collecting the step. Runs on whichever thread read
 * the answer, before the step can be collected. */
static void entry_done(void *waiter, bool failed) {
    bwait *w = waiter;
    if (!failed && entry_acked(w))
        return;
    pthread_mutex_lock(&w->m);
    w->send_failed = true;
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->m);
}

/* A step's commands on the publishing connection, with their replies; `pending` while a SEND
 * step's acknowledgement is still to be collected (eddy__bpub_finish). */
typedef struct step_io {
    redisReply *replies[EDDY__REQUEST_MAX_CMDS];
    eddy__bmux_wait slot;
    bool pending;
    bool fed; /* entry_done fed the answer to the flow */
    eddy_status st;
    eddy_error err;
} step_io;

static void step_io_free(step_io *io) {
    for (size_t i = 0; i < EDDY__REQUEST_MAX_CMDS; i++)
        if (io->replies[i]) {
            freeReplyObject(io->replies[i]);
            io->replies[i] = NULL;
        }
}

/* Feeds the answer of the SEND step to the flow where it was read; true when the request now
 * waits for its outcome (else the thread must hear of it). */
static bool entry_acked(bwait *w) {
    w->io->fed = true;
    return eddy__request_flow_feed(w->flow, EDDY_OK, w->io->replies, NULL) == EDDY__REQ_WAIT;
}

/* Feeds the outcome of the step in io to the flow (unless entry_done did). */
static eddy__req_step feed_step(eddy_bus *bus, eddy__request_flow *f, step_io *io) {
    if (io->pending) {
        io->st = eddy__bpub_finish(bus, &io->slot, &io->err);
        io->pending = false;
    }
    eddy__req_step step =
        io->fed ? f->step : eddy__request_flow_feed(f, io->st, io->replies, &io->err);
    io->fed = false;
    step_io_free(io);
    return step;
}

/* Runs the flow's steps on the publishing connection until it waits or ends, each by the
 * request's deadline (wall-clock ms) when that comes before the command timeout. The SEND
 * step is left in flight in io (pending) for the caller to feed once it has waited. */
static eddy__req_step run_steps(eddy_bus *bus, eddy__request_flow *f, long long deadline, bwait *w,
                                step_io *io) {
    long long until = eddy__link_call_deadline(&bus->s, eddy__mono_ms(), deadline, eddy_now_ms());
    eddy__req_step step = f->step;
    while (step == EDDY__REQ_ASK || step == EDDY__REQ_SEND) {
        const eddy__cmdlist *cmds = eddy__request_flow_cmds(f);
        if (cmds->n > EDDY__REQUEST_MAX_CMDS)
            io->st = eddy__fail(&io->err, EDDY_ERR_INVALID_ARGUMENT, "too many commands");
        else if (step == EDDY__REQ_ASK)
            io->st = eddy__bpub_exec_until(bus, cmds, until, io->replies, &io->err);
        else if ((io->st = eddy__bpub_send(bus, cmds, until, io->replies, &io->slot, entry_done, w,
                                           &io->err)) == EDDY_OK) {
            io->pending = true;
            return EDDY__REQ_SEND;
        }
        step = feed_step(bus, f, io);
    }
    return step;
}

/* Waits for the outcome, or for the entry's commands to fail. The deadline is wall-clock (it
 * travels to the responder); the wait runs on the monotonic clock from the time left. */
static void wait_outcome(eddy_bus *bus, bwait *w, const char *id, long long deadline,
                         eddy_cancel *cancel) {
    long long mono_deadline = eddy__mono_ms() + (deadline - eddy_now_ms());
    struct timespec at = {(time_t)(mono_deadline / 1000), (long)(mono_deadline % 1000) * 1000000};
    bool timed_out = false;
    pthread_mutex_lock(&w->m);
    while (!w->done && !w->send_failed) {
        bool cancelled = eddy_cancel_fired(cancel);
        if (cancelled || timed_out) {
            pthread_mutex_unlock(&w->m);
            /* A gather may end well at its deadline (gather.h); a single request ends alike. */
            bool mine = cancelled ? eddy__requests_give_up(bus->core.requests, id)
                                  : eddy__requests_expire(bus->core.requests, id);
            pthread_mutex_lock(&w->m);
            if (mine) {
                w->done = true;
                w->st = EDDY_ERR_NO_REPLY;
            }
            /* else a reply (or stop) took it first and completes it right away */
            timed_out = false;
            if (w->done)
                break;
            pthread_cond_wait(&w->cond, &w->m);
            continue;
        }
        if (pthread_cond_timedwait(&w->cond, &w->m, &at) == ETIMEDOUT)
            timed_out = true;
    }
    pthread_mutex_unlock(&w->m);
}

/* This bus's state for the core's checks; copies the reply stream's key (the activation that
 * owns it may end while the request is being sent). */
static bool bus_state(eddy_bus *bus, const eddy_request_opts *opts, char inbox[256],
                      bool *cancelled) {
    *cancelled = opts && eddy_cancel_fired(opts->cancel);
    pthread_mutex_lock(&bus->ctl_lock);
    bool active = atomic_load(&bus->active) && bus->inbox;
    if (active)
        snprintf(inbox, 256, "%s", eddy__inbox_key(bus->inbox));
    pthread_mutex_unlock(&bus->ctl_lock);
    return active;
}

/* What both kinds of request ask of the call: the deadline and token, a single request's
 * options or a gather's (widened by the flow). */
typedef struct req_args {
    const eddy_request_opts *opts; /* a single request */
    const eddy_gather_opts *gopts; /* a scatter-gather request */
    eddy_replies **replies;        /* its outcome's list */
} req_args;

static eddy_status request(eddy_bus *bus, const char *subject, const eddy_event *ev,
                           const req_args *a, eddy_event **reply, eddy_error *err) {
    eddy_request_opts gathering; /* a gather's deadline and token, for the waits below */
    const eddy_request_opts *opts =
        a->replies ? eddy__gather_request_opts(a->gopts, &gathering) : a->opts;
    char inbox[256] = "";
    bool cancelled;
    bool active = bus_state(bus, opts, inbox, &cancelled);
    eddy__request_ctx ctx =
        eddy__bus_core_request_ctx(&bus->core, &bus->s, active, cancelled, inbox);
    bwait w = {.st = EDDY_ERR_NO_REPLY};
    pthread_mutex_init(&w.m, NULL);
    eddy__bcond_init_monotonic(&w.cond);
    eddy__request_flow f;
    eddy_status st =
        a->replies ? eddy__request_flow_begin_gather(&f, &ctx, a->gopts, false, subject, ev, &w,
                                                     eddy_now_ms(), err)
                   : eddy__request_flow_begin(&f, &ctx, opts, subject, ev, &w, eddy_now_ms(), err);
    if (st == EDDY_OK) {
        const char *id = f.out.id;
        w.on_cancel = (eddy__cancel_reg){&w.m, &w.cond, NULL, NULL};
        eddy__cancel_attach(opts->cancel, &w.on_cancel);
        step_io io = {.pending = false};
        w.flow = &f;
        w.io = &io;
        eddy__req_step step = run_steps(bus, &f, opts ? opts->deadline_ms : 0, &w, &io);
        if (step == EDDY__REQ_SEND) { /* the entry is out: wait, then hear its acknowledgement */
            wait_outcome(bus, &w, id, opts->deadline_ms, opts->cancel);
            step = feed_step(bus, &f, &io);
            w.send_failed = false; /* heard; a flow still waiting waits for the outcome alone */
        }
        if (step == EDDY__REQ_END) {
            st = f.st;
            if (err)
                *err = f.err;
        } else { /* WAIT, or ENDED: its waiter is completed, or will be */
            wait_outcome(bus, &w, id, opts->deadline_ms, opts->cancel);
            st = eddy__request_flow_outcome(&f, w.st, err);
            *reply = w.reply;
        }
        eddy__cancel_detach(opts->cancel, &w.on_cancel);
        if (a->replies && !(*a->replies = eddy__gather_take(&f.gather)))
            st = eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
        eddy__request_flow_reset(&f);
    }
    pthread_cond_destroy(&w.cond);
    pthread_mutex_destroy(&w.m);
    return st;
}

eddy_status eddy_bus_request(eddy_bus *bus, const char *subject, const eddy_event *ev,
                             const eddy_request_opts *opts, eddy_event **reply, eddy_error *err) {
    if (!bus || !reply)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "bus or reply is NULL");
    *reply = NULL;
    req_args a = {.opts = opts};
    return request(bus, subject, ev, &a, reply, err);
}

eddy_status eddy_bus_request_all(eddy_bus *bus, const char *subject, const eddy_event *ev,
                                 const eddy_gather_opts *opts, eddy_replies **out,
                                 eddy_error *err) {
    if (!bus || !out)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "bus or out is NULL");
    *out = NULL;
    eddy_event *none = NULL;
    req_args a = {.gopts = opts, .replies = out};
    eddy_status st = request(bus, subject, ev, &a, &none, err);
    eddy_event_free(none); /* a gather's replies are in its list */
    return st;
}

eddy_status eddy_bus_request_value(eddy_bus *bus, const char *subject, const char *type,
                                   eddy_pack_fn pack, void *user, const eddy_request_opts *opts,
                                   eddy_event **reply, eddy_error *err) {
    if (!bus || !reply)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "bus or reply is NULL");
    *reply = NULL;
    char inbox[256];
    bool cancelled;
    bool active = bus_state(bus, opts, inbox, &cancelled);
    eddy_event *ev;
    eddy_status st = eddy__request_value_event(&bus->s, opts, cancelled, active, bus->core.caps,
                                               type, pack, user, eddy_now_ms(), &ev, err);
    if (st == EDDY_OK)
        st = eddy_bus_request(bus, subject, ev, opts, reply, err);
    eddy_event_free(ev);
    return st;
}

eddy_status eddy_bus_request_stats(eddy_bus *bus, const char *name, eddy_request_stats *out) {
    return bus ? eddy__bus_request_stats(bus->core.requests, name, out) : EDDY_ERR_INVALID_ARGUMENT;
}
