/* SPDX-License-Identifier: BSD-3-Clause */
/* The consumer state machine; the protocol is described in consumer.h.
 *
 * Invariants:
 * - An entry is acknowledged only after its handler succeeded (AtLeastOnce), or together
 *   with its dead-letter copy in one MULTI/EXEC, so it is never both lost and acknowledged.
 * - Acknowledgements leave `acks` for `inflight` when planned and are forgotten only when
 *   their reply arrives; a lost connection puts them back.
 * - A redelivered entry's attempt number is its delivery count from XPENDING after the claim;
 *   a count of 0 means another consumer took it in between, so it is not ours to handle.
 * - A hand-back (AtLeastOnce, EDDY_ERR_UNAVAILABLE) leaves the entry pending like a failure
 *   and sets its delivery count back to attempt - 1 with XCLAIM ... RETRYCOUNT JUSTID (only
 *   while it is still this consumer's: see plan_holds), so the
 *   delivery that was handed back does not count toward max_deliveries. The count stays the
 *   number of counted deliveries so far: every later read or claim adds one before XPENDING is
 *   asked, so it is never 0 when counted. Hand-backs travel like acknowledgements (`holds`,
 *   then `held_inflight` until answered, put back on a lost connection; setting a count twice
 *   is harmless), in the same round trip and before any read, so a read never counts the
 *   entry before its count was set back. XCLAIM also resets the entry's idle time: it comes
 *   back redelivery_idle_ms after the hand-back.
 */
#include "bus/consumer.h"

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus/discovery.h"
#include "bus/requests.h"
#include "bus/wakeup.h"
#include "error.h"
#include "events/entry.h"
#include "events/event_internal.h"
#include "events/fields.h"
#include "events/stream_look.h"
#include "events/subject.h"
#include "keys.h"
#include "link/library.h"
#include "link/link_drive.h"
#include "link/redis.h"
#include "timing.h"
#include "util/reply.h"
#include "util/resp_scan.h"

enum {
    T_ACK = 1,
    T_SHARED_DISCOVER,
    T_DLQ_MULTI,
    T_DLQ_XADD,
    T_DLQ_XACK,
    T_DLQ_EXEC,
    T_DISCOVER,
    T_GROUP,
    T_HISTORY,
    T_CLAIM,
    T_COUNTS,
    T_LIVE,
    T_REPLY,
    T_HOLD,
    T_RETRY,
    T_REFRESH,
    T_LOOK,
    T_SUBJECT,
    T_COMMIT
};

/* How much earlier than planned a retry's entry may be claimed: the XCLAIM that sets its idle
 * time runs a round trip after the plan, so the claim round planned for the retry finds it
 * ready as long as that round trip took less. */
#define RETRY_MARGIN_MS 50

#define ID_MAX 48

/* How many deliveries finished through eddy_delivery_finish are kept to catch a second finish. */
#define FINISHED_KEPT 64

/* A too_large dead letter keeps the values up to this size (attributes), not larger ones. */
#define DLQ_VALUE_KEPT 1024

/* Copies an entry id (or cursor) into a fixed buffer of ID_MAX bytes, cut if longer (Redis
 * ids are at most 41 bytes): snprintf("%s") showed in the profile, once per message. */
static void copy_id(char *dst, const char *src, size_t len) {
    if (len >= ID_MAX)
        len = ID_MAX - 1;
    memcpy(dst, src, len);
    dst[len] = '\0';
}

typedef struct cstream {
    char *subject;
    char *key;
    bool group_ready;
    bool recovered;
    bool in_history; /* asked for in the current history read */
    bool claim_active;
    const char *group_start; /* where a group created on it starts: "$" or "0" */
    bool had_group;          /* its group existed in this activation: creating it again means
                                the server lost it (or the stream) */
    eddy__stream_look look;  /* what was read of it, to tell when the server is behind */
    char history_cursor[ID_MAX];
    char claim_cursor[ID_MAX];
} cstream;

typedef struct fetched {
    size_t stream;
    char id[ID_MAX];
    eddy__cmd raw; /* the entry's field/value pairs */
} fetched;

typedef struct ack {
    size_t stream;
    char id[ID_MAX];
} ack;

/* A transactional handler's success: its outputs and its acknowledgement, one FCALL of the
 * library's commit. */
typedef struct commit {
    size_t stream;
    char id[ID_MAX];
    eddy__emits *emits;
} commit;

/* A hand-back: the entry's delivery count is set back to `count`; or, retry_ms > 0, a failure
 * whose redelivery waits retry_ms (backoff): its idle time is set so that a claim round finds
 * it then. */
typedef struct hold {
    size_t stream;
    char id[ID_MAX];
    unsigned count;
    long long retry_ms;
    long long received_ms; /* when the delivery handed back was taken from a reply */
} hold;

/* A claim refresh on its way: which delivery (compared as a pointer only: it may be settled and
 * freed meanwhile) and when its XCLAIM was planned. */
typedef struct refresh {
    eddy_delivery *d;
    char id[ID_MAX];
} refresh;

typedef struct dlq_item {
    size_t stream;
    char id[ID_MAX];
    eddy__cmd xadd;
    bool malformed;
} dlq_item;

#define VEC(T)                                                                                     \
    struct {                                                                                       \
        T *v;                                                                                      \
        size_t n, cap;                                                                             \
    }

/* Grows a VEC by one slot; false on OOM. */
#define VEC_GROW(vec)                                                                              \
    ((vec).n < (vec).cap || vec_grow((void **)&(vec).v, &(vec).cap, sizeof(*(vec).v)))

static bool vec_grow(void **v, size_t *cap, size_t size) {
    size_t ncap = *cap ? *cap * 2 : 16;
    void *nv = realloc(*v, ncap * size);
    if (!nv)
        return false;
    *v = nv;
    *cap = ncap;
    return true;
}

struct eddy__consumer {
    const eddy__settings *s;
    eddy__sub *sub;
    char *subjects_key;
    char *dlq_key;
    VEC(cstream) streams;
    bool discovered;         /* a pattern subscription looked for subjects at least once */
    eddy__discovery *shared; /* the bus's discovery after the first one (NULL: its own) */
    size_t shared_seen;      /* how far into the shared list it has looked */
    bool found_subjects;     /* a shared discovery it sent found subjects */
    bool told_ready;         /* eddy__consumer_became_ready said so */
    long long now;           /* the plan's clock (CLOCK_MONOTONIC), given by the front end */
    long long fed_ms;        /* the feed's clocks, given by the front end after the replies came */
    long long fed_wall_ms;   /* (wall-clock, for request deadlines) */
    long long next_discovery;
    long long next_claim;
    VEC(long long) retries;  /* when failed deliveries waiting out their backoff are due */
    long long claim_started; /* when the claim round under way began; -1 between rounds */
    long long retry_at;
    bool refusal_told; /* a command refused for its credentials was logged (retry_later) */
    VEC(fetched) waiting;
    bool counts_asked;

    pthread_mutex_t lock; /* guards acks, holds, replies and outstanding (settle: any thread) */
    VEC(ack) acks;
    VEC(hold) holds;
    VEC(eddy__cmd) replies; /* XADDs of replies, sent with the next round trip */
    VEC(commit) commits;    /* transactional successes, sent with the next round trip */
    size_t outstanding;
    eddy_delivery *spare; /* settled deliveries kept for reuse (through `frontend`) */
    eddy_delivery *finished[FINISHED_KEPT]; /* finished through eddy_delivery_finish (ring) */
    size_t finished_next;
    size_t nspare;
    size_t round_base;  /* outstanding when the last feed began: older than its deliveries */
    long long round_at; /* when the round that fed was planned (reader only) */
    char *inbox_prefix; /* "{ns}:inbox:": the only place a reply may go */

    VEC(ack) inflight;
    VEC(commit) commits_inflight; /* until answered; a lost connection puts them back */
    bool library_loaded;          /* the function library's load was sent on this connection */
    VEC(hold) held_inflight;
    VEC(dlq_item) dlq;
    eddy_delivery *held;    /* AtLeastOnce deliveries handlers hold (under lock) */
    VEC(refresh) refreshes; /* claim refreshes planned, until their replies are fed */

    /* The bus-wide wake-up (eddy__consumer_share_wakeup; NULL: blocking reads of its own). */
    eddy__wakeup *wakeup;
    void *owner;        /* the front end's, for the wake-up's callbacks */
    atomic_bool news;   /* a stream it watches may have entries for it: read without blocking */
    size_t watched;     /* streams [0, watched) are watched (0 while paused) */
    bool wake_replan;   /* a watch the wake-up's read in flight does not cover */
    size_t live_asked;  /* COUNT of the last live read planned without blocking, for news */
    bool hot;           /* out of the wake-up: reading with blocking reads of its own */
    bool placed;        /* holds one of the wake-up's hot places (release_place) */
    long long found_at; /* when a live read without BLOCK last found entries (-1: none yet) */

    /* eddy__consumer_stop was called (any thread): a feed hands nothing out. */
    atomic_bool stopping;
};

static bool at_least_once(const eddy__consumer *c) {
    return c->sub->delivery == EDDY_AT_LEAST_ONCE;
}

static bool paused(const eddy__consumer *c) { return atomic_load(&c->sub->paused); }

/* Not handing out what a read returns: AtLeastOnce while paused. The entries stay pending for
 * this consumer and come back through its history on resume. */
static bool withholding(const eddy__consumer *c) { return at_least_once(c) && paused(c); }

/* A stream known when the subscription starts gets its group at "$": only what is published
 * from now on. A stream found later did not exist then (publishers register a subject before
 * its first entry), so everything in it is newer than the subscription: "0". */
static eddy_status add_stream(eddy__consumer *c, const char *subject, const char *group_start) {
    for (size_t i = 0; i < c->streams.n; i++)
        if (strcmp(c->streams.v[i].subject, subject) == 0)
            return EDDY_OK;
    if (!VEC_GROW(c->streams))
        return EDDY_ERR_NOMEM;
    cstream *st = &c->streams.v[c->streams.n];
    memset(st, 0, sizeof(*st));
    st->subject = strdup(subject);
    st->key = eddy__sub_stream_key(c->s->ns, c->sub, subject);
    if (!st->subject || !st->key) {
        free(st->subject);
        free(st->key);
        return EDDY_ERR_NOMEM;
    }
    strcpy(st->history_cursor, "0");
    strcpy(st->claim_cursor, "0-0");
    st->group_start = group_start;
    /* The first look is made when the group is created again; until then the baseline is an
     * empty stream, which what is read live can only exceed (a lower bound, stream_look.h). */
    st->look.looked = true;
    st->recovered = !at_least_once(c); /* NOACK reads leave nothing pending */
    c->streams.n++;
    return EDDY_OK;
}

eddy__consumer *eddy__consumer_new(const eddy__settings *s, eddy__sub *sub) {
    eddy__consumer *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->s = s;
    c->sub = sub;
    pthread_mutex_init(&c->lock, NULL);
    c->claim_started = -1;
    c->subjects_key = eddy__key_subjects(s->ns);
    c->dlq_key = eddy__key_dlq(s->ns, sub->group);
    c->inbox_prefix = eddy__key_inbox(s->ns, "");
    if (!c->subjects_key || !c->dlq_key || !c->inbox_prefix ||
        (sub->literal && add_stream(c, sub->pattern, "$"))) {
        eddy__consumer_free(c);
        return NULL;
    }
    return c;
}

static void drop_waiting(eddy__consumer *c) {
    for (size_t i = 0; i < c->waiting.n; i++)
        eddy__cmd_reset(&c->waiting.v[i].raw);
    c->waiting.n = 0;
    c->counts_asked = false;
}

static void drop_dlq(eddy__consumer *c) {
    for (size_t i = 0; i < c->dlq.n; i++)
        eddy__cmd_reset(&c->dlq.v[i].xadd);
    c->dlq.n = 0;
}

/* Paused: whatever was read and not handed out (claimed entries waiting for their counts,
 * a history read under way) stays pending for this consumer; the history read starts over on
 * resume and finds it, as after a restart. */
static void rewind_history(eddy__consumer *c) {
    drop_waiting(c);
    for (size_t s = 0; s < c->streams.n; s++) {
        cstream *st = &c->streams.v[s];
        st->recovered = !at_least_once(c);
        st->in_history = false;
        strcpy(st->history_cursor, "0");
    }
}

