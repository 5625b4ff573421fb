/* SPDX-License-Identifier: BSD-3-Clause */
/* Publishing; see publisher.h. The subject set only grows, so a subject known to be in it
 * never needs another SADD: the cache saves a command on every later publish. It is bounded;
 * past the bound SADD is simply sent every time.
 *
 * With publish_dedup_ms a publish is FCALL of the function library's publish (store.c holds
 * the Lua; src/memory/pub_dedup.c runs it natively) instead of XADD. The library is loaded
 * ahead of the first publish on a connection: `loaded` is set when a load is queued (every
 * later command on the one publishing connection runs after it) and cleared when the
 * connection is lost or the load failed. A server that lost the library anyway answers
 * "Function not found" having written nothing, and eddy__publish_again sends it all again
 * behind a load: what did go through is deduplicated by the resend.
 *
 * The server behind what it acknowledged (stream_look.h, "published ids"): each round's ids
 * are noted when its last publish's result is read, and after a lost connection the first
 * round to a stream of the table starts with XINFO STREAM (a look), read before its SADD.
 * looks_due mirrors the table's count of streams due one, so that a publish checks the table
 * only after a reconnect. */
#include "bus/publisher.h"
#include "eddy/value.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus/gather.h"
#include "bus/requests.h"
#include "error.h"
#include "events/entry.h"
#include "events/event_internal.h"
#include "events/stream_look.h"
#include "events/subject.h"
#include "keys.h"
#include "link/cluster.h"
#include "link/library.h"
#include "link/redis.h"

enum { P_SADD = 100, P_XADD, P_FCALL, P_WAIT, P_LOOK };

#define KNOWN_MAX 4096

struct eddy__publisher {
    const eddy__settings *s;
    char *subjects_key;
    pthread_mutex_t lock;
    char **known; /* open addressing, KNOWN_MAX * 2 slots */
    size_t nknown;
    atomic_bool loaded;   /* the function library's load was queued on this connection */
    eddy__pub_look looks; /* under lock */
    atomic_uint looks_due;
};

