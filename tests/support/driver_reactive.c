/* SPDX-License-Identifier: BSD-3-Clause */
/* The reactive front end behind the scenario driver. Each bus gets a libev loop running on a
 * thread of its own; every driver call is queued to that thread (an ev_async wakes it), runs
 * there, and the calling thread waits for the outcome: for start, until the ready callback
 * ran; for publish, until the publish callback ran; for subscribe on a started bus, until the
 * new subscription is ready; for a request, until its reply callback ran. Handlers therefore
 * run on the loop thread, as in a real program, and several threads may have requests in
 * flight on one loop at once. Every callback is checked to run exactly once, never inside the
 * call that asked for it. */
#include <criterion/criterion.h>
#include <ev.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "eddy/reactive.h"
#include "eddy_test.h"

typedef struct rtbus rtbus;

typedef struct call {
    struct call *next;
    void (*run)(rtbus *t, struct call *c); /* on the loop thread */
    const eddy_settings *settings;
    const eddy_subscription_spec *specs;
    size_t n;
    const char *subject;
    const eddy_event *ev;
    const char *name;
    eddy_consumer_stats *stats;
    eddy_request_stats *rstats;
    const eddy_request_opts *opts;
    bool value; /* request_value rather than request; resume rather than pause */
    const char *type;
    void (*fn)(void *arg); /* r_run */
    void *fn_arg;
    eddy_pack_fn pack;
    void *pack_user;
    eddy_event **reply;
    const eddy_gather_opts *gopts; /* request_all */
    eddy_replies **replies;
    size_t each;
    char *entry_id; /* publish_id: where the entry id goes */
    size_t entry_id_size;
    eddy_error *err;
    rtbus *t;      /* for callbacks */
    bool is_start; /* on_ready: start rather than subscribe */
    bool in_call;  /* the call that asked for the callback has not returned yet */
    int callbacks;
    eddy_status st;
    bool done;
} call;

struct rtbus {
    pthread_t thread;
    struct ev_loop *loop;
    ev_async wake;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    call *head, *tail;
    eddy_rbus *bus;
    bool started; /* loop thread only */
};

static void finish(rtbus *t, call *c, eddy_status st) {
    pthread_mutex_lock(&t->lock);
    c->st = st;
    c->done = true;
    pthread_cond_broadcast(&t->cond);
    pthread_mutex_unlock(&t->lock);
}

static void on_wake(struct ev_loop *loop, ev_async *w, int revents) {
    rtbus *t = w->data;
    for (;;) {
        pthread_mutex_lock(&t->lock);
        call *c = t->head;
        if (c && !(t->head = c->next))
            t->tail = NULL;
        pthread_mutex_unlock(&t->lock);
        if (!c)
            return;
        c->run(t, c);
    }
}

static void *loop_thread(void *arg) {
    rtbus *t = arg;
    ev_run(t->loop, 0);
    return NULL;
}

/* Runs c on the loop thread and waits until it is finished. */
static eddy_status submit(rtbus *t, call *c) {
    c->done = false;
    c->next = NULL;
    pthread_mutex_lock(&t->lock);
    if (t->tail)
        t->tail->next = c;
    else
        t->head = c;
    t->tail = c;
    pthread_mutex_unlock(&t->lock);
    ev_async_send(t->loop, &t->wake);
    pthread_mutex_lock(&t->lock);
    while (!c->done)
        pthread_cond_wait(&t->cond, &t->lock);
    pthread_mutex_unlock(&t->lock);
    return c->st;
}

static void copy_err(call *c, const eddy_error *err) {
    if (c->err && err)
        *c->err = *err;
}

/* ---- calls, on the loop thread ---------------------------------------------------------- */

static void run_new(rtbus *t, call *c) {
    eddy_settings s = *c->settings;
    eddy_test_share_reads(&s);
    finish(t, c, eddy_rbus_new(t->loop, &s, c->specs, c->n, &t->bus, c->err));
}

static void run_quit(rtbus *t, call *c) {
    ev_async_stop(t->loop, &t->wake);
    ev_break(t->loop, EVBREAK_ALL);
    finish(t, c, EDDY_OK);
}

static void on_ready(eddy_status st, const eddy_error *err, void *user) {
    call *c = user;
    rtbus *t = c->t;
    copy_err(c, err);
    if (c->is_start)
        t->started = st == EDDY_OK;
    finish(t, c, st);
}

static void run_start(rtbus *t, call *c) {
    c->t = t;
    c->is_start = true;
    eddy_status st = eddy_rbus_start(t->bus, on_ready, c, c->err);
    if (st != EDDY_OK)
        finish(t, c, st);
}

static void run_subscribe(rtbus *t, call *c) {
    eddy_status st;
    if (!t->started) {
        finish(t, c, eddy_rbus_subscribe(t->bus, c->specs, c->err));
        return;
    }
    c->t = t;
    if ((st = eddy_rbus_subscribe_ready(t->bus, c->specs, on_ready, c, c->err)) != EDDY_OK)
        finish(t, c, st);
}

static void run_stop(rtbus *t, call *c) {
    eddy_rbus_stop(t->bus);
    t->started = false;
    finish(t, c, EDDY_OK);
}

