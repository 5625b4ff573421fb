/* SPDX-License-Identifier: BSD-3-Clause */
/* Publishing on the blocking bus: the core checks and builds, this file sends, on the bus's
 * publishing connection (multiplexed, mux.h: each publish's commands contiguous on the wire). A
 * failed send is reported, never retried: a retry could store the message twice. The next publish
 * reconnects. The exceptions are the core's: deduplicated publishes the server refused unwritten
 * because it had lost eddy's function library go once more behind a load of it
 * (eddy__publish_again), and publishes a cluster refused unwritten (MOVED, TRYAGAIN, CLUSTERDOWN)
 * go again on the next connection while the deadline allows (eddy__publish_moved_again). */
#include <stdlib.h>

#include "error.h"
#include "events/event_internal.h"
#include "internal.h"
#include "timing.h"

eddy_status eddy__bpub_exec_until(eddy_bus *bus, const eddy__cmdlist *cmds, long long deadline,
                                  redisReply **replies, eddy_error *err) {
    return eddy__publisher_after(bus->publisher,
                                 eddy__bmux_exec_until(&bus->pub, cmds, deadline, replies, err));
}

eddy_status eddy__bpub_send(eddy_bus *bus, const eddy__cmdlist *cmds, long long deadline,
                            redisReply **replies, eddy__bmux_wait *w,
                            void (*on_done)(void *user, bool failed), void *user, eddy_error *err) {
    return eddy__publisher_after(
        bus->publisher, eddy__bmux_send(&bus->pub, cmds, deadline, replies, w, on_done, user, err));
}

eddy_status eddy__bpub_finish(eddy_bus *bus, eddy__bmux_wait *w, eddy_error *err) {
    return eddy__publisher_after(bus->publisher, eddy__bmux_finish(&bus->pub, w, err));
}

eddy_status eddy__bpub_exec(eddy_bus *bus, const eddy__cmdlist *cmds, redisReply **replies,
                            eddy_error *err) {
    long long deadline = eddy__mono_ms() + eddy__command_timeout_ms(&bus->s, -1);
    return eddy__bpub_exec_until(bus, cmds, deadline, replies, err);
}

/* One send's replies: on the stack for a single publish, allocated for a batch. */
typedef struct sent {
    redisReply *small[4];
    redisReply **replies;
    size_t n;
} sent;

static void sent_free(sent *s) {
    for (size_t i = 0; s->replies && i < s->n; i++)
        if (s->replies[i])
            freeReplyObject(s->replies[i]);
    if (s->replies != s->small)
        free(s->replies);
    s->replies = NULL;
    s->n = 0;
}

static eddy_status send_once(eddy_bus *bus, const eddy__cmdlist *cmds, long long deadline, sent *s,
                             eddy_error *err) {
    s->n = cmds->n;
    s->replies = cmds->n <= 4 ? s->small : calloc(cmds->n, sizeof(*s->replies));
    if (!s->replies)
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < s->n; i++)
        s->replies[i] = NULL;
    return eddy__bpub_exec_until(bus, cmds, deadline, s->replies, err);
}

/* Sends cmds (npub publishes); when the core says so, sends them again (cmds then holds what was
 * sent), by the same deadline: the call as a whole keeps command_timeout_ms. The replies in s
 * belong to cmds. */
static eddy_status send_publishes(eddy_bus *bus, eddy__cmdlist *cmds, size_t npub, sent *s,
                                  eddy_error *err) {
    long long deadline = eddy__mono_ms() + eddy__command_timeout_ms(&bus->s, -1);
    eddy_error e = {0};
    eddy_status st = send_once(bus, cmds, deadline, s, &e);
    eddy__cmdlist again;
    /* Each try reconnects, after the connection's backoff (conn.c): bounded by the deadline. */
    while (st != EDDY_OK && eddy__mono_ms() < deadline &&
           eddy__publish_moved_again(bus->publisher, npub, cmds, st, &e, &again)) {
        sent_free(s);
        eddy__cmdlist_reset(cmds);
        *cmds = again;
        st = send_once(bus, cmds, deadline, s, &e);
    }
    if (st != EDDY_OK) {
        if (err)
            *err = e;
        return st;
    }
    if (eddy__publish_again(bus->publisher, cmds, s->replies, &again)) {
        sent_free(s);
        eddy__cmdlist_reset(cmds);
        *cmds = again;
        st = send_once(bus, cmds, deadline, s, err);
    }
    return st;
}

eddy_status eddy_bus_publish_batch(eddy_bus *bus, const char *subject, const eddy_event *const *evs,
                                   size_t n, size_t *published, eddy_error *err) {
    if (published)
        *published = 0;
    if (!bus || (n && !evs))
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "bus or events is NULL");
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    eddy_status st = eddy__publish_prepare_batch(bus->publisher, subject, evs, n, &cmds, err);
    sent s = {.n = 0};
    if (st == EDDY_OK && cmds.n > 0)
        st = send_publishes(bus, &cmds, n, &s, err);
    size_t next = 0;
    for (size_t i = 0; st == EDDY_OK && i < n; i++) {
        st = eddy__publish_result(bus->publisher, &cmds, next, s.replies, &next, NULL, 0, err);
        if (st == EDDY_OK && published)
            (*published)++;
    }
    sent_free(&s);
    eddy__cmdlist_reset(&cmds);
    return st;
}

eddy_status eddy_bus_publish(eddy_bus *bus, const char *subject, const eddy_event *ev,
                             char *entry_id, size_t entry_id_size, eddy_error *err) {
    if (!bus)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "bus is NULL");
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    sent s = {.n = 0};
    eddy_status st = eddy__publish_prepare(bus->publisher, subject, ev, &cmds, err);
    if (st == EDDY_OK)
        st = send_publishes(bus, &cmds, 1, &s, err);
    size_t next;
    if (st == EDDY_OK)
        st = eddy__publish_result(bus->publisher, &cmds, 0, s.replies, &next, entry_id,
                                  entry_id_size, err);
    sent_free(&s);
    eddy__cmdlist_reset(&cmds);
    return st;
}

eddy_status eddy_bus_new_event(eddy_bus *bus, const char *type, eddy_event **out, eddy_error *err) {
    if (out)
        *out = NULL;
    if (!bus || !out)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "bus or out is NULL");
    return eddy__event_create_for(bus->s.source, type, "eddy_bus_new_event", out, err);
}

eddy_status eddy_bus_publish_value(eddy_bus *bus, const char *subject, const char *type,
                                   eddy_pack_fn pack, void *user, eddy_error *err) {
    if (!bus)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "bus is NULL");
    eddy_event *ev = NULL;
    eddy_status st = eddy__publish_value_event(&bus->s, type, pack, user, &ev, err);
    if (st == EDDY_OK)
        st = eddy_bus_publish(bus, subject, ev, NULL, 0, err);
    eddy_event_free(ev);
    return st;
}
