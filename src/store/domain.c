/* SPDX-License-Identifier: BSD-3-Clause */
/* The domain event feed's shared decisions; see domain.h.
 *
 * Invariants:
 * - The registry holds each id reserved or registered by a live domain, once: an id is
 *   reserved by register_begin under the registry lock and released by register_end(false) or
 *   eddy__domain_free, so two feeds of the process never share a checkpoint key.
 * - A domain goes NONE -> REGISTERING -> REGISTERED (or back to NONE when the front end could
 *   not build its feed), never back from REGISTERED; what register copied is read-only after.
 * - `unreadable` only goes from unset to set; the error recorded is the first.
 */
#include "store/domain.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "store/store.h"
#include "util/options.h"

/* ---- the process-wide registry of ids -------------------------------------------------- */

typedef struct reg_node {
    struct reg_node *next;
    char id[]; /* flexible */
} reg_node;

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static reg_node *reg_head;

/* Reserves id: EDDY_OK, EDDY_ERR_INVALID_ARGUMENT when it is taken, EDDY_ERR_NOMEM. */
static eddy_status reg_reserve(const char *id) {
    size_t n = strlen(id) + 1;
    reg_node *node = malloc(sizeof(*node) + n);
    if (!node)
        return EDDY_ERR_NOMEM;
    memcpy(node->id, id, n);
    pthread_mutex_lock(&reg_lock);
    bool taken = false;
    for (reg_node *r = reg_head; r && !taken; r = r->next)
        taken = strcmp(r->id, id) == 0;
    if (!taken) {
        node->next = reg_head;
        reg_head = node;
    }
    pthread_mutex_unlock(&reg_lock);
    if (taken) {
        free(node);
        return EDDY_ERR_INVALID_ARGUMENT;
    }
    return EDDY_OK;
}

static void reg_release(const char *id) {
    reg_node *found = NULL;
    pthread_mutex_lock(&reg_lock);
    for (reg_node **pp = &reg_head; *pp; pp = &(*pp)->next)
        if (strcmp((*pp)->id, id) == 0) {
            found = *pp;
            *pp = found->next;
            break;
        }
    pthread_mutex_unlock(&reg_lock);
    free(found);
}

/* ---- the domain ------------------------------------------------------------------------ */

typedef enum dstate { D_NONE, D_REGISTERING, D_REGISTERED } dstate;

struct eddy__domain {
    pthread_mutex_t lock;
    eddy_feed_config cfg; /* id, projection and filter unset; checkpoints -> ckpt */
    eddy_checkpoints ckpt;
    dstate state;
    char *id;
    eddy_projection proj;
    eddy_filter *filter;
    eddy__feed *feed;  /* the registered projection's, the front end's (set before REGISTERED) */
    bool needs_reader; /* the filter has a data condition and cfg.reader is NULL */
    bool unreadable;
    eddy_error unreadable_err;
};

static bool projection_unset(const eddy_projection *p) {
    return !p->apply && !p->replay_started && !p->replay_completed && !p->replay_abandoned &&
           !p->keyed_by_metadata && !p->user;
}

