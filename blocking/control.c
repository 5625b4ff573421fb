/* SPDX-License-Identifier: BSD-3-Clause */
/* The blocking bus's control thread: drives the core's inbox state machine (reply stream,
 * registry heartbeats, replies, retention passes) on a connection of its own, and completes the
 * requests whose replies arrive. Start waits until the reply stream exists and the subscriptions
 * are registered, so a request sent after start returns is answerable. */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bus/bus_stats.h"
#include "bus/enlist.h"
#include "config/conn_state.h"
#include "error.h"
#include "internal.h"
#include "timing.h"

/* Why the connection last failed, for a start's error (eddy__inbox_late); a start waiting for
 * the control thread need not wait out a refusal. */
static void note_failed(eddy_bus *bus, const eddy_error *err) {
    pthread_mutex_lock(&bus->ctl_lock);
    if (!bus->ctl_ready) {
        bus->ctl_last = *err;
        if (eddy__conn_refused(err->status))
            pthread_cond_broadcast(&bus->ctl_cond);
    }
    pthread_mutex_unlock(&bus->ctl_lock);
}

static void *control(void *arg) {
    eddy_bus *bus = arg;
    eddy__plan plan;
    eddy__plan_init(&plan);
    eddy__reply_list done = {0};
    eddy__sub **subs = NULL; /* the heartbeat's subscriptions */
    size_t subs_cap = 0;
    while (!atomic_load(&bus->ctl_stopping)) {
        eddy_error err;
        if (!eddy__bconn_connected(&bus->ctl_conn) &&
            eddy__bconn_connect(&bus->ctl_conn, &err) != EDDY_OK) {
            /* The bus's tracker logs the state this makes, once. */
            eddy__log(&bus->s.log, EDDY_LOG_DEBUG, "control connection: %s", err.detail);
            note_failed(bus, &err);
            eddy__bconn_backoff(&bus->ctl_conn);
            continue;
        }
        /* subs are never freed while they are listed: they go only with the bus */
        pthread_mutex_lock(&bus->subs_lock);
        size_t n = eddy__enlist_heartbeat(&bus->core.all, &subs, &subs_cap);
        pthread_mutex_unlock(&bus->subs_lock);
        long long wait = n != SIZE_MAX ? eddy__inbox_next(bus->inbox, eddy_now_ms(), subs, n, &plan)
                                       : EDDY__NOMEM_RETRY_MS;
        if (wait >= 0) {
            eddy__bconn_sleep(&bus->ctl_conn, wait);
            continue;
        }
        redisReply *few[8] = {0}, **replies = few;
        if (plan.cmds.n > 8 && !(replies = calloc(plan.cmds.n, sizeof(*replies)))) {
            eddy__inbox_reset(bus->inbox, eddy_now_ms()); /* the plan was not sent */
            eddy__bconn_sleep(&bus->ctl_conn, EDDY__NOMEM_RETRY_MS);
            continue;
        }
        eddy_status st = eddy__bconn_exec(&bus->ctl_conn, &plan.cmds, plan.block_ms, replies, &err);
        bool lost = st != EDDY_OK; /* the connection's failure: the bus's tracker logged it */
        if (st == EDDY_OK && (st = eddy__inbox_feed(bus->inbox, eddy_now_ms(), &plan, replies,
                                                    plan.cmds.n, &done)) != EDDY_OK)
            eddy__fail(&err, st, "unexpected replies"); /* as the reactive loop says it */
        for (size_t i = 0; i < plan.cmds.n; i++)
            if (replies[i])
                freeReplyObject(replies[i]);
        if (replies != few)
            free(replies);
        if (st != EDDY_OK) {
            eddy__inbox_reset(bus->inbox, eddy_now_ms());
            note_failed(bus, &err);
            if (!atomic_load(&bus->ctl_stopping)) {
                eddy__log(&bus->s.log, lost ? EDDY_LOG_DEBUG : EDDY_LOG_WARN,
                          "control connection: %s; reconnecting", err.detail);
                eddy__bconn_backoff(&bus->ctl_conn);
            }
            continue;
        }
        for (size_t i = 0; i < done.n; i++) {
            /* A gather's reply list is its flow's: the waiter learns only the end. */
            eddy__bwait_complete(done.v[i].waiter, done.v[i].st,
                                 done.v[i].gather ? NULL : done.v[i].reply);
            done.v[i].reply = NULL;
        }
        done.n = 0;
        if (eddy__inbox_ready(bus->inbox) && !bus->ctl_ready) {
            pthread_mutex_lock(&bus->ctl_lock);
            bus->ctl_ready = true;
            pthread_cond_broadcast(&bus->ctl_cond);
            pthread_mutex_unlock(&bus->ctl_lock);
        }
    }
    eddy__plan_reset(&plan);
    eddy__reply_list_free(&done);
    free(subs);
    return NULL;
}

