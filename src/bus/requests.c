/* SPDX-License-Identifier: BSD-3-Clause */
/* Requests waiting for replies; see requests.h.
 *
 * Invariants: a request is in the table from just before it is sent until exactly one of a
 * matching reply, give_up (deadline, cancel) or abandon_all (stop) takes it out, and that one
 * counts its outcome. The table is a chained hash by id; a binary heap by deadline gives the
 * next deadline in O(1), so a front end needs one timer, not one per request.
 */
#include "bus/requests.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus/gather.h"
#include "error.h"
#include "events/entry.h"

#define BUCKETS 4096
#define LOGGED_NAMES_MAX 8

struct eddy__req_row {
    atomic_uint_fast64_t sent, answered, no_responders, no_reply, failed;
};

typedef struct req {
    char id[48];
    void *waiter;
    eddy__gather *gather; /* a scatter-gather request (gather.h); NULL for a single one */
    eddy__req_row *row;
    long long deadline;
    size_t heap_i;
    bool sent;
    struct req *next;
} req;

struct eddy__requests {
    const eddy__settings *s;
    char prefix[17];
    atomic_uint_fast64_t counter;
    /* rows[0..nnames) are the declared names, rows[nnames] the unnamed row */
    char **names;
    size_t nnames;
    eddy__req_row *rows;
    eddy__req_row total;
    atomic_uint_fast64_t unclaimed;

    pthread_mutex_t lock;
    req *buckets[BUCKETS];
    req **heap;
    size_t nheap, capheap;
    char *logged[LOGGED_NAMES_MAX];
};

static size_t hash(const char *s) {
    size_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h % BUCKETS;
}

eddy__requests *eddy__requests_new(const eddy__settings *s) {
    eddy__requests *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->s = s;
    pthread_mutex_init(&r->lock, NULL);
    char hex[33];
    eddy__random_hex(hex);
    memcpy(r->prefix, hex, 16);
    r->nnames = s->nrequest_names;
    r->names = s->request_names;
    r->rows = calloc(r->nnames + 1, sizeof(*r->rows));
    if (!r->rows) {
        eddy__requests_free(r);
        return NULL;
    }
    return r;
}

void eddy__requests_free(eddy__requests *r) {
    if (!r)
        return;
    for (size_t b = 0; b < BUCKETS; b++)
        for (req *q = r->buckets[b], *next; q; q = next) {
            next = q->next;
            free(q);
        }
    free(r->heap);
    free(r->rows);
    for (size_t i = 0; i < LOGGED_NAMES_MAX; i++)
        free(r->logged[i]);
    pthread_mutex_destroy(&r->lock);
    free(r);
}

eddy_status eddy__request_precheck(const eddy_request_opts *opts, bool cancelled, bool active,
                                   unsigned caps, const eddy_event *ev, long long now_ms,
                                   eddy_error *err) {
    if (!opts || opts->deadline_ms == 0)
        return eddy__fail(err, EDDY_ERR_NO_DEADLINE,
                          "a request needs a deadline: how long an answer is worth waiting for "
                          "is the caller's decision");
    if (opts->deadline_ms <= now_ms)
        return eddy__fail(err, EDDY_ERR_NO_REPLY, "the request's deadline has already passed");
    if (cancelled)
        return eddy__fail(err, EDDY_ERR_NO_REPLY, "the request was cancelled before it was sent");
    if (!active)
        return eddy__fail(err, EDDY_ERR_NOT_READY, "the bus is not started");
    if (!(caps & EDDY_CAP_REQUEST_REPLY))
        return eddy__fail(err, EDDY_ERR_NOT_SUPPORTED, "this backend does not answer requests");
    if (ev && eddy_event_extension(ev, EDDY__FAILED_ATTR))
        return eddy__fail(err, EDDY_ERR_RESERVED_ATTRIBUTE,
                          "the event carries '" EDDY__FAILED_ATTR "', which marks failure replies");
    return EDDY_OK;
}

eddy_status eddy__request_begin(eddy__requests *r, eddy__publisher *p,
                                const eddy_request_opts *opts, bool cancelled, bool active,
                                unsigned caps, const char *subject, const eddy_event *ev,
                                const char *reply_to, long long now_ms, bool gather,
                                eddy__request_out *out, eddy_error *err) {
    memset(out, 0, sizeof(*out));
    eddy__cmdlist_init(&out->cmds);
    eddy_status st = eddy__request_precheck(opts, cancelled, active, caps, ev, now_ms, err);
    if (st != EDDY_OK)
        return st;
    if (!ev)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "the request event is NULL");
    if (!reply_to)
        return eddy__fail(err, EDDY_ERR_NOT_READY, "the bus has no reply stream");
    eddy__requests_new_id(r, out->id);
    out->deadline_ms = opts->deadline_ms;
    st = eddy__request_prepare_to(p, subject, ev, reply_to, out->id, opts->deadline_ms, gather,
                                  &out->cmds, err);
    if (st != EDDY_OK) {
        eddy__cmdlist_reset(&out->cmds);
        return st;
    }
    /* Last: an undeclared name is logged once, and only for a request that goes out. */
    out->row = eddy__requests_row(r, opts->name);
    return EDDY_OK;
}