static void run_free(rtbus *t, call *c) {
    eddy_rbus_free(t->bus);
    t->bus = NULL;
    finish(t, c, EDDY_OK);
}

static void on_published(eddy_status st, const char *id, void *user) {
    call *c = user;
    cr_assert(st != EDDY_OK || id, "a successful publish has an entry id");
    if (st == EDDY_OK && c->entry_id)
        snprintf(c->entry_id, c->entry_id_size, "%s", id);
    finish(c->t, c, st);
}

static void run_publish(rtbus *t, call *c) {
    c->t = t;
    eddy_status st = eddy_rbus_publish(t->bus, c->subject, c->ev, on_published, c, c->err);
    if (st != EDDY_OK)
        finish(t, c, st);
}

static void run_stats(rtbus *t, call *c) {
    finish(t, c, eddy_rbus_consumer_stats(t->bus, c->name, c->stats));
}

static void run_pause(rtbus *t, call *c) {
    finish(t, c,
           c->value ? eddy_rbus_resume(t->bus, c->name, c->err)
                    : eddy_rbus_pause(t->bus, c->name, c->err));
}

static void run_fn(rtbus *t, call *c) {
    c->fn(c->fn_arg);
    finish(t, c, EDDY_OK);
}

static void run_request_stats(rtbus *t, call *c) {
    finish(t, c, eddy_rbus_request_stats(t->bus, c->name, c->rstats));
}

static void on_reply(eddy_status st, eddy_event *reply, void *user) {
    call *c = user;
    cr_assert(!c->in_call, "a request's callback ran inside the call that asked for it");
    cr_assert_eq(++c->callbacks, 1, "a request's callback ran twice");
    cr_assert(st == EDDY_OK ? reply != NULL : reply == NULL, "%s with%s a reply",
              eddy_status_name(st), reply ? "" : "out");
    *c->reply = reply;
    if (st != EDDY_OK && c->err) {
        c->err->status = st;
        snprintf(c->err->detail, sizeof(c->err->detail), "request: %s", eddy_status_name(st));
    }
    finish(c->t, c, st);
}

static void run_request(rtbus *t, call *c) {
    c->t = t;
    c->in_call = true;
    eddy_rrequest *handle = NULL;
    eddy_status st =
        c->value
            ? eddy_rbus_request_value(t->bus, c->subject, c->type, c->pack, c->pack_user, c->opts,
                                      on_reply, c, &handle, c->err)
            : eddy_rbus_request(t->bus, c->subject, c->ev, c->opts, on_reply, c, &handle, c->err);
    c->in_call = false;
    if (st != EDDY_OK) {
        cr_assert_null(handle, "a refused request has a handle");
        cr_assert_eq(c->callbacks, 0, "a refused request ran its callback");
        finish(t, c, st);
    } else {
        cr_assert(handle, "an accepted request has no handle");
    }
}

static void run_answer_all(rtbus *t, call *c) {
    finish(t, c, eddy_rbus_answer_all(t->bus, c->name, c->err));
}

static void on_gather_reply(eddy_status st, const eddy_event *reply, void *user) {
    call *c = user;
    cr_assert(!c->in_call, "a gather's reply was told inside the call that asked for it");
    cr_assert_eq(c->callbacks, 0, "a reply was told after the gather's completion");
    cr_assert(st == EDDY_OK ? reply != NULL : (st == EDDY_ERR_RESPONDER_FAILED && !reply),
              "%s with%s a reply", eddy_status_name(st), reply ? "" : "out");
    c->each++;
}

static void on_gathered(eddy_status st, eddy_replies *replies, void *user) {
    call *c = user;
    cr_assert(!c->in_call, "a gather's callback ran inside the call that asked for it");
    cr_assert_eq(++c->callbacks, 1, "a gather's callback ran twice");
    cr_assert_not_null(replies, "a gather completed without its list");
    *c->replies = replies;
    if (st != EDDY_OK && c->err) {
        c->err->status = st;
        snprintf(c->err->detail, sizeof(c->err->detail), "request_all: %s", eddy_status_name(st));
    }
    finish(c->t, c, st);
}

static void run_request_all(rtbus *t, call *c) {
    c->t = t;
    c->in_call = true;
    eddy_status st = eddy_rbus_request_all(t->bus, c->subject, c->ev, c->gopts, on_gather_reply,
                                           on_gathered, c, c->err);
    c->in_call = false;
    if (st != EDDY_OK) {
        cr_assert_eq(c->callbacks, 0, "a refused gather ran its callback");
        cr_assert_eq(c->each, 0, "a refused gather told of a reply");
        finish(t, c, st);
    }
}

/* ---- the driver --------------------------------------------------------------------------- */

static void destroy(rtbus *t) {
    call quit = {.run = run_quit};
    submit(t, &quit);
    pthread_join(t->thread, NULL);
    ev_loop_destroy(t->loop);
    pthread_mutex_destroy(&t->lock);
    pthread_cond_destroy(&t->cond);
    free(t);
}

