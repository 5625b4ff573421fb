/* SPDX-License-Identifier: BSD-3-Clause */
/* The catch-up projection feed's state machine; see feed.h for the protocol with the front ends
 * and include/eddy/feed.h for the rules it implements.
 *
 * Invariants (all under `lock`):
 * - At most one run holds the turn (`active`); the others wait in `queue`, in call order. Only
 *   the active run replays, drains held events or changes `live`, so a replay never overlaps
 *   another replay, a drain or (after its quiesce) a live apply.
 * - A live event is in exactly one place: `held` (waiting, in arrival order), `inflight` (its
 *   caller applies it), a run's `cur` (a drain applies it), or an out list (answered, to be
 *   completed and freed by the front end). Each is answered exactly once.
 * - The feed is live only between a run ending live and the next catch-up's quiesce; while it
 *   is live nothing is held, so a drain that empties `held` and sets `live` in one step under
 *   the lock loses nothing and keeps the arrival order.
 * - `failed` only goes from false to true. The failure recorded is the first.
 * - Every stored event at or below `replayed_to` was examined by a replay whose work stands: it
 *   grows only when a page was read whole, and goes back to 0 with the replayed ids when a
 *   replay starts or is abandoned. Held and live copies are decided only outside a replay.
 * - A run parked in WAIT is woken (put on an out list) at most once per WAIT: `waiting` is
 *   cleared by the waker. Waiters and events are the front end's; the state machine never
 *   calls a front end or a projection callback (only the user's side of a run, at the end, does,
 *   for the driver), and calls the user's decode, event_id and free_event only outside the lock.
 */
#include "store/feed.h"

#include <assert.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "store/model.h"
#include "store/store.h"
#include "util/dedup.h"
#include "util/options.h"

typedef enum run_kind { K_CATCH_UP, K_GO_LIVE, K_FAILURE } run_kind;

typedef enum phase {
    P_TURN,       /* waiting for the turn */
    P_MARKER,     /* checking the marker */
    P_SKIP,       /* the marker exists: go live without a replay */
    P_QUIESCE,    /* holding new events; waiting for live applies to end */
    P_STARTED,    /* replay_started */
    P_POSITION,   /* asking the projection where its model is (projection.position) */
    P_HEAD,       /* reading where the history ends */
    P_PAGES,      /* replaying */
    P_COMPLETED,  /* replay_completed */
    P_DRAIN,      /* applying held events before the marker */
    P_SAVE,       /* writing the marker */
    P_DRAIN_LIVE, /* applying held events, then live */
    P_ABANDON,    /* replay_abandoned */
    P_WIND_DOWN,  /* a stop, cancel or failure decides what comes next */
    P_FAIL_DELETE,
    P_FAIL_REFUSE,
    P_FAIL_DRAIN,
    P_FINISH
} phase;

typedef enum outcome {
    OC_NONE,
    OC_REPLAYED,
    OC_SKIPPED,
    OC_LIVE,
    OC_STOPPED,
    OC_CANCELLED,
    OC_FAILED
} outcome;

struct eddy__feed_entry {
    eddy__feed_entry *next;
    void *event;
    void *waiter;
    char *id; /* in the same allocation */
    bool has_meta;
    eddy_event_meta meta; /* stream_id points into the same allocation */
    bool from_callback;
    bool escalates; /* reactive: its failure fails the feed */
    eddy_status st;
    eddy_error err;
};

struct eddy__feed_run {
    eddy__feed_run *qnext; /* queue */
    eddy__feed_run *wnext; /* an out list */
    void *waiter;
    run_kind kind;
    phase phase;
    eddy__feed_step_kind expect; /* the step handed out, awaiting its report */
    bool embedded;               /* the feed's failure run: not freed */
    bool queued, waiting, woken;
    bool has_caller;
    bool stop_requested, cancel_requested, closed;
    bool was_live, live_when_done, started;
    bool resolved; /* answered while queued */
    eddy_status resolved_st;
    outcome oc;
    eddy_error fail; /* OC_FAILED's cause, or the error a cancelled run still returns */
    bool result_set;
    eddy_status result;
    eddy_error result_err;
    long long head, position;
    long long resume_from; /* where the projection said its model is (0: the beginning) */
    unsigned delete_failures;
    long long retry_at; /* when the next marker deletion may be tried (0: not decided) */
    eddy__feed_entry *cur;
    void *replay_event;
    long long replay_pos;
    char *replay_id;
    size_t replay_id_cap;
    /* With a model kept in Redis: a read page's outcome, kept while its batch commits. */
    eddy_status page_st;
    long long page_next;
    eddy_error page_err;
};

struct eddy__feed {
    pthread_mutex_t lock;
    char *id;
    eddy__feed_mode mode;
    bool keyed, has_marker;
    bool resumes;               /* projection.position: a replay starts where the model is */
    eddy_feed_writes_fn writes; /* a model kept in Redis (model.h), or NULL */
    eddy_projection proj;       /* the user's callbacks, run by eddy__feed_run_user_step & co */
    eddy__model *model;         /* with writes, once eddy__feed_model_new made it */
    eddy_writes page;           /* with a model: the batch of the replay page being read */
    eddy_feed_decode_fn decode;
    eddy_feed_free_fn free_event;
    eddy_feed_event_id_fn event_id;
    void *codec_user;
    eddy_filter *filter;            /* owned copy; NULL: every stored event */
    const eddy_data_reader *reader; /* borrowed; NULL: none */
    bool unreadable;                /* filter needs data and there is no reader */
    size_t max_held, page_size;
    eddy__logger log;
    /* Duplicates: a copy carrying a position at or below replayed_to is one (exactly, and with
     * no memory per event); the id sets (dedup_cache_size each) judge the others. */
    long long replayed_to;
    eddy__dedup *replayed, *applied;

    bool live, stopped, failed, failing, closed;
    eddy_error failure;
    bool pending_fail;
    eddy_error pending_err;
    bool deferred_catch_up, deferred_go_live;
    bool warned_dedup;

    eddy__feed_run *active;
    eddy__feed_run *queue, *queue_tail;
    eddy__feed_run frun; /* the failure run: a feed fails once, so it never needs allocating */
    eddy__feed_entry *held, *held_tail;
    size_t nheld;
    eddy__feed_entry *inflight;
    size_t ninflight;

    uint64_t n_replayed, n_applied, n_duplicates, n_refused, n_apply_failed;
    long long position, head;
    eddy_feed_outcome last;
};

/* ---- construction ---------------------------------------------------------------------- */

eddy_status eddy__feed_new(const eddy_feed_config *cfg, eddy__feed_mode mode, bool has_marker,
                           eddy__feed **out, eddy_error *err) {
    if (!out)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "out is NULL");
    *out = NULL;
    if (!cfg)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "the feed config is NULL");
    eddy_feed_config full; /* the caller's fields, and the defaults of the newer ones */
    eddy__opts_widen(&eddy__feed_config_table, &full, cfg);
    cfg = &full;
    eddy_status st = eddy__store_check_id(cfg->id, "the feed id", err);
    if (st != EDDY_OK)
        return st;
    if (!cfg->projection.apply && !cfg->writes)
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC,
                          "feed '%s': projection.apply (or writes) is required", cfg->id);
    if (cfg->writes && (cfg->projection.apply || cfg->projection.position))
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC,
                          "feed '%s': writes keeps the model in Redis: projection.apply and "
                          "projection.position must be NULL",
                          cfg->id);
    if (!cfg->decode)
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC, "feed '%s': decode is required", cfg->id);
    if (!cfg->event_id)
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC, "feed '%s': event_id is required", cfg->id);
    if (cfg->dedup_cache_size <= 0)
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC,
                          "feed '%s': dedup_cache_size must be greater than 0 (it is %ld)", cfg->id,
                          cfg->dedup_cache_size);
    if (cfg->max_buffered_events <= 0)
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC,
                          "feed '%s': max_buffered_events must be greater than 0 (it is %ld)",
                          cfg->id, cfg->max_buffered_events);
    if (cfg->page_size == 0)
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC, "feed '%s': page_size must be at least 1",
                          cfg->id);
    eddy__feed *f = eddy__fcalloc(1, sizeof(*f));
    if (!f)
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    f->id = eddy__fstrdup(cfg->id);
    f->replayed = eddy__dedup_new((size_t)cfg->dedup_cache_size);
    f->applied = eddy__dedup_new((size_t)cfg->dedup_cache_size);
    f->filter = cfg->filter ? eddy_filter_dup(cfg->filter) : NULL;
    if (!f->id || !f->replayed || !f->applied || (cfg->filter && !f->filter)) {
        eddy_filter_free(f->filter);
        eddy__dedup_free(f->replayed);
        eddy__dedup_free(f->applied);
        eddy__ffree(f->id);
        eddy__ffree(f);
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    }
    pthread_mutex_init(&f->lock, NULL);
    f->mode = mode;
    f->keyed = cfg->projection.keyed_by_metadata;
    f->resumes = cfg->projection.position != NULL || cfg->writes != NULL;
    f->writes = cfg->writes;
    f->proj = cfg->projection;
    eddy__writes_init(&f->page, NULL);
    f->has_marker = has_marker;
    f->decode = cfg->decode;
    f->free_event = cfg->free_event;
    f->event_id = cfg->event_id;
    f->codec_user = cfg->codec_user;
    f->reader = cfg->reader;
    f->unreadable = f->filter && !f->reader && eddy_filter_needs_data(f->filter);
    f->max_held = (size_t)cfg->max_buffered_events;
    f->page_size = cfg->page_size;
    f->log.fn = cfg->log;
    f->log.user = cfg->log_user;
    f->frun.embedded = true;
    *out = f;
    return EDDY_OK;
}

