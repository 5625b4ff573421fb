/* Requests on the reactive bus: the core checks, counts and matches (requests.h, registry.h);
 * this file sends each request's registry query and its entry on the publishing connection and
 * completes its callback from the loop: on the matching reply (control.c), on its deadline
 * (one ev_timer for every request, armed at the table's earliest deadline), on cancel, or when
 * the bus stops or is freed.
 *
 * Invariants:
 * - A request is in the core's table from the call that accepted it until exactly one of
 *   reply, deadline, cancel, stop/free, "no responders" or a failed send takes it out; whoever
 *   takes it out completes it, so its callback runs exactly once. Being in the table during
 *   the registry query too lets a deadline, a cancel or a stop end it there, counted NoReply
 *   like any request that went out (the blocking front end cannot be interrupted there).
 * - Refusals (the core's checks, out of memory before anything was queued) are returned by
 *   the call and run no callback; every other outcome is delivered from the loop, never inside
 *   the call, except cancel's and teardown's, as reactive.h says.
 * - Memory per request in flight: the request object (with its entry's commands until they
 *   are sent) and one table entry. A request object outlives its completion only while an op
 *   of the publishing connection still points at it; that op frees it.
 */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "internal.h"

struct eddy_rrequest {
    eddy_rbus *bus;
    eddy__request_out out; /* id, counter row, deadline, and the entry's commands */
    char *subject;
    long long asked_ms; /* wall-clock time of the registry question */
    eddy_reply_fn done;
    void *user;
    bool completed; /* its callback ran (or is running) */
    unsigned ops;   /* ops on the publishing connection that point at it */
};

typedef struct eddy_rrequest rreq;

static void rreq_free(rreq *q) {
    q->bus->nrequests--;
    eddy__request_out_reset(&q->out);
    free(q->subject);
    free(q);
}

/* Runs the callback (ownership of reply passes to it). The request left the table. */
static void complete(rreq *q, eddy_status st, eddy_event *reply) {
    q->completed = true;
    eddy_reply_fn done = q->done;
    void *user = q->user;
    if (q->ops == 0)
        rreq_free(q);
    if (done)
        done(st, reply, user);
    else
        eddy_event_free(reply);
}

void rreq_complete_waiter(void *waiter, eddy_status st, eddy_event *reply) {
    complete(waiter, st, reply);
}

/* An op that pointed at q is done with it: true when q is still waiting for its outcome. */
static bool op_done(rreq *q) {
    q->ops--;
    if (!q->completed)
        return true;
    if (q->ops == 0)
        rreq_free(q);
    return false;
}

/* Ends q before it went out (nothing counted), or, for NO_RESPONDERS, counted as such. */
static void end_unsent(rreq *q, eddy_status st) {
    eddy_rbus *bus = q->bus;
    eddy__requests_unsent(bus->requests, q->out.id);
    if (st == EDDY_ERR_NO_RESPONDERS)
        eddy__requests_count_no_responders(bus->requests, q->out.row);
    complete(q, st, NULL);
}

/* ---- deadlines ------------------------------------------------------------------------------ */

/* Arms the one timer at the earliest deadline in the table. */
static void arm(eddy_rbus *bus) {
    long long next = eddy__requests_next_deadline(bus->requests);
    if (next == bus->deadline_at)
        return;
    bus->deadline_at = next;
    if (next < 0) {
        ev_timer_stop(bus->loop, &bus->deadline);
        return;
    }
    long long left = next - eddy_now_ms();
    rbus_timer_after(bus, &bus->deadline, left > 0 ? left : 0);
}

void rreq_expire(eddy_rbus *bus) {
    long long now = eddy_now_ms();
    void *w;
    while ((w = eddy__requests_pop_expired(bus->requests, now)))
        complete(w, EDDY_ERR_NO_REPLY, NULL);
    arm(bus);
}

static void on_deadline(struct ev_loop *loop, ev_timer *w, int revents) {
    eddy_rbus *bus = w->data;
    rbus_enter(bus);
    bus->deadline_at = -1; /* fired: not armed any more */
    rreq_expire(bus);
    rbus_leave(bus);
}

void rreq_setup(eddy_rbus *bus) {
    ev_init(&bus->deadline, on_deadline);
    bus->deadline.data = bus;
    bus->deadline_at = -1;
}

static void abandoned(void *waiter, void *user) { complete(waiter, EDDY_ERR_NO_REPLY, NULL); }

void rreq_abandon_all(eddy_rbus *bus) {
    ev_timer_stop(bus->loop, &bus->deadline);
    bus->deadline_at = -1;
    eddy__requests_abandon_all(bus->requests, abandoned, NULL);
}

/* ---- sending ---------------------------------------------------------------------------- */

static void sent(eddy_rbus *bus, rpub *p, eddy_status st, const eddy_error *err) {
    rreq *q = p->user;
    if (st == EDDY_OK) {
        size_t next;
        eddy_error e;
        st = eddy__publish_result(bus->publisher, &p->cmds, 0, p->replies, &next, NULL, 0, &e);
    }
    /* Counted (Sent) or taken back (not counted) even when q already ended: the core knows. */
    if (st == EDDY_OK)
        eddy__requests_sent(bus->requests, q->out.id);
    if (op_done(q) && st != EDDY_OK)
        end_unsent(q, st);
}

