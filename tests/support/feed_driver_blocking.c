/* SPDX-License-Identifier: BSD-3-Clause */
/* The blocking feed behind the feed scenario driver: a direct mapping; a call in flight runs on
 * a thread of its own, but an offer (which never waits) on the caller's, its completion kept. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "eddy/blocking.h"
#include "eddy/feed.h"
#include "eddy_test.h"
#include "feed_driver.h"

struct tfeed {
    eddy_feed *feed;
    eddy_checkpoints ckpt;
};

struct tcall {
    pthread_t t;
    tfeed *f;
    feed_call_kind kind;
    const eddy_event_meta *meta;
    void *event;
    eddy_status st;
    eddy_error err;
    atomic_bool done;
    atomic_ulong at;
    atomic_int calls; /* an offer's completions */
};

static atomic_ulong finish_seq;

static eddy_status b_new(tstore *st, const eddy_feed_config *cfg, tfeed **out, eddy_error *err) {
    *out = NULL;
    tfeed *f = calloc(1, sizeof(*f));
    cr_assert(f);
    eddy_store *store = blocking_store_driver.native(st);
    f->ckpt = eddy_store_checkpoints(store);
    eddy_feed_config c = *cfg;
    if (!c.checkpoints)
        c.checkpoints = &f->ckpt;
    eddy_status rc = eddy_feed_new(store, &c, &f->feed, err);
    if (rc != EDDY_OK) {
        cr_assert_null(f->feed);
        free(f);
        return rc;
    }
    *out = f;
    return EDDY_OK;
}
static eddy_status b_new_gated(tstore *st, const eddy_feed_config *cfg, tgate *g, tfeed **out,
                               eddy_error *err) {
    eddy_feed_config c = *cfg;
    c.checkpoints = (eddy_checkpoints *)blocking_domain_driver.gate_checkpoints(g);
    return b_new(st, &c, out, err);
}
static void b_free(tfeed *f) {
    if (!f)
        return;
    eddy_feed_free(f->feed);
    free(f);
}
static eddy_status b_catch_up(tfeed *f, eddy_error *err) {
    return eddy_feed_catch_up(f->feed, NULL, err);
}
static eddy_status b_go_live(tfeed *f, eddy_error *err) {
    return eddy_feed_go_live(f->feed, NULL, err);
}
static void b_stop(tfeed *f) { eddy_feed_stop_catch_up(f->feed); }
static eddy_status b_accept(tfeed *f, void *event, eddy_error *err) {
    return eddy_feed_accept(f->feed, event, NULL, err);
}
static eddy_status b_accept_meta(tfeed *f, const eddy_event_meta *meta, void *event,
                                 eddy_error *err) {
    return eddy_feed_accept_meta(f->feed, meta, event, NULL, err);
}

static void finish(tcall *c) {
    atomic_store(&c->at, atomic_fetch_add(&finish_seq, 1) + 1);
    atomic_store(&c->done, true);
}

static void on_offered(eddy_status st, const eddy_error *err, void *user) {
    tcall *c = user;
    cr_assert_eq(atomic_fetch_add(&c->calls, 1), 0, "the offer completed twice");
    cr_assert((st == EDDY_OK) == (err == NULL), "%s: detail %s", eddy_status_name(st),
              err ? "given" : "missing");
    c->st = st;
    if (err)
        c->err = *err;
    finish(c);
}

static void *call_main(void *arg) {
    tcall *c = arg;
    switch (c->kind) {
    case FEED_OFFER:
        c->st = eddy_feed_offer(c->f->feed, c->meta, c->event, on_offered, c);
        if (c->st == EDDY_OK)
            return NULL; /* on_offered finishes it */
        break;
    case FEED_ACCEPT:
        c->st = eddy_feed_accept(c->f->feed, c->event, NULL, &c->err);
        break;
    case FEED_ACCEPT_META:
        c->st = eddy_feed_accept_meta(c->f->feed, c->meta, c->event, NULL, &c->err);
        break;
    case FEED_CATCH_UP:
        c->st = eddy_feed_catch_up(c->f->feed, NULL, &c->err);
        break;
    case FEED_GO_LIVE:
        c->st = eddy_feed_go_live(c->f->feed, NULL, &c->err);
        break;
    }
    finish(c);
    return NULL;
}

