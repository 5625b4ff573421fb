/* SPDX-License-Identifier: BSD-3-Clause */
/* The activation's control loop; see inbox.h.
 *
 * The reply stream is created with an entry that is trimmed away at once (XADD MAXLEN 0), so
 * the key exists, with an expiry, before the first request names it, and reading starts after
 * that entry's id: no reply can slip between creation and the first read. Responders add with
 * NOMKSTREAM, so a reply stream that expired with its process is never created again.
 *
 * Retention (retention.h) runs here too, once registered, in rounds of its own: a plan is either
 * the heartbeat, a retention round, or the blocking read (cut short when a pass is due), never
 * two of them, so no retention command waits behind a blocking read. */
#include "bus/inbox.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus/registry.h"
#include "bus/retention.h"
#include "config/conn_state.h"
#include "error.h"
#include "events/entry.h"
#include "keys.h"
#include "link/redis.h"
#include "timing.h"
#include "util/reply.h"

enum { I_OPEN = 1, I_EXPIRE, I_RENEW, I_PEERS, I_READ, I_OTHER };

struct eddy__inbox {
    const eddy__settings *s;
    eddy__requests *reqs;
    char *key;
    bool opened;
    bool registered;
    char last_id[48];
    long long next_heartbeat;
    long long retry_at;
    eddy__retention *ret;
    bool ret_round; /* the plan out is a retention round */
    /* Responders of other buses that overlap this bus's (registry.h): the subscriptions the
     * last heartbeat looked at them for, and the pairs already warned about ("name\tmember"). */
    eddy__sub **peer_subs;
    size_t npeer_subs;
    char **warned;
    size_t nwarned, warned_cap;
};

eddy__inbox *eddy__inbox_new(const eddy__settings *s, eddy__requests *reqs,
                             eddy__retention_counters *counters, long long now_ms) {
    eddy__inbox *ib = calloc(1, sizeof(*ib));
    if (!ib)
        return NULL;
    ib->s = s;
    ib->reqs = reqs;
    char id[33];
    eddy__random_hex(id);
    if (!(ib->key = eddy__key_inbox(s->ns, id)) ||
        !(ib->ret = eddy__retention_new(s, counters, ib->key, now_ms))) {
        free(ib->key);
        free(ib);
        return NULL;
    }
    return ib;
}

void eddy__inbox_free(eddy__inbox *ib) {
    if (!ib)
        return;
    free(ib->key);
    eddy__retention_free(ib->ret);
    free(ib->peer_subs);
    for (size_t i = 0; i < ib->nwarned; i++)
        free(ib->warned[i]);
    free(ib->warned);
    free(ib);
}

/* Once per pair: a warning naming both groups, and the responder's count. On OOM the pair is
 * warned about again at the next heartbeat rather than never. */
static void overlap_found(eddy__sub *sub, const char *group, const char *instance,
                          const char *member, void *user) {
    eddy__inbox *ib = user;
    size_t len = strlen(sub->name) + 1 + strlen(member) + 1;
    char *key = malloc(len);
    if (!key)
        return;
    snprintf(key, len, "%s\t%s", sub->name, member);
    for (size_t i = 0; i < ib->nwarned; i++)
        if (strcmp(ib->warned[i], key) == 0) {
            free(key);
            return;
        }
    if (ib->nwarned == ib->warned_cap) {
        size_t cap = ib->warned_cap ? ib->warned_cap * 2 : 8;
        char **v = realloc(ib->warned, cap * sizeof(*v));
        if (!v) {
            free(key);
            return;
        }
        ib->warned = v;
        ib->warned_cap = cap;
    }
    ib->warned[ib->nwarned++] = key;
    atomic_fetch_add(&sub->stats.overlapping, 1);
    eddy__log(&ib->s->log, EDDY_LOG_WARN,
              "responder '%s' (group '%s', pattern '%s') and a responder of group '%s' in bus "
              "'%s' can answer the same subjects: each request reaches both groups, the caller "
              "takes the first reply and the other's count as unclaimed",
              sub->name, sub->group, sub->pattern, group, instance);
}

