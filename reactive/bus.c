/* SPDX-License-Identifier: BSD-3-Clause */
/* The reactive bus: building, subscriptions, activation, readiness, counters, and the
 * deferred teardown that makes every call legal from inside a callback.
 *
 * Invariants:
 * - depth > 0 while any frame of ours is on the stack (eddy__rbus_enter/eddy__rbus_leave). Dead
 *   activations and control loops, and the bus itself once freed, are released by the
 *   outermost eddy__rbus_leave only.
 * - Every completion callback runs exactly once: start's `ready` and each subscription's
 *   `ready` run with the outcome, or with EDDY_ERR_CLOSED from stop or free; a publish's
 *   `done` with its outcome or EDDY_ERR_CLOSED from free (publish.c); a request's with its
 *   outcome, or EDDY_ERR_NO_REPLY from stop or free (request.c).
 * - A start is ready in the blocking front end's order: every subscription first, then the
 *   activation's control loop (control.c), started only then, so a requester that finds the
 *   subscriptions in the registry finds their groups in place. A late subscription on a bus
 *   whose control loop runs is registered on its own before it counts as ready.
 * - A start whose subscriptions or control loop cannot become ready in time fails like the
 *   blocking front end's: EDDY_ERR_IO, and the bus is left stopped. A late subscription that
 *   cannot is removed again, as eddy_bus_subscribe does.
 * - A started bus holds an active watcher (alive) from start until stop, so an ev_run with
 *   nothing else on the loop keeps running until the bus is stopped; after a stop, what is
 *   still out (leaving the registry, closing connections) holds its own watchers.
 * - Stop, in the blocking front end's order: leave the registry and delete the reply stream
 *   (best effort), close the control loop, stop the readers, then complete what waited.
 * - Once free was called, every call is refused with EDDY_ERR_CLOSED (or ignored), so that
 *   callbacks run by the teardown cannot add work to a bus that is going away.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "error.h"
#include "internal.h"
#include "share.h"
#include "timing.h"

void eddy__rbus_timer_after(eddy_rbus *bus, ev_timer *t, long long ms) {
    ev_timer_stop(bus->loop, t);
    ev_timer_set(t, (double)(ms > 0 ? ms : 0) / 1000.0, 0.);
    ev_timer_start(bus->loop, t);
}

/* ---- subscriptions ------------------------------------------------------------------------ */

static void rsub_free(rsub *rs) {
    if (!rs)
        return;
    eddy__sub_free(rs->sub);
    free(rs);
}

/* Adds a subscription (not started): spec's, checked against the bus's, or else sub (taken). */
static eddy_status add_sub(eddy_rbus *bus, const eddy_subscription_spec *spec, eddy__sub *sub,
                           rsub **out, eddy_error *err) {
    eddy_status st = eddy__subs_admit(&bus->core.all, &bus->s, bus->core.caps, spec, &sub, err);
    if (st != EDDY_OK)
        return st;
    if (bus->nsubs == bus->subs_cap) {
        size_t cap = bus->subs_cap ? bus->subs_cap * 2 : 4;
        rsub **subs = realloc(bus->subs, cap * sizeof(*subs));
        if (!subs) {
            eddy__sub_free(sub);
            return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
        }
        bus->subs = subs;
        bus->subs_cap = cap;
    }
    /* The slot remove_sub may need later, reserved now: removing never allocates. */
    rsub **gone = realloc(bus->gone, (bus->ngone + bus->nsubs + 1) * sizeof(*gone));
    if (gone)
        bus->gone = gone;
    rsub *rs = gone ? calloc(1, sizeof(*rs)) : NULL;
    if (!rs) {
        eddy__sub_free(sub);
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    }
    rs->bus = bus;
    rs->sub = sub;
    bus->subs[bus->nsubs++] = rs;
    eddy__subs_append(&bus->core.all, sub);
    *out = rs;
    return EDDY_OK;
}

/* Takes rs out of the bus's subscriptions. Its memory stays (bus->gone) while an activation
 * that is still stopping may use it. */
static void remove_sub(eddy_rbus *bus, rsub *rs) {
    for (size_t i = 0; i < bus->nsubs; i++)
        if (bus->subs[i] == rs) {
            memmove(&bus->subs[i], &bus->subs[i + 1], (bus->nsubs - i - 1) * sizeof(*bus->subs));
            bus->nsubs--;
            break;
        }
    eddy__subs_remove(&bus->core.all, rs->sub);
    bus->gone[bus->ngone++] = rs; /* the slot add_sub reserved */
}

/* ---- readiness --------------------------------------------------------------------------- */

static bool all_ready(eddy_rbus *bus) {
    for (size_t i = 0; i < bus->nsubs; i++)
        if (!bus->subs[i]->act || !bus->subs[i]->act->ready ||
            eddy__enlist_out(&bus->subs[i]->enlist))
            return false;
    return true;
}

