/* SPDX-License-Identifier: BSD-3-Clause */
/* Asking the sentinels for the master; see sentinel.h.
 *
 * Invariants: `child` is the link to the sentinel being asked (index `at`), NULL when none is;
 * its settings are child_s, a shallow copy of the bus's settings whose URL points at that
 * sentinel (borrowed strings: child_s is never freed as settings). A round asks each sentinel
 * at most once; `why` collects what each one that failed said, for the round's detail. */
#include "link/sentinel.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/conn_state.h"
#include "error.h"
#include "link/link.h"
#include "link/redis.h"

struct eddy__sentinel {
    const eddy__settings *s;
    eddy__settings child_s;
    eddy__link *child;
    /* The watches (sentinel.h), by sentinel: the child that named this round's master, and a
     * subscribed connection to each other sentinel; their settings (borrowed strings). */
    eddy__link **watch;
    eddy__settings *watch_s;
    size_t nwatch;           /* how many are open */
    size_t start, at, tried; /* this round: first asked, being asked, how many asked */
    size_t avoided;          /* this round: sentinels that named an avoided master */
    size_t named_by;         /* the sentinel that named this round's master */
    bool found, ready;       /* this round named a master; it became READY */
    long long deadline;
    char host[256];
    int port;
    eddy_status why_st;
    char why[EDDY_ERROR_DETAIL_MAX];
};

eddy__sentinel *eddy__sentinel_new(const eddy__settings *s) {
    eddy__sentinel *sn = calloc(1, sizeof(*sn));
    if (!sn)
        return NULL;
    sn->s = s;
    size_t n = s->url.nsentinels ? s->url.nsentinels : 1;
    sn->watch = calloc(n, sizeof(*sn->watch));
    sn->watch_s = calloc(n, sizeof(*sn->watch_s));
    if (!sn->watch || !sn->watch_s) {
        free(sn->watch);
        free(sn->watch_s);
        free(sn);
        return NULL;
    }
    return sn;
}

static void drop_watch(eddy__sentinel *sn, size_t i) {
    if (!sn->watch[i])
        return;
    eddy__link_free(sn->watch[i]);
    sn->watch[i] = NULL;
    sn->nwatch--;
}

void eddy__sentinel_stop(eddy__sentinel *sn) {
    eddy__link_free(sn->child);
    sn->child = NULL;
    for (size_t i = 0; i < sn->s->url.nsentinels; i++)
        drop_watch(sn, i);
}

/* Ends the ask only (its link may have become the watch). */
static void stop_asking(eddy__sentinel *sn) {
    eddy__link_free(sn->child);
    sn->child = NULL;
}

void eddy__sentinel_free(eddy__sentinel *sn) {
    if (!sn)
        return;
    eddy__sentinel_stop(sn);
    free(sn->watch);
    free(sn->watch_s);
    free(sn);
}

bool eddy__sentinel_asking(const eddy__sentinel *sn) { return sn->child != NULL; }
int eddy__sentinel_fd(const eddy__sentinel *sn) { return eddy__link_fd(sn->child); }
unsigned eddy__sentinel_socket_id(const eddy__sentinel *sn) {
    return eddy__link_socket_id(sn->child);
}
unsigned eddy__sentinel_wants(const eddy__sentinel *sn) { return eddy__link_wants(sn->child); }
static void open_watch(eddy__sentinel *sn, size_t i);

void eddy__sentinel_ready(eddy__sentinel *sn) {
    sn->ready = true;
    for (size_t i = 0; i < sn->s->url.nsentinels; i++) /* the master is up: watch every sentinel */
        if (!sn->watch[i])
            open_watch(sn, i);
}

/* Notes why the sentinel being asked gave no master, and closes its link. */
static void note(eddy__sentinel *sn, eddy_status st, const char *detail) {
    const eddy__hostport *hp = &sn->s->url.sentinels[sn->at];
    size_t n = strlen(sn->why);
    snprintf(sn->why + n, sizeof(sn->why) - n, "%s%s:%d: %s", n ? "; " : "", hp->host, hp->port,
             detail);
    sn->why_st = st;
    stop_asking(sn);
}

/* The settings of a link to sentinel i: the bus's, with that sentinel's address. */
static void sentinel_settings(const eddy__sentinel *sn, size_t i, eddy__settings *out) {
    const eddy__url *url = &sn->s->url;
    *out = *sn->s;
    out->url = (eddy__url){.kind = EDDY__URL_TCP,
                           .host = url->sentinels[i].host,
                           .port = url->sentinels[i].port,
                           .password = sn->s->sentinel_password,
                           .tls = url->tls};
}

