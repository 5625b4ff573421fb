/* SPDX-License-Identifier: BSD-3-Clause */
/* The decisions every link driver shares; see link_drive.h. Kept apart from link.c, which
 * moves bytes, because these are about time and the owner's gate, which the link itself never
 * reads. */
#include "link/link_drive.h"

#include "config/conn_state.h"
#include "error.h"
#include "log.h"

long long eddy__link_cmd_deadline(const eddy__settings *s, long long now_ms, long long block_ms,
                                  long long ahead_ms) {
    long long at = now_ms + eddy__command_timeout_ms(s, block_ms);
    return ahead_ms > at ? ahead_ms : at;
}

long long eddy__link_call_deadline(const eddy__settings *s, long long now_ms,
                                   long long wall_deadline_ms, long long wall_now_ms) {
    long long at = now_ms + eddy__command_timeout_ms(s, -1);
    long long own = now_ms + (wall_deadline_ms - wall_now_ms);
    return wall_deadline_ms > 0 && own < at ? own : at;
}

long long eddy__deadline_first(long long a_ms, long long b_ms) {
    if (a_ms < 0)
        return b_ms;
    return b_ms >= 0 && b_ms < a_ms ? b_ms : a_ms;
}

long long eddy__link_next_deadline(const eddy__link *l, long long cmd_ms) {
    return eddy__deadline_first(eddy__link_deadline(l), cmd_ms);
}

void eddy__link_replies_done(eddy__reply_arena *arena, redisReply **replies, size_t n) {
    if (arena)
        eddy__reply_arena_reset(arena);
    for (size_t i = 0; i < n; i++) {
        if (replies[i] && !arena)
            freeReplyObject(replies[i]);
        replies[i] = NULL;
    }
}

static bool gated(const eddy__settings *s, const eddy__reconnect *gate) {
    return gate && s->url.kind != EDDY__URL_MEMORY;
}

long long eddy__link_gate_wait(const eddy__settings *s, const eddy__reconnect *gate,
                               long long now_ms) {
    return gated(s, gate) ? eddy__reconnect_wait_ms(gate, now_ms) : 0;
}

void eddy__link_gate_start(eddy__reconnect *gate, const eddy__settings *s, const eddy__link *l,
                           long long now_ms) {
    if (!gated(s, gate))
        return;
    eddy__reconnect_started(gate, now_ms, eddy__link_proved(l), s->reconnect_min_ms,
                            s->reconnect_max_ms);
    eddy__log(&s->log, EDDY_LOG_DEBUG, "connecting (connection %p)", (void *)gate);
}

eddy_status eddy__link_gate_connect(eddy__reconnect *gate, const eddy__settings *s, eddy__link *l,
                                    long long now_ms, eddy_error *err) {
    eddy__link_gate_start(gate, s, l, now_ms); /* first: the connect clears eddy__link_proved */
    return eddy__link_connect(l, now_ms, err);
}

void eddy__link_gate_leave(eddy__reconnect *gate, const eddy__link *l) {
    if (gate && eddy__link_proved(l))
        eddy__reconnect_proved(gate);
}

void eddy__link_gate_down(eddy__reconnect *gate, const eddy__settings *s, const eddy__link *l,
                          bool was_up, unsigned *epoch, eddy_status st, const eddy_error *why) {
    eddy__link_gate_leave(gate, l);
    if (gate && !was_up)
        eddy__reconnect_failed(gate, st);
    eddy__conn_down(s->conn_state, epoch, st, why);
}

eddy_status eddy__link_late_error(eddy_error *err, const eddy_error *last, const char *what) {
    bool why = last && last->status != EDDY_OK && last->detail[0];
    eddy_status st = last && eddy__conn_refused(last->status) ? last->status : EDDY_ERR_IO;
    if (why)
        return eddy__fail(err, st, "%s: %s", what, last->detail);
    return eddy__fail(err, st, "%s", what);
}