/* Keeps the responders among subs for the peer check of this heartbeat; false when there are
 * none (or no memory): no check then. */
static bool keep_peer_subs(eddy__inbox *ib, eddy__sub *const *subs, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += subs[i]->responder != NULL;
    ib->npeer_subs = 0;
    if (k == 0)
        return false;
    eddy__sub **v = realloc(ib->peer_subs, k * sizeof(*v));
    if (!v)
        return false;
    ib->peer_subs = v;
    for (size_t i = 0; i < n; i++)
        if (subs[i]->responder)
            v[ib->npeer_subs++] = subs[i];
    return true;
}

const char *eddy__inbox_key(const eddy__inbox *ib) { return ib->key; }
bool eddy__inbox_ready(const eddy__inbox *ib) { return ib->opened && ib->registered; }

void eddy__inbox_reset(eddy__inbox *ib, long long now_ms) {
    /* The reply stream is not opened again: replies that arrived while the connection was
     * down are still in it, after last_id. The heartbeat that comes first finds out whether
     * it survived (PEXPIRE answers 0 when the server lost it) and only then opens a new one. */
    ib->registered = false;
    ib->next_heartbeat = 0;
    ib->retry_at = 0;
    ib->ret_round = false;
    eddy__retention_reset(ib->ret, now_ms);
}

void eddy__reply_list_free(eddy__reply_list *l) {
    for (size_t i = 0; i < l->n; i++)
        if (!l->v[i].gather) /* a gather's replies are its list's */
            eddy_event_free(l->v[i].reply);
    free(l->v);
    memset(l, 0, sizeof(*l));
}

static eddy__cmd *add(eddy__plan *p, int tag, const char *verb) {
    eddy__cmd *cmd = eddy__cmdlist_add(&p->cmds, tag, 0);
    if (cmd)
        eddy__cmd_str(cmd, verb);
    return cmd;
}

static void add_expire(eddy__inbox *ib, eddy__plan *p) {
    eddy__cmd *cmd = add(p, I_EXPIRE, "PEXPIRE");
    if (cmd) {
        eddy__cmd_str(cmd, ib->key);
        eddy__cmd_u64(cmd, 3ull * ib->s->lease_ms); /* outlives two missed heartbeats */
    }
}

long long eddy__inbox_next(eddy__inbox *ib, long long now_ms, eddy__sub *const *subs, size_t n,
                           eddy__plan *plan) {
    eddy__plan_reset(plan);
    if (eddy__inbox_plan(ib, now_ms, subs, n, plan) != EDDY_OK) {
        eddy__plan_reset(plan); /* a part of a round is not sent */
        return EDDY__NOMEM_RETRY_MS;
    }
    return plan->cmds.n ? -1 : plan->idle_ms;
}

