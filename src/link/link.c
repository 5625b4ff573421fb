/* SPDX-License-Identifier: BSD-3-Clause */
/* The sans-IO connection; see link.h.
 *
 * Invariants:
 * - Output bytes live in out[off, len). Bytes are counted since the link was made (`wrote`,
 *   `queued_bytes`), and each queued run of commands leaves a mark (the byte count at its end,
 *   the number of its last command), so `sent` moves to a run's last command once every byte
 *   up to its mark was written. A connect or close drops unwritten bytes and their marks.
 * - The handshake's commands go first in the output at connect; their replies are taken by the
 *   link itself (hs_left of them) before any reply is handed to the driver.
 * - The socket is closed only by eddy__link_close/connect/free, never on a failure, so the fd
 *   number stays valid for eddy__link_shutdown from another thread until then.
 * - redis-cluster:// only: the bytes of commands written but not answered stay in out too,
 *   in [off - retained, off), and `ends` holds each unanswered command's end (in queued_bytes
 *   numbering, UINT64_MAX when unknown), so that a command answered -ASK can be sent once more
 *   to the node the ASK names (cluster.h). */
#include "link/link.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "config/conn_state.h"
#include "error.h"
#include "link/cluster.h"
#include "link/link_mem.h"
#include "link/link_tls.h"
#include "link/redis.h"
#include "link/sentinel.h"
#include "util/reply_arena.h"
#include "util/resp_scan.h"

#include <hiredis/sds.h>

#define READ_CHUNK 16384
#define READ_MAX_PER_CALL (1u << 20)
#define KEEP_OUT_CAP (1u << 20) /* a drained buffer larger than this is freed */

typedef struct mark {
    uint64_t end_byte; /* queued_bytes after the run */
    uint64_t last_cmd;
} mark;

struct eddy__link {
    const eddy__settings *s;
    bool want_id;
    eddy__link_phase phase;
    int fd;
    eddy__tls *tls;
    unsigned tls_want; /* during TLS: what the handshake waits for; after: a read wants write */
    struct addrinfo *addrs, *next_addr;
    long long deadline;
    redisReader *reader;
    eddy__resp_scan scan; /* in front of the reader: skips oversize bulks (resp_scan.h) */
    char *out;
    size_t off, len, cap;
    uint64_t queued_bytes, wrote;
    mark *marks;
    size_t mhead, mn, mcap; /* ring of marks not yet passed */
    uint64_t queued, sent, answered;
    unsigned hs_left;    /* handshake replies still to take */
    bool hs_id_last;     /* the last handshake command is CLIENT ID */
    long long client_id; /* -1 unknown */
    bool peer_closed;    /* EOF or reset seen: replies already read are still handed out */
    eddy_error closed_why;
    char peer[128];
    const char *host; /* tcp: the URL's, or the master a sentinel named */
    int port;
    /* redis-sentinel://: finds the master before each connect; ROLE ends the handshake, and
     * commands wait in the buffer until it said master (hs_end: where the handshake's bytes
     * end), so that none reaches a replica. */
    eddy__sentinel *sen;
    /* redis-cluster://: finds the master of the namespace's slot before each connect; a
     * redirect reply fails the link (eddy__cluster_redirect). */
    eddy__cluster *cl;
    /* A command (not the handshake) was answered since the last connect: eddy__link_proved. */
    bool proved;
    bool hs_role_last;
    uint64_t hs_end;
    /* redis-sentinel://: the handle's master epoch this connect began at (conn_state.h); a
     * newer one fails the link at its next step, so that it asks the sentinels afresh. */
    unsigned master_epoch;
    unsigned master_moves; /* eddy__conn_master_moves at the same moment */
    bool pushes;           /* eddy__link_accept_pushes */
    unsigned socket_id;    /* this socket's number among every link's (eddy__link_socket_id) */
    eddy__memlink *mem;    /* memory://: every call is handed on to it (link_mem.c) */
    /* redis-cluster://: where each unanswered command ends (a ring; see the top), where the
     * last answered one ended, whether that is exact, whether the next reply is inside a
     * MULTI (an ASK there is not followed: the transaction is aborted by the server), and the
     * reply an ASK's detour brought back, not handed out yet. */
    uint64_t *ends;
    size_t ehead, en, ecap;
    uint64_t answered_end;
    bool ends_exact, in_multi;
    redisReply *ask_reply;
};

static atomic_uint sockets_made;

unsigned eddy__link_next_socket_id(void) { return atomic_fetch_add(&sockets_made, 1) + 1; }
static void free_reply(eddy__link *l, void *r);

static void set_peer(eddy__link *l) {
    if (l->s->url.kind == EDDY__URL_UNIX)
        snprintf(l->peer, sizeof(l->peer), "%s", l->s->url.path);
    else if (!l->host && l->cl)
        snprintf(l->peer, sizeof(l->peer), "the master of slot %u", eddy__cluster_slot(l->cl));
    else if (!l->host)
        snprintf(l->peer, sizeof(l->peer), "the master '%s'", l->s->url.name);
    else
        snprintf(l->peer, sizeof(l->peer), "%s:%d", l->host, l->port);
}

eddy__link *eddy__link_new(const eddy__settings *s, bool want_client_id) {
    eddy__link *l = calloc(1, sizeof(*l));
    if (!l)
        return NULL;
    if (!(l->reader = redisReaderCreate())) {
        free(l);
        return NULL;
    }
    l->s = s;
    l->want_id = want_client_id;
    l->fd = -1;
    l->deadline = -1;
    l->client_id = -1;
    l->host = s->url.host;
    l->port = s->url.port;
    if (s->url.kind == EDDY__URL_MEMORY && !(l->mem = eddy__memlink_new(s, l->reader))) {
        redisReaderFree(l->reader);
        free(l);
        return NULL;
    }
    if ((s->url.kind == EDDY__URL_SENTINEL && !(l->sen = eddy__sentinel_new(s))) ||
        (s->url.kind == EDDY__URL_CLUSTER && !(l->cl = eddy__cluster_new(s)))) {
        redisReaderFree(l->reader);
        free(l);
        return NULL;
    }
    set_peer(l);
    return l;
}