eddy_status eddy__domain_new(const eddy_feed_config *cfg, eddy__domain **out, eddy_error *err) {
    if (!out)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "out is NULL");
    *out = NULL;
    if (!cfg)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "the feed config is NULL");
    eddy_feed_config full; /* the caller's fields, and the defaults of the newer ones */
    eddy__opts_widen(&eddy__feed_config_table, &full, cfg);
    cfg = &full;
    if (cfg->id)
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC,
                          "domain feed: cfg.id must be unset (the id comes with register)");
    if (!projection_unset(&cfg->projection))
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC,
                          "domain feed: cfg.projection must be unset (the projection comes with "
                          "register)");
    if (cfg->filter)
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC,
                          "domain feed: cfg.filter must be unset (the filter comes with register)");
    if (cfg->writes)
        return eddy__fail(err, EDDY_ERR_NOT_SUPPORTED,
                          "domain feed: cfg.writes (a model kept in Redis) is not supported: "
                          "register projections with apply");
    if (!cfg->decode)
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC, "domain feed: decode is required");
    if (!cfg->event_id)
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC, "domain feed: event_id is required");
    if (cfg->dedup_cache_size <= 0)
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC,
                          "domain feed: dedup_cache_size must be greater than 0 (it is %ld)",
                          cfg->dedup_cache_size);
    if (cfg->max_buffered_events <= 0)
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC,
                          "domain feed: max_buffered_events must be greater than 0 (it is %ld)",
                          cfg->max_buffered_events);
    if (cfg->page_size == 0)
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC, "domain feed: page_size must be at least 1");
    const eddy_checkpoints *cp = cfg->checkpoints;
    if (cp && !EDDY__CHECKPOINTS_COMPLETE(cp))
        return eddy__feed_checkpoints_incomplete(NULL, err);
    eddy__domain *d = calloc(1, sizeof(*d));
    if (!d)
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    pthread_mutex_init(&d->lock, NULL);
    d->cfg = *cfg;
    if (cp) {
        d->ckpt = *cp;
        d->cfg.checkpoints = &d->ckpt;
    }
    *out = d;
    return EDDY_OK;
}

static void forget_registration(eddy__domain *d) {
    if (d->id)
        reg_release(d->id);
    free(d->id);
    eddy_filter_free(d->filter);
    d->id = NULL;
    d->filter = NULL;
    d->feed = NULL;
    memset(&d->proj, 0, sizeof(d->proj));
    d->needs_reader = false;
}

void eddy__domain_free(eddy__domain *d) {
    if (!d)
        return;
    forget_registration(d);
    pthread_mutex_destroy(&d->lock);
    free(d);
}

/* Registration's first step, before the front end builds the catch-up feed: the checks, the
 * id reserved, the copies made, and *feed_cfg filled. */
static eddy_status register_begin(eddy__domain *d, const char *id,
                                  const eddy_projection *projection, const eddy_filter *filter,
                                  eddy_feed_config *feed_cfg, eddy_error *err) {
    if (!d || !projection || !feed_cfg)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "feed or projection is NULL");
    pthread_mutex_lock(&d->lock);
    eddy_status st = EDDY_OK;
    if (d->state != D_NONE) {
        st = eddy__fail(err, EDDY_ERR_ILLEGAL_STATE,
                        "the domain feed already has the projection '%s': it takes one "
                        "projection only (build another feed for '%s')",
                        d->id ? d->id : "?", id ? id : "?");
    } else if ((st = eddy__store_check_id(id, "the projection id", err)) != EDDY_OK) {
        /* err filled */
    } else if (!projection->apply) {
        st = eddy__fail(err, EDDY_ERR_INVALID_SPEC, "projection '%s': apply is required", id);
    } else {
        eddy_status rst = reg_reserve(id);
        if (rst != EDDY_OK) {
            st = rst == EDDY_ERR_NOMEM
                     ? eddy__fail(err, EDDY_ERR_NOMEM, "out of memory")
                     : eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT,
                                  "the projection id '%s' is already registered on a domain "
                                  "feed of this process: its checkpoint key must be unique",
                                  id);
        } else if (!(d->id = strdup(id)) || (filter && !(d->filter = eddy_filter_dup(filter)))) {
            if (!d->id)
                reg_release(id);
            forget_registration(d); /* releases the id */
            st = eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
        } else {
            d->proj = *projection;
            d->needs_reader = d->filter && !d->cfg.reader && eddy_filter_needs_data(d->filter);
            d->state = D_REGISTERING;
            *feed_cfg = d->cfg;
            feed_cfg->id = d->id;
            feed_cfg->projection = d->proj;
            feed_cfg->filter = d->filter;
        }
    }
    pthread_mutex_unlock(&d->lock);
    return st;
}

