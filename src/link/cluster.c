/* SPDX-License-Identifier: BSD-3-Clause */
/* The slot of a namespace and the master that serves it; see cluster.h.
 *
 * Invariants: `child` is the link to the node being asked, NULL when none is; its settings are
 * child_s, a shallow copy of the handle's settings whose URL points at that node (borrowed
 * strings: child_s is never freed as settings). A round asks the redirect target (when a MOVED
 * named one) and then each seed at most once; `why` collects what each one that failed said,
 * for the round's detail. */
#include "link/cluster.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "error.h"
#include "keys.h"
#include "link/library.h"
#include "link/link.h"
#include "link/redis.h"
#include "util/reply_arena.h"

#define HOST_MAX 256

struct eddy__cluster {
    const eddy__settings *s;
    unsigned slot;
    eddy__settings child_s;
    eddy__link *child;
    /* A MOVED's node, asked first by the next round (moved_port 0: none). */
    char moved_host[HOST_MAX];
    int moved_port;
    /* This round: the MOVED's node (asking_moved) or seed `at`; `tried` seeds asked. */
    char ask_host[HOST_MAX];
    int ask_port;
    bool asking_moved;
    size_t start, at, tried;
    size_t named_by;   /* the seed that named this round's master */
    bool found, ready; /* this round named a master; it became READY */
    long long deadline;
    char host[HOST_MAX];
    int port;
    eddy_status why_st;
    char why[EDDY_ERROR_DETAIL_MAX];
    /* An ASK being followed: ASKING and the command on a link of its own to the importing
     * node; detour_left replies to take (ASKING's, then the command's). */
    eddy__link *detour;
    eddy__settings detour_s;
    char detour_host[HOST_MAX];
    int detour_port;
    unsigned detour_left;
    /* The detour's first reply is FUNCTION LOAD's (an FCALL to a node not known to have the
     * library); loaded_host:loaded_port is the last importing node that loaded it. */
    bool detour_loads;
    char loaded_host[HOST_MAX];
    int loaded_port;
};

uint16_t eddy__crc16(const char *buf, size_t len) {
    uint16_t crc = 0;
    for (size_t i = 0; i < len; i++) {
        crc ^= (uint16_t)((unsigned char)buf[i] << 8);
        for (int b = 0; b < 8; b++)
            crc = (crc & 0x8000) ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
    }
    return crc;
}

unsigned eddy__cluster_key_slot(const char *key, size_t len) {
    const char *open = memchr(key, '{', len);
    if (open) {
        size_t from = (size_t)(open - key) + 1;
        const char *close = memchr(key + from, '}', len - from);
        if (close && close > key + from) /* "{}" is no tag: the whole key is hashed */
            return eddy__crc16(key + from, (size_t)(close - key) - from) % EDDY__CLUSTER_SLOTS;
    }
    return eddy__crc16(key, len) % EDDY__CLUSTER_SLOTS;
}

unsigned eddy__cluster_ns_slot(const char *ns) {
    /* Computed from a real key, so that it is the keys' slot whatever ns holds. */
    char *key = eddy__key_subjects(ns);
    unsigned slot = key ? eddy__cluster_key_slot(key, strlen(key)) : 0;
    free(key);
    return slot;
}

eddy__cluster *eddy__cluster_new(const eddy__settings *s) {
    char *key = eddy__key_subjects(s->ns);
    eddy__cluster *cl = key ? calloc(1, sizeof(*cl)) : NULL;
    if (cl) {
        cl->s = s;
        cl->slot = eddy__cluster_key_slot(key, strlen(key));
    }
    free(key);
    return cl;
}

void eddy__cluster_stop(eddy__cluster *cl) {
    eddy__link_free(cl->child);
    cl->child = NULL;
}

void eddy__cluster_ask_stop(eddy__cluster *cl) {
    eddy__link_free(cl->detour);
    cl->detour = NULL;
}

void eddy__cluster_free(eddy__cluster *cl) {
    if (!cl)
        return;
    eddy__cluster_stop(cl);
    eddy__cluster_ask_stop(cl);
    free(cl);
}

unsigned eddy__cluster_slot(const eddy__cluster *cl) { return cl->slot; }
bool eddy__cluster_asking(const eddy__cluster *cl) { return cl->child != NULL; }
int eddy__cluster_fd(const eddy__cluster *cl) { return eddy__link_fd(cl->child); }
unsigned eddy__cluster_socket_id(const eddy__cluster *cl) {
    return eddy__link_socket_id(cl->child);
}
unsigned eddy__cluster_wants(const eddy__cluster *cl) { return eddy__link_wants(cl->child); }
void eddy__cluster_ready(eddy__cluster *cl) { cl->ready = true; }

