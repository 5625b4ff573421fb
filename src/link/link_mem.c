/* SPDX-License-Identifier: BSD-3-Clause */
/* The memory:// transport of the link; see link_mem.h.
 *
 * Invariants:
 * - q holds the commands queued and not answered, in order (a ring; the commands borrowed);
 *   answered + qn == queued. Its first nrun already ran (eddy__memlink_flush) and hold their
 *   replies; the others run in order, the first of them only when nothing is parked.
 * - parked: the head is a blocking read that found nothing, linked in the engine's waiters
 *   with efd, until eddy__memlink_io (the engine wrote efd), its BLOCK end (nil_due) or a
 *   close unparks it. park_at: when its BLOCK time ends (-1: never, BLOCK 0), set when it
 *   first parked and kept across wake-ups that found nothing again.
 * - cut (atomic: eddy__memlink_shutdown runs on any thread) is checked before every command
 *   runs, so nothing runs once it is set. */
#include "link/link_mem.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "error.h"
#include "memory/engine.h"
#include "timing.h"
#include "util/reply.h"
#include "util/reply_arena.h"

typedef struct qent {
    const eddy__cmd *cmd;
    redisReply *reply; /* once run ahead of its taking (the first nrun) */
    bool own;          /* reply is malloc'd (no arena was installed when it ran) */
} qent;

struct eddy__memlink {
    eddy__mem_engine *engine;
    eddy__mem_conn *mc; /* while connected */
    redisReader *reader;
    eddy__link_phase phase;
    int efd;
    unsigned socket_id;
    atomic_bool cut;
    qent *q;
    size_t qhead, qn, qcap, nrun;
    uint64_t queued, answered;
    bool parked;
    bool nil_due; /* the head's BLOCK time ended: its reply is nil */
    long long park_at;
    char peer[128];
};

/* The hold is the engine's reference itself. */
struct eddy__backend_hold {
    eddy__mem_engine *engine;
};

bool eddy__link_hold_backend(const eddy__settings *s, eddy__backend_hold **out) {
    *out = NULL;
    if (s->url.kind != EDDY__URL_MEMORY)
        return true;
    eddy__backend_hold *h = malloc(sizeof(*h));
    if (!h || !(h->engine = eddy__mem_engine_acquire(s->url.name))) {
        free(h);
        return false;
    }
    *out = h;
    return true;
}

void eddy__link_release_backend(eddy__backend_hold *h) {
    if (!h)
        return;
    eddy__mem_engine_release(h->engine);
    free(h);
}

eddy__memlink *eddy__memlink_new(const eddy__settings *s, redisReader *reader) {
    eddy__memlink *m = calloc(1, sizeof(*m));
    if (!m)
        return NULL;
    if (!(m->engine = eddy__mem_engine_acquire(s->url.name))) {
        free(m);
        return NULL;
    }
    m->reader = reader;
    m->efd = -1;
    m->park_at = -1;
    snprintf(m->peer, sizeof(m->peer), "memory://%s", s->url.name);
    return m;
}

void eddy__memlink_free(eddy__memlink *m) {
    if (!m)
        return;
    eddy__memlink_close(m);
    eddy__mem_engine_release(m->engine);
    free(m->q);
    free(m);
}

static void end_park(eddy__memlink *m) {
    if (m->parked)
        eddy__mem_conn_unpark(m->mc);
    m->parked = false;
}

void eddy__memlink_close(eddy__memlink *m) {
    if (m->mc) {
        end_park(m);
        eddy__mem_conn_free(m->mc);
        m->mc = NULL;
    }
    if (m->efd >= 0)
        close(m->efd);
    m->efd = -1;
    m->phase = EDDY__LINK_IDLE;
    for (size_t i = 0; i < m->nrun; i++) { /* an arena's go with its reset */
        qent *e = &m->q[(m->qhead + i) & (m->qcap - 1)];
        if (e->own)
            freeReplyObject(e->reply);
    }
    m->answered = m->queued; /* dropped: numbers stay unique */
    m->qhead = m->qn = m->nrun = 0;
    m->nil_due = false;
    m->park_at = -1;
    atomic_store(&m->cut, false);
}

static eddy_status fail(eddy__memlink *m, eddy_status st) {
    end_park(m);
    m->phase = EDDY__LINK_FAILED;
    return st;
}

eddy_status eddy__memlink_connect(eddy__memlink *m, eddy_error *err) {
    eddy__memlink_close(m);
    m->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (m->efd < 0)
        return fail(m, eddy__fail(err, errno == ENOMEM ? EDDY_ERR_NOMEM : EDDY_ERR_IO,
                                  "opening %s: eventfd: %s", m->peer, strerror(errno)));
    m->socket_id = eddy__link_next_socket_id();
    if (!(m->mc = eddy__mem_conn_new(m->engine)))
        return fail(m, eddy__fail(err, EDDY_ERR_NOMEM, "out of memory opening %s", m->peer));
    m->phase = EDDY__LINK_READY;
    return EDDY_OK;
}

