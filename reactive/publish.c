/* Publishing on the reactive bus: the core checks and builds each publish, this file queues
 * its commands on the bus's one publishing connection (opened on first use, and again after
 * it was lost) and hands the replies back to the core. Publishes pipeline naturally: each is
 * sent as soon as the connection is up, without waiting for the one before.
 *
 * Invariants:
 * - Publishes are kept in the order of their commands, so each reply belongs to the oldest
 *   publish still waiting.
 * - Each `done` runs exactly once: with the outcome, with the connection's error when it was
 *   lost first, or with EDDY_ERR_CLOSED when the bus is freed first. A failed publish is never
 *   retried: a retry could store the message twice.
 * - No per-publish timer or thread: the connection's one watchdog covers them all.
 */
#include <stdlib.h>

#include "error.h"
#include "internal.h"

static void pub_up(void *owner);
static void pub_reply(void *owner, void *priv, redisReply *r);
static void pub_down(void *owner, eddy_status st, const eddy_error *err);
static const rconn_ops pub_ops = {pub_up, pub_reply, pub_down};

static void complete(rpub *p, eddy_status st, const char *id) {
    for (size_t i = 0; i < 2; i++)
        if (p->replies[i])
            freeReplyObject(p->replies[i]);
    eddy__cmdlist_reset(&p->cmds);
    eddy_publish_fn done = p->done;
    void *user = p->user;
    free(p);
    if (done)
        done(st, st == EDDY_OK ? id : NULL, user);
}

/* Completes every queued publish with st, in order. Callbacks may publish again: those go to
 * a new list (and a new connection). */
static void complete_all(eddy_rbus *bus, eddy_status st) {
    rpub *p = bus->pub_head;
    bus->pub_head = bus->pub_tail = bus->pub_unsent = NULL;
    while (p) {
        rpub *next = p->next;
        complete(p, st, NULL);
        p = next;
    }
}

static void send_unsent(eddy_rbus *bus) {
    for (rpub *p = bus->pub_unsent; p; p = p->next)
        for (size_t i = 0; i < p->cmds.n; i++)
            if (!rconn_send(bus->pub_conn, &p->cmds.cmds[i], -1, p)) {
                bus->pub_unsent = NULL; /* down follows and fails them all */
                return;
            }
    bus->pub_unsent = NULL;
}

static void pub_up(void *owner) {
    eddy_rbus *bus = owner;
    rbus_enter(bus);
    send_unsent(bus);
    rbus_leave(bus);
}

static void pub_reply(void *owner, void *priv, redisReply *r) {
    eddy_rbus *bus = owner;
    rpub *p = priv;
    rbus_enter(bus);
    if (p->got + 1 < p->cmds.n) {
        /* The subject registration's reply, read together with the XADD's. Without memory
         * for it the core counts the registration as failed; the publish still stands. */
        p->replies[p->got++] = rconn_keep(bus->pub_conn, r);
    } else {
        p->replies[p->got] = r;
        char id[64];
        size_t next;
        eddy_error err;
        eddy_status st = eddy__publish_result(bus->publisher, &p->cmds, 0, p->replies, &next, id,
                                              sizeof(id), &err);
        p->replies[p->got] = NULL; /* hiredis's or the connection's, not ours */
        bus->pub_head = p->next;
        if (!bus->pub_head)
            bus->pub_tail = NULL;
        complete(p, st, id);
    }
    rbus_leave(bus);
}

static void pub_down(void *owner, eddy_status st, const eddy_error *err) {
    eddy_rbus *bus = owner;
    rbus_enter(bus);
    if (bus->pub_head)
        eddy__log(&bus->s.log, EDDY_LOG_WARN, "publish: %s", err->detail);
    rconn_close(bus->pub_conn);
    bus->pub_conn = NULL; /* the next publish connects again */
    complete_all(bus, st);
    rbus_leave(bus);
}

void rpub_close_all(eddy_rbus *bus) {
    rconn_close(bus->pub_conn);
    bus->pub_conn = NULL;
    complete_all(bus, EDDY_ERR_CLOSED);
}

eddy_status eddy_rbus_publish(eddy_rbus *bus, const char *subject, const eddy_event *ev,
                              eddy_publish_fn done, void *user, eddy_error *err) {
    if (!bus)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "bus is NULL");
    if (bus->freeing)
        return eddy__fail(err, EDDY_ERR_CLOSED, "the bus is being freed");
    rpub *p = calloc(1, sizeof(*p));
    if (!p)
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    eddy__cmdlist_init(&p->cmds);
    eddy_status st = eddy__publish_prepare(bus->publisher, subject, ev, &p->cmds, err);
    if (st != EDDY_OK) {
        eddy__cmdlist_reset(&p->cmds);
        free(p);
        return st;
    }
    p->done = done;
    p->user = user;
    rbus_enter(bus);
    if (!bus->pub_conn &&
        rconn_open(bus->loop, &bus->s, &pub_ops, bus, &bus->pub_conn) != EDDY_OK) {
        bus->pub_conn = NULL;
        eddy__cmdlist_reset(&p->cmds);
        free(p);
        rbus_leave(bus);
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory connecting");
    }
    if (bus->pub_tail)
        bus->pub_tail->next = p;
    else
        bus->pub_head = p;
    bus->pub_tail = p;
    if (!bus->pub_unsent)
        bus->pub_unsent = p;
    if (rconn_is_up(bus->pub_conn))
        send_unsent(bus);
    rbus_leave(bus);
    return EDDY_OK;
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
