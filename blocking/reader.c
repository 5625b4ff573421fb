/* SPDX-License-Identifier: BSD-3-Clause */
/* The reader thread of one subscription: drives the core consumer (plan, send, feed), hands each
 * delivery to the worker pool, and plans again at once: the core decides what may be read while
 * deliveries are outstanding (it waits a little for a round's deliveries, as one batch, then reads
 * live beside slow ones, for the room left in the batch). When it has nothing to send the reader
 * sleeps for the idle time, or until a settle the core asks to wake it for (finish, through
 * eddy__bconn_wake), a pause or a resume. Settled acknowledgements go out with the next plan.
 * Stopping interrupts a blocking read at once; handlers that are running finish and their
 * acknowledgements are sent (on a new connection when the interrupt dropped the old one) before the
 * thread ends. A pause or resume wakes the reader (eddy__bsub_wake): an idle wait ends, and a pause
 * the core says to hurry cuts a blocking read short (on redis:// the server also drops the reader's
 * connection, CLIENT KILL through the publishing connection, so the cut comes before anything
 * published after the pause); the reader then reconnects at once, plans again, and the core decides
 * from the new state. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config/conn_state.h"
#include "error.h"
#include "internal.h"
#include "link/redis.h"
#include "timing.h"

/* Ends the reader's idle wait: its own thread's, or the shared reads' (it plans again now). */
static void kick(bsub *bs) {
    eddy__bconn_wake(&bs->conn, false);
    if (bs->share)
        eddy__bshare_kick(bs->share, bs);
}

/* Settles under bs->lock, so a stopping reader that sees nothing outstanding (wait_settled)
 * cannot go on, and free the subscription, before this returns. The wake, when the core asks
 * for it, ends the reader's idle wait: the round is settled, there is room to read again and
 * acknowledgements to send. */
static void finish_run(bsub *bs, eddy__settlement *v, size_t *n) {
    if (*n == 0)
        return;
    pthread_mutex_lock(&bs->lock);
    if (eddy__consumer_settle_run(bs->consumer, v, *n))
        kick(bs);
    pthread_cond_broadcast(&bs->settled);
    pthread_mutex_unlock(&bs->lock);
    *n = 0;
}

/* A delivery whose handler returned EDDY_PENDING, finished later (eddy_delivery_finish). */
static void finish(eddy_delivery *d, eddy_status st, eddy_event *reply) {
    eddy__settlement v = {.d = d, .st = st, .reply = reply};
    size_t one = 1;
    finish_run(d->frontend, &v, &one);
}

/* A round's deliveries, shared out among up to `workers` jobs: each job takes the next
 * delivery in turn, so slow handlers spread over the workers while fast ones run on whichever
 * thread is awake, and each job settles what it handled in runs (one lock round per run, not
 * one per message). An outcome waits in its job's run until it is full (EDDY__RUN_MAX),
 * the round is done, or RUN_WAIT_MS passed when the job takes its next delivery (looked at every
 * RUN_CLOCK_EVERY outcomes): so behind at most one slow handler and a few fast ones
 * (redelivery_idle_ms must exceed the longest handler anyway). The last job
 * to end frees the round. */
#define RUN_WAIT_MS 1
#define RUN_CLOCK_EVERY 8
#define SHARE_MIN 16 /* deliveries per job below which fewer jobs are woken */

typedef struct bround bround;

/* A job of a round (the pool's job first, so the job finds its round). */
typedef struct bround_job {
    bpool_job job;
    bround *round;
} bround_job;

struct bround {
    bsub *bs;
    size_t n;
    atomic_size_t next;
    atomic_uint jobs_left;
    eddy_delivery **v; /* after the jobs, in the same allocation */
    bround_job jobs[];
};