static void fire_bus_ready(eddy_rbus *bus, eddy_status st, const eddy_error *err) {
    if (!bus->ready_pending)
        return;
    bus->ready_pending = false;
    eddy_ready_fn fn = bus->ready;
    void *user = bus->ready_user;
    bus->ready = NULL;
    if (fn)
        fn(st, err, user);
}

static void fire_sub_ready(rsub *rs, eddy_status st, const eddy_error *err) {
    eddy_ready_fn fn = rs->ready;
    void *user = rs->ready_user;
    rs->ready = NULL;
    if (fn)
        fn(st, err, user);
}

/* Completes the subscriptions' own ready callbacks. Subscriptions added from inside one of
 * these callbacks are past `n` and keep waiting for their own outcome. */
static void fire_subs_ready(eddy_rbus *bus, eddy_status st, const eddy_error *err) {
    size_t n = bus->nsubs;
    for (size_t i = 0; i < n && i < bus->nsubs; i++)
        fire_sub_ready(bus->subs[i], st, err);
}

static void stop_all(eddy_rbus *bus, eddy_status st, const eddy_error *err) {
    if (!bus->started)
        return;
    bus->started = false;
    bus->active = false;
    ev_async_stop(bus->loop, &bus->alive);
    eddy__rctl_stop(bus);
    eddy__rpub_close_when_idle(bus);
    eddy__subs_unlist(&bus->core.all);
    for (size_t i = 0; i < bus->nsubs; i++) {
        rsub *rs = bus->subs[i];
        eddy__enlist_drop(&rs->enlist); /* a registration still out is stale now */
        if (rs->act)
            eddy__ract_stop(rs->act);
    }
    if (bus->wake)
        eddy__rwake_stop(bus->wake);
    /* The start's callback is taken first: a callback below may start the bus again. */
    bool pending = bus->ready_pending;
    eddy_ready_fn fn = bus->ready;
    void *user = bus->ready_user;
    bus->ready_pending = false;
    bus->ready = NULL;
    fire_subs_ready(bus, st, err);
    if (pending && fn)
        fn(st, err, user);
    eddy__rreq_abandon_all(bus);
}

/* Fires the start's callback once every subscription and then the control loop are ready;
 * starts the control loop when the subscriptions are. */
static void maybe_ready(eddy_rbus *bus) {
    if (!bus->started || !bus->ready_pending || !all_ready(bus))
        return;
    if (!bus->ctl) {
        eddy__enlist_start(&bus->core.all);
        if (eddy__rctl_start(bus) != EDDY_OK) {
            eddy_error err;
            eddy__fail(&err, EDDY_ERR_NOMEM, "out of memory starting the control loop");
            stop_all(bus, EDDY_ERR_NOMEM, &err);
        }
        return;
    }
    if (eddy__rctl_ready(bus->ctl)) {
        bus->active = true;
        fire_bus_ready(bus, EDDY_OK, NULL);
    }
}

static void sub_ready(eddy_rbus *bus, rsub *rs) {
    fire_sub_ready(rs, EDDY_OK, NULL);
    maybe_ready(bus);
}

static void sub_failed(eddy_rbus *bus, rsub *rs, eddy_status st, const eddy_error *err) {
    if (bus->ready_pending) {
        /* Part of a start: the start fails and leaves the bus stopped. */
        stop_all(bus, st, err);
    } else {
        if (rs->act)
            eddy__ract_stop(rs->act);
        remove_sub(bus, rs);
        fire_sub_ready(rs, st, err);
    }
}

void eddy__rbus_act_ready(eddy_rbus *bus, ract *act, const eddy_error *err) {
    rsub *rs = act->rs;
    if (err) {
        sub_failed(bus, rs, err->status, err);
    } else if (bus->ctl) {
        /* The control loop may have registered the others already: this one is registered
         * on its own, before it counts for the bus or for its own callback. */
        if (eddy__rctl_register(bus, rs) != EDDY_OK) {
            eddy_error e;
            eddy__fail(&e, EDDY_ERR_NOMEM, "out of memory registering subscription '%s'",
                       rs->sub->name);
            sub_failed(bus, rs, EDDY_ERR_NOMEM, &e);
        }
    } else {
        sub_ready(bus, rs);
    }
}

void eddy__rbus_sub_registered(eddy_rbus *bus, rsub *rs, eddy_status st, const eddy_error *err) {
    if (st == EDDY_OK)
        sub_ready(bus, rs);
    else
        sub_failed(bus, rs, st, err);
}

void eddy__rbus_ctl_ready(eddy_rbus *bus, const eddy_error *err) {
    if (!err)
        maybe_ready(bus);
    else if (bus->ready_pending)
        stop_all(bus, err->status, err);
}

