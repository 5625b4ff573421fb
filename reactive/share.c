/* SPDX-License-Identifier: BSD-3-Clause */
/* A connection shared by the rounds of many subscriptions (share.h). Who is attached and
 * whose command each reply to come answers is the core's (src/bus/share.h).
 *
 * Invariants:
 * - A round is attached (rround.attached) exactly while it is among the core's members, and
 *   to at most one share.
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
    eddy__share members;
};

rshare *eddy__rshare_new(eddy_rbus *bus) {
    rshare *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->bus = bus;
    eddy__share_init(&s->members);
    eddy__reconnect_init(&s->gate,
                         (unsigned)((uintptr_t)s ^ (unsigned)eddy__mono_ms() ^ (unsigned)getpid()));
    return s;
}

static void close_conn(rshare *s) {
    eddy__rconn_close(s->conn);
    s->conn = NULL;
    s->up = false;
    eddy__share_lost(&s->members);
}

void eddy__rshare_free(rshare *s) {
    if (!s)
        return;
    close_conn(s);
    eddy__share_destroy(&s->members);
    free(s);
}

rconn *eddy__rshare_conn(const rshare *s) { return s->conn; }

size_t eddy__rshare_rounds(const rshare *s) { return eddy__share_members(&s->members); }

/* The connection is gone (closed already): every attached round is detached and told. Being
 * told attaches no round again at once (a lost round backs off, or its owner steps later). */
static void lost_all(rshare *s, const eddy_error *err) {
    rround *r;
    while ((r = eddy__share_pop(&s->members))) {
        r->attached = false;
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
    /* The attached rounds as they are now: what telling one does to the membership (a round
     * that detaches, or dies: its memory stays until the outermost eddy__rbus_leave) does not
     * disturb the walk. */
    size_t n;
    rround **v = (rround **)eddy__share_snapshot(&s->members, &n);
    if (!v && eddy__share_members(&s->members)) {
        /* As a failed connection: every round backs off and comes again. */
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
    rround *r = eddy__share_answered(&s->members);
    if (r)
        eddy__rround_share_reply(r, reply);
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
        if (eddy__share_attach(&s->members, &r->share_sm, r) != EDDY_OK) {
            if (eddy__share_members(&s->members) == 0)
                close_conn(s);
            return EDDY_ERR_NOMEM;
        }
        r->attached = true;
    }
    return s->up ? EDDY_OK : EDDY_PENDING;
}

void eddy__rshare_detach(rshare *s, rround *r) {
    if (!r->attached)
        return;
    eddy__share_detach(&s->members, &r->share_sm);
    r->attached = false;
    if (eddy__share_members(&s->members) == 0)
        close_conn(s);
}

bool eddy__rshare_send(rshare *s, rround *r, const eddy__cmd *cmd) {
    if (!s->conn || !r->attached)
        return false;
    if (!eddy__share_sent(&s->members, &r->share_sm)) {
        /* The owners of the replies to come would not be known. */
        eddy_error err;
        eddy__fail(&err, EDDY_ERR_NOMEM, "out of memory queueing a command");
        fail(s, &err);
        return false;
    }
    if (eddy__rconn_send(s->conn, cmd, -1, NULL))
        return true;
    eddy__share_unsend(&s->members);
    return false;
}
