/* SPDX-License-Identifier: BSD-3-Clause */
/* Retention of subject streams; see retention.h for the rounds of a pass.
 *
 * Rules:
 * - Only "{ns}:s:<subject>" streams of the subjects set are touched: event-store, dead-letter
 *   and reply streams never are.
 * - A group needs every entry from min(oldest pending, last-delivered + 1) on. The safe cut of
 *   a stream is the lowest need of its groups, capped at "server TIME - grace" (round 4): no
 *   entry younger than the grace goes, with or without groups. A live registry member whose
 *   pattern matches the subject but whose group is not on the stream (a pattern subscription
 *   that will create it at "0") holds the stream: no safe trim this pass.
 * - Limits (max age by server TIME of round 3, max length by XLEN of round 3) cut higher. The
 *   entries they drop are listed first (XRANGE from the stream's start, at most LIST_MAX per
 *   pass: the cut is then the last listed + 1), so the cut never passes an entry the pass has
 *   not seen, and what each group loses is counted exactly: the listed entries after its
 *   last-delivered id, plus its pending entries in the dropped range (XPENDING by range).
 * - Any reply the pass cannot read (or an allocation failure) ends it without trimming: a
 *   stream whose need is unknown is never trimmed on a guess.
 *
 * Races:
 * - Entries published during the pass get ids above the stream's last id when it was read,
 *   and every cut is at most one past an entry that existed then (a group's last-delivered or
 *   pending id, a listed entry) or below "TIME - grace"/"TIME - max age" with a positive
 *   grace or age, so no newer entry is ever cut.
 * - A group created at "$" after round 3 needs only entries newer than its creation: safe as
 *   above. A group created at "0" after round 3 belongs to a pattern subscription that found
 *   the subject late. Either it is in the registry read in round 4 (then the stream is held),
 *   or it registered after that read: it started after "round 4 - the time a bus takes from
 *   starting a subscription to registering it", and a "0" group only wants entries published
 *   after its subscription started (a subject seen at its start gets "$"). The grace is
 *   counted back from the TIME read in the same round as the registry, not from the pass's
 *   start, so the pass's length does not eat into it: the grace only has to exceed that
 *   start-to-registration time (a few round trips; bounded by the bus's ready timeout).
 * - Dead fanout groups: no live lease naming the group, and idle longer than a limit: every
 *   consumer idle that long, or, with no consumer at all, seen with none (and no lease) by
 *   this holder's passes for that long (by server TIME; a group a bus has just made has no
 *   consumer until its first read, and its lease comes a few round trips later, far within
 *   the limit). The limit is lease_ms for "fanout.<name>.i-<32 hex>" (a random instance:
 *   nobody can come back for it; a live reader is never idle that long, even while its control
 *   loop cannot renew its lease), and consumer_idle_ms for a named instance's fanout group
 *   (its process has been gone that long; 0 keeps those groups). What such a group still had
 *   pending goes with it: nobody was left to read it.
 * - Idle consumers: no pending entry, no live lease of that instance (a live bus, even paused,
 *   keeps its consumers), and idle > lease_ms for a random instance's consumer ("i-<32 hex>":
 *   nobody can come back under that name), > consumer_idle_ms for a named one
 *   (consumer_idle_ms 0 keeps every consumer).
 *   XGROUP DELCONSUMER answers how many entries the consumer had pending: should one have read
 *   in between (a dead instance's name reused within one round trip), the count is logged.
 * - One holder: the lease is taken with SET NX PX (its value is the activation's reply stream
 *   key: unique, and it names the holder) and renewed by its holder (GET, then PEXPIRE) for 3
 *   intervals. Two holders at once (a holder stalled past its lease) would cut
 *   at the same safe points, so even then nothing unread is lost. */
#include "bus/retention.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus/sub.h"
#include "events/subject.h"
#include "keys.h"
#include "util/reply.h"

#define LIST_MAX 10000 /* entries a limit may drop per stream per pass */

enum {
    T_SET = 1,
    T_GET,
    T_PEXPIRE,
    T_SMEMBERS,
    T_TIME,
    T_GROUPS,
    T_XLEN,
    T_PSUM,
    T_CONSUMERS,
    T_LIST_LEN,
    T_LIST_AGE,
    T_REGISTRY,
    T_DESTROY,
    T_DELCONSUMER,
    T_PRANGE,
    T_XTRIM
};

typedef enum phase { P_IDLE, P_LEASE, P_LIST, P_GROUPS, P_DETAIL, P_ACT } phase;

typedef struct sid {
    unsigned long long ms, seq;
} sid;

typedef struct rcons {
    char *name;
    long long pending, idle;
    bool remove;
} rcons;

typedef struct rgroup {
    char *name;
    sid last;
    long long pending, consumers;
    sid min_pending;
    bool has_min;
    bool fanout_random;
    bool cons_known;
    rcons *cons;
    size_t ncons;
    bool destroy;
    unsigned long long unread_dropped, pending_dropped;
} rgroup;

typedef struct rstream {
    char *subject, *key;
    bool skip; /* untouched this pass */
    rgroup *g;
    size_t ng;
    long long len;
    sid *list; /* entries a limit drops, oldest first */
    size_t nlist;
    bool list_capped;
    bool hold;
    bool trim;
    sid cut;
} rstream;