/* ---- teardown ------------------------------------------------------------------------------ */

static void reap(eddy_rbus *bus) {
    eddy__rctl_reap(bus);
    for (ract **p = &bus->acts; *p;) {
        ract *act = *p;
        if (act->r.state == R_DEAD) {
            *p = act->next;
            eddy__ract_free(act);
        } else {
            p = &act->next;
        }
    }
}

static void destroy(eddy_rbus *bus) {
    /* Activations first: their pending deliveries are detached before any callback below
     * could call eddy_delivery_finish on one. */
    while (bus->acts) {
        ract *act = bus->acts;
        bus->acts = act->next;
        eddy__ract_free(act);
    }
    eddy__rwake_free(bus->wake); /* after the activations: their consumers watched there */
    for (size_t i = 0; i < EDDY__RSHARES; i++)
        eddy__rshare_free(bus->shares[i]);
    ev_timer_stop(bus->loop, &bus->deadline);
    ev_async_stop(bus->loop, &bus->alive);
    eddy_error err;
    eddy__fail(&err, EDDY_ERR_CLOSED, "the bus was freed");
    /* Ops still out complete here; the requests among them ended already (stop_all). */
    eddy__rpub_close_all(bus);
    fire_subs_ready(bus, EDDY_ERR_CLOSED, &err);
    fire_bus_ready(bus, EDDY_ERR_CLOSED, &err);
    eddy__rctl_free_all(bus);
    eddy__discovery_free(bus->discovery);
    for (size_t i = 0; i < bus->nsubs; i++)
        rsub_free(bus->subs[i]);
    free(bus->subs);
    for (size_t i = 0; i < bus->ngone; i++)
        rsub_free(bus->gone[i]);
    free(bus->gone);
    eddy__bus_core_destroy(&bus->core);
    eddy__settings_free(&bus->s);
    free(bus);
}

void eddy__rbus_enter(eddy_rbus *bus) { bus->depth++; }

void eddy__rbus_leave(eddy_rbus *bus) {
    if (--bus->depth > 0)
        return;
    reap(bus);
    if (bus->freeing) {
        bus->depth = 1; /* callbacks run by the teardown find the bus freeing, not idle */
        destroy(bus);
    }
}

/* ---- interface ---------------------------------------------------------------------------- */

/* Never sent: the watcher only counts as active while the bus is started. */
static void keep_alive(struct ev_loop *loop, ev_async *w, int revents) {
    (void)loop;
    (void)w;
    (void)revents;
}

eddy_status eddy_rbus_new(struct ev_loop *loop, const eddy_settings *settings,
                          const eddy_subscription_spec *specs, size_t nspecs, eddy_rbus **out,
                          eddy_error *err) {
    if (!loop || !out || (nspecs && !specs))
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "loop, out or specs is NULL");
    *out = NULL;
    eddy_rbus *bus = calloc(1, sizeof(*bus));
    if (!bus)
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    eddy__mux_init(&bus->pub_mux);
    eddy__reconnect_init(&bus->pub_gate, (unsigned)(uintptr_t)bus ^ (unsigned)eddy__mono_ms());
    eddy_status st = eddy__settings_copy(&bus->s, settings, err);
    if (st != EDDY_OK) {
        free(bus);
        return st;
    }
    bus->loop = loop;
    ev_async_init(&bus->alive, keep_alive);
    eddy__rreq_setup(bus);
    if ((st = eddy__bus_core_init(&bus->core, &bus->s, err)) == EDDY_OK &&
        !(bus->discovery = eddy__discovery_new(bus->s.discovery_ms)))
        st = eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    for (size_t i = 0; st == EDDY_OK && i < nspecs; i++) {
        rsub *rs;
        st = add_sub(bus, eddy__spec_at(specs, i), NULL, &rs, err);
    }
    if (st != EDDY_OK) {
        destroy(bus);
        return st;
    }
    *out = bus;
    return EDDY_OK;
}

eddy_status eddy_rbus_subscribe_ready(eddy_rbus *bus, const eddy_subscription_spec *spec,
                                      eddy_ready_fn ready, void *user, eddy_error *err) {
    if (!bus || !spec)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "bus or spec is NULL");
    if (bus->freeing)
        return eddy__fail(err, EDDY_ERR_CLOSED, "the bus is being freed");
    eddy__rbus_enter(bus);
    rsub *rs = NULL;
    eddy_status st = add_sub(bus, spec, NULL, &rs, err);
    if (st == EDDY_OK) {
        rs->ready = ready;
        rs->ready_user = user;
        if (bus->started && (st = eddy__ract_start(rs)) != EDDY_OK) {
            bus->nsubs--; /* refused: its callback does not run */
            eddy__subs_remove(&bus->core.all, rs->sub);
            rsub_free(rs);
            eddy__fail(err, st, "out of memory");
        }
    }
    eddy__rbus_leave(bus);
    return st;
}

