/* Publishing on the blocking bus: the core checks and builds, this file sends, on the bus's
 * publishing connection (multiplexed, mux.h: each publish's commands contiguous on the wire). A
 * failed send is reported, never retried: a retry could store the message twice. The next publish
 * reconnects. */
#include <stdlib.h>

#include "error.h"
#include "internal.h"
#include "timing.h"

eddy_status bpub_exec_until(eddy_bus *bus, const eddy__cmdlist *cmds, long long deadline,
                            redisReply **replies, eddy_error *err) {
    eddy_status st = bmux_exec_until(&bus->pub, cmds, deadline, replies, err);
    if (st == EDDY_ERR_IO || st == EDDY_ERR_TIMEOUT)
        eddy__publisher_connection_lost(bus->publisher);
    return st;
}

eddy_status bpub_exec(eddy_bus *bus, const eddy__cmdlist *cmds, redisReply **replies,
                      eddy_error *err) {
    long long deadline = bconn_now_ms() + eddy__command_timeout_ms(&bus->s, -1);
    return bpub_exec_until(bus, cmds, deadline, replies, err);
}

eddy_status eddy_bus_publish_batch(eddy_bus *bus, const char *subject, const eddy_event *const *evs,
                                   size_t n, size_t *published, eddy_error *err) {
    if (published)
        *published = 0;
    if (!bus || (n && !evs))
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "bus or events is NULL");
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    eddy_status st = EDDY_OK;
    for (size_t i = 0; st == EDDY_OK && i < n; i++)
        st = eddy__publish_prepare(bus->publisher, subject, evs[i], &cmds, err);
    redisReply **replies = NULL;
    if (st == EDDY_OK && cmds.n > 0 && !(replies = calloc(cmds.n, sizeof(*replies))))
        st = eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    if (st == EDDY_OK && cmds.n > 0)
        st = bpub_exec(bus, &cmds, replies, err);
    size_t next = 0;
    for (size_t i = 0; st == EDDY_OK && i < n; i++) {
        st = eddy__publish_result(bus->publisher, &cmds, next, replies, &next, NULL, 0, err);
        if (st == EDDY_OK && published)
            (*published)++;
    }
    if (replies)
        for (size_t i = 0; i < cmds.n; i++)
            if (replies[i])
                freeReplyObject(replies[i]);
    free(replies);
    eddy__cmdlist_reset(&cmds);
    return st;
}

eddy_status eddy_bus_publish(eddy_bus *bus, const char *subject, const eddy_event *ev,
                             char *entry_id, size_t entry_id_size, eddy_error *err) {
    if (!bus)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "bus is NULL");
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    redisReply *replies[2] = {NULL, NULL};
    eddy_status st = eddy__publish_prepare(bus->publisher, subject, ev, &cmds, err);
    if (st == EDDY_OK)
        st = bpub_exec(bus, &cmds, replies, err);
    size_t next;
    if (st == EDDY_OK)
        st = eddy__publish_result(bus->publisher, &cmds, 0, replies, &next, entry_id, entry_id_size,
                                  err);
    for (size_t i = 0; i < cmds.n; i++)
        if (replies[i])
            freeReplyObject(replies[i]);
    eddy__cmdlist_reset(&cmds);
    return st;
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