eddy__link_phase eddy__memlink_phase(const eddy__memlink *m) { return m->phase; }
int eddy__memlink_fd(const eddy__memlink *m) { return m->efd; }
unsigned eddy__memlink_socket_id(const eddy__memlink *m) { return m->socket_id; }
uint64_t eddy__memlink_queued(const eddy__memlink *m) { return m->queued; }
uint64_t eddy__memlink_answered(const eddy__memlink *m) { return m->answered; }
/* Run, or parked (at the engine, as a read a server holds). */
uint64_t eddy__memlink_sent(const eddy__memlink *m) {
    return m->answered + m->nrun + (m->parked ? 1 : 0);
}
const char *eddy__memlink_peer(const eddy__memlink *m) { return m->peer; }

/* Always READ while connected: the eventfd is readable only once signalled, so watching it
 * costs nothing, and a driver never has to start and stop watching per blocked read. */
unsigned eddy__memlink_wants(const eddy__memlink *m) {
    return m->phase == EDDY__LINK_READY ? EDDY__LINK_READ : 0;
}

long long eddy__memlink_deadline(const eddy__memlink *m) { return m->parked ? m->park_at : -1; }

void eddy__memlink_tick(eddy__memlink *m, long long now_ms) {
    if (m->parked && m->park_at >= 0 && now_ms >= m->park_at) {
        end_park(m);
        m->nil_due = true;
    }
}

bool eddy__memlink_ready(const eddy__memlink *m) {
    return m->phase == EDDY__LINK_READY && (m->nrun > 0 || (m->qn > 0 && !m->parked));
}

static eddy_status closed(eddy__memlink *m, eddy_error *err) {
    if (m->phase == EDDY__LINK_FAILED)
        return eddy__fail(err, EDDY_ERR_IO, "connection to %s failed", m->peer);
    return eddy__fail(err, EDDY_ERR_IO, "connection to %s is not open", m->peer);
}

static eddy_status shut(eddy__memlink *m, eddy_error *err) {
    return fail(m, eddy__fail(err, EDDY_ERR_IO, "connection to %s: shut down", m->peer));
}

eddy_status eddy__memlink_io(eddy__memlink *m, unsigned ready, eddy_error *err) {
    if (m->phase != EDDY__LINK_READY)
        return closed(m, err);
    if (ready & EDDY__LINK_READ) {
        uint64_t n;
        ssize_t k = read(m->efd, &n, sizeof(n)); /* resets it; EAGAIN: nothing came */
        (void)k;
    }
    if (atomic_load_explicit(&m->cut, memory_order_acquire))
        return shut(m, err);
    end_park(m); /* signalled (or asked to look again): the next reply runs the read again */
    return EDDY_OK;
}

eddy_status eddy__memlink_send(eddy__memlink *m, const eddy__cmdlist *cmds, uint64_t *last,
                               eddy_error *err) {
    if (m->phase != EDDY__LINK_READY)
        return closed(m, err);
    if (m->qn + cmds->n > m->qcap) {
        size_t cap = m->qcap ? m->qcap : 16;
        while (cap < m->qn + cmds->n)
            cap *= 2;
        qent *q = malloc(cap * sizeof(*q));
        if (!q)
            return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory queueing commands");
        for (size_t i = 0; i < m->qn; i++)
            q[i] = m->q[(m->qhead + i) & (m->qcap - 1)];
        free(m->q);
        m->q = q;
        m->qcap = cap;
        m->qhead = 0;
    }
    for (size_t i = 0; i < cmds->n; i++)
        m->q[(m->qhead + m->qn++) & (m->qcap - 1)] = (qent){.cmd = &cmds->cmds[i]};
    m->queued += cmds->n;
    if (last)
        *last = m->queued;
    return EDDY_OK;
}

static void answered(eddy__memlink *m) {
    m->qhead = (m->qhead + 1) & (m->qcap - 1);
    m->qn--;
    m->answered++;
}

/* What a blocking read that waited its BLOCK time answers. */
static redisReply *nil_reply(eddy__reply_arena *arena) {
    if (!arena)
        return eddy__reply_nil();
    redisReply *r = eddy__reply_arena_alloc(arena, sizeof(*r));
    if (r)
        *r = (redisReply){.type = REDIS_REPLY_NIL};
    return r;
}