/* Queues the request's entry; its commands move to the op. */
static eddy_status send_entry(eddy_rbus *bus, rreq *q) {
    rpub *p = rpub_new(sent, q);
    if (!p)
        return EDDY_ERR_NOMEM;
    p->cmds = q->out.cmds;
    eddy_status st = rpub_submit(bus, p);
    if (st != EDDY_OK) {
        p->cmds.n = 0; /* still q's */
        eddy__cmdlist_init(&p->cmds);
        rpub_free(p);
        return st;
    }
    eddy__cmdlist_init(&q->out.cmds);
    q->ops++;
    return EDDY_OK;
}

static void answered(eddy_rbus *bus, rpub *p, eddy_status st, const eddy_error *err) {
    rreq *q = p->user;
    if (!op_done(q))
        return; /* it ended meanwhile (deadline, cancel, stop) */
    bool any = false;
    if (st == EDDY_OK) {
        redisReply *reply = rconn_keep(bus->pub_conn, p->replies[0]);
        st = reply ? eddy__registry_answer(bus->registry_cache, reply, q->subject, q->asked_ms,
                                           &any, NULL)
                   : EDDY_ERR_NOMEM;
    }
    if (st == EDDY_OK && !any)
        st = EDDY_ERR_NO_RESPONDERS;
    if (st == EDDY_OK)
        st = send_entry(bus, q);
    if (st != EDDY_OK)
        end_unsent(q, st);
}

/* Asks whether anything is subscribed (the cache may know), then sends. */
static eddy_status ask(eddy_rbus *bus, rreq *q) {
    rpub *p = rpub_new(answered, q);
    if (!p)
        return EDDY_ERR_NOMEM;
    q->asked_ms = eddy_now_ms();
    bool cached = false;
    eddy_status st = eddy__registry_ask(bus->registry_cache, bus->s.ns, q->subject, q->asked_ms,
                                        &p->cmds, 0, &cached);
    if (st == EDDY_OK && cached) {
        rpub_free(p);
        return send_entry(bus, q);
    }
    if (st == EDDY_OK)
        st = rpub_submit(bus, p);
    if (st != EDDY_OK) {
        rpub_free(p);
        return st;
    }
    q->ops++;
    return EDDY_OK;
}

/* ---- interface ---------------------------------------------------------------------------- */

eddy_status eddy_rbus_request(eddy_rbus *bus, const char *subject, const eddy_event *ev,
                              const eddy_request_opts *opts, eddy_reply_fn done, void *user,
                              eddy_rrequest **handle, eddy_error *err) {
    if (handle)
        *handle = NULL;
    if (!bus)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "bus is NULL");
    if (bus->freeing)
        return eddy__fail(err, EDDY_ERR_CLOSED, "the bus is being freed");
    if (opts && opts->cancel)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT,
                          "opts->cancel is for blocking requests: cancel through the handle");
    rreq *q = calloc(1, sizeof(*q));
    if (!q)
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    eddy_status st =
        eddy__request_begin(bus->requests, bus->publisher, opts, false, bus->active, bus->caps,
                            subject, ev, bus->ctl ? rctl_inbox_key(bus->ctl) : NULL, &q->out, err);
    if (st != EDDY_OK) {
        free(q);
        return st;
    }
    q->bus = bus;
    q->done = done;
    q->user = user;
    bus->nrequests++;
    if (!(q->subject = strdup(subject))) {
        rreq_free(q);
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    }
    rbus_enter(bus);
    if ((st = eddy__requests_add(bus->requests, q->out.id, q, q->out.row, q->out.deadline_ms)) ==
        EDDY_OK) {
        if ((st = ask(bus, q)) == EDDY_OK)
            arm(bus);
        else
            eddy__requests_unsent(bus->requests, q->out.id); /* nothing went out: not counted */
    }
    if (st != EDDY_OK) {
        rreq_free(q);
        eddy__fail(err, st, "out of memory");
    } else if (handle) {
        *handle = q;
    }
    rbus_leave(bus);
    return st;
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
    /* The refusals come before building anything, as for eddy_rbus_request. */
    eddy_status st =
        eddy__request_precheck(opts, false, bus->active, bus->caps, NULL, eddy_now_ms(), err);
    if (st != EDDY_OK)
        return st;
    eddy_event *ev = NULL;
    st = eddy__publish_value_event(&bus->s, type, pack, pack_user, &ev, err);
    if (st == EDDY_OK)
        st = eddy_rbus_request(bus, subject, ev, opts, done, user, handle, err);
    eddy_event_free(ev);
    return st;
}

void eddy_rrequest_cancel(eddy_rrequest *q) {
    if (!q || q->completed)
        return;
    eddy_rbus *bus = q->bus;
    rbus_enter(bus);
    if (eddy__requests_give_up(bus->requests, q->out.id)) {
        complete(q, EDDY_ERR_NO_REPLY, NULL);
        arm(bus);
    }
    rbus_leave(bus);
}

eddy_status eddy_rbus_request_stats(eddy_rbus *bus, const char *name, eddy_request_stats *out) {
    if (!bus || !out)
        return EDDY_ERR_INVALID_ARGUMENT;
    eddy__requests_stats(bus->requests, name, out);
    return EDDY_OK;
}

void eddy__rbus_request_counts(eddy_rbus *bus, size_t *in_table, size_t *alive, size_t *ops) {
    *in_table = eddy__requests_in_flight(bus->requests);
    *alive = bus->nrequests;
    size_t n = 0;
    for (rpub *p = bus->pub_head; p; p = p->next)
        n++;
    *ops = n;
}