static void run_release(eddy__feed_run *run) {
    if (!run || run->embedded)
        return;
    eddy__ffree(run->replay_id);
    eddy__ffree(run);
}

void eddy__feed_free(eddy__feed *f) {
    if (!f)
        return;
    for (eddy__feed_entry *e = f->held, *next; e; e = next) {
        next = e->next;
        eddy__ffree(e);
    }
    for (eddy__feed_run *r = f->queue, *next; r; r = next) {
        next = r->qnext;
        run_release(r);
    }
    eddy__ffree(f->frun.replay_id);
    eddy__dedup_free(f->replayed);
    eddy__dedup_free(f->applied);
    eddy_filter_free(f->filter);
    eddy__writes_reset(&f->page);
    eddy__model_free(f->model);
    pthread_mutex_destroy(&f->lock);
    eddy__ffree(f->id);
    eddy__ffree(f);
}

const char *eddy__feed_id(const eddy__feed *f) { return f ? f->id : NULL; }

bool eddy__feed_keyed_by_metadata(const eddy__feed *f) { return f && f->keyed; }

/* ---- out lists ------------------------------------------------------------------------- */

void eddy__feed_out_init(eddy__feed_out *o) { memset(o, 0, sizeof(*o)); }

void eddy__feed_out_run(eddy__feed_out *o, eddy__feed_complete_fn complete, void *ctx) {
    eddy__feed_entry *e = o->done;
    o->done = o->done_tail = NULL;
    while (e) {
        eddy__feed_entry *next = e->next;
        if (e->waiter && complete)
            complete(e->waiter, e->st, e->st == EDDY_OK ? NULL : &e->err, ctx);
        eddy__ffree(e);
        e = next;
    }
    eddy__feed_run *r = o->woken;
    o->woken = o->woken_tail = NULL;
    while (r) {
        /* Read before completing: the driver may free the run as soon as it resumes. */
        eddy__feed_run *next = r->wnext;
        void *waiter = r->waiter;
        if (waiter && complete)
            complete(waiter, EDDY_OK, NULL, ctx);
        r = next;
    }
}

static void wake(eddy__feed_run *r, eddy__feed_out *out) {
    if (!r || !r->waiting)
        return;
    r->waiting = false;
    r->woken = true;
    r->wnext = NULL;
    if (out->woken_tail)
        out->woken_tail->wnext = r;
    else
        out->woken = r;
    out->woken_tail = r;
}

/* ---- failing --------------------------------------------------------------------------- */

/* The detail of a refusal because the feed failed: names the cause. */
static eddy_status refuse_failed(eddy__feed *f, eddy_error *err, const char *what) {
    return eddy__fail(err, EDDY_ERR_ILLEGAL_STATE, "feed '%s' %s: it failed; cause: %s: %s", f->id,
                      what, eddy_status_name(f->failure.status), f->failure.detail);
}

static void set_error(eddy_error *dst, eddy_status st, const eddy_error *src,
                      const char *fallback) {
    dst->status = st;
    snprintf(dst->detail, sizeof(dst->detail), "%s",
             src && src->detail[0] ? src->detail : fallback);
}

/* Records the failure (the first one stays), and stops applying live events. */
static void mark_failed(eddy__feed *f, const eddy_error *cause) {
    if (!f->failed) {
        f->failed = true;
        f->failure = *cause;
        f->failing = f->mode == EDDY__FEED_REACTIVE;
    }
    f->live = false;
}

/* A reactive feed starts failing because of `cause`: the active run takes it over at its next
 * step, or, with none, the feed's failure run is handed to the caller to drive. */
static void escalate(eddy__feed *f, const eddy_error *cause, eddy__feed_out *out) {
    if (f->mode != EDDY__FEED_REACTIVE || f->failed || f->closed)
        return;
    mark_failed(f, cause);
    if (f->active) {
        f->pending_fail = true;
        f->pending_err = *cause;
        wake(f->active, out);
        return;
    }
    eddy__feed_run *r = &f->frun;
    r->kind = K_FAILURE;
    r->oc = OC_FAILED;
    r->fail = *cause;
    r->phase = f->has_marker ? P_FAIL_DELETE : P_FAIL_REFUSE;
    f->active = r;
    out->start = r;
}

/* Answers an entry that left every queue. */
static void answer(eddy__feed *f, eddy__feed_entry *e, eddy_status st, const eddy_error *err,
                   eddy__feed_out *out) {
    e->st = st;
    e->next = NULL;
    if (st != EDDY_OK && err)
        e->err = *err;
    else
        memset(&e->err, 0, sizeof(e->err));
    if (out->done_tail)
        out->done_tail->next = e;
    else
        out->done = e;
    out->done_tail = e;
    if (st != EDDY_OK && e->escalates)
        escalate(f, &e->err, out);
}

/* Refuses every held event (only those a listener fed, when !projection_too). */
static void refuse_held(eddy__feed *f, eddy_status st, const eddy_error *why, bool projection_too,
                        eddy__feed_out *out) {
    eddy__feed_entry *keep = NULL, *keep_tail = NULL, *e = f->held;
    f->held = f->held_tail = NULL;
    f->nheld = 0;
    while (e) {
        eddy__feed_entry *next = e->next;
        if (!projection_too && e->from_callback) {
            e->next = NULL;
            if (keep_tail)
                keep_tail->next = e;
            else
                keep = e;
            keep_tail = e;
            f->nheld++;
        } else {
            f->n_refused++;
            answer(f, e, st, why, out);
        }
        e = next;
    }
    f->held = keep;
    f->held_tail = keep_tail;
}

static void refuse_held_stopped(eddy__feed *f, eddy__feed_out *out) {
    eddy_error why;
    eddy__fail(&why, EDDY_ERR_ILLEGAL_STATE,
               "feed '%s' is stopped: the event was not applied (it is refused until the next "
               "catch-up or go-live)",
               f->id);
    refuse_held(f, EDDY_ERR_ILLEGAL_STATE, &why, true, out);
}

static void refuse_held_failed(eddy__feed *f, bool projection_too, eddy__feed_out *out) {
    eddy_error why;
    refuse_failed(f, &why, "refused the event it held");
    refuse_held(f, EDDY_ERR_ILLEGAL_STATE, &why, projection_too, out);
}

/* The run failed with st; detail formatted. Cancelled first (a blocking caller's cancel handle
 * fired): the error is still the caller's, but it is not recorded as a failure. */