static void run_round(bpool_job *job) {
    bround *r = ((bround_job *)job)->round;
    bsub *bs = r->bs;
    eddy__run run;
    run.n = 0;
    long long first_at = 0;
    for (size_t i; (i = atomic_fetch_add(&r->next, 1)) < r->n;) {
        /* The clock is read every RUN_CLOCK_EVERY outcomes (it showed in the profile). */
        if (run.n > 0 && run.n % RUN_CLOCK_EVERY == 0 && eddy__mono_ms() - first_at >= RUN_WAIT_MS)
            finish_run(bs, run.v, &run.n);
        eddy__ran ran = eddy__consumer_run(bs->consumer, &run, r->v[i]);
        if (ran == EDDY__RAN_KEPT && run.n == 1)
            first_at = eddy__mono_ms();
        else if (ran == EDDY__RAN_FULL)
            finish_run(bs, run.v, &run.n);
    }
    finish_run(bs, run.v, &run.n);
    if (atomic_fetch_sub(&r->jobs_left, 1) == 1)
        free(r);
}

static void wait_settled(bsub *bs) {
    pthread_mutex_lock(&bs->lock);
    while (eddy__consumer_outstanding(bs->consumer) > 0)
        pthread_cond_wait(&bs->settled, &bs->lock);
    pthread_mutex_unlock(&bs->lock);
}

/* A round that failed: the connection's failure (`lost`, err says why), or the consumer's to
 * make sense of the replies (err NULL). Logged unless a stop or a pause's cut; what the feed
 * handed out before it failed is dropped (AtLeastOnce: pending, it comes back), and the consumer
 * reset. True when st is such a failure. */
static bool round_failed(bsub *bs, eddy_status st, const eddy_error *lost,
                         eddy__delivery_list *out) {
    if (st != EDDY_ERR_IO && st != EDDY_ERR_CLOSED && st != EDDY_ERR_PROTOCOL)
        return false;
    if (st != EDDY_ERR_CLOSED) /* (the bus's tracker logged a lost connection's state) */
        eddy__log(&bs->bus->s.log, lost ? EDDY_LOG_DEBUG : EDDY_LOG_WARN,
                  "subscription '%s': %s; reconnecting", bs->sub->name,
                  lost ? lost->detail : "a reply of an unexpected shape");
    eddy__consumer_lost(bs->consumer, out);
    return true;
}

static void dispatch(bsub *bs, eddy__delivery_list *out) {
    if (out->n == 0)
        return;
    for (size_t i = 0; i < out->n; i++) {
        out->v[i]->frontend = bs;
        out->v[i]->finish = finish;
    }
    unsigned workers = eddy__bpool_threads(bs->bus->pool);
    size_t want = (out->n + SHARE_MIN - 1) / SHARE_MIN;
    unsigned k = want < workers ? (unsigned)want : workers;
    bround *r = malloc(sizeof(*r) + k * sizeof(bround_job) + out->n * sizeof(*r->v));
    if (!r) {
        /* Out of memory: nothing was handed out, so nothing is settled; AtLeastOnce entries
         * stay pending and come back (AtMostOnce ones are gone, as at-most-once allows). */
        eddy__log(&bs->bus->s.log, EDDY_LOG_WARN,
                  "subscription '%s': out of memory; %zu deliveries dropped", bs->sub->name,
                  out->n);
        eddy__consumer_drop_all(bs->consumer, out);
        return;
    }
    bround_job *jobs = r->jobs;
    r->bs = bs;
    r->n = out->n;
    atomic_init(&r->next, 0);
    atomic_init(&r->jobs_left, k);
    r->v = (eddy_delivery **)(jobs + k);
    memcpy(r->v, out->v, out->n * sizeof(*r->v));
    for (unsigned j = 0; j < k; j++) {
        jobs[j].job.fn = run_round;
        jobs[j].job.next = j + 1 < k ? &jobs[j + 1].job : NULL;
        jobs[j].round = r;
    }
    eddy__bpool_submit(bs->bus->pool, &jobs[0].job, k);
    out->n = 0;
}

