/* SPDX-License-Identifier: BSD-3-Clause */
/* The memory:// transport behind the link's interface (link.h): what eddy__link_* does when
 * the settings' URL is memory://name. src/link/link.c hands each call on; nothing else uses these.
 *
 * The engine (src/memory/engine.h) stands where a socket's server would. Commands queued by
 * eddy__link_send run in order on the caller's thread (sent counts those run, and a parked
 * read), with their replies built in the arena installed in the link's reader, if any: all
 * of them at eddy__link_flush (what reaching the server means here: the blocking driver
 * flushes a pipeline before it marks its read cuttable, so acknowledgements ahead of the read
 * have run), else each when its reply is taken (the reactive driver: so the reply it lends to
 * a callback is alone in the arena it resets after each). Either way a driver finds the
 * replies ready without waiting on anything (eddy__link_ready).
 *
 * A blocking read (XREADGROUP/XREAD BLOCK) that finds nothing parks: the connection is linked
 * in the engine's waiters (eddy__mem_conn_park) and the link's "socket" is an eventfd, always
 * watched for reading, that the engine writes to once a write can serve it (no syscall per
 * command: only a parked reader is ever signalled). eddy__link_io then unparks it and the next
 * eddy__link_reply runs it again; when its BLOCK time ends first (eddy__link_deadline, the
 * CLOCK_MONOTONIC milliseconds the drivers use, read when it parks), eddy__link_tick makes its
 * reply nil, as Redis answers. eddy__link_shutdown (any thread) writes the eventfd too, and
 * from then on nothing more runs: the link fails with EDDY_ERR_IO at the driver's next call,
 * so a cut read was never run by the engine and took nothing.
 *
 * Commands are borrowed, not copied: each must stay valid until its reply was taken or the
 * link was closed. Closing drops what is queued and not yet run (the engine never saw it).
 * An engine out of memory fails the link with EDDY_ERR_NOMEM (the command that hit it either
 * did not run or left its effect in the engine, as eddy__mem_exec says). */
#ifndef EDDY_SRC_LINK_MEM_H
#define EDDY_SRC_LINK_MEM_H

#include "link/link.h"

typedef struct eddy__memlink eddy__memlink;

/* Takes a reference on the engine named by the settings' URL. reader: the link's, whose
 * installed arena (if any) builds the replies; borrowed. NULL on OOM. */
eddy__memlink *eddy__memlink_new(const eddy__settings *s, redisReader *reader);
void eddy__memlink_free(eddy__memlink *m);

eddy_status eddy__memlink_connect(eddy__memlink *m, eddy_error *err);
void eddy__memlink_close(eddy__memlink *m);
eddy__link_phase eddy__memlink_phase(const eddy__memlink *m);
int eddy__memlink_fd(const eddy__memlink *m);
unsigned eddy__memlink_socket_id(const eddy__memlink *m);
unsigned eddy__memlink_wants(const eddy__memlink *m);
long long eddy__memlink_deadline(const eddy__memlink *m);
void eddy__memlink_tick(eddy__memlink *m, long long now_ms);
eddy_status eddy__memlink_io(eddy__memlink *m, unsigned ready, eddy_error *err);
eddy_status eddy__memlink_flush(eddy__memlink *m, eddy_error *err);
eddy_status eddy__memlink_send(eddy__memlink *m, const eddy__cmdlist *cmds, uint64_t *last,
                               eddy_error *err);
eddy_status eddy__memlink_reply(eddy__memlink *m, redisReply **reply, eddy_error *err);
eddy_status eddy__memlink_replies(eddy__memlink *m, redisReply **out, size_t max, size_t *got,
                                  eddy_error *err);
bool eddy__memlink_ready(const eddy__memlink *m);
uint64_t eddy__memlink_queued(const eddy__memlink *m);
uint64_t eddy__memlink_answered(const eddy__memlink *m);
uint64_t eddy__memlink_sent(const eddy__memlink *m);
eddy_status eddy__memlink_expire(eddy__memlink *m, uint64_t upto, const char *what,
                                 eddy_error *err);
const char *eddy__memlink_peer(const eddy__memlink *m);
void eddy__memlink_shutdown(eddy__memlink *m);

/* link.c's: a new number for eddy__link_socket_id, unique among every link's sockets. */
unsigned eddy__link_next_socket_id(void);

#endif
