/* SPDX-License-Identifier: BSD-3-Clause */
/* A connection shared by the rounds of many subscriptions (share.h).
 *
 * Invariants:
 * - `owners` holds, for every command written and not answered yet, the round it belongs to,
 *   in wire order; a detached round's entries are NULL, so its late replies are dropped.
 * - Attached rounds are in the `rounds` list (rround.share_prev/share_next). A round is
 *   attached to at most one share.
 * - The connection is closed when the last round detaches: a stopped bus holds none. */
#include "share.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "internal.h"
#include "round.h"
#include "timing.h"

struct rshare {
    eddy_rbus *bus;
    rconn *conn;
    bool up;
    eddy__reconnect gate;
    rround *rounds;
    size_t nrounds;
    rround **owners; /* a ring: owners[(head + i) % cap] for i < len */
    size_t head, len, cap;
};

rshare *eddy__rshare_new(eddy_rbus *bus) {
    rshare *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->bus = bus;
    eddy__reconnect_init(&s->gate,
                         (unsigned)((uintptr_t)s ^ (unsigned)eddy__mono_ms() ^ (unsigned)getpid()));
    return s;
}

static void close_conn(rshare *s) {
    eddy__rconn_close(s->conn);
    s->conn = NULL;
    s->up = false;
    s->head = s->len = 0;
}

void eddy__rshare_free(rshare *s) {
    if (!s)
        return;
    close_conn(s);
    free(s->owners);
    free(s);
}

rconn *eddy__rshare_conn(const rshare *s) { return s->conn; }

size_t eddy__rshare_rounds(const rshare *s) { return s->nrounds; }

/* The attached rounds as they are now: what a callback below does to the list (a round that
 * detaches, or dies: its memory stays until the outermost eddy__rbus_leave) does not disturb
 * the walk. NULL with *n 0 when there are none, or on OOM. */
static rround **snapshot(const rshare *s, size_t *n) {
    *n = 0;
    rround **v = s->nrounds ? malloc(s->nrounds * sizeof(*v)) : NULL;
    if (!v)
        return NULL;
    for (rround *r = s->rounds; r; r = r->share_next)
        v[(*n)++] = r;
    return v;
}

static void unlink_round(rshare *s, rround *r) {
    if (r->share_prev)
        r->share_prev->share_next = r->share_next;
    else
        s->rounds = r->share_next;
    if (r->share_next)
        r->share_next->share_prev = r->share_prev;
    r->share_prev = r->share_next = NULL;
    r->attached = false;
    s->nrounds--;
}

/* The connection is gone (closed already): every attached round is detached and told. Being
 * told attaches no round again at once (a lost round backs off, or its owner steps later). */
static void lost_all(rshare *s, const eddy_error *err) {
    while (s->rounds) {
        rround *r = s->rounds;
        unlink_round(s, r);
        eddy__rround_share_down(r, err);
    }
}

/* The connection cannot be trusted (out of memory for what it needs): closed, every round told. */
static void fail(rshare *s, const eddy_error *err) {
    eddy_error e = *err;
    close_conn(s);
    lost_all(s, &e);
}

static void on_up(void *owner) {
    rshare *s = owner;
    eddy_rbus *bus = s->bus;
    eddy__rbus_enter(bus);
    s->up = true;
    size_t n;
    rround **v = snapshot(s, &n);
    if (!v && s->nrounds) { /* as a failed connection: every round backs off and comes again */
        eddy_error err;
        eddy__fail(&err, EDDY_ERR_NOMEM, "out of memory");
        fail(s, &err);
    }
    for (size_t i = 0; i < n; i++)
        if (v[i]->attached && v[i]->share == s && s->up)
            eddy__rround_share_up(v[i]);
    free(v);
    eddy__rbus_leave(bus);
}

static void on_reply(void *owner, void *priv, redisReply *reply) {
    (void)priv;
    rshare *s = owner;
    eddy_rbus *bus = s->bus;
    eddy__rbus_enter(bus);
    if (s->len > 0) {
        rround *r = s->owners[s->head];
        s->head = (s->head + 1) % s->cap;
        s->len--;
        if (r)
            eddy__rround_share_reply(r, reply);
    }
    eddy__rbus_leave(bus);
}

static void on_down(void *owner, eddy_status st, const eddy_error *err) {
    (void)st;
    rshare *s = owner;
    eddy_rbus *bus = s->bus;
    eddy__rbus_enter(bus);
    eddy_error e = *err;
    close_conn(s);
    lost_all(s, &e);
    eddy__rbus_leave(bus);
}

static const rconn_ops share_ops = {on_up, on_reply, on_down};

eddy_status eddy__rshare_attach(rshare *s, rround *r) {
    if (!r->attached) {
        if (!s->conn && eddy__rconn_open_gated(s->bus->loop, &s->bus->s, &share_ops, s, &s->gate,
                                               &s->conn) != EDDY_OK) {
            s->conn = NULL;
            return EDDY_ERR_NOMEM;
        }
        if (!s->up && eddy__rconn_is_up(s->conn)) /* memory://: up at once, no `up` call */
            s->up = true;
        r->share_prev = NULL;
        r->share_next = s->rounds;
        if (s->rounds)
            s->rounds->share_prev = r;
        s->rounds = r;
        s->nrounds++;
        r->attached = true;
    }
    return s->up ? EDDY_OK : EDDY_PENDING;
}

void eddy__rshare_detach(rshare *s, rround *r) {
    if (!r->attached)
        return;
    unlink_round(s, r);
    for (size_t i = 0; i < s->len; i++)
        if (s->owners[(s->head + i) % s->cap] == r)
            s->owners[(s->head + i) % s->cap] = NULL;
    if (s->nrounds == 0)
        close_conn(s);
}

/* Room for one more owner in the ring. */
static bool grow(rshare *s) {
    if (s->len < s->cap)
        return true;
    size_t cap = s->cap ? 2 * s->cap : 64;
    rround **v = malloc(cap * sizeof(*v));
    if (!v)
        return false;
    for (size_t i = 0; i < s->len; i++)
        v[i] = s->owners[(s->head + i) % s->cap];
    free(s->owners);
    s->owners = v;
    s->cap = cap;
    s->head = 0;
    return true;
}

bool eddy__rshare_send(rshare *s, rround *r, const eddy__cmd *cmd) {
    if (!s->conn || !r->attached)
        return false;
    if (!grow(s)) { /* the owners of the replies to come would not be known */
        eddy_error err;
        eddy__fail(&err, EDDY_ERR_NOMEM, "out of memory queueing a command");
        fail(s, &err);
        return false;
    }
    if (!eddy__rconn_send(s->conn, cmd, -1, NULL))
        return false;
    s->owners[(s->head + s->len) % s->cap] = r;
    s->len++;
    return true;
}
