/* SPDX-License-Identifier: BSD-3-Clause */
/* Allocation for the memory engine: through util/falloc.h, so that a test build can fail the
 * n-th allocation and check that the engine reports out-of-memory (NULL reply, block_ms -1)
 * without crashing, leaking or leaving half-made structures behind. */
#include <string.h>

#include "memory/util.h"

char *eddy__mem_memdup(const void *ptr, size_t len) {
    char *copy = eddy__mem_malloc(len + 1);
    if (!copy)
        return NULL;
    if (len)
        memcpy(copy, ptr, len);
    copy[len] = '\0';
    return copy;
}
