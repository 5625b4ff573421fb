/* SPDX-License-Identifier: BSD-3-Clause */
/* Blocking transport; see conn.h. The link (src/link/link.h) speaks to the server, or to the
 * memory engine; this file only waits for it with poll() until a deadline.
 *
 * Interrupting a blocking read: the reader marks itself in_read only after its whole pipeline
 * was written (flushed: for memory://, run up to the read), so when another thread shuts the
 * link down to wake it, every acknowledgement queued ahead of the read has already reached
 * the server. The link's socket changes only under lock (connect and drop set `up` there) and
 * is shut down only while in_read, when it cannot change. */
#include "conn.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config/conn_state.h"
#include "error.h"
#include "link/link_drive.h"
#include "timing.h"
#include "util/backoff.h"
#include "util/reply.h"

void eddy__bcond_init_monotonic(pthread_cond_t *cond) {
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(cond, &attr);
    pthread_condattr_destroy(&attr);
}

eddy_status eddy__bconn_init(bconn *c, const eddy__settings *s) {
    memset(c, 0, sizeof(*c));
    c->s = s;
    pthread_mutex_init(&c->lock, NULL);
    eddy__bcond_init_monotonic(&c->wake);
    c->client_id = -1;
    eddy__reconnect_init(&c->gate,
                         (unsigned)(eddy__mono_ms() ^ (long long)(uintptr_t)c ^ getpid()));
    return EDDY_OK;
}

static void drop(bconn *c) {
    c->state_epoch = 0; /* a loss was reported before, or this is a close */
    pthread_mutex_lock(&c->lock);
    c->client_id = -1;
    c->up = false;
    if (c->link)
        eddy__link_close(c->link);
    pthread_mutex_unlock(&c->lock);
}

void eddy__bconn_close(bconn *c) { drop(c); }

void eddy__bconn_destroy(bconn *c) {
    drop(c);
    eddy__link_free(c->link);
    c->link = NULL;
    eddy__reply_arena_free(c->arena);
    c->arena = NULL;
    pthread_mutex_destroy(&c->lock);
    pthread_cond_destroy(&c->wake);
}

bool eddy__bconn_connected(const bconn *c) { return c->up; }

bool eddy__bconn_in_process(const bconn *c) { return c->s->url.kind == EDDY__URL_MEMORY; }

/* Waits (poll) until the link's socket is ready for what it wants, or the deadline, or the
 * link's own deadline (a connect's, a parked memory read's BLOCK end: then eddy__link_tick),
 * and advances the link. EDDY_ERR_TIMEOUT (err untouched) when the deadline passed first. */
static eddy_status drive(bconn *c, long long deadline, eddy_error *err) {
    eddy__link *l = c->link;
    long long now = eddy__mono_ms();
    if (deadline - now <= 0)
        return EDDY_ERR_TIMEOUT;
    long long until = eddy__link_next_deadline(l, deadline);
    long long left = until > now ? until - now : 0;
    unsigned wants = eddy__link_wants(l);
    struct pollfd p = {.fd = eddy__link_fd(l),
                       .events = (short)(((wants & EDDY__LINK_READ) ? POLLIN : 0) |
                                         ((wants & EDDY__LINK_WRITE) ? POLLOUT : 0))};
    int n = poll(&p, 1, left > INT_MAX ? INT_MAX : (int)left);
    if (n < 0 && errno != EINTR)
        return eddy__fail(err, EDDY_ERR_IO, "poll: %s", strerror(errno));
    if (n <= 0) /* EINTR, or a deadline: the link's may have passed; the caller looks again */
        return eddy__link_tick(l, eddy__mono_ms(), err);
    unsigned ready = ((p.revents & POLLIN) ? EDDY__LINK_READ : 0) |
                     ((p.revents & POLLOUT) ? EDDY__LINK_WRITE : 0);
    if (p.revents & (POLLERR | POLLHUP | POLLNVAL))
        ready = EDDY__LINK_READ | EDDY__LINK_WRITE;
    return eddy__link_io(l, ready, err);
}

eddy_status eddy__bconn_connect(bconn *c, eddy_error *err) {
    return eddy__bconn_connect_until(c, -1, err);
}