/* Drops queued bytes and unanswered replies; keeps the counters. */
static void drop_queue(eddy__link *l) {
    l->off = l->len = 0;
    l->wrote = l->queued_bytes;
    l->ehead = l->en = 0;
    l->answered_end = l->queued_bytes;
    l->ends_exact = true;
    l->in_multi = false;
    l->mhead = l->mn = 0;
    l->sent = l->answered = l->queued;
    if (l->cap > KEEP_OUT_CAP) {
        free(l->out);
        l->out = NULL;
        l->cap = 0;
    }
    /* Emptied in place, so it keeps its object functions (an installed arena stays): as
     * hiredis's own reset would, had 0.14 one. */
    redisReader *r = l->reader;
    if (r->reply && r->fn && r->fn->freeObject)
        r->fn->freeObject(r->reply);
    r->reply = NULL;
    if (r->buf) /* NULL after a protocol error (hiredis frees it); read_in makes a new one */
        sdsclear(r->buf);
    r->pos = r->len = 0;
    r->ridx = -1;
    r->err = 0;
    r->errstr[0] = '\0';
    eddy__resp_scan_init(&l->scan);
}

void eddy__link_close(eddy__link *l) {
    if (l->mem) {
        eddy__memlink_close(l->mem);
        return;
    }
    eddy__tls_free(l->tls);
    l->tls = NULL;
    l->tls_want = 0;
    if (l->fd >= 0)
        close(l->fd);
    l->fd = -1;
    if (l->addrs)
        freeaddrinfo(l->addrs);
    l->addrs = l->next_addr = NULL;
    l->phase = EDDY__LINK_IDLE;
    l->deadline = -1;
    l->hs_left = 0;
    l->client_id = -1;
    l->peer_closed = false;
    drop_queue(l);
    if (l->sen)
        eddy__sentinel_stop(l->sen);
    if (l->cl) {
        eddy__cluster_stop(l->cl);
        eddy__cluster_ask_stop(l->cl);
    }
    free_reply(l, l->ask_reply);
    l->ask_reply = NULL;
}

void eddy__link_free(eddy__link *l) {
    if (!l)
        return;
    eddy__link_close(l);
    eddy__memlink_free(l->mem);
    if (l->reader)
        redisReaderFree(l->reader);
    eddy__sentinel_free(l->sen);
    eddy__cluster_free(l->cl);
    free(l->ends);
    free(l->out);
    free(l->marks);
    free(l);
}

static eddy_status fail(eddy__link *l, eddy_status st) {
    l->phase = EDDY__LINK_FAILED;
    l->deadline = -1;
    return st;
}

/* A sentinel or a cluster node is being asked where to connect: its socket is the one to
 * wait on. */
static bool discovering(const eddy__link *l) {
    return (l->sen && eddy__sentinel_asking(l->sen)) || (l->cl && eddy__cluster_asking(l->cl));
}

/* An ASK is being followed: the detour's socket is the one to wait on (the main socket waits:
 * nothing more is read from it before the ASKed command's reply is handed out). */
static bool detouring(const eddy__link *l) {
    return l->cl && l->phase == EDDY__LINK_READY && eddy__cluster_following_ask(l->cl);
}

eddy__link_phase eddy__link_phase_of(const eddy__link *l) {
    return l->mem ? eddy__memlink_phase(l->mem) : l->phase;
}
int eddy__link_fd(const eddy__link *l) {
    if (l->mem)
        return eddy__memlink_fd(l->mem);
    if (detouring(l))
        return eddy__cluster_ask_fd(l->cl);
    if (!discovering(l))
        return l->fd;
    return l->sen ? eddy__sentinel_fd(l->sen) : eddy__cluster_fd(l->cl);
}
int eddy__link_write_fd(const eddy__link *l) { return l->mem ? eddy__memlink_fd(l->mem) : l->fd; }
unsigned eddy__link_socket_id(const eddy__link *l) {
    if (l->mem)
        return eddy__memlink_socket_id(l->mem);
    if (detouring(l))
        return eddy__cluster_ask_socket_id(l->cl);
    if (!discovering(l))
        return l->socket_id;
    return l->sen ? eddy__sentinel_socket_id(l->sen) : eddy__cluster_socket_id(l->cl);
}
long long eddy__link_deadline(const eddy__link *l) {
    return l->mem ? eddy__memlink_deadline(l->mem) : l->deadline;
}
uint64_t eddy__link_queued(const eddy__link *l) {
    return l->mem ? eddy__memlink_queued(l->mem) : l->queued;
}
uint64_t eddy__link_sent(const eddy__link *l) {
    return l->mem ? eddy__memlink_sent(l->mem) : l->sent;
}
bool eddy__link_proved(const eddy__link *l) { return l && !l->mem && l->proved; }

uint64_t eddy__link_answered(const eddy__link *l) {
    return l->mem ? eddy__memlink_answered(l->mem) : l->answered;
}
bool eddy__link_ready(const eddy__link *l) { return l->mem && eddy__memlink_ready(l->mem); }
void eddy__link_accept_pushes(eddy__link *l) { l->pushes = true; }
redisReader *eddy__link_reader(eddy__link *l) { return l->reader; }
long long eddy__link_client_id(const eddy__link *l) { return l->client_id; }
const char *eddy__link_peer(const eddy__link *l) {
    return l->mem ? eddy__memlink_peer(l->mem) : l->peer;
}

