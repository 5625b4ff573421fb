/* SPDX-License-Identifier: BSD-3-Clause */
/* The publishing connection's multiplexing; see mux.h. The handed requests wait in the
 * pipeline's FIFO (their slot's waiter is the request), the unsent ones in a list behind them,
 * the done ones in a list the front end empties. Failing the connection moves every request
 * to the done list, handed ones first, so callers are woken in wire order. */
#include "link/mux.h"
#include "link/link.h"

#include <string.h>

void eddy__mux_init(eddy__mux *m) {
    memset(m, 0, sizeof(*m));
    eddy__pipeline_init(&m->fifo);
}

static void done_push(eddy__mux *m, eddy__mux_req *r) {
    r->state = EDDY__MUX_DONE;
    r->next = NULL;
    if (m->done_tail)
        m->done_tail->next = r;
    else
        m->done = r;
    m->done_tail = r;
}

eddy_status eddy__mux_submit(eddy__mux *m, eddy__mux_req *req, redisReply **replies, size_t n,
                             long long deadline, long long now, uint64_t last, void *token,
                             eddy_error *err) {
    if (n == 0)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "a request of no command");
    if (m->broken)
        return eddy__fail(err, EDDY_ERR_IO, "%s", m->lost.detail);
    req->err.status = EDDY_OK;
    req->err.detail[0] = '\0';
    req->token = token;
    req->deadline = deadline;
    req->began = now;
    req->next = NULL;
    req->last = 0;
    if (last > 0 && !m->unsent) {
        eddy__pipeline_push(&m->fifo, &req->slot, replies, n, req);
        req->last = last;
        req->state = EDDY__MUX_HANDED;
        return EDDY_OK;
    }
    req->slot.replies = replies;
    req->slot.n = n;
    req->slot.got = 0;
    req->slot.st = EDDY_OK;
    req->slot.waiter = req;
    req->slot.next = NULL;
    for (size_t i = 0; i < n; i++)
        replies[i] = NULL;
    req->state = EDDY__MUX_UNSENT;
    if (m->unsent_tail)
        m->unsent_tail->next = req;
    else
        m->unsent = req;
    m->unsent_tail = req;
    return EDDY_OK;
}

eddy__mux_req *eddy__mux_next_unsent(const eddy__mux *m) { return m->broken ? NULL : m->unsent; }

void eddy__mux_handed(eddy__mux *m, eddy__mux_req *req, uint64_t last) {
    /* req is the head of the unsent list (eddy__mux_next_unsent) */
    if (!(m->unsent = req->next))
        m->unsent_tail = NULL;
    req->next = NULL;
    req->last = last;
    req->state = EDDY__MUX_HANDED;
    eddy__pipeline_push(&m->fifo, &req->slot, req->slot.replies, req->slot.n, req);
}

void eddy__mux_withdraw(eddy__mux *m, eddy__mux_req *req) {
    if (req->state == EDDY__MUX_UNSENT) {
        eddy__mux_req *r = m->unsent, *prev = NULL;
        while (r && r != req)
            prev = r, r = r->next;
        if (r) {
            if (prev)
                prev->next = r->next;
            else
                m->unsent = r->next;
            if (m->unsent_tail == r)
                m->unsent_tail = prev;
        }
    } else if (req->state == EDDY__MUX_HANDED && m->fifo.tail == &req->slot) {
        eddy__pipe_slot *s = m->fifo.head, *prev = NULL;
        while (s != &req->slot)
            prev = s, s = s->next;
        if (prev)
            prev->next = NULL;
        else
            m->fifo.head = NULL;
        m->fifo.tail = prev;
        m->fifo.nslots--;
    }
    req->next = NULL;
    req->state = EDDY__MUX_IDLE;
    req->slot.st = eddy__fail(&req->err, EDDY_ERR_NOMEM, "out of memory queueing commands");
}

bool eddy__mux_next_is_last(const eddy__mux *m) {
    const eddy__pipe_slot *h = eddy__pipeline_head(&m->fifo);
    return h && h->got + 1 == h->n;
}

/* r failed with st (why: the detail, NULL none); with outcome, what the link says a failure
 * means for its commands (eddy__link_outcome: a timeout holds only once they were written). */
static void fail_one(eddy__mux *m, eddy__mux_req *r, eddy_status st, const eddy_error *why,
                     uint64_t sent, bool outcome) {
    if (outcome) {
        r->slot.st = eddy__link_outcome(st, why, r->last, sent, &r->err);
    } else {
        r->slot.st = st;
        r->err = why ? *why : (eddy_error){.status = st};
    }
    done_push(m, r);
}

/* Fails every request queued: handed ones (their replies freed), then unsent ones. */
static void fail_queued(eddy__mux *m, eddy_status st, const eddy_error *why, uint64_t sent,
                        bool outcome) {
    eddy__pipe_slot *s;
    while ((s = eddy__pipeline_fail_next(&m->fifo, st)))
        fail_one(m, s->waiter, st, why, sent, outcome);
    while (m->unsent) {
        eddy__mux_req *r = m->unsent;
        m->unsent = r->next;
        fail_one(m, r, st, why, sent, outcome);
    }
    m->unsent_tail = NULL;
}

static void set_lost(eddy__mux *m, eddy_status st, const eddy_error *err) {
    m->broken = true;
    m->loss_untold = true;
    if (err)
        m->lost = *err;
    else
        m->lost = (eddy_error){.status = st};
    m->lost.status = st;
}