eddy__wake eddy__consumer_pause(eddy__sub *sub, bool pause) {
    if (atomic_exchange(&sub->paused, pause) == pause)
        return EDDY__WAKE_NONE;
    if (!pause)
        return EDDY__WAKE_IDLE;
    return sub->delivery == EDDY_AT_LEAST_ONCE ? EDDY__WAKE_READ : EDDY__WAKE_NONE;
}

void eddy__consumer_share_discovery(eddy__consumer *c, eddy__discovery *d) { c->shared = d; }

void eddy__consumer_share_wakeup(eddy__consumer *c, eddy__wakeup *w, void *owner) {
    c->wakeup = w;
    c->owner = owner;
    c->found_at = -1;
    atomic_store(&c->news, true);
}

void *eddy__consumer_owner(const void *who) { return ((const eddy__consumer *)who)->owner; }

void eddy__consumer_wake(eddy__consumer *c) { atomic_store(&c->news, true); }

bool eddy__consumer_hot(const eddy__consumer *c) { return c->hot; }

bool eddy__consumer_gives_back(const eddy__consumer *c, long long wait) {
    return wait >= 0 && !c->hot;
}

bool eddy__plan_goes_own(const eddy__plan *plan) { return plan->block_ms >= 0; }

bool eddy__consumer_wakeup_replan(eddy__consumer *c) {
    bool replan = c->wake_replan;
    c->wake_replan = false;
    return replan;
}

/* Watches the streams not watched yet; news, so that the next plan reads them once (what came
 * before the wake-up fixed its id for a stream it already knew). */
static eddy_status watch_new_streams(eddy__consumer *c) {
    for (; c->watched < c->streams.n; c->watched++) {
        bool replan = false;
        if (eddy__wakeup_watch(c->wakeup, c->streams.v[c->watched].key, c, &replan) != EDDY_OK)
            return EDDY_ERR_NOMEM;
        c->wake_replan |= replan;
        atomic_store(&c->news, true);
    }
    return EDDY_OK;
}

static void unwatch_streams(eddy__consumer *c) {
    if (c->wakeup && c->watched > 0)
        eddy__wakeup_unwatch(c->wakeup, NULL, c);
    c->watched = 0;
}

/* Hot no more: it watches again. Its hot place stays its own while the front end keeps the
 * connection it read on, until release_place. */
static void cool(eddy__consumer *c) {
    c->hot = false;
    c->found_at = -1;
}

/* Its hot place goes back to the bus's wake-up, for another stream: once a plan idles cold
 * (when both front ends close the connection of its own), on a reset (that connection is
 * gone) and when freed. */
static void release_place(eddy__consumer *c) {
    if (c->placed)
        eddy__wakeup_hot_give(c->wakeup);
    c->placed = false;
}

bool eddy__consumer_found_subjects(eddy__consumer *c) {
    bool found = c->found_subjects;
    c->found_subjects = false;
    return found;
}

void eddy__consumer_free(eddy__consumer *c) {
    if (!c)
        return;
    if (c->shared)
        eddy__discovery_leave(c->shared, c);
    unwatch_streams(c);
    release_place(c);
    for (size_t i = 0; i < c->streams.n; i++) {
        free(c->streams.v[i].subject);
        free(c->streams.v[i].key);
    }
    free(c->streams.v);
    drop_waiting(c);
    free(c->waiting.v);
    drop_dlq(c);
    free(c->dlq.v);
    free(c->acks.v);
    for (size_t i = 0; i < c->commits.n; i++)
        eddy__emits_free(c->commits.v[i].emits);
    free(c->commits.v);
    for (size_t i = 0; i < c->commits_inflight.n; i++)
        eddy__emits_free(c->commits_inflight.v[i].emits);
    free(c->commits_inflight.v);
    free(c->holds.v);
    free(c->held_inflight.v);
    free(c->refreshes.v);
    free(c->retries.v);
    for (size_t i = 0; i < c->replies.n; i++)
        eddy__cmd_reset(&c->replies.v[i]);
    free(c->replies.v);
    free(c->inbox_prefix);
    free(c->inflight.v);
    while (c->spare) {
        eddy_delivery *d = c->spare;
        c->spare = d->frontend;
        free(d);
    }
    for (size_t i = 0; i < FINISHED_KEPT; i++)
        free(c->finished[i]);
    free(c->subjects_key);
    free(c->dlq_key);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

void eddy__plan_init(eddy__plan *p) {
    eddy__cmdlist_init(&p->cmds);
    p->block_ms = -1;
    p->idle_ms = 0;
    p->live_read = false;
}

void eddy__plan_reset(eddy__plan *p) {
    eddy__cmdlist_reset(&p->cmds);
    p->block_ms = -1;
    p->idle_ms = 0;
    p->live_read = false;
}

void eddy__delivery_list_free(eddy__delivery_list *l) {
    free(l->v);
    memset(l, 0, sizeof(*l));
}

/* ---- planning ------------------------------------------------------------------------ */

static eddy__cmd *add(eddy__plan *p, int tag, long arg, const char *verb) {
    eddy__cmd *cmd = eddy__cmdlist_add(&p->cmds, tag, arg);
    if (cmd)
        eddy__cmd_str(cmd, verb);
    return cmd;
}

static eddy_status plan_acks(eddy__consumer *c, eddy__plan *p) {
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < c->acks.n; i++) {
        if (!VEC_GROW(c->inflight)) {
            pthread_mutex_unlock(&c->lock);
            return EDDY_ERR_NOMEM;
        }
        c->inflight.v[c->inflight.n++] = c->acks.v[i];
    }
    c->acks.n = 0;
    pthread_mutex_unlock(&c->lock);
    /* One XACK per stream, with every id settled on it. */
    for (size_t s = 0; s < c->streams.n; s++) {
        eddy__cmd *cmd = NULL;
        for (size_t i = 0; i < c->inflight.n; i++) {
            if (c->inflight.v[i].stream != s)
                continue;
            if (!cmd) {
                if (!(cmd = add(p, T_ACK, (long)s, "XACK")))
                    return EDDY_ERR_NOMEM;
                eddy__cmd_str(cmd, c->streams.v[s].key);
                eddy__cmd_str(cmd, c->sub->group);
            }
            eddy__cmd_str(cmd, c->inflight.v[i].id);
        }
    }
    return EDDY_OK;
}

/* Transactional handlers: one FCALL of the library's commit per success that emitted outputs
 * (see "transactional handlers" above eddy__consumer_emit), behind the library's load when it
 * is the first on this connection. */
static eddy_status plan_commits(eddy__consumer *c, eddy__plan *p) {
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < c->commits.n; i++) {
        if (!VEC_GROW(c->commits_inflight)) {
            memmove(c->commits.v, c->commits.v + i, (c->commits.n - i) * sizeof(*c->commits.v));
            c->commits.n -= i;
            pthread_mutex_unlock(&c->lock);
            return EDDY_ERR_NOMEM;
        }
        c->commits_inflight.v[c->commits_inflight.n++] = c->commits.v[i];
    }
    c->commits.n = 0;
    pthread_mutex_unlock(&c->lock);
    if (c->commits_inflight.n == 0)
        return EDDY_OK;
    if (!c->library_loaded) {
        eddy_status st = eddy__library_load_cmds(&p->cmds);
        if (st != EDDY_OK)
            return st;
        c->library_loaded = true;
    }
    long long maxlen = c->s->stream_maxlen;
    if (maxlen > EDDY__STORE_MAX_COUNT) /* past the function's range it would trim nothing */
        maxlen = EDDY__STORE_MAX_COUNT;
    for (size_t i = 0; i < c->commits_inflight.n; i++) {
        const commit *m = &c->commits_inflight.v[i];
        const eddy__emits *e = m->emits;
        eddy__cmd *cmd = add(p, T_COMMIT, (long)i, "FCALL");
        if (!cmd)
            return EDDY_ERR_NOMEM;
        eddy__cmd_str(cmd, EDDY__COMMIT_FN);
        eddy__cmd_u64(cmd, e->n + 2);
        eddy__cmd_str(cmd, c->streams.v[m->stream].key);
        eddy__cmd_str(cmd, c->subjects_key);
        for (int k = 0; k < e->keys.argc; k++)
            eddy__cmd_arg(cmd, e->keys.argv[k], e->keys.argvlen[k]);
        eddy__cmd_str(cmd, c->sub->group);
        eddy__cmd_str(cmd, m->id);
        eddy__cmd_fmt(cmd, "%lld", maxlen > 0 ? maxlen : 0);
        eddy__cmd_u64(cmd, e->n);
        for (int k = 0; k < e->args.argc; k++)
            eddy__cmd_arg(cmd, e->args.argv[k], e->args.argvlen[k]);
    }
    return EDDY_OK;
}

/* A commit's reply. 1: the outputs were added and the input acknowledged. 0: the input was no
 * longer pending in the group (its commit ran before, its reply lost with a connection; or
 * another consumer, which claimed it after redelivery_idle_ms, committed or dead-lettered it):
 * nothing was added. "Function not found" (the server lost the library: a restart, FUNCTION
 * FLUSH) wrote nothing either, and is sent again behind a load, unless this round loaded it.
 * Any other error wrote nothing: the input stays pending and comes back, like a failure. */
static void feed_commit(eddy__consumer *c, const redisReply *r, long index, bool loaded_here) {
    if (index < 0 || (size_t)index >= c->commits_inflight.n)
        return;
    commit *m = &c->commits_inflight.v[index];
    static const char not_found[] = "ERR Function not found";
    if (r->type == REDIS_REPLY_ERROR && !loaded_here &&
        strncmp(r->str, not_found, sizeof(not_found) - 1) == 0) {
        c->library_loaded = false;
        pthread_mutex_lock(&c->lock);
        bool kept = VEC_GROW(c->commits);
        if (kept) {
            c->commits.v[c->commits.n++] = *m;
            m->emits = NULL;
        }
        pthread_mutex_unlock(&c->lock);
        if (kept)
            return;
    }
    if (r->type == REDIS_REPLY_INTEGER && r->integer == 0)
        eddy__log(&c->s->log, EDDY_LOG_DEBUG,
                  "subscription '%s': entry %s of '%s' was committed already (or acknowledged "
                  "elsewhere): its outputs were not added again",
                  c->sub->name, m->id, c->streams.v[m->stream].subject);
    else if (r->type != REDIS_REPLY_INTEGER)
        eddy__log(&c->s->log, EDDY_LOG_WARN,
                  "subscription '%s': committing entry %s of '%s' failed (nothing was added; it "
                  "stays pending and comes back): %.*s",
                  c->sub->name, m->id, c->streams.v[m->stream].subject,
                  r->type == REDIS_REPLY_ERROR ? (int)r->len : 10,
                  r->type == REDIS_REPLY_ERROR ? r->str : "bad answer");
}

/* One XCLAIM per hand-back: RETRYCOUNT is one value per command. The minimum idle time is how
 * long ago the delivery was taken from its reply (less a millisecond of rounding): the server
 * delivered it before that, so an entry still ours has been idle at least that long, while one
 * another consumer claimed meanwhile (after redelivery_idle_ms, when a handler overran it) was
 * idle for less since that claim, and is left alone. */
static eddy_status plan_holds(eddy__consumer *c, eddy__plan *p) {
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < c->holds.n; i++) {
        if (!VEC_GROW(c->held_inflight)) {
            pthread_mutex_unlock(&c->lock);
            return EDDY_ERR_NOMEM;
        }
        c->held_inflight.v[c->held_inflight.n++] = c->holds.v[i];
    }
    c->holds.n = 0;
    pthread_mutex_unlock(&c->lock);
    long long now = c->now; /* the plan's: the command goes out right after */
    for (size_t i = 0; i < c->held_inflight.n; i++) {
        const hold *h = &c->held_inflight.v[i];
        eddy__cmd *cmd = h->retry_ms > 0 ? add(p, T_RETRY, (long)h->retry_ms, "XCLAIM")
                                         : add(p, T_HOLD, (long)h->stream, "XCLAIM");
        if (!cmd)
            return EDDY_ERR_NOMEM;
        eddy__cmd_str(cmd, c->streams.v[h->stream].key);
        eddy__cmd_str(cmd, c->sub->group);
        eddy__cmd_str(cmd, c->sub->consumer);
        long long idle = now - h->received_ms - 1;
        eddy__cmd_fmt(cmd, "%lld", idle > 0 ? idle : 0);
        eddy__cmd_str(cmd, h->id);
        if (h->retry_ms > 0) {
            /* JUSTID: the delivery count stays; the claim that redelivers it adds one. */
            long long set = (long long)c->s->redelivery_idle_ms - h->retry_ms + RETRY_MARGIN_MS;
            eddy__cmd_str(cmd, "IDLE");
            eddy__cmd_fmt(cmd, "%lld", set > 0 ? set : 0);
        } else {
            eddy__cmd_str(cmd, "RETRYCOUNT");
            eddy__cmd_u64(cmd, h->count);
        }
        eddy__cmd_str(cmd, "JUSTID");
    }
    return EDDY_OK;
}

