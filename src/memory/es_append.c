/* SPDX-License-Identifier: BSD-3-Clause */
/* The "eddy" library's eddy_append, run natively by the memory engine: the same checks in the
 * same order with the same replies as the Lua in src/link/library.c, and the same resulting keys.
 * A differential test (tests/integration/test_store.c) runs both and compares them.
 *
 * It runs under the engine lock like every command, so it is atomic. Unlike a Redis function,
 * it is also all-or-nothing when memory runs out: every key it needs is created and every
 * entry appended before anything that cannot be undone, and a failure undoes the appends in
 * reverse order (undo.h) and removes the keys it created.
 *
 * What it leaves, once everything is checked: per event, position+1 to {ns}:es:all with id "<p>-0",
 * version+1 to the stream's stream with id "<v>-0", and when publishing an entry with an
 * automatic id to the subject's stream, each with the event's fields then _stream, _version
 * and _position; then the counter, the subject stream's "~" trim and the subject's SADD. */
#include <stdio.h>
#include <string.h>

#include "memory/function.h"
#include "memory/undo.h"

#define MAX_COUNT 999999999999999ULL /* 15 digits: what the Lua's numbers hold exactly */
#define MAX_FIELDS 4000

static void fail(eddy__mctx *c, const char *why) {
    eddy__mctx_errorf(c, "ERR eddy_append: %s", why);
}

bool eddy__mfn_count(int nargs, const char *const *args, const size_t *alen, long long i,
                     unsigned long long *out) {
    if (i < 0 || i >= nargs || alen[i] == 0 || alen[i] > 15)
        return false;
    unsigned long long v = 0;
    for (size_t j = 0; j < alen[i]; j++) {
        char ch = args[i][j];
        if (ch < '0' || ch > '9')
            return false;
        v = v * 10 + (unsigned long long)(ch - '0');
    }
    *out = v;
    return true;
}

enum { K_STREAM, K_ALL, K_POS, K_SUBJECT, K_SUBJECTS, NKEYS };

/* The deduplicated append's extra: the window, the subject's dedup record (its two keys) and
 * each event's id. */
typedef struct dedup {
    unsigned long long window;
    const char *const *keys;
    const size_t *klen;
    const char *const *ids;
    const size_t *idlen;
    eddy__mpubrec rec;
} dedup;

typedef struct run {
    eddy__mctx *c;
    int nkeys;
    eddy__mobj *obj[NKEYS];
    bool created[NKEYS];
    eddy__mundo *undo;
    size_t nundo;
    const char **fv;
    size_t *fvlen;
    char *counter;
    /* with dedup: the record, whose fields are made (with their time) before any append, and
     * their values, written once the entry ids are known */
    dedup *dd;
    eddy__mblob **dval;
    size_t ndedup;
} run;

/* Undoes every write and frees what the run allocated. */
static void rollback(run *r) {
    while (r->nundo)
        eddy__mundo_append(&r->undo[--r->nundo]);
    for (int k = 0; k < r->nkeys; k++)
        if (r->created[k])
            eddy__mkey_delete(r->c, r->obj[k]);
    if (r->dd) {
        for (size_t i = r->ndedup; i > 0; i--)
            eddy__mpubrec_forget(r->c, &r->dd->rec, r->dd->ids[i - 1], r->dd->idlen[i - 1]);
        eddy__mpubrec_close(r->c, &r->dd->rec, false, r->dd->window);
    }
}

static void run_free(run *r) {
    eddy__mem_free(r->undo);
    eddy__mem_free(r->fv);
    eddy__mem_free(r->fvlen);
    eddy__mem_free(r->counter);
    eddy__mem_free(r->dval); /* the values belong to the record */
}

/* The Lua's check of the dedup keys: true (and replied) when the append is settled here, as a
 * repeat of one that ran within the window, or refused because only some of its events were
 * published within it. */
