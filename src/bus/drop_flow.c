/* SPDX-License-Identifier: BSD-3-Clause */
/* The fanout groups' drop at stop (drop_flow.h): what to send next and what a failure means,
 * for both front ends. */
#include "bus/drop_flow.h"

#include "bus/bus_core.h"
#include "bus/retention.h"

/* Ends the flow with st (logged unless EDDY_OK). */
static eddy__drop_step end(eddy__drop_flow *f, eddy_status st, const eddy_error *err) {
    eddy__bus_core_dropped(f->s, st, err);
    eddy__cmdlist_reset(&f->cmds);
    return f->step = EDDY__DROP_DONE;
}

eddy__drop_step eddy__drop_flow_begin(eddy__drop_flow *f, const eddy__settings *s,
                                      eddy__sub *const *subs, size_t n) {
    f->s = s;
    f->step = EDDY__DROP_LIST;
    eddy__cmdlist_init(&f->cmds);
    bool need = false;
    eddy_status st = eddy__retention_stop_list(s, subs, n, &f->cmds, &need);
    return st != EDDY_OK || !need ? end(f, st, NULL) : f->step;
}

eddy__drop_step eddy__drop_flow_feed(eddy__drop_flow *f, eddy_status st, redisReply *const *replies,
                                     const eddy_error *err, eddy__sub *const *subs, size_t n) {
    if (f->step != EDDY__DROP_LIST || st != EDDY_OK)
        return end(f, st, err); /* DESTROY's replies may be errors: only its sending counts */
    eddy__cmdlist_reset(&f->cmds);
    st = eddy__retention_stop_destroy(f->s, subs, n, replies[0], &f->cmds);
    if (st != EDDY_OK || f->cmds.n == 0)
        return end(f, st, NULL);
    return f->step = EDDY__DROP_DESTROY;
}

void eddy__drop_flow_reset(eddy__drop_flow *f) {
    eddy__cmdlist_reset(&f->cmds);
    f->step = EDDY__DROP_DONE;
}
