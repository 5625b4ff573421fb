/* SPDX-License-Identifier: BSD-3-Clause */
/* One publish call's sequence (publish_flow.h). The rules on what may go again are the
 * publisher's (eddy__publish_moved_again, eddy__publish_again); this file holds the order in
 * which both front ends apply them: a refusal is looked at only on a failed send and only
 * before the deadline, a lost library only on a send that was answered. */
#include "bus/publish_flow.h"

#include <string.h>

#include "link/link_drive.h"

eddy_status eddy__publish_flow_begin(eddy__publish_flow *f, eddy__publisher *publisher,
                                     const eddy__settings *s, const char *subject,
                                     const eddy_event *const *evs, size_t n, long long now,
                                     eddy__cmdlist *cmds, eddy_error *err) {
    *f = (eddy__publish_flow){
        .publisher = publisher, .npub = n, .until = eddy__link_call_deadline(s, now, 0, 0)};
    eddy_status st = eddy__publish_prepare_batch(publisher, subject, evs, n, cmds, err);
    if (st != EDDY_OK)
        eddy__cmdlist_reset(cmds); /* a build that failed half-way may have grown the list */
    return st;
}

eddy__pub_step eddy__publish_flow_feed(eddy__publish_flow *f, const eddy__cmdlist *sent,
                                       eddy_status st, const eddy_error *err,
                                       redisReply *const *replies, long long now,
                                       eddy__cmdlist *again) {
    if (st != EDDY_OK)
        return now < f->until &&
                       eddy__publish_moved_again(f->publisher, f->npub, sent, st, err, again)
                   ? EDDY__PUB_SEND
                   : EDDY__PUB_END;
    return eddy__publish_again(f->publisher, sent, replies, again) ? EDDY__PUB_SEND : EDDY__PUB_END;
}

eddy_status eddy__publish_flow_end(eddy__publish_flow *f, const eddy__cmdlist *sent, eddy_status st,
                                   const eddy_error *err, redisReply **replies, char *id,
                                   size_t idsize, eddy_error *out) {
    f->published = 0;
    if (st != EDDY_OK) {
        if (out && err)
            *out = *err;
        else if (out)
            memset(out, 0, sizeof(*out));
        return st;
    }
    size_t next = 0;
    for (size_t i = 0; st == EDDY_OK && i < f->npub; i++) {
        st = eddy__publish_result(f->publisher, sent, next, replies, &next, i == 0 ? id : NULL,
                                  idsize, out);
        if (st == EDDY_OK)
            f->published++;
    }
    return st;
}

void eddy__publish_mux_settle(eddy__publisher *p, eddy__mux *m) {
    if (eddy__mux_take_loss(m) && p)
        eddy__publisher_connection_lost(p);
}