static size_t hash(const char *s) {
    size_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

eddy__publisher *eddy__publisher_new(const eddy__settings *s) {
    eddy__publisher *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->s = s;
    pthread_mutex_init(&p->lock, NULL);
    p->subjects_key = eddy__key_subjects(s->ns);
    p->known = calloc(KNOWN_MAX * 2, sizeof(*p->known));
    if (!p->subjects_key || !p->known) {
        eddy__publisher_free(p);
        return NULL;
    }
    return p;
}

void eddy__publisher_free(eddy__publisher *p) {
    if (!p)
        return;
    if (p->known)
        for (size_t i = 0; i < KNOWN_MAX * 2; i++)
            free(p->known[i]);
    free(p->known);
    eddy__pub_look_free(&p->looks);
    free(p->subjects_key);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

/* Finds subject's slot: the one holding it, or the empty one where it would go. */
static char **slot(eddy__publisher *p, const char *subject) {
    size_t i = hash(subject) % (KNOWN_MAX * 2);
    while (p->known[i] && strcmp(p->known[i], subject) != 0)
        i = (i + 1) % (KNOWN_MAX * 2);
    return &p->known[i];
}

static bool is_known(eddy__publisher *p, const char *subject) {
    pthread_mutex_lock(&p->lock);
    bool known = *slot(p, subject) != NULL;
    pthread_mutex_unlock(&p->lock);
    return known;
}

static void remember(eddy__publisher *p, const char *subject) {
    pthread_mutex_lock(&p->lock);
    char **sl = slot(p, subject);
    if (!*sl && p->nknown < KNOWN_MAX && (*sl = strdup(subject)))
        p->nknown++;
    pthread_mutex_unlock(&p->lock);
}

void eddy__publisher_connection_lost(eddy__publisher *p) {
    pthread_mutex_lock(&p->lock);
    for (size_t i = 0; i < KNOWN_MAX * 2; i++) {
        free(p->known[i]);
        p->known[i] = NULL;
    }
    p->nknown = 0;
    eddy__pub_look_lost(&p->looks);
    atomic_store(&p->looks_due, p->looks.ndue);
    pthread_mutex_unlock(&p->lock);
    atomic_store(&p->loaded, false);
}

/* After a lost connection, the first round to a stream the table holds looks at it first:
 * returns the stream's key (the caller's, for eddy__pub_look_again should the round not be
 * sent) when a look was added to out. Out of line: publishes only call it after a reconnect
 * (looks_due). */
static __attribute__((noinline)) char *add_look(eddy__publisher *p, const char *subject,
                                                eddy__cmdlist *out) {
    char *key = eddy__key_stream(p->s->ns, subject);
    if (!key)
        return NULL; /* out of memory: it looks at the next round */
    pthread_mutex_lock(&p->lock);
    bool due = eddy__pub_look_take(&p->looks, key);
    eddy__cmd *x = due ? eddy__cmdlist_add(out, P_LOOK, 0) : NULL;
    if (x) {
        eddy__cmd_str(x, "XINFO");
        eddy__cmd_str(x, "STREAM");
        eddy__cmd_str(x, key);
    } else if (due) {
        eddy__pub_look_again(&p->looks, key);
    }
    atomic_store(&p->looks_due, p->looks.ndue);
    pthread_mutex_unlock(&p->lock);
    if (x)
        return key;
    free(key);
    return NULL;
}

static void look_not_sent(eddy__publisher *p, char *key) {
    if (!key)
        return;
    pthread_mutex_lock(&p->lock);
    eddy__pub_look_again(&p->looks, key);
    atomic_store(&p->looks_due, p->looks.ndue);
    pthread_mutex_unlock(&p->lock);
    free(key);
}

/* A look's reply: the server behind what it acknowledged is logged and counted once. */
static void look_result(eddy__publisher *p, const eddy__cmd *look, const redisReply *r) {
    eddy__stream_behind b;
    pthread_mutex_lock(&p->lock);
    eddy__pub_look_feed(&p->looks, look->argv[2], r, &b);
    pthread_mutex_unlock(&p->lock);
    if (!b.behind)
        return;
    eddy__log(&p->s->log, EDDY_LOG_WARN,
              "publishing: the server is behind on stream '%s': its last id is %s, below %s, "
              "which it acknowledged to this bus; %llu acknowledged writes lost (a restart from "
              "an older snapshot?)",
              look->argv[2], b.last_id, b.max_read_id, (unsigned long long)b.lost);
    eddy__conn_writes_lost(p->s->conn_state, b.lost);
}

/* A round's results are read: its acknowledged ids are noted (stream_look.h). A round
 * publishes to one subject (a publish, or a batch of one subject's events), so it is one run:
 * its first and last acknowledged ids and how many there were. */
static void note_round(eddy__publisher *p, const eddy__cmdlist *cmds, redisReply *const *replies) {
    const redisReply *first = NULL, *last = NULL;
    size_t at = 0;
    uint64_t n = 0;
    for (size_t i = 0; i < cmds->n; i++) {
        int tag = cmds->tags[i];
        if ((tag == P_XADD || tag == P_FCALL) && replies[i] &&
            replies[i]->type == REDIS_REPLY_STRING) {
            if (!first) {
                first = replies[i];
                at = i;
            }
            last = replies[i];
            n++;
        }
    }
    if (!n)
        return;
    int k = cmds->tags[at] == P_XADD ? 1 : 3; /* XADD's key, or the function's first key */
    pthread_mutex_lock(&p->lock);
    eddy__pub_look_note(&p->looks, cmds->cmds[at].argv[k], cmds->cmds[at].argvlen[k], first->str,
                        first->len, last->str, last->len, n);
    pthread_mutex_unlock(&p->lock);
}

/* The keys a run of publishes to one subject writes: formatted once per run, not per event. */
typedef struct subject_keys {
    char *key, *ids, *exp; /* the stream; with dedup, its dedup record's two keys */
} subject_keys;

static void keys_free(subject_keys *k) {
    free(k->key);
    free(k->ids);
    free(k->exp);
}

static eddy_status keys_make(const eddy__publisher *p, const char *subject, bool dedup, bool gather,
                             subject_keys *k) {
    k->key = gather ? eddy__key_gather(p->s->ns, subject) : eddy__key_stream(p->s->ns, subject);
    k->ids = dedup ? eddy__key_pubids(p->s->ns, subject) : NULL;
    k->exp = dedup ? eddy__key_pubexp(p->s->ns, subject) : NULL;
    if (k->key && (!dedup || (k->ids && k->exp)))
        return EDDY_OK;
    keys_free(k);
    return EDDY_ERR_NOMEM;
}

/* What a request's fields add to its XADD (names, the inbox key, the request id, the deadline),
 * reserved with every entry so that a request's command is one allocation too. */
#define REQUEST_FIELDS_BYTES 192
#define ATTRIBUTE_BYTES_GUESS 48 /* a field's name and value */

static eddy_status add_entry_cmd(eddy__publisher *p, const subject_keys *k, const eddy_event *ev,
                                 bool dedup, bool gather, eddy__cmdlist *out) {
    eddy__cmd *x = eddy__cmdlist_add(out, dedup ? P_FCALL : P_XADD, 0);
    if (!x)
        return EDDY_ERR_NOMEM;
    /* One allocation for the whole command: its head (at most 9 arguments), two per field, and
     * room for a request's three fields (eddy__request_prepare_to). The attributes' bytes are
     * guessed rather than counted (a walk costs more than the doubling a long one may need). */
    size_t fields = 10 + eddy_event_extension_count(ev), datalen = 0;
    eddy_event_data(ev, &datalen);
    size_t head = strlen(k->key) + (dedup ? strlen(k->ids) + strlen(k->exp) : 0) + 96;
    eddy__cmd_reserve(x, 9 + 2 * (int)fields + 6,
                      head + datalen + fields * ATTRIBUTE_BYTES_GUESS + REQUEST_FIELDS_BYTES);
    if (dedup) {
        long long maxlen = p->s->stream_maxlen;
        eddy__cmd_str(x, "FCALL");
        eddy__cmd_str(x, EDDY__PUBLISH_FN);
        eddy__cmd_str(x, "3");
        eddy__cmd_str(x, k->key);
        eddy__cmd_str(x, k->ids);
        eddy__cmd_str(x, k->exp);
        eddy__cmd_fmt(x, "%u", p->s->publish_dedup_ms);
        /* A bound past the function's range could never trim anything anyway. */
        eddy__cmd_fmt(x, "%lld", maxlen > EDDY__STORE_MAX_COUNT ? EDDY__STORE_MAX_COUNT : maxlen);
        eddy__cmd_str(x, eddy_event_id(ev));
    } else {
        eddy__cmd_str(x, "XADD");
        eddy__cmd_str(x, k->key);
        if (gather) { /* only worth its deadline, and no retention pass looks there */
            eddy__cmd_str(x, "MAXLEN");
            eddy__cmd_str(x, "~");
            eddy__cmd_fmt(x, "%d", EDDY__GATHER_MAXLEN);
        } else if (p->s->stream_maxlen > 0) {
            eddy__cmd_str(x, "MAXLEN");
            eddy__cmd_str(x, "~");
            eddy__cmd_fmt(x, "%lld", p->s->stream_maxlen);
        }
        eddy__cmd_str(x, "*");
    }
    return eddy__entry_encode(ev, x);
}

eddy_status eddy__publish_check_event(const eddy__settings *s, const eddy_event *ev,
                                      const char *via, eddy_error *err) {
    if (!ev)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "publish: the event is NULL");
    eddy_status st;
    if ((st = eddy_event_validate(ev, err)) != EDDY_OK ||
        (st = eddy__event_check_trace(ev, err)) != EDDY_OK)
        return st;
    if (eddy_event_extension(ev, EDDY__FAILED_ATTR))
        return eddy__fail(err, EDDY_ERR_RESERVED_ATTRIBUTE,
                          "the event carries '" EDDY__FAILED_ATTR "', which marks failure replies");
    size_t size = eddy_event_size(ev);
    if (size > s->max_event_size)
        return eddy__fail(err, EDDY_ERR_TOO_LARGE, "event '%s' is %zu bytes; the limit is %zu",
                          eddy_event_id(ev), size, s->max_event_size);
    /* A function passes the fields to XADD as Lua call arguments, as the store does. */
    if (via && 2 * eddy_event_extension_count(ev) + 18 > EDDY__STORE_MAX_FIELDS)
        return eddy__fail(err, EDDY_ERR_TOO_LARGE, "event '%s' has %zu extensions; %s at most %d",
                          eddy_event_id(ev), eddy_event_extension_count(ev), via,
                          (EDDY__STORE_MAX_FIELDS - 18) / 2);
    return EDDY_OK;
}

static eddy_status add_wait(const eddy__publisher *p, eddy__cmdlist *out) {
    eddy__cmd *w = eddy__cmdlist_add(out, P_WAIT, 0);
    if (!w)
        return EDDY_ERR_NOMEM;
    eddy__cmd_str(w, "WAIT");
    eddy__cmd_fmt(w, "%u", p->s->wait_replicas);
    eddy__cmd_fmt(w, "%u", p->s->wait_timeout_ms);
    return EDDY_OK;
}

/* A run of n publishes (or one request) to one subject, each laid out as eddy__publish_result
 * reads it: the library's load (the first, once per connection, with dedup), a look at the
 * stream (the first, after a reconnect; `look`: a publish, not a request, whose flow has room
 * for its own commands only), the subject's registration (the first, until it is known), the
 * entry, and with `wait` a WAIT. Every event is checked before anything is built; on failure
 * out is as it was. */
static eddy_status prepare_run(eddy__publisher *p, const char *subject,
                               const eddy_event *const *evs, size_t n, bool dedup, bool look,
                               bool gather, bool wait, eddy__cmdlist *out, eddy_error *err) {
    if (!subject)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "publish: the subject is NULL");
    eddy_status st = eddy__subject_check(subject, err);
    for (size_t i = 0; st == EDDY_OK && i < n; i++)
        st = eddy__publish_check_event(p->s, evs[i], dedup ? "with publish_dedup_ms" : NULL, err);
    if (st != EDDY_OK)
        return st;
    subject_keys k;
    if (keys_make(p, subject, dedup, gather, &k) != EDDY_OK)
        return eddy__fail(err, EDDY_ERR_NOMEM, "publish: could not build the command");
    size_t before = out->n;
    bool loads = dedup && !atomic_exchange(&p->loaded, true);
    if (loads)
        st = eddy__library_load_cmds(out);
    char *looked = NULL;
    if (look && st == EDDY_OK && atomic_load_explicit(&p->looks_due, memory_order_relaxed))
        looked = add_look(p, subject, out);
    if (st == EDDY_OK && !is_known(p, subject)) {
        eddy__cmd *sadd = eddy__cmdlist_add(out, P_SADD, 0);
        if (sadd) {
            eddy__cmd_str(sadd, "SADD");
            eddy__cmd_str(sadd, p->subjects_key);
            eddy__cmd_str(sadd, subject);
        } else {
            st = EDDY_ERR_NOMEM;
        }
    }
    for (size_t i = 0; st == EDDY_OK && i < n; i++) {
        st = add_entry_cmd(p, &k, evs[i], dedup, gather, out);
        if (st == EDDY_OK && wait)
            st = add_wait(p, out);
    }
    keys_free(&k);
    if (st == EDDY_OK)
        st = eddy__cmdlist_status_from(out, before);
    if (st != EDDY_OK) {
        if (loads)
            atomic_store(&p->loaded, false); /* not sent: the next publish loads */
        look_not_sent(p, looked);
        while (out->n > before)
            eddy__cmd_reset(&out->cmds[--out->n]);
        return eddy__fail(err, st, "publish: could not build the command");
    }
    if (looked)
        free(looked);
    return EDDY_OK;
}