/* The bus's discovery found subjects: the other readers that idle take them now (a reader in a
 * blocking read takes them when it ends). */
static void wake_others(bsub *bs) {
    eddy_bus *bus = bs->bus;
    pthread_mutex_lock(&bus->subs_lock);
    for (size_t i = 0; i < bus->nsubs; i++)
        if (bus->subs[i] != bs && !bus->subs[i]->sub->literal)
            kick(bus->subs[i]);
    pthread_mutex_unlock(&bus->subs_lock);
}

/* A start waiting for this reader need not wait out a refusal. */
static void note_refused(bsub *bs, const eddy_error *err) {
    pthread_mutex_lock(&bs->lock);
    if (!bs->ready) {
        bs->refused = *err;
        pthread_cond_broadcast(&bs->settled);
    }
    pthread_mutex_unlock(&bs->lock);
}

/* What a round's replies told: subjects found, readiness, deliveries for the workers. */
static void after_feed(bsub *bs, eddy__delivery_list *out, unsigned news) {
    if (news & EDDY__FED_FOUND)
        wake_others(bs);
    if (news & EDDY__FED_READY) {
        pthread_mutex_lock(&bs->lock);
        bs->ready = true;
        pthread_cond_broadcast(&bs->settled);
        pthread_mutex_unlock(&bs->lock);
    }
    dispatch(bs, out);
}

/* Sends one plan, feeds the replies and takes what they told (after_feed); the failure when the connection failed (EDDY_ERR_CLOSED:
 * a stop, or a pause that cut a blocking read short), or EDDY_ERR_NOMEM when nothing could be
 * sent (the consumer is reset: it plans what the round held again). */
static eddy_status round_trip(bsub *bs, eddy__plan *plan, eddy__delivery_list *out) {
    eddy_error err;
    redisReply *small[16];
    redisReply **replies = plan->cmds.n <= 16 ? small : calloc(plan->cmds.n, sizeof(*replies));
    if (!replies) { /* nothing was sent: the core plans the round again, as after a loss */
        eddy__consumer_reset(bs->consumer);
        return EDDY_ERR_NOMEM;
    }
    eddy_status st = eddy__bconn_exec_read(&bs->conn, &plan->cmds, plan->block_ms, plan->live_read,
                                           replies, &err);
    bool lost = st != EDDY_OK;
    unsigned news = 0;
    if (st == EDDY_OK)
        st = eddy__consumer_fed(bs->consumer, eddy__mono_ms(), eddy_now_ms(), plan, replies,
                                plan->cmds.n, false, out, &news);
    eddy__bconn_release(&bs->conn, replies, plan->cmds.n);
    if (replies != small)
        free(replies);
    if (round_failed(bs, st, lost ? &err : NULL, out))
        return st;
    after_feed(bs, out, news);
    return EDDY_OK;
}

/* Stopping: the running handlers finish, then what they settled is acknowledged. The stop may
 * have dropped the connection in the middle of a read: one attempt at a new one. */
static void flush_settled(bsub *bs, eddy__delivery_list *out) {
    wait_settled(bs);
    eddy_error err;
    if (eddy__consumer_next(bs->consumer, eddy__mono_ms(), true, &bs->plan) < 0 &&
        eddy__bconn_connect(&bs->conn, &err) == EDDY_OK)
        round_trip(bs, &bs->plan, out);
    eddy__plan_reset(&bs->plan);
}

/* The subscription's own reader thread: for the whole activation, or (shared reads) while its
 * plans block, starting with the plan the read thread handed it. */