/* Claim refreshes (AtLeastOnce): an XCLAIM ... JUSTID to this consumer resets a held
 * delivery's idle time, so that no other consumer's claim round takes it while its handler
 * still works. One for each delivery its handler asked for (eddy_delivery_in_progress) and,
 * with settings.claim_refresh, for each held for a third of redelivery_idle_ms since the server
 * last reset its idle time. The minimum idle time is the time since then, less a millisecond
 * (as for a hand-back): an entry still ours has been idle at least that long, while one another
 * consumer claimed meanwhile has not, and is left to it. JUSTID leaves the delivery count. */
static eddy_status plan_refreshes(eddy__consumer *c, eddy__plan *p) {
    if (!at_least_once(c))
        return EDDY_OK;
    long long now = c->now, every = c->s->redelivery_idle_ms / 3;
    eddy_status st = EDDY_OK;
    pthread_mutex_lock(&c->lock);
    c->refreshes.n = 0; /* the last plan's were fed, or forgotten by a reset */
    for (eddy_delivery *d = c->held; d && st == EDDY_OK; d = d->held_next) {
        bool due = d->refresh_asked || (c->s->claim_refresh && now - d->idle_from >= every);
        if (!due || d->refreshing)
            continue;
        eddy__cmd *cmd = NULL;
        if (!VEC_GROW(c->refreshes) || !(cmd = add(p, T_REFRESH, (long)c->refreshes.n, "XCLAIM"))) {
            st = EDDY_ERR_NOMEM;
            break;
        }
        refresh *r = &c->refreshes.v[c->refreshes.n++];
        r->d = d;
        copy_id(r->id, d->entry_id, strlen(d->entry_id));
        eddy__cmd_str(cmd, c->streams.v[d->stream].key);
        eddy__cmd_str(cmd, c->sub->group);
        eddy__cmd_str(cmd, c->sub->consumer);
        long long idle = now - d->idle_from - 1;
        eddy__cmd_fmt(cmd, "%lld", idle > 0 ? idle : 0);
        eddy__cmd_str(cmd, d->entry_id);
        eddy__cmd_str(cmd, "JUSTID");
        d->refresh_asked = false;
        d->refreshing = true;
    }
    pthread_mutex_unlock(&c->lock);
    return st;
}

/* Under lock: the held delivery a refresh was planned for, or NULL when it was settled since. */
static eddy_delivery *refreshed_locked(eddy__consumer *c, const refresh *r) {
    for (eddy_delivery *d = c->held; d; d = d->held_next)
        if (d == r->d && strcmp(d->entry_id, r->id) == 0)
            return d;
    return NULL;
}

/* A refresh's reply: the ids claimed (empty when the entry is no longer ours: acknowledged, or
 * claimed by another consumer after an overrun). A refresh that worked moves idle_from to now,
 * after the server ran it. */
static void feed_refresh(eddy__consumer *c, const redisReply *r, long index) {
    if (index < 0 || (size_t)index >= c->refreshes.n)
        return;
    bool claimed = r->type == REDIS_REPLY_ARRAY && r->elements == 1;
    pthread_mutex_lock(&c->lock);
    eddy_delivery *d = refreshed_locked(c, &c->refreshes.v[index]);
    if (d) {
        d->refreshing = false;
        if (claimed)
            d->idle_from = c->fed_ms;
    }
    pthread_mutex_unlock(&c->lock);
    if (r->type == REDIS_REPLY_ERROR)
        eddy__log(&c->s->log, EDDY_LOG_WARN, "subscription '%s': refreshing a claim failed: %s",
                  c->sub->name, r->str);
    else if (d && !claimed)
        eddy__log(&c->s->log, EDDY_LOG_DEBUG,
                  "subscription '%s': entry %s is no longer this consumer's (another claimed it "
                  "after redelivery_idle_ms)",
                  c->sub->name, c->refreshes.v[index].id);
}

/* Under lock: a delivery handed to a handler, or settled. */
static void hold_delivery_locked(eddy__consumer *c, eddy_delivery *d) {
    d->held = true;
    d->refresh_asked = d->refreshing = false;
    d->idle_from = d->received_ms;
    d->held_prev = NULL;
    d->held_next = c->held;
    if (c->held)
        c->held->held_prev = d;
    c->held = d;
}

static void release_delivery_locked(eddy__consumer *c, eddy_delivery *d) {
    if (!d->held)
        return;
    d->held = false;
    if (d->held_prev)
        d->held_prev->held_next = d->held_next;
    else
        c->held = d->held_next;
    if (d->held_next)
        d->held_next->held_prev = d->held_prev;
}

bool eddy__consumer_in_progress(eddy__consumer *c, eddy_delivery *d) {
    pthread_mutex_lock(&c->lock);
    bool held = d->held;
    if (held)
        d->refresh_asked = true;
    pthread_mutex_unlock(&c->lock);
    return held;
}

static eddy_status plan_replies(eddy__consumer *c, eddy__plan *p) {
    pthread_mutex_lock(&c->lock);
    eddy_status st = EDDY_OK;
    size_t i = 0;
    for (; i < c->replies.n; i++) {
        eddy__cmd *cmd = eddy__cmdlist_add(&p->cmds, T_REPLY, 0);
        if (!cmd) {
            st = EDDY_ERR_NOMEM;
            break;
        }
        *cmd = c->replies.v[i]; /* the plan owns it now */
    }
    if (i > 0) {
        memmove(c->replies.v, c->replies.v + i, (c->replies.n - i) * sizeof(*c->replies.v));
        c->replies.n -= i;
    }
    pthread_mutex_unlock(&c->lock);
    return st;
}

static eddy_status plan_dead_letters(eddy__consumer *c, eddy__plan *p) {
    for (size_t i = 0; i < c->dlq.n; i++) {
        dlq_item *d = &c->dlq.v[i];
        eddy__cmd *cmd;
        if (!add(p, T_DLQ_MULTI, 0, "MULTI") || !(cmd = eddy__cmdlist_add(&p->cmds, T_DLQ_XADD, 0)))
            return EDDY_ERR_NOMEM;
        *cmd = d->xadd; /* the plan owns it now */
        eddy__cmd_init(&d->xadd);
        if (!(cmd = add(p, T_DLQ_XACK, 0, "XACK")))
            return EDDY_ERR_NOMEM;
        eddy__cmd_str(cmd, c->streams.v[d->stream].key);
        eddy__cmd_str(cmd, c->sub->group);
        eddy__cmd_str(cmd, d->id);
        if (!add(p, T_DLQ_EXEC, d->malformed, "EXEC"))
            return EDDY_ERR_NOMEM;
    }
    drop_dlq(c);
    return EDDY_OK;
}

static void add_group_args(eddy__consumer *c, eddy__cmd *cmd, size_t count) {
    eddy__cmd_str(cmd, "GROUP");
    eddy__cmd_str(cmd, c->sub->group);
    eddy__cmd_str(cmd, c->sub->consumer);
    eddy__cmd_str(cmd, "COUNT");
    eddy__cmd_u64(cmd, count);
}

static long long min_ll(long long a, long long b) { return a < b ? a : b; }

/* The next claim round: the periodic one, or earlier when a failed delivery's backoff ends. */
static long long next_claim_at(const eddy__consumer *c) {
    long long at = c->next_claim;
    for (size_t i = 0; i < c->retries.n; i++)
        at = min_ll(at, c->retries.v[i]);
    return at;
}

/* A claim round that began at `started` found every retry due by then (-1: none ran). */
static void drop_retries_until(eddy__consumer *c, long long started) {
    size_t kept = 0;
    for (size_t i = 0; i < c->retries.n; i++)
        if (started < 0 || c->retries.v[i] > started)
            c->retries.v[kept++] = c->retries.v[i];
    c->retries.n = kept;
}

/* How long until this consumer must plan again for subject discovery. */
static long long discovery_wait(eddy__consumer *c, long long now) {
    if (c->sub->literal)
        return LLONG_MAX;
    if (c->shared && c->discovered) {
        long long due = eddy__discovery_due(c->shared, c);
        return due == LLONG_MAX ? LLONG_MAX : due - now;
    }
    return c->next_discovery - now;
}

static bool take_shared_subject(const char *subject, void *user) {
    eddy__consumer *c = user;
    if (!eddy__pattern_match(c->sub->pattern, subject))
        return true;
    /* Not known at its first discovery, so newer than the subscription: from "0". */
    return add_stream(c, subject, "0") == EDDY_OK; /* OOM: offered again next plan */
}

/* Subjects the bus's discovery listed since this consumer last looked. */
static void take_shared_subjects(eddy__consumer *c) {
    if (c->shared && c->discovered)
        eddy__discovery_each_new(c->shared, &c->shared_seen, take_shared_subject, c);
}

/* ---- the steps of reading, in order -------------------------------------------------------
 *
 * Each step either plans what the round sends (or an idle wait) and so ends the plan, or
 * leaves the plan to the next one: discovery, groups, paused, counts, history, claims, live. */

typedef enum step { STEP_ON, STEP_PLANNED, STEP_NOMEM } step;

static step planned(eddy__plan *p, long long idle_ms) {
    p->idle_ms = idle_ms < 1 ? 1 : idle_ms;
    return STEP_PLANNED;
}

/* A pattern subscription's subject discovery: its own at first (it fixes the start point), then
 * its share of the bus's. */
static step plan_discovery(eddy__consumer *c, long long now, eddy__plan *p) {
    if (c->sub->literal)
        return STEP_ON;
    int tag = 0;
    if (!c->discovered || (!c->shared && now >= c->next_discovery))
        tag = T_DISCOVER;
    else if (c->shared && eddy__discovery_take(c->shared, c, now))
        tag = T_SHARED_DISCOVER;
    if (!tag) {
        take_shared_subjects(c);
        return STEP_ON;
    }
    eddy__cmd *cmd = add(p, tag, 0, "SMEMBERS");
    if (!cmd)
        return STEP_NOMEM;
    eddy__cmd_str(cmd, c->subjects_key);
    return STEP_PLANNED;
}

/* The groups not known to exist (a new stream, a reconnect, a lost group), then a look at each
 * stream whose group is made again: is the server behind what was read (stream_look.h)? */
static step plan_groups(eddy__consumer *c, eddy__plan *p) {
    bool missing = false;
    eddy__cmd *cmd;
    for (size_t s = 0; s < c->streams.n; s++) {
        if (c->streams.v[s].group_ready)
            continue;
        missing = true;
        if (!(cmd = add(p, T_GROUP, (long)s, "XGROUP")))
            return STEP_NOMEM;
        eddy__cmd_str(cmd, "CREATE");
        eddy__cmd_str(cmd, c->streams.v[s].key);
        eddy__cmd_str(cmd, c->sub->group);
        eddy__cmd_str(cmd, c->streams.v[s].group_start);
        eddy__cmd_str(cmd, "MKSTREAM");
        /* A subject that is only subscribed to is in the subject set too, as a published one
         * is: the stop-time clean-up and the retention pass find its groups and consumers
         * there (once an activation: a pattern subscription's subjects come from that set). */
        if (c->sub->literal && !c->streams.v[s].had_group) {
            if (!(cmd = add(p, T_SUBJECT, (long)s, "SADD")))
                return STEP_NOMEM;
            eddy__cmd_str(cmd, c->subjects_key);
            eddy__cmd_str(cmd, c->streams.v[s].subject);
        }
    }
    for (size_t s = 0; missing && s < c->streams.n; s++) {
        if (c->streams.v[s].group_ready || !c->streams.v[s].had_group)
            continue;
        if (!(cmd = add(p, T_LOOK, (long)s, "XINFO")))
            return STEP_NOMEM;
        eddy__cmd_str(cmd, "STREAM");
        eddy__cmd_str(cmd, c->streams.v[s].key);
    }
    return missing ? STEP_PLANNED : STEP_ON;
}