eddy_status eddy__publish_prepare_batch(eddy__publisher *p, const char *subject,
                                        const eddy_event *const *evs, size_t n, eddy__cmdlist *out,
                                        eddy_error *err) {
    if (n && !evs)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "publish: the events are NULL");
    if (n == 0)
        return EDDY_OK; /* nothing to send: no registration or load either */
    return prepare_run(p, subject, evs, n, p->s->publish_dedup_ms != 0, true, false,
                       p->s->wait_replicas != 0, out, err);
}

/* WAIT's reply: how many replicas have the publish. */
static eddy_status wait_result(eddy__publisher *p, const redisReply *r, eddy_error *err) {
    eddy_status st = eddy__reply_status(r, "WAIT", err);
    if (st != EDDY_OK)
        return st;
    if (r->type != REDIS_REPLY_INTEGER)
        return eddy__fail(err, EDDY_ERR_PROTOCOL, "WAIT: unexpected reply type %d", r->type);
    if (r->integer < (long long)p->s->wait_replicas) {
        /* Fewer replicas than there were: a replica may have been promoted away from this
         * master. The handle's connections ask the sentinels again (conn_state.h). */
        if (p->s->url.kind == EDDY__URL_SENTINEL)
            eddy__conn_master_doubt(p->s->conn_state);
        return eddy__fail(err, EDDY_ERR_TIMEOUT,
                          "publish: stored on the master, but %lld of the %u replicas wanted "
                          "had it within %u ms (a failover may lose it)",
                          r->integer, p->s->wait_replicas, p->s->wait_timeout_ms);
    }
    return EDDY_OK;
}