/* Its last: ok, the projection is registered; else the id is released, the copies forgotten. */
static void register_end(eddy__domain *d, bool ok, eddy__feed *feed) {
    pthread_mutex_lock(&d->lock);
    if (d->state == D_REGISTERING) {
        if (ok) {
            d->feed = feed;
            d->state = D_REGISTERED;
        } else {
            forget_registration(d);
            d->state = D_NONE;
        }
    }
    pthread_mutex_unlock(&d->lock);
}

eddy_status eddy__domain_register(eddy__domain *d, const char *id,
                                  const eddy_projection *projection, const eddy_filter *filter,
                                  eddy_status (*build)(const eddy_feed_config *feed_cfg, void *user,
                                                       eddy__feed **core, eddy_error *err),
                                  void *user, eddy_error *err) {
    if (!d)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "feed is NULL");
    eddy_feed_config fc;
    eddy_status st = register_begin(d, id, projection, filter, &fc, err);
    if (st != EDDY_OK)
        return st;
    eddy__feed *core = NULL;
    st = build(&fc, user, &core, err);
    register_end(d, st == EDDY_OK, core);
    return st;
}

bool eddy__domain_registered(eddy__domain *d) {
    if (!d)
        return false;
    pthread_mutex_lock(&d->lock);
    bool r = d->state == D_REGISTERED;
    pthread_mutex_unlock(&d->lock);
    return r;
}

const char *eddy__domain_id(eddy__domain *d) { return eddy__domain_registered(d) ? d->id : NULL; }

eddy_status eddy__domain_check(eddy__domain *d, const char *id, const char *what, eddy_error *err) {
    if (!d)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "feed is NULL");
    bool registered = eddy__domain_registered(d);
    if (id) {
        if (!registered || strcmp(id, d->id) != 0)
            return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT,
                              "%s: no projection is registered as '%s' on this domain feed%s%s%s",
                              what, id, registered ? " (it has '" : "", registered ? d->id : "",
                              registered ? "')" : "");
        return EDDY_OK;
    }
    if (!registered)
        return eddy__fail(err, EDDY_ERR_ILLEGAL_STATE,
                          "%s: no projection is registered on this domain feed (hand the event "
                          "back to the broker; do not acknowledge it)",
                          what);
    return EDDY_OK;
}

eddy_status eddy__domain_check_id(eddy__domain *d, const char *id, const char *what,
                                  eddy_error *err) {
    if (!id)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "id is NULL");
    return eddy__domain_check(d, id, what, err);
}

eddy_status eddy__domain_run_check(eddy__domain *d, eddy__domain_run run, const char *id,
                                   eddy_error *err) {
    switch (run) {
    case EDDY__DOMAIN_CATCH_UP:
        return eddy__domain_check_id(d, id, "catch up", err);
    case EDDY__DOMAIN_GO_LIVE:
        return eddy__domain_check_id(d, id, "go live", err);
    default:
        return eddy__domain_check(d, NULL, "catch up all", err);
    }
}

/* Routes a CloudEvent up to the point of feeding it (eddy__domain_route_feed's rules): EDDY_OK
 * with *event set when it is to be fed, NULL and *route FILTERED when not. */