/* Notes why the node being asked named no master, and closes its link. */
static void note(eddy__cluster *cl, eddy_status st, const char *detail) {
    size_t n = strlen(cl->why);
    snprintf(cl->why + n, sizeof(cl->why) - n, "%s%s:%d: %s", n ? "; " : "", cl->ask_host,
             cl->ask_port, detail);
    cl->why_st = st;
    eddy__cluster_stop(cl);
}

/* Opens a link to ask_host:ask_port and queues CLUSTER SLOTS on it. */
static eddy_status ask_node(eddy__cluster *cl, eddy_error *e) {
    const eddy__url *url = &cl->s->url;
    cl->child_s = *cl->s;
    cl->child_s.url = (eddy__url){.kind = EDDY__URL_TCP,
                                  .host = cl->ask_host,
                                  .port = cl->ask_port,
                                  .user = url->user,
                                  .password = url->password,
                                  .tls = url->tls};
    if (!(cl->child = eddy__link_new(&cl->child_s, false)))
        return eddy__fail(e, EDDY_ERR_NOMEM, "out of memory asking a cluster node");
    eddy__cmdlist q;
    eddy__cmdlist_init(&q);
    eddy__cmd *c = eddy__cmdlist_add(&q, 0, 0);
    if (c) {
        eddy__cmd_str(c, "CLUSTER");
        eddy__cmd_str(c, "SLOTS");
    }
    /* Its deadline is the round's: the link's clock is only known through it. */
    eddy_status st = eddy__link_connect(cl->child, cl->deadline - cl->s->connect_timeout_ms, e);
    if (st == EDDY_OK && eddy__cmdlist_status(&q) != EDDY_OK)
        st = eddy__fail(e, EDDY_ERR_NOMEM, "out of memory asking a cluster node");
    if (st == EDDY_OK)
        st = eddy__link_send(cl->child, &q, NULL, e);
    eddy__cmdlist_reset(&q);
    return st;
}

/* Asks the next node not asked yet this round: the MOVED's first, then the seeds. */
static eddy_status ask_next(eddy__cluster *cl, eddy_error *err) {
    const eddy__url *url = &cl->s->url;
    for (;;) {
        if (cl->moved_port) {
            snprintf(cl->ask_host, sizeof(cl->ask_host), "%s", cl->moved_host);
            cl->ask_port = cl->moved_port;
            cl->moved_port = 0;
            cl->asking_moved = true;
        } else if (cl->tried < url->nsentinels) {
            cl->at = (cl->start + cl->tried++) % url->nsentinels;
            snprintf(cl->ask_host, sizeof(cl->ask_host), "%s", url->sentinels[cl->at].host);
            cl->ask_port = url->sentinels[cl->at].port;
            cl->asking_moved = false;
        } else {
            break;
        }
        eddy_error e;
        eddy_status st = ask_node(cl, &e);
        if (st == EDDY_OK)
            return EDDY_OK;
        if (st == EDDY_ERR_NOMEM) {
            eddy__cluster_stop(cl);
            return eddy__fail(err, st, "%s", e.detail);
        }
        note(cl, st, e.detail);
    }
    eddy_status st =
        eddy__fail(err, cl->why_st ? cl->why_st : EDDY_ERR_IO,
                   "no cluster node named the master of slot %u: %s", cl->slot, cl->why);
    eddy__log(&cl->s->log, EDDY_LOG_WARN, "%s",
              err ? err->detail : "no cluster node named the master");
    return st;
}

eddy_status eddy__cluster_start(eddy__cluster *cl, long long deadline, eddy_error *err) {
    eddy__cluster_stop(cl);
    if (cl->found && !cl->ready) /* its answer did not lead to a master: start after it */
        cl->start = (cl->named_by + 1) % cl->s->url.nsentinels;
    cl->found = cl->ready = false;
    cl->tried = 0;
    cl->why[0] = '\0';
    cl->why_st = EDDY_OK;
    cl->deadline = deadline;
    return ask_next(cl, err);
}

static bool is_int(const redisReply *r) { return r->type == REDIS_REPLY_INTEGER; }

