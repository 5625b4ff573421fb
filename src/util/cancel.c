/* SPDX-License-Identifier: BSD-3-Clause */
/* The cancellation token (cancel.h). Thread: any; the registrations are under the token's mutex,
 * the flag is atomic so that a waiter checks it without the lock. */
#include <stdatomic.h>
#include <stdlib.h>

#include "util/cancel.h"

struct eddy_cancel {
    pthread_mutex_t m;
    atomic_bool fired;
    eddy__cancel_reg *regs;
};

eddy_cancel *eddy_cancel_new(void) {
    eddy_cancel *c = calloc(1, sizeof(*c));
    if (c)
        pthread_mutex_init(&c->m, NULL);
    return c;
}

void eddy_cancel_fire(eddy_cancel *c) {
    if (!c)
        return;
    pthread_mutex_lock(&c->m);
    atomic_store(&c->fired, true);
    for (eddy__cancel_reg *r = c->regs; r; r = r->next) {
        if (r->fired)
            continue;
        pthread_mutex_lock(r->m);
        pthread_cond_broadcast(r->cond);
        pthread_mutex_unlock(r->m);
    }
    pthread_mutex_unlock(&c->m);
    /* The calls' functions, each taken off first: what one runs may end others (they detach). */
    for (;;) {
        pthread_mutex_lock(&c->m);
        eddy__cancel_reg **pp = &c->regs;
        while (*pp && !(*pp)->fired)
            pp = &(*pp)->next;
        eddy__cancel_reg *r = *pp;
        if (r)
            *pp = r->next;
        pthread_mutex_unlock(&c->m);
        if (!r)
            break;
        r->next = NULL;
        r->fired(r);
    }
}

bool eddy_cancel_fired(const eddy_cancel *c) { return c && atomic_load(&c->fired); }

void eddy_cancel_free(eddy_cancel *c) {
    if (!c)
        return;
    pthread_mutex_destroy(&c->m);
    free(c);
}

void eddy__cancel_attach(eddy_cancel *c, eddy__cancel_reg *r) {
    if (!c)
        return;
    pthread_mutex_lock(&c->m);
    r->next = c->regs;
    c->regs = r;
    pthread_mutex_unlock(&c->m);
}

void eddy__cancel_detach(eddy_cancel *c, eddy__cancel_reg *r) {
    if (!c)
        return;
    pthread_mutex_lock(&c->m);
    for (eddy__cancel_reg **pp = &c->regs; *pp; pp = &(*pp)->next)
        if (*pp == r) {
            *pp = r->next;
            break;
        }
    pthread_mutex_unlock(&c->m);
}