void eddy__link_shutdown(eddy__link *l) {
    if (l->mem) {
        eddy__memlink_shutdown(l->mem);
        return;
    }
    int fd = l->fd;
    if (fd >= 0)
        shutdown(fd, SHUT_RDWR);
}

/* Where writing must stop for now: the handshake's end while a sentinel's master has not said
 * ROLE master yet, the buffer's end otherwise. */
static size_t write_end(const eddy__link *l) {
    if (l->sen && l->hs_left > 0 && l->hs_end - l->wrote < l->len - l->off)
        return l->off + (size_t)(l->hs_end - l->wrote);
    return l->len;
}

unsigned eddy__link_read_wants(const eddy__link *l) {
    return detouring(l) ? eddy__link_wants(l) : EDDY__LINK_READ;
}

unsigned eddy__link_wants(const eddy__link *l) {
    if (l->mem)
        return eddy__memlink_wants(l->mem);
    if (detouring(l))
        return l->ask_reply ? 0 : eddy__cluster_ask_wants(l->cl);
    if (discovering(l) && l->phase != EDDY__LINK_CONNECTING)
        return 0;
    if (discovering(l))
        return l->sen ? eddy__sentinel_wants(l->sen) : eddy__cluster_wants(l->cl);
    switch (l->phase) {
    case EDDY__LINK_CONNECTING:
        return EDDY__LINK_WRITE;
    case EDDY__LINK_TLS:
        return l->tls_want;
    case EDDY__LINK_HANDSHAKE:
    case EDDY__LINK_READY: /* after EOF, READ: poll() says ready at once, and io fails */
        return EDDY__LINK_READ | (l->off < write_end(l) && !l->peer_closed ? EDDY__LINK_WRITE : 0) |
               l->tls_want;
    default:
        return 0;
    }
}

eddy_status eddy__link_tick(eddy__link *l, long long now_ms, eddy_error *err) {
    if (l->mem) {
        eddy__memlink_tick(l->mem, now_ms);
        return EDDY_OK;
    }
    if (l->deadline < 0 || now_ms < l->deadline)
        return EDDY_OK;
    if (l->phase == EDDY__LINK_TLS) /* a plain server reads a ClientHello as a command, waiting */
        return fail(l, eddy__fail(err, EDDY_ERR_TLS,
                                  "TLS handshake: %s did not answer the TLS handshake within %u "
                                  "ms (a plain port? use redis://)",
                                  l->peer, l->s->connect_timeout_ms));
    eddy_status st = eddy__fail(err, EDDY_ERR_IO, "connect to %s timed out after %u ms", l->peer,
                                l->s->connect_timeout_ms);
    return fail(l, st);
}

/* redis-sentinel://, once a master was named: fails the link when the handle's master epoch
 * moved since this connect began (another connection of the handle heard of a switch, or
 * doubted the master), or when this link's own watch announces a switch (sentinel.h), which
 * then moves the handle's epoch for the others. `watch`: read the watch too (it costs a
 * recv(); the reply path only compares epochs). */
static eddy_status follow_master(eddy__link *l, bool watch, eddy_error *err) {
    if (!l->sen || !l->host || (l->phase != EDDY__LINK_HANDSHAKE && l->phase != EDDY__LINK_READY))
        return EDDY_OK;
    unsigned epoch = eddy__conn_master_epoch(l->s->conn_state);
    if (epoch != l->master_epoch && eddy__conn_master_moves(l->s->conn_state) == l->master_moves &&
        eddy__sentinel_watches_all(l->sen)) {
        /* Only doubts (a WAIT shortfall, a ROLE seen elsewhere): every sentinel is watched
         * here, so a failover would have been announced; a READONLY still moves the epoch. A
         * replica that is down or resyncing then costs no reconnect. */
        l->master_epoch = epoch;
        eddy__log(&l->s->log, EDDY_LOG_DEBUG,
                  "%s stays the master '%s' for this connection: a doubt, and no sentinel "
                  "announced a switch",
                  l->peer, l->s->url.name);
    }
    if (epoch != l->master_epoch)
        return fail(l, eddy__fail(err, EDDY_ERR_IO,
                                  "%s may no longer be the master '%s' (another connection "
                                  "heard of a switch or doubted it): asking the sentinels again",
                                  l->peer, l->s->url.name));
    if (!watch)
        return EDDY_OK;
    eddy_status st = eddy__sentinel_watch(l->sen, l->host, l->port, err);
    if (st == EDDY_OK)
        return EDDY_OK;
    eddy__conn_master_moved(l->s->conn_state);
    return fail(l, st);
}

/* ---- output ------------------------------------------------------------------------------ */

/* Bytes before off that stay in out: the written, unanswered commands' (cluster only). */
static size_t retained(const eddy__link *l) {
    return l->cl && l->wrote > l->answered_end ? (size_t)(l->wrote - l->answered_end) : 0;
}

static bool reserve_out(eddy__link *l, size_t n) {
    size_t keep = l->off - retained(l); /* where the bytes still needed start */
    if (keep > 0 && keep == l->len)
        l->off = l->len = keep = 0;
    if (l->len + n <= l->cap)
        return true;
    if (keep > 0) { /* compact first */
        memmove(l->out, l->out + keep, l->len - keep);
        l->len -= keep;
        l->off -= keep;
        if (l->len + n <= l->cap)
            return true;
    }
    size_t cap = l->cap ? l->cap : 4096;
    while (cap < l->len + n)
        cap *= 2;
    char *p = realloc(l->out, cap);
    if (!p)
        return false;
    l->out = p;
    l->cap = cap;
    return true;
}

