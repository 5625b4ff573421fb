/* The multiplexed publishing connection; see mux.h.
 *
 * Rules:
 * - A slot is pushed and its bytes are appended to `out` under `lock`, together, so the FIFO's
 *   order is the wire's order. The holder of the writer's role (`writing`) swaps `out` for
 *   `wbuf` under `lock` and writes it without, so callers keep queueing and the reader keeps
 *   handing out replies while it writes.
 * - Only the holder of the reader's role (`reading`) reads the socket and uses `reader`; it
 *   parses without `lock` and takes `lock` to hand what it parsed to the FIFO.
 * - The socket is freed or replaced only under connect_lock, while broken (or not up) and
 *   neither role is held: nobody else can be using it then. A writer that fails shuts the
 *   socket down so that a reader in recv() wakes and leaves.
 * - Whoever leaves the reader's role with slots still waiting wakes the oldest slot's caller,
 *   which takes the role (or, if that caller is still writing, takes it when it comes to
 *   wait). */
#include "mux.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "error.h"
#include "redis.h"
#include "timing.h"

#define READ_CHUNK 16384
#define PARSED_MAX 64 /* replies parsed before taking the lock to hand them out */

/* One caller of bmux_exec, waiting for its slot on a mutex of its own, so that handing out
 * replies does not make every woken caller queue up on the mux's lock. */
typedef struct mwait {
    eddy__pipe_slot slot;
    bool popped; /* out of the FIFO (guarded by the mux's lock): its completer is decided */
    eddy_error err;
    pthread_mutex_t m; /* guards done and offered */
    pthread_cond_t cond;
    bool done;            /* its replies are in, or it failed: the caller may return */
    bool offered;         /* it is next and nobody reads: take the reader's role */
    struct mwait *next_c; /* on a list of callers to complete */
} mwait;

eddy_status bmux_init(bmux *m, const eddy__settings *s) {
    memset(m, 0, sizeof(*m));
    pthread_mutex_init(&m->connect_lock, NULL);
    pthread_mutex_init(&m->lock, NULL);
    pthread_cond_init(&m->idle, NULL);
    eddy__pipeline_init(&m->fifo);
    return bconn_init(&m->conn, s);
}

void bmux_destroy(bmux *m) {
    bconn_destroy(&m->conn);
    if (m->reader)
        redisReaderFree(m->reader);
    m->reader = NULL;
    pthread_cond_destroy(&m->idle);
    pthread_mutex_destroy(&m->lock);
    pthread_mutex_destroy(&m->connect_lock);
    free(m->out.p);
    free(m->wbuf.p);
}

/* w left the FIFO: queued on *out, to be completed (complete_all) once the mux's lock is
 * released. Caller holds lock. */
static void popped(mwait *w, mwait **out) {
    w->popped = true;
    w->next_c = *out;
    *out = w;
}

static void wake(mwait *w, bool done) {
    pthread_mutex_lock(&w->m);
    if (done)
        w->done = true;
    else
        w->offered = true;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->m); /* w may be gone from here on when done */
}

/* Caller holds no lock of the mux. */
static void complete_all(mwait *list) {
    while (list) {
        mwait *next = list->next_c;
        wake(list, true);
        list = next;
    }
}

/* The connection is lost: every slot fails with why (caller holds lock). */
static void fail_all(bmux *m, const eddy_error *why, mwait **out) {
    if (!m->broken) {
        m->broken = true;
        m->lost = *why;
    }
    eddy__pipe_slot *s;
    while ((s = eddy__pipeline_fail_next(&m->fifo, m->lost.status))) {
        mwait *w = s->waiter;
        w->err = m->lost;
        popped(w, out);
    }
}

/* A usable connection, replacing a broken one. Caller holds no lock. */
static eddy_status ensure_connected(bmux *m, eddy_error *err) {
    pthread_mutex_lock(&m->lock);
    bool ok = m->up && !m->broken;
    pthread_mutex_unlock(&m->lock);
    if (ok)
        return EDDY_OK;
    pthread_mutex_lock(&m->connect_lock);
    pthread_mutex_lock(&m->lock);
    while (m->broken && (m->reading || m->writing))
        pthread_cond_wait(&m->idle, &m->lock);
    bool broken = m->broken;
    ok = m->up && !m->broken;
    pthread_mutex_unlock(&m->lock);
    eddy_status st = EDDY_OK;
    if (!ok) { /* nobody uses the socket: no slot is in flight, no role is held */
        if (broken) {
            bconn_close(&m->conn);
            if (m->reader)
                redisReaderFree(m->reader);
            m->reader = NULL;
        }
        st = bconn_connect(&m->conn, err);
        if (st == EDDY_OK && !(m->reader = redisReaderCreate())) {
            bconn_close(&m->conn);
            st = eddy__fail(err, EDDY_ERR_NOMEM, "out of memory connecting");
        }
        if (st == EDDY_OK) {
            long long ms = eddy__reply_timeout_ms(m->conn.s, -1);
            struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)((ms % 1000) * 1000)};
            redisSetTimeout(m->conn.rc, tv);
        }
        pthread_mutex_lock(&m->lock);
        m->broken = false;
        m->up = st == EDDY_OK;
        pthread_mutex_unlock(&m->lock);
    }
    pthread_mutex_unlock(&m->connect_lock);
    return st;
}

