/* The reactive bus's control loop: one per activation, on a connection of its own, driving the
 * core's inbox state machine (inbox.h) exactly as the blocking control thread does: it opens
 * the activation's reply stream, registers the bus's subscriptions and renews their leases
 * and the stream's expiry by heartbeat, and reads replies, which the core matches to waiting
 * requests. Timers stand where the blocking thread sleeps, callbacks where it waits.
 *
 * Invariants:
 * - Started once every subscription of a start is ready (a requester that finds them in the
 *   registry finds their groups in place); the bus's start is ready once this loop is.
 * - The heartbeat renews only listed subscriptions (rsub.listed): ready ones, and late ones
 *   once their own registration (rctl_register, on the publishing connection) came back.
 * - Stopping leaves the registry and deletes the reply stream with commands on the publishing
 *   connection, put on the wire before stop returns when that connection is up (best effort:
 *   leases end by themselves), then closes this connection at once, even inside a blocking
 *   read. A later activation's loop sends nothing until that leave is answered, so the old
 *   leave cannot remove the new registration (rctl.state C_WAITING).
 * - A bus with a random instance also destroys its fanout groups at stop, in two ops after the
 *   leave (the subjects, then the destroys), counted in bus->leaving like it; skipped when the
 *   bus was started again meanwhile (the new activation uses the same groups).
 * - Replies read after their request's deadline are never delivered: due deadlines are
 *   ended before a read's replies are matched, whatever order the loop runs its watchers in.
 * - A stopped loop is only marked dead; it is freed by the outermost rbus_leave.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backoff.h"
#include "conn_state.h"
#include "error.h"
#include "internal.h"
#include "redis.h"
#include "timing.h"

typedef enum cstate {
    C_WAITING,    /* a previous activation's leave is still out */
    C_CONNECTING, /* waiting for the connection to come up */
    C_BACKOFF,    /* timer: reconnect */
    C_IDLE,       /* timer: plan again */
    C_ROUND,      /* a pipeline is out; collecting its replies */
    C_BETWEEN,    /* a round's outcomes are being completed; plans again after */
    C_DEAD        /* freed at the next rbus_leave */
} cstate;

struct rctl {
    eddy_rbus *bus;
    eddy__inbox *inbox;
    rconn *conn;
    cstate state;
    bool ready; /* the reply stream exists and the subscriptions were registered once */
    eddy__plan plan;
    redisReply **replies; /* the round's replies so far (owned) */
    size_t replies_cap;
    size_t got;
    eddy__sub **subs; /* the heartbeat's subscriptions */
    size_t subs_cap;
    ev_timer timer;       /* C_BACKOFF, C_IDLE */
    ev_timer ready_timer; /* how long it may take to become ready */
    unsigned attempt;     /* consecutive failed connects, for backoff */
    unsigned seed;
    eddy_error last_err;
    rctl *next; /* bus->ctls */
};

static void ctl_step(rctl *c);

static void free_replies(rctl *c) {
    for (size_t i = 0; i < c->got; i++)
        if (c->replies[i]) {
            freeReplyObject(c->replies[i]);
            c->replies[i] = NULL;
        }
    c->got = 0;
}

static void ctl_kill(rctl *c) {
    c->state = C_DEAD;
    ev_timer_stop(c->bus->loop, &c->timer);
    ev_timer_stop(c->bus->loop, &c->ready_timer);
    rconn_close(c->conn); /* a blocking read in flight gets no reply: nothing waits for it */
    c->conn = NULL;
    free_replies(c);
}

/* ---- connecting ------------------------------------------------------------------------- */

static void ctl_up(void *owner);
static void ctl_reply(void *owner, void *priv, redisReply *r);
static void ctl_down(void *owner, eddy_status st, const eddy_error *err);
static const rconn_ops ctl_ops = {ctl_up, ctl_reply, ctl_down};

static void ctl_after(rctl *c, cstate state, long long ms) {
    c->state = state;
    rbus_timer_after(c->bus, &c->timer, ms);
}

static void ctl_backoff(rctl *c) {
    const eddy__settings *s = &c->bus->s;
    ctl_after(c, C_BACKOFF,
              eddy__backoff_delay_ms(c->attempt ? c->attempt - 1 : 0, s->reconnect_min_ms,
                                     s->reconnect_max_ms, &c->seed));
}

