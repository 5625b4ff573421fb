/* SPDX-License-Identifier: BSD-3-Clause */
/* The reactive bus's publishing connection: the core checks and builds each operation, this
 * file queues its commands on the bus's one publishing connection (opened on first use, and
 * again after it was lost) and hands the replies back. An operation is a publish, or one step
 * of request/reply that belongs on this connection as in the blocking front end (a request's
 * registry query and its send, a late subscription's registration, a stopping activation's
 * leave). Operations pipeline naturally: each is sent as soon as the connection is up, without
 * waiting for the one before.
 *
 * Invariants:
 * - The core's multiplexing machine (src/link/mux.h) holds the operations, written or not, and
 *   decides what each reply, a lost connection or a reply nobody asked for means for each:
 *   this file writes what it says is unsent once the connection is up, feeds it the replies
 *   and runs the completions it hands back.
 * - Each operation completes exactly once: with its replies, with the connection's error when
 *   it was lost first, or with EDDY_ERR_CLOSED when the bus is freed first. It leaves the
 *   machine before its completion runs, so whatever that completion calls finds it consistent.
 *   A failed publish is never retried (a retry could store the message twice), but for what the
 *   core's flow (src/bus/publish_flow.h) says goes again, as a new op on the next connection,
 *   which waits for its backoff.
 * - No per-operation timer or thread: the connection's deadlines (conn.h) cover them all. When
 *   one passes, an op the connection had written fails with EDDY_ERR_TIMEOUT (sent, outcome
 *   unknown), one it had not with EDDY_ERR_IO (not sent).
 * - A started bus keeps the connection open (opened at start); a stopped one closes it once
 *   its last op is answered, so that a stopped bus leaves nothing on the loop.
 */
#include <stdlib.h>

#include "error.h"
#include "events/event_internal.h"
#include "internal.h"
#include "timing.h"

static void pub_up(void *owner);
static void pub_reply(void *owner, void *priv, redisReply *r);
static void pub_down(void *owner, eddy_status st, const eddy_error *err);
static const rconn_ops pub_ops = {pub_up, pub_reply, pub_down};

rpub *eddy__rpub_new(rpub_fn complete, void *user) {
    rpub *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    eddy__cmdlist_init(&p->cmds);
    p->replies = p->small;
    p->cap = RPUB_MAX_CMDS;
    p->complete = complete;
    p->user = user;
    return p;
}

void eddy__rpub_free(rpub *p) {
    if (!p)
        return;
    for (size_t i = 0; i < p->cap && !p->kept; i++)
        if (p->replies[i])
            freeReplyObject(p->replies[i]);
    eddy__reply_arena_free(p->kept);
    if (p->replies != p->small)
        free(p->replies);
    eddy__cmdlist_reset(&p->cmds);
    free(p);
}

eddy_status eddy__rpub_reserve(rpub *p, size_t n) {
    if (n <= p->cap)
        return EDDY_OK;
    redisReply **r = calloc(n, sizeof(*r));
    if (!r)
        return EDDY_ERR_NOMEM;
    for (size_t i = 0; i < p->cap; i++)
        r[i] = p->replies[i];
    if (p->replies != p->small)
        free(p->replies);
    p->replies = r;
    p->cap = n;
    return EDDY_OK;
}

const eddy__cmdlist *eddy__rpub_cmds(const rpub *p) { return p->ext ? p->ext : &p->cmds; }

/* Runs p's completion (p has left the queue), then frees it. */
static void complete(eddy_rbus *bus, rpub *p, eddy_status st, const eddy_error *err) {
    p->complete(bus, p, st, err);
    eddy__rpub_free(p);
}

static bool idle(const eddy_rbus *bus) { return eddy__mux_idle(&bus->pub_mux); }

static void close_if_idle(eddy_rbus *bus) {
    if (bus->pub_close_idle && idle(bus) && bus->pub_conn) {
        bus->pub_close_idle = false;
        eddy__rconn_close(bus->pub_conn); /* deferred by the connection when inside its callback */
        bus->pub_conn = NULL;
    }
}

/* Completes every op the machine failed, in the order it failed them (a failure without detail
 * is a closing bus's: err NULL). Completions may queue new ops: those wait for a new connection,
 * which the next op opens. */
static void complete_failed(eddy_rbus *bus) {
    eddy__mux_req *r;
    while ((r = eddy__mux_take_done(&bus->pub_mux))) {
        rpub *p = r->token;
        complete(bus, p, r->slot.st, r->err.detail[0] ? &r->err : NULL);
    }
}

/* The connection is gone (sent: the last command it wrote whole): the machine fails every op
 * queued, after the publisher forgot what the lost server held (a new one may lack it), and
 * the next op connects again. */
static void lost(eddy_rbus *bus, eddy_status st, const eddy_error *err, uint64_t sent) {
    eddy__rconn_close(bus->pub_conn);
    bus->pub_conn = NULL;
    eddy__mux_lost(&bus->pub_mux, st, err, sent);
    eddy__publish_mux_settle(bus->core.publisher, &bus->pub_mux);
    eddy__mux_reconnected(&bus->pub_mux);
    complete_failed(bus);
}