static void *reader(void *arg) {
    bsub *bs = arg;
    eddy__plan *plan = &bs->plan;
    eddy__delivery_list out = {0};
    while (!atomic_load(&bs->stopping)) {
        eddy_error err;
        eddy_status cst = EDDY_OK;
        if (!eddy__bconn_connected(&bs->conn) &&
            (cst = eddy__bconn_connect(&bs->conn, &err)) != EDDY_OK) {
            /* The bus's tracker logs the state this makes, once. */
            eddy__log(&bs->bus->s.log, EDDY_LOG_DEBUG, "subscription '%s': %s", bs->sub->name,
                      err.detail);
            if (eddy__conn_refused(cst))
                note_refused(bs, &err);
            eddy__bconn_backoff(&bs->conn);
            continue;
        }
        if (bs->handed) {
            bs->handed = false; /* the read thread planned it (and cleared the wake flags) */
        } else {
            eddy__bconn_wake_clear(&bs->conn); /* the plan sees every pause and resume so far */
            long long wait = eddy__consumer_next(bs->consumer, eddy__mono_ms(), false, plan);
            if (bs->share) /* a hot stream that went quiet watches again */
                eddy__bshare_watched(bs->share, eddy__consumer_wakeup_replan(bs->consumer));
            if (bs->share && eddy__consumer_gives_back(bs->consumer, wait)) {
                /* Idle and quiet: back to the shared reads, without this thread or connection. */
                eddy__bconn_close(&bs->conn);
                if (eddy__bshare_give_back(bs->share, bs, eddy__mono_ms() + wait)) {
                    eddy__delivery_list_free(&out);
                    return NULL;
                }
                continue; /* it is leaving: stopping is set */
            }
            if (wait >= 0) {
                eddy__bconn_sleep(&bs->conn, wait);
                continue;
            }
        }
        eddy_status st = round_trip(bs, plan, &out);
        if (st == EDDY_ERR_NOMEM) /* the connection is fine */
            eddy__bconn_sleep(&bs->conn, EDDY__NOMEM_RETRY_MS);
        else if (st != EDDY_OK && st != EDDY_ERR_CLOSED && !atomic_load(&bs->stopping))
            eddy__bconn_backoff(&bs->conn); /* (a read cut short by a pause: nothing failed) */
    }
    if (bs->handed) { /* a stop came before the plan handed over could be sent */
        bs->handed = false;
        eddy__consumer_reset(bs->consumer);
    }
    flush_settled(bs, &out);
    eddy__delivery_list_free(&out);
    return NULL;
}

/* Hands bs, whose plan blocks, to a reader thread of its own with that plan. When none can be
 * started the plan is dropped, as after a lost connection, and tried again a little later. */
static void go_own(bshare *s, bsub *bs, long long now) {
    if (eddy__bshare_own(s, bs, reader))
        return;
    eddy__consumer_reset(bs->consumer);
    bs->next_at = now + EDDY__NOMEM_RETRY_MS;
}

