/* SPDX-License-Identifier: BSD-3-Clause */
/* Waiting limits shared by the front ends; see timing.h. */
#include "timing.h"

#include <time.h>

long long eddy__ready_timeout_ms(const eddy__settings *s) {
    return 2LL * s->connect_timeout_ms + 2LL * s->reconnect_max_ms;
}

long long eddy__command_timeout_ms(const eddy__settings *s, long long block_ms) {
    return (block_ms > 0 ? block_ms : 0) + (long long)s->command_timeout_ms;
}

long long eddy__mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