static void fail_run(eddy__feed *f, eddy__feed_run *run, eddy_status st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void fail_run(eddy__feed *f, eddy__feed_run *run, eddy_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    run->fail.status = st;
    vsnprintf(run->fail.detail, sizeof(run->fail.detail), fmt, ap);
    va_end(ap);
    if (run->cancel_requested) {
        run->oc = OC_CANCELLED;
        return;
    }
    run->oc = OC_FAILED;
    mark_failed(f, &run->fail);
}

/* ---- live events ----------------------------------------------------------------------- */

static eddy__feed_entry *entry_new(const char *id, const eddy_event_meta *meta, void *event,
                                   void *waiter, eddy__accept_flags flags) {
    size_t idlen = strlen(id) + 1;
    const char *sid = meta && meta->stream_id ? meta->stream_id : NULL;
    size_t sidlen = sid ? strlen(sid) + 1 : 0;
    eddy__feed_entry *e = eddy__fmalloc(sizeof(*e) + idlen + sidlen);
    if (!e)
        return NULL;
    memset(e, 0, sizeof(*e));
    e->id = (char *)(e + 1);
    memcpy(e->id, id, idlen);
    if (meta) {
        e->has_meta = true;
        e->meta = *meta;
        if (sid) {
            e->meta.stream_id = e->id + idlen;
            memcpy(e->id + idlen, sid, sidlen);
        }
    }
    e->event = event;
    e->waiter = waiter;
    e->from_callback = flags.from_callback;
    return e;
}

/* An applied event, or one the replay examined (lock held). */
static bool is_duplicate(const eddy__feed *f, const eddy__feed_entry *e) {
    if (e->has_meta && e->meta.position > 0 && e->meta.position <= f->replayed_to)
        return true;
    return eddy__dedup_contains(f->replayed, e->id) || eddy__dedup_contains(f->applied, e->id);
}

/* The replay's work no longer stands (a new replay starts, or the projection discards it). */
static void forget_replay(eddy__feed *f) {
    eddy__dedup_clear(f->replayed);
    f->replayed_to = 0;
}

static void remember_applied(eddy__feed *f, eddy__dedup *d, const char *id) {
    if (eddy__dedup_add(d, id) != EDDY_OK && !f->warned_dedup) {
        f->warned_dedup = true;
        eddy__log(&f->log, EDDY_LOG_WARN,
                  "feed '%s': out of memory remembering applied event ids; a live copy of an "
                  "applied event may be applied again",
                  f->id);
    }
}

static void hold(eddy__feed *f, eddy__feed_entry *e) {
    e->next = NULL;
    if (f->held_tail)
        f->held_tail->next = e;
    else
        f->held = e;
    f->held_tail = e;
    f->nheld++;
}

/* A catch-up counts as running from the call that asked for it, not from when a front end
 * first drives it: a reactive run waits for the loop. Live events accepted in between wait for
 * its replay (lock held). */
static bool catch_up_asked(const eddy__feed *f) {
    if (f->active && f->active->kind == K_CATCH_UP)
        return true;
    for (const eddy__feed_run *q = f->queue; q; q = q->qnext)
        if (q->kind == K_CATCH_UP)
            return true;
    return false;
}

/* Decides what becomes of an accepted event (lock held). */
static eddy_status decide(eddy__feed *f, eddy__feed_entry *e, eddy__accept_flags flags,
                          eddy__accept_kind *kind, eddy_error *err) {
    if (f->failed) {
        /* Reactive, steps 2 and 4: while failing, what the projection feeds is still applied. */
        if (f->mode == EDDY__FEED_BLOCKING || !f->failing || !flags.from_callback || flags.defer)
            return refuse_failed(f, err, "refuses every event");
    } else if (f->live && !catch_up_asked(f)) {
        if (is_duplicate(f, e)) {
            f->n_duplicates++;
            *kind = EDDY__ACCEPT_DUPLICATE;
            return EDDY_OK;
        }
        for (eddy__feed_entry *i = f->inflight; i; i = i->next)
            if (strcmp(i->id, e->id) == 0)
                return eddy__fail(err, EDDY_ERR_ILLEGAL_STATE,
                                  "feed '%s': the event '%s' is being applied by another caller",
                                  f->id, e->id);
        e->next = f->inflight;
        f->inflight = e;
        f->ninflight++;
        *kind = EDDY__ACCEPT_APPLY;
        return EDDY_OK;
    } else if (flags.defer) {
        /* Not live (never was, replaying, asked to catch up, or stopped): not kept. */
        *kind = EDDY__ACCEPT_DEFERRED;
        return EDDY_OK;
    } else if (f->stopped) {
        return eddy__fail(err, EDDY_ERR_ILLEGAL_STATE,
                          "feed '%s' is stopped: the event was not applied (it is refused until "
                          "the next catch-up or go-live)",
                          f->id);
    }
    if (flags.waits && flags.from_callback)
        return eddy__fail(err, EDDY_ERR_ILLEGAL_STATE,
                          "feed '%s' is not live: an event fed from its own callback cannot be "
                          "held, since nothing could apply it while the caller waits",
                          f->id);
    if (f->nheld >= f->max_held)
        return eddy__fail(err, EDDY_ERR_ILLEGAL_STATE,
                          "feed '%s' already holds %zu events (max_buffered_events) until it "
                          "goes live",
                          f->id, f->nheld);
    hold(f, e);
    *kind = EDDY__ACCEPT_HELD;
    return EDDY_OK;
}

eddy_status eddy__feed_accept(eddy__feed *f, const eddy_event_meta *meta, void *event, void *waiter,
                              eddy__accept_flags flags, eddy__accept_kind *kind,
                              eddy__feed_entry **entry, eddy__feed_out *out, eddy_error *err) {
    *kind = EDDY__ACCEPT_REFUSED;
    *entry = NULL;
    if (!event)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "the event is NULL");
    eddy_error why = {0};
    eddy_status st = EDDY_OK;
    eddy__feed_entry *e = NULL;
    const char *id = NULL;
    if (f->keyed && !meta)
        st = eddy__fail(&why, EDDY_ERR_ILLEGAL_STATE,
                        "feed '%s': the projection is keyed by metadata, so an event fed without "
                        "metadata cannot be applied; feed it with its metadata",
                        f->id);
    else if (!(id = f->event_id(event, f->codec_user)) || !id[0])
        st = eddy__fail(&why, EDDY_ERR_INVALID_ARGUMENT,
                        "feed '%s': the event_id function gave no id for the event", f->id);
    else if (!(e = entry_new(id, meta, event, waiter, flags)))
        st = eddy__fail(&why, EDDY_ERR_NOMEM, "out of memory");
    pthread_mutex_lock(&f->lock);
    bool esc = f->mode == EDDY__FEED_REACTIVE && (!waiter || (flags.from_callback && f->active));
    if (e)
        e->escalates = esc;
    if (st == EDDY_OK)
        st = f->closed ? eddy__fail(&why, EDDY_ERR_CLOSED, "feed '%s' is closed", f->id)
                       : decide(f, e, flags, kind, &why);
    if (st != EDDY_OK) {
        f->n_refused++;
        *kind = EDDY__ACCEPT_REFUSED;
        if (esc)
            escalate(f, &why, out);
    }
    pthread_mutex_unlock(&f->lock);
    if (*kind == EDDY__ACCEPT_APPLY)
        *entry = e;
    else if (*kind != EDDY__ACCEPT_HELD)
        eddy__ffree(e);
    if (st != EDDY_OK && err)
        *err = why;
    return st;
}

static void format_apply_error(eddy__feed *f, const char *id, eddy_status st,
                               const eddy_error *apply_err, eddy_error *out) {
    if (apply_err && apply_err->detail[0])
        eddy__fail(out, st, "feed '%s': the event '%s' was not applied: %s", f->id, id,
                   apply_err->detail);
    else
        eddy__fail(out, st, "feed '%s': the event '%s' was not applied: %s", f->id, id,
                   eddy_status_str(st));
}

eddy_status eddy__feed_live_done(eddy__feed *f, eddy__feed_entry *e, eddy_status st,
                                 const eddy_error *apply_err, eddy__feed_out *out,
                                 eddy_error *err) {
    eddy_error why = {0};
    if (st != EDDY_OK)
        format_apply_error(f, e->id, st, apply_err, &why);
    pthread_mutex_lock(&f->lock);
    for (eddy__feed_entry **pp = &f->inflight; *pp; pp = &(*pp)->next)
        if (*pp == e) {
            *pp = e->next;
            f->ninflight--;
            break;
        }
    if (st == EDDY_OK) {
        f->n_applied++;
        remember_applied(f, f->applied, e->id);
    } else {
        f->n_apply_failed++;
        if (e->escalates)
            escalate(f, &why, out);
    }
    if (f->ninflight == 0 && f->active && f->active->phase == P_QUIESCE)
        wake(f->active, out);
    pthread_mutex_unlock(&f->lock);
    eddy__ffree(e);
    if (st != EDDY_OK && err)
        *err = why;
    return st;
}

bool eddy__feed_accept_cancel(eddy__feed *f, void *waiter) {
    if (!waiter)
        return false;
    eddy__feed_entry *found = NULL;
    pthread_mutex_lock(&f->lock);
    eddy__feed_entry *prev = NULL;
    for (eddy__feed_entry *e = f->held; e; prev = e, e = e->next)
        if (e->waiter == waiter) {
            if (prev)
                prev->next = e->next;
            else
                f->held = e->next;
            if (f->held_tail == e)
                f->held_tail = prev;
            f->nheld--;
            found = e;
            break;
        }
    pthread_mutex_unlock(&f->lock);
    eddy__ffree(found);
    return found != NULL;
}

/* ---- runs: creation and requests ------------------------------------------------------- */

static eddy__feed_run *run_new(run_kind kind, void *waiter) {
    eddy__feed_run *r = eddy__fcalloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->kind = kind;
    r->waiter = waiter;
    r->phase = P_TURN;
    return r;
}

static void enqueue(eddy__feed *f, eddy__feed_run *r) {
    r->queued = true;
    r->qnext = NULL;
    if (f->queue_tail)
        f->queue_tail->qnext = r;
    else
        f->queue = r;
    f->queue_tail = r;
}

static void dequeue(eddy__feed *f, eddy__feed_run *r) {
    if (!r->queued)
        return;
    eddy__feed_run *prev = NULL;
    for (eddy__feed_run *q = f->queue; q; prev = q, q = q->qnext)
        if (q == r) {
            if (prev)
                prev->qnext = q->qnext;
            else
                f->queue = q->qnext;
            if (f->queue_tail == q)
                f->queue_tail = prev;
            break;
        }
    r->queued = false;
}

/* Checks shared by catch-up and go-live requests (lock held). */
static eddy_status request_allowed(eddy__feed *f, const char *what, eddy_error *err) {
    if (f->closed)
        return eddy__fail(err, EDDY_ERR_CLOSED, "feed '%s' is closed", f->id);
    if (f->failed)
        return refuse_failed(f, err, what);
    return EDDY_OK;
}