eddy_status eddy__bconn_connect_until(bconn *c, long long until, eddy_error *err) {
    if (eddy__bconn_connected(c))
        return EDDY_OK;
    if (!c->link) {
        if (!(c->link = eddy__link_new(c->s, true)))
            return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory connecting");
        if (c->arena)
            eddy__reply_arena_install(c->arena, eddy__link_reader(c->link));
    }
    long long now = eddy__mono_ms();
    long long wait = eddy__link_gate_wait(c->s, &c->gate, now);
    if (wait > 0 && until >= 0 && now + wait > until) /* not a verdict: not reported */
        return eddy__fail(err, EDDY_ERR_IO,
                          "connecting to %s: the reconnect backoff (%lld ms) ends after the "
                          "deadline",
                          eddy__link_peer(c->link), wait);
    if (wait > 0 && !eddy__bconn_sleep(c, wait))
        return eddy__fail(err, EDDY_ERR_CLOSED, "interrupted while backing off");
    if (wait > 0)
        now = eddy__mono_ms();
    eddy_status st = eddy__link_gate_connect(&c->gate, c->s, c->link, now, err);
    long long deadline = eddy__link_deadline(c->link);
    bool callers = until >= 0 && until < deadline; /* the caller's deadline comes first */
    if (callers)
        deadline = until;
    while (st == EDDY_OK && eddy__link_phase_of(c->link) != EDDY__LINK_READY) {
        if ((st = drive(c, deadline, err)) == EDDY_ERR_TIMEOUT && callers) {
            /* Not a verdict on the server (its connect timeout did not pass): not reported. */
            drop(c);
            return eddy__fail(err, EDDY_ERR_IO, "connecting to %s: not connected by the deadline",
                              eddy__link_peer(c->link));
        }
        if (st == EDDY_ERR_TIMEOUT)
            st = eddy__link_tick(c->link, eddy__mono_ms(), err);
    }
    if (st != EDDY_OK) {
        drop(c); /* err may be the caller's NULL: the tracker then names the status only */
        eddy__link_gate_down(&c->gate, c->s, c->link, false, &c->state_epoch, st, err);
        return st;
    }
    pthread_mutex_lock(&c->lock);
    c->up = true;
    c->client_id = eddy__link_client_id(c->link);
    pthread_mutex_unlock(&c->lock);
    eddy__conn_up(c->s->conn_state, &c->state_epoch);
    return EDDY_OK;
}

void eddy__bconn_release(bconn *c, redisReply **replies, size_t n) {
    eddy__link_replies_done(c->live_arena, replies, n);
    c->live_arena = NULL;
}

eddy_status eddy__bconn_use_arena(bconn *c) {
    if (!c->arena && !(c->arena = eddy__reply_arena_new()))
        return EDDY_ERR_NOMEM;
    if (c->link)
        eddy__reply_arena_install(c->arena, eddy__link_reader(c->link));
    return EDDY_OK;
}

/* Under lock: a cut or an interrupt ended what was out (consumed). */
static bool take_cut(bconn *c, bool need_read) {
    pthread_mutex_lock(&c->lock);
    bool v = (c->interrupted || c->cut) && (!need_read || c->in_read);
    c->cut = false;
    pthread_mutex_unlock(&c->lock);
    return v;
}

static void set_flags(bconn *c, bool blocking, bool in_read) {
    pthread_mutex_lock(&c->lock);
    c->blocking = blocking;
    c->in_read = in_read;
    pthread_cond_broadcast(&c->wake); /* a waker waits for the end of a round's writing */
    pthread_mutex_unlock(&c->lock);
}

static eddy_status exec_link(bconn *c, const eddy__cmdlist *cmds, long long block_ms, bool cuttable,
                             redisReply **replies, eddy_error *err) {
    eddy__link *l = c->link;
    c->live_arena = eddy__reply_arena_of(eddy__link_reader(l)); /* the replies below live in it */
    long long deadline = eddy__link_cmd_deadline(c->s, eddy__mono_ms(), block_ms, -1);
    uint64_t last = 0;
    eddy_status st = eddy__link_send(l, cmds, &last, err);
    if (st != EDDY_OK)
        return st; /* out of memory: nothing was queued, the link is as it was */
    if (cuttable)
        set_flags(c, true, false);
    /* Write it all first: a blocking read is marked in_read only once every command ahead of
     * it reached the server (see the top of this file). */
    while (st == EDDY_OK && eddy__link_sent(l) < last) {
        if ((st = eddy__link_flush(l, err)) == EDDY_OK && eddy__link_sent(l) < last)
            st = drive(c, deadline, err);
    }
    if (st != EDDY_OK && st != EDDY_ERR_TIMEOUT && cuttable && take_cut(c, false))
        st = eddy__fail(err, EDDY_ERR_CLOSED, "interrupted"); /* the server dropped us: a pause */
    if (st == EDDY_OK && cuttable) {
        pthread_mutex_lock(&c->lock);
        if (c->interrupted || c->cut) {
            st = eddy__fail(err, EDDY_ERR_CLOSED, "interrupted");
            /* The read may be parked already (memory:// runs it in the flush): end it before
             * a waker that cannot have the server drop us goes on (eddy__bconn_wake). */
            if (c->cut && c->up)
                eddy__link_shutdown(c->link);
        } else {
            c->in_read = true;
        }
        c->cut = false;
        pthread_cond_broadcast(&c->wake);
        pthread_mutex_unlock(&c->lock);
    }
    for (size_t i = 0, got; st == EDDY_OK && i < cmds->n; i += got) {
        if ((st = eddy__link_replies(l, replies + i, cmds->n - i, &got, err)) == EDDY_OK && !got)
            st = drive(c, deadline, err);
        if (st != EDDY_OK && st != EDDY_ERR_TIMEOUT && take_cut(c, true))
            st = eddy__fail(err, EDDY_ERR_CLOSED, "interrupted");
    }
    if (st == EDDY_ERR_TIMEOUT)
        st = eddy__link_expire(l, last, "command", err);
    set_flags(c, false, false);
    if (st == EDDY_OK)
        eddy__conn_proved(c->s->conn_state, &c->state_epoch);
    if (st != EDDY_OK) {
        eddy__link_gate_down(&c->gate, c->s, l, true, &c->state_epoch, st, err);
        drop(c);
        eddy__bconn_release(c, replies, cmds->n);
    }
    return st;
}

