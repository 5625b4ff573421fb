/* SPDX-License-Identifier: BSD-3-Clause */
/* Redis functions in the memory engine: FUNCTION LOAD, DELETE and FLUSH, and FCALL of the
 * functions the engine runs natively. The engine cannot run Lua; it knows some libraries by
 * name and runs their functions in C with the Lua's exact semantics (see function.c). Private
 * to src/memory/. */
#ifndef EDDY_SRC_MEMORY_FUNCTION_H
#define EDDY_SRC_MEMORY_FUNCTION_H

#include "memory/internal.h"

void eddy__mcmd_function_load(eddy__mctx *c);
void eddy__mcmd_function_delete(eddy__mctx *c);
void eddy__mcmd_function_flush(eddy__mctx *c);
void eddy__mcmd_fcall(eddy__mctx *c);

/* Forgets every loaded library (engine teardown). */
void eddy__mfunctions_free(eddy__mem_engine *e);

/* A native function: FCALL's keys and arguments, as slices of the command. Runs under the
 * engine lock like any command and writes its reply to c->out. */
typedef void (*eddy__mnative_fn)(eddy__mctx *c, int nkeys, const char *const *keys,
                                 const size_t *klen, int nargs, const char *const *args,
                                 const size_t *alen);

/* es_append.c: the "eddy" library's eddy_append, and its deduplicated form for
 * publish_dedup_ms (src/store.c holds the Lua). */
void eddy__mfn_eddy_append(eddy__mctx *c, int nkeys, const char *const *keys, const size_t *klen,
                           int nargs, const char *const *args, const size_t *alen);
void eddy__mfn_eddy_append_dedup(eddy__mctx *c, int nkeys, const char *const *keys,
                                 const size_t *klen, int nargs, const char *const *args,
                                 const size_t *alen);
/* pub_dedup.c: the library's deduplicating publish. */
void eddy__mfn_eddy_publish(eddy__mctx *c, int nkeys, const char *const *keys, const size_t *klen,
                            int nargs, const char *const *args, const size_t *alen);

/* The Lua's count(): 1-15 decimal digits. `i` is a 0-based argument index; a missing argument
 * (i outside [0, nargs)) is Lua's nil. */
bool eddy__mfn_count(int nargs, const char *const *args, const size_t *alen, long long i,
                     unsigned long long *out);

#endif