eddy_status eddy__inbox_plan(eddy__inbox *ib, long long now_ms, eddy__sub *const *subs, size_t n,
                             eddy__plan *p) {
    if (now_ms < ib->retry_at) {
        p->idle_ms = ib->retry_at - now_ms;
        return EDDY_OK;
    }
    eddy__cmd *cmd;
    if (!ib->opened) {
        if (!(cmd = add(p, I_OPEN, "XADD")))
            return EDDY_ERR_NOMEM;
        eddy__cmd_str(cmd, ib->key);
        eddy__cmd_str(cmd, "MAXLEN");
        eddy__cmd_str(cmd, "0");
        eddy__cmd_str(cmd, "*");
        eddy__cmd_str(cmd, "_open");
        eddy__cmd_str(cmd, "1");
        add_expire(ib, p);
        return eddy__cmdlist_status(&p->cmds);
    }
    if (now_ms >= ib->next_heartbeat) {
        eddy_status st = eddy__registry_renew(ib->s->ns, subs, n, now_ms + ib->s->lease_ms, now_ms,
                                              &p->cmds, I_RENEW);
        if (st != EDDY_OK)
            return st;
        add_expire(ib, p);
        if (keep_peer_subs(ib, subs, n) &&
            (st = eddy__registry_query(ib->s->ns, now_ms, &p->cmds, I_PEERS)) != EDDY_OK)
            return st;
        return eddy__cmdlist_status(&p->cmds);
    }
    if (ib->registered && now_ms >= eddy__retention_due(ib->ret)) {
        eddy_status st = eddy__retention_plan(ib->ret, now_ms, &p->cmds);
        if (st != EDDY_OK)
            return st;
        if (p->cmds.n) {
            ib->ret_round = true;
            return EDDY_OK;
        }
    }
    long long wait = ib->next_heartbeat - now_ms;
    if (ib->registered && eddy__retention_due(ib->ret) - now_ms < wait)
        wait = eddy__retention_due(ib->ret) - now_ms;
    if (wait > ib->s->block_ms)
        wait = ib->s->block_ms;
    if (wait < 1)
        wait = 1;
    if (!(cmd = add(p, I_READ, "XREAD")))
        return EDDY_ERR_NOMEM;
    eddy__cmd_str(cmd, "COUNT");
    eddy__cmd_str(cmd, "256");
    eddy__cmd_str(cmd, "BLOCK");
    eddy__cmd_u64(cmd, (unsigned long long)wait);
    eddy__cmd_str(cmd, "STREAMS");
    eddy__cmd_str(cmd, ib->key);
    eddy__cmd_str(cmd, ib->last_id);
    p->block_ms = wait;
    return eddy__cmdlist_status(&p->cmds);
}

static void retry_later(eddy__inbox *ib, long long now_ms, const char *what, const redisReply *r) {
    eddy__log(&ib->s->log, EDDY_LOG_WARN, "reply stream: %s failed: %s", what,
              r && r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
    ib->retry_at = now_ms + ib->s->reconnect_max_ms;
}

static void feed_read(eddy__inbox *ib, long long now_ms, const redisReply *r,
                      eddy__reply_list *out) {
    if (r->type == REDIS_REPLY_NIL)
        return;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 1 ||
        r->element[0]->type != REDIS_REPLY_ARRAY || r->element[0]->elements != 2 ||
        eddy__reply_entries(r->element[0]->element[1]) != EDDY_OK) {
        retry_later(ib, now_ms, "XREAD", r);
        return;
    }
    const redisReply *entries = r->element[0]->element[1];
    for (size_t i = 0; i < entries->elements; i++) {
        eddy__entry_view v = eddy__reply_entry(entries, i);
        /* Room for this reply's outcome first: a matched request must be completed. Without
         * it, stop here; the entry is read again after last_id next time. */
        if (out->n == out->cap) {
            size_t cap = out->cap ? out->cap * 2 : 16;
            eddy__reply_done *nv = realloc(out->v, cap * sizeof(*nv));
            if (!nv)
                return;
            out->v = nv;
            out->cap = cap;
        }
        size_t nfv = v.fields ? v.fields->elements : 0;
        const char **fv = malloc((nfv ? nfv : 1) * sizeof(*fv));
        size_t *fvlen = malloc((nfv ? nfv : 1) * sizeof(*fvlen));
        if (!fv || !fvlen) {
            free(fv);
            free(fvlen);
            return;
        }
        snprintf(ib->last_id, sizeof(ib->last_id), "%.*s", (int)v.idlen, v.id);
        if (v.fields && eddy__entry_flatten(v.fields, fv, fvlen) &&
            eddy__requests_match(ib->reqs, fv, fvlen, nfv, &out->v[out->n]))
            out->n++;
        free(fv);
        free(fvlen);
    }
}