/* Paused: no read, no claim, no count; idle until resumed (the front end is woken then), or
 * until the next subject discovery. */
static step plan_paused(eddy__consumer *c, long long now, eddy__plan *p) {
    if (!paused(c))
        return STEP_ON;
    rewind_history(c);
    unwatch_streams(c); /* a resume watches them again, with news */
    long long wait = c->s->block_ms;
    if (!c->sub->literal)
        wait = min_ll(wait, c->next_discovery - now);
    return planned(p, wait);
}

/* The delivery count of each entry the history or a claim fetched, asked one by one so that
 * other pending entries between them cannot crowd them out of the answer. */
static step plan_counts(eddy__consumer *c, eddy__plan *p) {
    if (c->waiting.n == 0)
        return STEP_ON;
    for (size_t i = 0; i < c->waiting.n; i++) {
        fetched *f = &c->waiting.v[i];
        eddy__cmd *cmd = add(p, T_COUNTS, (long)i, "XPENDING");
        if (!cmd)
            return STEP_NOMEM;
        eddy__cmd_str(cmd, c->streams.v[f->stream].key);
        eddy__cmd_str(cmd, c->sub->group);
        eddy__cmd_str(cmd, f->id);
        eddy__cmd_str(cmd, f->id);
        eddy__cmd_str(cmd, "1");
        eddy__cmd_str(cmd, c->sub->consumer);
    }
    c->counts_asked = true;
    return STEP_PLANNED;
}

/* The consumer's own pending entries (a restart with the same instance name, or a lost
 * connection) come first, from its own history; not while deliveries are outstanding (it
 * could return an entry a handler holds): then it idles `drain`, short, until they settled. */
static step plan_history(eddy__consumer *c, eddy__plan *p, size_t outstanding, long long drain) {
    bool history = false;
    for (size_t s = 0; s < c->streams.n; s++)
        history |= !c->streams.v[s].recovered;
    if (!history)
        return STEP_ON;
    if (outstanding > 0)
        return planned(p, drain);
    eddy__cmd *cmd = add(p, T_HISTORY, -1, "XREADGROUP");
    if (!cmd)
        return STEP_NOMEM;
    add_group_args(c, cmd, c->s->read_batch);
    eddy__cmd_str(cmd, "STREAMS");
    for (size_t s = 0; s < c->streams.n; s++)
        if ((c->streams.v[s].in_history = !c->streams.v[s].recovered))
            eddy__cmd_str(cmd, c->streams.v[s].key);
    for (size_t s = 0; s < c->streams.n; s++)
        if (c->streams.v[s].in_history)
            eddy__cmd_str(cmd, c->streams.v[s].history_cursor);
    return STEP_PLANNED;
}

/* AtLeastOnce: a claim round (XAUTOCLAIM on every stream still in it) when one is due and
 * nothing is outstanding. Live reads go on past a due round while deliveries are outstanding,
 * but not for ever: overdue by redelivery_idle_ms, it idles `drain` until they settled, so a
 * steady flow of slow handlers cannot put redelivery off indefinitely. */
static step plan_claims(eddy__consumer *c, long long now, eddy__plan *p, size_t outstanding,
                        long long drain) {
    long long claim_at = next_claim_at(c);
    if (!at_least_once(c) || now < claim_at || c->streams.n == 0)
        return STEP_ON;
    if (outstanding > 0)
        return now - claim_at >= (long long)c->s->redelivery_idle_ms ? planned(p, drain) : STEP_ON;
    bool any = false;
    for (size_t s = 0; s < c->streams.n; s++) {
        cstream *st = &c->streams.v[s];
        if (!st->claim_active)
            continue;
        any = true;
        if (c->claim_started < 0)
            c->claim_started = now;
        eddy__cmd *cmd = add(p, T_CLAIM, (long)s, "XAUTOCLAIM");
        if (!cmd)
            return STEP_NOMEM;
        eddy__cmd_str(cmd, st->key);
        eddy__cmd_str(cmd, c->sub->group);
        eddy__cmd_str(cmd, c->sub->consumer);
        eddy__cmd_u64(cmd, c->s->redelivery_idle_ms);
        eddy__cmd_str(cmd, st->claim_cursor);
        eddy__cmd_str(cmd, "COUNT");
        eddy__cmd_u64(cmd, c->s->read_batch);
    }
    if (any)
        return STEP_PLANNED;
    /* A claim round over every stream ended: the next one starts after the interval, and
     * every stream takes part in it. */
    unsigned interval = c->s->redelivery_idle_ms / 2 > 10 ? c->s->redelivery_idle_ms / 2 : 10;
    c->next_claim = now + interval;
    drop_retries_until(c, c->claim_started);
    c->claim_started = -1;
    for (size_t s = 0; s < c->streams.n; s++)
        c->streams.v[s].claim_active = true;
    return STEP_ON;
}

/* With the wake-up: how long to idle with no news. Not bounded by block_ms (a wake ends it),
 * only by what the consumer must do by itself, and by EDDY__WOKEN_IDLE_MAX_MS. */
static long long woken_wait(eddy__consumer *c, long long now, size_t outstanding) {
    long long wait = min_ll(EDDY__WOKEN_IDLE_MAX_MS, discovery_wait(c, now));
    if (outstanding > 0)
        wait = min_ll(wait, EDDY__OUTSTANDING_BLOCK_MS);
    else if (at_least_once(c) && c->streams.n > 0)
        wait = min_ll(wait, next_claim_at(c) - now);
    return wait;
}

/* The live read (">") for the room left in the batch, blocking unless allow_block is false;
 * or, with nothing to read from or no room, an idle wait. */
static step plan_live(eddy__consumer *c, long long now, eddy__plan *p, bool allow_block,
                      size_t outstanding, long long drain) {
    long long wait = c->s->block_ms;
    wait = min_ll(wait, discovery_wait(c, now));
    if (outstanding > 0)
        /* The acknowledgements of deliveries settling meanwhile wait for the read to end:
         * keep it short. The claim round waits for them anyway. */
        wait = min_ll(wait, EDDY__OUTSTANDING_BLOCK_MS);
    else if (at_least_once(c) && c->streams.n > 0)
        wait = min_ll(wait, next_claim_at(c) - now); /* (no stream: no claim round) */
    if (wait < 1)
        wait = 1; /* BLOCK 0 would mean forever */
    if (c->streams.n == 0 || outstanding >= c->s->read_batch) {
        if (!allow_block)
            return STEP_PLANNED; /* what was settled goes alone */
        /* Nothing to read from, or no room in the batch: a short wait while deliveries are
         * outstanding (a settle that completes the round ends it sooner). */
        return planned(p, outstanding > 0 ? min_ll(drain, wait) : wait);
    }
    /* Behind dead letters the read does not block (see plan_main): under load it finds the
     * next batch in the same round trip; when it finds nothing, the next plan blocks. Behind
     * acknowledgements, hand-backs, refreshes and replies it blocks: the server runs them
     * before it blocks, so a reply reaches its requester at once and a responder needs one
     * read per request, not two. */
    if (c->wakeup && c->hot)
        unwatch_streams(c); /* blocking reads of its own until one finds nothing (wakeup.h) */
    if (c->wakeup && !c->hot) {
        /* The bus-wide wake-up blocks for every subscription (wakeup.h): no news, no read; the
         * idle wait ends at a wake, or when a claim round or a discovery is due. Behind
         * acknowledgements the read goes without BLOCK, news or not. */
        if (watch_new_streams(c) != EDDY_OK)
            return STEP_NOMEM;
        if (allow_block && p->cmds.n == 0 && !atomic_exchange(&c->news, false))
            return planned(p, woken_wait(c, now, outstanding));
        allow_block = false;
    }
    eddy__cmd *cmd = add(p, T_LIVE, -1, "XREADGROUP");
    if (!cmd)
        return STEP_NOMEM;
    add_group_args(c, cmd, c->s->read_batch - outstanding);
    c->live_asked = c->s->read_batch - outstanding;
    if (allow_block) {
        eddy__cmd_str(cmd, "BLOCK");
        eddy__cmd_u64(cmd, (unsigned long long)wait);
        p->block_ms = wait;
    }
    if (!at_least_once(c))
        eddy__cmd_str(cmd, "NOACK");
    eddy__cmd_str(cmd, "STREAMS");
    for (size_t s = 0; s < c->streams.n; s++)
        eddy__cmd_str(cmd, c->streams.v[s].key);
    for (size_t s = 0; s < c->streams.n; s++)
        eddy__cmd_str(cmd, ">");
    p->live_read = true;
    return STEP_PLANNED;
}

/* The steps in order, until one plans. allow_block is false when dead letters go first: a
 * blocking read is never sent behind them, so a stop that cuts the read short loses no
 * MULTI/EXEC reply the core needs (a lost one would dead-letter the entry twice; a live read
 * behind them is planned without BLOCK). What else may go first is idempotent or need not
 * be answered: an acknowledgement, hand-back or refresh whose reply a cut read loses is sent
 * again after the reset (XACK and XCLAIM ... JUSTID are idempotent; a commit of emitted outputs
 * answers 0 and adds nothing once its input is no longer pending), and a reply (XADD to the
 * requester's stream) was run by the server before it blocked.
 * outstanding: deliveries handed out and not settled when the plan began. While there are any,
 * only live reads (">", which never return an entry a handler holds) are planned, for the room
 * left in the batch; the history, claims and counts wait until they are settled, since those
 * could return an entry a handler still holds. */
static eddy_status plan_main(eddy__consumer *c, long long now, eddy__plan *p, bool allow_block,
                             size_t outstanding) {
    if (now < c->retry_at) {
        p->idle_ms = c->retry_at - now;
        return EDDY_OK;
    }
    step st = plan_discovery(c, now, p);
    /* How long to idle while the history or an overdue claim round waits for the outstanding
     * deliveries: short, and it goes on once they settled. */
    long long drain = min_ll(EDDY__OUTSTANDING_BLOCK_MS, c->s->block_ms);
    drain = min_ll(drain, discovery_wait(c, now));
    if (st == STEP_ON)
        st = plan_groups(c, p);
    if (st == STEP_ON)
        st = plan_paused(c, now, p);
    if (st == STEP_ON)
        st = plan_counts(c, p);
    if (st == STEP_ON)
        st = plan_history(c, p, outstanding, drain);
    if (st == STEP_ON)
        st = plan_claims(c, now, p, outstanding, drain);
    if (st == STEP_ON)
        st = plan_live(c, now, p, allow_block, outstanding, drain);
    return st == STEP_NOMEM ? EDDY_ERR_NOMEM : EDDY_OK;
}

/* Acknowledgements, hand-backs, replies and dead letters first; then, unless only those are
 * wanted, the next step of reading. */
static eddy_status plan(eddy__consumer *c, long long now_ms, eddy__plan *p, bool with_main) {
    c->now = now_ms;
    pthread_mutex_lock(&c->lock);
    size_t outstanding = c->outstanding; /* settles may lower it meanwhile */
    bool round_unsettled = outstanding > c->round_base;
    pthread_mutex_unlock(&c->lock);
    if (with_main && round_unsettled && now_ms - c->round_at < EDDY__ROUND_WAIT_MS) {
        /* The last round's deliveries are being handled: wait for them (the settle of the last
         * one wakes the front end), so their acknowledgements go out together, as one batch,
         * and the next read is a full one. Only a handler that takes longer lets the reading
         * go on beside it. */
        p->idle_ms = c->round_at + EDDY__ROUND_WAIT_MS - now_ms;
        return EDDY_OK;
    }
    eddy_status st = plan_acks(c, p);
    if (st == EDDY_OK)
        st = plan_commits(c, p);
    if (st == EDDY_OK)
        st = plan_holds(c, p);
    if (st == EDDY_OK)
        st = plan_refreshes(c, p);
    if (st == EDDY_OK)
        st = plan_replies(c, p);
    size_t before_dlq = p->cmds.n;
    if (st == EDDY_OK)
        st = plan_dead_letters(c, p);
    if (st == EDDY_OK && with_main)
        st = plan_main(c, now_ms, p, p->cmds.n == before_dlq, outstanding);
    if (st == EDDY_OK)
        st = eddy__cmdlist_status(&p->cmds);
    return st;
}

