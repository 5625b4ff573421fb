/* SPDX-License-Identifier: BSD-3-Clause */
/* Named memory engines. "memory://name" in any part of the process reaches the same engine;
 * the first acquire creates it, the last release destroys it (and its data).
 *
 * Invariants: the registry list holds exactly the engines with refs > 0, and is only touched
 * under registry_mu; an engine's name never changes while it is listed. */
#include <pthread.h>
#include <string.h>

#include "memory/internal.h"

static pthread_mutex_t registry_mu = PTHREAD_MUTEX_INITIALIZER;
static eddy__mem_engine *registry;

eddy__mem_engine *eddy__mem_engine_acquire(const char *name) {
    if (!name)
        name = "";
    pthread_mutex_lock(&registry_mu);
    eddy__mem_engine *e = registry;
    while (e && strcmp(e->name, name) != 0)
        e = e->next;
    if (e) {
        e->refs++;
    } else if ((e = eddy__mem_engine_new(name))) {
        e->refs = 1;
        e->next = registry;
        registry = e;
    }
    pthread_mutex_unlock(&registry_mu);
    return e;
}

void eddy__mem_engine_release(eddy__mem_engine *engine) {
    if (!engine)
        return;
    pthread_mutex_lock(&registry_mu);
    bool last = --engine->refs == 0;
    if (last) {
        eddy__mem_engine **p = &registry;
        while (*p != engine)
            p = &(*p)->next;
        *p = engine->next;
    }
    pthread_mutex_unlock(&registry_mu);
    if (last)
        eddy__mem_engine_destroy(engine);
}
