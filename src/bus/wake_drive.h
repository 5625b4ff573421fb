/* SPDX-License-Identifier: BSD-3-Clause */
/* The wake connection's steps, as both front ends take them (wakeup.h has the design;
 * blocking/share.c's wake thread and reactive/wake.c send, wait and reconnect): what its next
 * round trip is, or how long it idles, and what its replies wake. A lost connection is
 * eddy__wakeup_reset, as before.
 *
 * Thread: as the wake-up (wakeup.h): woken runs under its lock and must not call back into it. */
#ifndef EDDY_SRC_BUS_WAKE_DRIVE_H
#define EDDY_SRC_BUS_WAKE_DRIVE_H

#include <stdbool.h>

#include "bus/wakeup.h"
#include "log.h"

/* With nothing watched the wake connection idles this long, unless a watch ends it sooner. */
#define EDDY__WAKE_IDLE_MS 60000

/* Plans the wake connection's next round trip into cmds (reset here): true to send it, its
 * last command blocking *block_ms (-1: none); false to idle *idle_ms first (nothing watched,
 * or out of memory). */
bool eddy__wake_next(eddy__wakeup *w, long long block_ms, eddy__cmdlist *cmds, long long *block_out,
                     long long *idle_ms);

/* The replies to the round eddy__wake_next planned: every consumer watching a stream with news
 * is woken (eddy__consumer_wake), then woken(its owner, user) is told, so that its front end
 * plans it. A reply of the wrong shape is logged to log (its streams' ids are unknown again and
 * fixed by the next plan). */
void eddy__wake_took(eddy__wakeup *w, const eddy__cmdlist *cmds, redisReply **replies, size_t n,
                     void (*woken)(void *owner, void *user), void *user, const eddy__logger *log);

#endif