eddy_status eddy__consumer_plan(eddy__consumer *c, long long now_ms, eddy__plan *p) {
    eddy_status st = plan(c, now_ms, p, true);
    if (st == EDDY_OK && p->cmds.n == 0 && !c->hot)
        release_place(c);
    return st;
}

eddy_status eddy__consumer_plan_flush(eddy__consumer *c, long long now_ms, eddy__plan *p) {
    return plan(c, now_ms, p, false);
}

long long eddy__consumer_next(eddy__consumer *c, long long now_ms, bool stopping, eddy__plan *p) {
    eddy__plan_reset(p);
    eddy_status st =
        stopping ? eddy__consumer_plan_flush(c, now_ms, p) : eddy__consumer_plan(c, now_ms, p);
    if (st != EDDY_OK) {
        eddy__plan_reset(p); /* a part of a round is not sent: the next plan holds it again */
        return EDDY__NOMEM_RETRY_MS;
    }
    return p->cmds.n > 0 ? -1 : stopping ? 0 : p->idle_ms;
}

/* ---- interpreting replies -------------------------------------------------------------- */

/* A command failed: plan again after the longest reconnect backoff. Refused credentials
 * (NOPERM: an ACL that no longer allows it; NOAUTH) are said once, until a read succeeds again:
 * retrying cannot help until someone changes the server. */
static void retry_later(eddy__consumer *c, const char *what, const redisReply *r) {
    bool refused = eddy__reply_refuses_credentials(r);
    if (!refused || !c->refusal_told)
        eddy__log(&c->s->log, refused ? EDDY_LOG_ERROR : EDDY_LOG_WARN,
                  "subscription '%s': %s failed: %.*s%s", c->sub->name, what,
                  r && r->type == REDIS_REPLY_ERROR ? (int)r->len : 10,
                  r && r->type == REDIS_REPLY_ERROR ? r->str : "bad answer",
                  refused ? "; retrying, not logged again until it works" : "");
    c->refusal_told |= refused;
    c->retry_at = c->now + c->s->reconnect_max_ms;
}

/* The stream or its group is gone: NOGROUP, or (Redis 7) a blocked read ended because its
 * stream was deleted under it. */
static bool is_nogroup(const redisReply *r) {
    static const char unblocked[] = "UNBLOCKED the stream key no longer exists";
    return r && r->type == REDIS_REPLY_ERROR &&
           (strncmp(r->str, "NOGROUP", 7) == 0 ||
            strncmp(r->str, unblocked, sizeof(unblocked) - 1) == 0);
}

static void queue_dead_letter(eddy__consumer *c, size_t stream, const char *id, const char **fv,
                              const size_t *fvlen, size_t nfv, unsigned deliveries,
                              const char *reason) {
    if (!VEC_GROW(c->dlq))
        return; /* stays pending; dead-lettered on a later claim */
    dlq_item *d = &c->dlq.v[c->dlq.n];
    d->stream = stream;
    copy_id(d->id, id, strlen(id));
    d->malformed = strcmp(reason, EDDY_REASON_MAX_DELIVERIES) != 0;
    eddy__cmd_init(&d->xadd);
    eddy__cmd *x = &d->xadd;
    eddy__cmd_str(x, "XADD");
    eddy__cmd_str(x, c->dlq_key);
    eddy__cmd_str(x, "*");
    eddy__cmd_str(x, "_dlq_subject");
    eddy__cmd_str(x, c->streams.v[stream].subject);
    eddy__cmd_str(x, "_dlq_entry");
    eddy__cmd_str(x, id);
    eddy__cmd_str(x, "_dlq_deliveries");
    eddy__cmd_u64(x, deliveries);
    eddy__cmd_str(x, "_dlq_reason");
    eddy__cmd_str(x, reason);
    eddy__cmd_str(x, "_dlq_group");
    eddy__cmd_str(x, c->sub->group);
    if (strcmp(reason, EDDY_REASON_TOO_LARGE) == 0) {
        /* Not its payload: the entry's size, its field names, and the values small enough
         * to tell what it was (attributes); a larger one (or one the transport skipped) is
         * a marker with its length (resp_scan.h). Such a dead letter is not replayable. */
        unsigned long long size = 0, skipped;
        for (size_t i = 0; i < nfv; i++)
            size += eddy__resp_skipped(fv[i], fvlen[i], &skipped) ? skipped : fvlen[i];
        eddy__cmd_str(x, "_dlq_size");
        eddy__cmd_u64(x, size);
        for (size_t i = 0; i < nfv; i++) {
            if (i % 2 == 0 || fvlen[i] <= DLQ_VALUE_KEPT ||
                eddy__resp_skipped(fv[i], fvlen[i], NULL)) {
                eddy__cmd_arg(x, fv[i], fvlen[i]);
                continue;
            }
            char marker[EDDY__SKIPPED_PREFIX_LEN + 24];
            memcpy(marker, EDDY__SKIPPED_PREFIX, EDDY__SKIPPED_PREFIX_LEN);
            int n = snprintf(marker + EDDY__SKIPPED_PREFIX_LEN, 24, "%zu", fvlen[i]);
            eddy__cmd_arg(x, marker, EDDY__SKIPPED_PREFIX_LEN + (size_t)n);
        }
    } else {
        /* The original fields follow unchanged, so the dead letter can be inspected or
         * replayed; the decoder skips the '_'-prefixed fields above. */
        for (size_t i = 0; i < nfv; i++)
            eddy__cmd_arg(x, fv[i], fvlen[i]);
    }
    if (eddy__cmd_status(x) != EDDY_OK) {
        eddy__cmd_reset(x);
        return;
    }
    c->dlq.n++;
    eddy__log(&c->s->log, EDDY_LOG_WARN,
              "subscription '%s': entry %s of '%s' dead-lettered (%s, %u deliveries)", c->sub->name,
              id, c->streams.v[stream].subject, reason, deliveries);
}

/* Deliveries settled from their handler's return are reused: no allocation per message once
 * it runs. One finished through eddy_delivery_finish is never reused: it is kept, finished, among
 * the last FINISHED_KEPT such deliveries of the consumer, where a second finish (a misuse) finds
 * finished_again instead of a live delivery, and is logged and ignored; once pushed out, it is
 * freed, so that a finish later still meets freed memory, which sanitizers report. A spare
 * delivery carries finished_again too until it is handed out again. */
#define SPARE_DELIVERIES_MAX 512

static void finished_again(eddy_delivery *d, eddy_status st, eddy_event *reply) {
    (void)st;
    eddy_event_free(reply);
    const eddy__consumer *c = d->consumer;
    eddy__log(&c->s->log, EDDY_LOG_ERROR,
              "subscription '%s': entry %s of '%s' was finished again (eddy_delivery_finish or "
              "eddy_delivery_reply called twice, or after its handler returned a result); the "
              "call is ignored",
              d->sub_name, d->entry_id, d->subject);
}

bool eddy__consumer_finished(const eddy_delivery *d) { return d->finish == finished_again; }

/* Under the lock: keeps a delivery its finish settled; returns the one it pushes out (to free),
 * or NULL. */
static eddy_delivery *keep_finished_locked(eddy__consumer *c, eddy_delivery *d) {
    d->finish = finished_again;
    d->frontend = NULL;
    eddy_delivery *out = c->finished[c->finished_next];
    c->finished[c->finished_next] = d;
    c->finished_next = (c->finished_next + 1) % FINISHED_KEPT;
    return out;
}

static eddy_delivery *new_delivery(eddy__consumer *c) {
    pthread_mutex_lock(&c->lock);
    eddy_delivery *d = c->spare;
    if (d) {
        c->spare = d->frontend;
        c->nspare--;
    }
    pthread_mutex_unlock(&c->lock);
    if (!d)
        return calloc(1, sizeof(*d));
    memset(d, 0, sizeof(*d));
    return d;
}

/* Decodes an entry and hands it out, or dead-letters it. */
static void take_entry(eddy__consumer *c, size_t stream, const char *id, const char **fv,
                       const size_t *fvlen, size_t nfv, unsigned attempt,
                       eddy__delivery_list *out) {
    if (attempt > c->s->max_deliveries) {
        queue_dead_letter(c, stream, id, fv, fvlen, nfv, attempt - 1, EDDY_REASON_MAX_DELIVERIES);
        return;
    }
    eddy_event *ev = NULL;
    eddy_error err;
    eddy_status st = eddy__entry_decode(fv, fvlen, nfv, c->s->max_event_size, &ev, &err);
    if (st == EDDY_ERR_NOMEM)
        return; /* stays pending */
    if (st != EDDY_OK) {
        eddy__log(&c->s->log, EDDY_LOG_WARN, "subscription '%s': entry %s: %s", c->sub->name, id,
                  err.detail);
        queue_dead_letter(c, stream, id, fv, fvlen, nfv, attempt,
                          st == EDDY_ERR_TOO_LARGE ? EDDY_REASON_TOO_LARGE : EDDY_REASON_MALFORMED);
        return;
    }
    size_t rlen = 0, ilen = 0, dlen = 0;
    const char *reply_to = eddy__entry_field(fv, fvlen, nfv, EDDY__F_REPLY_TO, &rlen);
    const char *req_id = eddy__entry_field(fv, fvlen, nfv, EDDY__F_REQUEST, &ilen);
    const char *deadline = eddy__entry_field(fv, fvlen, nfv, EDDY__F_DEADLINE, &dlen);
    long long deadline_ms = deadline && dlen < 24 ? atoll(deadline) : 0;
    if (c->sub->responder && reply_to && deadline_ms > 0 && c->fed_wall_ms > deadline_ms) {
        /* Nobody waits for it any more: answering would only produce an Unclaimed reply. */
        atomic_fetch_add(&c->sub->stats.expired, 1);
        eddy_event_free(ev);
        return;
    }
    eddy_delivery *d = new_delivery(c);
    if (!d || (out->n == out->cap && !vec_grow((void **)&out->v, &out->cap, sizeof(*out->v))) ||
        (reply_to &&
         (!req_id || ilen >= sizeof(d->request_id) || !(d->reply_to = strndup(reply_to, rlen))))) {
        if (d)
            free(d->reply_to);
        free(d);
        eddy_event_free(ev);
        return; /* stays pending (AtLeastOnce); a request without an id is not answerable */
    }
    size_t slen = 0, vlen = 0, plen = 0;
    const char *sid = eddy__entry_field(fv, fvlen, nfv, EDDY__F_STREAM, &slen);
    const char *ver = eddy__entry_field(fv, fvlen, nfv, EDDY__F_VERSION, &vlen);
    const char *pos = eddy__entry_field(fv, fvlen, nfv, EDDY__F_POSITION, &plen);
    if (sid && ver && pos && vlen < 24 && plen < 24 && (d->stream_id = strndup(sid, slen))) {
        d->version = atoll(ver);
        d->position = atoll(pos);
    }
    if (reply_to) {
        memcpy(d->request_id, req_id, ilen);
        d->request_id[ilen] = '\0';
        d->deadline = deadline_ms;
    }
    d->ev = ev;
    d->subject = c->streams.v[stream].subject;
    d->sub_name = c->sub->name;
    copy_id(d->entry_id, id, strlen(id));
    d->attempt = attempt;
    d->stream = stream;
    d->received_ms = c->fed_ms;
    d->consumer = c;
    out->v[out->n++] = d;
    pthread_mutex_lock(&c->lock);
    c->outstanding++;
    if (at_least_once(c))
        hold_delivery_locked(c, d);
    pthread_mutex_unlock(&c->lock);
}

static void queue_ack(eddy__consumer *c, size_t stream, const char *id) {
    pthread_mutex_lock(&c->lock);
    if (VEC_GROW(c->acks)) {
        ack *a = &c->acks.v[c->acks.n++];
        a->stream = stream;
        copy_id(a->id, id, strlen(id));
    }
    pthread_mutex_unlock(&c->lock);
}