eddy_status bmux_connect(bmux *m, eddy_error *err) {
    if (m->conn.engine) {
        pthread_mutex_lock(&m->connect_lock);
        eddy_status st = bconn_connect(&m->conn, err);
        pthread_mutex_unlock(&m->connect_lock);
        return st;
    }
    return ensure_connected(m, err);
}

static bool buf_append(bmux_buf *b, const char *p, size_t n) {
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 4096;
        while (cap < b->len + n)
            cap *= 2;
        char *np = realloc(b->p, cap);
        if (!np)
            return false;
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->len, p, n);
    b->len += n;
    return true;
}

/* The wire form of cmds in one buffer (eddy__cmd_resp_write: RESP as hiredis writes it). */
static char *format(const eddy__cmdlist *cmds, size_t *len) {
    size_t n = 0;
    for (size_t i = 0; i < cmds->n; i++)
        n += eddy__cmd_resp_size(&cmds->cmds[i]);
    char *buf = malloc(n ? n : 1);
    if (!buf)
        return NULL;
    char *at = buf;
    for (size_t i = 0; i < cmds->n; i++)
        at = eddy__cmd_resp_write(&cmds->cmds[i], at);
    *len = n;
    return buf;
}

/* In the writer's role. */
static eddy_status write_all(bmux *m, const char *buf, size_t len, eddy_error *err) {
    int fd = m->conn.rc->fd;
    while (len > 0) {
        ssize_t k = send(fd, buf, len, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return eddy__fail(err, EDDY_ERR_IO, "connection: %s",
                              k < 0 ? strerror(errno) : "closed");
        buf += k;
        len -= (size_t)k;
    }
    return EDDY_OK;
}

/* Parses up to max replies the reader already holds, reading the socket once when it holds
 * none. Returns how many, or -1 with err set when the connection is lost. Reader's role. */
static int parse_some(bmux *m, redisReply **out, int max, eddy_error *err) {
    int n = 0;
    for (;;) {
        while (n < max) {
            void *r = NULL;
            if (redisReaderGetReply(m->reader, &r) != REDIS_OK) {
                eddy__fail(err, EDDY_ERR_IO, "connection: protocol error: %s", m->reader->errstr);
                return -1;
            }
            if (!r)
                break;
            out[n++] = r;
        }
        if (n > 0)
            return n;
        char buf[READ_CHUNK];
        ssize_t k = recv(m->conn.rc->fd, buf, sizeof(buf), 0);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            eddy__fail(err, EDDY_ERR_IO, "connection: %s",
                       k < 0 ? strerror(errno) : "closed by the server");
            return -1;
        }
        if (redisReaderFeed(m->reader, buf, (size_t)k) != REDIS_OK) {
            eddy__fail(err, EDDY_ERR_IO, "connection: %s", m->reader->errstr);
            return -1;
        }
    }
}

/* Reads and hands out replies until w's are in or the connection is lost. Called and returns
 * with lock held, in the reader's role. */
static void read_for(bmux *m, mwait *w) {
    while (!w->popped && !m->broken) {
        pthread_mutex_unlock(&m->lock);
        redisReply *parsed[PARSED_MAX];
        eddy_error why;
        int n = parse_some(m, parsed, PARSED_MAX, &why);
        pthread_mutex_lock(&m->lock);
        mwait *done = NULL;
        for (int i = 0; i < n; i++) {
            bool unexpected;
            eddy__pipe_slot *s = eddy__pipeline_feed(&m->fifo, parsed[i], &unexpected);
            if (s)
                popped(s->waiter, &done);
            if (unexpected) {
                eddy__fail(&why, EDDY_ERR_IO, "connection: a reply that no command asked for");
                while (++i < n)
                    freeReplyObject(parsed[i]);
                n = -1;
            }
        }
        if (n < 0)
            fail_all(m, &why, &done);
        if (done) {
            pthread_mutex_unlock(&m->lock);
            complete_all(done);
            pthread_mutex_lock(&m->lock);
        }
    }
}

