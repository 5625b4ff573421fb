/* SPDX-License-Identifier: BSD-3-Clause */
/* The multiplexed publishing connection; see mux.h.
 *
 * The decisions are the core's machine's (src/link/mux.h): the order replies are matched in,
 * who holds the reader's and the writer's roles and who is offered the reader's next, what a
 * lost connection, a passed deadline or a reply nobody asked for means for each slot. This
 * file keeps the locks, the waits and the writing.
 *
 * Rules:
 * - A slot is pushed and its commands are queued under `lock`, together, so the FIFO's order is
 *   the wire's order: straight into the link when nobody writes and nothing is staged (and
 *   always for memory://, whose link borrows commands rather than take their RESP), else
 *   into the stage (RESP bytes, a run per caller), which only the writer hands to the link.
 *   Every call into the link is made under `io` (short, non-blocking calls: TLS allows one
 *   thread in a session at a time); the writer holds `io`, not `lock`, while it writes, so
 *   callers stage meanwhile; nobody waits in poll() holding a lock. The holder of the writer's
 *   role (`writing`) writes until nothing is staged or unwritten (checked under `lock`, so
 *   bytes queued meanwhile are not stranded).
 * - Only the holder of the reader's role (`reading`) takes replies from the link; it parses
 *   without `lock` and takes `lock` to hand what it parsed to the FIFO.
 * - Deadlines: the writer and the reader wait in poll() until their own caller's deadline (the
 *   reader thread: the oldest slot's); any caller whose deadline passes gives the connection
 *   up (expire: every slot fails, timed out when its commands were all written, EDDY_ERR_IO
 *   when not; what is staged is dropped with its slots) and shuts the socket down so that
 *   whoever waits in poll() wakes.
 * - The socket is freed or replaced only under connect_lock, while broken (or not up) and
 *   neither role is held: nobody else can be using it then. A writer that fails shuts the
 *   socket down so that a reader in poll() wakes and leaves.
 * - Whoever leaves the reader's role with slots still waiting passes it on: to the oldest
 *   slot's caller when that one waits in the mux (which takes the role, or, if it is still
 *   writing, takes it when it comes to wait), else to the reader thread.
 * - An async slot (eddy__bmux_send) is completed by whoever reads: its caller is told at once
 *   through on_done (before done is set, so the caller is still there), and collects its
 *   replies in eddy__bmux_finish, which waits, reads or expires like exec. */
#include "mux.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bus/publish_flow.h"
#include "config/conn_state.h"
#include "error.h"
#include "link/link_drive.h"
#include "pool.h"
#include "timing.h"

#define PARSED_MAX 256 /* replies parsed before taking the lock to hand them out */

/* One caller of eddy__bmux_exec_until or eddy__bmux_send. A caller of exec waits for its slot
 * on a mutex of its own, so that handing out replies does not make every woken caller queue up on
 * the mux's lock. */
typedef eddy__bmux_wait mwait;

static void *reader_main(void *arg);

eddy_status eddy__bmux_init(bmux *m, const eddy__settings *s) {
    memset(m, 0, sizeof(*m));
    pthread_mutex_init(&m->connect_lock, NULL);
    pthread_mutex_init(&m->lock, NULL);
    pthread_cond_init(&m->idle, NULL);
    pthread_mutex_init(&m->io, NULL);
    eddy__bcond_init_monotonic(&m->reader_cond);
    eddy__mux_init(&m->mux);
    return eddy__bconn_init(&m->conn, s);
}

void eddy__bmux_destroy(bmux *m) {
    if (m->reader_started) {
        pthread_mutex_lock(&m->lock);
        m->reader_stop = true;
        pthread_cond_signal(&m->reader_cond);
        pthread_mutex_unlock(&m->lock);
        pthread_join(m->reader, NULL);
    }
    pthread_cond_destroy(&m->reader_cond);
    free(m->stage.buf);
    free(m->stage.runs);
    free(m->spare.buf);
    free(m->spare.runs);
    eddy__bconn_destroy(&m->conn);
    pthread_cond_destroy(&m->idle);
    pthread_mutex_destroy(&m->io);
    pthread_mutex_destroy(&m->lock);
    pthread_mutex_destroy(&m->connect_lock);
}

/* Whether w left the machine's queue (guarded by the mux's lock): its completer is decided. */
static bool popped(const mwait *w) {
    return w->req.state != EDDY__MUX_HANDED && w->req.state != EDDY__MUX_UNSENT;
}