void eddy__request_out_reset(eddy__request_out *o) { eddy__cmdlist_reset(&o->cmds); }

eddy__req_row *eddy__requests_row(eddy__requests *r, const char *name) {
    if (!name || !name[0])
        return &r->rows[r->nnames];
    for (size_t i = 0; i < r->nnames; i++)
        if (strcmp(r->names[i], name) == 0)
            return &r->rows[i];
    /* Undeclared: counted with the unnamed requests, logged once per name (up to a few, so a
     * name made from traffic cannot grow this). */
    pthread_mutex_lock(&r->lock);
    bool log = false;
    for (size_t i = 0; i < LOGGED_NAMES_MAX; i++) {
        if (r->logged[i] && strcmp(r->logged[i], name) == 0)
            break;
        if (!r->logged[i]) {
            r->logged[i] = strdup(name);
            log = true;
            break;
        }
    }
    pthread_mutex_unlock(&r->lock);
    if (log)
        eddy__log(&r->s->log, EDDY_LOG_WARN,
                  "request name '%s' is not declared in settings.request_names; counted with "
                  "the unnamed requests",
                  name);
    return &r->rows[r->nnames];
}

void eddy__requests_new_id(eddy__requests *r, char id[48]) {
    unsigned long long n = atomic_fetch_add(&r->counter, 1) + 1;
    snprintf(id, 48, "%s.%llu", r->prefix, n);
}

static void count(eddy__requests *r, eddy__req_row *row, size_t offset) {
    atomic_fetch_add((atomic_uint_fast64_t *)((char *)row + offset), 1);
    atomic_fetch_add((atomic_uint_fast64_t *)((char *)&r->total + offset), 1);
}
#define COUNT(r, row, field) count((r), (row), offsetof(eddy__req_row, field))

void eddy__requests_count_no_responders(eddy__requests *r, eddy__req_row *row) {
    COUNT(r, row, sent);
    COUNT(r, row, no_responders);
}

/* ---- the heap by deadline (caller holds the lock) ------------------------------------- */

static void heap_swap(eddy__requests *r, size_t a, size_t b) {
    req *t = r->heap[a];
    r->heap[a] = r->heap[b];
    r->heap[b] = t;
    r->heap[a]->heap_i = a;
    r->heap[b]->heap_i = b;
}

