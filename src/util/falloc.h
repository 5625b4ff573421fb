/* SPDX-License-Identifier: BSD-3-Clause */
/* Allocation that a test can make fail: the memory engine, the feed core and the dedup set
 * allocate through these so that tests can fail the n-th allocation and check that each
 * reports out-of-memory without crashing, leaking or leaving half-made structures behind.
 *
 * The injection exists only in test builds (EDDY_FAULT_INJECTION, which -DEDDY_TESTS=ON
 * sets): elsewhere these are malloc, calloc and realloc inline, and the shipped libraries
 * hold no test code. (tests/oom fails allocations differently, from outside: it wraps the
 * allocator of a whole test program with ld --wrap.)
 *
 * Thread: any; the injection is process-wide, the count per thread. */
#ifndef EDDY_SRC_UTIL_FALLOC_H
#define EDDY_SRC_UTIL_FALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#ifdef EDDY_FAULT_INJECTION
void *eddy__fmalloc(size_t size);
void *eddy__fcalloc(size_t count, size_t size);
void *eddy__frealloc(void *ptr, size_t size);
/* The n-th allocation from now fails (n >= 1); with sticky, every later one fails too. n == 0
 * turns injection off. */
void eddy__falloc_fail_after(long n, bool sticky);
/* The allocations the calling thread made through these (for tests that size their loops). */
unsigned long eddy__falloc_count(void);
#else
static inline void *eddy__fmalloc(size_t size) { return malloc(size ? size : 1); }
static inline void *eddy__fcalloc(size_t count, size_t size) {
    return calloc(count ? count : 1, size ? size : 1);
}
static inline void *eddy__frealloc(void *ptr, size_t size) { return realloc(ptr, size ? size : 1); }
#endif

static inline void eddy__ffree(void *ptr) { free(ptr); }

/* A copy of s, or NULL. */
static inline char *eddy__fstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *copy = (char *)eddy__fmalloc(n);
    if (copy)
        memcpy(copy, s, n);
    return copy;
}

#endif
