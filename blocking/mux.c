/* The multiplexed publishing connection; see mux.h.
 *
 * Rules:
 * - A slot is pushed and its commands are queued in the link under `lock`, together, so the
 *   FIFO's order is the wire's order. Every call into the link is made under `io` (short,
 *   non-blocking calls: TLS allows one thread in a session at a time); nobody waits in poll()
 *   holding a lock. The holder of the writer's role (`writing`) flushes the link until nothing
 *   is left unwritten (checked under `lock`, so bytes queued meanwhile are not stranded).
 * - Only the holder of the reader's role (`reading`) takes replies from the link; it parses
 *   without `lock` and takes `lock` to hand what it parsed to the FIFO.
 * - Deadlines: the writer and the reader wait in poll() until their own caller's deadline; any
 *   caller whose deadline passes gives the connection up (expire: every slot fails, timed out
 *   when its commands were all written, EDDY_ERR_IO when not) and shuts the socket down so that
 *   whoever waits in poll() wakes.
 * - The socket is freed or replaced only under connect_lock, while broken (or not up) and
 *   neither role is held: nobody else can be using it then. A writer that fails shuts the
 *   socket down so that a reader in poll() wakes and leaves.
 * - Whoever leaves the reader's role with slots still waiting wakes the oldest slot's caller,
 *   which takes the role (or, if that caller is still writing, takes it when it comes to
 *   wait). */
#include "mux.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conn_state.h"
#include "error.h"
#include "timing.h"

#define PARSED_MAX 64 /* replies parsed before taking the lock to hand them out */

/* One caller of eddy__bmux_exec, waiting for its slot on a mutex of its own, so that handing out
 * replies does not make every woken caller queue up on the mux's lock. */
typedef struct mwait {
    eddy__pipe_slot slot;
    uint64_t last;      /* the link's number of its last command */
    long long deadline; /* monotonic ms */
    bool popped;        /* out of the FIFO (guarded by the mux's lock): its completer is decided */
    eddy_error err;
    pthread_mutex_t m; /* guards done and offered */
    pthread_cond_t cond;
    bool done;            /* its replies are in, or it failed: the caller may return */
    bool offered;         /* it is next and nobody reads: take the reader's role */
    struct mwait *next_c; /* on a list of callers to complete */
} mwait;

eddy_status eddy__bmux_init(bmux *m, const eddy__settings *s) {
    memset(m, 0, sizeof(*m));
    pthread_mutex_init(&m->connect_lock, NULL);
    pthread_mutex_init(&m->lock, NULL);
    pthread_cond_init(&m->idle, NULL);
    pthread_mutex_init(&m->io, NULL);
    eddy__pipeline_init(&m->fifo);
    return eddy__bconn_init(&m->conn, s);
}

