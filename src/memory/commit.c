/* SPDX-License-Identifier: BSD-3-Clause */
/* The function library's commit of a transactional handler (eddy_delivery_emit), run natively by
 * the memory engine: the same checks in the same order with the same replies as the Lua in
 * src/link/library.c, and the same resulting keys. tests/integration/test_txn.c
 * (memory_and_redis_agree) runs both (the Lua on a real server) and compares them.
 *
 * Keys: the input's stream, the namespace's subject set, then each output's stream. Arguments:
 * the group, the input's entry id, the MAXLEN ~ bound (0: none), the number of outputs n, then
 * per output its subject, its field count k and its k fields. While the input is pending in the
 * group, every output is added as XADD <stream> [MAXLEN ~ <bound>] * <fields> adds it, its
 * subject added to the set, and the input acknowledged: reply 1. Once it is not pending,
 * nothing is written: reply 0.
 *
 * It runs under the engine lock like every command, so it is atomic. Unlike the Lua (a Redis
 * function keeps what it wrote before an error), it is also all-or-nothing, like eddy_append:
 * per output, in order, the entry is appended (creating its stream when missing) and the
 * subject added to the set (creating it when missing), and when anything fails midway (memory,
 * an output stream that cannot take another id, a key an earlier output made of the other
 * type) the appends are undone in reverse (undo.h), the subjects it added removed and the keys
 * it created deleted: the reply is the error (out of memory: the engine's OOM), the input stays
 * pending and no output is left behind, so its redelivery emits them once. Only then comes what
 * cannot fail or be undone: the acknowledgement (the pending entry dropped, which frees and
 * never allocates) and, with a bound, each output stream's "~" trim, in the outputs' order.
 * A "~" trim drops whole nodes from the head while the stream stays at or above the bound, so
 * trimming after all the appends leaves what XADD's trim after each does, except for a stream
 * that gets several outputs while more than XADD's LIMIT (10000 entries) over the bound. */
#include <string.h>

#include "memory/function.h"
#include "memory/undo.h"

static void fail(eddy__mctx *c, const char *why) {
    eddy__mctx_errorf(c, "ERR eddy_commit: %s", why);
}

/* The Lua's '^%d+%-%d+$'. */
static bool id_shaped(const char *s, size_t len) {
    size_t i = 0, a, b;
    for (a = 0; i < len && s[i] >= '0' && s[i] <= '9'; i++)
        a++;
    if (a == 0 || i == len || s[i++] != '-')
        return false;
    for (b = 0; i < len && s[i] >= '0' && s[i] <= '9'; i++)
        b++;
    return b > 0 && i == len;
}

/* What a commit wrote, to undo. */
typedef struct commit_run {
    eddy__mctx *c;
    eddy__mundo *undo; /* one per output appended, in order */
    size_t nundo;
    eddy__mobj **created; /* the keys it created, in order */
    size_t ncreated;
    eddy__mobj *set;    /* the subject set, once found or created */
    bool set_created;   /* ... by this call */
    const char **added; /* the subjects it added to a set that existed */
    size_t *addedlen;
    size_t nadded;
    const char **fv; /* an output's fields, for eddy__mstream_append */
    size_t *fvlen;
} commit_run;

/* Undoes every write, newest first. */
static void rollback(commit_run *r) {
    if (r->set && !r->set_created)
        while (r->nadded) {
            r->nadded--;
            eddy__mdict_del(&r->set->v.set, r->added[r->nadded], r->addedlen[r->nadded], NULL);
        }
    while (r->nundo)
        eddy__mundo_append(&r->undo[--r->nundo]);
    while (r->ncreated)
        eddy__mkey_delete(r->c, r->created[--r->ncreated]);
}

static void run_free(commit_run *r) {
    eddy__mem_free(r->undo);
    eddy__mem_free(r->created);
    eddy__mem_free(r->added);
    eddy__mem_free(r->addedlen);
    eddy__mem_free(r->fv);
    eddy__mem_free(r->fvlen);
}

/* Why a write failed. */
typedef enum { FAIL_OOM, FAIL_WRONGTYPE, FAIL_EXHAUSTED } failure;

/* The key, of the given type, created when missing (then remembered as created, and *created
 * set when given). NULL on failure: *why says which. */
static eddy__mobj *find_or_add(commit_run *r, const char *key, size_t klen, eddy__mtype type,
                               bool *created, failure *why) {
    eddy__mobj *o = eddy__mkey_find(r->c, key, klen);
    if (o && o->type != type) {
        *why = FAIL_WRONGTYPE; /* a key an earlier output made, of the other type */
        return NULL;
    }
    if (o)
        return o;
    if (!(o = eddy__mkey_add(r->c, key, klen, type))) {
        *why = FAIL_OOM;
        return NULL;
    }
    r->created[r->ncreated++] = o;
    if (created)
        *created = true;
    return o;
}