static void ctl_connect(rctl *c) {
    c->state = C_CONNECTING;
    if (rconn_open(c->bus->loop, &c->bus->s, &ctl_ops, c, &c->conn) != EDDY_OK) {
        c->conn = NULL;
        c->attempt++;
        eddy__fail(&c->last_err, EDDY_ERR_NOMEM, "out of memory connecting");
        ctl_backoff(c);
        return;
    }
    if (rconn_is_up(c->conn)) { /* memory://: nothing to wait for */
        c->attempt = 0;
        ctl_step(c);
    }
}

/* The connection is gone: open and register again on a new one, as the core prescribes.
 * Requests keep waiting: the reply stream outlives a connection. */
static void ctl_lost(rctl *c, const eddy_error *err) {
    bool was_connecting = c->state == C_CONNECTING;
    free_replies(c);
    rconn_close(c->conn);
    c->conn = NULL;
    eddy__inbox_reset(c->inbox, eddy_now_ms());
    c->last_err = *err;
    /* The bus's tracker logs the state this makes, once. */
    eddy__log(&c->bus->s.log, EDDY_LOG_DEBUG, "control connection: %s%s", err->detail,
              was_connecting ? "" : "; reconnecting");
    if (was_connecting)
        c->attempt = eddy__conn_next_attempt(c->attempt, err->status);
    ctl_backoff(c);
    if (was_connecting && eddy__conn_refused(err->status) && !c->ready &&
        ev_is_active(&c->ready_timer)) {
        ev_timer_stop(c->bus->loop, &c->ready_timer); /* a start need not wait it out */
        rbus_ctl_ready(c->bus, err);
    }
}

static void ctl_up(void *owner) {
    rctl *c = owner;
    eddy_rbus *bus = c->bus;
    rbus_enter(bus);
    if (c->state == C_CONNECTING) {
        c->attempt = 0;
        ctl_step(c);
    }
    rbus_leave(bus);
}

static void ctl_down(void *owner, eddy_status st, const eddy_error *err) {
    rctl *c = owner;
    eddy_rbus *bus = c->bus;
    rbus_enter(bus);
    if (c->state != C_DEAD)
        ctl_lost(c, err);
    rbus_leave(bus);
}

/* ---- rounds -------------------------------------------------------------------------------- */

/* The subscriptions the heartbeat renews; false on OOM. */
static bool snapshot(rctl *c, size_t *n) {
    eddy_rbus *bus = c->bus;
    if (bus->nsubs > c->subs_cap) {
        eddy__sub **v = realloc(c->subs, bus->nsubs * sizeof(*v));
        if (!v)
            return false;
        c->subs = v;
        c->subs_cap = bus->nsubs;
    }
    *n = 0;
    for (size_t i = 0; i < bus->nsubs; i++)
        if (bus->subs[i]->listed)
            c->subs[(*n)++] = bus->subs[i]->sub;
    return true;
}

/* Plans and sends the next round. No pipeline is out. */
static void ctl_step(rctl *c) {
    eddy_rbus *bus = c->bus;
    if (c->state == C_DEAD)
        return;
    if (bus->leaving > 0) {
        c->state = C_WAITING; /* rctl_leave_done goes on */
        return;
    }
    if (!c->conn) {
        ctl_connect(c);
        return;
    }
    size_t n = 0;
    eddy__plan_reset(&c->plan);
    if (!snapshot(c, &n) ||
        eddy__inbox_plan(c->inbox, eddy_now_ms(), c->subs, n, &c->plan) != EDDY_OK) {
        ctl_after(c, C_IDLE, EDDY__NOMEM_RETRY_MS); /* out of memory: nothing was sent */
        return;
    }
    if (c->plan.cmds.n > c->replies_cap) { /* a retention round may be long */
        redisReply **v = realloc(c->replies, c->plan.cmds.n * sizeof(*v));
        if (!v) {
            eddy__inbox_reset(c->inbox, eddy_now_ms()); /* the plan is not sent */
            ctl_after(c, C_IDLE, EDDY__NOMEM_RETRY_MS);
            return;
        }
        c->replies = v;
        c->replies_cap = c->plan.cmds.n;
    }
    if (c->plan.cmds.n == 0) {
        ctl_after(c, C_IDLE, c->plan.idle_ms);
        return;
    }
    c->got = 0;
    c->state = C_ROUND;
    size_t ncmds = c->plan.cmds.n;
    for (size_t i = 0; i < ncmds; i++)
        if (!rconn_send(c->conn, &c->plan.cmds.cmds[i], i + 1 == ncmds ? c->plan.block_ms : -1,
                        NULL))
            return; /* down follows from the loop */
}