/* Appends SUBSCRIBE to what a watch listens to (sentinel.h). */
static void subscribe_cmd(eddy__cmdlist *q) {
    eddy__cmd *c = eddy__cmdlist_add(q, 0, 0);
    if (c) {
        eddy__cmd_str(c, "SUBSCRIBE");
        eddy__cmd_str(c, "+switch-master");
        eddy__cmd_str(c, "+failover-state-reconf-slaves");
        eddy__cmd_str(c, "+failover-state-wait-promotion");
    }
}

/* Opens a subscribed connection to sentinel i (a failover's leader may be any sentinel, and
 * only the leader announces wait-promotion). Not being able to is only logged: the watch of
 * the sentinel that answered, and the link's other checks, remain. */
static void open_watch(eddy__sentinel *sn, size_t i) {
    sentinel_settings(sn, i, &sn->watch_s[i]);
    eddy__link *w = eddy__link_new(&sn->watch_s[i], false);
    eddy__cmdlist q;
    eddy__cmdlist_init(&q);
    subscribe_cmd(&q);
    eddy_error e = {.detail = "out of memory"};
    /* Its connect is stepped by eddy__sentinel_watch, never timed out: a sentinel that does
     * not answer only leaves its watch connecting. */
    eddy_status st =
        w ? eddy__link_connect(w, sn->deadline - sn->s->connect_timeout_ms, &e) : EDDY_ERR_NOMEM;
    if (st == EDDY_OK && (st = eddy__cmdlist_status(&q)) == EDDY_OK)
        st = eddy__link_send(w, &q, NULL, &e);
    eddy__cmdlist_reset(&q);
    if (st != EDDY_OK) {
        eddy__log(&sn->s->log, EDDY_LOG_DEBUG, "sentinel %s:%d not watched: %s",
                  sn->watch_s[i].url.host, sn->watch_s[i].url.port, e.detail);
        eddy__link_free(w);
        return;
    }
    eddy__link_accept_pushes(w);
    sn->watch[i] = w;
    sn->nwatch++;
}

/* Asks the next sentinel not asked yet this round. */
static eddy_status ask_next(eddy__sentinel *sn, eddy_error *err) {
    const eddy__url *url = &sn->s->url;
    while (sn->tried < url->nsentinels) {
        sn->at = (sn->start + sn->tried++) % url->nsentinels;
        sentinel_settings(sn, sn->at, &sn->child_s);
        if (!(sn->child = eddy__link_new(&sn->child_s, false)))
            return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory asking a sentinel");
        eddy__cmdlist q;
        eddy__cmdlist_init(&q);
        eddy__cmd *c = eddy__cmdlist_add(&q, 0, 0);
        if (c) {
            eddy__cmd_str(c, "SENTINEL");
            eddy__cmd_str(c, "get-master-addr-by-name");
            eddy__cmd_str(c, url->name);
        }
        /* In the same write: the sentinel subscribes this connection before it reads anything
         * else, so no announcement after its answer is missed (sentinel.h). */
        subscribe_cmd(&q);
        eddy_error e;
        /* Its deadline is the round's: the link's clock is only known through it. */
        eddy_status st =
            eddy__link_connect(sn->child, sn->deadline - sn->s->connect_timeout_ms, &e);
        if (st == EDDY_OK && eddy__cmdlist_status(&q) != EDDY_OK)
            st = eddy__fail(&e, EDDY_ERR_NOMEM, "out of memory asking a sentinel");
        if (st == EDDY_OK)
            st = eddy__link_send(sn->child, &q, NULL, &e);
        eddy__cmdlist_reset(&q);
        if (st == EDDY_OK)
            return EDDY_OK;
        if (st == EDDY_ERR_NOMEM) {
            eddy__sentinel_stop(sn);
            return eddy__fail(err, st, "%s", e.detail);
        }
        note(sn, st, e.detail);
    }
    eddy_status st = eddy__fail(err, sn->why_st ? sn->why_st : EDDY_ERR_IO,
                                "no sentinel named the master '%s': %s", url->name, sn->why);
    /* Only masters a failover is replacing: the promotion is awaited, not an outage to warn of
     * once per round. */
    eddy__log(&sn->s->log, sn->avoided == sn->tried ? EDDY_LOG_DEBUG : EDDY_LOG_WARN, "%s",
              err ? err->detail : "no sentinel named the master");
    return st;
}