typedef struct member {
    char *group, *instance, *pattern;
} member;

/* A fanout group seen with no consumer and no lease, since (server ms) a pass first saw it so;
 * kept from one pass to the next. */
typedef struct empty_group {
    char *key, *group;
    long long since;
} empty_group;

struct eddy__retention {
    const eddy__settings *s;
    eddy__retention_counters *counters;
    char *holder, *lease_key, *subjects_key, *registry_key;
    phase ph;
    long long due;
    bool renew;
    rstream *st;
    size_t nst;
    member *m;
    size_t nm;
    long long time3_ms, time4_ms;
    bool plan_nomem;    /* a command of the round being planned could not be added */
    empty_group *empty; /* seen by the last pass that decided */
    size_t nempty;
};

void eddy__retention_counters_snapshot(eddy__retention_counters *c, eddy_retention_stats *out) {
    out->passes = atomic_load(&c->passes);
    out->trimmed = atomic_load(&c->trimmed);
    out->dropped = atomic_load(&c->dropped);
    out->groups_removed = atomic_load(&c->groups_removed);
    out->consumers_removed = atomic_load(&c->consumers_removed);
}

/* ---- ids and replies ---------------------------------------------------------------------- */

static bool parse_id(const char *s, size_t len, sid *out) {
    char buf[48];
    if (len == 0 || len >= sizeof(buf))
        return false;
    memcpy(buf, s, len);
    buf[len] = '\0';
    char *end;
    if (buf[0] < '0' || buf[0] > '9')
        return false;
    out->ms = strtoull(buf, &end, 10);
    out->seq = 0;
    if (*end == '-') {
        if (end[1] < '0' || end[1] > '9')
            return false;
        out->seq = strtoull(end + 1, &end, 10);
    }
    return *end == '\0';
}

static int id_cmp(sid a, sid b) {
    if (a.ms != b.ms)
        return a.ms < b.ms ? -1 : 1;
    return a.seq < b.seq ? -1 : a.seq > b.seq;
}

static sid id_next(sid a) {
    if (a.seq == ULLONG_MAX)
        return (sid){a.ms + 1, 0};
    return (sid){a.ms, a.seq + 1};
}

static sid id_prev(sid a) { /* a > 0-0 */
    if (a.seq == 0)
        return (sid){a.ms - 1, ULLONG_MAX};
    return (sid){a.ms, a.seq - 1};
}

static void cmd_id(eddy__cmd *cmd, sid id) { eddy__cmd_fmt(cmd, "%llu-%llu", id.ms, id.seq); }

static bool is_list(const redisReply *r) { return r && r->type == REDIS_REPLY_ARRAY; }

static bool field_int(const redisReply *rec, const char *name, long long *out) {
    const redisReply *v = eddy__reply_field(rec, name);
    if (!v || v->type != REDIS_REPLY_INTEGER)
        return false;
    *out = v->integer;
    return true;
}

static bool is_hex32(const char *s) {
    if (strlen(s) != 32)
        return false;
    for (; *s; s++)
        if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
            return false;
    return true;
}

/* "i-<32 hex>": a random instance (settings.instance NULL), the name of its consumers. */
static bool random_instance(const char *name) {
    return strncmp(name, "i-", 2) == 0 && is_hex32(name + 2);
}

/* "fanout.<name>.i-<32 hex>": the fanout group of a bus with a random instance. */
static bool fanout_random(const char *group) {
    if (strncmp(group, "fanout.", 7) != 0)
        return false;
    const char *dot = strrchr(group, '.');
    return dot && dot > group + 6 && strncmp(dot + 1, "i-", 2) == 0 && is_hex32(dot + 3);
}

/* ---- pass state ------------------------------------------------------------------------- */

static void free_pass(eddy__retention *r) {
    for (size_t i = 0; i < r->nst; i++) {
        rstream *st = &r->st[i];
        for (size_t j = 0; j < st->ng; j++) {
            for (size_t k = 0; k < st->g[j].ncons; k++)
                free(st->g[j].cons[k].name);
            free(st->g[j].cons);
            free(st->g[j].name);
        }
        free(st->g);
        free(st->list);
        free(st->subject);
        free(st->key);
    }
    free(r->st);
    r->st = NULL;
    r->nst = 0;
    for (size_t i = 0; i < r->nm; i++) {
        free(r->m[i].group);
        free(r->m[i].instance);
        free(r->m[i].pattern);
    }
    free(r->m);
    r->m = NULL;
    r->nm = 0;
}

static void free_empty(empty_group *v, size_t n) {
    for (size_t i = 0; i < n; i++) {
        free(v[i].key);
        free(v[i].group);
    }
    free(v);
}

static void end_pass(eddy__retention *r, long long now_ms) {
    free_pass(r);
    r->ph = P_IDLE;
    r->renew = false;
    r->due = now_ms + r->s->retention_interval_ms;
}

/* A pass that ran to its end as the holder. */
static void finish_pass(eddy__retention *r, long long now_ms) {
    atomic_fetch_add(&r->counters->passes, 1);
    end_pass(r, now_ms);
}

