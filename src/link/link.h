/* SPDX-License-Identifier: BSD-3-Clause */
/* A connection to a Redis server without I/O of its own waiting ("sans-IO"): the link owns a
 * non-blocking socket (TCP with TCP_NODELAY and SO_KEEPALIVE, or a unix socket; TLS through
 * OpenSSL for rediss://), an output buffer of RESP bytes and hiredis's redisReader for input.
 * For memory:// the in-process engine stands behind the same interface (src/link/link_mem.h: its
 * "socket" is an eventfd the engine signals when a parked blocking read can go on, commands
 * run when their replies are taken, and eddy__link_ready says replies are there without
 * waiting; commands are borrowed, not copied, until their replies are taken).
 * It never blocks, and a socket link never reads the clock (the memory link reads it once, when a
 * blocking read parks, for the end of its BLOCK time): it says what it waits for (eddy__link_fd +
 * eddy__link_wants, and eddy__link_deadline for the connect) and its driver calls
 * eddy__link_io when poll() or an ev_io says the socket is ready, and eddy__link_tick with the
 * time when a deadline may have passed. The blocking front end drives it with poll(), the
 * reactive one with ev_io/ev_timer.
 *
 * Life: eddy__link_new -> eddy__link_connect (phase CONNECTING, then TLS for rediss://, then
 * HANDSHAKE while AUTH / SELECT / CLIENT ID are answered, then READY) -> commands and replies
 * -> FAILED (after an error: the link is dead; free it or connect it again) or
 * eddy__link_close. Commands may be queued in any phase but FAILED: they are written after the
 * handshake's, once the socket is up; their replies come after the handshake's, which the link
 * consumes itself.
 *
 * Command accounting: the link numbers the commands it was given 1, 2, ... (eddy__link_queued
 * is the last number), counts those whose bytes were all written (eddy__link_sent) and those
 * whose replies were taken (eddy__link_answered). When a driver's deadline for commands up to
 * number n passes, eddy__link_expire says EDDY_ERR_IO ("not sent": some byte of them is still
 * in the buffer, so the server has not run command n) or EDDY_ERR_TIMEOUT ("sent, outcome
 * unknown"), and fails the link, so that no later command is sent on a connection whose
 * replies are no longer accounted for.
 *
 * Errors: every failing call returns the status with err's detail, and the link is FAILED
 * from then on (eddy__link_phase_of), except an EDDY_ERR_NOMEM from eddy__link_send, which queues
 * nothing and leaves the link as it was. Statuses: EDDY_ERR_IO (connect refused, timed out,
 * reset, closed), EDDY_ERR_TLS (handshake or certificate refused, with OpenSSL's reason),
 * EDDY_ERR_PROTOCOL (bytes that are not RESP), EDDY_ERR_BACKEND (the handshake refused, with
 * the server's text), EDDY_ERR_NOMEM.
 *
 * Thread: one thread at a time, except eddy__link_shutdown (any thread, to wake a driver
 * waiting in poll()). No call raises SIGPIPE. */
#ifndef EDDY_SRC_LINK_H
#define EDDY_SRC_LINK_H

#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stdint.h>

#include "config/settings.h"
#include "util/cmdlist.h"

typedef struct eddy__link eddy__link;

/* What the link waits for on its socket (eddy__link_wants), and what the driver saw ready
 * (eddy__link_io). */
enum { EDDY__LINK_READ = 1, EDDY__LINK_WRITE = 2 };

typedef enum eddy__link_phase {
    EDDY__LINK_IDLE,       /* no socket: eddy__link_new, eddy__link_close */
    EDDY__LINK_CONNECTING, /* a non-blocking connect is in progress */
    EDDY__LINK_TLS,        /* the TLS handshake is in progress (rediss://) */
    EDDY__LINK_HANDSHAKE,  /* AUTH / SELECT / CLIENT ID sent, their replies awaited */
    EDDY__LINK_READY,      /* commands flow */
    EDDY__LINK_FAILED,     /* an error ended it: only eddy__link_close/connect/free */
} eddy__link_phase;

/* A link for the settings' URL (redis://, rediss:// or unix://; redis-sentinel:// asks the
 * sentinels for the master before each connect, sentinel.h; redis-cluster:// asks a node for
 * the master of the namespace's slot, and a redirect reply fails the link, cluster.h; s is
 * borrowed and must outlive the link). want_client_id: learn the server's id of the connection
 * (CLIENT ID) during the handshake (eddy__link_client_id). NULL on OOM. */