eddy_status eddy__feed_catch_up(eddy__feed *f, void *waiter, bool from_callback,
                                eddy__feed_run **run, eddy_error *err) {
    *run = NULL;
    pthread_mutex_lock(&f->lock);
    eddy_status st = request_allowed(f, "cannot catch up", err);
    if (st == EDDY_OK) {
        f->stopped = false;
        if (from_callback) {
            f->deferred_catch_up = true;
        } else if (!(*run = run_new(K_CATCH_UP, waiter))) {
            st = eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
        } else {
            (*run)->has_caller = true;
            enqueue(f, *run);
        }
    }
    pthread_mutex_unlock(&f->lock);
    return st;
}

eddy_status eddy__feed_go_live(eddy__feed *f, void *waiter, bool from_callback,
                               eddy__feed_run **run, eddy_error *err) {
    *run = NULL;
    pthread_mutex_lock(&f->lock);
    eddy_status st = request_allowed(f, "cannot go live", err);
    if (st == EDDY_OK) {
        f->stopped = false;
        /* A running catch-up goes live when it ends, even when its replay is stopped. */
        if (f->active && f->active->kind == K_CATCH_UP)
            f->active->live_when_done = true;
        if (from_callback) {
            if (!f->active && !f->live)
                f->deferred_go_live = true;
        } else if (f->active || f->queue || !f->live) {
            if (!(*run = run_new(K_GO_LIVE, waiter))) {
                st = eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
            } else {
                (*run)->has_caller = true;
                enqueue(f, *run);
            }
        }
    }
    pthread_mutex_unlock(&f->lock);
    return st;
}

eddy__feed_run *eddy__feed_poll_deferred(eddy__feed *f) {
    eddy__feed_run *r = NULL;
    pthread_mutex_lock(&f->lock);
    if (f->failed || f->closed) {
        f->deferred_catch_up = f->deferred_go_live = false;
    } else if (!f->active && !f->queue && (f->deferred_catch_up || f->deferred_go_live)) {
        bool catch_up = f->deferred_catch_up;
        if (!catch_up && f->live) {
            f->deferred_go_live = false; /* live already */
        } else if ((r = run_new(catch_up ? K_CATCH_UP : K_GO_LIVE, NULL))) {
            r->live_when_done = f->deferred_go_live;
            f->deferred_catch_up = f->deferred_go_live = false;
            enqueue(f, r);
        }
        /* Out of memory: the request stays for the next caller to leave a callback. */
    }
    pthread_mutex_unlock(&f->lock);
    return r;
}

void eddy__feed_run_attach(eddy__feed_run *run, void *waiter) {
    if (run)
        run->waiter = waiter;
}

void eddy__feed_stop(eddy__feed *f, eddy__feed_out *out) {
    pthread_mutex_lock(&f->lock);
    /* A catch-up a callback asked for and that has not started yet does not run. */
    f->deferred_catch_up = f->deferred_go_live = false;
    if (!f->failed && !f->closed) {
        bool running = f->active || f->queue;
        if (f->active && f->active->kind == K_CATCH_UP) {
            f->active->stop_requested = true;
            if (f->active->phase == P_QUIESCE)
                wake(f->active, out);
        }
        for (eddy__feed_run *q = f->queue; q; q = q->qnext)
            if (q->kind == K_CATCH_UP)
                q->stop_requested = true;
        if (!running && !f->live) {
            f->stopped = true;
            refuse_held_stopped(f, out);
        }
    }
    pthread_mutex_unlock(&f->lock);
}

bool eddy__feed_run_cancel(eddy__feed *f, eddy__feed_run *run) {
    pthread_mutex_lock(&f->lock);
    run->cancel_requested = true;
    bool coming = false;
    if (run->waiting)
        run->waiting = false; /* it stops waiting now; no completion will come */
    else
        coming = run->woken;
    pthread_mutex_unlock(&f->lock);
    return coming;
}

void eddy__feed_close(eddy__feed *f, eddy__feed_out *out) {
    pthread_mutex_lock(&f->lock);
    if (!f->closed) {
        f->closed = true;
        f->deferred_catch_up = f->deferred_go_live = false;
        eddy_error why;
        eddy__fail(&why, EDDY_ERR_CLOSED, "feed '%s' was closed before the event was applied",
                   f->id);
        for (eddy__feed_entry *e = f->held; e; e = e->next)
            e->escalates = false;
        refuse_held(f, EDDY_ERR_CLOSED, &why, true, out);
        if (f->active) {
            f->active->cancel_requested = f->active->closed = true;
            wake(f->active, out);
        }
        for (eddy__feed_run *q = f->queue; q; q = q->qnext)
            wake(q, out);
    }
    pthread_mutex_unlock(&f->lock);
}

/* ---- runs: the steps ------------------------------------------------------------------- */

/* A stop, cancel or reactive failure noticed before a replay step: true when it ended the
 * replay part of the run. */
static bool interrupted(eddy__feed *f, eddy__feed_run *run) {
    if (run->oc != OC_NONE)
        return false;
    if (run->cancel_requested) {
        run->oc = OC_CANCELLED;
    } else if (f->pending_fail) {
        f->pending_fail = false;
        run->oc = OC_FAILED;
        run->fail = f->pending_err;
    } else if (run->stop_requested) {
        run->oc = OC_STOPPED;
    } else {
        return false;
    }
    run->phase = run->started ? P_ABANDON : P_WIND_DOWN;
    return true;
}

/* A reactive failure noticed while held events are applied or the marker written. */
static bool drain_interrupted(eddy__feed *f, eddy__feed_run *run) {
    if (!f->pending_fail || run->oc == OC_FAILED)
        return false;
    f->pending_fail = false;
    run->oc = OC_FAILED;
    run->fail = f->pending_err;
    run->phase = run->started ? P_ABANDON : P_WIND_DOWN;
    return true;
}

/* Hands out the next held event to apply; duplicates of applied ids are answered on the way.
 * False when nothing is held. */
static bool next_held(eddy__feed *f, eddy__feed_run *run, eddy__feed_step *step,
                      eddy__feed_out *out) {
    while (f->held) {
        eddy__feed_entry *e = f->held;
        f->held = e->next;
        if (!f->held)
            f->held_tail = NULL;
        f->nheld--;
        if (is_duplicate(f, e)) {
            f->n_duplicates++;
            answer(f, e, EDDY_OK, NULL, out);
            continue;
        }
        run->cur = e;
        step->kind = run->expect = EDDY__STEP_APPLY;
        step->event = e->event;
        step->meta = e->has_meta ? &e->meta : NULL;
        return true;
    }
    return false;
}

static void set_result(eddy__feed *f, eddy__feed_run *run) {
    if (run->result_set)
        return;
    run->result_set = true;
    memset(&run->result_err, 0, sizeof(run->result_err));
    switch (run->oc) {
    case OC_CANCELLED:
        if (run->closed)
            run->result = eddy__fail(&run->result_err, EDDY_ERR_CLOSED,
                                     "feed '%s' was closed during the catch-up", f->id);
        else if (run->fail.status != EDDY_OK)
            run->result_err = run->fail, run->result = run->fail.status;
        else
            run->result =
                eddy__fail(&run->result_err, EDDY_ERR_CANCELLED, "feed '%s': the %s was cancelled",
                           f->id, run->kind == K_GO_LIVE ? "go-live" : "catch-up");
        break;
    case OC_FAILED:
        if (run->kind == K_GO_LIVE)
            run->result = refuse_failed(f, &run->result_err, "cannot go live");
        else
            run->result_err = run->fail, run->result = run->fail.status;
        break;
    default:
        run->result = EDDY_OK;
        break;
    }
}

static eddy_feed_outcome public_outcome(outcome oc) {
    switch (oc) {
    case OC_REPLAYED:
        return EDDY_FEED_REPLAYED;
    case OC_SKIPPED:
        return EDDY_FEED_SKIPPED;
    case OC_LIVE:
        return EDDY_FEED_WENT_LIVE;
    case OC_STOPPED:
        return EDDY_FEED_STOPPED;
    case OC_CANCELLED:
        return EDDY_FEED_CANCELLED;
    case OC_FAILED:
        return EDDY_FEED_FAILED;
    default:
        return EDDY_FEED_NONE;
    }
}

/* Starts a catch-up the run's callbacks asked for, keeping the turn. */
static void follow_on(eddy__feed *f, eddy__feed_run *run) {
    f->deferred_catch_up = false;
    run->kind = K_CATCH_UP;
    run->oc = OC_NONE;
    run->stop_requested = false;
    run->started = false;
    run->live_when_done = f->deferred_go_live;
    f->deferred_go_live = false;
    run->was_live = f->live;
    run->head = run->position = run->resume_from = 0;
    memset(&run->fail, 0, sizeof(run->fail));
    run->phase = f->has_marker ? P_MARKER : P_QUIESCE;
}

/* Releases the turn: answers the queued calls the outcome settles, and resumes the others so
 * that one takes the turn. */