static eddy_status route_event(eddy__domain *d, const eddy_event *ev, const eddy_event_meta *meta,
                               eddy_route *route, void **event, eddy_error *err) {
    *event = NULL;
    *route = EDDY_ROUTE_FILTERED;
    if (!ev)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "the event is NULL");
    eddy_status st = eddy__domain_check(d, NULL, "route", err);
    if (st != EDDY_OK)
        return st;
    pthread_mutex_lock(&d->lock);
    if (!d->unreadable && d->needs_reader) {
        d->unreadable = true;
        eddy__fail(&d->unreadable_err, EDDY_ERR_UNREADABLE_FILTER,
                   "domain feed '%s': the filter has a data condition and the feed has no data "
                   "field reader (cfg.reader); stop consuming, and build a feed with a reader or "
                   "register a filter without the data condition",
                   d->id);
    }
    bool unreadable = d->unreadable;
    eddy_error why = d->unreadable_err;
    pthread_mutex_unlock(&d->lock);
    if (unreadable) {
        if (err)
            *err = why;
        return why.status;
    }
    bool match = true;
    if (d->filter) {
        eddy_error merr = {0};
        st = eddy_filter_match(d->filter, ev, d->cfg.reader, &match, &merr);
        if (st == EDDY_ERR_UNREADABLE_FILTER) {
            /* A reader that cannot read the filter's fields: sticky as well. */
            pthread_mutex_lock(&d->lock);
            if (!d->unreadable) {
                d->unreadable = true;
                eddy__fail(&d->unreadable_err, st, "domain feed '%s': %s", d->id,
                           merr.detail[0] ? merr.detail : eddy_status_str(st));
            }
            why = d->unreadable_err;
            pthread_mutex_unlock(&d->lock);
            if (err)
                *err = why;
            return why.status;
        }
        if (st != EDDY_OK)
            return eddy__fail(err, st, "domain feed '%s': could not match the event '%s': %s",
                              d->id, eddy_event_id(ev) ? eddy_event_id(ev) : "?",
                              merr.detail[0] ? merr.detail : eddy_status_str(st));
    }
    if (!match)
        return EDDY_OK; /* FILTERED, never decoded */
    eddy_error derr = {0};
    st = d->cfg.decode(ev, meta, event, &derr, d->cfg.codec_user);
    if (st != EDDY_OK) {
        if (*event && d->cfg.free_event)
            d->cfg.free_event(*event, d->cfg.codec_user);
        *event = NULL;
        return eddy__fail(err, st, "domain feed '%s': could not decode the event '%s': %s", d->id,
                          eddy_event_id(ev) ? eddy_event_id(ev) : "?",
                          derr.detail[0] ? derr.detail : eddy_status_str(st));
    }
    return EDDY_OK; /* *event NULL: the projection does not handle it, FILTERED */
}

eddy_route eddy__domain_outcome(eddy_status st, bool deferred, eddy_route route) {
    return st != EDDY_OK || deferred ? EDDY_ROUTE_DEFERRED : route;
}

/* ---- feeding a routed event -------------------------------------------------------------- */

/* One routing in flight: everything its completion needs, so it never touches the domain. */
typedef struct routed {
    eddy__route_done_fn done;
    void *user;
    eddy_route route; /* the answer when st is EDDY_OK and nothing was fed */
    void *event;      /* a routed event to release, or NULL */
    eddy_feed_free_fn free_event;
    void *codec_user;
    bool heap;
} routed;

static routed *routed_new(eddy__domain *d, const eddy__domain_feeder *fd, routed *stack,
                          eddy__route_done_fn done, void *user) {
    routed *r = fd->later ? calloc(1, sizeof(*r)) : memset(stack, 0, sizeof(*stack));
    if (!r)
        return NULL;
    r->heap = fd->later;
    r->done = done;
    r->user = user;
    r->free_event = d->cfg.free_event;
    r->codec_user = d->cfg.codec_user;
    return r;
}

static void routed_end(routed *r) {
    if (r->event && r->free_event)
        r->free_event(r->event, r->codec_user);
    if (r->heap)
        free(r);
}

static void routed_done(eddy_status st, const eddy_error *err, void *user) {
    routed *r = user;
    bool deferred = st == EDDY_PENDING; /* the feed did not take it, nor keep it */
    if (deferred)
        st = EDDY_OK;
    eddy_route route = eddy__domain_outcome(st, deferred, r->route);
    eddy__route_done_fn done = r->done;
    void *u = r->user;
    routed_end(r);
    done(st, route, st == EDDY_OK ? NULL : err, u);
}