static bool push_mark(eddy__link *l, uint64_t end_byte, uint64_t last_cmd) {
    if (l->mn == l->mcap) {
        size_t cap = l->mcap ? l->mcap * 2 : 16;
        mark *m = malloc(cap * sizeof(*m));
        if (!m)
            return false;
        for (size_t i = 0; i < l->mn; i++)
            m[i] = l->marks[(l->mhead + i) % l->mcap];
        free(l->marks);
        l->marks = m;
        l->mcap = cap;
        l->mhead = 0;
    }
    l->marks[(l->mhead + l->mn) % l->mcap] = (mark){end_byte, last_cmd};
    l->mn++;
    return true;
}

/* Room in the ring of command ends for n more (cluster only). */
static bool reserve_ends(eddy__link *l, size_t n) {
    if (l->en + n <= l->ecap)
        return true;
    size_t cap = l->ecap ? l->ecap : 64;
    while (cap < l->en + n)
        cap *= 2;
    uint64_t *e = malloc(cap * sizeof(*e));
    if (!e)
        return false;
    for (size_t i = 0; i < l->en; i++)
        e[i] = l->ends[(l->ehead + i) % l->ecap];
    free(l->ends);
    l->ends = e;
    l->ecap = cap;
    l->ehead = 0;
    return true;
}

static void push_end(eddy__link *l, uint64_t end) { l->ends[(l->ehead + l->en++) % l->ecap] = end; }

/* Reads a "<c><digits>\r\n" header at p (before lim): its number into *v, the position after
 * it returned; NULL when it is not that. */
static const char *resp_header(const char *p, const char *lim, char c, size_t *v) {
    if (p >= lim || *p++ != c)
        return NULL;
    size_t n = 0;
    const char *d = p;
    while (p < lim && *p >= '0' && *p <= '9' && p - d < 12)
        n = n * 10 + (size_t)(*p++ - '0');
    if (p == d || lim - p < 2 || p[0] != '\r' || p[1] != '\n')
        return NULL;
    *v = n;
    return p + 2;
}

/* The length of the command (a RESP array of bulk strings, as eddy writes them) at the start of
 * [p, lim); 0 when it is not one. */
static size_t resp_cmd_len(const char *p, const char *lim) {
    size_t argc, len;
    const char *at = resp_header(p, lim, '*', &argc);
    for (size_t i = 0; at && i < argc; i++)
        if ((at = resp_header(at, lim, '$', &len)) && (size_t)(lim - at) >= len + 2)
            at += len + 2;
        else
            at = NULL;
    return at ? (size_t)(at - p) : 0;
}

/* Appends raw bytes: ncmds > 0 numbers them as commands (with a mark), 0 is the handshake's. */
static eddy_status append(eddy__link *l, const eddy__cmdlist *cmds, const char *resp, size_t len,
                          size_t ncmds, uint64_t *last, eddy_error *err) {
    if (l->phase == EDDY__LINK_IDLE || l->phase == EDDY__LINK_FAILED)
        return eddy__fail(err, EDDY_ERR_IO, "connection to %s is not open", l->peer);
    if (cmds)
        for (size_t i = 0; i < cmds->n; i++)
            len += eddy__cmd_resp_size(&cmds->cmds[i]);
    if (!reserve_out(l, len) || (l->cl && ncmds > 0 && !reserve_ends(l, ncmds)) ||
        (ncmds > 0 && !push_mark(l, l->queued_bytes + len, l->queued + ncmds)))
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory queueing commands");
    if (l->cl && ncmds > 0) { /* each command's end (raw bytes: parsed; unknown: UINT64_MAX) */
        uint64_t end = l->queued_bytes;
        const char *p = resp, *lim = resp ? resp + len : NULL;
        for (size_t i = 0; i < ncmds; i++) {
            size_t k = cmds ? eddy__cmd_resp_size(&cmds->cmds[i]) : p ? resp_cmd_len(p, lim) : 0;
            if (!cmds && p)
                p = k ? p + k : NULL;
            end = k && end != UINT64_MAX ? end + k : UINT64_MAX;
            push_end(l, i + 1 == ncmds ? l->queued_bytes + len : end);
        }
    } else if (l->cl && l->en == 0) { /* the handshake's: not kept */
        l->answered_end = l->queued_bytes + len;
    }
    char *at = l->out + l->len;
    if (cmds)
        for (size_t i = 0; i < cmds->n; i++)
            at = eddy__cmd_resp_write(&cmds->cmds[i], at);
    else
        memcpy(at, resp, len);
    l->len += len;
    l->queued_bytes += len;
    l->queued += ncmds;
    if (last)
        *last = l->queued;
    return EDDY_OK;
}

eddy_status eddy__link_send(eddy__link *l, const eddy__cmdlist *cmds, uint64_t *last,
                            eddy_error *err) {
    if (l->mem)
        return eddy__memlink_send(l->mem, cmds, last, err);
    if (cmds->n == 0) {
        if (last)
            *last = l->queued;
        return EDDY_OK;
    }
    return append(l, cmds, NULL, 0, cmds->n, last, err);
}

eddy_status eddy__link_send_resp(eddy__link *l, const char *resp, size_t len, size_t ncmds,
                                 uint64_t *last, eddy_error *err) {
    if (l->mem) /* the engine runs commands, not their RESP */
        return eddy__fail(err, EDDY_ERR_IO, "%s takes commands, not RESP", eddy__link_peer(l));
    return append(l, NULL, resp, len, ncmds, last, err);
}