/* Writes the ops the machine says are unsent, each one's commands together. */
static void send_unsent(eddy_rbus *bus) {
    eddy__mux_req *r;
    while ((r = eddy__mux_next_unsent(&bus->pub_mux))) {
        const eddy__cmdlist *cmds = eddy__rpub_cmds(r->token);
        uint64_t last = 0;
        bool ok = true;
        for (size_t i = 0; i < cmds->n && ok; i++)
            ok = (last = eddy__rconn_send(bus->pub_conn, &cmds->cmds[i], -1, r->token)) != 0;
        eddy__mux_handed(&bus->pub_mux, r, last);
        if (!ok)
            return; /* down follows and fails them all */
    }
}

static void pub_up(void *owner) {
    eddy_rbus *bus = owner;
    eddy__rbus_enter(bus);
    send_unsent(bus);
    eddy__rbus_leave(bus);
}

#define KEPT_REPLY_BYTES 96 /* a short reply copied into an arena: the object, its text */

/* A reply before its op's last, borrowed from the connection, copied into the op's arena;
 * NULL when out of memory (the op reads it as a lost reply) or when no op waits for it. */
static redisReply *keep(eddy_rbus *bus, const redisReply *r) {
    eddy__mux_req *head = eddy__mux_head(&bus->pub_mux);
    if (!head || head->state != EDDY__MUX_HANDED)
        return NULL;
    rpub *p = head->token;
    /* Sized for the op's replies (a publish's are short: an id, a count, OK), so that a
     * request's one kept reply does not cost a 64 KiB block; a longer one takes more blocks. */
    if (!p->kept && !(p->kept = eddy__reply_arena_new_sized(head->slot.n * KEPT_REPLY_BYTES)))
        return NULL;
    head->slot.arena = true;
    return eddy__reply_arena_copy(p->kept, r);
}

static void pub_reply(void *owner, void *priv, redisReply *r) {
    eddy_rbus *bus = owner;
    (void)priv; /* the machine knows whose it is */
    eddy__rbus_enter(bus);
    /* Replies before an op's last are needed together with it: keep them. Without memory for
     * one, its op reads it as a lost reply (NULL). The last is borrowed for the completion. */
    bool last = eddy__mux_next_is_last(&bus->pub_mux);
    if (!eddy__mux_feed(&bus->pub_mux, last ? r : keep(bus, r))) {
        /* A reply nobody asked for: the machine failed every op; the connection goes. */
        lost(bus, bus->pub_mux.lost.status, &bus->pub_mux.lost, 0);
    }
    eddy__mux_req *done = eddy__mux_take_done(&bus->pub_mux);
    if (done) {
        rpub *p = done->token;
        p->complete(bus, p, EDDY_OK, NULL);
        p->replies[done->slot.n - 1] = NULL; /* hiredis's or the connection's, not ours */
        eddy__rpub_free(p);
        close_if_idle(bus);
    }
    eddy__rbus_leave(bus);
}

static void pub_down(void *owner, eddy_status st, const eddy_error *err) {
    eddy_rbus *bus = owner;
    eddy__rbus_enter(bus);
    /* The bus's tracker warns once per outage (conn_state.h); each failed try is debug only. */
    if (!idle(bus))
        eddy__log(&bus->s.log, EDDY_LOG_DEBUG, "publishing connection: %s", err->detail);
    uint64_t sent = eddy__rconn_sent(bus->pub_conn);
    lost(bus, st, err, sent);
    eddy__rbus_leave(bus);
}

void eddy__rpub_close_all(eddy_rbus *bus) {
    bus->pub_close_idle = false;
    lost(bus, EDDY_ERR_CLOSED, NULL, 0);
}

void eddy__rpub_flush(eddy_rbus *bus) {
    if (bus->pub_conn)
        eddy__rconn_drain(bus->pub_conn);
}

eddy_status eddy__rpub_open(eddy_rbus *bus) {
    bus->pub_close_idle = false;
    if (!bus->pub_conn && eddy__rconn_open_gated(bus->loop, &bus->s, &pub_ops, bus, &bus->pub_gate,
                                                 &bus->pub_conn) != EDDY_OK) {
        bus->pub_conn = NULL;
        return EDDY_ERR_NOMEM;
    }
    return EDDY_OK;
}

void eddy__rpub_close_when_idle(eddy_rbus *bus) {
    bus->pub_close_idle = true;
    close_if_idle(bus);
}

eddy_status eddy__rpub_submit(eddy_rbus *bus, rpub *p) {
    size_t n = eddy__rpub_cmds(p)->n;
    if (n > p->cap)
        return EDDY_ERR_INVALID_ARGUMENT;
    if (n > 0 && eddy__rpub_open(bus) != EDDY_OK)
        return EDDY_ERR_NOMEM;
    /* No deadline of the machine's: the connection's deadlines (conn.h) cover every op. */
    eddy_status st = eddy__mux_submit(&bus->pub_mux, &p->req, p->replies, n, -1, 0, 0, p, NULL);
    if (st != EDDY_OK)
        return st;
    if (eddy__rconn_is_up(bus->pub_conn))
        send_unsent(bus);
    return EDDY_OK;
}