static eddy_status r_new(const eddy_settings *s, const eddy_subscription_spec *specs, size_t n,
                         tbus **out, eddy_error *err) {
    *out = NULL;
    rtbus *t = calloc(1, sizeof(*t));
    cr_assert(t);
    pthread_mutex_init(&t->lock, NULL);
    pthread_cond_init(&t->cond, NULL);
    t->loop = ev_loop_new(EVFLAG_AUTO);
    cr_assert(t->loop);
    ev_async_init(&t->wake, on_wake);
    t->wake.data = t;
    ev_async_start(t->loop, &t->wake);
    cr_assert_eq(pthread_create(&t->thread, NULL, loop_thread, t), 0);
    call c = {.run = run_new, .settings = s, .specs = specs, .n = n, .err = err};
    eddy_status st = submit(t, &c);
    if (st != EDDY_OK) {
        destroy(t);
        return st;
    }
    *out = (tbus *)t;
    return EDDY_OK;
}

static eddy_status r_subscribe(tbus *b, const eddy_subscription_spec *spec, eddy_error *err) {
    call c = {.run = run_subscribe, .specs = spec, .err = err};
    return submit((rtbus *)b, &c);
}

static eddy_status r_start(tbus *b, eddy_error *err) {
    call c = {.run = run_start, .err = err};
    return submit((rtbus *)b, &c);
}

static eddy_status r_stop(tbus *b) {
    call c = {.run = run_stop};
    return submit((rtbus *)b, &c);
}

static void r_free(tbus *b) {
    if (!b)
        return;
    call c = {.run = run_free};
    submit((rtbus *)b, &c);
    destroy((rtbus *)b);
}

static eddy_status r_publish(tbus *b, const char *subject, const eddy_event *ev, eddy_error *err) {
    call c = {.run = run_publish, .subject = subject, .ev = ev, .err = err};
    return submit((rtbus *)b, &c);
}

static eddy_status r_publish_id(tbus *b, const char *subject, const eddy_event *ev, char *id,
                                size_t id_size, eddy_error *err) {
    call c = {.run = run_publish,
              .subject = subject,
              .ev = ev,
              .entry_id = id,
              .entry_id_size = id_size,
              .err = err};
    return submit((rtbus *)b, &c);
}

static eddy_status r_stats(tbus *b, const char *name, eddy_consumer_stats *out) {
    call c = {.run = run_stats, .name = name, .stats = out};
    return submit((rtbus *)b, &c);
}

static eddy_status r_request(tbus *b, const char *subject, const eddy_event *ev,
                             const eddy_request_opts *opts, eddy_event **reply, eddy_error *err) {
    *reply = NULL;
    call c = {
        .run = run_request, .subject = subject, .ev = ev, .opts = opts, .reply = reply, .err = err};
    return submit((rtbus *)b, &c);
}

static eddy_status r_request_value(tbus *b, const char *subject, const char *type,
                                   eddy_pack_fn pack, void *pack_user,
                                   const eddy_request_opts *opts, eddy_event **reply,
                                   eddy_error *err) {
    *reply = NULL;
    call c = {.run = run_request,
              .subject = subject,
              .value = true,
              .type = type,
              .pack = pack,
              .pack_user = pack_user,
              .opts = opts,
              .reply = reply,
              .err = err};
    return submit((rtbus *)b, &c);
}

static eddy_status r_request_stats(tbus *b, const char *name, eddy_request_stats *out) {
    call c = {.run = run_request_stats, .name = name, .rstats = out};
    return submit((rtbus *)b, &c);
}

static eddy_status r_pause(tbus *b, const char *name, eddy_error *err) {
    call c = {.run = run_pause, .name = name, .err = err};
    return submit((rtbus *)b, &c);
}

static eddy_status r_resume(tbus *b, const char *name, eddy_error *err) {
    call c = {.run = run_pause, .name = name, .value = true, .err = err};
    return submit((rtbus *)b, &c);
}

static void *r_native(tbus *b) { return ((rtbus *)b)->bus; }

static void r_run(tbus *b, void (*fn)(void *arg), void *arg) {
    call c = {.run = run_fn, .fn = fn, .fn_arg = arg};
    submit((rtbus *)b, &c);
}

static eddy_status r_answer_all(tbus *b, const char *name, eddy_error *err) {
    call c = {.run = run_answer_all, .name = name, .err = err};
    return submit((rtbus *)b, &c);
}

static eddy_status r_request_all(tbus *b, const char *subject, const eddy_event *ev,
                                 const eddy_gather_opts *opts, eddy_replies **out, size_t *each,
                                 eddy_error *err) {
    *out = NULL;
    call c = {.run = run_request_all,
              .subject = subject,
              .ev = ev,
              .gopts = opts,
              .replies = out,
              .err = err};
    eddy_status st = submit((rtbus *)b, &c);
    *each = c.each;
    return st;
}

const driver reactive_driver = {
    "reactive", r_new,    r_subscribe, r_start,         r_stop,          r_free,
    r_publish,  r_stats,  r_request,   r_request_value, r_request_stats, r_pause,
    r_resume,   r_native, r_run,       r_publish_id,    r_answer_all,    r_request_all};