eddy_status eddy__sentinel_start(eddy__sentinel *sn, long long deadline, eddy_error *err) {
    eddy__sentinel_stop(sn);
    if (sn->found && !sn->ready) /* its answer did not lead to a master: start after it */
        sn->start = (sn->named_by + 1) % sn->s->url.nsentinels;
    sn->found = sn->ready = false;
    sn->tried = sn->avoided = 0;
    sn->why[0] = '\0';
    sn->why_st = EDDY_OK;
    sn->deadline = deadline;
    return ask_next(sn, err);
}

/* What get-master-addr-by-name answered: [host, port], nil for a name it does not know. */
static eddy_status take_answer(eddy__sentinel *sn, const redisReply *r, eddy_error *e) {
    if (r->type == REDIS_REPLY_NIL)
        return eddy__fail(e, EDDY_ERR_BACKEND, "does not know the master '%s'", sn->s->url.name);
    if (r->type == REDIS_REPLY_ERROR) /* NOAUTH: settings.sentinel_password is wanted */
        return eddy__fail(e, eddy__reply_refuses_credentials(r) ? EDDY_ERR_AUTH : EDDY_ERR_BACKEND,
                          "refused: %.*s", (int)r->len, r->str);
    char *end = NULL;
    long port = 0;
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
        r->element[0]->type == REDIS_REPLY_STRING && r->element[1]->type == REDIS_REPLY_STRING &&
        r->element[0]->len > 0 && r->element[0]->len < sizeof(sn->host))
        port = strtol(r->element[1]->str, &end, 10);
    if (port < 1 || port > 65535 || !end || *end)
        return eddy__fail(e, EDDY_ERR_PROTOCOL, "answered something that is not an address");
    memcpy(sn->host, r->element[0]->str, r->element[0]->len);
    sn->host[r->element[0]->len] = '\0';
    sn->port = (int)port;
    return EDDY_OK;
}

eddy_status eddy__sentinel_io(eddy__sentinel *sn, unsigned ready, const char **host, int *port,
                              eddy_error *err) {
    *host = NULL;
    eddy_error e;
    redisReply *r = NULL;
    eddy_status st = eddy__link_io(sn->child, ready, &e);
    if (st == EDDY_OK)
        st = eddy__link_reply(sn->child, &r, &e);
    if (st == EDDY_OK && !r)
        return EDDY_OK;
    if (st == EDDY_OK) {
        st = take_answer(sn, r, &e);
        freeReplyObject(r);
    }
    if (st == EDDY_OK && eddy__conn_master_avoided(sn->s->conn_state, sn->host, sn->port)) {
        sn->avoided++;
        st = eddy__fail(&e, EDDY_ERR_IO,
                        "names %s:%d, which a failover is replacing (not yet promoted)", sn->host,
                        sn->port);
    }
    if (st == EDDY_OK) {
        eddy__log(&sn->s->log, EDDY_LOG_DEBUG, "sentinel %s: the master '%s' is at %s:%d",
                  eddy__link_peer(sn->child), sn->s->url.name, sn->host, sn->port);
        sn->watch[sn->at] = sn->child; /* SUBSCRIBE went with the ask: its messages follow */
        sn->child = NULL;
        sn->nwatch++;
        eddy__link_accept_pushes(sn->watch[sn->at]);
        sn->found = true;
        sn->named_by = sn->at;
        *host = sn->host;
        *port = sn->port;
        return EDDY_OK;
    }
    if (st == EDDY_ERR_NOMEM) {
        eddy__sentinel_stop(sn);
        return eddy__fail(err, st, "%s", e.detail);
    }
    note(sn, st, e.detail);
    return ask_next(sn, err);
}

size_t eddy__sentinel_watching(const eddy__sentinel *sn) { return sn->nwatch; }

bool eddy__sentinel_watches_all(const eddy__sentinel *sn) {
    if (!sn || sn->nwatch < sn->s->url.nsentinels)
        return false;
    for (size_t i = 0; i < sn->s->url.nsentinels; i++)
        if (eddy__link_phase_of(sn->watch[i]) != EDDY__LINK_READY)
            return false;
    return true;
}

static bool elem_is(const redisReply *r, size_t i, const char *s) {
    return r->element[i]->type == REDIS_REPLY_STRING && r->element[i]->len == strlen(s) &&
           memcmp(r->element[i]->str, s, r->element[i]->len) == 0;
}