/* Moves `sent` past every run whose bytes are all written. */
static void pass_marks(eddy__link *l) {
    while (l->mn > 0 && l->marks[l->mhead].end_byte <= l->wrote) {
        l->sent = l->marks[l->mhead].last_cmd;
        l->mhead = (l->mhead + 1) % l->mcap;
        l->mn--;
    }
}

static eddy_status write_out(eddy__link *l, eddy_error *err) {
    size_t end;
    while (l->off < (end = write_end(l))) {
        ssize_t k;
        if (l->tls) {
            unsigned want = 0;
            k = eddy__tls_write(l->tls, l->out + l->off, end - l->off, &want, err);
            if (k < 0)
                return fail(l, err ? err->status : EDDY_ERR_IO);
            if (k == 0)
                break; /* TLS writes want only writability here */
        } else {
            k = send(l->fd, l->out + l->off, end - l->off, MSG_NOSIGNAL);
            if (k < 0 && errno == EINTR)
                continue;
            if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                break;
            if (k < 0)
                return fail(l, eddy__fail(err, EDDY_ERR_IO, "connection to %s: %s", l->peer,
                                          strerror(errno)));
        }
        l->off += (size_t)k;
        l->wrote += (uint64_t)k;
    }
    pass_marks(l);
    if (l->off == l->len && retained(l) == 0) {
        l->off = l->len = 0;
        if (l->cap > KEEP_OUT_CAP) {
            free(l->out);
            l->out = NULL;
            l->cap = 0;
        }
    }
    return EDDY_OK;
}

/* ---- connecting -------------------------------------------------------------------------- */

static eddy_status queue_handshake(eddy__link *l, eddy_error *err) {
    eddy__cmdlist hs;
    eddy__cmdlist_init(&hs);
    eddy_status st = eddy__handshake_cmds(&l->s->url, &hs);
    if (st == EDDY_OK && l->want_id)
        eddy__client_id_cmd(&hs);
    if (st == EDDY_OK && l->sen)
        eddy__sentinel_role_cmd(&hs);
    if (st == EDDY_OK)
        st = eddy__cmdlist_status(&hs);
    if (st == EDDY_OK && hs.n > 0)
        st = append(l, &hs, NULL, 0, 0, NULL, err);
    else if (st != EDDY_OK)
        st = eddy__fail(err, EDDY_ERR_NOMEM, "out of memory connecting");
    l->hs_left = (unsigned)hs.n;
    l->hs_id_last = l->want_id;
    l->hs_role_last = l->sen != NULL;
    l->hs_end = l->queued_bytes;
    eddy__cmdlist_reset(&hs);
    return st;
}

/* The socket is connected: TLS next, or the handshake. */
static eddy_status connected(eddy__link *l, eddy_error *err) {
    if (l->addrs)
        freeaddrinfo(l->addrs);
    l->addrs = l->next_addr = NULL;
    if (l->s->url.tls && !l->tls) {
        eddy_status st = eddy__tls_new(l->s, l->host, l->fd, &l->tls, err);
        if (st != EDDY_OK)
            return fail(l, st);
        l->phase = EDDY__LINK_TLS;
        l->tls_want = EDDY__LINK_WRITE;
        return EDDY_OK;
    }
    l->phase = l->hs_left > 0 ? EDDY__LINK_HANDSHAKE : EDDY__LINK_READY;
    if (l->phase == EDDY__LINK_READY)
        l->deadline = -1;
    return EDDY_OK;
}

static int new_socket(eddy__link *l, int family) {
    l->socket_id = atomic_fetch_add(&sockets_made, 1) + 1;
    int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd >= 0 && family != AF_UNIX) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
    }
    return fd;
}

/* Starts connecting to the next address; EDDY_ERR_IO when none is left (why: the last error). */
static eddy_status try_next(eddy__link *l, int why, eddy_error *err) {
    while (l->next_addr) {
        struct addrinfo *a = l->next_addr;
        l->next_addr = a->ai_next;
        if (l->fd >= 0)
            close(l->fd);
        if ((l->fd = new_socket(l, a->ai_family)) < 0) {
            why = errno;
            continue;
        }
        if (connect(l->fd, a->ai_addr, a->ai_addrlen) == 0)
            return connected(l, err);
        if (errno == EINPROGRESS) {
            l->phase = EDDY__LINK_CONNECTING;
            return EDDY_OK;
        }
        why = errno;
    }
    return fail(l, eddy__fail(err, EDDY_ERR_IO, "connect to %s: %s", l->peer, strerror(why)));
}