/* CLUSTER SLOTS: [[start, end, [ip, port, id, ...], replicas...], ...]; the master of our slot
 * into host/port. An empty ip is the answering node's own. */
static eddy_status take_answer(eddy__cluster *cl, const redisReply *r, eddy_error *e) {
    if (r->type == REDIS_REPLY_ERROR)
        return eddy__fail(e, eddy__reply_refuses_credentials(r) ? EDDY_ERR_AUTH : EDDY_ERR_BACKEND,
                          "CLUSTER SLOTS refused: %.*s", (int)r->len, r->str);
    if (r->type != REDIS_REPLY_ARRAY)
        return eddy__fail(e, EDDY_ERR_PROTOCOL, "CLUSTER SLOTS answered no slot map");
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *range = r->element[i];
        if (range->type != REDIS_REPLY_ARRAY || range->elements < 3 || !is_int(range->element[0]) ||
            !is_int(range->element[1]))
            return eddy__fail(e, EDDY_ERR_PROTOCOL, "CLUSTER SLOTS answered a malformed range");
        if ((long long)cl->slot < range->element[0]->integer ||
            (long long)cl->slot > range->element[1]->integer)
            continue;
        const redisReply *m = range->element[2];
        if (m->type != REDIS_REPLY_ARRAY || m->elements < 2 ||
            m->element[0]->type != REDIS_REPLY_STRING || !is_int(m->element[1]) ||
            m->element[0]->len >= HOST_MAX || m->element[1]->integer < 1 ||
            m->element[1]->integer > 65535 || strcmp(m->element[0]->str, "?") == 0)
            return eddy__fail(e, EDDY_ERR_PROTOCOL,
                              "CLUSTER SLOTS answered no address for the master of slot %u",
                              cl->slot);
        if (m->element[0]->len == 0)
            snprintf(cl->host, sizeof(cl->host), "%s", cl->ask_host);
        else
            memcpy(cl->host, m->element[0]->str, m->element[0]->len + 1);
        cl->port = (int)m->element[1]->integer;
        return EDDY_OK;
    }
    return eddy__fail(e, EDDY_ERR_BACKEND, "serves no node for slot %u (cluster not ready?)",
                      cl->slot);
}

eddy_status eddy__cluster_io(eddy__cluster *cl, unsigned ready, const char **host, int *port,
                             eddy_error *err) {
    *host = NULL;
    eddy_error e;
    redisReply *r = NULL;
    eddy_status st = eddy__link_io(cl->child, ready, &e);
    if (st == EDDY_OK)
        st = eddy__link_reply(cl->child, &r, &e);
    if (st == EDDY_OK && !r)
        return EDDY_OK;
    if (st == EDDY_OK) {
        st = take_answer(cl, r, &e);
        freeReplyObject(r);
    }
    if (st == EDDY_OK) {
        eddy__log(&cl->s->log, EDDY_LOG_DEBUG, "cluster node %s: slot %u ('%s') is at %s:%d",
                  eddy__link_peer(cl->child), cl->slot, cl->s->ns, cl->host, cl->port);
        eddy__cluster_stop(cl);
        cl->found = true;
        if (!cl->asking_moved)
            cl->named_by = cl->at;
        *host = cl->host;
        *port = cl->port;
        return EDDY_OK;
    }
    if (st == EDDY_ERR_NOMEM) {
        eddy__cluster_stop(cl);
        return eddy__fail(err, st, "%s", e.detail);
    }
    note(cl, st, e.detail);
    return ask_next(cl, err);
}

static bool has_code(const redisReply *r, const char *code) {
    size_t n = strlen(code);
    return r->len >= n && memcmp(r->str, code, n) == 0 && (r->len == n || r->str[n] == ' ');
}

/* "<code> <slot> <host>:<port>" (an empty host: the node that answered, peer) into host/port;
 * false when it is not that shape. */
static bool take_address(const redisReply *r, size_t code_len, const char *peer, char *host,
                         int *port) {
    const char *sp = memchr(r->str + code_len + 1, ' ', r->len - code_len - 1);
    const char *colon = NULL;
    for (const char *p = r->str + r->len; p > r->str; p--)
        if (p[-1] == ':') {
            colon = p - 1;
            break;
        }
    if (!sp || !colon || colon < sp)
        return false;
    long v = strtol(colon + 1, NULL, 10);
    size_t hlen = (size_t)(colon - sp - 1);
    if (v < 1 || v > 65535 || hlen >= HOST_MAX)
        return false;
    if (hlen == 0) { /* the peer's host: "host:port" as link.c names it */
        const char *pc = strrchr(peer, ':');
        hlen = pc ? (size_t)(pc - peer) : 0;
        if (hlen == 0 || hlen >= HOST_MAX)
            return false;
        memcpy(host, peer, hlen);
    } else {
        memcpy(host, sp + 1, hlen);
    }
    host[hlen] = '\0';
    *port = (int)v;
    return true;
}