/* Entries straight from a reply: flatten their fields on the stack-or-heap and take them. */
static void take_view(eddy__consumer *c, size_t stream, eddy__entry_view v, unsigned attempt,
                      eddy__delivery_list *out) {
    size_t nfv = v.fields->elements;
    const char *small_fv[32];
    size_t small_len[32];
    const char **fv = nfv <= 32 ? small_fv : malloc(nfv * sizeof(*fv));
    size_t *fvlen = nfv <= 32 ? small_len : malloc(nfv * sizeof(*fvlen));
    if (fv && fvlen && eddy__entry_flatten(v.fields, fv, fvlen))
        take_entry(c, stream, v.id, fv, fvlen, nfv, attempt, out);
    if (nfv > 32) {
        free(fv);
        free(fvlen);
    }
}

static void keep_for_counts(eddy__consumer *c, size_t stream, eddy__entry_view v) {
    if (!VEC_GROW(c->waiting))
        return; /* stays pending; claimed again later */
    fetched *f = &c->waiting.v[c->waiting.n];
    f->stream = stream;
    copy_id(f->id, v.id, v.idlen);
    eddy__cmd_init(&f->raw);
    for (size_t i = 0; i < v.fields->elements; i++)
        eddy__cmd_arg(&f->raw, v.fields->element[i]->str, v.fields->element[i]->len);
    if (eddy__cmd_status(&f->raw) != EDDY_OK) {
        eddy__cmd_reset(&f->raw);
        return;
    }
    c->waiting.n++;
}

static long stream_by_key(eddy__consumer *c, const redisReply *key) {
    for (size_t s = 0; s < c->streams.n; s++)
        if (strlen(c->streams.v[s].key) == key->len &&
            memcmp(c->streams.v[s].key, key->str, key->len) == 0)
            return (long)s;
    return -1;
}

/* Two live reads without BLOCK that find entries this close together make a stream hot: about
 * 100 entries a second or more, where the wake-up's wide read would cost the server a wide
 * read's CPU (wakeup.h) after every few of them. */
#define HOT_WINDOW_MS 10
/* A hot stream's blocking read that waited this long for what it found has slowed down: it goes
 * back to the wake-up. Ten times the window, so a stream near the line does not go back and
 * forth with every entry (each time a connection, and on the blocking front end a thread). */
#define HOT_LEAVE_MS 100

/* XREADGROUP: nil (timeout) or [[key, entries], ...]. */
/* With the wake-up: a full batch is news (there may be more). A stream whose reads without
 * BLOCK find entries twice within HOT_WINDOW_MS is hot, when one of the bus's hot places is
 * free (wakeup.h, EDDY__WAKEUP_HOT_MAX): it leaves the wake-up, whose wide read would otherwise
 * be sent again after each of its entries, and reads with blocking reads of its own until one
 * finds nothing or waited HOT_LEAVE_MS for what it found; it then watches again, with news. A
 * read that finds nothing between the two does not undo the first: behind an acknowledgement
 * the consumer reads without BLOCK, news or not, and on a busy stream that read usually lands
 * between two entries. */
static size_t live_count(const redisReply *r);
static void fed_live(eddy__consumer *c, const eddy__plan *plan, const redisReply *r) {
    if (r->type == REDIS_REPLY_ERROR) { /* tried again at retry_at (retry_later): still news */
        atomic_store(&c->news, true);
        return;
    }
    size_t n = live_count(r);
    if (plan->block_ms >= 0) {
        if (c->hot && (n == 0 || c->fed_ms - c->now >= HOT_LEAVE_MS)) /* c->now: its plan's */
            cool(c);
        return;
    }
    if (n >= c->live_asked)
        atomic_store(&c->news, true);
    if (n == 0)
        return;
    if (c->found_at >= 0 && c->fed_ms - c->found_at <= HOT_WINDOW_MS) {
        /* A place it still holds (cooled, its connection not yet closed) serves again. */
        c->hot = c->placed || eddy__wakeup_hot_take(c->wakeup); /* none free: it stays watched */
        c->placed = c->hot;
        c->found_at = -1;
    } else {
        c->found_at = c->fed_ms;
    }
}

/* The entries of an XREADGROUP reply, over its streams (0 for anything else). */
static size_t live_count(const redisReply *r) {
    size_t n = 0;
    if (r->type != REDIS_REPLY_ARRAY)
        return 0;
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *kv = r->element[i];
        if (kv->type == REDIS_REPLY_ARRAY && kv->elements == 2 &&
            kv->element[1]->type == REDIS_REPLY_ARRAY)
            n += kv->element[1]->elements;
    }
    return n;
}

static eddy_status feed_read(eddy__consumer *c, const redisReply *r, bool history, bool withhold,
                             eddy__delivery_list *out) {
    if (r->type == REDIS_REPLY_NIL)
        return EDDY_OK;
    if (r->type != REDIS_REPLY_ARRAY)
        return EDDY_ERR_PROTOCOL;
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *kv = r->element[i];
        if (kv->type != REDIS_REPLY_ARRAY || kv->elements != 2 ||
            kv->element[0]->type != REDIS_REPLY_STRING ||
            eddy__reply_entries(kv->element[1]) != EDDY_OK)
            return EDDY_ERR_PROTOCOL;
        long s = stream_by_key(c, kv->element[0]);
        if (s < 0)
            continue;
        const redisReply *entries = kv->element[1];
        if (!history)
            eddy__stream_look_read(&c->streams.v[s].look, entries);
        if (history) {
            c->streams.v[s].in_history = false;
            if (entries->elements == 0)
                c->streams.v[s].recovered = true;
        }
        for (size_t e = 0; e < entries->elements; e++) {
            eddy__entry_view v = eddy__reply_entry(entries, e);
            if (history)
                copy_id(c->streams.v[s].history_cursor, v.id, v.idlen);
            if (!v.fields) /* deleted while pending: nothing left to handle */
                queue_ack(c, (size_t)s, v.id);
            else if (withhold)
                continue; /* stays pending; read again from the history on resume */
            else if (history)
                keep_for_counts(c, (size_t)s, v);
            else
                take_view(c, (size_t)s, v, 1, out);
        }
    }
    if (history) /* a stream Redis did not mention has nothing pending */
        for (size_t s = 0; s < c->streams.n; s++)
            if (c->streams.v[s].in_history) {
                c->streams.v[s].in_history = false;
                c->streams.v[s].recovered = true;
            }
    return EDDY_OK;
}

/* XAUTOCLAIM: [cursor, entries, deleted-ids]. */
static eddy_status feed_claim(eddy__consumer *c, size_t s, const redisReply *r, bool withhold) {
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 2 ||
        r->element[0]->type != REDIS_REPLY_STRING || eddy__reply_entries(r->element[1]) != EDDY_OK)
        return EDDY_ERR_PROTOCOL;
    cstream *st = &c->streams.v[s];
    copy_id(st->claim_cursor, r->element[0]->str, r->element[0]->len);
    if (strcmp(st->claim_cursor, "0-0") == 0)
        st->claim_active = false;
    for (size_t e = 0; e < r->element[1]->elements; e++) {
        eddy__entry_view v = eddy__reply_entry(r->element[1], e);
        if (v.fields && !withhold)
            keep_for_counts(c, s, v);
    }
    return EDDY_OK;
}

static void feed_counts(eddy__consumer *c, redisReply **replies, const eddy__plan *plan,
                        eddy__delivery_list *out) {
    for (size_t i = 0; i < plan->cmds.n; i++) {
        if (plan->cmds.tags[i] != T_COUNTS)
            continue;
        fetched *f = &c->waiting.v[plan->cmds.args[i]];
        unsigned attempt = eddy__reply_pending_count(replies[i], f->id);
        if (attempt == 0)
            continue; /* claimed by someone else meanwhile, or acknowledged */
        take_entry(c, f->stream, f->id, eddy__cmd_argv(&f->raw), f->raw.argvlen,
                   (size_t)f->raw.argc, attempt, out);
    }
    drop_waiting(c);
}

/* The consumer's own discovery. The first one fixes its start point, so it counts as done only
 * once every matching subject was added (out of memory: it is made again, still at "$"). */
static void feed_discovery(eddy__consumer *c, const redisReply *r) {
    c->next_discovery = c->now + c->s->discovery_ms;
    if (r->type != REDIS_REPLY_ARRAY) {
        retry_later(c, "subject discovery", r);
        return;
    }
    bool complete = true;
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *subj = r->element[i];
        if (subj->type != REDIS_REPLY_STRING || strlen(subj->str) != subj->len ||
            eddy__subject_check(subj->str, NULL) != EDDY_OK ||
            !eddy__pattern_match(c->sub->pattern, subj->str))
            continue;
        if (add_stream(c, subj->str, c->discovered ? "0" : "$") != EDDY_OK) {
            c->next_discovery = c->now; /* try again next round */
            complete = false;
        }
    }
    c->discovered |= complete;
}

/* The group is there (created now when `made`, else it existed). Made again in this activation:
 * the server lost the group or the whole stream; said once per recovery. */
static void group_created(eddy__consumer *c, cstream *st, bool made) {
    if (made && st->had_group) {
        atomic_fetch_add(&c->sub->stats.recreated, 1);
        eddy__log(&c->s->log, EDDY_LOG_WARN,
                  "subscription '%s': group '%s' of subject '%s' was gone (the server lost it: "
                  "FLUSHALL, a deleted stream, or a restart without its data); created again "
                  "from the stream's start",
                  c->sub->name, c->sub->group, st->subject);
    }
    st->group_ready = true;
    st->had_group = true;
}

/* XINFO STREAM after a group was created again (an error: not allowed, or no such command;
 * the look is skipped). */
static void looked(eddy__consumer *c, cstream *st, const redisReply *r) {
    eddy__stream_behind b;
    if (!eddy__stream_look_feed(&st->look, r, &b) || !b.behind)
        return;
    atomic_fetch_add(&c->sub->stats.lost_writes, b.lost);
    eddy__log(&c->s->log, EDDY_LOG_WARN,
              "subscription '%s': the server is behind on subject '%s' (group '%s'): its last id "
              "is %s where %s was seen, and %llu entries were added where at least %llu were: "
              "%llu writes lost (a restart from an older snapshot, or a FLUSHALL)",
              c->sub->name, st->subject, c->sub->group, b.last_id, b.max_read_id,
              (unsigned long long)b.added, (unsigned long long)b.expected,
              (unsigned long long)b.lost);
}