/* Takes the reader's role if nobody holds it and reads until w's replies are in, then passes
 * the role on: to the oldest slot's caller, or, on a lost connection, to whoever waits to
 * reconnect. Caller holds lock. */
static void take_role(bmux *m, mwait *w) {
    if (m->reading || m->broken || w->popped)
        return;
    m->reading = true;
    read_for(m, w);
    m->reading = false;
    eddy__pipe_slot *next = eddy__pipeline_head(&m->fifo);
    if (m->broken)
        pthread_cond_broadcast(&m->idle);
    else if (next) /* in the FIFO: its caller is waiting, so it is alive */
        wake(next->waiter, false);
}

/* In the writer's role, lock held: writes what is queued until nothing is, then leaves the
 * role. A failed write fails every slot (their callers are queued on *done). */
static void write_queued(bmux *m, mwait **done) {
    while (m->out.len > 0 && !m->broken) {
        bmux_buf b = m->wbuf;
        m->wbuf = m->out;
        m->out = b;
        m->out.len = 0;
        pthread_mutex_unlock(&m->lock);
        eddy_error why;
        eddy_status st = write_all(m, m->wbuf.p, m->wbuf.len, &why);
        pthread_mutex_lock(&m->lock);
        m->wbuf.len = 0;
        if (st != EDDY_OK) {
            fail_all(m, &why, done);             /* what was written may end in half a command */
            shutdown(m->conn.rc->fd, SHUT_RDWR); /* a reader in recv() leaves */
        }
    }
    if (m->broken)
        m->out.len = 0; /* their slots failed with the connection */
    m->writing = false;
    if (m->broken)
        pthread_cond_broadcast(&m->idle);
}

/* Queues cmds (wire form in buf) with w's slot, and writes unless someone does. EDDY_OK: w is
 * in the FIFO, or already failed with the connection. Caller holds no lock. */
static eddy_status queue_cmds(bmux *m, const char *buf, size_t len, size_t n, redisReply **replies,
                              mwait *w, eddy_error *err) {
    eddy_status st = EDDY_OK;
    for (int attempt = 0;; attempt++) {
        if ((st = ensure_connected(m, err)) != EDDY_OK)
            return st;
        pthread_mutex_lock(&m->lock);
        if (m->up && !m->broken)
            break;
        eddy_error lost = m->lost;
        pthread_mutex_unlock(&m->lock); /* lost meanwhile: connect again, once */
        if (attempt == 1)
            return eddy__fail(err, EDDY_ERR_IO, "%s", lost.detail);
    }
    if (!buf_append(&m->out, buf, len)) {
        pthread_mutex_unlock(&m->lock);
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    }
    eddy__pipeline_push(&m->fifo, &w->slot, replies, n, w);
    mwait *done = NULL;
    if (!m->writing) {
        m->writing = true;
        write_queued(m, &done);
    }
    pthread_mutex_unlock(&m->lock);
    complete_all(done); /* w among them, when a write failed */
    return EDDY_OK;
}

eddy_status bmux_exec(bmux *m, const eddy__cmdlist *cmds, redisReply **replies, eddy_error *err) {
    for (size_t i = 0; i < cmds->n; i++)
        replies[i] = NULL;
    if (m->conn.engine) { /* memory://: the engine answers at once */
        pthread_mutex_lock(&m->connect_lock);
        eddy_status st = bconn_exec(&m->conn, cmds, -1, replies, err);
        pthread_mutex_unlock(&m->connect_lock);
        return st;
    }
    if (cmds->n == 0)
        return bmux_connect(m, err);
    size_t len = 0;
    char *buf = format(cmds, &len);
    if (!buf)
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    mwait w = {.popped = false};
    pthread_mutex_init(&w.m, NULL);
    pthread_cond_init(&w.cond, NULL);
    eddy_status st = queue_cmds(m, buf, len, cmds->n, replies, &w, err);
    free(buf);
    if (st == EDDY_OK) {
        pthread_mutex_lock(&m->lock);
        take_role(m, &w); /* nobody reads: read now, without going to sleep first */
        pthread_mutex_unlock(&m->lock);
        pthread_mutex_lock(&w.m);
        while (!w.done) {
            if (w.offered) {
                w.offered = false;
                pthread_mutex_unlock(&w.m);
                pthread_mutex_lock(&m->lock);
                take_role(m, &w);
                pthread_mutex_unlock(&m->lock);
                pthread_mutex_lock(&w.m);
                continue;
            }
            pthread_cond_wait(&w.cond, &w.m);
        }
        pthread_mutex_unlock(&w.m);
        st = w.slot.st;
        if (st != EDDY_OK && err)
            *err = w.err;
    }
    pthread_cond_destroy(&w.cond);
    pthread_mutex_destroy(&w.m);
    return st;
}