bool eddy__cluster_redirect(eddy__cluster *cl, const redisReply *r, const char *peer,
                            eddy_error *err) {
    if (!r || r->type != REDIS_REPLY_ERROR)
        return false;
    const char *why;
    if (has_code(r, "MOVED")) {
        if (!take_address(r, 5, peer, cl->moved_host, &cl->moved_port))
            cl->moved_port = 0;
        why = EDDY__MOVED_MARK " after a failover or a migration: the next connect goes there";
    } else if (has_code(r, "ASK")) { /* one eddy__link_reply could not follow (a MULTI) */
        why = EDDY__REROUTE_MARK
            " (ASK): the slot is being migrated; the connection is given up, the "
            "next one asks again";
    } else if (has_code(r, "TRYAGAIN")) {
        why = EDDY__TRYAGAIN_MARK ": the slot is being migrated, its keys split between two nodes; "
                                  "the connection is given up, the next one asks again";
    } else if (has_code(r, "UNBLOCKED")) { /* a blocked read, ended as the node became a replica */
        why = EDDY__REROUTE_MARK
            " (UNBLOCKED): the node is a replica now; the connection is given up, "
            "the next one asks again";
    } else if (has_code(r, "CLUSTERDOWN")) {
        why =
            EDDY__DOWN_MARK ": the cluster is down; the connection is given up, the next one asks "
                            "again";
    } else {
        return false;
    }
    eddy__fail(err, EDDY_ERR_IO, "slot %u ('%s') on %s: %.*s; %s", cl->slot, cl->s->ns, peer,
               (int)(r->len > 80 ? 80 : r->len), r->str, why);
    return true;
}

/* True when the RESP command in cmd[0, len) is an FCALL (of eddy's functions, which are the
 * only ones eddy calls). */
static bool is_fcall(const char *cmd, size_t len) {
    const char *nl = memchr(cmd, '\n', len);
    if (!nl)
        return false;
    size_t off = (size_t)(nl - cmd) + 1;
    return len - off >= 11 && strncasecmp(cmd + off, "$5\r\nFCALL\r\n", 11) == 0;
}

bool eddy__cluster_is_ask(const redisReply *r) {
    return r && r->type == REDIS_REPLY_ERROR && has_code(r, "ASK");
}

eddy_status eddy__cluster_ask_start(eddy__cluster *cl, const redisReply *ask, const char *peer,
                                    const char *cmd, size_t len, const redisReader *like,
                                    eddy_error *err) {
    eddy__cluster_ask_stop(cl);
    if (!take_address(ask, 3, peer, cl->detour_host, &cl->detour_port))
        return eddy__fail(err, EDDY_ERR_PROTOCOL, "%s answered an ASK without an address", peer);
    const eddy__url *url = &cl->s->url;
    cl->detour_s = *cl->s;
    cl->detour_s.url = (eddy__url){.kind = EDDY__URL_TCP,
                                   .host = cl->detour_host,
                                   .port = cl->detour_port,
                                   .user = url->user,
                                   .password = url->password,
                                   .tls = url->tls};
    if (!(cl->detour = eddy__link_new(&cl->detour_s, false)))
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory following an ASK");
    /* Its replies are made as the main link's are (a reply arena, when one is installed), so
     * that the one handed on is the driver's to release like any other. */
    redisReader *rd = eddy__link_reader(cl->detour);
    rd->fn = like->fn;
    rd->privdata = like->privdata;
    eddy__cmdlist q;
    eddy__cmdlist_init(&q);
    /* eddy's functions are loaded per master, not per cluster: an importing node may not have
     * them yet, and its "Function not found" would read as permanent. */
    cl->detour_loads = is_fcall(cmd, len) && !(cl->loaded_port == cl->detour_port &&
                                               strcmp(cl->loaded_host, cl->detour_host) == 0);
    if (cl->detour_loads && eddy__library_load_cmds(&q) != EDDY_OK) {
        eddy__cmdlist_reset(&q); /* out of memory: the command goes alone */
        eddy__cmdlist_init(&q);
        cl->detour_loads = false;
    }
    eddy__cmd *c = eddy__cmdlist_add(&q, 0, 0);
    if (c)
        eddy__cmd_str(c, "ASKING");
    /* No clock here: the command's deadline, the driver's, bounds the detour as a whole. */
    eddy_status st = eddy__link_connect(cl->detour, 0, err);
    if (st == EDDY_OK && eddy__cmdlist_status(&q) != EDDY_OK)
        st = eddy__fail(err, EDDY_ERR_NOMEM, "out of memory following an ASK");
    if (st == EDDY_OK)
        st = eddy__link_send(cl->detour, &q, NULL, err);
    if (st == EDDY_OK)
        st = eddy__link_send_resp(cl->detour, cmd, len, 1, NULL, err);
    eddy__cmdlist_reset(&q);
    if (st != EDDY_OK) {
        eddy__cluster_ask_stop(cl);
        return st;
    }
    cl->detour_left = cl->detour_loads ? 3 : 2;
    /* A loopback connect is often done at once: then ASKING and the command go now. */
    if ((st = eddy__link_flush(cl->detour, err)) != EDDY_OK) {
        eddy__cluster_ask_stop(cl);
        return st;
    }
    eddy__log(&cl->s->log, EDDY_LOG_DEBUG, "slot %u ('%s'): ASK from %s, the command goes to %s:%d",
              cl->slot, cl->s->ns, peer, cl->detour_host, cl->detour_port);
    return EDDY_OK;
}