static eddy_status connect_unix(eddy__link *l, eddy_error *err) {
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", l->s->url.path);
    if ((l->fd = new_socket(l, AF_UNIX)) < 0)
        return fail(l, eddy__fail(err, EDDY_ERR_IO, "socket: %s", strerror(errno)));
    if (connect(l->fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
        return connected(l, err);
    if (errno == EINPROGRESS || errno == EAGAIN) {
        l->phase = EDDY__LINK_CONNECTING;
        return EDDY_OK;
    }
    return fail(l, eddy__fail(err, EDDY_ERR_IO, "connect to %s: %s", l->peer, strerror(errno)));
}

static eddy_status connect_tcp(eddy__link *l, eddy_error *err) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    char port[16];
    snprintf(port, sizeof(port), "%d", l->port);
    int rc = getaddrinfo(l->host, port, &hints, &l->addrs);
    if (rc != 0)
        return fail(l, eddy__fail(err, rc == EAI_MEMORY ? EDDY_ERR_NOMEM : EDDY_ERR_IO,
                                  "resolve %s: %s", l->host, gai_strerror(rc)));
    l->next_addr = l->addrs;
    return try_next(l, ENOENT, err);
}

eddy_status eddy__link_connect(eddy__link *l, long long now_ms, eddy_error *err) {
    if (l->mem)
        return eddy__memlink_connect(l->mem, err);
    eddy__link_close(l);
    l->proved = false;
    l->deadline = now_ms + l->s->connect_timeout_ms;
    l->phase = EDDY__LINK_CONNECTING; /* queue_handshake may append */
    eddy_status st = queue_handshake(l, err);
    if (st != EDDY_OK)
        return fail(l, st);
    if (l->s->url.kind == EDDY__URL_UNIX)
        return connect_unix(l, err);
    if (l->sen)
        l->master_epoch = eddy__conn_master_epoch(l->s->conn_state);
    l->master_moves = eddy__conn_master_moves(l->s->conn_state);
    if (l->sen || l->cl) { /* the master's address first: eddy__link_io goes on with ask_step */
        l->host = NULL;
        set_peer(l);
        st = l->sen ? eddy__sentinel_start(l->sen, l->deadline, err)
                    : eddy__cluster_start(l->cl, l->deadline, err);
        if (st != EDDY_OK)
            return fail(l, st);
        return EDDY_OK;
    }
    return connect_tcp(l, err);
}

/* A sentinel or a cluster node is being asked: steps it, and connects to the master once one
 * is named. */
static eddy_status ask_step(eddy__link *l, unsigned ready, eddy_error *err) {
    const char *host = NULL;
    int port = 0;
    eddy_status st = l->sen ? eddy__sentinel_io(l->sen, ready, &host, &port, err)
                            : eddy__cluster_io(l->cl, ready, &host, &port, err);
    if (st != EDDY_OK)
        return fail(l, st);
    if (!host)
        return EDDY_OK;
    l->host = host;
    l->port = port;
    set_peer(l);
    return connect_tcp(l, err);
}

/* CONNECTING and the socket said writable (or failed): done, or the next address. */
static eddy_status finish_connect(eddy__link *l, eddy_error *err) {
    int soerr = 0;
    socklen_t slen = sizeof(soerr);
    if (getsockopt(l->fd, SOL_SOCKET, SO_ERROR, &soerr, &slen) < 0)
        soerr = errno;
    if (soerr == 0)
        return connected(l, err);
    if (soerr == EINPROGRESS)
        return EDDY_OK;
    return try_next(l, soerr, err);
}

static eddy_status step_tls(eddy__link *l, eddy_error *err) {
    int want = eddy__tls_handshake(l->tls, err);
    if (want < 0)
        return fail(l, err ? err->status : EDDY_ERR_TLS);
    if (want > 0) {
        l->tls_want = (unsigned)want;
        return EDDY_OK;
    }
    l->tls_want = 0;
    return connected(l, err);
}

/* ---- input ------------------------------------------------------------------------------- */

/* The connection ended: the error saved when EOF was read. */
static eddy_status closed(eddy__link *l, eddy_error *err) {
    if (err)
        *err = l->closed_why;
    return fail(l, l->closed_why.status);
}

static eddy_status read_in(eddy__link *l, eddy_error *err) {
    if (l->peer_closed)
        return closed(l, err);
    char buf[READ_CHUNK];
    size_t total = 0;
    l->tls_want = 0;
    while (total < READ_MAX_PER_CALL) {
        ssize_t k;
        if (l->tls) {
            unsigned want = 0;
            k = eddy__tls_read(l->tls, buf, sizeof(buf), &want, err);
            if (k < 0)
                return fail(l, err ? err->status : EDDY_ERR_IO);
            if (k == 0) {
                l->tls_want = want == EDDY__LINK_WRITE ? EDDY__LINK_WRITE : 0;
                break;
            }
        } else {
            k = recv(l->fd, buf, sizeof(buf), 0);
            if (k < 0 && errno == EINTR)
                continue;
            if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                break;
            if (k <= 0) {
                /* What the server said before it closed (an error reply, often) still counts:
                 * the failure comes once the replies read are taken (eddy__link_reply). */
                eddy__fail(&l->closed_why, EDDY_ERR_IO, "connection to %s: %s", l->peer,
                           k < 0 ? strerror(errno) : "closed by the server");
                l->peer_closed = true;
                return EDDY_OK;
            }
        }
        if (!l->reader->buf && !(l->reader->buf = sdsempty()))
            return fail(l, eddy__fail(err, EDDY_ERR_NOMEM, "out of memory reading replies"));
        /* Through the scanner: a bulk over max_event_size is skipped as it arrives. */
        if (eddy__resp_scan_feed(&l->scan, l->reader, buf, (size_t)k, l->s->max_event_size) !=
            EDDY_OK)
            return fail(l, eddy__fail(err, EDDY_ERR_NOMEM, "out of memory reading replies"));
        total += (size_t)k;
        /* A short read drained the socket (poll() says when more comes); TLS reads on until
         * OpenSSL would block, as it may hold decrypted bytes poll() cannot see. */
        if (!l->tls && (size_t)k < sizeof(buf))
            break;
    }
    return EDDY_OK;
}

static void free_reply(eddy__link *l, void *r) {
    if (r && !eddy__reply_arena_of(l->reader))
        freeReplyObject(r);
}

static eddy_status parse(eddy__link *l, redisReply **out, eddy_error *err) {
    void *r = NULL;
    if (redisReaderGetReply(l->reader, &r) != REDIS_OK)
        return fail(l, l->reader->err == REDIS_ERR_OOM
                           ? eddy__fail(err, EDDY_ERR_NOMEM, "out of memory reading replies")
                           : eddy__fail(err, EDDY_ERR_PROTOCOL, "%s does not speak RESP: %s",
                                        l->peer, l->reader->errstr));
    *out = r;
    /* hiredis keeps a buffer grown for a large reply until the next feed; drop it now, so that
     * an oversized entry is not held twice while it is handled (dead-lettered). */
    redisReader *rd = l->reader;
    if (r && rd->buf && rd->len == 0 && sdsalloc(rd->buf) > KEEP_OUT_CAP) {
        sdsfree(rd->buf);
        rd->buf = sdsempty(); /* NULL on OOM: read_in makes one before the next feed */
        rd->pos = 0;
    }
    return EDDY_OK;
}

/* Takes the handshake's replies as they come; READY after the last. */
static eddy_status take_handshake(eddy__link *l, eddy_error *err) {
    while (l->hs_left > 0) {
        redisReply *r = NULL;
        eddy_status st = parse(l, &r, err);
        if (st != EDDY_OK || !r)
            return st;
        bool role = l->hs_left == 1 && l->hs_role_last;
        bool id = l->hs_left == (l->hs_role_last ? 2u : 1u) && l->hs_id_last;
        l->hs_left--;
        if (role) {
            st = eddy__sentinel_check_role(l->sen, r, l->peer, err);
            if (st != EDDY_OK) /* the handle's other connections may be on a replica too */
                eddy__conn_master_doubt(l->s->conn_state);
        } else if (id) { /* refused by an ACL: the id stays unknown; NOAUTH: credentials wanted */
            st = eddy__client_id_check(r, &l->client_id, err);
        } else {
            st = eddy__handshake_check(&r, 1, err);
        }
        free_reply(l, r);
        if (st != EDDY_OK)
            return fail(l, st);
    }
    if (l->phase == EDDY__LINK_HANDSHAKE) {
        l->phase = EDDY__LINK_READY;
        l->deadline = -1;
        if (l->sen)
            eddy__sentinel_ready(l->sen);
        if (l->cl)
            eddy__cluster_ready(l->cl);
    }
    return EDDY_OK;
}

/* True when the command in c[0, n) is the one-word command `name` (MULTI, EXEC, DISCARD). */
static bool is_cmd(const char *c, size_t n, const char *name) {
    char want[32];
    int k = snprintf(want, sizeof(want), "*1\r\n$%zu\r\n%s\r\n", strlen(name), name);
    return k > 0 && (size_t)k == n && memcmp(c, want, n) == 0;
}

/* The next command was answered (cluster only): its bytes are let go, and a MULTI or EXEC
 * among them noted. */
static void note_answered(eddy__link *l) {
    if (!l->cl || l->en == 0)
        return;
    uint64_t end = l->ends[l->ehead];
    l->ehead = (l->ehead + 1) % l->ecap;
    l->en--;
    if (l->ends_exact && end != UINT64_MAX) {
        const char *c = l->out + (l->off - retained(l));
        size_t n = (size_t)(end - l->answered_end);
        if (is_cmd(c, n, "MULTI"))
            l->in_multi = true;
        else if (is_cmd(c, n, "EXEC") || is_cmd(c, n, "DISCARD"))
            l->in_multi = false;
    }
    l->ends_exact = end != UINT64_MAX;
    if (l->ends_exact)
        l->answered_end = end;
}

/* An -ASK for the next command: true when it is being followed (its reply comes from the
 * detour); false when it cannot be (inside a MULTI, whose EXEC the server aborts; bytes not
 * known): the caller fails the link. */
static bool follow_ask(eddy__link *l, const redisReply *ask, eddy_status *st, eddy_error *err) {
    if (!eddy__cluster_is_ask(ask) || l->in_multi || !l->ends_exact || l->en == 0 ||
        l->ends[l->ehead] == UINT64_MAX || l->answered >= l->sent)
        return false;
    size_t len = (size_t)(l->ends[l->ehead] - l->answered_end);
    const char *cmd = l->out + (l->off - retained(l));
    *st = eddy__cluster_ask_start(l->cl, ask, l->peer, cmd, len, l->reader, err);
    return true;
}

eddy_status eddy__link_reply(eddy__link *l, redisReply **reply, eddy_error *err) {
    if (l->mem)
        return eddy__memlink_reply(l->mem, reply, err);
    *reply = NULL;
    if (l->phase == EDDY__LINK_FAILED && l->peer_closed)
        return closed(l, err);
    if (l->phase == EDDY__LINK_FAILED || l->phase == EDDY__LINK_IDLE)
        return eddy__fail(err, EDDY_ERR_IO, "connection to %s is not open", l->peer);
    eddy_status st = follow_master(l, false, err);
    if (st == EDDY_OK)
        st = take_handshake(l, err);
    if (st == EDDY_OK && l->hs_left > 0 && l->peer_closed)
        return closed(l, err);
    if (st != EDDY_OK || l->hs_left > 0)
        return st;
    if (l->ask_reply) { /* what the detour brought back, in the ASK's place */
        *reply = l->ask_reply;
        l->ask_reply = NULL;
        goto answered;
    }
    if (detouring(l))
        return EDDY_OK;
    if ((st = parse(l, reply, err)) != EDDY_OK)
        return st;
    if (!*reply)
        return l->peer_closed ? closed(l, err) : EDDY_OK;
    if (l->cl && follow_ask(l, *reply, &st, err)) {
        free_reply(l, *reply);
        *reply = NULL;
        return st == EDDY_OK ? EDDY_OK : fail(l, st);
    }
    if (l->sen && eddy__sentinel_readonly(*reply)) { /* a failover: the next connect asks */
        free_reply(l, *reply);
        *reply = NULL;
        eddy__conn_master_moved(l->s->conn_state); /* the handle's other connections too */
        return fail(l, eddy__fail(err, EDDY_ERR_IO,
                                  "%s is a replica now (READONLY): the master '%s' moved", l->peer,
                                  l->s->url.name));
    }
    if (l->cl && eddy__cluster_redirect(l->cl, *reply, l->peer, err)) { /* next connect asks */
        free_reply(l, *reply);
        *reply = NULL;
        eddy__log(&l->s->log, EDDY_LOG_DEBUG, "%s", err ? err->detail : "cluster redirect");
        return fail(l, EDDY_ERR_IO);
    }
    if (l->answered == l->sent && l->answered == l->queued && l->pushes)
        return EDDY_OK; /* a message of a subscription: not an answer */
    if (l->answered == l->sent && l->answered == l->queued) {
        free_reply(l, *reply);
        *reply = NULL;
        return fail(l,
                    eddy__fail(err, EDDY_ERR_IO, "%s sent a reply no command asked for", l->peer));
    }
answered:
    note_answered(l);
    l->answered++;
    l->proved = true;
    return EDDY_OK;
}

eddy_status eddy__link_replies(eddy__link *l, redisReply **out, size_t max, size_t *got,
                               eddy_error *err) {
    if (l->mem)
        return eddy__memlink_replies(l->mem, out, max, got, err);
    eddy_status st = EDDY_OK;
    *got = 0;
    while (*got < max && (st = eddy__link_reply(l, &out[*got], err)) == EDDY_OK && out[*got])
        (*got)++;
    return st;
}

/* ---- driving ----------------------------------------------------------------------------- */

eddy_status eddy__link_flush(eddy__link *l, eddy_error *err) {
    if (l->mem)
        return eddy__memlink_flush(l->mem, err);
    if (discovering(l) && l->phase == EDDY__LINK_CONNECTING)
        return EDDY_OK; /* nothing can be written before the master is known */
    eddy_status fst = follow_master(l, true, err); /* nothing more to a master that moved */
    if (fst != EDDY_OK)
        return fst;
    switch (l->phase) {
    case EDDY__LINK_CONNECTING:
        return finish_connect(l, err);
    case EDDY__LINK_TLS:
        return step_tls(l, err);
    case EDDY__LINK_HANDSHAKE:
    case EDDY__LINK_READY:
        return write_out(l, err);
    case EDDY__LINK_FAILED:
        return eddy__fail(err, EDDY_ERR_IO, "connection to %s failed", l->peer);
    default:
        return eddy__fail(err, EDDY_ERR_IO, "connection to %s is not open", l->peer);
    }
}

eddy_status eddy__link_io(eddy__link *l, unsigned ready, eddy_error *err) {
    if (l->mem)
        return eddy__memlink_io(l->mem, ready, err);
    if (detouring(l)) {
        eddy_status st = eddy__cluster_ask_io(l->cl, ready, &l->ask_reply, err);
        return st == EDDY_OK ? EDDY_OK : fail(l, st);
    }
    if (discovering(l) && l->phase == EDDY__LINK_CONNECTING)
        return ask_step(l, ready, err); /* the master's connect, if started, waits to be writable */
    eddy__link_phase before = l->phase;
    eddy_status st = EDDY_OK;
    if (before == EDDY__LINK_CONNECTING || before == EDDY__LINK_TLS) {
        if ((st = eddy__link_flush(l, err)) != EDDY_OK)
            return st;
        if (l->phase == EDDY__LINK_CONNECTING || l->phase == EDDY__LINK_TLS)
            return EDDY_OK;
        ready |= EDDY__LINK_WRITE | EDDY__LINK_READ; /* just connected: try both */
    }
    if (l->phase != EDDY__LINK_HANDSHAKE && l->phase != EDDY__LINK_READY)
        return eddy__link_flush(l, err);
    if ((ready & EDDY__LINK_WRITE) || l->tls_want == EDDY__LINK_WRITE) {
        if (l->tls_want == EDDY__LINK_WRITE) /* a TLS read waited to write */
            ready |= EDDY__LINK_READ;
        if ((st = follow_master(l, true, err)) != EDDY_OK) /* nothing to a master that moved */
            return st;
        if ((st = write_out(l, err)) != EDDY_OK)
            return st;
    }
    if (ready & EDDY__LINK_READ) {
        if ((st = read_in(l, err)) != EDDY_OK)
            return st;
    }
    /* After the read: an announcement the watch holds now was made before the replies just
     * read are handed out, and those of a master that moved are not. */
    if ((st = follow_master(l, true, err)) != EDDY_OK)
        return st;
    return take_handshake(l, err);
}

eddy_status eddy__link_outcome(eddy_status st, const eddy_error *why, uint64_t last, uint64_t sent,
                               eddy_error *out) {
    *out = why ? *why : (eddy_error){.status = st};
    if (st != EDDY_ERR_TIMEOUT || (last > 0 && last <= sent))
        return st;
    return eddy__fail(out, EDDY_ERR_IO, "not sent: %s", why ? why->detail : "");
}

eddy_status eddy__link_expire(eddy__link *l, uint64_t upto, const char *what, eddy_error *err) {
    if (l->mem)
        return eddy__memlink_expire(l->mem, upto, what, err);
    if (l->answered >= upto)
        return EDDY_OK;
    eddy_status st =
        l->sent >= upto
            ? eddy__fail(err, EDDY_ERR_TIMEOUT,
                         "%s: no reply from %s by the deadline (sent, outcome unknown)", what,
                         l->peer)
            : eddy__fail(err, EDDY_ERR_IO, "%s: not sent to %s by the deadline", what, l->peer);
    return fail(l, st);
}