static eddy_status fail_pass(eddy__retention *r, long long now_ms, const char *what,
                             const redisReply *rep) {
    eddy__log(&r->s->log, EDDY_LOG_WARN, "retention: %s: %s; the pass ends, nothing more trimmed",
              what,
              rep && rep->type == REDIS_REPLY_ERROR ? rep->str
              : rep                                 ? "unexpected reply"
                                                    : "out of memory");
    end_pass(r, now_ms);
    return EDDY_OK;
}

static char *key_of(const char *ns, const char *suffix) {
    size_t n = strlen(ns) + strlen(suffix) + 4;
    char *k = malloc(n);
    if (k)
        snprintf(k, n, "{%s}:%s", ns, suffix);
    return k;
}

eddy__retention *eddy__retention_new(const eddy__settings *s, eddy__retention_counters *counters,
                                     const char *holder, long long now_ms) {
    eddy__retention *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->s = s;
    r->counters = counters;
    r->holder = strdup(holder);
    r->lease_key = key_of(s->ns, "retention");
    r->subjects_key = eddy__key_subjects(s->ns);
    r->registry_key = key_of(s->ns, "subs");
    if (!r->holder || !r->lease_key || !r->subjects_key || !r->registry_key) {
        eddy__retention_free(r);
        return NULL;
    }
    r->due = s->retention_interval_ms ? now_ms + s->retention_interval_ms : LLONG_MAX;
    return r;
}

void eddy__retention_free(eddy__retention *r) {
    if (!r)
        return;
    free_pass(r);
    free_empty(r->empty, r->nempty);
    free(r->holder);
    free(r->lease_key);
    free(r->subjects_key);
    free(r->registry_key);
    free(r);
}

long long eddy__retention_due(const eddy__retention *r) {
    if (!r->s->retention_interval_ms)
        return LLONG_MAX;
    return r->ph == P_IDLE ? r->due : 0; /* a pass in progress goes on at once */
}

void eddy__retention_reset(eddy__retention *r, long long now_ms) {
    if (r->ph != P_IDLE)
        end_pass(r, now_ms);
}

/* ---- planning ----------------------------------------------------------------------------- */

/* A command that could not be added marks the round failed (r may be NULL: the caller checks). */
static eddy__cmd *add_to(eddy__retention *r, eddy__cmdlist *out, int tag, long arg,
                         const char *verb) {
    eddy__cmd *cmd = eddy__cmdlist_add(out, tag, arg);
    if (cmd)
        eddy__cmd_str(cmd, verb);
    else if (r)
        r->plan_nomem = true;
    return cmd;
}

#define ARG(stream, group) (((long)(stream) << 24) | (long)(group))
#define ARG_STREAM(a) ((size_t)((a) >> 24))
#define ARG_GROUP(a) ((size_t)((a)&0xffffff))

static unsigned long long lease_px(const eddy__settings *s) {
    unsigned long long px = 3ull * s->retention_interval_ms;
    return px < 1000 ? 1000 : px;
}

static void plan_lease(eddy__retention *r, eddy__cmdlist *out) {
    eddy__cmd *c = add_to(r, out, T_SET, 0, "SET");
    if (c) {
        eddy__cmd_str(c, r->lease_key);
        eddy__cmd_str(c, r->holder);
        eddy__cmd_str(c, "NX");
        eddy__cmd_str(c, "PX");
        eddy__cmd_u64(c, lease_px(r->s));
    }
    if ((c = add_to(r, out, T_GET, 0, "GET")))
        eddy__cmd_str(c, r->lease_key);
}

static void plan_list(eddy__retention *r, eddy__cmdlist *out) {
    eddy__cmd *c;
    if (r->renew && (c = add_to(r, out, T_PEXPIRE, 0, "PEXPIRE"))) {
        eddy__cmd_str(c, r->lease_key);
        eddy__cmd_u64(c, lease_px(r->s));
    }
    if ((c = add_to(r, out, T_SMEMBERS, 0, "SMEMBERS")))
        eddy__cmd_str(c, r->subjects_key);
}

static void plan_groups(eddy__retention *r, eddy__cmdlist *out) {
    add_to(r, out, T_TIME, 0, "TIME");
    for (size_t i = 0; i < r->nst; i++) {
        eddy__cmd *c = add_to(r, out, T_GROUPS, ARG(i, 0), "XINFO");
        if (c) {
            eddy__cmd_str(c, "GROUPS");
            eddy__cmd_str(c, r->st[i].key);
        }
        if (r->s->retention_max_len && (c = add_to(r, out, T_XLEN, ARG(i, 0), "XLEN")))
            eddy__cmd_str(c, r->st[i].key);
    }
}

/* "<verb> [<sub>] <stream> <group>" */
static eddy__cmd *group_cmd(eddy__retention *r, eddy__cmdlist *out, int tag, size_t i, size_t j,
                            const char *verb, const char *sub, const rstream *st) {
    eddy__cmd *c = add_to(r, out, tag, ARG(i, j), verb);
    if (c) {
        if (sub)
            eddy__cmd_str(c, sub);
        eddy__cmd_str(c, st->key);
        eddy__cmd_str(c, st->g[j].name);
    }
    return c;
}