static void release_turn(eddy__feed *f, eddy__feed_out *out) {
    f->active = NULL;
    for (eddy__feed_run *q = f->queue; q; q = q->qnext) {
        if (!q->resolved && (f->failed || f->closed || (q->kind == K_GO_LIVE && f->live))) {
            q->resolved = true;
            q->resolved_st = f->closed   ? EDDY_ERR_CLOSED
                             : f->failed ? EDDY_ERR_ILLEGAL_STATE
                                         : EDDY_OK;
        }
        wake(q, out);
    }
}

/* A run that ends without ever holding the turn. */
static bool done_unqueued(eddy__feed *f, eddy__feed_run *run, eddy__feed_step *step,
                          eddy_status st) {
    dequeue(f, run);
    step->kind = EDDY__STEP_DONE;
    step->st = st;
    memset(&step->err, 0, sizeof(step->err));
    if (st == EDDY_ERR_ILLEGAL_STATE)
        refuse_failed(f, &step->err, run->kind == K_GO_LIVE ? "cannot go live" : "cannot catch up");
    else if (st == EDDY_ERR_CLOSED)
        eddy__fail(&step->err, st, "feed '%s' is closed", f->id);
    else if (st == EDDY_ERR_CANCELLED)
        eddy__fail(&step->err, st, "feed '%s': the %s was cancelled while it waited", f->id,
                   run->kind == K_GO_LIVE ? "go-live" : "catch-up");
    return true;
}

/* ---- runs: one function per phase ---------------------------------------------------- *
 *
 * Each takes one transition at time now (the caller's clock), with the lock held, and returns
 * true when step holds something for the front end. */

static bool phase_turn(eddy__feed *f, eddy__feed_run *run, long long now, eddy__feed_step *step,
                       eddy__feed_out *out) {
    if (run->resolved)
        return done_unqueued(f, run, step, run->resolved_st);
    if (run->cancel_requested || f->closed)
        return done_unqueued(f, run, step, f->closed ? EDDY_ERR_CLOSED : EDDY_ERR_CANCELLED);
    if (f->failed)
        return done_unqueued(f, run, step, EDDY_ERR_ILLEGAL_STATE);
    if (f->active) {
        run->waiting = true;
        step->kind = EDDY__STEP_WAIT;
        return true;
    }
    dequeue(f, run);
    f->active = run;
    run->was_live = f->live;
    if (run->kind == K_GO_LIVE) {
        run->oc = OC_LIVE;
        run->phase = P_DRAIN_LIVE;
    } else if (run->stop_requested) {
        run->oc = OC_STOPPED;
        run->phase = P_WIND_DOWN;
    } else {
        run->phase = f->has_marker ? P_MARKER : P_QUIESCE;
    }
    return false;
}

static bool phase_marker(eddy__feed *f, eddy__feed_run *run, long long now, eddy__feed_step *step,
                         eddy__feed_out *out) {
    if (interrupted(f, run))
        return false;
    step->kind = run->expect = EDDY__STEP_MARKER_EXISTS;
    return true;
}

static bool phase_skip(eddy__feed *f, eddy__feed_run *run, long long now, eddy__feed_step *step,
                       eddy__feed_out *out) {
    if (interrupted(f, run))
        return false;
    run->oc = OC_SKIPPED;
    run->phase = P_DRAIN_LIVE;
    return false;
}

static bool phase_quiesce(eddy__feed *f, eddy__feed_run *run, long long now, eddy__feed_step *step,
                          eddy__feed_out *out) {
    if (interrupted(f, run))
        return false;
    /* From here live events are held, and the replay waits for live applies to end. */
    f->live = false;
    if (f->ninflight > 0) {
        run->waiting = true;
        step->kind = EDDY__STEP_WAIT;
        return true;
    }
    forget_replay(f);
    f->position = f->head = 0;
    run->phase = P_STARTED;
    return false;
}

static bool phase_started(eddy__feed *f, eddy__feed_run *run, long long now, eddy__feed_step *step,
                          eddy__feed_out *out) {
    if (interrupted(f, run))
        return false;
    if (f->unreadable) {
        /* Fails before the projection hears of a replay, whatever the history holds. */
        fail_run(f, run, EDDY_ERR_UNREADABLE_FILTER,
                 "feed '%s': its filter has a data condition and the feed has no data field "
                 "reader (cfg.reader), so the replay cannot tell which events it wants",
                 f->id);
        run->phase = P_WIND_DOWN;
        return false;
    }
    step->kind = run->expect = EDDY__STEP_STARTED;
    return true;
}

static bool phase_position(eddy__feed *f, eddy__feed_run *run, long long now, eddy__feed_step *step,
                           eddy__feed_out *out) {
    if (interrupted(f, run))
        return false;
    step->kind = run->expect = EDDY__STEP_POSITION;
    return true;
}

static bool phase_head(eddy__feed *f, eddy__feed_run *run, long long now, eddy__feed_step *step,
                       eddy__feed_out *out) {
    if (interrupted(f, run))
        return false;
    step->kind = run->expect = EDDY__STEP_READ_HEAD;
    return true;
}

static bool phase_pages(eddy__feed *f, eddy__feed_run *run, long long now, eddy__feed_step *step,
                        eddy__feed_out *out) {
    if (interrupted(f, run))
        return false;
    if (run->position >= run->head) {
        run->phase = P_COMPLETED;
        return false;
    }
    step->kind = run->expect = EDDY__STEP_READ_PAGE;
    step->position = run->position;
    step->max = f->page_size;
    return true;
}

static bool phase_completed(eddy__feed *f, eddy__feed_run *run, long long now,
                            eddy__feed_step *step, eddy__feed_out *out) {
    /* Asked once more after the last event: a stop during its apply still counts. */
    if (interrupted(f, run))
        return false;
    step->kind = run->expect = EDDY__STEP_COMPLETED;
    return true;
}

static bool phase_drain(eddy__feed *f, eddy__feed_run *run, long long now, eddy__feed_step *step,
                        eddy__feed_out *out) {
    if (drain_interrupted(f, run))
        return false;
    if (next_held(f, run, step, out))
        return true;
    run->phase = f->has_marker ? P_SAVE : P_DRAIN_LIVE;
    return false;
}

static bool phase_save(eddy__feed *f, eddy__feed_run *run, long long now, eddy__feed_step *step,
                       eddy__feed_out *out) {
    if (drain_interrupted(f, run))
        return false;
    step->kind = run->expect = EDDY__STEP_SAVE_MARKER;
    snprintf(step->marker, sizeof(step->marker), "%lld", run->position);
    return true;
}

static bool phase_drain_live(eddy__feed *f, eddy__feed_run *run, long long now,
                             eddy__feed_step *step, eddy__feed_out *out) {
    if (drain_interrupted(f, run))
        return false;
    if (next_held(f, run, step, out))
        return true;
    /* Emptied and live in one step under the lock: nothing can slip in between. */
    f->live = true;
    f->stopped = false;
    if (run->oc == OC_NONE)
        run->oc = OC_REPLAYED;
    run->phase = P_FINISH;
    return false;
}

static bool phase_abandon(eddy__feed *f, eddy__feed_run *run, long long now, eddy__feed_step *step,
                          eddy__feed_out *out) {
    /* Forgotten before the projection discards the replay's work, so a live copy of a
     * replayed event is applied rather than dropped. */
    forget_replay(f);
    step->kind = run->expect = EDDY__STEP_ABANDONED;
    return true;
}

static bool phase_wind_down(eddy__feed *f, eddy__feed_run *run, long long now,
                            eddy__feed_step *step, eddy__feed_out *out) {
    switch (run->oc) {
    case OC_STOPPED:
    case OC_CANCELLED:
        if (!run->closed && (run->was_live || run->live_when_done)) {
            run->phase = P_DRAIN_LIVE;
            return false;
        }
        /* A stopped feed refuses; a cancelled one keeps holding. */
        if (run->oc == OC_STOPPED && !f->live) {
            f->stopped = true;
            refuse_held_stopped(f, out);
        }
        run->phase = P_FINISH;
        return false;
    default: /* OC_FAILED */
        if (f->mode == EDDY__FEED_REACTIVE) {
            run->phase = f->has_marker ? P_FAIL_DELETE : P_FAIL_REFUSE;
        } else if (run->was_live) {
            run->phase = P_FAIL_DRAIN; /* it held them for a live feed: applied first */
        } else {
            refuse_held_failed(f, true, out);
            run->phase = P_FINISH;
        }
        return false;
    }
}

static bool phase_fail_delete(eddy__feed *f, eddy__feed_run *run, long long now,
                              eddy__feed_step *step, eddy__feed_out *out) {
    /* Each retry waits from the moment the failed attempt was reported. */
    if (run->delete_failures && !run->retry_at)
        run->retry_at = now + ((long long)EDDY__FEED_RETRY_MS << (run->delete_failures - 1));
    step->kind = run->expect = EDDY__STEP_DELETE_MARKER;
    step->not_before_ms = run->delete_failures ? run->retry_at : 0;
    return true;
}

static bool phase_fail_refuse(eddy__feed *f, eddy__feed_run *run, long long now,
                              eddy__feed_step *step, eddy__feed_out *out) {
    refuse_held_failed(f, false, out);
    run->phase = P_FAIL_DRAIN;
    return false;
}