static bool dedup_settled(eddy__mctx *c, dedup *dd, unsigned long long n) {
    if (!eddy__mpubrec_open(c, dd->keys, dd->klen, &dd->rec))
        return true; /* WRONGTYPE */
    eddy__mpubrec_prune(c, &dd->rec);
    unsigned long long seen = 0;
    const eddy__mblob *last = NULL;
    for (unsigned long long e = 0; e < n; e++) {
        const eddy__mblob *o = eddy__mpubrec_first(c, &dd->rec, dd->ids[e], dd->idlen[e]);
        seen += o != NULL;
        last = o;
    }
    if (seen == n) {
        /* "<entry id> <version>": the version the first append replied */
        const char *v = last->data, *end = v + last->len;
        const char *sp = memchr(v, ' ', last->len);
        unsigned long long version = 0;
        bool ok = sp && sp > v && end - sp > 1 && end - sp <= 19;
        for (const char *d = sp ? sp + 1 : end; ok && d < end; d++)
            ok = *d >= '0' && *d <= '9' && ((version = version * 10 + (unsigned)(*d - '0')), true);
        if (ok) {
            eddy__mresp_int(c->out, (long long)version);
            return true;
        }
    }
    if (seen > 0) {
        eddy__mctx_errorf(c,
                          "ERR eddy_append: %llu of the %llu events were already published to the "
                          "subject within publish_dedup_ms",
                          seen, n);
        return true;
    }
    return false;
}

/* Records every event's id, with room for its value. */
static bool dedup_prepare(run *r, dedup *dd, unsigned long long n) {
    r->dd = dd;
    r->dval = eddy__mem_calloc((size_t)n, sizeof(*r->dval));
    if (!r->dval)
        return false;
    for (unsigned long long e = 0; e < n; e++) {
        r->ndedup++; /* forgotten on rollback, made or not */
        if (!eddy__mpubrec_prepare(r->c, &dd->rec, dd->keys, dd->klen, dd->ids[e], dd->idlen[e],
                                   dd->window, &r->dval[e]))
            return false;
    }
    return true;
}

static bool append(run *r, eddy__mstream *s, eddy__mid id, size_t nfv) {
    eddy__mundo u = eddy__mundo_snapshot(s);
    if (eddy__mstream_append(s, id, (int)(nfv / 2), r->fv, r->fvlen) != 0)
        return false;
    r->undo[r->nundo++] = u;
    return true;
}

bool eddy__mfn_auto_id(eddy__mctx *c, const eddy__mstream *s, eddy__mid *id) {
    uint64_t ms = (uint64_t)c->now_ms;
    if (ms < c->eng->last_id_ms)
        ms = c->eng->last_id_ms;
    c->eng->last_id_ms = ms;
    if (ms > s->last_id.ms) {
        *id = (eddy__mid){ms, 0};
        return true;
    }
    *id = s->last_id;
    return eddy__mid_incr(id);
}