eddy_status eddy__inbox_feed(eddy__inbox *ib, long long now_ms, const eddy__plan *plan,
                             redisReply **replies, size_t n, eddy__reply_list *out) {
    if (n != plan->cmds.n)
        return EDDY_ERR_INVALID_ARGUMENT;
    for (size_t i = 0; i < n; i++)
        if (!replies[i])
            return EDDY_ERR_IO;
    long long now = now_ms;
    if (ib->ret_round) {
        ib->ret_round = false;
        return eddy__retention_feed(ib->ret, now, &plan->cmds, replies, n);
    }
    for (size_t i = 0; i < n; i++) {
        const redisReply *r = replies[i];
        switch (plan->cmds.tags[i]) {
        case I_OPEN:
            if (r->type == REDIS_REPLY_STRING) {
                snprintf(ib->last_id, sizeof(ib->last_id), "%s", r->str);
                ib->opened = true;
                ib->next_heartbeat = 0; /* register right away */
            } else {
                retry_later(ib, now, "opening the reply stream", r);
            }
            break;
        case I_EXPIRE:
            if (ib->opened && r->type == REDIS_REPLY_INTEGER && r->integer == 0) {
                /* The stream expired (the process stalled past its lease): open a new one.
                 * Requests waiting on the old one end at their deadline. */
                ib->opened = false;
                ib->registered = false;
            }
            break;
        case I_RENEW:
            if (r->type == REDIS_REPLY_ERROR) {
                retry_later(ib, now, "renewing the subscription registry", r);
            } else if (ib->opened) {
                ib->registered = true;
                ib->next_heartbeat = now + ib->s->lease_ms / 3;
            }
            break;
        case I_PEERS:
            eddy__registry_overlaps(r, ib->peer_subs, ib->npeer_subs, ib->s->instance,
                                    overlap_found, ib);
            break;
        case I_READ:
            feed_read(ib, now, r, out);
            break;
        default:
            break;
        }
    }
    return EDDY_OK;
}

eddy_status eddy__inbox_close_cmds(eddy__inbox *ib, eddy__sub *const *subs, size_t n,
                                   eddy__cmdlist *out) {
    eddy_status st = eddy__registry_remove(ib->s->ns, subs, n, out, I_OTHER);
    eddy__cmd *cmd = st == EDDY_OK ? eddy__cmdlist_add(out, I_OTHER, 0) : NULL;
    if (!cmd)
        return EDDY_ERR_NOMEM;
    eddy__cmd_str(cmd, "DEL");
    eddy__cmd_str(cmd, ib->key);
    return eddy__cmdlist_status(out);
}

eddy_status eddy__inbox_register_cmds(eddy__inbox *ib, eddy__sub *sub, long long now_ms,
                                      eddy__cmdlist *out) {
    return eddy__registry_renew(ib->s->ns, &sub, 1, now_ms + ib->s->lease_ms, now_ms, out, I_OTHER);
}

eddy_status eddy__inbox_cmds_status(eddy_status st, const eddy_error *got,
                                    redisReply *const *replies, size_t n, eddy_error *err) {
    if (st != EDDY_OK) {
        if (!got)
            return eddy__fail(err, st, "%s",
                              st == EDDY_ERR_CLOSED ? "the bus was freed" : eddy_status_str(st));
        if (err)
            *err = *got;
        return st;
    }
    for (size_t i = 0; i < n && st == EDDY_OK; i++)
        st = eddy__reply_status(replies[i], "subscription registry", err);
    return st;
}

eddy_status eddy__inbox_late(const eddy_error *last, eddy_error *err) {
    static const char what[] = "the backend could not be reached to open the reply stream";
    eddy_status st = last && eddy__conn_refused(last->status) ? last->status : EDDY_ERR_IO;
    if (last && last->status != EDDY_OK && last->detail[0])
        return eddy__fail(err, st, "%s: %s", what, last->detail);
    return eddy__fail(err, st, "%s", what);
}