static bool function_not_found(const redisReply *r) {
    static const char text[] = "ERR Function not found";
    return r && r->type == REDIS_REPLY_ERROR && r->len >= sizeof(text) - 1 &&
           memcmp(r->str, text, sizeof(text) - 1) == 0;
}

eddy_status eddy__publish_result(eddy__publisher *p, const eddy__cmdlist *cmds, size_t first,
                                 redisReply **replies, size_t *next, char *id, size_t idsize,
                                 eddy_error *err) {
    size_t i = first;
    eddy_status load_st = eddy__library_is_load(cmds, i)
                              ? eddy__library_load_result(cmds, i, replies, &i, err)
                              : EDDY_OK;
    if (load_st != EDDY_OK) {
        atomic_store(&p->loaded, false);
        if (load_st == EDDY_ERR_NOT_SUPPORTED)
            eddy__fail(err, load_st, "publish_dedup_ms needs a server with functions (Redis 7)");
    }
    if (i < cmds->n && cmds->tags[i] == P_LOOK) {
        look_result(p, &cmds->cmds[i], replies[i]);
        i++;
    }
    eddy_status sadd_st = EDDY_OK;
    if (i < cmds->n && cmds->tags[i] == P_SADD) {
        sadd_st = eddy__reply_status(replies[i], "SADD", err);
        if (sadd_st == EDDY_OK)
            remember(p, cmds->cmds[i].argv[2]);
        i++;
    }
    bool waits = i + 1 < cmds->n && cmds->tags[i + 1] == P_WAIT;
    *next = i + 1 + waits;
    if (*next == cmds->n) /* the round's last publish */
        note_round(p, cmds, replies);
    if (load_st != EDDY_OK)
        return load_st;
    if (cmds->tags[i] == P_FCALL && function_not_found(replies[i])) {
        atomic_store(&p->loaded, false);
        return eddy__fail(err, EDDY_ERR_BACKEND,
                          "publish: the server does not know " EDDY__PUBLISH_FN
                          " (its function library was flushed); nothing was published");
    }
    eddy_status st =
        eddy__reply_status(replies[i], cmds->tags[i] == P_FCALL ? "publish" : "XADD", err);
    if (st != EDDY_OK)
        return st;
    if (replies[i]->type != REDIS_REPLY_STRING)
        return eddy__fail(err, EDDY_ERR_PROTOCOL, "publish: unexpected reply type %d",
                          replies[i]->type);
    if (id && idsize)
        snprintf(id, idsize, "%s", replies[i]->str);
    if (waits && (st = wait_result(p, replies[i + 1], err)) != EDDY_OK)
        return st;
    /* The message is stored; a failed SADD only delays discovery by pattern subscribers
     * until a later publish adds the subject. */
    if (sadd_st != EDDY_OK)
        eddy__log(&p->s->log, EDDY_LOG_WARN, "publish: subject registration failed");
    return EDDY_OK;
}