/* Feeds an event without holding it; r->event (when set) is released at completion. */
static eddy_status routed_feed(const eddy__domain_feeder *fd, const eddy_event_meta *meta,
                               void *event, routed *r, eddy_error *err) {
    r->route = EDDY_ROUTE_DELIVERED;
    eddy_status st = fd->feed(fd->ctx, meta, event, routed_done, r);
    if (st != EDDY_OK) { /* refused up front: the completion does not run */
        routed_end(r);
        return eddy__fail(err, st, "the event was not accepted");
    }
    return EDDY_OK;
}

eddy_status eddy__domain_accept_or_defer(eddy__domain *d, const eddy_event_meta *meta, void *event,
                                         const eddy__domain_feeder *fd, eddy__route_done_fn done,
                                         void *user, eddy_error *err) {
    eddy_status st = eddy__domain_check(d, NULL, "accept or defer", err);
    if (st != EDDY_OK)
        return st;
    routed stack;
    routed *r = routed_new(d, fd, &stack, done, user);
    if (!r)
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    return routed_feed(fd, meta, event, r, err); /* the caller's event: not released */
}

eddy_status eddy__domain_route_feed(eddy__domain *d, const eddy_event *ev,
                                    const eddy_event_meta *meta, const eddy__domain_feeder *fd,
                                    eddy__route_done_fn done, void *user, eddy_error *err) {
    void *event = NULL;
    eddy_route route;
    eddy_error rerr = {0};
    eddy_status st = route_event(d, ev, meta, &route, &event, &rerr);
    if (st == EDDY_ERR_ILLEGAL_STATE || st == EDDY_ERR_UNREADABLE_FILTER ||
        st == EDDY_ERR_INVALID_ARGUMENT) {
        /* Refusals that hold for every event: up front. */
        if (err)
            *err = rerr;
        return st;
    }
    routed stack;
    routed *r = routed_new(d, fd, &stack, done, user);
    if (!r) {
        if (event && d->cfg.free_event)
            d->cfg.free_event(event, d->cfg.codec_user);
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    }
    r->event = event;
    if (st != EDDY_OK || !event) {
        /* Filtered, or not decoded: answered on the front end's turn. */
        r->route = route;
        if (!fd->post)
            routed_done(st, &rerr, r);
        else if (fd->post(fd->ctx, routed_done, r, st, &rerr) != EDDY_OK) {
            routed_end(r);
            return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
        }
        return EDDY_OK;
    }
    return routed_feed(fd, meta, event, r, err);
}

/* The registered projection's feed core, or NULL. */
static eddy__feed *registered_feed(eddy__domain *d) {
    return eddy__domain_registered(d) ? d->feed : NULL;
}

bool eddy__domain_ready(eddy__domain *d) { return eddy__feed_ready(registered_feed(d)); }

bool eddy__domain_refuses(eddy__domain *d) { return eddy__domain_failure(d, NULL); }

bool eddy__domain_failure(eddy__domain *d, eddy_error *cause) {
    return eddy__feed_failure(registered_feed(d), cause);
}

eddy_status eddy__domain_stats(eddy__domain *d, eddy_feed_info *out) {
    if (!d || !out)
        return EDDY_ERR_INVALID_ARGUMENT;
    eddy__feed *f = registered_feed(d);
    if (f)
        return eddy__feed_stats(f, out);
    memset(out, 0, sizeof(*out));
    return EDDY_OK;
}

const char *eddy_route_name(eddy_route route) {
    switch (route) {
    case EDDY_ROUTE_FILTERED:
        return "EDDY_ROUTE_FILTERED";
    case EDDY_ROUTE_DELIVERED:
        return "EDDY_ROUTE_DELIVERED";
    case EDDY_ROUTE_DEFERRED:
        return "EDDY_ROUTE_DEFERRED";
    }
    return "?";
}
