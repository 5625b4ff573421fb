/* SPDX-License-Identifier: BSD-3-Clause */
/* A stopping bus's way out (stop_flow.h): what to send next and what a failure means, for both
 * front ends. */
#include "bus/stop_flow.h"

#include "bus/bus_core.h"
#include "bus/retention.h"

/* Ends the flow with the drop's outcome st (logged unless EDDY_OK). */
static eddy__stop_step end(eddy__stop_flow *f, eddy_status st, const eddy_error *err) {
    eddy__bus_core_dropped(f->s, st, err);
    eddy__cmdlist_reset(&f->cmds);
    return f->step = EDDY__STOP_DONE;
}

/* Plans LIST, or ends the flow when there is nothing to drop. */
static eddy__stop_step list(eddy__stop_flow *f, eddy__sub *const *subs, size_t n) {
    eddy__cmdlist_reset(&f->cmds);
    bool need = false;
    eddy_status st = eddy__retention_stop_list(f->s, subs, n, &f->cmds, &need);
    return st != EDDY_OK || !need ? end(f, st, NULL) : (f->step = EDDY__STOP_LIST);
}

eddy__stop_step eddy__stop_flow_begin(eddy__stop_flow *f, const eddy__settings *s,
                                      eddy__inbox *inbox, eddy__sub *const *subs, size_t n) {
    f->s = s;
    eddy__cmdlist_init(&f->cmds);
    if (!inbox)
        return list(f, subs, n);
    f->step = EDDY__STOP_LEAVE;
    eddy_status st = eddy__inbox_close_cmds(inbox, subs, n, &f->cmds);
    return st == EDDY_OK ? f->step : eddy__stop_flow_feed(f, st, NULL, NULL, subs, n);
}

eddy__stop_step eddy__stop_flow_feed(eddy__stop_flow *f, eddy_status st, redisReply *const *replies,
                                     const eddy_error *err, eddy__sub *const *subs, size_t n) {
    if (f->step == EDDY__STOP_LEAVE) {
        eddy_error e;
        st = eddy__inbox_cmds_status(st, err, replies, f->cmds.n, &e);
        eddy__bus_core_left(f->s, st, &e);
        return st == EDDY_ERR_CLOSED ? end(f, EDDY_OK, NULL) : list(f, subs, n);
    }
    if (f->step != EDDY__STOP_LIST || st != EDDY_OK)
        return end(f, st, err); /* DESTROY's replies may be errors: only its sending counts */
    eddy__cmdlist_reset(&f->cmds);
    st = eddy__retention_stop_destroy(f->s, subs, n, replies[0], &f->cmds);
    if (st != EDDY_OK || f->cmds.n == 0)
        return end(f, st, NULL);
    return f->step = EDDY__STOP_DESTROY;
}

void eddy__stop_flow_reset(eddy__stop_flow *f) {
    eddy__cmdlist_reset(&f->cmds);
    f->step = EDDY__STOP_DONE;
}