/* XRANGE <stream> - <end> COUNT <count>; end "+" when end_id is NULL. */
static void list_cmd(eddy__retention *r, eddy__cmdlist *out, int tag, size_t i, const rstream *st,
                     const sid *end_id, unsigned long long count) {
    eddy__cmd *c = add_to(r, out, tag, ARG(i, 0), "XRANGE");
    if (c) {
        eddy__cmd_str(c, st->key);
        eddy__cmd_str(c, "-");
        if (end_id)
            cmd_id(c, *end_id);
        else
            eddy__cmd_str(c, "+");
        eddy__cmd_str(c, "COUNT");
        eddy__cmd_u64(c, count);
    }
}

static bool consumers_wanted(const eddy__retention *r, const rgroup *g) {
    return g->consumers > 0 && (g->fanout_random || r->s->consumer_idle_ms);
}

static void plan_detail(eddy__retention *r, eddy__cmdlist *out) {
    for (size_t i = 0; i < r->nst; i++) {
        rstream *st = &r->st[i];
        if (st->skip)
            continue;
        for (size_t j = 0; j < st->ng; j++) {
            rgroup *g = &st->g[j];
            if (g->pending > 0)
                group_cmd(r, out, T_PSUM, i, j, "XPENDING", NULL, st);
            if (consumers_wanted(r, g))
                group_cmd(r, out, T_CONSUMERS, i, j, "XINFO", "CONSUMERS", st);
        }
        unsigned long long max_len = r->s->retention_max_len;
        if (max_len && st->len > 0 && (unsigned long long)st->len > max_len) {
            unsigned long long excess = (unsigned long long)st->len - max_len;
            list_cmd(r, out, T_LIST_LEN, i, st, NULL, excess < LIST_MAX ? excess : LIST_MAX);
        }
        unsigned long long age = r->s->retention_max_age_ms;
        if (age && (unsigned long long)r->time3_ms > age) {
            sid last = id_prev((sid){(unsigned long long)r->time3_ms - age, 0});
            list_cmd(r, out, T_LIST_AGE, i, st, &last, LIST_MAX);
        }
    }
    /* Last of the round: whatever registered before this read is seen (see the races). */
    eddy__cmd *c = add_to(r, out, T_REGISTRY, 0, "ZRANGEBYSCORE");
    if (c) {
        eddy__cmd_str(c, r->registry_key);
        eddy__cmd_fmt(c, "%lld", r->time4_ms); /* the caller's now, set by plan */
        eddy__cmd_str(c, "+inf");
    }
    add_to(r, out, T_TIME, 1, "TIME");
}

static void plan_act(eddy__retention *r, eddy__cmdlist *out) {
    for (size_t i = 0; i < r->nst; i++) {
        rstream *st = &r->st[i];
        if (st->skip)
            continue;
        for (size_t j = 0; j < st->ng; j++) {
            rgroup *g = &st->g[j];
            eddy__cmd *c;
            if (g->destroy) {
                group_cmd(r, out, T_DESTROY, i, j, "XGROUP", "DESTROY", st);
                continue;
            }
            for (size_t k = 0; k < g->ncons; k++)
                if (g->cons[k].remove &&
                    (c = group_cmd(r, out, T_DELCONSUMER, i, j, "XGROUP", "DELCONSUMER", st)))
                    eddy__cmd_str(c, g->cons[k].name);
            if (st->trim && st->nlist && g->pending > 0 && id_cmp(g->min_pending, st->cut) < 0 &&
                (c = group_cmd(r, out, T_PRANGE, i, j, "XPENDING", NULL, st))) {
                cmd_id(c, st->list[0]);
                cmd_id(c, id_prev(st->cut));
                eddy__cmd_u64(c, st->nlist);
            }
        }
        eddy__cmd *c;
        if (st->trim && (c = add_to(r, out, T_XTRIM, ARG(i, 0), "XTRIM"))) {
            eddy__cmd_str(c, st->key);
            eddy__cmd_str(c, "MINID");
            cmd_id(c, st->cut);
        }
    }
}

eddy_status eddy__retention_plan(eddy__retention *r, long long now_ms, eddy__cmdlist *out) {
    if (!r->s->retention_interval_ms)
        return EDDY_OK;
    if (r->ph == P_IDLE) {
        if (now_ms < r->due)
            return EDDY_OK;
        r->ph = P_LEASE;
    }
    size_t first = out->n;
    r->plan_nomem = false;
    switch (r->ph) {
    case P_LEASE:
        plan_lease(r, out);
        break;
    case P_LIST:
        plan_list(r, out);
        break;
    case P_GROUPS:
        plan_groups(r, out);
        break;
    case P_DETAIL:
        r->time4_ms = now_ms;
        plan_detail(r, out);
        break;
    case P_ACT:
        plan_act(r, out);
        break;
    default:
        break;
    }
    eddy_status st = r->plan_nomem ? EDDY_ERR_NOMEM : eddy__cmdlist_status_from(out, first);
    if (st != EDDY_OK) {
        for (size_t i = first; i < out->n; i++)
            eddy__cmd_reset(&out->cmds[i]);
        out->n = first;
        fail_pass(r, now_ms, "planning a round", NULL);
        return st;
    }
    if (out->n == first) /* P_ACT with nothing to do */
        finish_pass(r, now_ms);
    return EDDY_OK;
}