static bool phase_fail_drain(eddy__feed *f, eddy__feed_run *run, long long now,
                             eddy__feed_step *step, eddy__feed_out *out) {
    if (next_held(f, run, step, out))
        return true;
    f->failing = false; /* reactive step 5: from now on everything is refused */
    run->phase = P_FINISH;
    return false;
}

static bool phase_finish(eddy__feed *f, eddy__feed_run *run, long long now, eddy__feed_step *step,
                         eddy__feed_out *out) {
    /* The caller's result is its run's own outcome; a reactive failure that starts while
     * the run winds down (an event refused by a stop) is run through, not returned. */
    set_result(f, run);
    if (drain_interrupted(f, run))
        return false;
    if (f->deferred_catch_up && !f->failed && !f->closed && !run->closed) {
        follow_on(f, run);
        return false;
    }
    f->last = public_outcome(run->oc);
    if (run->oc == OC_FAILED && !(run->has_caller && run->result != EDDY_OK))
        eddy__log(&f->log, EDDY_LOG_ERROR, "feed '%s' failed: %s: %s", f->id,
                  eddy_status_name(f->failure.status), f->failure.detail);
    release_turn(f, out);
    step->kind = EDDY__STEP_DONE;
    step->st = run->result;
    step->err = run->result_err;
    return true;
}

typedef bool (*phase_fn)(eddy__feed *f, eddy__feed_run *run, long long now, eddy__feed_step *step,
                         eddy__feed_out *out);

static const phase_fn phase_steps[] = {
    [P_TURN] = phase_turn,
    [P_MARKER] = phase_marker,
    [P_SKIP] = phase_skip,
    [P_QUIESCE] = phase_quiesce,
    [P_STARTED] = phase_started,
    [P_POSITION] = phase_position,
    [P_HEAD] = phase_head,
    [P_PAGES] = phase_pages,
    [P_COMPLETED] = phase_completed,
    [P_DRAIN] = phase_drain,
    [P_SAVE] = phase_save,
    [P_DRAIN_LIVE] = phase_drain_live,
    [P_ABANDON] = phase_abandon,
    [P_WIND_DOWN] = phase_wind_down,
    [P_FAIL_DELETE] = phase_fail_delete,
    [P_FAIL_REFUSE] = phase_fail_refuse,
    [P_FAIL_DRAIN] = phase_fail_drain,
    [P_FINISH] = phase_finish,
};

#ifndef NDEBUG
/* The combinations of phase and flags that may hold between two transitions; NULL when they all
 * do, else the rule broken. Checked by assert() at every transition in builds without NDEBUG
 * (the test builds keep it: EDDY_TESTS). */
static const char *rule_broken(const eddy__feed *f, const eddy__feed_run *run) {
    if (f->stopped && f->live)
        return "a stopped feed is not live";
    if (f->failing && !(f->failed && f->mode == EDDY__FEED_REACTIVE))
        return "only a failed reactive feed is failing";
    if (f->pending_fail && !(f->failed && f->mode == EDDY__FEED_REACTIVE))
        return "only a failed reactive feed has a failure pending";
    if (f->closed && (f->deferred_catch_up || f->deferred_go_live))
        return "a closed feed defers nothing";
    if (f->active && f->active->phase == P_TURN)
        return "the run holding the turn is past P_TURN";
    if (run != f->active && run->phase != P_TURN)
        return "a run past P_TURN holds the turn";
    switch (run->phase) {
    case P_STARTED:
    case P_POSITION:
    case P_HEAD:
    case P_PAGES:
    case P_COMPLETED:
    case P_DRAIN:
    case P_SAVE:
        if (f->live)
            return "a replaying feed is not live";
        break;
    case P_FAIL_DELETE:
    case P_FAIL_REFUSE:
    case P_FAIL_DRAIN:
        if (run->oc != OC_FAILED || !f->failed)
            return "only a failed run in a failed feed winds down as a failure";
        break;
    case P_WIND_DOWN:
    case P_FINISH:
        if (run->oc == OC_NONE)
            return "a run that winds down or finishes has an outcome";
        break;
    default:
        break;
    }
    return NULL;
}

#endif

static bool advance(eddy__feed *f, eddy__feed_run *run, long long now, eddy__feed_step *step,
                    eddy__feed_out *out) {
    assert(!rule_broken(f, run));
    return phase_steps[run->phase](f, run, now, step, out);
}

void eddy__feed_run_next(eddy__feed *f, eddy__feed_run *run, long long now_ms,
                         eddy__feed_step *step, eddy__feed_out *out) {
    memset(step, 0, sizeof(*step));
    pthread_mutex_lock(&f->lock);
    run->woken = false;
    run->expect = EDDY__STEP_DONE;
    while (!advance(f, run, now_ms, step, out))
        ;
    pthread_mutex_unlock(&f->lock);
    if (step->kind == EDDY__STEP_DONE)
        run_release(run);
}

void eddy__feed_step_done(eddy__feed *f, eddy__feed_run *run, eddy_status st, const eddy_error *err,
                          eddy__feed_out *out) {
    pthread_mutex_lock(&f->lock);
    eddy__feed_step_kind expect = run->expect;
    run->expect = EDDY__STEP_DONE;
    switch (expect) {
    case EDDY__STEP_STARTED:
        if (st == EDDY_OK) {
            run->started = true;
            run->phase = f->resumes ? P_POSITION : P_HEAD;
        } else {
            fail_run(f, run, st, "feed '%s': replay_started failed: %s", f->id,
                     err && err->detail[0] ? err->detail : eddy_status_str(st));
            run->phase = P_WIND_DOWN;
        }
        break;
    case EDDY__STEP_COMPLETED:
        if (st == EDDY_OK) {
            run->started = false;
            run->phase = P_DRAIN;
        } else {
            fail_run(f, run, st, "feed '%s': replay_completed failed: %s", f->id,
                     err && err->detail[0] ? err->detail : eddy_status_str(st));
            run->phase = P_ABANDON;
        }
        break;
    case EDDY__STEP_APPLY: {
        eddy__feed_entry *e = run->cur;
        run->cur = NULL;
        if (st == EDDY_OK) {
            f->n_applied++;
            remember_applied(f, f->applied, e->id);
            answer(f, e, EDDY_OK, NULL, out);
        } else {
            /* A held event that fails fails only its own caller. */
            eddy_error why;
            format_apply_error(f, e->id, st, err, &why);
            f->n_apply_failed++;
            answer(f, e, st, &why, out);
        }
        break;
    }
    case EDDY__STEP_SAVE_MARKER:
        if (st == EDDY_OK) {
            run->phase = P_DRAIN_LIVE;
        } else {
            fail_run(f, run, st, "feed '%s': could not save its catch-up marker: %s", f->id,
                     err && err->detail[0] ? err->detail : eddy_status_str(st));
            run->phase = P_WIND_DOWN;
        }
        break;
    case EDDY__STEP_ABANDONED:
        run->started = false;
        run->phase = P_WIND_DOWN;
        break;
    case EDDY__STEP_DELETE_MARKER:
        run->retry_at = 0; /* the next run_next decides it from its now */
        if (st == EDDY_OK) {
            run->phase = P_FAIL_REFUSE;
        } else if (++run->delete_failures > EDDY__FEED_DELETE_RETRIES) {
            eddy_error why;
            set_error(&why, st, err, eddy_status_str(st));
            eddy__log(&f->log, EDDY_LOG_ERROR,
                      "feed '%s': could not delete its catch-up marker after %u attempts (%s: "
                      "%s); delete the marker of feed '%s' from the checkpoint storage before "
                      "building a new feed '%s'",
                      f->id, run->delete_failures, eddy_status_name(st), why.detail, f->id, f->id);
            run->phase = P_FAIL_REFUSE;
        }
        break;
    default:
        break; /* not the report of the step handed out: ignored */
    }
    pthread_mutex_unlock(&f->lock);
}

void eddy__feed_marker_checked(eddy__feed *f, eddy__feed_run *run, eddy_status st, bool exists,
                               const eddy_error *err) {
    pthread_mutex_lock(&f->lock);
    if (run->expect == EDDY__STEP_MARKER_EXISTS) {
        run->expect = EDDY__STEP_DONE;
        if (st != EDDY_OK) {
            fail_run(f, run, st, "feed '%s': could not check its catch-up marker: %s", f->id,
                     err && err->detail[0] ? err->detail : eddy_status_str(st));
            run->phase = P_WIND_DOWN;
        } else {
            run->phase = exists ? P_SKIP : P_QUIESCE;
        }
    }
    pthread_mutex_unlock(&f->lock);
}

void eddy__feed_head_read(eddy__feed *f, eddy__feed_run *run, eddy_status st, long long head,
                          const eddy_error *err) {
    pthread_mutex_lock(&f->lock);
    if (run->expect == EDDY__STEP_READ_HEAD) {
        run->expect = EDDY__STEP_DONE;
        if (st != EDDY_OK) {
            fail_run(f, run, st, "feed '%s': could not read where the history ends: %s", f->id,
                     err && err->detail[0] ? err->detail : eddy_status_str(st));
            run->phase = P_ABANDON;
        } else {
            run->head = f->head = head;
            run->position = run->resume_from; /* 0, or where the projection's model is */
            run->phase = P_PAGES;
        }
    }
    pthread_mutex_unlock(&f->lock);
}