eddy__link *eddy__link_new(const eddy__settings *s, bool want_client_id);
/* Closes the socket and frees everything, replies not yet taken included. NULL is fine. */
void eddy__link_free(eddy__link *l);

/* A handle's hold on its backend, for as long as the handle lives: for memory://, the engine,
 * so that the namespace's data outlives every connection of the handle closing (a reactive
 * handle closes its idle ones); for any other URL nothing (*out NULL). false: out of memory. */
typedef struct eddy__backend_hold eddy__backend_hold;
bool eddy__link_hold_backend(const eddy__settings *s, eddy__backend_hold **out);
void eddy__link_release_backend(eddy__backend_hold *h);

/* Starts connecting (a closed or failed link first closes): resolves the host (getaddrinfo,
 * which may block on DNS for a name that is not an address), opens a non-blocking socket and
 * starts the connect; the connect, the TLS handshake and the AUTH / SELECT / CLIENT ID
 * handshake must end by now_ms + s->connect_timeout_ms (eddy__link_deadline). EDDY_OK when
 * started (or already done: a unix socket connects at once); the link then is CONNECTING or
 * further. Anything queued before is dropped. */
eddy_status eddy__link_connect(eddy__link *l, long long now_ms, eddy_error *err);
/* Closes the socket and drops what is queued and unanswered; the link is IDLE (counters go on:
 * queued/sent/answered are never reset, so numbers stay unique). */
void eddy__link_close(eddy__link *l);

eddy__link_phase eddy__link_phase_of(const eddy__link *l);
/* The socket, -1 when there is none (IDLE). A FAILED link keeps its socket open, unused, until
 * eddy__link_close/connect/free, so that the number stays valid for eddy__link_shutdown. */
int eddy__link_fd(const eddy__link *l);
/* The socket queued commands are written to (eddy__link_flush), which eddy__link_fd is not
 * while an ASK is followed on a socket of its own (cluster.h); it changes only with
 * eddy__link_connect/close, so a writer on another thread than the reader's may wait on it. */
int eddy__link_write_fd(const eddy__link *l);
/* Changes whenever eddy__link_fd is a new socket, also one with the number of a closed one (a
 * next address, a next sentinel, the master a sentinel named): a driver watching the fd (an
 * ev_io) sets its watcher again then. Unique among every link's sockets; 0 before the first. */
unsigned eddy__link_socket_id(const eddy__link *l);
/* EDDY__LINK_READ and/or EDDY__LINK_WRITE: what to wait for before calling eddy__link_io. READ
 * while connected (replies, or the server closing) and during a TLS handshake that wants to
 * read; WRITE while connecting, while bytes are queued, and during a TLS handshake (or a TLS
 * read) that wants to write. 0 when there is no socket. */
unsigned eddy__link_wants(const eddy__link *l);
/* What a driver that only reads (another thread writes the queued bytes) waits for before
 * calling eddy__link_io: READ, but while an ASK is followed on a socket of its own (cluster.h),
 * what that socket waits for (WRITE while it connects). */
unsigned eddy__link_read_wants(const eddy__link *l);
/* The time (the driver's clock, as given to eddy__link_connect) by which the connection must
 * be READY, while it is not yet; -1 when READY, IDLE or FAILED, except memory://, where it is
 * when a parked blocking read's BLOCK time ends (CLOCK_MONOTONIC ms; eddy__link_tick then makes
 * its reply nil). Command deadlines are the driver's (eddy__link_expire). */
long long eddy__link_deadline(const eddy__link *l);
/* Fails the link with EDDY_ERR_IO "connect timed out" when it is not READY by its deadline and
 * now_ms is past it; EDDY_OK otherwise (nothing happens). memory://: a parked read past its
 * BLOCK time is answered nil (eddy__link_ready then); always EDDY_OK. */
eddy_status eddy__link_tick(eddy__link *l, long long now_ms, eddy_error *err);

/* Advances the link with what the socket is ready for (`ready`: EDDY__LINK_READ / WRITE as
 * poll() or libev said; passing both is always safe, it only costs a failed syscall): ends the
 * connect, steps the TLS handshake, writes what is queued and reads what arrived into the
 * reader, until the socket would block. Reading stops once 1 MiB was read in one call (the
 * driver calls again: poll() says ready again), so that one call stays short. */
eddy_status eddy__link_io(eddy__link *l, unsigned ready, eddy_error *err);
/* Only the writing part of eddy__link_io (queued bytes; the connect or TLS handshake when that
 * is what is in progress). */
eddy_status eddy__link_flush(eddy__link *l, eddy_error *err);

