/* SPDX-License-Identifier: BSD-3-Clause */
/* hiredis error mapping and the connection handshake. Detail never includes a password. */
#include "link/redis.h"

#include <stdbool.h>
#include <string.h>

#include "error.h"

eddy_status eddy__redis_context_status(int hiredis_err, const char *errstr, eddy_error *err) {
    const char *text = errstr && errstr[0] ? errstr : "unknown error";
    switch (hiredis_err) {
    case 0:
        return EDDY_OK;
    case REDIS_ERR_OOM:
        return eddy__fail(err, EDDY_ERR_NOMEM, "hiredis: %s", text);
    case REDIS_ERR_PROTOCOL:
        return eddy__fail(err, EDDY_ERR_PROTOCOL, "hiredis: %s", text);
    default: /* REDIS_ERR_IO, REDIS_ERR_EOF, REDIS_ERR_OTHER */
        return eddy__fail(err, EDDY_ERR_IO, "connection: %s", text);
    }
}

eddy_status eddy__reply_status(const redisReply *r, const char *what, eddy_error *err) {
    if (!r)
        return eddy__fail(err, EDDY_ERR_IO, "%s: no reply (connection lost)", what);
    if (r->type == REDIS_REPLY_ERROR && eddy__reply_out_of_memory(r))
        return eddy__fail(err, EDDY_ERR_SERVER_FULL,
                          "%s: the server is out of memory (maxmemory reached, policy "
                          "noeviction): it refuses writes until memory frees; nothing was "
                          "written (%.*s)",
                          what, (int)r->len, r->str);
    if (r->type == REDIS_REPLY_ERROR)
        return eddy__fail(err, EDDY_ERR_BACKEND, "%s: %.*s", what, (int)r->len, r->str);
    return EDDY_OK;
}

bool eddy__reply_out_of_memory(const redisReply *r) {
    return r && r->type == REDIS_REPLY_ERROR && r->len >= 4 && memcmp(r->str, "OOM ", 4) == 0;
}

eddy_status eddy__handshake_cmds(const eddy__url *url, eddy__cmdlist *out) {
    if (url->kind == EDDY__URL_MEMORY)
        return EDDY_OK;
    if (url->password) {
        eddy__cmd *c = eddy__cmdlist_add(out, 0, 0);
        if (!c)
            return EDDY_ERR_NOMEM;
        eddy__cmd_str(c, "AUTH");
        if (url->user)
            eddy__cmd_str(c, url->user);
        eddy__cmd_str(c, url->password);
    }
    if (url->db) {
        eddy__cmd *c = eddy__cmdlist_add(out, 1, 0);
        if (!c)
            return EDDY_ERR_NOMEM;
        eddy__cmd_str(c, "SELECT");
        eddy__cmd_fmt(c, "%d", url->db);
    }
    return eddy__cmdlist_status(out);
}

bool eddy__reply_refuses_credentials(const redisReply *r) {
    static const char *const codes[] = {"WRONGPASS", "NOAUTH", "NOPERM"};
    if (!r || r->type != REDIS_REPLY_ERROR)
        return false;
    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
        size_t n = strlen(codes[i]);
        if (r->len >= n && memcmp(r->str, codes[i], n) == 0 && (r->len == n || r->str[n] == ' '))
            return true;
    }
    return false;
}

eddy_status eddy__handshake_check(redisReply **replies, size_t n, eddy_error *err) {
    for (size_t i = 0; i < n; i++) {
        if (!replies[i])
            return eddy__fail(err, EDDY_ERR_IO, "connection lost during handshake");
        if (replies[i]->type == REDIS_REPLY_ERROR)
            /* The server's text for a refused AUTH names no secret ("WRONGPASS ..."). */
            return eddy__fail(
                err, eddy__reply_refuses_credentials(replies[i]) ? EDDY_ERR_AUTH : EDDY_ERR_BACKEND,
                "handshake refused: %.*s", (int)replies[i]->len, replies[i]->str);
    }
    return EDDY_OK;
}

eddy_status eddy__client_id_check(const redisReply *r, long long *id, eddy_error *err) {
    if (r->type == REDIS_REPLY_INTEGER)
        *id = r->integer;
    else if (r->type == REDIS_REPLY_ERROR && r->len >= 6 && memcmp(r->str, "NOAUTH", 6) == 0)
        return eddy__fail(err, EDDY_ERR_AUTH, "handshake refused: %.*s", (int)r->len, r->str);
    return EDDY_OK; /* refused otherwise (an ACL): the id stays unknown */
}

void eddy__client_id_cmd(eddy__cmdlist *out) {
    eddy__cmd *c = eddy__cmdlist_add(out, 0, 0);
    if (c) {
        eddy__cmd_str(c, "CLIENT");
        eddy__cmd_str(c, "ID");
    }
}

void eddy__client_kill_cmd(eddy__cmdlist *out, long long client_id) {
    eddy__cmd *c = eddy__cmdlist_add(out, 0, 0);
    if (c) {
        eddy__cmd_str(c, "CLIENT");
        eddy__cmd_str(c, "KILL");
        eddy__cmd_str(c, "ID");
        eddy__cmd_fmt(c, "%lld", client_id);
    }
}
