/* SPDX-License-Identifier: BSD-3-Clause */
/* The blocking bus: building, subscriptions, activation and counters. The bus connects its
 * publishing connection when it is built, so a wrong URL or a dead server is reported by
 * eddy_bus_new rather than by the first publish. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bus/enlist.h"
#include "bus/stop_flow.h"
#include "error.h"
#include "internal.h"

static void bsub_free(bsub *bs) {
    if (!bs)
        return;
    eddy__bconn_destroy(&bs->conn);
    eddy__plan_reset(&bs->plan);
    pthread_mutex_destroy(&bs->lock);
    pthread_cond_destroy(&bs->settled);
    eddy__sub_free(bs->sub);
    free(bs);
}

/* Adds a subscription (not started): spec's, checked against the bus's, or else sub (taken).
 * Caller holds bus->lock, which every change to the subscriptions holds. */
static eddy_status add_sub(eddy_bus *bus, const eddy_subscription_spec *spec, eddy__sub *sub,
                           bsub **out, eddy_error *err) {
    pthread_mutex_lock(&bus->subs_lock); /* the control thread reads the list */
    eddy_status st = eddy__subs_admit(&bus->core.all, &bus->s, bus->core.caps, spec, &sub, err);
    bsub **subs = st == EDDY_OK ? realloc(bus->subs, (bus->nsubs + 1) * sizeof(*subs)) : NULL;
    if (subs)
        bus->subs = subs;
    pthread_mutex_unlock(&bus->subs_lock);
    bsub *bs = subs ? calloc(1, sizeof(*bs)) : NULL;
    if (!bs) {
        eddy__sub_free(sub);
        return st != EDDY_OK ? st : eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    }
    bs->bus = bus;
    bs->sub = sub;
    eddy__plan_init(&bs->plan);
    pthread_mutex_init(&bs->lock, NULL);
    eddy__bcond_init_monotonic(&bs->settled); /* start waits on it with a deadline */
    if (eddy__bconn_init(&bs->conn, &bus->s) != EDDY_OK) {
        bsub_free(bs);
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    }
    pthread_mutex_lock(&bus->subs_lock);
    bus->subs[bus->nsubs++] = bs;
    eddy__subs_append(&bus->core.all, sub);
    pthread_mutex_unlock(&bus->subs_lock);
    *out = bs;
    return EDDY_OK;
}

eddy_status eddy_bus_new(const eddy_settings *settings, const eddy_subscription_spec *specs,
                         size_t nspecs, eddy_bus **out, eddy_error *err) {
    if (!out || (nspecs && !specs))
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "out or specs is NULL");
    *out = NULL;
    eddy_bus *bus = calloc(1, sizeof(*bus));
    if (!bus)
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    pthread_mutex_init(&bus->lock, NULL);
    pthread_mutex_init(&bus->subs_lock, NULL);
    pthread_mutex_init(&bus->ctl_lock, NULL);
    eddy__bcond_init_monotonic(&bus->ctl_cond); /* start waits on it with a deadline */
    eddy_status st = eddy__settings_copy(&bus->s, settings, err);
    bool conns_ready = false;
    if (st == EDDY_OK) {
        if (eddy__bmux_init(&bus->pub, &bus->s) != EDDY_OK ||
            eddy__bconn_init(&bus->ctl_conn, &bus->s) != EDDY_OK ||
            !(bus->discovery = eddy__discovery_new(bus->s.discovery_ms)))
            st = eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
        conns_ready = true;
    }
    if (st == EDDY_OK)
        st = eddy__bus_core_init(&bus->core, &bus->s, err);
    if (st == EDDY_OK)
        bus->pub.publisher = bus->core.publisher;
    for (size_t i = 0; st == EDDY_OK && i < nspecs; i++) {
        bsub *bs;
        st = add_sub(bus, eddy__spec_at(specs, i), NULL, &bs, err);
    }
    if (st == EDDY_OK && !(bus->pool = eddy__bpool_new(bus->s.workers)))
        st = eddy__fail(err, EDDY_ERR_NOMEM, "could not start %u worker threads", bus->s.workers);
    if (st == EDDY_OK)
        st = eddy__bmux_connect(&bus->pub, err);
    if (st != EDDY_OK) {
        if (!conns_ready) { /* the settings were refused: nothing else was made */
            pthread_cond_destroy(&bus->ctl_cond);
            pthread_mutex_destroy(&bus->ctl_lock);
            pthread_mutex_destroy(&bus->subs_lock);
            pthread_mutex_destroy(&bus->lock);
            free(bus);
            return st;
        }
        eddy_bus_free(bus);
        return st;
    }
    *out = bus;
    return EDDY_OK;
}