/* Appends a copy of every command of sent to out. */
static eddy_status copy_cmds(const eddy__cmdlist *sent, eddy__cmdlist *out) {
    eddy_status st = eddy__cmdlist_status(out);
    for (size_t i = 0; st == EDDY_OK && i < sent->n; i++) {
        eddy__cmd *c = eddy__cmdlist_add(out, sent->tags[i], sent->args[i]);
        if (!c)
            st = EDDY_ERR_NOMEM;
        for (int a = 0; c && a < sent->cmds[i].argc; a++)
            eddy__cmd_arg(c, sent->cmds[i].argv[a], sent->cmds[i].argvlen[a]);
    }
    return st == EDDY_OK ? eddy__cmdlist_status(out) : st;
}

bool eddy__publish_moved_again(eddy__publisher *p, size_t npublishes, const eddy__cmdlist *sent,
                               eddy_status st, const eddy_error *err, eddy__cmdlist *again) {
    /* Sent again only when nothing can be stored twice: what went through is deduplicated, or
     * the one publish is what was refused (a MOVED refuses the rest of the pipeline too; a
     * TRYAGAIN answers only a multi-key command, which a publish's own is). After a
     * CLUSTERDOWN the publish may have run behind the refused command once the cluster came
     * back: only with publish_dedup_ms. */
    eddy__cluster_refusal why = eddy__cluster_refused(st, err);
    bool single = npublishes == 1 && why != EDDY__CLUSTER_DOWN;
    if (why == EDDY__CLUSTER_NOT_REFUSED || (!single && !p->s->publish_dedup_ms))
        return false;
    eddy__cmdlist_init(again);
    if (copy_cmds(sent, again) != EDDY_OK) {
        eddy__cmdlist_reset(again);
        return false;
    }
    eddy__log(&p->s->log, EDDY_LOG_DEBUG, "publish: refused unwritten (%s); sent again",
              why == EDDY__CLUSTER_MOVED      ? "MOVED"
              : why == EDDY__CLUSTER_TRYAGAIN ? "TRYAGAIN"
                                              : "CLUSTERDOWN");
    return true;
}

