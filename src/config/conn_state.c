/* SPDX-License-Identifier: BSD-3-Clause */
/* The connection state of a bus; see conn_state.h.
 *
 * A bus has many connections (readers, control, publishers, on several threads in the blocking
 * front end), so the state is the bus's, not a connection's, and the rules are:
 * - CONNECTED (the first time) or RECONNECTED when a connection comes up while the bus is not
 *   connected; further connections coming up change nothing.
 * - DISCONNECTED when a connection that came up during the current connected period is lost,
 *   or when the very first attempt fails: one outage, however many connections notice it, is
 *   one change. The period is the epoch: leaving CONNECTED starts a new one, so a connection
 *   that notices an old outage late (a pooled connection used again) changes nothing.
 * - AUTH_FAILED when the server refuses the credentials, NOT_REDIS when the peer does not speak
 *   RESP: from any state, once (a retry that fails the same way changes nothing).
 * - Any other failed attempt changes nothing: the state says what was learnt last.
 * - Redis Cluster:
 *   - A connection given up because the slot is served elsewhere by a node that answers
 *     (MOVED, TRYAGAIN, an ASK not followed, UNBLOCKED: eddy__cluster_rerouted) is routing,
 *     not an outage: no change. The bus is rerouting until a connection comes up; a connect
 *     that fails meanwhile is the outage (DISCONNECTED). So a migration or a failover that
 *     reconnects many times changes nothing while the slot's new node answers.
 *   - After a CLUSTERDOWN the outage is in doubt: a connection coming up does not end it,
 *     since the next command may be refused again right after the handshake; it ends when a
 *     connection that came up answers a command (eddy__conn_proved). Until then the
 *     connection's epoch carries TENTATIVE, and losing it changes nothing. So one outage of
 *     the cluster is one DISCONNECTED and one RECONNECTED, however many reconnects it takes.
 * Counters count connections, not changes; disconnected_ms is the time spent outside
 * CONNECTED/RECONNECTED after the first report. */
#include "config/conn_state.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "timing.h"
#include "util/refusal.h"

/* Past the cap of any reconnect range (eddy__backoff_delay_ms stops doubling there). */
#define ATTEMPT_LONGEST 64
/* In a connection's epoch: up during an outage in doubt, not yet proved (see the top). */
#define TENTATIVE 0x80000000u

struct eddy__conn_state {
    pthread_mutex_t notify; /* held across a change and its callback: callbacks in order */
    pthread_mutex_t lock;   /* guards the fields below; never held across the callback */
    eddy_connection_state state;
    bool ever_connected;
    bool doubt;                  /* the current outage came from a CLUSTERDOWN (see the top) */
    bool rerouting;              /* a connection was given up for a reroute; none came up since */
    unsigned epoch;              /* the current connected period, from 1 */
    long long down_since;        /* monotonic ms the bus left CONNECTED, -1 while connected */
    unsigned long long down_sum; /* ms of the periods that ended */
    unsigned long long connects, connect_failures, disconnects;
    unsigned long long lost_writes; /* eddy__conn_writes_lost */
    eddy__logger log;
    eddy_connection_fn fn;
    void *user;
    unsigned reconnect_max_ms;
    char where[160];           /* the server, without credentials */
    atomic_uint master_epoch;  /* eddy__conn_master_moved/doubt */
    atomic_uint master_moves;  /* the epochs a move (not a doubt) began */
    long long master_epoch_at; /* when it last moved (monotonic ms), under lock */
    unsigned doubts;           /* doubts that moved it since the last announced move */
    char avoid_host[256];      /* eddy__conn_master_avoid, under lock ("" for none) */
    int avoid_port;
    long long avoid_at;
};