static void wake(mwait *w, bool done) {
    pthread_mutex_lock(&w->m);
    if (done && w->on_done) /* before done: its caller is still waiting for it */
        w->on_done(w->user, eddy__mux_req_failed(&w->req));
    if (done)
        w->done = true;
    else
        w->offered = true;
    if (!w->async || w->finishing)
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

/* Takes every slot the machine is done with onto *out, to be completed (complete_all) once the
 * mux's lock is released; on a lost connection, what is staged goes with its slots, and the
 * publisher forgets the lost server before any slot's caller hears of the loss. Caller holds
 * lock. */
static void collect(bmux *m, mwait **out) {
    eddy__publish_mux_settle(m->publisher, &m->mux);
    if (m->mux.broken)
        m->stage.len = m->stage.nruns = 0;
    eddy__mux_req *r;
    while ((r = eddy__mux_take_done(&m->mux))) {
        mwait *w = r->token;
        w->next_c = *out;
        *out = w;
    }
}

/* The link's count of commands written whole (lock held; io taken here). */
static uint64_t link_sent(bmux *m) {
    pthread_mutex_lock(&m->io);
    uint64_t sent = eddy__link_sent(m->conn.link);
    pthread_mutex_unlock(&m->io);
    return sent;
}

/* The connection is lost: every slot fails with why (caller holds lock). */
static void fail_all(bmux *m, const eddy_error *why, mwait **out) {
    eddy__mux_lost(&m->mux, why->status, why, link_sent(m));
    collect(m, out);
}

/* w's deadline passed before its replies came (w NULL: the oldest slot's whose deadline is
 * past, if any): the connection is given up (its replies are no longer accounted for), and
 * whoever waits in poll() on it wakes. Caller holds lock. */
static void expire(bmux *m, mwait *w, mwait **out) {
    if (m->mux.broken || (w && popped(w)))
        return;
    long long now = eddy__mono_ms();
    uint64_t sent = link_sent(m);
    if (w ? eddy__mux_expire(&m->mux, &w->req, now, sent)
          : eddy__mux_expire_due(&m->mux, now, sent)) {
        collect(m, out);
        eddy__link_shutdown(m->conn.link);
    }
}

/* Takes connect_lock by until (monotonic ms; -1 none): another caller may be connecting to a
 * server that does not answer, up to its own deadline. */
static eddy_status lock_connect(bmux *m, long long until, eddy_error *err) {
    if (until < 0) {
        pthread_mutex_lock(&m->connect_lock);
        return EDDY_OK;
    }
    /* pthread_mutex_timedlock takes CLOCK_REALTIME: the monotonic deadline as a wait from now. */
    long long left = until - eddy__mono_ms();
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
    bool ok = m->up && !m->mux.broken;
    pthread_mutex_unlock(&m->lock);
    if (ok)
        return EDDY_OK;
    eddy_status st = lock_connect(m, until, err);
    if (st != EDDY_OK)
        return st;
    pthread_mutex_lock(&m->lock);
    while (m->mux.broken && !eddy__mux_may_reconnect(&m->mux))
        pthread_cond_wait(&m->idle, &m->lock);
    bool broken = m->mux.broken;
    eddy_error lost = m->mux.lost;
    ok = m->up && !broken;
    pthread_mutex_unlock(&m->lock);
    if (!ok) { /* nobody uses the socket: no slot is in flight, no role is held */
        if (broken) {
            eddy__link_gate_down(&m->conn.gate, m->conn.s, m->conn.link, true, &m->conn.state_epoch,
                                 lost.status, &lost);
            eddy__bconn_close(&m->conn);
        }
        st = eddy__bconn_connect_until(&m->conn, until, err);
        pthread_mutex_lock(&m->lock);
        eddy__mux_reconnected(&m->mux);
        m->up = st == EDDY_OK;
        if (m->up)
            m->numbered = eddy__link_queued(m->conn.link);
        pthread_mutex_unlock(&m->lock);
    }
    pthread_mutex_unlock(&m->connect_lock);
    return st;
}

eddy_status eddy__bmux_connect(bmux *m, eddy_error *err) { return ensure_connected(m, -1, err); }

/* Waits in poll() for fd (the link's socket) to be ready for `events`, until deadline. false
 * when the deadline passed. Caller holds no lock (the socket cannot change while a role is
 * held). */
static bool wait_fd(int fd, short events, long long deadline) {
    long long left = deadline - eddy__mono_ms();
    if (left <= 0)
        return false;
    struct pollfd p = {.fd = fd, .events = events};
    poll(&p, 1, left > INT_MAX ? INT_MAX : (int)left);
    return true;
}

/* Parses up to max replies the link already holds, waiting for the socket (until deadline)
 * and reading when it holds none. Returns how many, 0 when w's deadline passed; *lost (with err)
 * when the connection was lost, after the replies that came before (returned). Reader's role,
 * no lock. */
static int parse_some(bmux *m, long long deadline, redisReply **out, int max, bool *lost,
                      eddy_error *err) {
    eddy__link *l = m->conn.link;
    /* First what is parsed already; then wait for the socket and read: a reply just asked for
     * is rarely there yet, so poll() comes before recv() (no recv() that would block). */
    for (bool readable = false;; readable = true) {
        size_t got = 0;
        pthread_mutex_lock(&m->io);
        eddy_status st = readable ? eddy__link_io(l, EDDY__LINK_READ, err) : EDDY_OK;
        eddy_status taken =
            eddy__link_replies(l, out, (size_t)max, &got, st == EDDY_OK ? err : NULL);
        if (st == EDDY_OK)
            st = taken;
        pthread_mutex_unlock(&m->io);
        int n = (int)got;
        *lost = st != EDDY_OK;
        if (n > 0 || *lost) /* what came before a failure is handed out all the same */
            return n;
        unsigned wants = eddy__link_read_wants(l); /* READ, or an ASK's detour's (cluster.h) */
        short events = (short)(((wants & EDDY__LINK_READ) ? POLLIN : 0) |
                               ((wants & EDDY__LINK_WRITE) ? POLLOUT : 0));
        if (!wait_fd(eddy__link_fd(l), events ? events : POLLIN, deadline))
            return 0;
    }
}

/* Reads and hands out replies until w's are in (w NULL: until no slot waits) or the connection
 * is lost. A wait for the socket ends at w's deadline, or without w at the oldest slot's; when
 * it passes, that slot's caller gives the connection up. Called and returns with lock held, in
 * the reader's role. */
static void read_for(bmux *m, mwait *w) {
    eddy__mux_req *head = NULL;
    while (!m->mux.broken && (w ? !popped(w) : (head = eddy__mux_head(&m->mux)) != NULL)) {
        long long deadline = w ? w->req.deadline : head->deadline; /* alive: in the machine */
        pthread_mutex_unlock(&m->lock);
        redisReply *parsed[PARSED_MAX];
        eddy_error why;
        bool lost = false;
        int n = parse_some(m, deadline, parsed, PARSED_MAX, &lost, &why);
        if (n > 0) /* the reader's role: nobody else touches the epoch while it is held */
            eddy__conn_proved(m->conn.s->conn_state, &m->conn.state_epoch);
        pthread_mutex_lock(&m->lock);
        mwait *done = NULL;
        if (n == 0 && !lost)
            expire(m, w, &done);
        for (int i = 0; i < n; i++)
            if (!eddy__mux_feed(&m->mux, parsed[i])) { /* nobody's: every slot failed */
                while (++i < n)
                    freeReplyObject(parsed[i]);
                break;
            }
        if (lost)
            fail_all(m, &why, &done);
        collect(m, &done);
        if (done) {
            pthread_mutex_unlock(&m->lock);
            complete_all(done);
            pthread_mutex_lock(&m->lock);
        }
    }
}

/* Leaving the reader's role with lock held: the machine says who reads next: the oldest slot's
 * caller when it waits in the mux, the reader thread when that slot's caller does not, or, on
 * a lost connection, whoever waits to reconnect. */
static void leave_role(bmux *m) {
    switch (eddy__mux_leave_reader(&m->mux)) {
    case EDDY__MUX_RECONNECT:
        pthread_cond_broadcast(&m->idle);
        break;
    case EDDY__MUX_READER:
        m->reader_wanted = true;
        pthread_cond_signal(&m->reader_cond);
        break;
    case EDDY__MUX_OFFER: /* in the machine: its caller is waiting, so it is alive */
        wake(eddy__mux_head(&m->mux)->token, false);
        break;
    case EDDY__MUX_NOBODY:
        break;
    }
}

/* Takes the reader's role if nobody holds it and reads until w's replies are in, then passes
 * the role on. Caller holds lock. */
static void take_role(bmux *m, mwait *w) {
    if (popped(w) || !eddy__mux_take_reader(&m->mux))
        return;
    read_for(m, w);
    leave_role(m);
}

/* The reader thread: whenever it is wanted, reads until no slot waits. */
static void *reader_main(void *arg) {
    bmux *m = arg;
    pthread_mutex_lock(&m->lock);
    while (!m->reader_stop) {
        if (!m->reader_wanted) {
            pthread_cond_wait(&m->reader_cond, &m->lock);
            continue;
        }
        m->reader_wanted = false;
        if (!eddy__mux_head(&m->mux) || !eddy__mux_take_reader(&m->mux))
            continue;
        read_for(m, NULL);
        leave_role(m);
    }
    pthread_mutex_unlock(&m->lock);
    return NULL;
}

/* Hands every staged run to the link and writes, with io held and lock not (callers keep
 * staging meanwhile). Returns whether bytes are still unwritten; err on failure. */
static eddy_status hand_over(bmux *m, eddy__bmux_stage *taken, bool *pending, eddy_error *err) {
    eddy__link *l = m->conn.link;
    eddy_status st = EDDY_OK;
    pthread_mutex_lock(&m->io);
    size_t start = 0;
    for (size_t i = 0; i < taken->nruns && st == EDDY_OK; i++) {
        st = eddy__link_send_resp(l, taken->buf + start, taken->runs[i].end - start,
                                  taken->runs[i].ncmds, NULL, err);
        start = taken->runs[i].end;
    }
    if (st == EDDY_OK)
        st = eddy__link_flush(l, err);
    *pending = eddy__link_sent(l) < eddy__link_queued(l);
    pthread_mutex_unlock(&m->io);
    return st;
}

/* In the writer's role, lock held: writes what is staged (its own and what others stage
 * meanwhile) until nothing is, waiting for the socket until w's deadline, then leaves the
 * role. A failed write fails every slot (their callers are queued on *done). */
static void write_queued(bmux *m, mwait *w, mwait **done) {
    eddy__link *l = m->conn.link;
    while (!m->mux.broken) {
        eddy__bmux_stage taken = m->stage;
        m->stage = m->spare;
        m->stage.len = m->stage.nruns = 0;
        pthread_mutex_unlock(&m->lock);
        eddy_error why;
        bool pending;
        eddy_status st = hand_over(m, &taken, &pending, &why);
        pthread_mutex_lock(&m->lock);
        m->spare = taken;
        if (st != EDDY_OK) {
            fail_all(m, &why, done); /* what was written may end in half a command */
            eddy__link_shutdown(l);  /* a reader in poll() leaves */
            break;
        }
        if (m->stage.nruns > 0) /* staged meanwhile */
            continue;
        if (!pending) /* checked under lock: nobody staged behind it */
            break;
        /* Bytes are unwritten, so their slot is in the FIFO: wait until the writer's own
         * deadline while its slot is there, else the oldest slot's (its waiter is alive while
         * in the FIFO, and lock is held here). */
        eddy__mux_req *head = eddy__mux_head(&m->mux);
        long long until = !popped(w) || !head ? w->req.deadline : head->deadline;
        pthread_mutex_unlock(&m->lock);
        bool in_time = wait_fd(eddy__link_write_fd(l), POLLOUT, until);
        pthread_mutex_lock(&m->lock);
        if (!in_time)
            expire(m, popped(w) ? NULL : w, done);
    }
    if (eddy__mux_leave_writer(&m->mux))
        pthread_cond_broadcast(&m->idle);
}

/* Appends cmds' RESP to the stage as one run; *last gets the link's number of its last
 * command. false when out of memory (nothing staged). Caller holds lock. */
static bool stage_cmds(bmux *m, const eddy__cmdlist *cmds, uint64_t *last) {
    eddy__bmux_stage *sg = &m->stage;
    size_t len = 0;
    for (size_t i = 0; i < cmds->n; i++)
        len += eddy__cmd_resp_size(&cmds->cmds[i]);
    if (sg->len + len > sg->cap) {
        size_t cap = sg->cap ? sg->cap : 4096;
        while (cap < sg->len + len)
            cap *= 2;
        char *buf = realloc(sg->buf, cap);
        if (!buf)
            return false;
        sg->buf = buf;
        sg->cap = cap;
    }
    if (sg->nruns == sg->runs_cap) {
        size_t cap = sg->runs_cap ? sg->runs_cap * 2 : 64;
        struct eddy__bmux_run *runs = realloc(sg->runs, cap * sizeof(*runs));
        if (!runs)
            return false;
        sg->runs = runs;
        sg->runs_cap = cap;
    }
    char *at = sg->buf + sg->len;
    for (size_t i = 0; i < cmds->n; i++)
        at = eddy__cmd_resp_write(&cmds->cmds[i], at);
    sg->len += len;
    sg->runs[sg->nruns++] = (struct eddy__bmux_run){sg->len, cmds->n};
    *last = m->numbered += cmds->n;
    return true;
}

/* Queues cmds with w's slot, and writes unless someone does. EDDY_OK: w is in the machine, or
 * already failed with the connection. Caller holds no lock. */
static eddy_status queue_cmds(bmux *m, const eddy__cmdlist *cmds, redisReply **replies, mwait *w,
                              eddy_error *err) {
    eddy_status st = EDDY_OK;
    /* Connected (the common case: one take of the lock), else connect, and again, once, when
     * the connection was lost meanwhile. */
    for (int attempt = 0;; attempt++) {
        pthread_mutex_lock(&m->lock);
        if (m->up && !m->mux.broken)
            break;
        eddy_error lost = m->mux.lost;
        pthread_mutex_unlock(&m->lock);
        if (attempt == 2)
            return eddy__fail(err, EDDY_ERR_IO, "%s", lost.detail);
        if ((st = ensure_connected(m, w->req.deadline, err)) != EDDY_OK)
            return st;
    }
    uint64_t last;
    if ((!m->mux.writing && m->stage.nruns == 0) || eddy__bconn_in_process(&m->conn)) {
        /* Nobody writes and nothing waits: straight into the link (no copy through the stage);
         * whoever comes meanwhile stages behind it. memory:// always: its link borrows the
         * commands (alive until their replies are in: the caller waits for them). */
        eddy_error why;
        pthread_mutex_lock(&m->io);
        st = eddy__link_send(m->conn.link, cmds, &last, &why);
        pthread_mutex_unlock(&m->io);
        if (st != EDDY_OK) { /* nothing queued: out of memory, or the link failed unnoticed */
            mwait *done = NULL;
            if (st != EDDY_ERR_NOMEM)
                fail_all(m, &why, &done); /* the slots in flight fail with it */
            pthread_mutex_unlock(&m->lock);
            complete_all(done);
            if (err)
                *err = why;
            return st;
        }
        m->numbered = last;
    } else if (!stage_cmds(m, cmds, &last)) { /* nothing queued */
        pthread_mutex_unlock(&m->lock);
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory queueing commands");
    }
    /* Cannot be refused: cmds->n > 0 (the callers' check) and the connection is not broken. */
    (void)eddy__mux_submit(&m->mux, &w->req, replies, cmds->n, w->req.deadline, w->req.began, last,
                           w, NULL);
    mwait *done = NULL;
    if (eddy__mux_take_writer(&m->mux))
        write_queued(m, w, &done);
    pthread_mutex_unlock(&m->lock);
    complete_all(done); /* w among them, when a write failed */
    return EDDY_OK;
}

static void wait_init(mwait *w, long long deadline) {
    memset(w, 0, sizeof(*w));
    w->req.deadline = deadline;
    w->req.began = eddy__mono_ms();
    pthread_mutex_init(&w->m, NULL);
    eddy__bcond_init_monotonic(&w->cond);
}

static void wait_destroy(mwait *w) {
    pthread_cond_destroy(&w->cond);
    pthread_mutex_destroy(&w->m);
}

/* Waits until w is done: reads itself when nobody reads (or when offered the role), and gives
 * the connection up when w's deadline passes with the role someone else's. Returns w's status.
 * Caller holds no lock. */
static eddy_status wait_done(bmux *m, mwait *w, eddy_error *err) {
    pthread_mutex_lock(&m->lock);
    take_role(m, w); /* nobody reads: read now, without going to sleep first */
    pthread_mutex_unlock(&m->lock);
    long long deadline = w->req.deadline;
    struct timespec at = {(time_t)(deadline / 1000), (long)(deadline % 1000) * 1000000};
    pthread_mutex_lock(&w->m);
    while (!w->done) {
        bool late = false;
        if (!w->offered && pthread_cond_timedwait(&w->cond, &w->m, &at) == ETIMEDOUT)
            late = !w->done;
        if (w->done)
            break;
        bool offered = w->offered;
        w->offered = false;
        pthread_mutex_unlock(&w->m);
        mwait *done = NULL;
        pthread_mutex_lock(&m->lock);
        if (offered)
            take_role(m, w);
        else if (late) /* the reader's role is someone else's: give the connection up */
            expire(m, w, &done);
        pthread_mutex_unlock(&m->lock);
        complete_all(done); /* w among them */
        pthread_mutex_lock(&w->m);
    }
    pthread_mutex_unlock(&w->m);
    eddy_status st = w->req.slot.st;
    if (st != EDDY_OK && err)
        *err = w->req.err;
    return st;
}

eddy_status eddy__bmux_exec_until(bmux *m, const eddy__cmdlist *cmds, long long deadline,
                                  redisReply **replies, eddy_error *err) {
    for (size_t i = 0; i < cmds->n; i++)
        replies[i] = NULL;
    if (cmds->n == 0) /* nothing to send: connected, or why not */
        return ensure_connected(m, deadline, err);
    mwait w;
    wait_init(&w, deadline);
    eddy_status st = queue_cmds(m, cmds, replies, &w, err);
    if (st == EDDY_OK)
        st = wait_done(m, &w, err);
    wait_destroy(&w);
    return st;
}

/* Has the reader thread read for an async slot that nobody reads for (starting it the first
 * time). Caller holds lock. false when it could not be started. The thread is started even
 * when someone reads now: that reader, leaving, hands a detached slot to the thread
 * (EDDY__MUX_READER), which must then exist. */
static bool want_reader(bmux *m) {
    if (!m->reader_started) {
        if (eddy__bthread_start(&m->reader, reader_main, m) != 0)
            return false;
        m->reader_started = true;
    }
    if (m->mux.reading)
        return true;
    m->reader_wanted = true;
    pthread_cond_signal(&m->reader_cond);
    return true;
}

eddy_status eddy__bmux_send(bmux *m, const eddy__cmdlist *cmds, long long deadline,
                            redisReply **replies, eddy__bmux_wait *w,
                            void (*on_done)(void *user, bool failed), void *user, eddy_error *err) {
    for (size_t i = 0; i < cmds->n; i++)
        replies[i] = NULL;
    wait_init(w, deadline);
    if (cmds->n == 0) { /* nothing to send: done at once */
        w->req.slot.st = ensure_connected(m, deadline, &w->req.err);
        w->req.slot.replies = replies;
        w->req.slot.n = 0;
        if (on_done)
            on_done(user, eddy__mux_req_failed(&w->req));
        w->done = true;
        return EDDY_OK;
    }
    w->async = true;
    w->req.detached = true;
    w->on_done = on_done;
    w->user = user;
    eddy_status st = queue_cmds(m, cmds, replies, w, err);
    if (st != EDDY_OK) {
        wait_destroy(w);
        return st;
    }
    pthread_mutex_lock(&m->lock);
    if (!m->mux.reading && eddy__mux_head(&m->mux) == &w->req && eddy__mux_queued(&m->mux) == 1)
        /* Alone on the connection: read the acknowledgement here, as exec would, rather than
         * wake the reader thread for it (one request at a time pays no extra wake). */
        take_role(m, w);
    else if (!popped(w) && !want_reader(m)) {
        /* No reader thread: the caller reads for itself in eddy__bmux_finish (and on_done
         * runs only then). */
        w->req.detached = false;
        pthread_mutex_lock(&w->m);
        w->async = false;
        pthread_mutex_unlock(&w->m);
    }
    pthread_mutex_unlock(&m->lock);
    return EDDY_OK;
}

eddy_status eddy__bmux_finish(bmux *m, eddy__bmux_wait *w, eddy_error *err) {
    pthread_mutex_lock(&w->m);
    w->finishing = true;
    bool done = w->done;
    pthread_mutex_unlock(&w->m);
    eddy_status st = done ? w->req.slot.st : wait_done(m, w, err);
    if (done && st != EDDY_OK && err)
        *err = w->req.err;
    wait_destroy(w);
    return st;
}