bool eddy__publish_again(eddy__publisher *p, const eddy__cmdlist *sent, redisReply *const *replies,
                         eddy__cmdlist *again) {
    bool lost = false;
    if (!p->s->publish_dedup_ms || eddy__library_is_load(sent, 0))
        return false; /* it loaded the library itself: another try would not do better */
    for (size_t i = 0; !lost && i < sent->n; i++)
        lost = sent->tags[i] == P_FCALL && function_not_found(replies[i]);
    if (!lost)
        return false;
    atomic_store(&p->loaded, true);
    eddy__cmdlist_init(again);
    eddy_status st = eddy__library_load_cmds(again);
    if (st == EDDY_OK)
        st = copy_cmds(sent, again);
    if (st != EDDY_OK) {
        atomic_store(&p->loaded, false);
        eddy__cmdlist_reset(again);
        return false;
    }
    eddy__log(&p->s->log, EDDY_LOG_WARN,
              "publish: the server had lost the '" EDDY__STORE_LIBRARY
              "' function library (flushed or replaced); loading it and publishing again");
    return true;
}

eddy_status eddy__publish_value_event(const eddy__settings *s, const char *type, eddy_pack_fn pack,
                                      void *user, eddy_event **out, eddy_error *err) {
    if (!s->source)
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC,
                          "publish_value needs settings.source for the event's source");
    if (!type || !pack)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "publish_value: type or pack is NULL");
    eddy_event *ev = NULL;
    eddy_status st = eddy_event_create(s->source, type, &ev, err);
    if (st == EDDY_OK && (st = eddy_event_set_value(ev, pack, user, err)) != EDDY_OK) {
        eddy_event_free(ev);
        ev = NULL;
    }
    *out = ev;
    return st;
}

eddy_status eddy__request_prepare(eddy__publisher *p, const char *subject, const eddy_event *ev,
                                  const char *reply_to, const char *request_id,
                                  long long deadline_ms, eddy__cmdlist *out, eddy_error *err) {
    return eddy__request_prepare_to(p, subject, ev, reply_to, request_id, deadline_ms, false, out,
                                    err);
}

eddy_status eddy__request_prepare_to(eddy__publisher *p, const char *subject, const eddy_event *ev,
                                     const char *reply_to, const char *request_id,
                                     long long deadline_ms, bool gather, eddy__cmdlist *out,
                                     eddy_error *err) {
    /* Never deduplicated: each request is a new conversation with its own request id. */
    eddy_status st = prepare_run(p, subject, &ev, 1, false, false, gather, false, out, err);
    if (st != EDDY_OK)
        return st;
    eddy__cmd *x = &out->cmds[out->n - 1]; /* the XADD: the request travels with the event */
    eddy__cmd_str(x, EDDY__F_REPLY_TO);
    eddy__cmd_str(x, reply_to);
    eddy__cmd_str(x, EDDY__F_REQUEST);
    eddy__cmd_str(x, request_id);
    eddy__cmd_str(x, EDDY__F_DEADLINE);
    eddy__cmd_fmt(x, "%lld", deadline_ms);
    return eddy__cmd_status(x) == EDDY_OK ? EDDY_OK
                                          : eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
}