/* Every reply of the round is in (the last one borrowed). */
static void round_done(rctl *c) {
    eddy_rbus *bus = c->bus;
    size_t n = c->plan.cmds.n;
    c->state = C_BETWEEN;
    rreq_expire(bus);         /* before matching: a reply after its deadline is Unclaimed */
    if (c->state == C_DEAD) { /* stopped from a request's callback: the replies are moot */
        c->replies[n - 1] = NULL;
        free_replies(c);
        return;
    }
    eddy__reply_list done = {0};
    eddy_status st = eddy__inbox_feed(c->inbox, eddy_now_ms(), &c->plan, c->replies, n, &done);
    c->replies[n - 1] = NULL;
    free_replies(c);
    if (st != EDDY_OK) {
        eddy__reply_list_free(&done);
        eddy_error err;
        eddy__fail(&err, st, "unexpected replies");
        ctl_lost(c, &err);
        return;
    }
    bool became_ready = !c->ready && eddy__inbox_ready(c->inbox);
    if (became_ready) {
        c->ready = true;
        ev_timer_stop(bus->loop, &c->ready_timer);
        rbus_ctl_ready(bus, NULL);
    }
    /* Matched requests were taken out of the table: each is completed here, whatever the
     * callbacks before it did to the bus. */
    for (size_t i = 0; i < done.n; i++) {
        eddy_event *reply = done.v[i].reply;
        done.v[i].reply = NULL;
        rreq_complete_waiter(done.v[i].waiter, done.v[i].st, reply);
    }
    eddy__reply_list_free(&done);
    if (c->state == C_BETWEEN)
        ctl_step(c);
}

static void ctl_reply(void *owner, void *priv, redisReply *r) {
    rctl *c = owner;
    eddy_rbus *bus = c->bus;
    rbus_enter(bus);
    if (c->state == C_ROUND && c->got + 1 < c->plan.cmds.n) {
        if (!(c->replies[c->got++] = rconn_keep(c->conn, r))) {
            eddy_error err;
            eddy__fail(&err, EDDY_ERR_NOMEM, "out of memory keeping a reply");
            ctl_lost(c, &err);
        }
    } else if (c->state == C_ROUND) {
        c->replies[c->got++] = r;
        round_done(c);
    }
    rbus_leave(bus);
}

/* ---- timers --------------------------------------------------------------------------------- */

static void ctl_on_timer(struct ev_loop *loop, ev_timer *w, int revents) {
    rctl *c = w->data;
    eddy_rbus *bus = c->bus;
    rbus_enter(bus);
    if (c->state == C_BACKOFF)
        ctl_connect(c);
    else if (c->state == C_IDLE)
        ctl_step(c);
    rbus_leave(bus);
}

static void ctl_on_ready_timeout(struct ev_loop *loop, ev_timer *w, int revents) {
    rctl *c = w->data;
    eddy_rbus *bus = c->bus;
    rbus_enter(bus);
    if (c->state != C_DEAD && !c->ready) {
        eddy_error err;
        if (c->last_err.detail[0])
            eddy__fail(&err, EDDY_ERR_IO,
                       "the backend could not be reached to open the reply stream: %s",
                       c->last_err.detail);
        else
            eddy__fail(&err, EDDY_ERR_IO,
                       "the backend could not be reached to open the reply stream");
        rbus_ctl_ready(bus, &err);
    }
    rbus_leave(bus);
}

/* ---- leaving and registering, on the publishing connection ------------------------------ */

/* First failure among an op's replies (EDDY_OK when there is none). */
static eddy_status replies_status(rpub *p, eddy_status st, const eddy_error *err, eddy_error *out) {
    if (st != EDDY_OK) {
        if (err)
            *out = *err;
        else
            eddy__fail(out, st, "the bus was freed");
        return st;
    }
    for (size_t i = 0; i < p->cmds.n && st == EDDY_OK; i++)
        st = eddy__reply_status(p->replies[i], "subscription registry", out);
    return st;
}

/* One op of a stop is answered: the next activation's loop goes on after the last. */
static void leave_done(eddy_rbus *bus) {
    bus->leaving--;
    if (bus->leaving == 0 && bus->ctl && bus->ctl->state == C_WAITING)
        ctl_step(bus->ctl);
}