eddy__conn_state *eddy__conn_state_new(const eddy__url *url, const eddy__logger *log,
                                       eddy_connection_fn fn, void *user,
                                       unsigned reconnect_max_ms) {
    eddy__conn_state *cs = calloc(1, sizeof(*cs));
    if (!cs)
        return NULL;
    pthread_mutex_init(&cs->notify, NULL);
    pthread_mutex_init(&cs->lock, NULL);
    cs->state = EDDY_CONN_CONNECTING;
    cs->epoch = 1;
    cs->down_since = -1;
    cs->log = *log;
    cs->fn = fn;
    cs->user = user;
    cs->reconnect_max_ms = reconnect_max_ms;
    if (url->kind == EDDY__URL_TCP)
        snprintf(cs->where, sizeof(cs->where), "%s:%d", url->host, url->port);
    else if (url->kind == EDDY__URL_UNIX)
        snprintf(cs->where, sizeof(cs->where), "unix:%s", url->path);
    else if (url->kind == EDDY__URL_SENTINEL)
        snprintf(cs->where, sizeof(cs->where), "sentinel master %s", url->name);
    else if (url->kind == EDDY__URL_CLUSTER)
        snprintf(cs->where, sizeof(cs->where), "cluster via %s:%d", url->sentinels[0].host,
                 url->sentinels[0].port);
    else
        snprintf(cs->where, sizeof(cs->where), "memory://%s", url->name ? url->name : "");
    return cs;
}

void eddy__conn_state_free(eddy__conn_state *cs) {
    if (!cs)
        return;
    pthread_mutex_destroy(&cs->lock);
    pthread_mutex_destroy(&cs->notify);
    free(cs);
}

static bool is_connected(eddy_connection_state s) {
    return s == EDDY_CONN_CONNECTED || s == EDDY_CONN_RECONNECTED;
}

/* Under lock: moves to `to`, keeping the epoch and the time disconnected. */
static void move_to(eddy__conn_state *cs, eddy_connection_state to, long long now) {
    bool was = is_connected(cs->state), will = is_connected(to);
    if (was && !will) {
        cs->epoch++;
        cs->down_since = now;
    } else if (!was && will && cs->down_since >= 0) {
        cs->down_sum += (unsigned long long)(now - cs->down_since);
        cs->down_since = -1;
    } else if (!was && !will && cs->down_since < 0) {
        cs->down_since = now; /* the first report was a failure */
    }
    cs->state = to;
}

/* Outside lock, under notify: the one log line and the callback of a change. */
static void tell(eddy__conn_state *cs, eddy_connection_state to, const eddy_error *why,
                 long long down_ms) {
    const char *reason = why ? why->detail : "";
    switch (to) {
    case EDDY_CONN_CONNECTED:
        eddy__log(&cs->log, EDDY_LOG_INFO, "connected to %s", cs->where);
        break;
    case EDDY_CONN_RECONNECTED:
        eddy__log(&cs->log, EDDY_LOG_INFO, "reconnected to %s after %lld ms", cs->where, down_ms);
        break;
    case EDDY_CONN_DISCONNECTED:
        eddy__log(&cs->log, EDDY_LOG_WARN, "connection to %s %s: %s; reconnecting", cs->where,
                  cs->ever_connected ? "lost" : "failed", reason);
        break;
    case EDDY_CONN_AUTH_FAILED:
        eddy__log(&cs->log, EDDY_LOG_ERROR,
                  "%s refused the credentials (%s); retrying every %u ms, not logged again",
                  cs->where, reason, cs->reconnect_max_ms);
        break;
    case EDDY_CONN_NOT_REDIS:
        eddy__log(&cs->log, EDDY_LOG_ERROR, "%s is not a Redis server (%s)", cs->where, reason);
        break;
    case EDDY_CONN_CONNECTING:
        break;
    }
    if (cs->fn)
        cs->fn(to, why, cs->user);
}

typedef enum { UP, FAILED, LOST, PROVED } report_kind;

/* The state a report asks for, or CONNECTING for none (under lock). */
static eddy_connection_state decide(const eddy__conn_state *cs, report_kind kind, eddy_status st,
                                    unsigned epoch, bool rerouted) {
    switch (kind) {
    case UP:
    case PROVED:
        if (is_connected(cs->state) || (kind == UP && cs->doubt && cs->ever_connected))
            return EDDY_CONN_CONNECTING;
        return cs->ever_connected ? EDDY_CONN_RECONNECTED : EDDY_CONN_CONNECTED;
    case FAILED:
        if (st == EDDY_ERR_AUTH)
            return EDDY_CONN_AUTH_FAILED;
        if (st == EDDY_ERR_PROTOCOL)
            return EDDY_CONN_NOT_REDIS;
        if (cs->rerouting && is_connected(cs->state)) /* the reroute found no node */
            return EDDY_CONN_DISCONNECTED;
        return cs->state == EDDY_CONN_CONNECTING ? EDDY_CONN_DISCONNECTED : EDDY_CONN_CONNECTING;
    case LOST:
        return !rerouted && epoch == cs->epoch && is_connected(cs->state) ? EDDY_CONN_DISCONNECTED
                                                                          : EDDY_CONN_CONNECTING;
    }
    return EDDY_CONN_CONNECTING;
}