static void *noop_main(void *arg) { return arg; }

static tcall *b_start(tfeed *f, feed_call_kind kind, const eddy_event_meta *meta, void *event) {
    tcall *c = calloc(1, sizeof(*c));
    cr_assert(c);
    c->f = f;
    c->kind = kind;
    c->meta = meta;
    c->event = event;
    if (kind == FEED_OFFER) {
        call_main(c); /* here: an offer does not wait */
        cr_assert_eq(pthread_create(&c->t, NULL, noop_main, NULL), 0);
    } else {
        cr_assert_eq(pthread_create(&c->t, NULL, call_main, c), 0);
    }
    return c;
}

static tcall *b_start_from_projection(tfeed *f, feed_call_kind kind, const eddy_event_meta *meta,
                                      void *event) {
    tcall *c = calloc(1, sizeof(*c));
    cr_assert(c);
    c->f = f;
    c->kind = kind;
    c->meta = meta;
    c->event = event;
    call_main(c); /* here, on the projection's thread */
    /* join() joins a thread: give it one that has nothing to do. */
    cr_assert_eq(pthread_create(&c->t, NULL, noop_main, NULL), 0);
    return c;
}
static bool b_finished(tcall *c) { return atomic_load(&c->done); }
static unsigned long b_finished_at(tcall *c) { return atomic_load(&c->at); }
static bool finished(void *c) { return atomic_load(&((tcall *)c)->done); }

static eddy_status b_join(tcall *c, eddy_error *err) {
    pthread_join(c->t, NULL);
    cr_assert(eddy_test_wait_until(finished, c, 20000), "the call never completed");
    eddy_status st = c->st;
    if (err)
        *err = c->err;
    free(c);
    return st;
}
static void b_free_from_projection(tfeed *f) {
    eddy_feed *feed = f->feed;
    f->feed = NULL;
    eddy_feed_free(feed);
}
static void b_stop_from_projection(tfeed *f) { eddy_feed_stop_catch_up(f->feed); }
struct tlisten {
    eddy_bus *bus;
    char name[64];
};

static eddy_status b_listen(tfeed *f, const eddy_settings *s, const char *subject,
                            const char *group, tlisten **out, eddy_error *err) {
    *out = NULL;
    tlisten *l = calloc(1, sizeof(*l));
    cr_assert(l);
    snprintf(l->name, sizeof(l->name), "%s", group);
    eddy_subscription_spec sp;
    eddy_subscription_spec_init(&sp);
    sp.name = l->name;
    sp.pattern = subject;
    sp.shape = EDDY_COMPETING;
    sp.group = group;
    sp.delivery = EDDY_AT_LEAST_ONCE;
    sp.handler = eddy_feed_handler;
    sp.user = f->feed;
    eddy_settings shared = *s;
    eddy_test_share_reads(&shared);
    eddy_status rc = eddy_bus_new(&shared, &sp, 1, &l->bus, err);
    if (rc == EDDY_OK && (rc = eddy_bus_start(l->bus, err)) != EDDY_OK)
        eddy_bus_free(l->bus);
    if (rc != EDDY_OK) {
        free(l);
        return rc;
    }
    *out = l;
    return EDDY_OK;
}
static eddy_status b_listener_stats(tlisten *l, eddy_consumer_stats *out) {
    return eddy_bus_consumer_stats(l->bus, l->name, out);
}
static eddy_status b_listener_publish(tlisten *l, const char *subject, const eddy_event *ev) {
    return eddy_bus_publish(l->bus, subject, ev, NULL, 0, NULL);
}
static void b_listener_stop(tlisten *l) { eddy_bus_stop(l->bus); }
static void b_listener_free(tlisten *l) {
    if (!l)
        return;
    eddy_bus_stop(l->bus);
    eddy_bus_free(l->bus);
    free(l);
}

