/* SPDX-License-Identifier: BSD-3-Clause */
/* Allocation for the memory engine. Every allocation goes through here so that tests can make
 * the n-th one fail and check that the engine reports out-of-memory (NULL reply, block_ms -1)
 * without crashing, leaking or leaving half-made structures behind.
 *
 * Invariant: injection is off unless a test turned it on; the fast path is two relaxed loads
 * of data nobody writes meanwhile, and a thread-local count. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "memory/util.h"

static atomic_long fail_countdown; /* > 0: allocations left before the failing one */
static atomic_bool fail_sticky;
static atomic_bool failing; /* sticky failure reached */
/* For tests that size their fault loops; per thread, so counting costs no shared write (the
 * tests count the allocations of commands they run on their own thread). */
static _Thread_local unsigned long n_allocs;

void eddy__mem_fail_after(long n, bool sticky) {
    atomic_store(&failing, false);
    atomic_store(&fail_sticky, sticky);
    atomic_store(&fail_countdown, n > 0 ? n : 0);
}

unsigned long eddy__mem_alloc_count(void) { return n_allocs; }

static bool inject_failure(void) {
    n_allocs++;
    if (atomic_load_explicit(&failing, memory_order_relaxed))
        return true;
    long n = atomic_load_explicit(&fail_countdown, memory_order_relaxed);
    while (n > 0) {
        if (atomic_compare_exchange_weak(&fail_countdown, &n, n - 1)) {
            if (n != 1)
                return false;
            if (atomic_load(&fail_sticky))
                atomic_store(&failing, true);
            return true;
        }
    }
    return false;
}

void *eddy__mem_malloc(size_t size) {
    if (inject_failure())
        return NULL;
    return malloc(size ? size : 1);
}

void *eddy__mem_calloc(size_t count, size_t size) {
    if (inject_failure())
        return NULL;
    return calloc(count ? count : 1, size ? size : 1);
}

void *eddy__mem_realloc(void *ptr, size_t size) {
    if (inject_failure())
        return NULL;
    return realloc(ptr, size ? size : 1);
}

void eddy__mem_free(void *ptr) { free(ptr); }

char *eddy__mem_memdup(const void *ptr, size_t len) {
    char *copy = eddy__mem_malloc(len + 1);
    if (!copy)
        return NULL;
    if (len)
        memcpy(copy, ptr, len);
    copy[len] = '\0';
    return copy;
}
