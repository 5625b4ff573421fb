/* SPDX-License-Identifier: BSD-3-Clause */
/* The monotonic clock; see timing.h. */
#include "timing.h"

#include <time.h>

long long eddy__mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
