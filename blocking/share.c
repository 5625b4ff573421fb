/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared reads on the blocking front end; see share.h. This file keeps who is due and runs the
 * two threads; reader.c plans, sends and feeds a round of them (eddy__bsub_round_shared). */
#include "share.h"

#include <stdlib.h>
#include <time.h>

#include "bus/wake_drive.h"
#include "error.h"
#include "internal.h"
#include "timing.h"

/* The longest the read thread sleeps with nobody due. */
#define READ_IDLE_MS 60000
/* The longest the wake thread holds its next wide read back for the reads a wake made. */
#define REARM_HOLD_MS 10

struct bshare {
    eddy_bus *bus;
    eddy__wakeup *core;
    bconn wake_conn, read_conn;
    pthread_t wake_thread, read_thread;
    bool running;
    atomic_bool stopping;
    atomic_bool wake_idle; /* the wake thread is planning or sleeping: a watch must wake it */
    pthread_mutex_t lock;  /* members, and each member's record (bsub.sm) */
    pthread_cond_t cond;   /* the read thread's wait */
    pthread_cond_t ended;  /* a round ended (a detach and the wake thread wait for it) */
    unsigned long rounds_begun, rounds_done; /* the read thread's rounds so far */
    unsigned long rearm_after; /* the wake thread's next wide read waits for this round */
    eddy__share members;       /* the core's (src/bus/share.h), under lock */
};

bshare *eddy__bshare_new(eddy_bus *bus) {
    bshare *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    if (!(s->core = eddy__wakeup_new(bus->s.read_batch))) {
        free(s);
        return NULL;
    }
    s->bus = bus;
    eddy__share_init(&s->members);
    pthread_mutex_init(&s->lock, NULL);
    eddy__bcond_init_monotonic(&s->cond);
    eddy__bcond_init_monotonic(&s->ended);
    eddy__bconn_init(&s->wake_conn, &bus->s);
    eddy__bconn_init(&s->read_conn, &bus->s);
    if (eddy__bconn_use_arena(&s->read_conn) != EDDY_OK) {
        eddy__bshare_free(s);
        return NULL;
    }
    return s;
}

void eddy__bshare_free(bshare *s) {
    if (!s)
        return;
    eddy__bshare_stop(s);
    eddy__bconn_destroy(&s->wake_conn);
    eddy__bconn_destroy(&s->read_conn);
    eddy__wakeup_free(s->core);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->cond);
    pthread_cond_destroy(&s->ended);
    eddy__share_destroy(&s->members);
    free(s);
}

eddy__wakeup *eddy__bshare_wakeup(bshare *s) { return s->core; }

/* ---- the wake thread ------------------------------------------------------------------- */

/* A watched stream has news: its watcher reads (under the core's lock; see share.h's order),
 * in the read thread's next round, which the next wide read waits for (hold_rearm). */
static void woken(void *owner, void *user) {
    bshare *s = user;
    eddy__bshare_kick(s, owner);
    pthread_mutex_lock(&s->lock);
    s->rearm_after = s->rounds_begun + 1; /* (a round under way planned before the news) */
    pthread_mutex_unlock(&s->lock);
}

/* The reads a wake made go out before the next wide read: the server runs one command at a
 * time, and a wide read over 1,000 streams costs it some 400 us (wakeup.h), which a woken read
 * queued behind it would wait, and with it the delivery. Nothing is missed while the wide read
 * is held back: it starts from the ids the last one ended at. At most REARM_HOLD_MS, since
 * the round may never come (the subscription left, or went to a reader of its own). */
static void hold_rearm(bshare *s) {
    pthread_mutex_lock(&s->lock);
    long long until = eddy__mono_ms() + REARM_HOLD_MS;
    while (s->rounds_done < s->rearm_after && !atomic_load(&s->stopping)) {
        long long now = eddy__mono_ms();
        if (now >= until)
            break;
        struct timespec at = {(time_t)(until / 1000), (long)(until % 1000) * 1000000};
        pthread_cond_timedwait(&s->ended, &s->lock, &at);
    }
    pthread_mutex_unlock(&s->lock);
}

static void *wake_thread(void *arg) {
    bshare *s = arg;
    bconn *c = &s->wake_conn;
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    redisReply **replies = NULL;
    size_t cap = 0;
    while (!atomic_load(&s->stopping)) {
        eddy_error err;
        if (!eddy__bconn_connected(c) && eddy__bconn_connect(c, &err) != EDDY_OK) {
            eddy__log(&s->bus->s.log, EDDY_LOG_DEBUG, "wake-up connection: %s", err.detail);
            eddy__bconn_backoff(c);
            continue;
        }
        /* Set from before the plan until it sleeps no more: a watch made meanwhile ends that
         * sleep (once it blocks, a watch the XREAD does not cover cuts it: the core says so). */
        atomic_store(&s->wake_idle, true);
        eddy__bconn_wake_clear(c);
        long long block, idle;
        if (!eddy__wake_next(s->core, (long long)s->bus->s.block_ms, &cmds, &block, &idle)) {
            eddy__bconn_sleep(c, idle);
            continue;
        }
        atomic_store(&s->wake_idle, false);
        if (cmds.n > cap) {
            redisReply **v = realloc(replies, cmds.n * sizeof(*v));
            if (!v) {
                eddy__bconn_sleep(c, EDDY__NOMEM_RETRY_MS);
                continue;
            }
            replies = v, cap = cmds.n;
        }
        eddy_status st = eddy__bconn_exec(c, &cmds, block, replies, &err);
        if (st == EDDY_ERR_CLOSED)
            continue; /* cut short by a watch or a stop: the ids are as they were */
        if (st != EDDY_OK) {
            /* A restarted server may have lost or trimmed streams: every id is fixed again. */
            eddy__wakeup_reset(s->core);
            eddy__log(&s->bus->s.log, EDDY_LOG_DEBUG, "wake-up connection: %s", err.detail);
            eddy__bconn_backoff(c);
            continue;
        }
        eddy__wake_took(s->core, &cmds, replies, cmds.n, woken, s, &s->bus->s.log);
        eddy__bconn_release(c, replies, cmds.n);
        hold_rearm(s);
    }
    eddy__cmdlist_reset(&cmds);
    free(replies);
    return NULL;
}