/* ---- feeding ------------------------------------------------------------------------------ */

/* One slot per element of a list reply (at least one); sets *nomem when there is no memory. */
static void *slots(const redisReply *rep, size_t size, bool *nomem) {
    void *v = calloc(rep->elements ? rep->elements : 1, size);
    if (!v)
        *nomem = true;
    return v;
}

static bool feed_time(const redisReply *rep, long long *ms) {
    if (!is_list(rep) || rep->elements != 2 || !eddy__reply_is_str(rep->element[0]) ||
        !eddy__reply_is_str(rep->element[1]))
        return false;
    *ms = strtoll(rep->element[0]->str, NULL, 10) * 1000 +
          strtoll(rep->element[1]->str, NULL, 10) / 1000;
    return true;
}

static bool feed_subjects(eddy__retention *r, const redisReply *rep) {
    if (!is_list(rep))
        return false;
    r->st = calloc(rep->elements ? rep->elements : 1, sizeof(*r->st));
    if (!r->st)
        return false;
    for (size_t i = 0; i < rep->elements; i++) {
        const redisReply *e = rep->element[i];
        if (!eddy__reply_is_str(e) || strlen(e->str) != e->len)
            continue;
        rstream *st = &r->st[r->nst++];
        st->subject = strdup(e->str);
        st->key = eddy__key_stream(r->s->ns, e->str);
        if (!st->subject || !st->key)
            return false;
    }
    return true;
}

/* false: out of memory or a reply that is not XINFO GROUPS's (the stream is then skipped). */
static bool feed_groups(rstream *st, const redisReply *rep, bool *nomem) {
    if (rep->type == REDIS_REPLY_ERROR || !is_list(rep)) {
        st->skip = true; /* "no such key", or a key of another type: nothing to trim */
        return true;
    }
    if (!(st->g = slots(rep, sizeof(*st->g), nomem)))
        return false;
    for (size_t i = 0; i < rep->elements; i++) {
        const redisReply *rec = rep->element[i];
        const redisReply *name = eddy__reply_field(rec, "name"),
                         *last = eddy__reply_field(rec, "last-delivered-id");
        rgroup *g = &st->g[st->ng];
        if (!eddy__reply_is_str(name) || !eddy__reply_is_str(last) ||
            !field_int(rec, "pending", &g->pending) ||
            !field_int(rec, "consumers", &g->consumers) ||
            !parse_id(last->str, last->len, &g->last)) {
            st->skip = true; /* a group we cannot read: its need is unknown */
            return true;
        }
        if (!(g->name = strdup(name->str))) {
            *nomem = true;
            return false;
        }
        g->fanout_random = fanout_random(g->name);
        st->ng++;
    }
    return true;
}

static bool feed_psum(rgroup *g, const redisReply *rep) {
    if (!is_list(rep) || rep->elements < 2)
        return false;
    if (rep->element[0]->type == REDIS_REPLY_INTEGER && rep->element[0]->integer == 0) {
        g->pending = 0; /* acknowledged since round 3 */
        return true;
    }
    const redisReply *min = rep->element[1];
    return eddy__reply_is_str(min) && (g->has_min = parse_id(min->str, min->len, &g->min_pending));
}

static bool feed_consumers(rgroup *g, const redisReply *rep, bool *nomem) {
    if (!is_list(rep))
        return false;
    if (!(g->cons = slots(rep, sizeof(*g->cons), nomem)))
        return false;
    for (size_t i = 0; i < rep->elements; i++) {
        const redisReply *rec = rep->element[i], *name = eddy__reply_field(rec, "name");
        rcons *c = &g->cons[g->ncons];
        if (!eddy__reply_is_str(name) || !field_int(rec, "pending", &c->pending) ||
            !field_int(rec, "idle", &c->idle))
            return false;
        if (!(c->name = strdup(name->str))) {
            *nomem = true;
            return false;
        }
        g->ncons++;
    }
    g->cons_known = true;
    return true;
}

static bool feed_list(rstream *st, const redisReply *rep, bool capped_at, bool *nomem) {
    if (!is_list(rep))
        return false;
    if (rep->elements <= st->nlist)
        return true; /* the other limit's list is longer: it decides */
    sid *v = malloc(rep->elements * sizeof(*v));
    if (!v) {
        *nomem = true;
        return false;
    }
    for (size_t i = 0; i < rep->elements; i++) {
        const redisReply *e = rep->element[i];
        if (!is_list(e) || e->elements < 1 || !eddy__reply_is_str(e->element[0]) ||
            !parse_id(e->element[0]->str, e->element[0]->len, &v[i])) {
            free(v);
            return false;
        }
    }
    free(st->list);
    st->list = v;
    st->nlist = rep->elements;
    st->list_capped = capped_at;
    return true;
}

static char *tab_field(const char *s, size_t len, int n, size_t *flen) {
    const char *p = s, *end = s + len;
    for (int i = 0; i < n; i++) {
        p = memchr(p, '\t', (size_t)(end - p));
        if (!p)
            return NULL;
        p++;
    }
    const char *q = n == 4 ? end : memchr(p, '\t', (size_t)(end - p));
    if (!q)
        return NULL;
    *flen = (size_t)(q - p);
    return (char *)p;
}