static void append_fn(eddy__mctx *c, int nkeys, const char *const *keys, const size_t *klen,
                      int nargs, const char *const *args, const size_t *alen, dedup *dd) {
    /* ---- checks, in the Lua's order ---- */
    if (nkeys != 3 && nkeys != 5) {
        fail(c, "wrong number of keys");
        return;
    }
    for (int a = 0; a < nkeys; a++)
        for (int b = a + 1; b < nkeys; b++)
            if (klen[a] == klen[b] && memcmp(keys[a], keys[b], klen[a]) == 0) {
                fail(c, "keys must differ");
                return;
            }
    unsigned long long expected = 0;
    bool any = nargs >= 1 && alen[0] == 2 && memcmp(args[0], "-1", 2) == 0;
    if (!any && !eddy__mfn_count(nargs, args, alen, 0, &expected)) {
        fail(c, "bad expected version");
        return;
    }
    if (nargs < 2 || alen[1] == 0) {
        fail(c, "bad stream id");
        return;
    }
    unsigned long long n;
    if (!eddy__mfn_count(nargs, args, alen, 2, &n) || n < 1) {
        fail(c, "bad event count");
        return;
    }
    long long i = 3; /* 0-based: the Lua's args[4] */
    size_t kmax = 0;
    for (unsigned long long e = 0; e < n; e++) {
        unsigned long long k;
        if (!eddy__mfn_count(nargs, args, alen, i, &k) || k < 2 || k % 2 == 1 || k > MAX_FIELDS ||
            (i + 1) + (long long)k > nargs - 2) {
            fail(c, "bad field count");
            return;
        }
        if (k > kmax)
            kmax = k;
        i += 1 + (long long)k;
    }
    if (nargs != i + 2) {
        fail(c, "wrong number of arguments");
        return;
    }
    const char *subject = args[i];
    size_t subject_len = alen[i];
    if ((nkeys == 5) != (subject_len > 0)) {
        fail(c, "publish subject and keys disagree");
        return;
    }
    unsigned long long maxlen;
    if (!eddy__mfn_count(nargs, args, alen, i + 1, &maxlen)) {
        fail(c, "bad maxlen");
        return;
    }
    static const eddy__mtype want[NKEYS] = {EDDY__MT_STREAM, EDDY__MT_STREAM, EDDY__MT_STRING,
                                            EDDY__MT_STREAM, EDDY__MT_SET};
    run r = {.c = c, .nkeys = nkeys};
    for (int k = 0; k < nkeys; k++) {
        r.obj[k] = eddy__mkey_find(c, keys[k], klen[k]);
        if (r.obj[k] && r.obj[k]->type != want[k]) {
            eddy__mctx_err_wrongtype(c);
            return;
        }
    }
    if (dd && dedup_settled(c, dd, n))
        return;
    unsigned long long version = r.obj[K_STREAM] ? r.obj[K_STREAM]->v.stream->last_id.ms : 0;
    unsigned long long position = r.obj[K_ALL] ? r.obj[K_ALL]->v.stream->last_id.ms : 0;
    if (version > MAX_COUNT || position > MAX_COUNT) {
        fail(c, "stream id out of range");
        return;
    }
    if (r.obj[K_POS]) {
        const char *v = r.obj[K_POS]->v.str.ptr;
        size_t vlen = r.obj[K_POS]->v.str.len;
        unsigned long long counter;
        if (!eddy__mfn_count(1, &v, &vlen, 0, &counter)) {
            fail(c, "position counter is not a count");
            return;
        }
        if (counter > position)
            position = counter;
    }
    if (!any && expected != version) {
        eddy__mctx_errorf(c, "VERSIONCONFLICT %llu", version);
        return;
    }
    if (version + n > MAX_COUNT || position + n > MAX_COUNT) {
        fail(c, "version or position out of range");
        return;
    }

    /* ---- everything that can fail, undoably. n passed the loop above, so each event has at
     * least three arguments and the allocations are bounded by the command's size. ---- */
    char num[3][24];
    int counter_len = snprintf(num[0], sizeof(num[0]), "%llu", position + n);
    r.counter = eddy__mem_memdup(num[0], (size_t)counter_len);
    r.undo = eddy__mem_malloc(sizeof(*r.undo) * (size_t)n * (nkeys == 5 ? 3 : 2));
    r.fv = eddy__mem_malloc(sizeof(*r.fv) * (kmax + 6));
    r.fvlen = eddy__mem_malloc(sizeof(*r.fvlen) * (kmax + 6));
    bool ok = r.counter && r.undo && r.fv && r.fvlen && (!dd || dedup_prepare(&r, dd, n));
    for (int k = 0; ok && k < nkeys; k++) {
        if (r.obj[k])
            continue;
        ok = (r.obj[k] = eddy__mkey_add(c, keys[k], klen[k], want[k])) != NULL;
        r.created[k] = ok;
    }
    eddy__mstream *subject_stream = ok && nkeys == 5 ? r.obj[K_SUBJECT]->v.stream : NULL;
    long long at = 3;
    for (unsigned long long e = 0; ok && e < n; e++) {
        unsigned long long kk = 0;
        eddy__mfn_count(nargs, args, alen, at, &kk); /* checked above */
        size_t k = (size_t)kk;
        memcpy(r.fv, &args[at + 1], k * sizeof(*r.fv));
        memcpy(r.fvlen, &alen[at + 1], k * sizeof(*r.fvlen));
        unsigned long long v = version + e + 1, p = position + e + 1;
        int vl = snprintf(num[1], sizeof(num[1]), "%llu", v);
        int pl = snprintf(num[2], sizeof(num[2]), "%llu", p);
        const char *meta[6] = {"_stream", args[1], "_version", num[1], "_position", num[2]};
        size_t metalen[6] = {7, alen[1], 8, (size_t)vl, 9, (size_t)pl};
        memcpy(r.fv + k, meta, sizeof(meta));
        memcpy(r.fvlen + k, metalen, sizeof(metalen));
        ok = append(&r, r.obj[K_ALL]->v.stream, (eddy__mid){p, 0}, k + 6) &&
             append(&r, r.obj[K_STREAM]->v.stream, (eddy__mid){v, 0}, k + 6);
        if (ok && subject_stream) {
            eddy__mid id;
            if (!eddy__mfn_auto_id(c, subject_stream, &id)) {
                rollback(&r);
                run_free(&r);
                eddy__mctx_error(c, "ERR The stream has exhausted the last possible ID, unable "
                                    "to add more items");
                return;
            }
            ok = append(&r, subject_stream, id, k + 6);
            if (ok && dd)
                r.dval[e]->len =
                    (size_t)snprintf(r.dval[e]->data, EDDY__MPUBREC_VALUE_MAX, "%llu-%llu %llu",
                                     (unsigned long long)id.ms, (unsigned long long)id.seq, v);
        }
        at += 1 + (long long)k;
    }
    /* Last, as nothing after it can fail: a member it adds is never taken back. */
    if (ok && nkeys == 5)
        ok = eddy__mdict_add(&r.obj[K_SUBJECTS]->v.set, subject, subject_len, NULL, NULL) >= 0;
    if (!ok) {
        rollback(&r);
        run_free(&r);
        eddy__mctx_oom(c);
        return;
    }

    /* ---- what cannot fail ---- */
    if (subject_stream && maxlen > 0) {
        eddy__mtrim trim = {.strategy = EDDY__TRIM_MAXLEN,
                            .maxlen = (long long)maxlen,
                            .approx = true,
                            .limit = 10000}; /* XTRIM's default bound for "~" */
        eddy__mstream_trim(subject_stream, &trim);
    }
    eddy__mobj *pos = r.obj[K_POS];
    eddy__mem_free(pos->v.str.ptr);
    pos->v.str.ptr = r.counter;
    pos->v.str.len = (size_t)counter_len;
    r.counter = NULL;
    eddy__mkey_set_expire(c->eng, pos, -1); /* SET drops a TTL; removing one never fails */
    if (dd)
        eddy__mpubrec_close(c, &dd->rec, true, dd->window);
    c->dirty = true;
    eddy__mresp_int(c->out, (long long)(version + n));
    run_free(&r);
}