/* ---- publishing ------------------------------------------------------------------------- */

static void published(eddy_rbus *bus, rpub *p, eddy_status st, const eddy_error *err);

/* Submits `again` as a new op that takes over p's flow and callback: true when it was queued
 * (false: p completes as it is, `again` is reset). */
static bool resubmit(eddy_rbus *bus, rpub *p, eddy__cmdlist *again) {
    rpub *q = eddy__rpub_new(published, p->user);
    if (!q || eddy__rpub_reserve(q, again->n) != EDDY_OK) {
        eddy__rpub_free(q);
        eddy__cmdlist_reset(again);
        return false;
    }
    q->cmds = *again; /* eddy__rpub_new's list is empty and owns nothing */
    q->done = p->done;
    q->batch_done = p->batch_done;
    q->flow = p->flow;
    if (eddy__rpub_submit(bus, q) != EDDY_OK) {
        eddy__rpub_free(q);
        return false;
    }
    return true;
}

/* The send's outcome: sent again when the core says so (publish_flow.h), else read and handed
 * to the call's callback. */
static void published(eddy_rbus *bus, rpub *p, eddy_status st, const eddy_error *err) {
    eddy__cmdlist again;
    if (eddy__publish_flow_feed(&p->flow, &p->cmds, st, err, p->replies, eddy__mono_ms(), &again) ==
            EDDY__PUB_SEND &&
        resubmit(bus, p, &again))
        return;
    char id[64] = "";
    eddy_error e = {0};
    st = eddy__publish_flow_end(&p->flow, &p->cmds, st, err, p->replies, p->batch_done ? NULL : id,
                                sizeof(id), &e);
    if (p->batch_done)
        p->batch_done(st, p->flow.published, st == EDDY_OK ? NULL : &e, p->user);
    else if (p->done)
        p->done(st, st == EDDY_OK ? id : NULL, p->user);
}

/* Builds and queues a publish (or batch): on failure nothing is queued. */
static eddy_status submit_publish(eddy_rbus *bus, const char *subject, const eddy_event *const *evs,
                                  size_t n, eddy_publish_fn done, eddy_publish_batch_fn batch_done,
                                  void *user, eddy_error *err) {
    rpub *p = eddy__rpub_new(published, user);
    if (!p)
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    eddy_status st = eddy__publish_flow_begin(&p->flow, bus->core.publisher, &bus->s, subject, evs,
                                              n, eddy__mono_ms(), &p->cmds, err);
    if (st == EDDY_OK && eddy__rpub_reserve(p, p->cmds.n) != EDDY_OK)
        st = eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    if (st != EDDY_OK) {
        eddy__rpub_free(p);
        return st;
    }
    p->done = done;
    p->batch_done = batch_done;
    eddy__rbus_enter(bus);
    if ((st = eddy__rpub_submit(bus, p)) != EDDY_OK) {
        eddy__rpub_free(p);
        eddy__fail(err, st, "out of memory connecting");
    }
    eddy__rbus_leave(bus);
    return st;
}

eddy_status eddy_rbus_publish(eddy_rbus *bus, const char *subject, const eddy_event *ev,
                              eddy_publish_fn done, void *user, eddy_error *err) {
    if (!bus)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "bus is NULL");
    if (bus->freeing)
        return eddy__fail(err, EDDY_ERR_CLOSED, "the bus is being freed");
    return submit_publish(bus, subject, &ev, 1, done, NULL, user, err);
}

static void batch_noop(eddy_status st, size_t published, const eddy_error *err, void *user) {
    (void)st, (void)published, (void)err, (void)user;
}

eddy_status eddy_rbus_publish_batch(eddy_rbus *bus, const char *subject,
                                    const eddy_event *const *evs, size_t n,
                                    eddy_publish_batch_fn done, void *user, eddy_error *err) {
    if (!bus || !evs)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "bus or events is NULL");
    if (n == 0) /* nothing would complete it from the loop */
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "no events to publish");
    if (bus->freeing)
        return eddy__fail(err, EDDY_ERR_CLOSED, "the bus is being freed");
    return submit_publish(bus, subject, evs, n, NULL, done ? done : batch_noop, user, err);
}

eddy_status eddy_rbus_new_event(eddy_rbus *bus, const char *type, eddy_event **out,
                                eddy_error *err) {
    if (out)
        *out = NULL;
    if (!bus || !out)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "bus or out is NULL");
    return eddy__event_create_for(bus->s.source, type, "eddy_rbus_new_event", out, err);
}

eddy_status eddy_rbus_publish_value(eddy_rbus *bus, const char *subject, const char *type,
                                    eddy_pack_fn pack, void *pack_user, eddy_publish_fn done,
                                    void *user, eddy_error *err) {
    if (!bus)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "bus is NULL");
    eddy_event *ev = NULL;
    eddy_status st = eddy__publish_value_event(&bus->s, type, pack, pack_user, &ev, err);
    if (st == EDDY_OK)
        st = eddy_rbus_publish(bus, subject, ev, done, user, err);
    eddy_event_free(ev);
    return st;
}