eddy_status eddy__consumer_feed(eddy__consumer *c, long long now_ms, long long wall_ms,
                                const eddy__plan *plan, redisReply **replies, size_t n,
                                eddy__delivery_list *out) {
    if (n != plan->cmds.n)
        return EDDY_ERR_INVALID_ARGUMENT;
    c->fed_ms = now_ms;
    c->fed_wall_ms = wall_ms;
    for (size_t i = 0; i < n; i++)
        if (!replies[i])
            return EDDY_ERR_IO;
    eddy__sub *sub = c->sub;
    pthread_mutex_lock(&c->lock);
    c->round_base = c->outstanding;
    pthread_mutex_unlock(&c->lock);
    c->round_at = c->now;
    bool withhold = withholding(c); /* paused since the plan: hand nothing out */
    c->inflight.n = 0;              /* every acknowledgement and hand-back got its answer */
    c->held_inflight.n = 0;
    bool loaded_here = false;
    for (size_t i = 0; i < n; i++) {
        const redisReply *r = replies[i];
        long arg = plan->cmds.args[i];
        if (eddy__library_is_load(&plan->cmds, i)) {
            eddy_error e = {0};
            loaded_here = true;
            if (eddy__library_load_result(&plan->cmds, i, replies, NULL, &e) != EDDY_OK) {
                c->library_loaded = false;
                eddy__log(&c->s->log, EDDY_LOG_ERROR,
                          "subscription '%s': loading the function library for its commits "
                          "failed: %s",
                          sub->name, e.detail);
            }
            continue;
        }
        switch (plan->cmds.tags[i]) {
        case T_ACK:
            if (r->type == REDIS_REPLY_ERROR)
                eddy__log(&c->s->log, EDDY_LOG_WARN, "subscription '%s': XACK failed: %s",
                          sub->name, r->str);
            break;
        case T_HOLD:
            /* An array of the ids claimed; empty when the entry was no longer pending (it was
             * acknowledged or deleted meanwhile). On an error the hand-back counted as a
             * failed attempt after all. */
            if (r->type == REDIS_REPLY_ERROR)
                eddy__log(&c->s->log, EDDY_LOG_WARN,
                          "subscription '%s': handing back on '%s' failed (it counts as a "
                          "failed delivery): %s",
                          sub->name, c->streams.v[arg].subject, r->str);
            break;
        case T_REFRESH:
            feed_refresh(c, r, arg);
            break;
        case T_COMMIT:
            feed_commit(c, r, arg, loaded_here);
            break;
        case T_RETRY:
            /* Claimed with its new idle time: a claim round finds it when its wait is over.
             * Otherwise (acknowledged or deleted meanwhile, or an error) it is left as it is:
             * at worst it comes back after redelivery_idle_ms. */
            if (r->type == REDIS_REPLY_ARRAY && r->elements == 1 && VEC_GROW(c->retries))
                c->retries.v[c->retries.n++] = c->now + arg;
            break;
        case T_DLQ_EXEC:
            if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
                r->element[0]->type == REDIS_REPLY_STRING) {
                atomic_fetch_add(&sub->stats.dead_lettered, 1);
                if (arg)
                    atomic_fetch_add(&sub->stats.malformed, 1);
            } else {
                eddy__log(&c->s->log, EDDY_LOG_WARN,
                          "subscription '%s': dead-lettering failed; the entry stays pending",
                          sub->name);
            }
            break;
        case T_DISCOVER:
            feed_discovery(c, r);
            if (c->shared)
                eddy__discovery_feed(c->shared, c, r, c->now); /* share what it found */
            take_shared_subjects(c);
            break;
        case T_SHARED_DISCOVER:
            if (r->type != REDIS_REPLY_ARRAY)
                retry_later(c, "subject discovery", r);
            c->found_subjects |= eddy__discovery_feed(c->shared, c, r, c->now);
            take_shared_subjects(c);
            break;
        case T_REPLY:
            if (r->type == REDIS_REPLY_STRING) {
                atomic_fetch_add(&sub->stats.replied, 1);
            } else {
                /* nil: the reply stream is gone (its process died); or an error reply */
                atomic_fetch_add(&sub->stats.refused, 1);
                if (r->type == REDIS_REPLY_ERROR)
                    eddy__log(&c->s->log, EDDY_LOG_WARN, "subscription '%s': reply refused: %s",
                              sub->name, r->str);
            }
            break;
        case T_GROUP:
            if (r->type != REDIS_REPLY_ERROR || strncmp(r->str, "BUSYGROUP", 9) == 0)
                group_created(c, &c->streams.v[arg], r->type != REDIS_REPLY_ERROR);
            else
                retry_later(c, "XGROUP CREATE", r);
            break;
        case T_LOOK:
            looked(c, &c->streams.v[arg], r);
            break;
        case T_SUBJECT:
            /* Only the clean-up needs it (a publish to the subject adds it too): a refusal is
             * logged, nothing else. */
            if (r->type == REDIS_REPLY_ERROR)
                eddy__log(&c->s->log, EDDY_LOG_DEBUG,
                          "subscription '%s': registering subject '%s' failed: %s", sub->name,
                          c->streams.v[arg].subject, r->str);
            break;
        case T_HISTORY:
        case T_LIVE:
            if (is_nogroup(r)) {
                /* The stream or its group vanished (a restarted Redis without persistence,
                 * or a deleted key): create it again from the subscription's start. */
                for (size_t s = 0; s < c->streams.n; s++) {
                    c->streams.v[s].group_ready = false;
                    c->streams.v[s].group_start = "0";
                }
                break;
            }
            if (r->type == REDIS_REPLY_ERROR ||
                feed_read(c, r, plan->cmds.tags[i] == T_HISTORY, withhold, out) != EDDY_OK)
                retry_later(c, "XREADGROUP", r);
            else
                c->refusal_told = false;
            if (c->wakeup && plan->cmds.tags[i] == T_LIVE)
                fed_live(c, plan, r);
            break;
        case T_CLAIM:
            if (is_nogroup(r)) {
                c->streams.v[arg].group_ready = false;
                c->streams.v[arg].group_start = "0";
            } else if (r->type == REDIS_REPLY_ERROR ||
                       feed_claim(c, (size_t)arg, r, withhold) != EDDY_OK)
                retry_later(c, "XAUTOCLAIM", r);
            break;
        default:
            break;
        }
    }
    for (size_t i = 0; i < c->commits_inflight.n; i++)
        eddy__emits_free(c->commits_inflight.v[i].emits); /* answered (or sent again) */
    c->commits_inflight.n = 0;
    if (withhold)
        rewind_history(c); /* what was withheld stays pending: the history finds it on resume */
    else if (c->counts_asked)
        feed_counts(c, replies, plan, out);
    return EDDY_OK;
}

const char *eddy__consumer_source(const eddy__consumer *c) { return c ? c->s->source : NULL; }

/* ---- settling and resetting ------------------------------------------------------------ */

/* Builds the failure reply: an event of the bus's own, marked with the reserved attribute.
 * Nothing of the responder's failure goes into it. */
static eddy_event *failure_reply(eddy__consumer *c) {
    eddy_event *ev = eddy_event_new();
    char id[33];
    eddy__random_hex(id);
    if (ev && (eddy_event_set_id(ev, id) != EDDY_OK ||
               eddy_event_set_source(ev, c->s->source) != EDDY_OK ||
               eddy_event_set_type(ev, "eddy.reply.failed") != EDDY_OK ||
               eddy_event_set_extension(ev, EDDY__FAILED_ATTR, "true", NULL) != EDDY_OK)) {
        eddy_event_free(ev);
        ev = NULL;
    }
    return ev;
}

/* Builds the reply's XADD to the requester's reply stream (NOMKSTREAM: a reply stream that
 * expired with its process is not created again). Takes the reply. False when it cannot be
 * sent (counted refused). */
static bool build_reply(eddy__consumer *c, const eddy_delivery *d, eddy_event *reply,
                        eddy__cmd *x) {
    eddy__stats *stats = &c->sub->stats;
    if (strncmp(d->reply_to, c->inbox_prefix, strlen(c->inbox_prefix)) != 0) {
        eddy__log(&c->s->log, EDDY_LOG_WARN,
                  "subscription '%s': request %s asks for a reply outside namespace '%s'; "
                  "refused",
                  c->sub->name, d->request_id, c->s->ns);
        atomic_fetch_add(&stats->refused, 1);
        eddy_event_free(reply);
        return false;
    }
    eddy__cmd_init(x);
    eddy__cmd_str(x, "XADD");
    eddy__cmd_str(x, d->reply_to);
    eddy__cmd_str(x, "NOMKSTREAM");
    eddy__cmd_str(x, "MAXLEN");
    eddy__cmd_str(x, "~");
    eddy__cmd_str(x, "10000");
    eddy__cmd_str(x, "*");
    eddy_status st = eddy__entry_encode(reply, x);
    eddy__cmd_str(x, EDDY__F_REQUEST);
    eddy__cmd_str(x, d->request_id);
    eddy_event_free(reply);
    if (st == EDDY_OK && eddy__cmd_status(x) == EDDY_OK)
        return true;
    eddy__cmd_reset(x);
    atomic_fetch_add(&stats->refused, 1); /* out of memory: the caller gets NO_REPLY */
    return false;
}

/* A responder's outcome: the reply to send (or the failure reply), built outside the lock.
 * Takes the reply. */
static void settle_responder(eddy__consumer *c, eddy__settlement *v) {
    eddy__stats *stats = &c->sub->stats;
    eddy_delivery *d = v->d;
    eddy_event *reply = v->reply;
    eddy_status st = v->st;
    eddy_error err = {0};
    v->reply = NULL;
    /* A reply (a failure reply too, below) joins its request's trace unless the responder put
     * it in one of its own. Out of memory (or a malformed context on the request) only leaves
     * it without. */
    if (reply && !eddy_event_extension(reply, EDDY_TRACEPARENT))
        (void)eddy_event_continue_trace(reply, d->ev, NULL);
    if (st == EDDY_OK) {
        if (!reply)
            st = eddy__fail(&err, EDDY_ERR_INVALID_ARGUMENT, "no reply event");
        else if ((st = eddy_event_validate(reply, &err)) == EDDY_OK &&
                 eddy_event_extension(reply, EDDY__FAILED_ATTR))
            st = eddy__fail(&err, EDDY_ERR_RESERVED_ATTRIBUTE, "the reply carries '%s'",
                            EDDY__FAILED_ATTR);
        else if (st == EDDY_OK && eddy_event_size(reply) > c->s->max_event_size)
            st = eddy__fail(&err, EDDY_ERR_TOO_LARGE, "the reply is larger than %zu bytes",
                            c->s->max_event_size);
    }
    if (st != EDDY_OK) {
        /* The responder's failure stays here: logged and counted, never sent. */
        atomic_fetch_add(&stats->failed, 1);
        atomic_fetch_add(&stats->responder_failed, 1);
        eddy__log(&c->s->log, EDDY_LOG_WARN, "subscription '%s': responder failed%s%s: %s%s%s",
                  c->sub->name, d->reply_to ? " on request " : "", d->reply_to ? d->request_id : "",
                  eddy_status_str(st), err.detail[0] ? ": " : "", err.detail);
        eddy_event_free(reply);
        if (!d->reply_to) /* a plain publish: the failure reply has nowhere to go */
            atomic_fetch_add(&stats->unaddressed, 1);
        eddy_event *failure = d->reply_to ? failure_reply(c) : NULL;
        if (failure)
            (void)eddy_event_continue_trace(failure, d->ev, NULL);
        v->has_reply = failure && build_reply(c, d, failure, &v->reply_cmd);
        return;
    }
    atomic_fetch_add(&stats->handled, 1);
    if (!d->reply_to) {
        atomic_fetch_add(&stats->unaddressed, 1); /* a plain publish: nobody to answer */
        eddy_event_free(reply);
        return;
    }
    v->has_reply = build_reply(c, d, reply, &v->reply_cmd);
}

/* Under the lock: what the settlement leaves for the next round trip. Counts into *handled,
 * *held and *failed (handlers only). */
static void queue_outcome_locked(eddy__consumer *c, eddy__settlement *v, uint64_t *handled,
                                 uint64_t *held, uint64_t *failed) {
    const eddy_delivery *d = v->d;
    if (c->sub->responder) {
        if (!v->has_reply)
            return;
        if (VEC_GROW(c->replies)) {
            c->replies.v[c->replies.n++] = v->reply_cmd;
        } else {
            eddy__cmd_reset(&v->reply_cmd);
            atomic_fetch_add(&c->sub->stats.refused, 1); /* the caller gets NO_REPLY */
        }
        return;
    }
    if (v->st == EDDY_OK && d->emits) {
        (*handled)++;
        if (VEC_GROW(c->commits)) { /* on OOM it stays pending: redelivered */
            commit *m = &c->commits.v[c->commits.n++];
            m->stream = d->stream;
            copy_id(m->id, d->entry_id, strlen(d->entry_id));
            m->emits = d->emits;
            v->d->emits = NULL;
        }
        return;
    }
    if (v->st == EDDY_OK) {
        (*handled)++;
        if (at_least_once(c) && VEC_GROW(c->acks)) { /* on OOM it stays pending: redelivered */
            ack *a = &c->acks.v[c->acks.n++];
            a->stream = d->stream;
            copy_id(a->id, d->entry_id, strlen(d->entry_id));
        }
        return;
    }
    bool hand_back = v->st == EDDY_ERR_UNAVAILABLE;
    long long retry = hand_back ? 0 : eddy__redelivery_backoff_ms(c->s, d->attempt);
    /* AtMostOnce: acknowledged when read, nothing to hand back or retry: a plain failure. Out
     * of memory: the entry stays pending, the hand-back counts as a failed attempt, and a
     * failure comes back after redelivery_idle_ms. */
    if (at_least_once(c) && (hand_back || retry > 0) && VEC_GROW(c->holds)) {
        hold *h = &c->holds.v[c->holds.n++];
        h->stream = d->stream;
        copy_id(h->id, d->entry_id, strlen(d->entry_id));
        h->count = d->attempt - 1;
        h->retry_ms = retry;
        h->received_ms = d->received_ms;
        if (hand_back) {
            (*held)++;
            return;
        }
    }
    (*failed)++;
}

