/* Requests on the blocking bus: the core checks, counts and matches; this file sends on the
 * publishing connection and makes the calling thread wait, on a condition variable of its
 * own, for the reply, the deadline, a cancel token or the bus stopping. */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "error.h"
#include "internal.h"
#include "registry.h"

typedef struct bwait {
    pthread_mutex_t m;
    pthread_cond_t cond;
    bool done;
    eddy_status st;
    eddy_event *reply;
    struct bwait *next_on_cancel;
} bwait;

struct eddy_cancel {
    pthread_mutex_t m;
    atomic_bool fired;
    bwait *waiters;
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
    /* Taking each waiter's mutex before signalling closes the gap between its check of
     * `fired` and its wait. */
    for (bwait *w = c->waiters; w; w = w->next_on_cancel) {
        pthread_mutex_lock(&w->m);
        pthread_cond_broadcast(&w->cond);
        pthread_mutex_unlock(&w->m);
    }
    pthread_mutex_unlock(&c->m);
}

void eddy_cancel_free(eddy_cancel *c) {
    if (!c)
        return;
    pthread_mutex_destroy(&c->m);
    free(c);
}

static void cancel_attach(eddy_cancel *c, bwait *w) {
    if (!c)
        return;
    pthread_mutex_lock(&c->m);
    w->next_on_cancel = c->waiters;
    c->waiters = w;
    pthread_mutex_unlock(&c->m);
}

static void cancel_detach(eddy_cancel *c, bwait *w) {
    if (!c)
        return;
    pthread_mutex_lock(&c->m);
    for (bwait **pp = &c->waiters; *pp; pp = &(*pp)->next_on_cancel)
        if (*pp == w) {
            *pp = w->next_on_cancel;
            break;
        }
    pthread_mutex_unlock(&c->m);
}

void bwait_complete(void *waiter, eddy_status st, eddy_event *reply) {
    bwait *w = waiter;
    pthread_mutex_lock(&w->m);
    w->done = true;
    w->st = st;
    w->reply = reply;
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->m);
}

/* Is anything, in any process, subscribed to subject? */
static eddy_status anyone_subscribed(eddy_bus *bus, const char *subject, bool *any,
                                     eddy_error *err) {
    long long now = eddy_now_ms();
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    bool cached = false;
    eddy_status st =
        eddy__registry_ask(bus->registry_cache, bus->s.ns, subject, now, &cmds, 0, &cached);
    if (st == EDDY_OK && cached) {
        *any = true;
    } else if (st == EDDY_OK) {
        redisReply *reply = NULL;
        pthread_mutex_lock(&bus->pub_lock);
        st = bconn_exec(&bus->pub_conn, &cmds, -1, &reply, err);
        pthread_mutex_unlock(&bus->pub_lock);
        if (st == EDDY_OK)
            st = eddy__registry_answer(bus->registry_cache, reply, subject, now, any, err);
        else if (reply)
            freeReplyObject(reply);
    }
    eddy__cmdlist_reset(&cmds);
    return st;
}

/* Sends the request's commands on the publishing connection. */
static eddy_status send_request(eddy_bus *bus, eddy__request_out *out, eddy_error *err) {
    redisReply *replies[2] = {NULL, NULL};
    eddy_status st = out->cmds.n <= 2 ? EDDY_OK : EDDY_ERR_INVALID_ARGUMENT;
    if (st == EDDY_OK) {
        pthread_mutex_lock(&bus->pub_lock);
        st = bconn_exec(&bus->pub_conn, &out->cmds, -1, replies, err);
        pthread_mutex_unlock(&bus->pub_lock);
    }
    size_t next;
    if (st == EDDY_OK)
        st = eddy__publish_result(bus->publisher, &out->cmds, 0, replies, &next, NULL, 0, err);
    for (size_t i = 0; i < out->cmds.n && i < 2; i++)
        if (replies[i])
            freeReplyObject(replies[i]);
    return st;
}

/* Waits for the outcome. The deadline is wall-clock (it travels to the responder); the wait
 * runs on the monotonic clock from the time left. */
static void wait_outcome(eddy_bus *bus, bwait *w, const char *id, long long deadline,
                         eddy_cancel *cancel) {
    long long mono_deadline = bconn_now_ms() + (deadline - eddy_now_ms());
    struct timespec at = {(time_t)(mono_deadline / 1000), (long)(mono_deadline % 1000) * 1000000};
    bool timed_out = false;
    pthread_mutex_lock(&w->m);
    while (!w->done) {
        bool cancelled = cancel && atomic_load(&cancel->fired);
        if (cancelled || timed_out) {
            pthread_mutex_unlock(&w->m);
            bool mine = eddy__requests_give_up(bus->requests, id);
            pthread_mutex_lock(&w->m);
            if (mine) {
                w->done = true;
                w->st = EDDY_ERR_NO_REPLY;
            }
            /* else a reply (or stop) took it first and completes it right away */
            timed_out = false;
            if (w->done)
                break;
            pthread_cond_wait(&w->cond, &w->m);
            continue;
        }
        if (pthread_cond_timedwait(&w->cond, &w->m, &at) == ETIMEDOUT)
            timed_out = true;
    }
    pthread_mutex_unlock(&w->m);
}