bool eddy__cluster_following_ask(const eddy__cluster *cl) { return cl->detour != NULL; }
int eddy__cluster_ask_fd(const eddy__cluster *cl) { return eddy__link_fd(cl->detour); }
unsigned eddy__cluster_ask_socket_id(const eddy__cluster *cl) {
    return eddy__link_socket_id(cl->detour);
}
unsigned eddy__cluster_ask_wants(const eddy__cluster *cl) { return eddy__link_wants(cl->detour); }

eddy_status eddy__cluster_ask_io(eddy__cluster *cl, unsigned ready, redisReply **reply,
                                 eddy_error *err) {
    *reply = NULL;
    /* Both, whatever the driver saw: a driver that only reads may call with READ alone. */
    (void)ready;
    eddy_status st = eddy__link_io(cl->detour, EDDY__LINK_READ | EDDY__LINK_WRITE, err);
    while (st == EDDY_OK && cl->detour_left > 0) {
        redisReply *r = NULL;
        if ((st = eddy__link_reply(cl->detour, &r, err)) != EDDY_OK || !r)
            break;
        if (cl->detour_loads && cl->detour_left == 3) { /* FUNCTION LOAD's */
            cl->detour_left--;
            if (r->type == REDIS_REPLY_ERROR) {
                eddy__log(&cl->s->log, EDDY_LOG_WARN,
                          "slot %u: loading eddy's functions on %s:%d (an ASK's node): %.*s",
                          cl->slot, cl->detour_host, cl->detour_port, (int)r->len, r->str);
            } else {
                snprintf(cl->loaded_host, sizeof(cl->loaded_host), "%s", cl->detour_host);
                cl->loaded_port = cl->detour_port;
            }
            if (!eddy__reply_arena_of(eddy__link_reader(cl->detour)))
                freeReplyObject(r);
            continue;
        }
        if (--cl->detour_left == 1) { /* ASKING's */
            if (r->type == REDIS_REPLY_ERROR)
                st = eddy__fail(err, EDDY_ERR_IO, "ASKING refused by %s:%d: %.*s", cl->detour_host,
                                cl->detour_port, (int)r->len, r->str);
            if (!eddy__reply_arena_of(eddy__link_reader(cl->detour)))
                freeReplyObject(r);
        } else {
            *reply = r;
        }
    }
    if (st != EDDY_OK && *reply) {
        if (!eddy__reply_arena_of(eddy__link_reader(cl->detour)))
            freeReplyObject(*reply);
        *reply = NULL;
    }
    if (st != EDDY_OK || *reply)
        eddy__cluster_ask_stop(cl);
    if (st != EDDY_OK)
        eddy__log(&cl->s->log, EDDY_LOG_DEBUG, "following an ASK: %s",
                  err ? err->detail : "failed");
    return st;
}
