/* SPDX-License-Identifier: BSD-3-Clause */
/* The one place hiredis results become eddy statuses, and the connection handshake (AUTH,
 * SELECT) both front ends send after connecting. */
#ifndef EDDY_SRC_REDIS_H
#define EDDY_SRC_REDIS_H

#include <hiredis/hiredis.h>
#include <stdbool.h>

#include "util/cmdlist.h"
#include "util/url.h"

/* Maps a hiredis context error (REDIS_ERR_IO, REDIS_ERR_EOF, ...) to a status with detail. */
eddy_status eddy__redis_context_status(int hiredis_err, const char *errstr, eddy_error *err);

/* EDDY_OK for a non-error reply; EDDY_ERR_BACKEND with the server's text for an error reply,
 * except the server's out-of-memory refusal ("OOM ...": maxmemory reached under noeviction),
 * which is EDDY_ERR_SERVER_FULL with a text that says so (nothing was written, a later call
 * may succeed); EDDY_ERR_IO for NULL (the connection failed). `what` names the operation in
 * the detail. The one place an OOM reply is mapped. */
eddy_status eddy__reply_status(const redisReply *r, const char *what, eddy_error *err);
/* True for the server's out-of-memory refusal of a write ("OOM command not allowed ..."). */
bool eddy__reply_out_of_memory(const redisReply *r);

/* True for an error reply that refuses the credentials: a wrong password (WRONGPASS), none
 * given (NOAUTH), or a user not allowed the command (NOPERM). */
bool eddy__reply_refuses_credentials(const redisReply *r);

/* Appends the handshake commands for a URL (possibly none). */
eddy_status eddy__handshake_cmds(const eddy__url *url, eddy__cmdlist *out);
/* Checks their replies: refused credentials (WRONGPASS, NOAUTH, NOPERM) are EDDY_ERR_AUTH, any
 * other error reply EDDY_ERR_BACKEND, with the server's text (never the password). */
eddy_status eddy__handshake_check(redisReply **replies, size_t n, eddy_error *err);

/* CLIENT ID: the connection's id on the server, which a pause needs to cut a blocking read
 * (CLIENT KILL below). */
void eddy__client_id_cmd(eddy__cmdlist *out);
/* Its reply, which ends the handshake, so that a peer that does not speak RESP fails there: the
 * id into *id (left alone when refused: an ACL), EDDY_ERR_AUTH for NOAUTH (the server wants a
 * password the URL does not give). */
eddy_status eddy__client_id_check(const redisReply *r, long long *id, eddy_error *err);
/* CLIENT KILL ID <id>: the server drops that connection before it runs anything sent after this
 * on the sending connection (our own shutdown reaches it in its own time). */
void eddy__client_kill_cmd(eddy__cmdlist *out, long long client_id);

#endif