/* This bus's state for the core's checks; copies the reply stream's key (the activation that
 * owns it may end while the request is being sent). */
static bool bus_state(eddy_bus *bus, const eddy_request_opts *opts, char inbox[256],
                      bool *cancelled) {
    *cancelled = opts && opts->cancel && atomic_load(&opts->cancel->fired);
    pthread_mutex_lock(&bus->ctl_lock);
    bool active = atomic_load(&bus->active) && bus->inbox;
    if (active)
        snprintf(inbox, 256, "%s", eddy__inbox_key(bus->inbox));
    pthread_mutex_unlock(&bus->ctl_lock);
    return active;
}

eddy_status eddy_bus_request(eddy_bus *bus, const char *subject, const eddy_event *ev,
                             const eddy_request_opts *opts, eddy_event **reply, eddy_error *err) {
    if (!bus || !reply)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "bus or reply is NULL");
    *reply = NULL;
    char inbox[256] = "";
    bool cancelled;
    bool active = bus_state(bus, opts, inbox, &cancelled);
    eddy__request_out out;
    eddy_status st = eddy__request_begin(bus->requests, bus->publisher, opts, cancelled, active,
                                         bus->caps, subject, ev, inbox, &out, err);
    if (st != EDDY_OK)
        return st;
    bool any = false;
    if ((st = anyone_subscribed(bus, subject, &any, err)) != EDDY_OK) {
        eddy__request_out_reset(&out);
        return st;
    }
    if (!any) {
        eddy__requests_count_no_responders(bus->requests, out.row);
        eddy__request_out_reset(&out);
        return eddy__fail(err, EDDY_ERR_NO_RESPONDERS, "nothing is subscribed to '%s'", subject);
    }
    bwait w = {.st = EDDY_ERR_NO_REPLY};
    pthread_mutex_init(&w.m, NULL);
    bcond_init_monotonic(&w.cond);
    const char *id = out.id;
    /* In the table before it is sent: the reply may arrive before the send's own answer. */
    if ((st = eddy__requests_add(bus->requests, id, &w, out.row, out.deadline_ms)) != EDDY_OK) {
        eddy__fail(err, st, "out of memory");
    } else if ((st = send_request(bus, &out, err)) != EDDY_OK) {
        eddy__requests_unsent(bus->requests, id); /* not sent: not counted */
    } else {
        eddy__requests_sent(bus->requests, id);
        cancel_attach(opts->cancel, &w);
        wait_outcome(bus, &w, id, opts->deadline_ms, opts->cancel);
        cancel_detach(opts->cancel, &w);
        st = w.st;
        *reply = w.reply;
        if (st == EDDY_ERR_NO_REPLY)
            eddy__fail(err, st, "no reply to request %s before its deadline, cancel or stop", id);
        else if (st == EDDY_ERR_RESPONDER_FAILED)
            eddy__fail(err, st, "the responder failed on request %s", id);
    }
    eddy__request_out_reset(&out);
    pthread_cond_destroy(&w.cond);
    pthread_mutex_destroy(&w.m);
    return st;
}

eddy_status eddy_bus_request_value(eddy_bus *bus, const char *subject, const char *type,
                                   eddy_pack_fn pack, void *user, const eddy_request_opts *opts,
                                   eddy_event **reply, eddy_error *err) {
    if (!bus || !reply)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "bus or reply is NULL");
    *reply = NULL;
    /* The refusals come before building anything, as for eddy_bus_request. */
    char inbox[256];
    bool cancelled;
    bool active = bus_state(bus, opts, inbox, &cancelled);
    eddy_status st =
        eddy__request_precheck(opts, cancelled, active, bus->caps, NULL, eddy_now_ms(), err);
    if (st != EDDY_OK)
        return st;
    eddy_event *ev = NULL;
    st = eddy__publish_value_event(&bus->s, type, pack, user, &ev, err);
    if (st == EDDY_OK)
        st = eddy_bus_request(bus, subject, ev, opts, reply, err);
    eddy_event_free(ev);
    return st;
}

eddy_status eddy_bus_request_stats(eddy_bus *bus, const char *name, eddy_request_stats *out) {
    if (!bus || !out)
        return EDDY_ERR_INVALID_ARGUMENT;
    eddy__requests_stats(bus->requests, name, out);
    return EDDY_OK;
}