/* Counts one report and applies the change it makes, if any; returns the epoch after it. */
static unsigned report(eddy__conn_state *cs, report_kind kind, eddy_status st, unsigned epoch,
                       const eddy_error *why) {
    pthread_mutex_lock(&cs->notify);
    pthread_mutex_lock(&cs->lock);
    if (kind == UP)
        cs->connects++;
    else if (kind == FAILED)
        cs->connect_failures++;
    else if (kind == LOST)
        cs->disconnects++;
    bool rerouted = (kind == FAILED || kind == LOST) && eddy__cluster_rerouted(st, why);
    if ((kind == FAILED || kind == LOST) && eddy__cluster_refused(st, why) == EDDY__CLUSTER_DOWN)
        cs->doubt = true;
    long long now = eddy__mono_ms();
    long long down_ms = cs->down_since >= 0 ? now - cs->down_since : 0;
    eddy_connection_state to = decide(cs, kind, st, epoch, rerouted);
    bool change = to != EDDY_CONN_CONNECTING && to != cs->state;
    if (kind == LOST && rerouted && epoch == cs->epoch && is_connected(cs->state))
        cs->rerouting = true;
    else if (kind == UP || (change && to == EDDY_CONN_DISCONNECTED))
        cs->rerouting = false;
    if (change) {
        move_to(cs, to, now);
        cs->ever_connected |= is_connected(to);
        if (is_connected(to))
            cs->doubt = false;
    }
    unsigned now_epoch = cs->epoch;
    if (kind == UP && !is_connected(cs->state) && cs->doubt)
        now_epoch |= TENTATIVE;
    pthread_mutex_unlock(&cs->lock);
    if (change)
        tell(cs, to, why, down_ms);
    pthread_mutex_unlock(&cs->notify);
    return now_epoch;
}

void eddy__conn_up(eddy__conn_state *cs, unsigned *epoch) {
    if (cs) /* after the change: this connection belongs to the new period */
        *epoch = report(cs, UP, EDDY_OK, 0, NULL);
}

void eddy__conn_proved(eddy__conn_state *cs, unsigned *epoch) {
    if (cs && (*epoch & TENTATIVE))
        *epoch = report(cs, PROVED, EDDY_OK, 0, NULL);
}

/* why, or the status's text when there is none. */
static const eddy_error *reason(eddy_status st, const eddy_error *why, eddy_error *own) {
    if (why && why->detail[0])
        return why;
    own->status = st;
    snprintf(own->detail, sizeof(own->detail), "%s", eddy_status_str(st));
    return own;
}

/* A stop, or this process's memory: nothing about the server. */
static bool says_nothing(eddy_status st) { return st == EDDY_ERR_CLOSED || st == EDDY_ERR_NOMEM; }

void eddy__conn_failed(eddy__conn_state *cs, eddy_status st, const eddy_error *why) {
    if (!cs || says_nothing(st))
        return;
    eddy_error own;
    report(cs, FAILED, st, 0, reason(st, why, &own));
}

void eddy__conn_lost(eddy__conn_state *cs, unsigned *epoch, eddy_status st, const eddy_error *why) {
    unsigned mine = *epoch;
    *epoch = 0;
    if (!cs || mine == 0 || says_nothing(st))
        return;
    eddy_error own;
    report(cs, LOST, st, mine, reason(st, why, &own));
}

void eddy__conn_down(eddy__conn_state *cs, unsigned *epoch, eddy_status st, const eddy_error *why) {
    if (*epoch)
        eddy__conn_lost(cs, epoch, st, why);
    else
        eddy__conn_failed(cs, st, why);
}