void eddy__bmux_destroy(bmux *m) {
    eddy__bconn_destroy(&m->conn);
    pthread_cond_destroy(&m->idle);
    pthread_mutex_destroy(&m->io);
    pthread_mutex_destroy(&m->lock);
    pthread_mutex_destroy(&m->connect_lock);
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

/* The connection is lost: every slot fails with why (caller holds lock). When a deadline
 * broke it (by_deadline), a slot whose commands were all written fails with EDDY_ERR_TIMEOUT
 * instead (sent, outcome unknown). */
static void fail_slots(bmux *m, const eddy_error *why, bool by_deadline, mwait **out) {
    if (!m->broken) {
        m->broken = true;
        m->lost = *why;
    }
    pthread_mutex_lock(&m->io);
    uint64_t sent = eddy__link_sent(m->conn.link);
    pthread_mutex_unlock(&m->io);
    eddy__pipe_slot *s;
    while ((s = eddy__pipeline_fail_next(&m->fifo, m->lost.status))) {
        mwait *w = s->waiter;
        w->err = m->lost;
        if (by_deadline && w->last <= sent && m->lost.status == EDDY_ERR_IO) {
            s->st = EDDY_ERR_TIMEOUT;
            eddy__fail(&w->err, EDDY_ERR_TIMEOUT,
                       "no reply by the deadline (sent, outcome unknown): %s", m->lost.detail);
        }
        popped(w, out);
    }
}

static void fail_all(bmux *m, const eddy_error *why, mwait **out) {
    fail_slots(m, why, false, out);
}

/* w's deadline passed before its replies came: the connection is given up (its replies are no
 * longer accounted for), and whoever waits in poll() on it wakes. Caller holds lock. */
static void expire(bmux *m, mwait *w, mwait **out) {
    if (w->popped || m->broken)
        return;
    eddy_error why;
    eddy__fail(&why, EDDY_ERR_IO, "connection: not sent by the deadline (%u ms)",
               m->conn.s->command_timeout_ms);
    fail_slots(m, &why, true, out);
    eddy__link_shutdown(m->conn.link);
}

/* Takes connect_lock by until (monotonic ms; -1 none): another caller may be connecting to a
 * server that does not answer, up to its own deadline. */
static eddy_status lock_connect(bmux *m, long long until, eddy_error *err) {
    if (until < 0) {
        pthread_mutex_lock(&m->connect_lock);
        return EDDY_OK;
    }
    /* pthread_mutex_timedlock takes CLOCK_REALTIME: the monotonic deadline as a wait from now. */
    long long left = until - eddy__bconn_now_ms();
    struct timespec at;
    clock_gettime(CLOCK_REALTIME, &at);
    if (left > 0) {
        at.tv_sec += (time_t)(left / 1000);
        at.tv_nsec += (long)(left % 1000) * 1000000;
        if (at.tv_nsec >= 1000000000) {
            at.tv_sec++;
            at.tv_nsec -= 1000000000;
        }
    }
    if (pthread_mutex_timedlock(&m->connect_lock, &at) == 0)
        return EDDY_OK;
    return eddy__fail(err, EDDY_ERR_IO, "connecting: not connected by the deadline");
}

/* A usable connection, replacing a broken one, by until (-1: the connect's own timeout only).
 * Caller holds no lock. */
static eddy_status ensure_connected(bmux *m, long long until, eddy_error *err) {
    pthread_mutex_lock(&m->lock);
    bool ok = m->up && !m->broken;
    pthread_mutex_unlock(&m->lock);
    if (ok)
        return EDDY_OK;
    eddy_status st = lock_connect(m, until, err);
    if (st != EDDY_OK)
        return st;
    pthread_mutex_lock(&m->lock);
    while (m->broken && (m->reading || m->writing))
        pthread_cond_wait(&m->idle, &m->lock);
    bool broken = m->broken;
    eddy_error lost = m->lost;
    ok = m->up && !m->broken;
    pthread_mutex_unlock(&m->lock);
    if (!ok) { /* nobody uses the socket: no slot is in flight, no role is held */
        if (broken) {
            eddy__conn_lost(m->conn.s->conn_state, &m->conn.state_epoch, lost.status, &lost);
            eddy__bconn_close(&m->conn);
        }
        st = eddy__bconn_connect_until(&m->conn, until, err);
        pthread_mutex_lock(&m->lock);
        m->broken = false;
        m->up = st == EDDY_OK;
        pthread_mutex_unlock(&m->lock);
    }
    pthread_mutex_unlock(&m->connect_lock);
    return st;
}

eddy_status eddy__bmux_connect(bmux *m, eddy_error *err) {
    if (m->conn.engine) {
        pthread_mutex_lock(&m->connect_lock);
        eddy_status st = eddy__bconn_connect(&m->conn, err);
        pthread_mutex_unlock(&m->connect_lock);
        return st;
    }
    return ensure_connected(m, -1, err);
}

/* Waits in poll() for fd (the link's socket) to be ready for `events`, until deadline. false
 * when the deadline passed. Caller holds no lock (the socket cannot change while a role is
 * held). */
static bool wait_fd(int fd, short events, long long deadline) {
    long long left = deadline - eddy__bconn_now_ms();
    if (left <= 0)
        return false;
    struct pollfd p = {.fd = fd, .events = events};
    poll(&p, 1, left > INT_MAX ? INT_MAX : (int)left);
    return true;
}

/* Parses up to max replies the link already holds, waiting for the socket (until w's deadline)
 * and reading when it holds none. Returns how many, 0 when w's deadline passed; *lost (with err)
 * when the connection was lost, after the replies that came before (returned). Reader's role,
 * no lock. */
static int parse_some(bmux *m, mwait *w, redisReply **out, int max, bool *lost, eddy_error *err) {
    eddy__link *l = m->conn.link;
    /* First what is parsed already; then wait for the socket and read: a reply just asked for
     * is rarely there yet, so poll() comes before recv() (no recv() that would block). */
    for (bool readable = false;; readable = true) {
        int n = 0;
        pthread_mutex_lock(&m->io);
        eddy_status st = readable ? eddy__link_io(l, EDDY__LINK_READ, err) : EDDY_OK;
        while (n < max) {
            redisReply *r = NULL;
            eddy_status got = eddy__link_reply(l, &r, err);
            if (got != EDDY_OK && st == EDDY_OK)
                st = got;
            if (got != EDDY_OK || !r)
                break;
            out[n++] = r;
        }
        pthread_mutex_unlock(&m->io);
        *lost = st != EDDY_OK;
        if (n > 0 || *lost) /* what came before a failure is handed out all the same */
            return n;
        unsigned wants = eddy__link_read_wants(l); /* READ, or an ASK's detour's (cluster.h) */
        short events = (short)(((wants & EDDY__LINK_READ) ? POLLIN : 0) |
                               ((wants & EDDY__LINK_WRITE) ? POLLOUT : 0));
        if (!wait_fd(eddy__link_fd(l), events ? events : POLLIN, w->deadline))
            return 0;
    }
}

/* Reads and hands out replies until w's are in or the connection is lost. Called and returns
 * with lock held, in the reader's role. */
static void read_for(bmux *m, mwait *w) {
    while (!w->popped && !m->broken) {
        pthread_mutex_unlock(&m->lock);
        redisReply *parsed[PARSED_MAX];
        eddy_error why;
        bool lost = false;
        int n = parse_some(m, w, parsed, PARSED_MAX, &lost, &why);
        pthread_mutex_lock(&m->lock);
        mwait *done = NULL;
        if (n == 0 && !lost)
            expire(m, w, &done);
        for (int i = 0; i < n; i++) {
            bool unexpected;
            eddy__pipe_slot *s = eddy__pipeline_feed(&m->fifo, parsed[i], &unexpected);
            if (s)
                popped(s->waiter, &done);
            if (unexpected) {
                eddy__fail(&why, EDDY_ERR_IO, "connection: a reply that no command asked for");
                while (++i < n)
                    freeReplyObject(parsed[i]);
                lost = true;
                break;
            }
        }
        if (lost)
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

/* In the writer's role, lock held: writes what is queued (its own and what others queue
 * meanwhile) until nothing is, waiting for the socket until w's deadline, then leaves the
 * role. A failed write fails every slot (their callers are queued on *done). */
static void write_queued(bmux *m, mwait *w, mwait **done) {
    eddy__link *l = m->conn.link;
    while (!m->broken) {
        pthread_mutex_lock(&m->io);
        eddy_error why;
        eddy_status st = eddy__link_flush(l, &why);
        bool pending = eddy__link_sent(l) < eddy__link_queued(l);
        pthread_mutex_unlock(&m->io);
        if (st != EDDY_OK) {
            fail_all(m, &why, done); /* what was written may end in half a command */
            eddy__link_shutdown(l);  /* a reader in poll() leaves */
            break;
        }
        if (!pending) /* checked under lock: nobody queued behind it unwritten */
            break;
        /* Bytes are unwritten, so their slot is in the FIFO: wait until the writer's own
         * deadline while its slot is there, else the oldest slot's (its waiter is alive while
         * in the FIFO, and lock is held here). */
        eddy__pipe_slot *head = eddy__pipeline_head(&m->fifo);
        long long until = !w->popped || !head ? w->deadline : ((mwait *)head->waiter)->deadline;
        pthread_mutex_unlock(&m->lock);
        bool in_time = wait_fd(eddy__link_write_fd(l), POLLOUT, until);
        pthread_mutex_lock(&m->lock);
        head = eddy__pipeline_head(&m->fifo);
        if (!in_time && !w->popped)
            expire(m, w, done);
        else if (!in_time && head && ((mwait *)head->waiter)->deadline <= eddy__bconn_now_ms())
            expire(m, head->waiter, done);
    }
    m->writing = false;
    if (m->broken)
        pthread_cond_broadcast(&m->idle);
}

/* Queues cmds with w's slot, and writes unless someone does. EDDY_OK: w is in the FIFO, or
 * already failed with the connection. Caller holds no lock. */
static eddy_status queue_cmds(bmux *m, const eddy__cmdlist *cmds, redisReply **replies, mwait *w,
                              eddy_error *err) {
    eddy_status st = EDDY_OK;
    for (int attempt = 0;; attempt++) {
        if ((st = ensure_connected(m, w->deadline, err)) != EDDY_OK)
            return st;
        pthread_mutex_lock(&m->lock);
        if (m->up && !m->broken)
            break;
        eddy_error lost = m->lost;
        pthread_mutex_unlock(&m->lock); /* lost meanwhile: connect again, once */
        if (attempt == 1)
            return eddy__fail(err, EDDY_ERR_IO, "%s", lost.detail);
    }
    eddy_error why;
    pthread_mutex_lock(&m->io);
    st = eddy__link_send(m->conn.link, cmds, &w->last, &why);
    pthread_mutex_unlock(&m->io);
    if (st != EDDY_OK) { /* nothing queued: out of memory, or the link failed unnoticed */
        mwait *done = NULL;
        if (st != EDDY_ERR_NOMEM)
            fail_all(m, &why, &done); /* the slots in flight fail with it; next call reconnects */
        pthread_mutex_unlock(&m->lock);
        complete_all(done);
        if (err)
            *err = why;
        return st;
    }
    eddy__pipeline_push(&m->fifo, &w->slot, replies, cmds->n, w);
    mwait *done = NULL;
    if (!m->writing) {
        m->writing = true;
        write_queued(m, w, &done);
    }
    pthread_mutex_unlock(&m->lock);
    complete_all(done); /* w among them, when a write failed */
    return EDDY_OK;
}

eddy_status eddy__bmux_exec_until(bmux *m, const eddy__cmdlist *cmds, long long deadline,
                                  redisReply **replies, eddy_error *err) {
    for (size_t i = 0; i < cmds->n; i++)
        replies[i] = NULL;
    if (m->conn.engine) { /* memory://: the engine answers at once */
        pthread_mutex_lock(&m->connect_lock);
        eddy_status st = eddy__bconn_exec(&m->conn, cmds, -1, replies, err);
        pthread_mutex_unlock(&m->connect_lock);
        return st;
    }
    if (cmds->n == 0)
        return ensure_connected(m, deadline, err);
    mwait w = {.popped = false, .deadline = deadline};
    pthread_mutex_init(&w.m, NULL);
    eddy__bcond_init_monotonic(&w.cond);
    eddy_status st = queue_cmds(m, cmds, replies, &w, err);
    if (st == EDDY_OK) {
        pthread_mutex_lock(&m->lock);
        take_role(m, &w); /* nobody reads: read now, without going to sleep first */
        pthread_mutex_unlock(&m->lock);
        struct timespec at = {(time_t)(deadline / 1000), (long)(deadline % 1000) * 1000000};
        pthread_mutex_lock(&w.m);
        while (!w.done) {
            bool late = false;
            if (!w.offered && pthread_cond_timedwait(&w.cond, &w.m, &at) == ETIMEDOUT)
                late = !w.done;
            if (w.done)
                break;
            bool offered = w.offered;
            w.offered = false;
            pthread_mutex_unlock(&w.m);
            mwait *done = NULL;
            pthread_mutex_lock(&m->lock);
            if (offered)
                take_role(m, &w);
            else if (late) /* the reader's role is someone else's: give the connection up */
                expire(m, &w, &done);
            pthread_mutex_unlock(&m->lock);
            complete_all(done); /* w among them */
            pthread_mutex_lock(&w.m);
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

eddy_status eddy__bmux_exec(bmux *m, const eddy__cmdlist *cmds, redisReply **replies,
                            eddy_error *err) {
    long long deadline = eddy__bconn_now_ms() + eddy__command_timeout_ms(m->conn.s, -1);
    return eddy__bmux_exec_until(m, cmds, deadline, replies, err);
}