static void heap_up(eddy__requests *r, size_t i) {
    while (i > 0 && r->heap[(i - 1) / 2]->deadline > r->heap[i]->deadline) {
        heap_swap(r, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static void heap_down(eddy__requests *r, size_t i) {
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < r->nheap && r->heap[l]->deadline < r->heap[m]->deadline)
            m = l;
        if (l + 1 < r->nheap && r->heap[l + 1]->deadline < r->heap[m]->deadline)
            m = l + 1;
        if (m == i)
            return;
        heap_swap(r, i, m);
        i = m;
    }
}

static void heap_remove(eddy__requests *r, req *q) {
    size_t i = q->heap_i;
    heap_swap(r, i, --r->nheap);
    if (i < r->nheap) {
        heap_down(r, i);
        heap_up(r, i);
    }
}

/* Unlinks the request with this id from the table and the heap; NULL when absent. */
static req *unlink_req(eddy__requests *r, const char *id) {
    req **pp = &r->buckets[hash(id)];
    while (*pp && strcmp((*pp)->id, id) != 0)
        pp = &(*pp)->next;
    req *q = *pp;
    if (!q)
        return NULL;
    *pp = q->next;
    heap_remove(r, q);
    return q;
}

static req *find(eddy__requests *r, const char *id) {
    req *q = r->buckets[hash(id)];
    while (q && strcmp(q->id, id) != 0)
        q = q->next;
    return q;
}

eddy_status eddy__requests_add(eddy__requests *r, const char *id, void *waiter, eddy__req_row *row,
                               long long deadline_ms) {
    return eddy__requests_add_gather(r, id, waiter, row, deadline_ms, NULL);
}

eddy_status eddy__requests_add_gather(eddy__requests *r, const char *id, void *waiter,
                                      eddy__req_row *row, long long deadline_ms,
                                      eddy__gather *gather) {
    req *q = calloc(1, sizeof(*q));
    if (!q)
        return EDDY_ERR_NOMEM;
    q->gather = gather;
    snprintf(q->id, sizeof(q->id), "%s", id);
    q->waiter = waiter;
    q->row = row;
    q->deadline = deadline_ms;
    pthread_mutex_lock(&r->lock);
    if (r->nheap == r->capheap) {
        size_t cap = r->capheap ? r->capheap * 2 : 64;
        req **heap = realloc(r->heap, cap * sizeof(*heap));
        if (!heap) {
            pthread_mutex_unlock(&r->lock);
            free(q);
            return EDDY_ERR_NOMEM;
        }
        r->heap = heap;
        r->capheap = cap;
    }
    size_t b = hash(id);
    q->next = r->buckets[b];
    r->buckets[b] = q;
    q->heap_i = r->nheap;
    r->heap[r->nheap++] = q;
    heap_up(r, q->heap_i);
    pthread_mutex_unlock(&r->lock);
    return EDDY_OK;
}

void eddy__requests_sent(eddy__requests *r, const char *id) {
    pthread_mutex_lock(&r->lock);
    req *q = find(r, id);
    eddy__req_row *row = NULL;
    if (q) {
        q->sent = true;
        row = q->row;
    }
    pthread_mutex_unlock(&r->lock);
    /* A reply can only come for a request that was sent, so the request is either still here
     * or already counted Answered/Failed by a match that counted Sent for it. */
    if (row)
        COUNT(r, row, sent);
}

bool eddy__requests_unsent(eddy__requests *r, const char *id) {
    pthread_mutex_lock(&r->lock);
    req *q = unlink_req(r, id);
    pthread_mutex_unlock(&r->lock);
    free(q);
    return q != NULL;
}

bool eddy__requests_waiting(eddy__requests *r, const char *id) {
    pthread_mutex_lock(&r->lock);
    bool found = find(r, id) != NULL;
    pthread_mutex_unlock(&r->lock);
    return found;
}

/* Counts the end of a request that was taken out of the table. A request taken out before
 * eddy__requests_sent ran (a very fast reply) is counted Sent here instead. */
static void count_end(eddy__requests *r, req *q, size_t outcome_offset) {
    if (!q->sent)
        COUNT(r, q->row, sent);
    count(r, q->row, outcome_offset);
}

/* The counter a gather's outcome goes to (gather.h). */
static size_t gather_offset(eddy_status outcome) {
    return outcome == EDDY_OK                     ? offsetof(eddy__req_row, answered)
           : outcome == EDDY_ERR_RESPONDER_FAILED ? offsetof(eddy__req_row, failed)
                                                  : offsetof(eddy__req_row, no_reply);
}

/* Counts the end of q taken out without a reply: NoReply, or for a gather what it gathered
 * makes of `how`. */
static void count_given_up(eddy__requests *r, req *q, eddy__gather_end how) {
    if (q->gather)
        count_end(r, q, gather_offset(eddy__gather_finish(q->gather, how)));
    else
        count_end(r, q, offsetof(eddy__req_row, no_reply));
}

static bool give_up(eddy__requests *r, const char *id, eddy__gather_end how) {
    pthread_mutex_lock(&r->lock);
    req *q = unlink_req(r, id);
    pthread_mutex_unlock(&r->lock);
    if (!q)
        return false;
    count_given_up(r, q, how);
    free(q);
    return true;
}

bool eddy__requests_give_up(eddy__requests *r, const char *id) {
    return give_up(r, id, EDDY__GATHER_CANCEL);
}

bool eddy__requests_expire(eddy__requests *r, const char *id) {
    return give_up(r, id, EDDY__GATHER_DEADLINE);
}

long long eddy__requests_next_deadline(eddy__requests *r) {
    pthread_mutex_lock(&r->lock);
    long long d = r->nheap ? r->heap[0]->deadline : -1;
    pthread_mutex_unlock(&r->lock);
    return d;
}

void *eddy__requests_pop_expired(eddy__requests *r, long long now_ms) {
    pthread_mutex_lock(&r->lock);
    req *q = NULL;
    if (r->nheap && r->heap[0]->deadline <= now_ms)
        q = unlink_req(r, r->heap[0]->id);
    pthread_mutex_unlock(&r->lock);
    if (!q)
        return NULL;
    void *waiter = q->waiter;
    count_given_up(r, q, EDDY__GATHER_DEADLINE);
    free(q);
    return waiter;
}

void eddy__requests_abandon_all(eddy__requests *r, void (*done)(void *waiter, void *user),
                                void *user) {
    for (;;) {
        pthread_mutex_lock(&r->lock);
        req *q = r->nheap ? unlink_req(r, r->heap[0]->id) : NULL;
        pthread_mutex_unlock(&r->lock);
        if (!q)
            return;
        void *waiter = q->waiter;
        count_given_up(r, q, EDDY__GATHER_CANCEL);
        free(q);
        done(waiter, user);
    }
}

size_t eddy__requests_in_flight(eddy__requests *r) {
    pthread_mutex_lock(&r->lock);
    size_t n = r->nheap;
    pthread_mutex_unlock(&r->lock);
    return n;
}

/* A reply entry's event, or EDDY_ERR_RESPONDER_FAILED (a failure reply, or one that cannot be
 * read: the responder's side failed to produce a usable reply). */
static eddy_status decode_reply(eddy__requests *r, const char *key, const char *const *fv,
                                const size_t *fvlen, size_t nfv, eddy_event **reply) {
    eddy_error err;
    eddy_status st = eddy__entry_decode(fv, fvlen, nfv, r->s->max_event_size, reply, &err);
    if (st == EDDY_OK && eddy_event_extension(*reply, EDDY__FAILED_ATTR)) {
        eddy_event_free(*reply);
        *reply = NULL;
        st = EDDY_ERR_RESPONDER_FAILED;
    } else if (st != EDDY_OK) {
        eddy__log(&r->s->log, EDDY_LOG_WARN, "request %s: unreadable reply: %s", key, err.detail);
        *reply = NULL;
        st = EDDY_ERR_RESPONDER_FAILED;
    }
    return st;
}

/* One reply to a gather: added to its list, under the lock (it may have ended meanwhile: then
 * Unclaimed, as any late reply); the gather decides whether it ends now. */
static bool gathered(eddy__requests *r, const char *key, eddy_status st, eddy_event *reply,
                     eddy__reply_done *out) {
    pthread_mutex_lock(&r->lock);
    req *q = find(r, key);
    if (!q || !q->gather) {
        pthread_mutex_unlock(&r->lock);
        eddy_event_free(reply);
        atomic_fetch_add(&r->unclaimed, 1);
        return false;
    }
    bool ends = eddy__gather_add(q->gather, st, &reply);
    bool each = q->gather->each;
    /* Read under the lock: once it is released, a gather still in the table may end. */
    out->waiter = q->waiter;
    out->st = ends ? q->gather->outcome : st;
    if (ends)
        unlink_req(r, key);
    pthread_mutex_unlock(&r->lock);
    out->reply = each ? reply : NULL; /* the list's: borrowed */
    out->gather = true;
    out->more = !ends;
    out->last_st = st;
    if (ends) {
        count_end(r, q, gather_offset(out->st));
        free(q);
        return true;
    }
    return each; /* a front end that waits for the end alone hears nothing now */
}

bool eddy__requests_match(eddy__requests *r, const char *const *fv, const size_t *fvlen, size_t nfv,
                          eddy__reply_done *out) {
    size_t idlen = 0;
    const char *id = eddy__entry_field(fv, fvlen, nfv, EDDY__F_REQUEST, &idlen);
    char key[48];
    req *q = NULL;
    bool gathering = false;
    if (id && idlen < sizeof(key)) {
        memcpy(key, id, idlen);
        key[idlen] = '\0';
        pthread_mutex_lock(&r->lock);
        q = find(r, key);
        /* A gather stays in the table for its next replies; a single request ends here. */
        if (q && !(gathering = q->gather != NULL))
            q = unlink_req(r, key);
        pthread_mutex_unlock(&r->lock);
    }
    if (!q) {
        /* Its request ended (deadline, cancel), or a second group answered it too. */
        atomic_fetch_add(&r->unclaimed, 1);
        return false;
    }
    eddy_event *reply = NULL;
    eddy_status st = decode_reply(r, key, fv, fvlen, nfv, &reply);
    if (gathering)
        return gathered(r, key, st, reply, out);
    count_end(r, q,
              st == EDDY_OK ? offsetof(eddy__req_row, answered) : offsetof(eddy__req_row, failed));
    out->waiter = q->waiter;
    out->st = st;
    out->reply = reply;
    out->gather = false;
    out->more = false;
    free(q);
    return true;
}

static void read_row(const eddy__req_row *row, eddy_request_stats *out) {
    out->sent = atomic_load(&row->sent);
    out->answered = atomic_load(&row->answered);
    out->no_responders = atomic_load(&row->no_responders);
    out->no_reply = atomic_load(&row->no_reply);
    out->failed = atomic_load(&row->failed);
}

void eddy__requests_stats(eddy__requests *r, const char *name, eddy_request_stats *out) {
    memset(out, 0, sizeof(*out));
    if (!name) {
        read_row(&r->total, out);
        out->unclaimed = atomic_load(&r->unclaimed);
        return;
    }
    if (!name[0]) {
        read_row(&r->rows[r->nnames], out);
        return;
    }
    for (size_t i = 0; i < r->nnames; i++)
        if (strcmp(r->names[i], name) == 0)
            read_row(&r->rows[i], out);
}