/* Puts every subscription in the heartbeats, or every one out (sub.h). */
static void list(eddy_bus *bus, bool on) {
    pthread_mutex_lock(&bus->subs_lock); /* the control thread reads them */
    if (on)
        eddy__enlist_start(&bus->core.all);
    else
        eddy__subs_unlist(&bus->core.all);
    pthread_mutex_unlock(&bus->subs_lock);
}

/* A late subscription counts for requesters before subscribe returns: the core's handshake
 * (enlist.h), its answer awaited here (bus->lock keeps a stop out meanwhile). */
static eddy_status register_now(eddy_bus *bus, eddy__sub *sub, eddy_error *err) {
    eddy__enlist e = {0};
    unsigned ticket = 0;
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    pthread_mutex_lock(&bus->ctl_lock);
    eddy_status st = eddy__enlist_begin(&e, bus->inbox, sub, eddy_now_ms(), &cmds, &ticket);
    pthread_mutex_unlock(&bus->ctl_lock);
    if (st != EDDY_OK) {
        eddy__cmdlist_reset(&cmds);
        return eddy__fail(err, st, "out of memory");
    }
    redisReply *replies[8] = {0};
    eddy_error got;
    st = cmds.n > 8 ? eddy__fail(&got, EDDY_ERR_INVALID_ARGUMENT, "too many commands")
                    : eddy__bpub_exec(bus, &cmds, replies, &got);
    pthread_mutex_lock(&bus->subs_lock); /* the control thread reads sub->listed */
    eddy__enlist_feed(&e, ticket, sub, st, &got, replies, cmds.n, &st, err);
    pthread_mutex_unlock(&bus->subs_lock);
    for (size_t i = 0; i < cmds.n; i++)
        if (replies[i])
            freeReplyObject(replies[i]);
    eddy__cmdlist_reset(&cmds);
    return st;
}

/* Adds a subscription; on a started bus starts it, waits until it is ready and registers it
 * (removing it again when that fails). *added: the spec was accepted (so readiness was tried, or
 * waits for the next start). Called with bus->lock held. */
static eddy_status subscribe_locked(eddy_bus *bus, const eddy_subscription_spec *spec, bsub **out,
                                    bool *added, eddy_error *err) {
    bsub *bs;
    *added = false;
    *out = NULL;
    eddy_status st = add_sub(bus, spec, NULL, &bs, err);
    if (st != EDDY_OK)
        return st;
    *added = true;
    *out = bs;
    if (bus->started) {
        if ((st = eddy__bsub_start(bs, err)) == EDDY_OK &&
            (st = eddy__bsub_wait_ready(bs, err)) == EDDY_OK)
            st = register_now(bus, bs->sub, err);
        if (st != EDDY_OK) {
            eddy__bsub_stop(bs);
            pthread_mutex_lock(&bus->subs_lock);
            bus->nsubs--;
            eddy__subs_remove(&bus->core.all, bs->sub);
            pthread_mutex_unlock(&bus->subs_lock);
            bsub_free(bs);
            *out = NULL;
        }
    }
    return st;
}

eddy_status eddy_bus_subscribe(eddy_bus *bus, const eddy_subscription_spec *spec, eddy_error *err) {
    if (!bus || !spec)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "bus or spec is NULL");
    pthread_mutex_lock(&bus->lock);
    bsub *bs;
    bool added;
    eddy_status st = subscribe_locked(bus, spec, &bs, &added, err);
    pthread_mutex_unlock(&bus->lock);
    return st;
}

eddy_status eddy_bus_answer_all(eddy_bus *bus, const char *name, eddy_error *err) {
    if (!bus)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "bus is NULL");
    pthread_mutex_lock(&bus->lock);
    eddy__sub *twin;
    eddy_status st = eddy__subs_answer_all(&bus->core.all, name, bus->started, &twin, err);
    bsub *bs;
    if (st == EDDY_OK && twin)
        st = add_sub(bus, NULL, twin, &bs, err); /* started with the others (sub.h) */
    pthread_mutex_unlock(&bus->lock);
    return st;
}