/* Runs the first command not run yet (none may be parked), its reply built in arena (the
 * reader's, or NULL): EDDY_OK with *out its reply, or with *out NULL when it parked. */
static inline eddy_status run_next(eddy__memlink *m, eddy__reply_arena *arena, redisReply **out,
                                   eddy_error *err) {
    *out = NULL;
    if (atomic_load_explicit(&m->cut, memory_order_acquire))
        return shut(m, err);
    if (m->nil_due) {
        m->nil_due = false;
        m->park_at = -1;
        if (!(*out = nil_reply(arena)))
            return fail(m, eddy__fail(err, EDDY_ERR_NOMEM, "out of memory"));
        return EDDY_OK;
    }
    const eddy__cmd *cmd = m->q[(m->qhead + m->nrun) & (m->qcap - 1)].cmd;
    for (;;) {
        long long block = -1;
        *out = eddy__mem_exec(m->mc, cmd->argc, eddy__cmd_argv(cmd), cmd->argvlen, &block);
        if (*out) {
            m->park_at = -1;
            return EDDY_OK;
        }
        if (block < 0)
            return fail(m, eddy__fail(err, EDDY_ERR_NOMEM, "%s: out of memory", m->peer));
        if (m->park_at < 0 && block > 0)
            m->park_at = eddy__mono_ms() + block;
        if (eddy__mem_conn_park(m->mc, m->efd)) {
            m->parked = true;
            return EDDY_OK;
        }
        /* a write that may serve it came meanwhile: run it again at once */
    }
}

/* Runs what is queued (the ring's size is a power of two), up to a blocking read that parks,
 * keeping the replies for eddy__memlink_reply: as a socket's queued bytes reach the server. */
eddy_status eddy__memlink_flush(eddy__memlink *m, eddy_error *err) {
    if (m->phase != EDDY__LINK_READY)
        return closed(m, err);
    eddy__reply_arena *arena = eddy__reply_arena_of(m->reader);
    eddy__mem_conn_set_arena(m->mc, arena);
    while (m->nrun < m->qn && !m->parked) {
        redisReply *r;
        eddy_status st = run_next(m, arena, &r, err);
        if (st != EDDY_OK || !r)
            return st;
        qent *e = &m->q[(m->qhead + m->nrun++) & (m->qcap - 1)];
        e->reply = r;
        e->own = !arena;
    }
    return EDDY_OK;
}

eddy_status eddy__memlink_reply(eddy__memlink *m, redisReply **reply, eddy_error *err) {
    *reply = NULL;
    if (m->phase != EDDY__LINK_READY)
        return closed(m, err);
    if (m->nrun > 0) {
        *reply = m->q[m->qhead].reply;
        m->nrun--;
        answered(m);
        return EDDY_OK;
    }
    if (m->qn == 0 || m->parked)
        return EDDY_OK;
    eddy__reply_arena *arena = eddy__reply_arena_of(m->reader);
    eddy__mem_conn_set_arena(m->mc, arena);
    eddy_status st = run_next(m, arena, reply, err);
    if (st == EDDY_OK && *reply)
        answered(m);
    return st;
}

eddy_status eddy__memlink_replies(eddy__memlink *m, redisReply **out, size_t max, size_t *got,
                                  eddy_error *err) {
    size_t n = 0;
    if (m->phase == EDDY__LINK_READY) { /* what flush ran, in one go */
        size_t k = m->nrun < max ? m->nrun : max, mask = m->qcap - 1, head = m->qhead;
        for (; n < k; n++)
            out[n] = m->q[(head + n) & mask].reply;
        m->qhead = (head + n) & mask;
        m->qn -= n;
        m->nrun -= n;
        m->answered += n;
    }
    eddy_status st = EDDY_OK;
    while (n < max && (st = eddy__memlink_reply(m, &out[n], err)) == EDDY_OK && out[n])
        n++;
    *got = n;
    return st;
}

eddy_status eddy__memlink_expire(eddy__memlink *m, uint64_t upto, const char *what,
                                 eddy_error *err) {
    if (m->answered >= upto)
        return EDDY_OK;
    eddy_status st =
        eddy__memlink_sent(m) >= upto
            ? eddy__fail(err, EDDY_ERR_TIMEOUT,
                         "%s: no reply from %s by the deadline (sent, outcome unknown)", what,
                         m->peer)
            : eddy__fail(err, EDDY_ERR_IO, "%s: not run by %s by the deadline", what, m->peer);
    return fail(m, st);
}

void eddy__memlink_shutdown(eddy__memlink *m) {
    atomic_store_explicit(&m->cut, true, memory_order_release);
    uint64_t one = 1;
    if (m->efd >= 0) {
        ssize_t k = write(m->efd, &one, sizeof(one));
        (void)k;
    }
}