eddy_status eddy__bconn_exec_in(bconn *c, eddy__reply_arena *arena, const eddy__cmdlist *cmds,
                                long long block_ms, redisReply **replies, bool *in_arena,
                                eddy_error *err) {
    *in_arena = false;
    for (size_t i = 0; i < cmds->n; i++)
        replies[i] = NULL;
    eddy_status st = eddy__bconn_connect(c, err);
    if (st != EDDY_OK || cmds->n == 0)
        return st;
    redisReader *reader = eddy__link_reader(c->link);
    redisReplyObjectFunctions *fn = reader->fn;
    void *privdata = reader->privdata;
    eddy__reply_arena_install(arena, reader);
    st = exec_link(c, cmds, block_ms, block_ms >= 0, replies, err);
    c->live_arena = NULL; /* the caller's now */
    reader->fn = fn;      /* the same reader, connected or not: its own objects again */
    reader->privdata = privdata;
    *in_arena = st == EDDY_OK;
    return st;
}

eddy_status eddy__bconn_exec_read(bconn *c, const eddy__cmdlist *cmds, long long block_ms,
                                  bool cuttable, redisReply **replies, eddy_error *err) {
    for (size_t i = 0; i < cmds->n; i++)
        replies[i] = NULL;
    eddy_status st = eddy__bconn_connect(c, err);
    if (st != EDDY_OK)
        return st;
    if (cmds->n == 0)
        return EDDY_OK;
    return exec_link(c, cmds, block_ms, cuttable, replies, err);
}

eddy_status eddy__bconn_exec(bconn *c, const eddy__cmdlist *cmds, long long block_ms,
                             redisReply **replies, eddy_error *err) {
    return eddy__bconn_exec_read(c, cmds, block_ms, block_ms >= 0, replies, err);
}

bool eddy__bconn_sleep(bconn *c, long long ms) {
    long long deadline = eddy__mono_ms() + ms;
    struct timespec ts = {(time_t)(deadline / 1000), (long)(deadline % 1000) * 1000000};
    pthread_mutex_lock(&c->lock);
    while (!c->interrupted && !c->woken && eddy__mono_ms() < deadline)
        if (pthread_cond_timedwait(&c->wake, &c->lock, &ts) == ETIMEDOUT)
            break;
    bool ok = !c->interrupted && !c->woken;
    c->woken = false;
    pthread_mutex_unlock(&c->lock);
    return ok;
}

bool eddy__bconn_backoff(bconn *c) {
    return eddy__bconn_sleep(c, eddy__link_gate_wait(c->s, &c->gate, eddy__mono_ms()));
}

void eddy__bconn_interrupt(bconn *c) {
    pthread_mutex_lock(&c->lock);
    c->interrupted = true;
    if (c->in_read && c->up)
        eddy__link_shutdown(c->link); /* wakes the reader waiting in poll() */
    pthread_cond_broadcast(&c->wake);
    pthread_mutex_unlock(&c->lock);
}

long long eddy__bconn_wake(bconn *c, bool cut) {
    long long kill = -1;
    pthread_mutex_lock(&c->lock);
    c->woken = true;
    if (cut) {
        c->cut = true;
        if (c->blocking && c->up)
            kill = c->client_id;
        /* A round still being written has its read on the way (memory://: maybe parked). With
         * no client id to have the server drop it (memory://, or CLIENT ID refused), wait for
         * the writer to take the cut, so that nothing published after this call reaches that
         * read; writing takes no longer than the socket takes the bytes. */
        while (kill < 0 && c->cut && c->blocking && !c->in_read && c->up)
            pthread_cond_wait(&c->wake, &c->lock);
        if (c->in_read && c->up)
            eddy__link_shutdown(c->link);
    }
    pthread_cond_broadcast(&c->wake);
    pthread_mutex_unlock(&c->lock);
    return kill;
}

void eddy__bconn_wake_clear(bconn *c) {
    pthread_mutex_lock(&c->lock);
    c->woken = false;
    c->cut = false;
    pthread_mutex_unlock(&c->lock);
}

void eddy__bconn_resume(bconn *c) {
    pthread_mutex_lock(&c->lock);
    c->interrupted = false;
    pthread_mutex_unlock(&c->lock);
}
