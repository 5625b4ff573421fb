/* SPDX-License-Identifier: BSD-3-Clause */
/* The memory:// backend: an in-process engine that executes the same Redis commands eddy
 * sends to a real server, with the same semantics and the same reply shapes (hiredis
 * redisReply trees), so the core's command builders and reply interpreters serve both
 * backends unchanged. It is a product feature, not a mock.
 *
 * Engines are named (memory://name; memory:// is the name "") and shared, reference counted,
 * by everything in the process that opens the same name. All state sits behind one mutex;
 * each command runs atomically, and MULTI ... EXEC on one connection runs atomically too.
 * The lock covers running the command and copying its reply out; the reply's redisReply tree
 * is allocated after it is released.
 *
 * Blocking reads: a command with BLOCK that finds nothing does not wait inside the engine.
 * It returns NULL with *block_ms set, and the caller waits (the memory:// link parks the
 * connection, eddy__mem_conn_park, and polls an eventfd) and runs it again.
 *
 * Time: stream ids use the engine's clock (wall-clock milliseconds, never going backwards),
 * so ids look like Redis ids. Key expiry (PEXPIRE/EXPIRE) is checked on access.
 *
 * Thread: every function is safe from any thread. */
#ifndef EDDY_SRC_MEMORY_ENGINE_H
#define EDDY_SRC_MEMORY_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

typedef struct eddy__mem_engine eddy__mem_engine;
typedef struct eddy__mem_conn eddy__mem_conn;

/* Opens (creating on first use) the engine with this name. NULL on OOM.
 * Ownership: each acquire is matched by one release; the last release frees the engine. */
eddy__mem_engine *eddy__mem_engine_acquire(const char *name);
void eddy__mem_engine_release(eddy__mem_engine *engine);

/* A connection: per-client state (MULTI queue). NULL on OOM. Not shared between threads at
 * the same time (like a hiredis context). */
eddy__mem_conn *eddy__mem_conn_new(eddy__mem_engine *engine);
void eddy__mem_conn_free(eddy__mem_conn *conn);
eddy__mem_engine *eddy__mem_conn_engine(eddy__mem_conn *conn);
/* From now on the connection's replies are built in `arena` (reply_arena.h; NULL: back to
 * malloc'd trees): the caller resets the arena instead of freeing them with freeReplyObject. */
struct eddy__reply_arena;
void eddy__mem_conn_set_arena(eddy__mem_conn *conn, struct eddy__reply_arena *arena);

/* Executes one command. Returns a reply the caller frees with freeReplyObject: a Redis-like
 * error reply (REDIS_REPLY_ERROR with Redis's own text, e.g. "NOGROUP ...", "BUSYGROUP ...",
 * "WRONGTYPE ...", "ERR unknown command ...") for bad commands. Returns NULL in two cases:
 * out of memory (*block_ms == -1), or a blocking read that found nothing (*block_ms set to
 * the command's BLOCK argument, 0 meaning forever): wait, then call again with the same
 * command. block_ms may be NULL for callers that never send BLOCK. */
redisReply *eddy__mem_exec(eddy__mem_conn *conn, int argc, const char **argv, const size_t *argvlen,
                           long long *block_ms);

/* Write sequence: increases on every command that changes data. */
uint64_t eddy__mem_engine_seq(eddy__mem_engine *engine);

/* For a connection whose last command was a blocking read that found nothing, a driver that
 * waits on a file descriptor (the memory:// link, src/link/link_mem.c) parks it: from now on the
 * writes that can serve its read (an XADD to one of the keys it reads, or any other kind of
 * write: readers of other streams sleep through a publisher's appends, and deliveries,
 * acknowledgements and claims wake nobody) write 1 to fd (an eventfd, non-blocking) once; the
 * caller then unparks and runs the read again. False (nothing
 * parked) when such a write came since the read found nothing (the engine noted its write
 * sequence then, under the same hold of its lock): run it again at once. The fd must stay
 * open until eddy__mem_conn_unpark (or eddy__mem_conn_free, which unparks). No syscall unless
 * a write wakes it. */
bool eddy__mem_conn_park(eddy__mem_conn *conn, int fd);
void eddy__mem_conn_unpark(eddy__mem_conn *conn);

#endif
