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
 * publish_dedup_ms (src/link/library.c holds the Lua). */
void eddy__mfn_eddy_append(eddy__mctx *c, int nkeys, const char *const *keys, const size_t *klen,
                           int nargs, const char *const *args, const size_t *alen);
void eddy__mfn_eddy_append_dedup(eddy__mctx *c, int nkeys, const char *const *keys,
                                 const size_t *klen, int nargs, const char *const *args,
                                 const size_t *alen);
/* pub_dedup.c: the dedup record of one subject, as the Lua keeps it (src/link/library.c): a hash of
 * event id -> the entry id it was first published as ("<entry id> <version>" from an append),
 * and a zset of event id -> when that is forgotten (unix ms). Both keys expire a window after
 * the last write; each call first forgets up to EDDY__MPUBREC_PRUNE ids whose time passed. */
#define EDDY__MPUBREC_PRUNE 64
/* Room for a value: "<ms>-<seq> <version>". */
#define EDDY__MPUBREC_VALUE_MAX 64
typedef struct eddy__mpubrec {
    eddy__mobj *ids, *exp; /* NULL while the key does not exist */
    bool ids_new, exp_new; /* created by eddy__mpubrec_prepare */
} eddy__mpubrec;
/* Finds the record's keys (keys[0] the hash, keys[1] the zset): false, with WRONGTYPE replied,
 * when either holds another type. */
bool eddy__mpubrec_open(eddy__mctx *c, const char *const *keys, const size_t *klen,
                        eddy__mpubrec *r);
/* Forgets up to EDDY__MPUBREC_PRUNE ids whose time passed (a key left empty goes). */
void eddy__mpubrec_prune(eddy__mctx *c, eddy__mpubrec *r);
/* The value recorded for id while its time has not passed, else NULL. */
const eddy__mblob *eddy__mpubrec_first(eddy__mctx *c, const eddy__mpubrec *r, const char *id,
                                       size_t len);
/* Records id (value left empty, with room for EDDY__MPUBREC_VALUE_MAX bytes, in *value) to be
 * forgotten after window ms, creating the keys when missing. false on OOM: the caller undoes
 * with eddy__mpubrec_forget and eddy__mpubrec_close. */
bool eddy__mpubrec_prepare(eddy__mctx *c, eddy__mpubrec *r, const char *const *keys,
                           const size_t *klen, const char *id, size_t len,
                           unsigned long long window, eddy__mblob **value);
void eddy__mpubrec_forget(eddy__mctx *c, eddy__mpubrec *r, const char *id, size_t len);
/* Deletes a key left empty; with `keep` (the call succeeded) sets both keys to expire after
 * window ms, as the Lua's PEXPIRE. */
void eddy__mpubrec_close(eddy__mctx *c, eddy__mpubrec *r, bool keep, unsigned long long window);

/* pub_dedup.c: the library's deduplicating publish. */
void eddy__mfn_eddy_publish(eddy__mctx *c, int nkeys, const char *const *keys, const size_t *klen,
                            int nargs, const char *const *args, const size_t *alen);

/* commit.c: the library's commit of a transactional handler. */
void eddy__mfn_eddy_commit(eddy__mctx *c, int nkeys, const char *const *keys, const size_t *klen,
                           int nargs, const char *const *args, const size_t *alen);

/* model.c: the library's read model commit. */
void eddy__mfn_eddy_model(eddy__mctx *c, int nkeys, const char *const *keys, const size_t *klen,
                          int nargs, const char *const *args, const size_t *alen);

/* The Lua's count(): 1-15 decimal digits. `i` is a 0-based argument index; a missing argument
 * (i outside [0, nargs)) is Lua's nil. */
bool eddy__mfn_count(int nargs, const char *const *args, const size_t *alen, long long i,
                     unsigned long long *out);
/* es_append.c: the id XADD '*' would give (xcmd.c) for an entry appended to s now: the
 * engine's clock, or one above the stream's last id. False when the stream's last id is the
 * greatest there is (XADD's "exhausted the last possible ID"). */
bool eddy__mfn_auto_id(eddy__mctx *c, const eddy__mstream *s, eddy__mid *id);

#endif