void eddy__bsub_round_shared(bshare *s, bconn *conn, bsub **v, size_t n) {
    long long now = eddy__mono_ms();
    eddy_error err;
    eddy_status cst = EDDY_OK;
    if (!eddy__bconn_connected(conn) && (cst = eddy__bconn_connect(conn, &err)) != EDDY_OK) {
        long long wait = eddy__reconnect_wait_ms(&conn->gate, now);
        eddy__log(&v[0]->bus->s.log, EDDY_LOG_DEBUG, "shared read connection: %s", err.detail);
        for (size_t i = 0; i < n; i++) {
            if (eddy__conn_refused(cst))
                note_refused(v[i], &err);
            v[i]->next_at = now + (wait > 0 ? wait : 0);
        }
        return;
    }
    /* Plans: each one's, or none; those with commands go out together. */
    const eddy__cmdlist **lists = malloc(n * sizeof(*lists));
    bsub **sent = malloc(n * sizeof(*sent));
    size_t k = 0;
    bool cut = false;
    for (size_t i = 0; i < n; i++) {
        bsub *bs = v[i];
        bs->next_at = now;                 /* by default, plan again at once (say, after a round) */
        eddy__bconn_wake_clear(&bs->conn); /* the plan sees every pause and resume so far */
        long long wait = !lists || !sent ? EDDY__NOMEM_RETRY_MS
                                         : eddy__consumer_next(bs->consumer, now, false, &bs->plan);
        cut |= eddy__consumer_wakeup_replan(bs->consumer);
        if (wait >= 0)
            bs->next_at = now + wait;
        else if (eddy__plan_goes_own(&bs->plan))
            go_own(s, bs, now);
        else
            lists[k] = &bs->plan.cmds, sent[k++] = bs;
    }
    eddy__bshare_watched(s, cut);
    eddy__cmdlist view;
    eddy__cmdlist_init(&view);
    redisReply **replies = NULL;
    eddy_status st = k == 0 ? EDDY_OK : eddy__cmdlist_view(&view, lists, k);
    if (st == EDDY_OK && k > 0 && !(replies = calloc(view.n, sizeof(*replies))))
        st = EDDY_ERR_NOMEM;
    if (st == EDDY_OK && k > 0)
        st = eddy__bconn_exec_read(conn, &view, -1, false, replies, &err);
    if (st != EDDY_OK) {
        /* Nothing sent (out of memory), or the connection failed: each plans its round again. */
        long long wait =
            st == EDDY_ERR_NOMEM ? EDDY__NOMEM_RETRY_MS : eddy__reconnect_wait_ms(&conn->gate, now);
        if (st != EDDY_ERR_NOMEM && st != EDDY_ERR_CLOSED)
            eddy__log(&v[0]->bus->s.log, EDDY_LOG_DEBUG, "shared read connection: %s", err.detail);
        for (size_t j = 0; j < k; j++) {
            eddy__consumer_reset(sent[j]->consumer);
            sent[j]->next_at = now + (wait > 0 ? wait : 0);
        }
        k = 0;
    }
    eddy__delivery_list out = {0};
    long long mono = eddy__mono_ms(), wall = eddy_now_ms();
    for (size_t j = 0, at = 0; j < k; j++) {
        bsub *bs = sent[j];
        size_t m = bs->plan.cmds.n;
        unsigned news;
        eddy_status fst = eddy__consumer_fed(bs->consumer, mono, wall, &bs->plan, replies + at, m,
                                             false, &out, &news);
        at += m;
        if (!round_failed(bs, fst, NULL, &out))
            after_feed(bs, &out, news);
    }
    if (replies)
        eddy__bconn_release(conn, replies, view.n);
    eddy__delivery_list_free(&out);
    eddy__cmdlist_view_free(&view);
    free(replies);
    free(lists);
    free(sent);
}

/* A bus with share_reads_from subscriptions or more shares its reads (share.h): *out is the
 * bus's share, made and started with the first subscription that shares; NULL when this one
 * reads alone (so do those started before the bus had that many). */
static eddy_status share_for(eddy_bus *bus, bshare **out, eddy_error *err) {
    *out = NULL;
    if (!eddy__wakeup_wanted(bus->s.share_reads_from, bus->nsubs))
        return EDDY_OK;
    if (!bus->share && !(bus->share = eddy__bshare_new(bus)))
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    eddy_status st = eddy__bshare_start(bus->share, err);
    if (st == EDDY_OK)
        *out = bus->share;
    return st;
}