void eddy__mfn_eddy_commit(eddy__mctx *c, int nkeys, const char *const *keys, const size_t *klen,
                           int nargs, const char *const *args, const size_t *alen) {
    unsigned long long n, maxlen;
    if (!eddy__mfn_count(nargs, args, alen, 3, &n) || n < 1 || (unsigned long long)nkeys != n + 2) {
        fail(c, "wrong number of keys");
        return;
    }
    if (alen[0] == 0) {
        fail(c, "bad group");
        return;
    }
    if (alen[1] > 41 || !id_shaped(args[1], alen[1])) {
        fail(c, "bad entry id");
        return;
    }
    if (!eddy__mfn_count(nargs, args, alen, 2, &maxlen)) {
        fail(c, "bad maxlen");
        return;
    }
    long long j = 4; /* 0-based: the Lua's args[5] */
    size_t kmax = 0;
    for (unsigned long long e = 0; e < n; e++) {
        unsigned long long k;
        if (j >= nargs || alen[j] == 0 || !eddy__mfn_count(nargs, args, alen, j + 1, &k) || k < 2 ||
            k % 2 == 1 || k > 4000 || j + 1 + (long long)k >= nargs) {
            fail(c, "bad output");
            return;
        }
        if (k > kmax)
            kmax = (size_t)k;
        j += 2 + (long long)k;
    }
    if (j != nargs) {
        fail(c, "wrong number of arguments");
        return;
    }
    for (int k = 0; k < nkeys; k++) {
        eddy__mobj *o = eddy__mkey_find(c, keys[k], klen[k]);
        if (o && o->type != (k == 1 ? EDDY__MT_SET : EDDY__MT_STREAM)) {
            eddy__mctx_err_wrongtype(c);
            return;
        }
    }
    eddy__mobj *in = eddy__mkey_find(c, keys[0], klen[0]);
    eddy__mgroup *g = in ? eddy__mgroup_find(in->v.stream, args[0], alen[0]) : NULL;
    eddy__mid id;
    if (!g || !eddy__mparse_id(args[1], alen[1], &id, 0, true, NULL)) {
        eddy__mctx_error(c, "NOGROUP eddy_commit: no such stream or group");
        return;
    }
    eddy__mnack *nack = eddy__mgroup_pending(g, id);
    if (!nack) {
        eddy__mresp_int(c->out, 0);
        return;
    }
    /* XADD's check of its MAXLEN, the first of its that could fail */
    long long bound = 0;
    if (maxlen > 0 && !eddy__mparse_ll(args[2], alen[2], &bound)) {
        eddy__mctx_err_notint(c);
        return;
    }

    /* ---- everything that can fail, undoably: per output, XADD <stream> * <fields...> and
     * SADD <set> <subject> ---- */
    commit_run r = {.c = c};
    r.undo = eddy__mem_malloc(sizeof(*r.undo) * (size_t)n);
    r.created = eddy__mem_malloc(sizeof(*r.created) * ((size_t)n + 1));
    r.added = eddy__mem_malloc(sizeof(*r.added) * (size_t)n);
    r.addedlen = eddy__mem_malloc(sizeof(*r.addedlen) * (size_t)n);
    r.fv = eddy__mem_malloc(sizeof(*r.fv) * kmax);
    r.fvlen = eddy__mem_malloc(sizeof(*r.fvlen) * kmax);
    bool ok = r.undo && r.created && r.added && r.addedlen && r.fv && r.fvlen;
    failure why = FAIL_OOM;
    j = 4;
    for (unsigned long long e = 0; ok && e < n; e++) {
        unsigned long long k;
        eddy__mfn_count(nargs, args, alen, j + 1, &k); /* checked above */
        eddy__mobj *o = find_or_add(&r, keys[e + 2], klen[e + 2], EDDY__MT_STREAM, NULL, &why);
        eddy__mid nid;
        if (!o) {
            ok = false;
        } else if (!eddy__mfn_auto_id(c, o->v.stream, &nid)) {
            why = FAIL_EXHAUSTED;
            ok = false;
        } else {
            memcpy(r.fv, &args[j + 2], sizeof(*r.fv) * (size_t)k);
            memcpy(r.fvlen, &alen[j + 2], sizeof(*r.fvlen) * (size_t)k);
            eddy__mundo u = eddy__mundo_snapshot(o->v.stream);
            ok = eddy__mstream_append(o->v.stream, nid, (int)(k / 2), r.fv, r.fvlen) == 0;
            if (ok)
                r.undo[r.nundo++] = u;
        }
        if (ok && !r.set)
            ok = (r.set = find_or_add(&r, keys[1], klen[1], EDDY__MT_SET, &r.set_created, &why)) !=
                 NULL;
        if (ok) {
            int added = eddy__mdict_add(&r.set->v.set, args[j], alen[j], NULL, NULL);
            ok = added >= 0;
            if (added > 0 && !r.set_created) {
                r.added[r.nadded] = args[j];
                r.addedlen[r.nadded++] = alen[j];
            }
        }
        j += 2 + (long long)k;
    }
    if (!ok) {
        rollback(&r);
        run_free(&r);
        if (why == FAIL_WRONGTYPE)
            eddy__mctx_err_wrongtype(c);
        else if (why == FAIL_EXHAUSTED)
            eddy__mctx_error(c, "ERR The stream has exhausted the last possible ID, unable to "
                                "add more items");
        else
            eddy__mctx_oom(c);
        return;
    }

    /* ---- what cannot fail: XACK, then each output's MAXLEN ~ trim ---- */
    eddy__mnack_drop(g, nack);
    if (maxlen > 0) {
        eddy__mtrim trim = {.strategy = EDDY__TRIM_MAXLEN,
                            .maxlen = bound,
                            .approx = true,
                            .limit = 10000}; /* XADD's default bound for "~" */
        for (size_t i = 0; i < r.nundo; i++)
            eddy__mstream_trim(r.undo[i].s, &trim);
    }
    run_free(&r);
    /* several writes: whatever they wrote wakes every waiter */
    c->appended = NULL;
    c->other_write = true;
    c->dirty = true;
    eddy__mresp_int(c->out, 1);
}