void eddy__mfn_eddy_append(eddy__mctx *c, int nkeys, const char *const *keys, const size_t *klen,
                           int nargs, const char *const *args, const size_t *alen) {
    append_fn(c, nkeys, keys, klen, nargs, args, alen, NULL);
}

void eddy__mfn_eddy_append_dedup(eddy__mctx *c, int nkeys, const char *const *keys,
                                 const size_t *klen, int nargs, const char *const *args,
                                 const size_t *alen) {
    /* keys: eddy_append's 5 then the subject's record (2); arguments: eddy_append's, the window,
     * then each event's id */
    unsigned long long n;
    if (nkeys != 7 || !eddy__mfn_count(nargs, args, alen, 2, &n) || n < 1 ||
        n >= (unsigned long long)nargs) {
        fail(c, "wrong number of keys or arguments");
        return;
    }
    int w = nargs - (int)n - 1;
    dedup dd = {0, keys + 5, klen + 5, args + w + 1, alen + w + 1, {0}};
    if (!eddy__mfn_count(nargs, args, alen, w, &dd.window) || dd.window < 1) {
        fail(c, "bad dedup window");
        return;
    }
    for (unsigned long long e = 0; e < n; e++)
        if (dd.idlen[e] == 0) {
            fail(c, "bad event id");
            return;
        }
    append_fn(c, 5, keys, klen, w, args, alen, &dd);
}