eddy_status eddy_bus_subscribe_ready(eddy_bus *bus, const eddy_subscription_spec *spec,
                                     eddy_ready_fn ready, void *user, eddy_error *err) {
    if (!bus || !spec)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "bus or spec is NULL");
    eddy_error e = {0};
    pthread_mutex_lock(&bus->lock);
    bsub *bs;
    bool added;
    bool started = bus->started;
    eddy_status st = subscribe_locked(bus, spec, &bs, &added, &e);
    if (st == EDDY_OK && !started) { /* told by the next start, or by free */
        bs->ready_fn = ready;
        bs->ready_user = user;
    }
    pthread_mutex_unlock(&bus->lock);
    if (err)
        *err = e;
    if (added && started && ready)
        ready(st, st == EDDY_OK ? NULL : &e, user);
    return st;
}

/* Runs the readiness callbacks eddy_bus_subscribe_ready left for the next start (or free), with
 * st. Called without bus->lock (the callbacks may call the bus). */
static void tell_ready(eddy_bus *bus, eddy_status st, const eddy_error *err) {
    for (;;) {
        eddy_ready_fn fn = NULL;
        void *user = NULL;
        pthread_mutex_lock(&bus->subs_lock);
        for (size_t i = 0; !fn && i < bus->nsubs; i++)
            if (bus->subs[i]->ready_fn) {
                fn = bus->subs[i]->ready_fn;
                user = bus->subs[i]->ready_user;
                bus->subs[i]->ready_fn = NULL;
            }
        pthread_mutex_unlock(&bus->subs_lock);
        if (!fn)
            return;
        fn(st, st == EDDY_OK ? NULL : err, user);
    }
}

eddy_status eddy_bus_start(eddy_bus *bus, eddy_error *err) {
    if (!bus)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "bus is NULL");
    pthread_mutex_lock(&bus->lock);
    eddy_status st = EDDY_OK;
    if (bus->started)
        st = eddy__fail(err, EDDY_ERR_ILLEGAL_STATE, "the bus is already started");
    for (size_t i = 0; st == EDDY_OK && i < bus->nsubs; i++)
        st = eddy__bsub_start(bus->subs[i], err);
    for (size_t i = 0; st == EDDY_OK && i < bus->nsubs; i++)
        st = eddy__bsub_wait_ready(bus->subs[i], err);
    /* Then the reply stream and the registry: a requester that sees these subscriptions
     * finds their groups in place. */
    if (st == EDDY_OK) {
        list(bus, true);
        st = eddy__bctl_start(bus, err);
    }
    if (st == EDDY_OK) {
        bus->started = true;
        atomic_store(&bus->active, true);
    } else if (st != EDDY_ERR_ILLEGAL_STATE) {
        list(bus, false);
        eddy__bsub_stop_all(bus);
    }
    pthread_mutex_unlock(&bus->lock);
    if (st != EDDY_ERR_ILLEGAL_STATE) {
        eddy_error e = {EDDY_OK, ""};
        if (st != EDDY_OK && err)
            e = *err;
        else if (st != EDDY_OK)
            eddy__fail(&e, st, "the start failed");
        tell_ready(bus, st, &e);
    }
    return st;
}

/* Runs the stop's way out (stop_flow.h) on the publishing connection while it asks for
 * commands, up to the step `until` (sent later, or DONE). */
static void run_stop(eddy_bus *bus, eddy__stop_flow *f, eddy__stop_step until) {
    while (f->step != until && f->step != EDDY__STOP_DONE) {
        size_t n = f->cmds.n;
        eddy_error err = {0};
        redisReply **replies = calloc(n, sizeof(*replies));
        eddy_status st = replies ? eddy__bpub_exec(bus, &f->cmds, replies, &err) : EDDY_ERR_NOMEM;
        eddy__stop_flow_feed(f, st, replies, &err, bus->core.all.v, bus->core.all.n);
        for (size_t i = 0; replies && i < n; i++)
            if (replies[i])
                freeReplyObject(replies[i]);
        free(replies);
    }
}

