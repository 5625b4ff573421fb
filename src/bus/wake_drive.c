/* SPDX-License-Identifier: BSD-3-Clause */
/* The wake connection's steps (wake_drive.h). */
#include "bus/wake_drive.h"

#include "bus/consumer.h"
#include "timing.h"

bool eddy__wake_next(eddy__wakeup *w, long long block_ms, eddy__cmdlist *cmds, long long *block_out,
                     long long *idle_ms) {
    eddy__cmdlist_reset(cmds);
    *block_out = -1;
    if (eddy__wakeup_plan(w, block_ms, cmds, block_out) != EDDY_OK) {
        *idle_ms = EDDY__NOMEM_RETRY_MS; /* nothing is sent */
        return false;
    }
    *idle_ms = EDDY__WAKE_IDLE_MS;
    return cmds->n > 0;
}

typedef struct waking {
    void (*woken)(void *owner, void *user);
    void *user;
} waking;

static void wake_one(const void *who, void *user) {
    waking *k = user;
    eddy__consumer_wake((eddy__consumer *)who);
    k->woken(eddy__consumer_owner(who), k->user);
}

void eddy__wake_took(eddy__wakeup *w, const eddy__cmdlist *cmds, redisReply **replies, size_t n,
                     void (*woken)(void *owner, void *user), void *user, const eddy__logger *log) {
    waking k = {woken, user};
    if (eddy__wakeup_feed(w, cmds, replies, n, wake_one, &k) == EDDY_ERR_PROTOCOL)
        eddy__log(log, EDDY_LOG_WARN, "wake-up: a reply of an unexpected shape");
}