void eddy__conn_writes_lost(eddy__conn_state *cs, uint64_t n) {
    if (!cs || n == 0)
        return;
    pthread_mutex_lock(&cs->lock);
    cs->lost_writes += n;
    pthread_mutex_unlock(&cs->lock);
}

unsigned eddy__conn_next_attempt(unsigned attempt, eddy_status st) {
    if (st == EDDY_ERR_AUTH)
        return ATTEMPT_LONGEST;
    return attempt < ATTEMPT_LONGEST ? attempt + 1 : attempt;
}

bool eddy__conn_refused(eddy_status st) { return st == EDDY_ERR_AUTH || st == EDDY_ERR_PROTOCOL; }

void eddy__conn_stats(eddy__conn_state *cs, eddy_connection_stats *out) {
    memset(out, 0, sizeof(*out));
    if (!cs)
        return;
    pthread_mutex_lock(&cs->lock);
    out->state = cs->state;
    out->connects = cs->connects;
    out->connect_failures = cs->connect_failures;
    out->disconnects = cs->disconnects;
    out->lost_writes = cs->lost_writes;
    out->disconnected_ms = cs->down_sum;
    if (cs->down_since >= 0)
        out->disconnected_ms += (unsigned long long)(eddy__mono_ms() - cs->down_since);
    pthread_mutex_unlock(&cs->lock);
}

/* A new master epoch; for a doubt only when the last is older than reconnect_max_ms, doubled
 * for each doubt since the last announced move or quiet period (up to 64 times): a doubt that a
 * fresh ask did not resolve (the sentinels name the same master: a replica is just down or
 * behind) costs the handle's connections ever fewer rounds of reconnects. */
static void new_master_epoch(eddy__conn_state *cs, bool doubt) {
    if (!cs)
        return;
    long long now = eddy__mono_ms();
    pthread_mutex_lock(&cs->lock);
    long long after = (long long)cs->reconnect_max_ms << (cs->doubts < 6 ? cs->doubts : 6);
    if (doubt && cs->master_epoch_at && now - cs->master_epoch_at >= 2 * after)
        cs->doubts = 0; /* a quiet period: the next doubts count as the first again */
    if (!doubt || cs->master_epoch_at == 0 || now - cs->master_epoch_at >= after) {
        atomic_fetch_add(&cs->master_epoch, 1);
        if (!doubt)
            atomic_fetch_add(&cs->master_moves, 1);
        cs->master_epoch_at = now;
        cs->doubts = doubt ? cs->doubts + 1 : 0;
    }
    pthread_mutex_unlock(&cs->lock);
}

void eddy__conn_master_moved(eddy__conn_state *cs) { new_master_epoch(cs, false); }
void eddy__conn_master_doubt(eddy__conn_state *cs) { new_master_epoch(cs, true); }

unsigned eddy__conn_master_moves(const eddy__conn_state *cs) {
    return cs ? atomic_load_explicit(&cs->master_moves, memory_order_relaxed) : 0;
}

unsigned eddy__conn_master_epoch(const eddy__conn_state *cs) {
    return cs ? atomic_load_explicit(&cs->master_epoch, memory_order_relaxed) : 0;
}

void eddy__conn_master_avoid(eddy__conn_state *cs, const char *host, int port) {
    if (!cs)
        return;
    pthread_mutex_lock(&cs->lock);
    snprintf(cs->avoid_host, sizeof(cs->avoid_host), "%s", host);
    cs->avoid_port = port;
    cs->avoid_at = eddy__mono_ms();
    pthread_mutex_unlock(&cs->lock);
    new_master_epoch(cs, false);
}

bool eddy__conn_master_avoided(eddy__conn_state *cs, const char *host, int port) {
    if (!cs)
        return false;
    pthread_mutex_lock(&cs->lock);
    bool v = cs->avoid_host[0] && cs->avoid_port == port && strcmp(cs->avoid_host, host) == 0 &&
             eddy__mono_ms() - cs->avoid_at < EDDY__AVOID_MS;
    pthread_mutex_unlock(&cs->lock);
    return v;
}
