/* SPDX-License-Identifier: BSD-3-Clause */
/* Worker pool; see pool.h. Workers block SIGPIPE for their whole life: a handler that
 * publishes writes to sockets. */
#include "pool.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>

struct bpool {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bpool_job *head, *tail;
    bool closing;
    unsigned nthreads;
    pthread_t *threads;
};

static void *worker(void *arg) {
    bpool *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->lock);
        while (!p->head && !p->closing)
            pthread_cond_wait(&p->cond, &p->lock);
        bpool_job *j = p->head;
        if (j) {
            p->head = j->next;
            if (!p->head)
                p->tail = NULL;
        }
        pthread_mutex_unlock(&p->lock);
        if (!j)
            return NULL; /* closing and nothing left */
        j->fn(j);
    }
}

int eddy__bthread_start(pthread_t *t, void *(*fn)(void *), void *arg) {
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &block, &old); /* the new thread inherits it */
    int rc = pthread_create(t, NULL, fn, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

bpool *eddy__bpool_new(unsigned threads) {
    bpool *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->cond, NULL);
    p->threads = calloc(threads, sizeof(*p->threads));
    if (!p->threads) {
        eddy__bpool_free(p);
        return NULL;
    }
    for (unsigned i = 0; i < threads; i++) {
        if (eddy__bthread_start(&p->threads[i], worker, p) != 0)
            break;
        p->nthreads++;
    }
    if (p->nthreads != threads) {
        eddy__bpool_free(p);
        return NULL;
    }
    return p;
}

void eddy__bpool_free(bpool *p) {
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->closing = true;
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->lock);
    for (unsigned i = 0; i < p->nthreads; i++)
        pthread_join(p->threads[i], NULL);
    free(p->threads);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->cond);
    free(p);
}

unsigned eddy__bpool_threads(const bpool *p) { return p->nthreads; }

void eddy__bpool_submit(bpool *p, bpool_job *first, unsigned n) {
    if (n == 0)
        return;
    bpool_job *last = first;
    while (last->next)
        last = last->next;
    pthread_mutex_lock(&p->lock);
    if (p->tail)
        p->tail->next = first;
    else
        p->head = first;
    p->tail = last;
    pthread_mutex_unlock(&p->lock);
    /* Signalled after the unlock: a worker woken under the lock would run only to block on it
     * again. No wake is lost: the jobs are queued, and a worker re-checks under the lock. */
    for (unsigned i = 0; i < n && i < p->nthreads; i++)
        pthread_cond_signal(&p->cond);
}