/* Splits [p, lim) at spaces into at most max words; the count, or max + 1 for more. */
static size_t split(const char *p, const char *lim, const char **word, size_t *len, size_t max) {
    size_t n = 0;
    for (;;) {
        while (p < lim && *p == ' ')
            p++;
        if (p == lim)
            return n;
        if (n == max)
            return max + 1;
        word[n] = p;
        while (p < lim && *p != ' ')
            p++;
        len[n] = (size_t)(p - word[n]);
        n++;
    }
}

/* host:port from two words; false when they are not an address. */
static bool take_addr(const char *h, size_t hlen, const char *p, size_t plen, char *host,
                      size_t hostsize, int *port) {
    if (hlen == 0 || hlen >= hostsize || plen == 0 || plen > 5)
        return false;
    long v = 0;
    for (size_t i = 0; i < plen; i++) {
        if (p[i] < '0' || p[i] > '9')
            return false;
        v = v * 10 + (p[i] - '0');
    }
    if (v < 1 || v > 65535)
        return false;
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    *port = (int)v;
    return true;
}

eddy__sentinel_msg eddy__sentinel_message(const redisReply *r, const char *name, char *host,
                                          size_t hostsize, int *port) {
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 3 || !elem_is(r, 0, "message") ||
        r->element[2]->type != REDIS_REPLY_STRING)
        return EDDY__SENTINEL_MSG_NONE;
    bool sw = elem_is(r, 1, "+switch-master");
    bool promoting = elem_is(r, 1, "+failover-state-wait-promotion");
    if (!sw && !promoting && !elem_is(r, 1, "+failover-state-reconf-slaves"))
        return EDDY__SENTINEL_MSG_NONE;
    const char *w[8];
    size_t len[8];
    size_t n = split(r->element[2]->str, r->element[2]->str + r->element[2]->len, w, len, 8);
    if (promoting) { /* "slave <ip>:<port> <ip> <port> @ <name> <master ip> <master port>" */
        if (n != 8 || len[0] != 5 || memcmp(w[0], "slave", 5) != 0 || len[4] != 1 ||
            w[4][0] != '@' || len[5] != strlen(name) || memcmp(w[5], name, len[5]) != 0 ||
            !take_addr(w[6], len[6], w[7], len[7], host, hostsize, port))
            return EDDY__SENTINEL_MSG_NONE;
        return EDDY__SENTINEL_MSG_PROMOTING;
    }
    if (sw) { /* "<name> <old ip> <old port> <new ip> <new port>" */
        if (n != 5 || len[0] != strlen(name) || memcmp(w[0], name, len[0]) != 0 ||
            !take_addr(w[3], len[3], w[4], len[4], host, hostsize, port))
            return EDDY__SENTINEL_MSG_NONE;
        return EDDY__SENTINEL_MSG_SWITCH;
    }
    /* "master <name> <ip> <port>": the failover of the master at ip:port promoted a replica,
     * which the sentinel names from now on (get-master-addr-by-name), before +switch-master. */
    if (n != 4 || len[0] != 6 || memcmp(w[0], "master", 6) != 0 || len[1] != strlen(name) ||
        memcmp(w[1], name, len[1]) != 0 ||
        !take_addr(w[2], len[2], w[3], len[3], host, hostsize, port))
        return EDDY__SENTINEL_MSG_NONE;
    return EDDY__SENTINEL_MSG_LEAVING;
}

/* Reads what watch i holds (it was ready). EDDY_ERR_IO when it announces that the master left
 * host:port; a watch that fails is dropped. */