eddy_status eddy_rbus_answer_all(eddy_rbus *bus, const char *name, eddy_error *err) {
    if (!bus)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "bus is NULL");
    if (bus->freeing)
        return eddy__fail(err, EDDY_ERR_CLOSED, "the bus is being freed");
    eddy__sub *twin;
    eddy_status st = eddy__subs_answer_all(&bus->core.all, name, bus->started, &twin, err);
    rsub *rs;
    if (st == EDDY_OK && twin)
        st = add_sub(bus, NULL, twin, &rs, err); /* started with the others (sub.h) */
    return st;
}

eddy_status eddy_rbus_subscribe(eddy_rbus *bus, const eddy_subscription_spec *spec,
                                eddy_error *err) {
    return eddy_rbus_subscribe_ready(bus, spec, NULL, NULL, err);
}

eddy_status eddy_rbus_start(eddy_rbus *bus, eddy_ready_fn ready, void *user, eddy_error *err) {
    if (!bus)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "bus is NULL");
    if (bus->freeing)
        return eddy__fail(err, EDDY_ERR_CLOSED, "the bus is being freed");
    if (bus->started)
        return eddy__fail(err, EDDY_ERR_ILLEGAL_STATE, "the bus is already started");
    eddy__rbus_enter(bus);
    /* The publishing connection first: a stop's leave then goes out at once. */
    eddy_status st = eddy__rpub_open(bus);
    size_t i = 0;
    for (; st == EDDY_OK && i < bus->nsubs; i++)
        st = eddy__ract_start(bus->subs[i]);
    if (st != EDDY_OK) {
        for (size_t j = 0; j + 1 < i; j++)
            eddy__ract_stop(bus->subs[j]->act);
    } else {
        bus->started = true;
        /* Between two steps of a start (or of any later work) eddy may hold no other watcher
         * for a moment: this one keeps ev_run running until the bus is stopped. */
        ev_async_start(bus->loop, &bus->alive);
        bus->ready_pending = true;
        bus->ready = ready;
        bus->ready_user = user;
        /* No subscription to wait for: the control loop starts now; it is ready from the
         * loop, never inside this call. */
        if (bus->nsubs == 0 && (st = eddy__rctl_start(bus)) != EDDY_OK) {
            bus->started = bus->ready_pending = false;
            bus->ready = NULL;
        }
    }
    if (st != EDDY_OK) {
        eddy__rpub_close_when_idle(bus);
        eddy__fail(err, st, "out of memory");
    }
    eddy__rbus_leave(bus);
    return st;
}

void eddy_rbus_stop(eddy_rbus *bus) {
    if (!bus || bus->freeing)
        return;
    eddy__rbus_enter(bus);
    eddy_error err;
    eddy__fail(&err, EDDY_ERR_CLOSED, "the bus was stopped");
    stop_all(bus, EDDY_ERR_CLOSED, &err);
    eddy__rbus_leave(bus);
}

void eddy_rbus_free(eddy_rbus *bus) {
    if (!bus || bus->freeing)
        return;
    /* Freeing first: callbacks run from here on cannot start or add work. */
    bus->freeing = true;
    eddy__rbus_enter(bus);
    eddy_error err;
    eddy__fail(&err, EDDY_ERR_CLOSED, "the bus was freed");
    stop_all(bus, EDDY_ERR_CLOSED, &err);
    eddy__rbus_leave(bus);
}

eddy_status eddy_rbus_consumer_stats(eddy_rbus *bus, const char *name, eddy_consumer_stats *out) {
    if (!bus || !name || !out)
        return EDDY_ERR_INVALID_ARGUMENT;
    return eddy__subs_consumer_stats(&bus->core.all, name, out);
}

static void wake_activation(size_t i, eddy__wake how, void *user) {
    eddy_rbus *bus = user;
    if (bus->subs[i]->act)
        eddy__ract_wake(bus->subs[i]->act, how);
}

/* The core decides what a pause means (bus_core.h); here the activation is only woken. */
static eddy_status set_paused(eddy_rbus *bus, const char *name, bool pause, eddy_error *err) {
    if (!bus || !name)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "bus or name is NULL");
    eddy__rbus_enter(bus);
    eddy_status st = eddy__bus_core_pause(&bus->core, name, pause, wake_activation, bus, err);
    eddy__rbus_leave(bus);
    return st;
}

eddy_status eddy_rbus_pause(eddy_rbus *bus, const char *name, eddy_error *err) {
    return set_paused(bus, name, true, err);
}

eddy_status eddy_rbus_resume(eddy_rbus *bus, const char *name, eddy_error *err) {
    return set_paused(bus, name, false, err);
}

const char *eddy_rbus_instance(const eddy_rbus *bus) { return bus ? bus->s.instance : NULL; }