static bool feed_registry(eddy__retention *r, const redisReply *rep, bool *nomem) {
    if (!is_list(rep))
        return false;
    if (!(r->m = slots(rep, sizeof(*r->m), nomem)))
        return false;
    for (size_t i = 0; i < rep->elements; i++) {
        const redisReply *e = rep->element[i];
        if (!eddy__reply_is_str(e))
            continue;
        size_t gl = 0, il = 0, pl = 0;
        const char *g = tab_field(e->str, e->len, 1, &gl), *in = tab_field(e->str, e->len, 2, &il),
                   *p = tab_field(e->str, e->len, 4, &pl);
        if (!g || !in || !p)
            continue; /* not eddy's member */
        if (e->len > 1 && e->str[0] == 'g' && e->str[1] == '\t')
            continue; /* a gather twin: its groups are on the gather streams (gather.h) */
        member *m = &r->m[r->nm];
        m->group = strndup(g, gl);
        m->instance = strndup(in, il);
        m->pattern = strndup(p, pl);
        r->nm++;
        if (!m->group || !m->instance || !m->pattern) {
            *nomem = true;
            return false;
        }
    }
    return true;
}

/* How long a fanout group or a consumer must have been idle before it goes (0: never). */
static long long group_limit(const eddy__settings *s, const rgroup *g) {
    return g->fanout_random ? (long long)s->lease_ms : (long long)s->consumer_idle_ms;
}

/* consumer_idle_ms 0 keeps every consumer, a random instance's too. */
static long long consumer_limit(const eddy__settings *s, const char *name) {
    if (!s->consumer_idle_ms)
        return 0;
    return random_instance(name) ? (long long)s->lease_ms : (long long)s->consumer_idle_ms;
}

/* g on st has no consumer and no lease: since when (server ms) the passes saw it so, recorded
 * into next (false on OOM: then it is not removed this time). */
static bool empty_since(const eddy__retention *r, const rstream *st, const rgroup *g,
                        empty_group *next, size_t *nnext, long long *since) {
    *since = r->time4_ms;
    for (size_t i = 0; i < r->nempty; i++)
        if (strcmp(r->empty[i].key, st->key) == 0 && strcmp(r->empty[i].group, g->name) == 0)
            *since = r->empty[i].since;
    empty_group *e = &next[*nnext];
    if (!(e->key = strdup(st->key)) || !(e->group = strdup(g->name))) {
        free(e->key);
        *since = r->time4_ms;
        return false;
    }
    e->since = *since;
    (*nnext)++;
    return true;
}

/* Whether a fanout group nobody holds (no live lease) is dead: idle past its limit. */
static bool fanout_dead(const eddy__retention *r, const rstream *st, const rgroup *g,
                        empty_group *next, size_t *nnext) {
    long long limit = group_limit(r->s, g);
    if (strncmp(g->name, "fanout.", 7) != 0 || limit <= 0)
        return false;
    if (g->consumers == 0) {
        long long since;
        return next && empty_since(r, st, g, next, nnext, &since) && r->time4_ms - since > limit;
    }
    if (!g->cons_known || g->ncons == 0)
        return false;
    for (size_t k = 0; k < g->ncons; k++)
        if (g->cons[k].idle <= limit)
            return false;
    return true;
}

/* After round 4: what round 5 does. */
static void decide(eddy__retention *r) {
    const eddy__settings *s = r->s;
    sid grace_cut = {r->time4_ms > (long long)s->retention_grace_ms
                         ? (unsigned long long)(r->time4_ms - s->retention_grace_ms)
                         : 0,
                     0};
    size_t ngroups = 0;
    for (size_t i = 0; i < r->nst; i++)
        ngroups += r->st[i].ng;
    empty_group *next = calloc(ngroups ? ngroups : 1, sizeof(*next));
    size_t nnext = 0;
    for (size_t i = 0; i < r->nst; i++) {
        rstream *st = &r->st[i];
        if (st->skip)
            continue;
        for (size_t m = 0; m < r->nm && !st->hold; m++) {
            if (!eddy__pattern_match(r->m[m].pattern, st->subject))
                continue;
            bool found = false;
            for (size_t j = 0; j < st->ng && !found; j++)
                found = strcmp(st->g[j].name, r->m[m].group) == 0;
            st->hold = !found;
        }
        bool known = true;
        sid need = grace_cut;
        for (size_t j = 0; j < st->ng; j++) {
            rgroup *g = &st->g[j];
            bool live = false;
            for (size_t m = 0; m < r->nm && !live; m++)
                live = strcmp(r->m[m].group, g->name) == 0;
            if (!live)
                g->destroy = fanout_dead(r, st, g, next, &nnext);
            if (g->destroy)
                continue;
            if (g->pending > 0 && !g->has_min)
                known = false;
            if (g->pending > 0 && id_cmp(g->min_pending, need) < 0)
                need = g->min_pending;
            if (id_cmp(id_next(g->last), need) < 0)
                need = id_next(g->last);
            for (size_t k = 0; k < g->ncons; k++) {
                rcons *c = &g->cons[k];
                long long limit = consumer_limit(s, c->name);
                bool mine = false;
                for (size_t m = 0; m < r->nm && !mine; m++)
                    mine = strcmp(r->m[m].instance, c->name) == 0;
                c->remove = limit > 0 && !mine && c->pending == 0 && c->idle > limit;
            }
        }
        if (!known) { /* cannot happen with replies that parsed; kept as a guard */
            st->skip = true;
            continue;
        }
        bool safe = !st->hold && (need.ms || need.seq);
        st->cut = safe ? need : (sid){0, 0};
        st->trim = safe;
        if (st->nlist) {
            sid lim = id_next(st->list[st->nlist - 1]);
            unsigned long long age = s->retention_max_age_ms;
            if (!st->list_capped && age && (unsigned long long)r->time3_ms > age) {
                sid age_cut = {(unsigned long long)r->time3_ms - age, 0};
                if (id_cmp(age_cut, lim) > 0)
                    lim = age_cut; /* nothing lies between the last listed and the age cut */
            }
            if (!st->trim || id_cmp(lim, st->cut) > 0)
                st->cut = lim;
            st->trim = true;
            /* Only listed entries below the cut are dropped. */
            while (st->nlist && id_cmp(st->list[st->nlist - 1], st->cut) >= 0)
                st->nlist--;
            for (size_t j = 0; j < st->ng; j++)
                for (size_t k = 0; k < st->nlist; k++)
                    if (!st->g[j].destroy && id_cmp(st->list[k], st->g[j].last) > 0)
                        st->g[j].unread_dropped++;
        }
    }
    if (next) { /* out of memory: the old list stays, and what it lacks waits a pass more */
        free_empty(r->empty, r->nempty);
        r->empty = next;
        r->nempty = nnext;
    }
}