static eddy_status read_watch(eddy__sentinel *sn, size_t i, unsigned ready, const char *host,
                              int port, eddy_error *err) {
    eddy__link *w = sn->watch[i];
    eddy_error e;
    eddy_status st = eddy__link_io(w, ready, &e);
    for (redisReply *r = NULL; st == EDDY_OK; r = NULL) {
        if ((st = eddy__link_reply(w, &r, &e)) != EDDY_OK || !r)
            break;
        char at[256];
        int at_port = 0;
        eddy__sentinel_msg m = eddy__sentinel_message(r, sn->s->url.name, at, sizeof(at), &at_port);
        bool here = host && at_port == port && strcmp(at, host) == 0;
        bool moved =
            (m == EDDY__SENTINEL_MSG_SWITCH && !here) ||
            ((m == EDDY__SENTINEL_MSG_LEAVING || m == EDDY__SENTINEL_MSG_PROMOTING) && here);
        if (m == EDDY__SENTINEL_MSG_PROMOTING && here) /* every connection of the handle */
            eddy__conn_master_avoid(sn->s->conn_state, at, at_port);
        if (r->type == REDIS_REPLY_ERROR) /* SUBSCRIBE refused (the sentinels' ACL) */
            st = eddy__fail(&e, EDDY_ERR_BACKEND, "%.*s", (int)r->len, r->str);
        freeReplyObject(r);
        if (moved) {
            const char *what = m == EDDY__SENTINEL_MSG_LEAVING ? "+failover-state-reconf-slaves"
                                                               : "+failover-state-wait-promotion";
            eddy_status out =
                m == EDDY__SENTINEL_MSG_SWITCH
                    ? eddy__fail(err, EDDY_ERR_IO,
                                 "sentinel %s: +switch-master: the master '%s' moved from %s:%d "
                                 "to %s:%d",
                                 eddy__link_peer(w), sn->s->url.name, host ? host : "?", port, at,
                                 at_port)
                    : eddy__fail(err, EDDY_ERR_IO,
                                 "sentinel %s: %s: a replica of the master '%s' at %s:%d is "
                                 "being promoted; asking for the new master",
                                 eddy__link_peer(w), what, sn->s->url.name, at, at_port);
            eddy__log(&sn->s->log, EDDY_LOG_INFO, "%s", err ? err->detail : "the master moved");
            return out;
        }
    }
    if (st != EDDY_OK) { /* this watch is gone; the others, and the link's checks, remain */
        eddy__log(&sn->s->log, EDDY_LOG_DEBUG, "sentinel %s: no longer watched: %s",
                  eddy__link_peer(w), e.detail);
        drop_watch(sn, i);
    }
    return EDDY_OK;
}

eddy_status eddy__sentinel_watch(eddy__sentinel *sn, const char *host, int port, eddy_error *err) {
    if (sn->nwatch == 0)
        return EDDY_OK;
    /* One poll() that does not wait tells which watches have something (or finished their
     * connect: a connect's end must be seen, not guessed, before the link is stepped). */
    size_t n = sn->s->url.nsentinels;
    struct pollfd small[8], *p = n <= 8 ? small : calloc(n, sizeof(*p));
    if (!p)
        return EDDY_OK; /* out of memory: looked at next time */
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned wants = sn->watch[i] ? eddy__link_wants(sn->watch[i]) : 0;
        p[i] = (struct pollfd){.fd = wants ? eddy__link_fd(sn->watch[i]) : -1,
                               .events = (short)(((wants & EDDY__LINK_READ) ? POLLIN : 0) |
                                                 ((wants & EDDY__LINK_WRITE) ? POLLOUT : 0))};
        k += wants != 0;
    }
    eddy_status st = EDDY_OK;
    if (k > 0 && poll(p, (nfds_t)n, 0) > 0)
        for (size_t i = 0; i < n && st == EDDY_OK; i++) {
            if (!sn->watch[i] || !p[i].revents)
                continue;
            unsigned ready = ((p[i].revents & POLLIN) ? EDDY__LINK_READ : 0) |
                             ((p[i].revents & POLLOUT) ? EDDY__LINK_WRITE : 0);
            if (p[i].revents & (POLLERR | POLLHUP | POLLNVAL))
                ready = EDDY__LINK_READ | EDDY__LINK_WRITE;
            st = read_watch(sn, i, ready, host, port, err);
        }
    if (p != small)
        free(p);
    return st;
}

void eddy__sentinel_role_cmd(eddy__cmdlist *out) {
    eddy__cmd *c = eddy__cmdlist_add(out, 0, 0);
    if (c)
        eddy__cmd_str(c, "ROLE");
}

eddy_status eddy__sentinel_check_role(const eddy__sentinel *sn, const redisReply *r,
                                      const char *peer, eddy_error *err) {
    if (r->type == REDIS_REPLY_ERROR)
        return eddy__fail(err, EDDY_ERR_BACKEND, "ROLE refused by %s: %.*s", peer, (int)r->len,
                          r->str);
    if (r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
        r->element[0]->type == REDIS_REPLY_STRING && strcmp(r->element[0]->str, "master") == 0)
        return EDDY_OK;
    const char *role =
        r->type == REDIS_REPLY_ARRAY && r->elements > 0 && r->element[0]->type == REDIS_REPLY_STRING
            ? r->element[0]->str
            : "unknown";
    return eddy__fail(err, EDDY_ERR_IO,
                      "%s, named by a sentinel as the master '%s', has the role %s (a failover "
                      "is under way: the next connect asks again)",
                      peer, sn->s->url.name, role);
}

bool eddy__sentinel_readonly(const redisReply *r) {
    return r && r->type == REDIS_REPLY_ERROR && r->len >= 8 && memcmp(r->str, "READONLY", 8) == 0;
}
