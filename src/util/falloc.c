/* SPDX-License-Identifier: BSD-3-Clause */
/* The fault injection of test builds; see falloc.h. Invariant: injection is off unless a test
 * turned it on; the fast path is two relaxed loads of data nobody writes meanwhile, and a
 * thread-local count. */
#include "util/falloc.h"

#ifdef EDDY_FAULT_INJECTION
#include <stdatomic.h>

static atomic_long fail_countdown; /* > 0: allocations left before the failing one */
static atomic_bool fail_sticky;
static atomic_bool failing;                  /* the sticky failure was reached */
static _Thread_local unsigned long n_allocs; /* per thread: counting costs no shared write */

void eddy__falloc_fail_after(long n, bool sticky) {
    atomic_store(&failing, false);
    atomic_store(&fail_sticky, sticky);
    atomic_store(&fail_countdown, n > 0 ? n : 0);
}

unsigned long eddy__falloc_count(void) { return n_allocs; }

static bool inject(void) {
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

void *eddy__fmalloc(size_t size) { return inject() ? NULL : malloc(size ? size : 1); }
void *eddy__fcalloc(size_t count, size_t size) {
    return inject() ? NULL : calloc(count ? count : 1, size ? size : 1);
}
void *eddy__frealloc(void *ptr, size_t size) {
    return inject() ? NULL : realloc(ptr, size ? size : 1);
}
#else
typedef int eddy__falloc_unused; /* ISO C wants a translation unit to declare something */
#endif