static void b_id(tfeed *f, char *buf, size_t size) {
    const char *id = eddy_feed_id(f->feed);
    snprintf(buf, size, "%s", id ? id : "");
}

static void b_shape_refusals(tstore *st, const eddy_feed_config *cfg, tfeed *f) {
    eddy_store *store = blocking_store_driver.native(st);
    eddy_feed *out = NULL;
    eddy_error err = {0};
    eddy_feed_config c = *cfg;
    eddy_checkpoint_ops half = {NULL, NULL, NULL, NULL};
    eddy_checkpoints bad = {&half, NULL};
    c.checkpoints = &bad;
    cr_expect_eq(eddy_feed_new(store, &c, &out, &err), EDDY_ERR_INVALID_SPEC);
    cr_expect_null(out);
    c.checkpoints = &f->ckpt;
    cr_expect_eq(eddy_feed_new(NULL, &c, &out, NULL), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_feed_new(store, NULL, &out, NULL), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_feed_new(store, &c, NULL, NULL), EDDY_ERR_INVALID_ARGUMENT);
    int any = 0;
    cr_expect_eq(eddy_feed_catch_up(NULL, NULL, NULL), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_feed_go_live(NULL, NULL, NULL), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_feed_accept(NULL, &any, NULL, NULL), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_feed_offer(NULL, NULL, &any, NULL, NULL), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_feed_stats(NULL, NULL), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_null(eddy_feed_id(NULL));
    cr_expect_not(eddy_feed_refuses_permanently(NULL));
    cr_expect_not(eddy_feed_ready_for_live_delivery(NULL));
    cr_expect_not(eddy_feed_failure(NULL, NULL));
    cr_expect_not(eddy_cancel_fired(NULL));
    eddy_cancel_fire(NULL);
    eddy_cancel_free(NULL);
    eddy_feed_stop_catch_up(NULL);
    eddy_feed_free(NULL);
    cr_expect_eq(eddy_feed_handler(NULL, NULL), EDDY_ERR_INVALID_ARGUMENT);
    eddy_feed_config_init(NULL);
    cr_expect_eq(eddy_feed_accept(f->feed, NULL, NULL, NULL), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_feed_offer(f->feed, NULL, NULL, NULL, NULL), EDDY_ERR_INVALID_ARGUMENT);
}

static bool b_ready(tfeed *f) { return eddy_feed_ready_for_live_delivery(f->feed); }
static bool b_refuses(tfeed *f) { return eddy_feed_refuses_permanently(f->feed); }
static bool b_failure(tfeed *f, eddy_error *cause) { return eddy_feed_failure(f->feed, cause); }
static eddy_status b_info(tfeed *f, eddy_feed_info *out) { return eddy_feed_stats(f->feed, out); }

const feed_driver blocking_feed_driver = {
    .name = "blocking",
    .reactive = false,
    .new_feed = b_new,
    .new_gated_feed = b_new_gated,
    .free = b_free,
    .catch_up = b_catch_up,
    .go_live = b_go_live,
    .stop_catch_up = b_stop,
    .accept = b_accept,
    .accept_meta = b_accept_meta,
    .start = b_start,
    .finished = b_finished,
    .finished_at = b_finished_at,
    .join = b_join,
    .free_from_projection = b_free_from_projection,
    .start_from_projection = b_start_from_projection,
    .stop_from_projection = b_stop_from_projection,
    .listen = b_listen,
    .listener_stats = b_listener_stats,
    .listener_publish = b_listener_publish,
    .listener_stop = b_listener_stop,
    .listener_free = b_listener_free,
    .id = b_id,
    .shape_refusals = b_shape_refusals,
    .ready_for_live_delivery = b_ready,
    .refuses_permanently = b_refuses,
    .failure = b_failure,
    .get_info = b_info,
};