void eddy__bshare_watched(bshare *s, bool cut) {
    if (cut || atomic_load(&s->wake_idle))
        eddy__bconn_wake(&s->wake_conn, cut);
}

/* ---- the read thread ------------------------------------------------------------------- */

static void *read_thread(void *arg) {
    bshare *s = arg;
    pthread_mutex_lock(&s->lock);
    while (!atomic_load(&s->stopping)) {
        long long next_at;
        void **batch;
        size_t k =
            eddy__share_take_due(&s->members, eddy__mono_ms(), READ_IDLE_MS, &batch, &next_at);
        if (k == 0) {
            struct timespec at = {(time_t)(next_at / 1000), (long)(next_at % 1000) * 1000000};
            pthread_cond_timedwait(&s->cond, &s->lock, &at);
            continue;
        }
        s->rounds_begun++;
        pthread_mutex_unlock(&s->lock);
        eddy__bsub_round_shared(s, &s->read_conn, (bsub **)batch, k);
        pthread_mutex_lock(&s->lock);
        s->rounds_done++;
        for (size_t i = 0; i < k; i++) /* (one its own reader thread has now stays OWN) */
            eddy__share_round_end(&((bsub *)batch[i])->sm, ((bsub *)batch[i])->next_at);
        pthread_cond_broadcast(&s->ended);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

/* ---- members --------------------------------------------------------------------------- */

eddy_status eddy__bshare_start(bshare *s, eddy_error *err) {
    if (s->running)
        return EDDY_OK;
    atomic_store(&s->stopping, false);
    eddy__bconn_resume(&s->wake_conn);
    eddy__bconn_resume(&s->read_conn);
    if (eddy__bthread_start(&s->wake_thread, wake_thread, s) != 0)
        return eddy__fail(err, EDDY_ERR_NOMEM, "could not start the wake-up thread");
    if (eddy__bthread_start(&s->read_thread, read_thread, s) != 0) {
        atomic_store(&s->stopping, true);
        eddy__bconn_interrupt(&s->wake_conn);
        pthread_join(s->wake_thread, NULL);
        return eddy__fail(err, EDDY_ERR_NOMEM, "could not start the shared read thread");
    }
    s->running = true;
    return EDDY_OK;
}

void eddy__bshare_stop(bshare *s) {
    if (!s->running)
        return;
    atomic_store(&s->stopping, true);
    eddy__bconn_interrupt(&s->wake_conn);
    eddy__bconn_interrupt(&s->read_conn);
    pthread_mutex_lock(&s->lock);
    pthread_cond_broadcast(&s->cond);
    pthread_cond_broadcast(&s->ended); /* a held wide read */
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->wake_thread, NULL);
    pthread_join(s->read_thread, NULL);
    eddy__bconn_close(&s->wake_conn);
    eddy__bconn_close(&s->read_conn);
    eddy__wakeup_reset(s->core);
    s->running = false;
}

eddy_status eddy__bshare_attach(bshare *s, bsub *bs) {
    pthread_mutex_lock(&s->lock);
    eddy_status st = eddy__share_attach(&s->members, &bs->sm, bs);
    if (st == EDDY_OK)
        pthread_cond_signal(&s->cond);
    pthread_mutex_unlock(&s->lock);
    return st;
}

bool eddy__bshare_detach(bshare *s, bsub *bs) {
    pthread_mutex_lock(&s->lock);
    bs->sm.leaving = true; /* no round takes it again */
    while (bs->sm.where == EDDY__SHARE_ROUND)
        pthread_cond_wait(&s->ended, &s->lock);
    bool own = eddy__share_detach(&s->members, &bs->sm);
    pthread_mutex_unlock(&s->lock);
    return own;
}

void eddy__bshare_kick(bshare *s, bsub *bs) {
    pthread_mutex_lock(&s->lock);
    if (eddy__share_kick(&bs->sm))
        pthread_cond_signal(&s->cond);
    pthread_mutex_unlock(&s->lock);
}

bool eddy__bshare_own(bshare *s, bsub *bs, void *(*fn)(void *)) {
    pthread_mutex_lock(&s->lock);
    if (bs->thread_started) /* it gave bs back, so it has ended or is about to */
        pthread_join(bs->thread, NULL);
    bs->handed = true;
    eddy__share_own(&bs->sm, true);
    bool started = eddy__bthread_start(&bs->thread, fn, bs) == 0;
    bs->thread_started = started;
    if (!started) {
        bs->handed = false;
        eddy__share_own(&bs->sm, false);
    }
    pthread_mutex_unlock(&s->lock);
    return started; /* (not bs's field: once OWN, a stop may join that thread and free bs's
                       consumer at any time) */
}

bool eddy__bshare_give_back(bshare *s, bsub *bs, long long next_at) {
    pthread_mutex_lock(&s->lock);
    bool back = eddy__share_give_back(&bs->sm, next_at);
    if (back)
        pthread_cond_signal(&s->cond);
    pthread_mutex_unlock(&s->lock);
    return back;
}