bool eddy__consumer_settle_run(eddy__consumer *c, eddy__settlement *v, size_t n) {
    eddy__stats *stats = &c->sub->stats;
    uint64_t redelivered = 0, handled = 0, held = 0, failed = 0;
    /* Counted before any outcome so that a reader who sees an outcome also sees its delivery. */
    atomic_fetch_add(&stats->delivered, n);
    for (size_t i = 0; i < n; i++) {
        v[i].has_reply = false;
        redelivered += v[i].d->attempt > 1;
        if (v[i].d->emits && v[i].d->emits->broken && v[i].st == EDDY_OK)
            v[i].st = EDDY_ERR_NOMEM; /* an output was lost: it must come back */
        if (c->sub->responder) {
            settle_responder(c, &v[i]);
        } else {
            eddy_event_free(v[i].reply);
            v[i].reply = NULL;
        }
    }
    for (size_t i = 0; i < n; i++) { /* what the outcome needs is in the delivery's own fields */
        eddy_delivery *d = v[i].d;
        eddy_event_free(d->ev);
        free(d->reply_to);
        free(d->stream_id);
        d->ev = NULL;
        d->reply_to = d->stream_id = NULL;
        if (d->emits && v[i].st != EDDY_OK) { /* a failed handler's outputs are dropped */
            eddy__emits_free(d->emits);
            d->emits = NULL;
        }
    }
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < n; i++) {
        release_delivery_locked(c, v[i].d);
        queue_outcome_locked(c, &v[i], &handled, &held, &failed);
        eddy__emits_free(v[i].d->emits); /* not queued: out of memory, it stays pending */
        v[i].d->emits = NULL;
        if (v[i].reuse && c->nspare < SPARE_DELIVERIES_MAX) {
            v[i].d->finish = finished_again; /* a finish after its handler's result: caught */
            v[i].d->frontend = c->spare;
            c->spare = v[i].d;
            c->nspare++;
            v[i].d = NULL;
        } else if (!v[i].reuse) {
            v[i].d = keep_finished_locked(c, v[i].d);
        }
    }
    c->outstanding -= n;
    bool wake = c->outstanding <= c->round_base;
    pthread_mutex_unlock(&c->lock);
    if (redelivered)
        atomic_fetch_add(&stats->redelivered, redelivered);
    if (handled)
        atomic_fetch_add(&stats->handled, handled);
    if (held)
        atomic_fetch_add(&stats->held, held);
    if (failed)
        atomic_fetch_add(&stats->failed, failed);
    for (size_t i = 0; i < n; i++)
        free(v[i].d); /* not kept, or pushed out: its contents were freed above */
    return wake;
}

bool eddy__consumer_settle(eddy__consumer *c, eddy_delivery *d, eddy_status st, eddy_event *reply) {
    eddy__settlement v = {.d = d, .st = st, .reply = reply};
    return eddy__consumer_settle_run(c, &v, 1);
}

eddy_status eddy__consumer_fed(eddy__consumer *c, long long now_ms, long long wall_ms,
                               const eddy__plan *plan, redisReply **replies, size_t n,
                               bool hold_back, eddy__delivery_list *out, unsigned *news) {
    eddy_status st = eddy__consumer_feed(c, now_ms, wall_ms, plan, replies, n, out);
    *news = 0;
    bool stopping = hold_back || atomic_load(&c->stopping);
    if (st != EDDY_OK || stopping)
        eddy__consumer_drop_all(c, out);
    else if (eddy__consumer_became_ready(c))
        *news |= EDDY__FED_READY;
    if (st == EDDY_OK && eddy__consumer_found_subjects(c))
        *news |= EDDY__FED_FOUND;
    return st;
}

void eddy__consumer_stop(eddy__consumer *c) { atomic_store(&c->stopping, true); }

void eddy__consumer_drop_all(eddy__consumer *c, eddy__delivery_list *out) {
    for (size_t i = 0; i < out->n; i++)
        eddy__consumer_drop(c, out->v[i]);
    out->n = 0;
}

void eddy__consumer_lost(eddy__consumer *c, eddy__delivery_list *out) {
    eddy__consumer_drop_all(c, out);
    eddy__consumer_reset(c);
}

void eddy__consumer_drop(eddy__consumer *c, eddy_delivery *d) {
    if (!d)
        return;
    pthread_mutex_lock(&c->lock);
    c->outstanding--;
    release_delivery_locked(c, d);
    pthread_mutex_unlock(&c->lock);
    eddy__delivery_free(d);
}

eddy_status eddy__sub_run(const eddy__sub *sub, eddy_delivery *d, eddy_event **reply) {
    *reply = NULL;
    if (sub->responder)
        return sub->responder(d, reply, sub->user);
    return sub->handler(d, sub->user);
}

eddy__ran eddy__consumer_run(eddy__consumer *c, eddy__run *run, eddy_delivery *d) {
    eddy_event *reply = NULL;
    eddy_status st = eddy__sub_run(c->sub, d, &reply);
    /* A pending delivery may be finished, and freed, on another thread by now: not looked at. */
    bool pending = st == EDDY_PENDING;
    if (pending || eddy__consumer_finished(d)) {
        eddy_event_free(reply);
        return pending ? EDDY__RAN_PENDING : EDDY__RAN_FINISHED;
    }
    run->v[run->n++] = (eddy__settlement){.d = d, .st = st, .reply = reply, .reuse = true};
    return run->n == EDDY__RUN_MAX ? EDDY__RAN_FULL : EDDY__RAN_KEPT;
}

bool eddy__consumer_ready(const eddy__consumer *c) {
    if (!c->sub->literal && !c->discovered)
        return false;
    for (size_t s = 0; s < c->streams.n; s++)
        if (!c->streams.v[s].group_ready)
            return false;
    return true;
}

bool eddy__consumer_became_ready(eddy__consumer *c) {
    if (c->told_ready || !eddy__consumer_ready(c))
        return false;
    return c->told_ready = true;
}

eddy_status eddy__consumer_late_error(const eddy__consumer *c, const eddy_error *last,
                                      eddy_error *err) {
    char what[EDDY_ERROR_DETAIL_MAX];
    snprintf(what, sizeof(what), "subscription '%s' could not reach the backend", c->sub->name);
    return eddy__link_late_error(err, last, what);
}

size_t eddy__consumer_outstanding(eddy__consumer *c) {
    pthread_mutex_lock(&c->lock);
    size_t n = c->outstanding;
    pthread_mutex_unlock(&c->lock);
    return n;
}

void eddy__consumer_reset(eddy__consumer *c) {
    if (c->shared)
        eddy__discovery_leave(c->shared, c); /* a discovery in flight is lost with the link */
    atomic_store(&c->news, true);            /* a wake may have come for a read that was lost */
    cool(c);
    release_place(c);
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < c->inflight.n; i++)
        if (VEC_GROW(c->acks))
            c->acks.v[c->acks.n++] = c->inflight.v[i];
    for (size_t i = 0; i < c->held_inflight.n; i++)
        if (VEC_GROW(c->holds))
            c->holds.v[c->holds.n++] = c->held_inflight.v[i];
    /* Sent again on the next connection: the commit adds nothing for an input it committed. */
    for (size_t i = 0; i < c->commits_inflight.n; i++) {
        if (VEC_GROW(c->commits))
            c->commits.v[c->commits.n++] = c->commits_inflight.v[i];
        else
            eddy__emits_free(c->commits_inflight.v[i].emits); /* it stays pending, or was done */
    }
    c->commits_inflight.n = 0;
    c->library_loaded = false;
    for (size_t i = 0; i < c->refreshes.n; i++) { /* lost with the connection */
        eddy_delivery *d = refreshed_locked(c, &c->refreshes.v[i]);
        if (d)
            d->refreshing = false;
    }
    c->refreshes.n = 0;
    pthread_mutex_unlock(&c->lock);
    c->inflight.n = 0;
    c->held_inflight.n = 0;
    drop_waiting(c);
    drop_dlq(c);
    for (size_t s = 0; s < c->streams.n; s++) {
        cstream *st = &c->streams.v[s];
        /* A group that existed and is gone after the reconnect means the server lost it (a
         * restart without persistence): whatever its stream holds now is newer. */
        if (st->group_ready)
            st->group_start = "0";
        st->group_ready = false;
        st->recovered = !at_least_once(c);
        st->in_history = false;
        strcpy(st->history_cursor, "0");
    }
    c->retry_at = 0;
}

/* ---- transactional handlers ------------------------------------------------------------ *
 *
 * A handler of an AtLeastOnce subscription may emit outputs (eddy_delivery_emit): events for
 * subjects of the same namespace, checked and encoded when emitted, kept on the delivery. When
 * it succeeds, its acknowledgement is not an XACK but one FCALL of the library's commit
 * (link/library.c; memory/commit.c natively): while the input is still pending in the group,
 * the outputs are added to their subjects' streams (their subjects to {ns}:subjects, as a
 * publish does; MAXLEN ~ stream_maxlen when set) and the input acknowledged, atomically. The
 * group's pending entry is the record that the input was not committed: once the commit ran,
 * the input is no longer pending, so a commit sent again (its reply lost with the connection,
 * see eddy__consumer_reset) or one from another consumer that handled the same input (claimed
 * after redelivery_idle_ms while this handler overran) adds nothing, and answers 0. The record
 * lives exactly as long as the input can be redelivered. A failed handler (or a hand-back)
 * drops its outputs: nothing is sent, and the redelivery and dead-letter rules apply as for any
 * failure. Commits travel like acknowledgements: with the next round trip, on the
 * subscription's connection (one slot on Cluster: every key is the namespace's). */
eddy_status eddy__consumer_emit(eddy__consumer *c, eddy_delivery *d, const char *subject,
                                const eddy_event *ev, eddy_error *err) {
    if (eddy__consumer_finished(d))
        return eddy__fail(err, EDDY_ERR_ILLEGAL_STATE, "emit: the delivery was finished");
    if (c->sub->responder || !at_least_once(c))
        return eddy__fail(err, EDDY_ERR_ILLEGAL_STATE,
                          "emit: subscription '%s' is not an AtLeastOnce handler's (outputs are "
                          "committed with the input's acknowledgement)",
                          c->sub->name);
    eddy_status st = eddy__subject_check(subject, err);
    if (st != EDDY_OK)
        return st;
    if ((st = eddy__publish_check_event(c->s, ev, "as an output", err)) != EDDY_OK)
        return st;
    if (d->emits && d->emits->broken)
        return eddy__fail(err, EDDY_ERR_NOMEM, "emit: an earlier output was lost (out of memory)");
    if (d->emits && d->emits->n >= EDDY__EMIT_MAX)
        return eddy__fail(err, EDDY_ERR_TOO_LARGE, "emit: at most %d outputs per delivery",
                          EDDY__EMIT_MAX);
    if (!d->emits) {
        if (!(d->emits = calloc(1, sizeof(*d->emits))))
            return eddy__fail(err, EDDY_ERR_NOMEM, "emit: out of memory");
        eddy__cmd_init(&d->emits->keys);
        eddy__cmd_init(&d->emits->args);
    }
    eddy__emits *e = d->emits;
    eddy__cmd fields;
    eddy__cmd_init(&fields);
    char *key = eddy__key_stream(c->s->ns, subject);
    st = key ? eddy__entry_encode(ev, &fields) : EDDY_ERR_NOMEM;
    if (st == EDDY_OK)
        st = eddy__cmd_status(&fields);
    if (st == EDDY_OK) {
        eddy__cmd_str(&e->keys, key);
        eddy__cmd_str(&e->args, subject);
        eddy__cmd_u64(&e->args, (unsigned long long)fields.argc);
        for (int i = 0; i < fields.argc; i++)
            eddy__cmd_arg(&e->args, fields.argv[i], fields.argvlen[i]);
        if (eddy__cmd_status(&e->keys) != EDDY_OK || eddy__cmd_status(&e->args) != EDDY_OK)
            st = EDDY_ERR_NOMEM;
    }
    free(key);
    eddy__cmd_reset(&fields);
    if (st != EDDY_OK) {
        /* The outputs are incomplete: the delivery cannot succeed any more (settled as a
         * failure whatever its handler returns, so it comes back). */
        e->broken = true;
        return eddy__fail(err, st, "emit: out of memory (the delivery now fails)");
    }
    e->n++;
    return EDDY_OK;
}