static void report(eddy__retention *r) {
    for (size_t i = 0; i < r->nst; i++) {
        rstream *st = &r->st[i];
        for (size_t j = 0; !st->skip && j < st->ng; j++) {
            rgroup *g = &st->g[j];
            unsigned long long n = g->unread_dropped + g->pending_dropped;
            if (g->destroy || n == 0)
                continue;
            atomic_fetch_add(&r->counters->dropped, n);
            eddy__log(&r->s->log, EDDY_LOG_WARN,
                      "retention: '%s': dropped %llu entries that group '%s' had not read and "
                      "acknowledged (%llu unread, %llu pending)",
                      st->subject, n, g->name, g->unread_dropped, g->pending_dropped);
        }
    }
}

static eddy_status feed_act(eddy__retention *r, const eddy__cmdlist *cmds, redisReply **replies,
                            size_t n) {
    for (size_t i = 0; i < n; i++) {
        const redisReply *rep = replies[i];
        rstream *st = &r->st[ARG_STREAM(cmds->args[i])];
        rgroup *g = &st->g[ARG_GROUP(cmds->args[i])];
        switch (cmds->tags[i]) {
        case T_DESTROY:
            if (rep->type == REDIS_REPLY_INTEGER && rep->integer > 0) {
                atomic_fetch_add(&r->counters->groups_removed, 1);
                eddy__log(&r->s->log, EDDY_LOG_INFO,
                          "retention: '%s': removed group '%s' of a process that ended",
                          st->subject, g->name);
            }
            break;
        case T_DELCONSUMER:
            if (rep->type == REDIS_REPLY_INTEGER) {
                atomic_fetch_add(&r->counters->consumers_removed, 1);
                if (rep->integer > 0)
                    eddy__log(&r->s->log, EDDY_LOG_WARN,
                              "retention: '%s': a consumer of group '%s' removed as idle had "
                              "read %lld entries meanwhile",
                              st->subject, g->name, rep->integer);
            }
            break;
        case T_PRANGE:
            if (is_list(rep))
                g->pending_dropped = rep->elements;
            break;
        case T_XTRIM:
            if (rep->type == REDIS_REPLY_INTEGER && rep->integer > 0)
                atomic_fetch_add(&r->counters->trimmed, (unsigned long long)rep->integer);
            else if (rep->type == REDIS_REPLY_ERROR)
                eddy__log(&r->s->log, EDDY_LOG_WARN, "retention: '%s': XTRIM failed: %s",
                          st->subject, rep->str);
            break;
        default:
            break;
        }
    }
    report(r);
    return EDDY_OK;
}