static void left(eddy_rbus *bus, rpub *p, eddy_status st, const eddy_error *err) {
    eddy_error e;
    if (replies_status(p, st, err, &e) != EDDY_OK && st != EDDY_ERR_CLOSED)
        eddy__log(&bus->s.log, EDDY_LOG_WARN,
                  "stop: could not leave the subscription registry (%s); the leases end in %u ms",
                  e.detail, bus->s.lease_ms);
    leave_done(bus);
}

static void registered(eddy_rbus *bus, rpub *p, eddy_status st, const eddy_error *err) {
    eddy_error e;
    st = replies_status(p, st, err, &e);
    rbus_sub_registered(bus, p->user, p->seq, st, st == EDDY_OK ? NULL : &e);
}

eddy_status rctl_register(eddy_rbus *bus, rsub *rs) {
    rpub *p = rpub_new(registered, rs);
    if (!p)
        return EDDY_ERR_NOMEM;
    p->seq = rs->reg_seq;
    eddy_status st = eddy__inbox_register_cmds(bus->ctl->inbox, rs->sub, eddy_now_ms(), &p->cmds);
    if (st == EDDY_OK)
        st = rpub_submit(bus, p);
    if (st != EDDY_OK)
        rpub_free(p);
    return st;
}

/* ---- interface --------------------------------------------------------------------------- */

/* ---- a random instance's fanout groups go with its bus ------------------------------------ */

/* In two steps on the publishing connection: the subjects, then XGROUP DESTROY of each fanout
 * group on the streams its pattern matches (retention.h). Best effort, like the leave: what a
 * failure leaves behind, the retention pass removes once the leases ended. Counted in
 * bus->leaving, so a later activation's control loop waits for them. */

static void fanout_log(eddy_rbus *bus, const char *why) {
    eddy__log(&bus->s.log, EDDY_LOG_WARN,
              "stop: could not remove the fanout groups (%s); the retention pass removes them "
              "once the leases ended",
              why);
}

static void fanout_destroyed(eddy_rbus *bus, rpub *p, eddy_status st, const eddy_error *err) {
    if (st != EDDY_OK && st != EDDY_ERR_CLOSED)
        fanout_log(bus, err ? err->detail : eddy_status_str(st));
    (void)p; /* errors of single destroys (a stream gone) do not matter */
    leave_done(bus);
}

static eddy__sub **all_subs(eddy_rbus *bus) {
    eddy__sub **subs = malloc((bus->nsubs ? bus->nsubs : 1) * sizeof(*subs));
    for (size_t i = 0; subs && i < bus->nsubs; i++)
        subs[i] = bus->subs[i]->sub;
    return subs;
}

static void fanout_listed(eddy_rbus *bus, rpub *p, eddy_status st, const eddy_error *err) {
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    eddy__sub **subs = NULL;
    /* Started again meanwhile: the new activation uses the same groups. */
    if (st == EDDY_OK && !bus->started && !bus->freeing) {
        subs = all_subs(bus);
        st = subs ? eddy__retention_stop_destroy(&bus->s, subs, bus->nsubs, p->replies[0], &cmds)
                  : EDDY_ERR_NOMEM;
        for (size_t i = 0; st == EDDY_OK && i < cmds.n; i += RPUB_MAX_CMDS) {
            rpub *d = rpub_new(fanout_destroyed, NULL);
            for (size_t j = i; d && j < cmds.n && j < i + RPUB_MAX_CMDS; j++) {
                eddy__cmd *c = eddy__cmdlist_add(&d->cmds, 0, 0);
                if (!c)
                    break;
                *c = cmds.cmds[j]; /* moved */
                eddy__cmd_init(&cmds.cmds[j]);
            }
            if (!d || eddy__cmdlist_status(&d->cmds) != EDDY_OK || rpub_submit(bus, d) != EDDY_OK) {
                rpub_free(d);
                st = EDDY_ERR_NOMEM;
                break;
            }
            bus->leaving++;
        }
        if (st != EDDY_OK)
            fanout_log(bus, eddy_status_str(st));
    } else if (st != EDDY_OK && st != EDDY_ERR_CLOSED) {
        fanout_log(bus, err ? err->detail : eddy_status_str(st));
    }
    free(subs);
    eddy__cmdlist_reset(&cmds);
    leave_done(bus);
}

