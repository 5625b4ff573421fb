/* SPDX-License-Identifier: BSD-3-Clause */
/* Publishing on the blocking bus: the core checks and builds, this file sends, on the bus's
 * publishing connection (multiplexed, mux.h: each publish's commands contiguous on the wire). A
 * failed send is reported, never retried: a retry could store the message twice. The next publish
 * reconnects. The exceptions are the core's: deduplicated publishes the server refused unwritten
 * because it had lost eddy's function library go once more behind a load of it
 * (eddy__publish_again), and publishes a cluster refused unwritten (MOVED, TRYAGAIN, CLUSTERDOWN)
 * go again on the next connection while the deadline allows (eddy__publish_moved_again). */
#include <stdlib.h>

#include "bus/publish_flow.h"
#include "error.h"
#include "events/event_internal.h"
#include "internal.h"
#include "link/link_drive.h"
#include "timing.h"

eddy_status eddy__bpub_exec_until(eddy_bus *bus, const eddy__cmdlist *cmds, long long deadline,
                                  redisReply **replies, eddy_error *err) {
    return eddy__bmux_exec_until(&bus->pub, cmds, deadline, replies, err);
}

eddy_status eddy__bpub_send(eddy_bus *bus, const eddy__cmdlist *cmds, long long deadline,
                            redisReply **replies, eddy__bmux_wait *w,
                            void (*on_done)(void *user, bool failed), void *user, eddy_error *err) {
    return eddy__bmux_send(&bus->pub, cmds, deadline, replies, w, on_done, user, err);
}

eddy_status eddy__bpub_finish(eddy_bus *bus, eddy__bmux_wait *w, eddy_error *err) {
    return eddy__bmux_finish(&bus->pub, w, err);
}

eddy_status eddy__bpub_exec(eddy_bus *bus, const eddy__cmdlist *cmds, redisReply **replies,
                            eddy_error *err) {
    return eddy__bpub_exec_until(
        bus, cmds, eddy__link_call_deadline(&bus->s, eddy__mono_ms(), 0, 0), replies, err);
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

/* Sends the flow's commands, again as long as the core says so (by the flow's deadline: the call
 * as a whole keeps command_timeout_ms), then reads the outcome. */
static eddy_status run_flow(eddy_bus *bus, eddy__publish_flow *f, eddy__cmdlist *cmds, char *id,
                            size_t idsize, eddy_error *err) {
    sent s = {.n = 0};
    eddy_error e = {0};
    eddy_status st = cmds->n ? send_once(bus, cmds, f->until, &s, &e) : EDDY_OK;
    eddy__cmdlist again;
    /* Each try reconnects, after the connection's backoff (conn.c). */
    while (cmds->n && eddy__publish_flow_feed(f, cmds, st, &e, s.replies, eddy__mono_ms(),
                                              &again) == EDDY__PUB_SEND) {
        sent_free(&s);
        eddy__cmdlist_reset(cmds);
        *cmds = again;
        st = send_once(bus, cmds, f->until, &s, &e);
    }
    st = eddy__publish_flow_end(f, cmds, st, &e, s.replies, id, idsize, err);
    sent_free(&s);
    eddy__cmdlist_reset(cmds);
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
    eddy__publish_flow f;
    eddy_status st = eddy__publish_flow_begin(&f, bus->core.publisher, &bus->s, subject, evs, n,
                                              eddy__mono_ms(), &cmds, err);
    if (st == EDDY_OK)
        st = run_flow(bus, &f, &cmds, NULL, 0, err);
    if (published)
        *published = f.published;
    return st;
}

eddy_status eddy_bus_publish(eddy_bus *bus, const char *subject, const eddy_event *ev,
                             char *entry_id, size_t entry_id_size, eddy_error *err) {
    if (!bus)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "bus is NULL");
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    eddy__publish_flow f;
    eddy_status st = eddy__publish_flow_begin(&f, bus->core.publisher, &bus->s, subject, &ev, 1,
                                              eddy__mono_ms(), &cmds, err);
    return st == EDDY_OK ? run_flow(bus, &f, &cmds, entry_id, entry_id_size, err) : st;
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