bool eddy__mux_feed(eddy__mux *m, redisReply *reply) {
    bool unexpected;
    eddy__pipe_slot *s = eddy__pipeline_feed(&m->fifo, reply, &unexpected);
    if (s)
        done_push(m, s->waiter);
    if (!unexpected)
        return true;
    eddy_error why;
    eddy__fail(&why, EDDY_ERR_IO, "connection: a reply that no command asked for");
    if (!m->broken)
        set_lost(m, EDDY_ERR_IO, &why);
    fail_queued(m, EDDY_ERR_IO, &why, 0, false);
    return false;
}

void eddy__mux_lost(eddy__mux *m, eddy_status st, const eddy_error *err, uint64_t sent) {
    if (!m->broken)
        set_lost(m, st, err);
    fail_queued(m, st, err, sent, true);
}

bool eddy__mux_expire(eddy__mux *m, eddy__mux_req *by, long long now, uint64_t sent) {
    if (m->broken || (by->state != EDDY__MUX_HANDED && by->state != EDDY__MUX_UNSENT))
        return false;
    eddy_error why;
    eddy__fail(&why, EDDY_ERR_IO, "connection: given up when a call's deadline passed");
    set_lost(m, EDDY_ERR_IO, &why);
    eddy__mux_req *first = m->done_tail; /* those failed now come after it */
    fail_queued(m, EDDY_ERR_IO, &why, sent, false);
    for (eddy__mux_req *r = first ? first->next : m->done; r; r = r->next) {
        bool written = r->last > 0 && r->last <= sent;
        eddy_status st = written ? EDDY_ERR_TIMEOUT : EDDY_ERR_IO;
        if (r == by && written)
            r->slot.st = eddy__fail(&r->err, st,
                                    "no reply by the call's deadline, %lld ms after it was queued "
                                    "(sent, outcome unknown)",
                                    now - r->began);
        else if (r == by)
            r->slot.st = eddy__fail(&r->err, st, "not sent by the call's deadline (%lld ms)",
                                    now - r->began);
        else if (written)
            r->slot.st = eddy__fail(&r->err, st,
                                    "sent, outcome unknown: the connection was given up when "
                                    "another call's deadline passed");
        else
            r->slot.st = eddy__fail(&r->err, st,
                                    "not sent: the connection was given up when another call's "
                                    "deadline passed");
    }
    return true;
}

/* The oldest request whose deadline is past at now. */
static eddy__mux_req *due(const eddy__mux *m, long long now) {
    for (eddy__pipe_slot *s = m->fifo.head; s; s = s->next) {
        eddy__mux_req *r = s->waiter;
        if (r->deadline >= 0 && r->deadline <= now)
            return r;
    }
    for (eddy__mux_req *r = m->unsent; r; r = r->next)
        if (r->deadline >= 0 && r->deadline <= now)
            return r;
    return NULL;
}

bool eddy__mux_expire_due(eddy__mux *m, long long now, uint64_t sent) {
    eddy__mux_req *r = due(m, now);
    return r && eddy__mux_expire(m, r, now, sent);
}

static long long earlier(long long a, long long b) { return a < 0 ? b : b < 0 ? a : a < b ? a : b; }

long long eddy__mux_next_deadline(const eddy__mux *m) {
    long long at = -1;
    for (eddy__pipe_slot *s = m->fifo.head; s; s = s->next)
        at = earlier(at, ((eddy__mux_req *)s->waiter)->deadline);
    for (eddy__mux_req *r = m->unsent; r; r = r->next)
        at = earlier(at, r->deadline);
    return at;
}

eddy__mux_req *eddy__mux_take_done(eddy__mux *m) {
    eddy__mux_req *r = m->done;
    if (!r)
        return NULL;
    if (!(m->done = r->next))
        m->done_tail = NULL;
    r->next = NULL;
    r->state = EDDY__MUX_IDLE;
    return r;
}

bool eddy__mux_req_failed(const eddy__mux_req *req) {
    return eddy__pipeline_slot_failed(&req->slot);
}

eddy__mux_req *eddy__mux_head(const eddy__mux *m) {
    eddy__pipe_slot *s = eddy__pipeline_head(&m->fifo);
    return s ? s->waiter : NULL;
}

size_t eddy__mux_queued(const eddy__mux *m) {
    size_t n = m->fifo.nslots;
    for (const eddy__mux_req *r = m->unsent; r; r = r->next)
        n++;
    return n;
}

bool eddy__mux_idle(const eddy__mux *m) {
    return !eddy__pipeline_head(&m->fifo) && !m->unsent && !m->done;
}

bool eddy__mux_take_reader(eddy__mux *m) {
    if (m->reading || m->broken)
        return false;
    m->reading = true;
    return true;
}

eddy__mux_next eddy__mux_leave_reader(eddy__mux *m) {
    m->reading = false;
    eddy__mux_req *next = eddy__mux_head(m);
    if (m->broken)
        return m->writing ? EDDY__MUX_NOBODY : EDDY__MUX_RECONNECT;
    if (!next)
        return EDDY__MUX_NOBODY;
    return next->detached ? EDDY__MUX_READER : EDDY__MUX_OFFER;
}

bool eddy__mux_take_writer(eddy__mux *m) {
    if (m->writing || m->broken)
        return false;
    m->writing = true;
    return true;
}

bool eddy__mux_leave_writer(eddy__mux *m) {
    m->writing = false;
    return m->broken && !m->reading;
}

bool eddy__mux_may_reconnect(const eddy__mux *m) { return m->broken && !m->reading && !m->writing; }

void eddy__mux_reconnected(eddy__mux *m) {
    m->broken = false;
    m->lost = (eddy_error){.status = EDDY_OK};
}

bool eddy__mux_take_loss(eddy__mux *m) {
    bool told = m->loss_untold;
    m->loss_untold = false;
    return told;
}