eddy_status eddy__bsub_start(bsub *bs, eddy_error *err) {
    eddy_bus *bus = bs->bus;
    if (eddy__bconn_use_arena(&bs->conn) != EDDY_OK)
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    bs->consumer = eddy__consumer_new(&bus->s, bs->sub);
    if (!bs->consumer)
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    eddy__consumer_share_discovery(bs->consumer, bus->discovery);
    atomic_store(&bs->stopping, false);
    bs->ready = false;
    bs->refused.status = EDDY_OK;
    bs->handed = false;
    eddy__bconn_resume(&bs->conn);
    bshare *share;
    eddy_status st = share_for(bus, &share, err);
    pthread_mutex_lock(&bus->subs_lock); /* kick() reads it there */
    bs->share = share;
    pthread_mutex_unlock(&bus->subs_lock);
    if (share) {
        eddy__consumer_share_wakeup(bs->consumer, eddy__bshare_wakeup(share), bs);
        st = eddy__bshare_attach(share, bs);
        if (st != EDDY_OK)
            eddy__fail(err, st, "out of memory");
    } else if (st == EDDY_OK) {
        if (eddy__bthread_start(&bs->thread, reader, bs) == 0)
            bs->thread_started = true;
        else
            st = eddy__fail(err, EDDY_ERR_NOMEM, "could not start a reader thread");
    }
    if (st != EDDY_OK) {
        eddy__consumer_free(bs->consumer);
        bs->consumer = NULL;
        return st;
    }
    bs->running = true;
    return EDDY_OK;
}

eddy_status eddy__bsub_wait_ready(bsub *bs, eddy_error *err) {
    const eddy__settings *s = &bs->bus->s;
    long long deadline = eddy__mono_ms() + eddy__ready_timeout_ms(s);
    struct timespec at = {(time_t)(deadline / 1000), (long)(deadline % 1000) * 1000000};
    pthread_mutex_lock(&bs->lock);
    while (!bs->ready && bs->refused.status == EDDY_OK)
        if (pthread_cond_timedwait(&bs->settled, &bs->lock, &at) == ETIMEDOUT)
            break;
    bool ready = bs->ready;
    eddy_error refused = bs->refused;
    pthread_mutex_unlock(&bs->lock);
    if (ready)
        return EDDY_OK;
    return eddy__consumer_late_error(bs->consumer, &refused, err);
}

void eddy__bsub_interrupt(bsub *bs) {
    atomic_store(&bs->stopping, true);
    eddy__consumer_stop(bs->consumer); /* what a round in flight reads is not handed out */
    eddy__bconn_interrupt(&bs->conn);
}

void eddy__bsub_stop(bsub *bs) {
    if (!bs->running)
        return;
    eddy__bsub_interrupt(bs);
    bool own = !bs->share || eddy__bshare_detach(bs->share, bs);
    if (bs->thread_started)
        pthread_join(bs->thread, NULL);
    bs->thread_started = false;
    if (!own) { /* the shared reads had it: what its handlers settled is sent from here */
        eddy__delivery_list out = {0};
        flush_settled(bs, &out);
        eddy__delivery_list_free(&out);
    }
    bs->running = false;
    eddy__consumer_free(bs->consumer);
    bs->consumer = NULL;
}

void eddy__bsub_stop_all(eddy_bus *bus) {
    for (size_t i = 0; i < bus->nsubs; i++)
        eddy__bsub_stop(bus->subs[i]);
    if (bus->share)
        eddy__bshare_stop(bus->share);
}

long long eddy__bsub_wake(bsub *bs, eddy__wake how) {
    if (how == EDDY__WAKE_NONE)
        return -1;
    long long kill = eddy__bconn_wake(&bs->conn, how == EDDY__WAKE_READ);
    if (bs->share) /* (a shared read does not block: the next plan sees the change) */
        eddy__bshare_kick(bs->share, bs);
    return kill;
}

void eddy__bsub_kill_read(eddy_bus *bus, long long client_id) {
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    eddy__client_kill_cmd(&cmds, client_id);
    redisReply *reply = NULL;
    eddy_error err;
    /* A failure leaves the shutdown of our own side: the read is still cut, only not in order
     * with what is published next. */
    if (eddy__cmdlist_status(&cmds) == EDDY_OK &&
        eddy__bpub_exec(bus, &cmds, &reply, &err) != EDDY_OK)
        eddy__log(&bus->s.log, EDDY_LOG_DEBUG, "pause: CLIENT KILL failed: %s", err.detail);
    if (reply)
        freeReplyObject(reply);
    eddy__cmdlist_reset(&cmds);
}