/* Queues the RESP form of every command of cmds, as one contiguous run on the wire (a
 * MULTI/EXEC or a batch stays whole), and sets *last (may be NULL) to the number of the last
 * one. Writes nothing: the next eddy__link_io or eddy__link_flush does. EDDY_ERR_NOMEM queues
 * nothing; EDDY_ERR_IO when the link is FAILED or IDLE. */
eddy_status eddy__link_send(eddy__link *l, const eddy__cmdlist *cmds, uint64_t *last,
                            eddy_error *err);
/* The same with bytes already in RESP: ncmds commands in len bytes. */
eddy_status eddy__link_send_resp(eddy__link *l, const char *resp, size_t len, size_t ncmds,
                                 uint64_t *last, eddy_error *err);

/* Takes the next reply in order (the caller owns it: freeReplyObject, or the arena's reset when
 * an arena is installed in eddy__link_reader). EDDY_OK with *reply NULL when none is complete
 * yet; EDDY_ERR_PROTOCOL for bytes that are not RESP, EDDY_ERR_IO for a reply no command asked
 * for. */
eddy_status eddy__link_reply(eddy__link *l, redisReply **reply, eddy_error *err);

/* The same for up to max replies at once, into out: *got of them (0 when none is complete
 * yet). On a failure, the replies taken before it are in out[0, *got). */
eddy_status eddy__link_replies(eddy__link *l, redisReply **out, size_t max, size_t *got,
                               eddy_error *err);

/* From now on, replies beyond the commands queued (a SUBSCRIBE's messages) are handed out by
 * eddy__link_reply instead of failing the link; they are not counted as answers. */
void eddy__link_accept_pushes(eddy__link *l);

/* Replies can be taken now without waiting on the socket (memory://: commands are queued and
 * the head is not a parked blocking read). A driver looks before it waits. Always false for a
 * socket, whose replies come only after eddy__link_io read them. */
bool eddy__link_ready(const eddy__link *l);

/* Command numbers: the last queued, the last whose bytes were all written, the last whose
 * reply was taken (answered <= sent <= queued). Not counting the handshake's. */
uint64_t eddy__link_queued(const eddy__link *l);
uint64_t eddy__link_sent(const eddy__link *l);
uint64_t eddy__link_answered(const eddy__link *l);
/* True when a command (not the handshake) was answered since the last eddy__link_connect, a
 * redirect that failed the link aside: the connection proved itself, and the next reconnect
 * starts again from the shortest backoff (backoff.h's eddy__reconnect). False for NULL and
 * for memory://. */
bool eddy__link_proved(const eddy__link *l);

/* A driver's deadline for the commands up to number `upto` passed without their replies: fails
 * the link (when upto is not answered yet) and returns EDDY_ERR_TIMEOUT when command upto was
 * entirely written ("sent, outcome unknown") or EDDY_ERR_IO when it was not ("not sent": the
 * server never had all of it). `what` names the operation in the detail. EDDY_OK when upto was
 * answered already (nothing happens). */
eddy_status eddy__link_expire(eddy__link *l, uint64_t upto, const char *what, eddy_error *err);
/* What an operation whose last command is numbered `last` (0: never given to the link) is told
 * when its connection failed with st (why: the detail, NULL none): a passed deadline
 * (EDDY_ERR_TIMEOUT, sent, outcome unknown) holds only when that command was written whole
 * (last <= sent, the link's count); otherwise the server never ran it: EDDY_ERR_IO ("not
 * sent"). *out gets the detail; the status is returned. */
eddy_status eddy__link_outcome(eddy_status st, const eddy_error *why, uint64_t last, uint64_t sent,
                               eddy_error *out);

/* The reader, for installing a reply arena (eddy__reply_arena_install). It lives as long as
 * the link (a reconnect keeps it, emptied). */
redisReader *eddy__link_reader(eddy__link *l);
/* The server's id for this connection (CLIENT ID), -1 until learnt or when refused. */
long long eddy__link_client_id(const eddy__link *l);
/* Human-readable peer ("127.0.0.1:6379", "/tmp/redis.sock") for log lines. */
const char *eddy__link_peer(const eddy__link *l);

/* shutdown(2) of the socket, so that a driver waiting in poll() for it wakes (and its next
 * eddy__link_io fails with EDDY_ERR_IO). Thread: any, while the socket exists: the caller
 * guards against a concurrent eddy__link_close/connect/free (the fd could be reused). */
void eddy__link_shutdown(eddy__link *l);

#endif