eddy_status eddy_bus_stop(eddy_bus *bus) {
    if (!bus)
        return EDDY_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&bus->lock);
    eddy__stop_flow f = {.step = EDDY__STOP_DONE};
    if (bus->started) {
        /* Leave the registry first, so requesters see "no responders" rather than wait. */
        atomic_store(&bus->active, false);
        pthread_mutex_lock(&bus->ctl_lock);
        eddy__stop_flow_begin(&f, &bus->s, bus->inbox, bus->core.all.v, bus->core.all.n);
        pthread_mutex_unlock(&bus->ctl_lock);
        run_stop(bus, &f, EDDY__STOP_LIST);
        eddy__bctl_stop(bus);
        list(bus, false);
    }
    /* Interrupt every reader first, then wait for each: stopping takes one wait, not n. */
    for (size_t i = 0; i < bus->nsubs; i++)
        if (bus->subs[i]->running)
            eddy__bsub_interrupt(bus->subs[i]);
    eddy__bsub_stop_all(bus);
    run_stop(bus, &f, EDDY__STOP_DONE); /* the fanout groups, once no reader can make one again */
    eddy__stop_flow_reset(&f);
    bus->started = false;
    pthread_mutex_unlock(&bus->lock);
    return EDDY_OK;
}

void eddy_bus_free(eddy_bus *bus) {
    if (!bus)
        return;
    eddy_error closed;
    eddy__fail(&closed, EDDY_ERR_CLOSED, "the bus was freed before its start");
    tell_ready(bus, EDDY_ERR_CLOSED, &closed);
    eddy_bus_stop(bus);
    eddy__bshare_free(bus->share);
    eddy__bpool_free(bus->pool);
    for (size_t i = 0; i < bus->nsubs; i++)
        bsub_free(bus->subs[i]);
    free(bus->subs);
    eddy__bmux_destroy(&bus->pub);
    eddy__bconn_destroy(&bus->ctl_conn);
    eddy__bus_core_destroy(&bus->core);
    eddy__discovery_free(bus->discovery);
    eddy__settings_free(&bus->s);
    pthread_cond_destroy(&bus->ctl_cond);
    pthread_mutex_destroy(&bus->ctl_lock);
    pthread_mutex_destroy(&bus->lock);
    pthread_mutex_destroy(&bus->subs_lock);
    free(bus);
}

eddy_status eddy_bus_consumer_stats(eddy_bus *bus, const char *name, eddy_consumer_stats *out) {
    if (!bus || !name || !out)
        return EDDY_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&bus->subs_lock);
    eddy_status st = eddy__subs_consumer_stats(&bus->core.all, name, out);
    pthread_mutex_unlock(&bus->subs_lock);
    return st;
}

typedef struct woken {
    eddy_bus *bus;
    long long kill; /* a reader connection whose blocking read was cut, or -1 */
} woken;

static void wake_reader(size_t i, eddy__wake how, void *user) {
    woken *w = user;
    long long k = eddy__bsub_wake(w->bus->subs[i], how);
    if (k >= 0)
        w->kill = k;
}

/* The core decides what a pause means (bus_core.h); here the reader is only woken. Under
 * subs_lock, so the subscription cannot be removed meanwhile (a failed late subscribe). */
static eddy_status set_paused(eddy_bus *bus, const char *name, bool pause, eddy_error *err) {
    if (!bus || !name)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "bus or name is NULL");
    woken w = {bus, -1};
    pthread_mutex_lock(&bus->subs_lock);
    eddy_status st = eddy__bus_core_pause(&bus->core, name, pause, wake_reader, &w, err);
    pthread_mutex_unlock(&bus->subs_lock);
    if (w.kill >= 0) /* the read in progress ends before this returns */
        eddy__bsub_kill_read(bus, w.kill);
    return st;
}

eddy_status eddy_bus_pause(eddy_bus *bus, const char *name, eddy_error *err) {
    return set_paused(bus, name, true, err);
}

eddy_status eddy_bus_resume(eddy_bus *bus, const char *name, eddy_error *err) {
    return set_paused(bus, name, false, err);
}

const char *eddy_bus_instance(const eddy_bus *bus) { return bus ? bus->s.instance : NULL; }