void eddy__feed_position_read(eddy__feed *f, eddy__feed_run *run, eddy_status st,
                              long long position, const eddy_error *err) {
    pthread_mutex_lock(&f->lock);
    if (run->expect == EDDY__STEP_POSITION) {
        run->expect = EDDY__STEP_DONE;
        if (st != EDDY_OK) {
            fail_run(f, run, st, "feed '%s': the projection's position failed: %s", f->id,
                     err && err->detail[0] ? err->detail : eddy_status_str(st));
            run->phase = P_ABANDON;
        } else if (position < 0) {
            fail_run(f, run, EDDY_ERR_INVALID_ARGUMENT,
                     "feed '%s': the projection's position is negative (%lld)", f->id, position);
            run->phase = P_ABANDON;
        } else {
            /* What the model holds counts as replayed: its live copies are duplicates. */
            run->resume_from = position;
            f->replayed_to = f->position = position;
            run->phase = P_HEAD;
        }
    }
    pthread_mutex_unlock(&f->lock);
}

/* Keeps a copy of the replayed event's id in the run (a buffer reused from event to event). */
static bool keep_replay_id(eddy__feed_run *run, const char *id) {
    size_t n = strlen(id) + 1;
    if (n > run->replay_id_cap) {
        size_t cap = n < 64 ? 64 : n;
        char *buf = eddy__fmalloc(cap);
        if (!buf)
            return false;
        eddy__ffree(run->replay_id);
        run->replay_id = buf;
        run->replay_id_cap = cap;
    }
    memcpy(run->replay_id, id, n);
    return true;
}

eddy__page_kind eddy__feed_page_event(eddy__feed *f, eddy__feed_run *run, const eddy_event *ev,
                                      const eddy_event_meta *meta, eddy__feed_step *step) {
    pthread_mutex_lock(&f->lock);
    bool go = run->expect == EDDY__STEP_READ_PAGE && run->oc == OC_NONE && !interrupted(f, run);
    pthread_mutex_unlock(&f->lock);
    if (!go)
        return EDDY__PAGE_STOP;
    long long pos = meta ? meta->position : 0;
    const char *evid = ev ? eddy_event_id(ev) : NULL;
    if (f->filter) {
        bool match = false;
        eddy_error merr = {0};
        eddy_status mst = eddy_filter_match(f->filter, ev, f->reader, &match, &merr);
        if (mst != EDDY_OK) {
            pthread_mutex_lock(&f->lock);
            fail_run(f, run, mst,
                     "feed '%s': could not match the stored event '%s' at position %lld against "
                     "its filter: %s",
                     f->id, evid ? evid : "?", pos,
                     merr.detail[0] ? merr.detail : eddy_status_str(mst));
            pthread_mutex_unlock(&f->lock);
            return EDDY__PAGE_STOP;
        }
        if (!match)
            return EDDY__PAGE_SKIP;
    }
    void *uev = NULL;
    eddy_error derr;
    derr.status = EDDY_OK;
    derr.detail[0] = '\0';
    eddy_status st = f->decode(ev, meta, &uev, &derr, f->codec_user);
    if (st == EDDY_OK && !uev)
        return EDDY__PAGE_SKIP;
    const char *id = st == EDDY_OK ? f->event_id(uev, f->codec_user) : NULL;
    /* id is borrowed from uev: decide before uev is freed. */
    enum {
        OK,
        BAD_DECODE,
        NO_ID,
        NO_MEMORY
    } why = st != EDDY_OK              ? BAD_DECODE
            : !id || !id[0]            ? NO_ID
            : !keep_replay_id(run, id) ? NO_MEMORY
                                       : OK;
    if (why != OK) {
        if (uev && f->free_event)
            f->free_event(uev, f->codec_user);
        pthread_mutex_lock(&f->lock);
        if (why == BAD_DECODE)
            fail_run(f, run, st,
                     "feed '%s': could not decode the stored event '%s' at position %lld: %s",
                     f->id, evid ? evid : "?", pos,
                     derr.detail[0] ? derr.detail : eddy_status_str(st));
        else if (why == NO_ID)
            fail_run(f, run, EDDY_ERR_INVALID_ARGUMENT,
                     "feed '%s': the event_id function gave no id for the stored event at "
                     "position %lld",
                     f->id, pos);
        else
            fail_run(f, run, EDDY_ERR_NOMEM, "feed '%s': out of memory at position %lld", f->id,
                     pos);
        pthread_mutex_unlock(&f->lock);
        return EDDY__PAGE_STOP;
    }
    run->replay_event = uev;
    run->replay_pos = pos;
    step->kind = EDDY__STEP_APPLY;
    step->event = uev;
    step->meta = meta;
    return EDDY__PAGE_APPLY;
}

eddy_status eddy__feed_replay_applied(eddy__feed *f, eddy__feed_run *run, eddy_status st,
                                      const eddy_error *err) {
    void *uev = run->replay_event;
    run->replay_event = NULL;
    if (uev && f->free_event)
        f->free_event(uev, f->codec_user);
    pthread_mutex_lock(&f->lock);
    if (st == EDDY_OK) {
        f->n_replayed++;
        f->position = run->replay_pos;
        remember_applied(f, f->replayed, run->replay_id);
    } else {
        fail_run(f, run, st,
                 "feed '%s': the projection failed to apply the event '%s' at "
                 "position %lld: %s",
                 f->id, run->replay_id, run->replay_pos,
                 err && err->detail[0] ? err->detail : eddy_status_str(st));
    }
    eddy_status go = run->oc == OC_NONE ? EDDY_OK
                     : run->fail.status ? run->fail.status
                                        : EDDY_ERR_CANCELLED;
    pthread_mutex_unlock(&f->lock);
    return go;
}

void eddy__feed_page_done(eddy__feed *f, eddy__feed_run *run, eddy_status st,
                          long long next_position, const eddy_error *err) {
    pthread_mutex_lock(&f->lock);
    if (run->expect == EDDY__STEP_READ_PAGE) {
        run->expect = EDDY__STEP_DONE;
        if (run->oc != OC_NONE) {
            run->phase = P_ABANDON; /* stopped, cancelled or failed in the page */
        } else if (st != EDDY_OK) {
            fail_run(f, run, st, "feed '%s': reading the history after position %lld failed: %s",
                     f->id, run->position,
                     err && err->detail[0] ? err->detail : eddy_status_str(st));
            run->phase = P_ABANDON;
        } else if (next_position <= run->position) {
            /* Nothing left to examine before the head (entries were removed): the end. */
            run->position = run->head;
        } else {
            /* The page examined every stored event up to next_position (a page is read whole
             * or the run ends, which forgets it). */
            run->position = f->replayed_to = next_position;
            if (next_position > f->position)
                f->position = next_position;
        }
    }
    pthread_mutex_unlock(&f->lock);
}

/* ---- state ----------------------------------------------------------------------------- */

eddy_status eddy__feed_listen(eddy__feed *f, const eddy_delivery *d, void **event,
                              eddy_event_meta *meta, bool *has_meta, eddy_error *err) {
    *event = NULL;
    *has_meta = eddy_delivery_stored_meta(d, meta) != 0;
    return f->decode(eddy_delivery_event(d), *has_meta ? meta : NULL, event, err, f->codec_user);
}

void eddy__feed_free_event(eddy__feed *f, void *event) {
    if (event && f->free_event)
        f->free_event(event, f->codec_user);
}

void eddy__feed_info(eddy__feed *f, eddy_feed_info *out) {
    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&f->lock);
    out->live = f->live && !f->failed;
    out->stopped = f->stopped;
    out->failed = f->failed;
    out->catching_up = f->active || f->queue;
    for (eddy__feed_run *q = f->queue; q; q = q->qnext)
        out->waiting++;
    out->held = f->nheld;
    out->replayed = f->n_replayed;
    out->applied = f->n_applied;
    out->duplicates = f->n_duplicates;
    out->refused = f->n_refused;
    out->apply_failed = f->n_apply_failed;
    out->position = f->position;
    out->head = f->head;
    out->last = f->last;
    pthread_mutex_unlock(&f->lock);
}

eddy_status eddy__feed_stats(eddy__feed *f, eddy_feed_info *out) {
    if (!f || !out)
        return EDDY_ERR_INVALID_ARGUMENT;
    eddy__feed_info(f, out);
    return EDDY_OK;
}

bool eddy__feed_ready(eddy__feed *f) {
    eddy_feed_info info;
    return eddy__feed_stats(f, &info) == EDDY_OK && info.live;
}

bool eddy__feed_failure(eddy__feed *f, eddy_error *cause) {
    if (!f)
        return false;
    pthread_mutex_lock(&f->lock);
    bool failed = f->failed;
    if (failed && cause)
        *cause = f->failure;
    pthread_mutex_unlock(&f->lock);
    return failed;
}