eddy_status eddy__retention_feed(eddy__retention *r, long long now_ms, const eddy__cmdlist *cmds,
                                 redisReply **replies, size_t n) {
    if (n != cmds->n)
        return EDDY_ERR_INVALID_ARGUMENT;
    for (size_t i = 0; i < n; i++)
        if (!replies[i]) {
            end_pass(r, now_ms);
            return EDDY_ERR_IO;
        }
    bool nomem = false;
    switch (r->ph) {
    case P_LEASE: {
        const redisReply *set = replies[0], *get = n > 1 ? replies[1] : NULL;
        if (eddy__reply_is_str(set) && strcmp(set->str, "OK") == 0) {
            r->ph = P_LIST;
        } else if (get && eddy__reply_is_str(get) && strcmp(get->str, r->holder) == 0) {
            r->renew = true;
            r->ph = P_LIST;
        } else if (set->type == REDIS_REPLY_ERROR) {
            return fail_pass(r, now_ms, "taking the retention lease", set);
        } else {
            end_pass(r, now_ms); /* another process holds it */
        }
        return EDDY_OK;
    }
    case P_LIST:
        for (size_t i = 0; i < n; i++)
            if (cmds->tags[i] == T_SMEMBERS && !feed_subjects(r, replies[i]))
                return fail_pass(r, now_ms, "listing the subjects",
                                 is_list(replies[i]) ? NULL : replies[i]);
        if (r->nst == 0)
            finish_pass(r, now_ms);
        else
            r->ph = P_GROUPS;
        return EDDY_OK;
    case P_GROUPS:
        for (size_t i = 0; i < n; i++) {
            const redisReply *rep = replies[i];
            rstream *st = &r->st[ARG_STREAM(cmds->args[i])];
            if (cmds->tags[i] == T_TIME && !feed_time(rep, &r->time3_ms))
                return fail_pass(r, now_ms, "TIME", rep);
            if (cmds->tags[i] == T_GROUPS && !feed_groups(st, rep, &nomem))
                return fail_pass(r, now_ms, "XINFO GROUPS", nomem ? NULL : rep);
            if (cmds->tags[i] == T_XLEN)
                st->len = rep->type == REDIS_REPLY_INTEGER ? rep->integer : 0;
        }
        r->ph = P_DETAIL;
        return EDDY_OK;
    case P_DETAIL:
        for (size_t i = 0; i < n; i++) {
            const redisReply *rep = replies[i];
            rstream *st = &r->st[ARG_STREAM(cmds->args[i])];
            rgroup *g = st->ng ? &st->g[ARG_GROUP(cmds->args[i])] : NULL;
            bool ok = true;
            switch (cmds->tags[i]) {
            case T_PSUM:
                if (!(ok = feed_psum(g, rep)) && rep->type == REDIS_REPLY_ERROR)
                    ok = true, st->skip = true; /* the group went meanwhile: next pass */
                break;
            case T_CONSUMERS:
                if (!(ok = feed_consumers(g, rep, &nomem)) && !nomem)
                    ok = true, g->cons_known = false; /* no clean-up for this group */
                break;
            case T_LIST_LEN:
            case T_LIST_AGE:
                if (!(ok = feed_list(st, rep, rep->elements >= LIST_MAX, &nomem)) && !nomem)
                    ok = true, st->skip = true;
                break;
            case T_REGISTRY:
                ok = feed_registry(r, rep, &nomem);
                break;
            case T_TIME:
                ok = feed_time(rep, &r->time4_ms);
                break;
            default:
                break;
            }
            if (!ok)
                return fail_pass(r, now_ms, "reading the groups", nomem ? NULL : rep);
        }
        decide(r);
        r->ph = P_ACT;
        return EDDY_OK;
    case P_ACT:
        feed_act(r, cmds, replies, n);
        finish_pass(r, now_ms);
        return EDDY_OK;
    default:
        return EDDY_OK;
    }
}

/* ---- stop clean-up ------------------------------------------------------------------------ */

static bool stop_wanted(const eddy__settings *s, const eddy__sub *sub) {
    return s->instance_random && sub->shape == EDDY_FANOUT;
}

eddy_status eddy__retention_stop_list(const eddy__settings *s, eddy__sub *const *subs, size_t n,
                                      eddy__cmdlist *out, bool *need) {
    *need = false;
    for (size_t i = 0; i < n && !*need; i++)
        *need = stop_wanted(s, subs[i]);
    if (!*need)
        return EDDY_OK;
    char *key = eddy__key_subjects(s->ns);
    eddy__cmd *c = key ? add_to(NULL, out, 0, 0, "SMEMBERS") : NULL;
    if (c)
        eddy__cmd_str(c, key);
    free(key);
    return c ? eddy__cmdlist_status(out) : EDDY_ERR_NOMEM;
}

eddy_status eddy__retention_stop_destroy(const eddy__settings *s, eddy__sub *const *subs, size_t n,
                                         const redisReply *subjects, eddy__cmdlist *out) {
    if (!is_list(subjects))
        return subjects && subjects->type == REDIS_REPLY_ERROR ? EDDY_ERR_IO : EDDY_ERR_PROTOCOL;
    size_t first = out->n;
    for (size_t i = 0; i < subjects->elements; i++) {
        const redisReply *e = subjects->element[i];
        if (!eddy__reply_is_str(e) || strlen(e->str) != e->len)
            continue;
        for (size_t j = 0; j < n; j++) {
            if (!stop_wanted(s, subs[j]) || !eddy__pattern_match(subs[j]->pattern, e->str))
                continue;
            /* A gather twin's group is on the gather stream (gather.h). */
            char *key = eddy__sub_stream_key(s->ns, subs[j], e->str);
            if (!key)
                return EDDY_ERR_NOMEM;
            eddy__cmd *c = add_to(NULL, out, 0, 0, "XGROUP");
            if (!c) {
                free(key);
                return EDDY_ERR_NOMEM;
            }
            eddy__cmd_str(c, "DESTROY");
            eddy__cmd_str(c, key);
            eddy__cmd_str(c, subs[j]->group);
            free(key);
        }
    }
    return eddy__cmdlist_status_from(out, first);
}