static void drop_fanout_groups(eddy_rbus *bus) {
    eddy__sub **subs = all_subs(bus);
    rpub *p = subs ? rpub_new(fanout_listed, NULL) : NULL;
    bool need = false;
    eddy_status st =
        p ? eddy__retention_stop_list(&bus->s, subs, bus->nsubs, &p->cmds, &need) : EDDY_ERR_NOMEM;
    free(subs);
    if (st == EDDY_OK && need)
        st = rpub_submit(bus, p);
    if (st != EDDY_OK || !need) {
        rpub_free(p);
        if (st != EDDY_OK)
            fanout_log(bus, eddy_status_str(st));
        return;
    }
    bus->leaving++;
}

eddy_status eddy_rbus_retention_stats(eddy_rbus *bus, eddy_retention_stats *out) {
    if (!bus || !out)
        return EDDY_ERR_INVALID_ARGUMENT;
    eddy__retention_counters_snapshot(&bus->retention, out);
    return EDDY_OK;
}

eddy_status eddy_rbus_connection_stats(eddy_rbus *bus, eddy_connection_stats *out) {
    if (!bus || !out)
        return EDDY_ERR_INVALID_ARGUMENT;
    eddy__conn_stats(bus->s.conn_state, out);
    return EDDY_OK;
}

eddy_status rctl_start(eddy_rbus *bus) {
    rctl *c = calloc(1, sizeof(*c));
    if (!c)
        return EDDY_ERR_NOMEM;
    if (!(c->inbox = eddy__inbox_new(&bus->s, bus->requests, &bus->retention, eddy_now_ms()))) {
        free(c);
        return EDDY_ERR_NOMEM;
    }
    c->bus = bus;
    eddy__plan_init(&c->plan);
    c->seed = (unsigned)((unsigned long long)rbus_now_ms() ^ (uintptr_t)c ^ (unsigned)getpid());
    ev_init(&c->timer, ctl_on_timer);
    c->timer.data = c;
    ev_init(&c->ready_timer, ctl_on_ready_timeout);
    c->ready_timer.data = c;
    c->next = bus->ctls;
    bus->ctls = c;
    bus->ctl = c;
    rbus_timer_after(bus, &c->ready_timer, eddy__ready_timeout_ms(&bus->s));
    ctl_step(c);
    return EDDY_OK;
}

void rctl_stop(eddy_rbus *bus) {
    rctl *c = bus->ctl;
    if (!c)
        return;
    bus->ctl = NULL;
    ctl_kill(c);
    /* Leave the registry first thing on the publishing connection, so requesters see "no
     * responders" rather than wait, and delete the reply stream. */
    rpub *p = rpub_new(left, NULL);
    eddy__sub **subs = malloc((bus->nsubs ? bus->nsubs : 1) * sizeof(*subs));
    eddy_status st = p && subs ? EDDY_OK : EDDY_ERR_NOMEM;
    for (size_t i = 0; st == EDDY_OK && i < bus->nsubs; i++)
        subs[i] = bus->subs[i]->sub;
    if (st == EDDY_OK)
        st = eddy__inbox_close_cmds(c->inbox, subs, bus->nsubs, &p->cmds);
    if (st == EDDY_OK)
        st = rpub_submit(bus, p);
    free(subs);
    if (st != EDDY_OK) {
        rpub_free(p);
        eddy__log(&bus->s.log, EDDY_LOG_WARN,
                  "stop: could not leave the subscription registry; the leases end in %u ms",
                  bus->s.lease_ms);
        return;
    }
    bus->leaving++;
    drop_fanout_groups(bus);
    rpub_flush(bus);
}

bool rctl_ready(const rctl *c) { return c->ready; }
const char *rctl_inbox_key(const rctl *c) { return eddy__inbox_key(c->inbox); }

static void rctl_free(rctl *c) {
    if (c->state != C_DEAD)
        ctl_kill(c);
    eddy__inbox_free(c->inbox);
    eddy__plan_reset(&c->plan);
    free(c->replies);
    free(c->subs);
    free(c);
}

void rctl_reap(eddy_rbus *bus) {
    for (rctl **p = &bus->ctls; *p;) {
        rctl *c = *p;
        if (c->state == C_DEAD && c != bus->ctl) {
            *p = c->next;
            rctl_free(c);
        } else {
            p = &c->next;
        }
    }
}

void rctl_free_all(eddy_rbus *bus) {
    while (bus->ctls) {
        rctl *c = bus->ctls;
        bus->ctls = c->next;
        rctl_free(c);
    }
    bus->ctl = NULL;
}