eddy_status eddy__bctl_start(eddy_bus *bus, eddy_error *err) {
    eddy__inbox *inbox =
        eddy__inbox_new(&bus->s, bus->core.requests, &bus->core.retention, eddy_now_ms());
    if (!inbox)
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    pthread_mutex_lock(&bus->ctl_lock);
    bus->inbox = inbox;
    pthread_mutex_unlock(&bus->ctl_lock);
    atomic_store(&bus->ctl_stopping, false);
    bus->ctl_ready = false;
    bus->ctl_last = (eddy_error){EDDY_OK, ""};
    eddy__bconn_resume(&bus->ctl_conn);
    int rc = eddy__bthread_start(&bus->ctl_thread, control, bus);
    if (rc != 0) {
        pthread_mutex_lock(&bus->ctl_lock);
        eddy__inbox_free(bus->inbox);
        bus->inbox = NULL;
        pthread_mutex_unlock(&bus->ctl_lock);
        return eddy__fail(err, EDDY_ERR_NOMEM, "could not start the control thread");
    }
    bus->ctl_running = true;
    const eddy__settings *s = &bus->s;
    long long deadline = eddy__mono_ms() + eddy__ready_timeout_ms(s);
    struct timespec at = {(time_t)(deadline / 1000), (long)(deadline % 1000) * 1000000};
    pthread_mutex_lock(&bus->ctl_lock);
    while (!bus->ctl_ready && !eddy__conn_refused(bus->ctl_last.status))
        if (pthread_cond_timedwait(&bus->ctl_cond, &bus->ctl_lock, &at) == ETIMEDOUT)
            break;
    bool ready = bus->ctl_ready;
    eddy_error last = bus->ctl_last;
    pthread_mutex_unlock(&bus->ctl_lock);
    if (ready)
        return EDDY_OK;
    eddy__bctl_stop(bus);
    return eddy__inbox_late(&last, err);
}

static void abandon(void *waiter, void *user) {
    (void)user;
    eddy__bwait_complete(waiter, EDDY_ERR_NO_REPLY, NULL);
}

void eddy__bctl_stop(eddy_bus *bus) {
    if (!bus->ctl_running)
        return;
    atomic_store(&bus->ctl_stopping, true);
    eddy__bconn_interrupt(&bus->ctl_conn);
    pthread_join(bus->ctl_thread, NULL);
    bus->ctl_running = false;
    /* Requests still waiting end now: nothing will read their replies. */
    eddy__requests_abandon_all(bus->core.requests, abandon, NULL);
    pthread_mutex_lock(&bus->ctl_lock);
    eddy__inbox_free(bus->inbox);
    bus->inbox = NULL;
    pthread_mutex_unlock(&bus->ctl_lock);
}

eddy_status eddy_bus_retention_stats(eddy_bus *bus, eddy_retention_stats *out) {
    return bus ? eddy__bus_retention_stats(&bus->core.retention, out) : EDDY_ERR_INVALID_ARGUMENT;
}

eddy_status eddy_bus_connection_stats(eddy_bus *bus, eddy_connection_stats *out) {
    return bus ? eddy__bus_connection_stats(bus->s.conn_state, out) : EDDY_ERR_INVALID_ARGUMENT;
}
