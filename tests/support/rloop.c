/* SPDX-License-Identifier: BSD-3-Clause */
/* The loop thread of the feature drivers (rloop.h). */
#include "rloop.h"

#include <criterion/criterion.h>
#include <ev.h>
#include <pthread.h>
#include <stdlib.h>

struct rloop {
    pthread_t thread;
    struct ev_loop *loop;
    ev_async wake;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    rloop_op *head, *tail;
    rloop_op *current; /* the op whose start function runs (loop thread only) */
};

static void on_wake(struct ev_loop *loop, ev_async *w, int revents) {
    (void)loop;
    (void)revents;
    rloop *l = w->data;
    for (;;) {
        pthread_mutex_lock(&l->lock);
        rloop_op *op = l->head;
        if (op && !(l->head = op->next))
            l->tail = NULL;
        pthread_mutex_unlock(&l->lock);
        if (!op)
            return;
        /* op may be gone once start returns (it finished it): only l is touched after. */
        l->current = op;
        op->start(op);
        l->current = NULL;
    }
}

static void *loop_thread(void *arg) {
    rloop *l = arg;
    ev_run(l->loop, 0);
    return NULL;
}

rloop *rloop_new(void) {
    rloop *l = calloc(1, sizeof(*l));
    cr_assert(l);
    pthread_mutex_init(&l->lock, NULL);
    pthread_cond_init(&l->cond, NULL);
    l->loop = ev_loop_new(EVFLAG_AUTO);
    cr_assert(l->loop);
    ev_async_init(&l->wake, on_wake);
    l->wake.data = l;
    ev_async_start(l->loop, &l->wake);
    cr_assert_eq(pthread_create(&l->thread, NULL, loop_thread, l), 0);
    return l;
}

static void start_quit(rloop_op *op) {
    ev_async_stop(op->l->loop, &op->l->wake);
    ev_break(op->l->loop, EVBREAK_ALL);
    rloop_finish(op, EDDY_OK);
}

void rloop_free(rloop *l) {
    if (!l)
        return;
    rloop_op quit = {0};
    rloop_call(l, &quit, start_quit);
    pthread_join(l->thread, NULL);
    ev_loop_destroy(l->loop);
    pthread_mutex_destroy(&l->lock);
    pthread_cond_destroy(&l->cond);
    free(l);
}

struct ev_loop *rloop_loop(rloop *l) {
    return l->loop;
}

bool rloop_on_thread(const rloop *l) { return pthread_equal(pthread_self(), l->thread); }

eddy_status rloop_call(rloop *l, rloop_op *op, void (*start)(rloop_op *op)) {
    cr_assert(!rloop_on_thread(l), "a driver call on the loop thread would wait on itself");
    op->l = l;
    op->start = start;
    op->done = false;
    op->next = NULL;
    op->callbacks = 0;
    pthread_mutex_lock(&l->lock);
    if (l->tail)
        l->tail->next = op;
    else
        l->head = op;
    l->tail = op;
    pthread_mutex_unlock(&l->lock);
    ev_async_send(l->loop, &l->wake);
    pthread_mutex_lock(&l->lock);
    while (!op->done)
        pthread_cond_wait(&l->cond, &l->lock);
    pthread_mutex_unlock(&l->lock);
    return op->st;
}

void rloop_finish(rloop_op *op, eddy_status st) {
    rloop *l = op->l;
    pthread_mutex_lock(&l->lock);
    op->st = st;
    op->done = true;
    pthread_cond_broadcast(&l->cond);
    pthread_mutex_unlock(&l->lock);
}

void rloop_callback(rloop_op *op, const char *what) {
    cr_assert(op->l->current != op, "%s: the callback ran inside the call that asked for it", what);
    cr_assert_eq(++op->callbacks, 1, "%s: the callback ran twice", what);
}

typedef struct run_op {
    rloop_op op;
    void (*fn)(void *arg);
    void *arg;
} run_op;

static void start_run(rloop_op *op) {
    run_op *r = (run_op *)op;
    r->fn(r->arg);
    rloop_finish(op, EDDY_OK);
}

void rloop_run(rloop *l, void (*fn)(void *arg), void *arg) {
    run_op r = {.fn = fn, .arg = arg};
    rloop_call(l, &r.op, start_run);
}