/* ---- the user's side of a run -------------------------------------------------------------
 *
 * What both front ends did alike around the steps that run the user's code: which callback a
 * step calls and how its outcome is reported, an apply through the projection or through a
 * model kept in Redis (its write set gathered), and a replay page's batch committed with its
 * position before the page is reported. The front ends keep only the I/O (a commit sent and
 * its reply) and their way of marking "inside a callback" (eddy__feed_calls). */

static void calls_enter(const eddy__feed_calls *c) {
    if (c && c->enter)
        c->enter(c->ctx);
}

static void calls_leave(const eddy__feed_calls *c) {
    if (c && c->leave)
        c->leave(c->ctx);
}

static void calls_check(const eddy__feed_calls *c) {
    if (c && c->check)
        c->check(c->ctx);
}

eddy_status eddy__feed_model_new(eddy__feed *f, const char *ns, eddy_error *err) {
    if (!f->writes)
        return EDDY_OK;
    if (!(f->model = eddy__model_new(ns, f->id, f->writes, f->proj.user)))
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    eddy__writes_init(&f->page, f->model);
    return EDDY_OK;
}

const eddy__model *eddy__feed_model(const eddy__feed *f) { return f->model; }

eddy_status eddy__feed_checkpoints_incomplete(const char *id, eddy_error *err) {
    return eddy__fail(err, EDDY_ERR_INVALID_SPEC,
                      "%s%s%s: the checkpoint storage lacks an operation (exists, save and remove "
                      "are needed)",
                      id ? "feed '" : "domain feed", id ? id : "", id ? "'" : "");
}

eddy_status eddy__feed_start(eddy__feed *f, bool go_live, void *waiter, bool from_callback,
                             eddy__feed_run **run, eddy_error *err) {
    return go_live ? eddy__feed_go_live(f, waiter, from_callback, run, err)
                   : eddy__feed_catch_up(f, waiter, from_callback, run, err);
}

eddy_status eddy__feed_open(const eddy_feed_config *cfg, eddy__feed_mode mode, bool ckpt,
                            bool complete, const char *ns, eddy__feed **out, eddy_error *err) {
    *out = NULL;
    if (ckpt && !complete)
        return eddy__feed_checkpoints_incomplete(cfg->id ? cfg->id : "?", err);
    eddy_status st = eddy__feed_new(cfg, mode, ckpt, out, err);
    if (st == EDDY_OK && (st = eddy__feed_model_new(*out, ns, err)) != EDDY_OK) {
        eddy__feed_free(*out);
        *out = NULL;
    }
    return st;
}

/* The projection's apply. Neither feed takes EDDY_PENDING for an answer; the reactive one says
 * why instead of passing the status on. */
static eddy_status project(eddy__feed *f, void *event, const eddy_event_meta *meta,
                           const eddy__feed_calls *calls, eddy_error *err) {
    calls_enter(calls);
    eddy_status st = f->proj.apply(event, meta, err, f->proj.user);
    calls_leave(calls);
    if (st == EDDY_PENDING && f->mode == EDDY__FEED_REACTIVE)
        st = eddy__fail(err, EDDY_ERR_ILLEGAL_STATE,
                        "feed '%s': apply returned EDDY_PENDING, which this feed does not support",
                        f->id);
    return st;
}

static eddy_status gather(eddy__feed *f, eddy_writes *w, void *event, const eddy_event_meta *meta,
                          const eddy__feed_calls *calls, eddy_error *err) {
    calls_enter(calls);
    eddy_status st = eddy__model_gather(f->model, w, event, meta, err);
    calls_leave(calls);
    return st;
}

eddy_status eddy__feed_apply(eddy__feed *f, void *event, const eddy_event_meta *meta,
                             eddy_writes *w, bool *commit, const eddy__feed_calls *calls,
                             eddy_error *err) {
    *commit = false;
    if (!f->model)
        return project(f, event, meta, calls, err);
    eddy_status st = gather(f, w, event, meta, calls, err);
    *commit = st == EDDY_OK;
    return st;
}

static eddy_status user_status(eddy_status (*fn)(eddy_error *, void *), void *user,
                               const eddy__feed_calls *calls, eddy_error *err) {
    if (!fn)
        return EDDY_OK;
    calls_enter(calls);
    eddy_status st = fn(err, user);
    calls_leave(calls);
    return st;
}

bool eddy__feed_run_user_step(eddy__feed *f, eddy__feed_run *run, const eddy__feed_step *step,
                              const eddy__feed_calls *calls, eddy__feed_out *out) {
    eddy_error e = {0};
    eddy_status st;
    switch (step->kind) {
    case EDDY__STEP_STARTED:
    case EDDY__STEP_COMPLETED:
        st = user_status(step->kind == EDDY__STEP_STARTED ? f->proj.replay_started
                                                          : f->proj.replay_completed,
                         f->proj.user, calls, &e);
        calls_check(calls);
        eddy__feed_step_done(f, run, st, &e, out);
        return true;
    case EDDY__STEP_ABANDONED:
        if (f->proj.replay_abandoned) {
            calls_enter(calls);
            f->proj.replay_abandoned(f->proj.user);
            calls_leave(calls);
        }
        eddy__feed_step_done(f, run, EDDY_OK, NULL, out);
        return true;
    case EDDY__STEP_POSITION: {
        if (f->model)
            return false; /* the model's position: a read of the store */
        long long at = 0;
        calls_enter(calls);
        st = f->proj.position(&at, &e, f->proj.user);
        calls_leave(calls);
        calls_check(calls);
        eddy__feed_position_read(f, run, st, at, &e);
        return true;
    }
    case EDDY__STEP_APPLY:
        if (f->model)
            return false; /* gathered, then committed on its own by the front end */
        st = project(f, step->event, step->meta, calls, &e);
        eddy__feed_step_done(f, run, st, &e, out);
        return true;
    default:
        return false;
    }
}

eddy_status eddy__feed_page_apply(eddy__feed *f, eddy__feed_run *run, const eddy_event *ev,
                                  const eddy_event_meta *meta, const eddy__feed_calls *calls) {
    calls_check(calls);
    eddy__feed_step step;
    switch (eddy__feed_page_event(f, run, ev, meta, &step)) {
    case EDDY__PAGE_SKIP:
        return EDDY_OK;
    case EDDY__PAGE_STOP:
        return EDDY_ERR_CANCELLED; /* ends the read; the core knows why */
    case EDDY__PAGE_APPLY:
        break;
    }
    eddy_error e = {0};
    eddy_status st = f->model ? gather(f, &f->page, step.event, step.meta, calls, &e)
                              : project(f, step.event, step.meta, calls, &e);
    calls_check(calls);
    return eddy__feed_replay_applied(f, run, st, &e);
}

const eddy_writes *eddy__feed_page_read(eddy__feed *f, eddy__feed_run *run, eddy_status st,
                                        long long next_position, const eddy_error *err) {
    if (f->model && f->page.events > 0) {
        /* What the page applied commits with its position before the page is reported, even
         * when the read stopped midway (a stop, an entry that does not decode). */
        run->page_st = st;
        run->page_next = next_position;
        run->page_err = st != EDDY_OK && err ? *err : (eddy_error){.status = st};
        return &f->page;
    }
    eddy__feed_page_done(f, run, st, next_position, err);
    return NULL;
}

const eddy_writes *eddy__feed_step_report(eddy__feed *f, eddy__feed_run *run, eddy_status st,
                                          long long value, const eddy_error *err,
                                          const eddy__feed_calls *calls, eddy__feed_out *out) {
    pthread_mutex_lock(&f->lock);
    eddy__feed_step_kind kind = run->expect;
    pthread_mutex_unlock(&f->lock);
    switch (kind) {
    /* A read may have failed because the driver was cancelled meanwhile: check first, so that
     * is not recorded as the feed's failure. A marker write or an apply is not cut short by a
     * cancel, so its failure stays the feed's. */
    case EDDY__STEP_MARKER_EXISTS:
        calls_check(calls);
        eddy__feed_marker_checked(f, run, st, value != 0, err);
        return NULL;
    case EDDY__STEP_POSITION:
        calls_check(calls);
        eddy__feed_position_read(f, run, st, value, err);
        return NULL;
    case EDDY__STEP_READ_HEAD:
        calls_check(calls);
        eddy__feed_head_read(f, run, st, value, err);
        return NULL;
    case EDDY__STEP_READ_PAGE:
        calls_check(calls);
        return eddy__feed_page_read(f, run, st, value, err);
    default:
        eddy__feed_step_done(f, run, st, err, out);
        return NULL;
    }
}

void eddy__feed_page_committed(eddy__feed *f, eddy__feed_run *run, eddy_status st,
                               const eddy_error *err) {
    eddy__writes_clear(&f->page);
    if (st != EDDY_OK && run->page_st == EDDY_OK) {
        run->page_st = st;
        run->page_err = err ? *err : (eddy_error){.status = st};
    }
    eddy__feed_page_done(f, run, run->page_st, run->page_next,
                         run->page_st == EDDY_OK ? NULL : &run->page_err);
}
