/* SPDX-License-Identifier: BSD-3-Clause */
/* The function library's deduplicating publish, run natively by the memory engine: the same
 * checks in the same order with the same replies as the Lua in src/link/library.c, and the subject's
 * dedup record (function.h) that it and the deduplicated append keep.
 *
 * An id recorded within the window (the value the entry id of an earlier publish, or
 * "<entry id> <version>" from an append with publish) answers with that entry id and writes
 * nothing but the pruning. Otherwise the entry is added exactly as XADD adds it (the XADD
 * handler runs on a context whose arguments are built here) and the id recorded with the
 * entry id. All-or-nothing when memory runs out: the record's field, its time and its value's
 * room exist before the entry is added, and are removed again if adding fails. */
#include <stdio.h>
#include <string.h>

#include "memory/function.h"

/* ---- the dedup record ----------------------------------------------------------------------- */

bool eddy__mpubrec_open(eddy__mctx *c, const char *const *keys, const size_t *klen,
                        eddy__mpubrec *r) {
    *r = (eddy__mpubrec){0};
    bool wrongtype;
    r->ids = eddy__mkey_find_typed(c, keys[0], klen[0], EDDY__MT_HASH, &wrongtype);
    if (wrongtype)
        return false;
    r->exp = eddy__mkey_find_typed(c, keys[1], klen[1], EDDY__MT_ZSET, &wrongtype);
    return !wrongtype;
}

static void forget_field(const char *member, size_t len, void *user) {
    eddy__mpubrec *r = user;
    void *val = NULL;
    if (r->ids && eddy__mdict_del(&r->ids->v.hash, member, len, &val))
        eddy__mem_free(val);
}

/* Deletes a key left empty. */
static void drop_empty(eddy__mctx *c, eddy__mpubrec *r) {
    if (r->ids && eddy__mdict_size(&r->ids->v.hash) == 0) {
        eddy__mkey_delete(c, r->ids);
        r->ids = NULL;
    }
    if (r->exp && eddy__mzset_card(r->exp->v.zset) == 0) {
        eddy__mkey_delete(c, r->exp);
        r->exp = NULL;
    }
}

void eddy__mpubrec_prune(eddy__mctx *c, eddy__mpubrec *r) {
    if (!r->exp)
        return;
    if (eddy__mzset_pop_upto(r->exp->v.zset, (double)c->now_ms, EDDY__MPUBREC_PRUNE, forget_field,
                             r) > 0)
        c->dirty = true;
    drop_empty(c, r);
}

const eddy__mblob *eddy__mpubrec_first(eddy__mctx *c, const eddy__mpubrec *r, const char *id,
                                       size_t len) {
    double at;
    if (!r->exp || !r->ids || !eddy__mzset_score(r->exp->v.zset, id, len, &at) ||
        !(at > (double)c->now_ms))
        return NULL;
    eddy__mdict_entry *e = eddy__mdict_find(&r->ids->v.hash, id, len);
    return e ? e->val : NULL;
}

bool eddy__mpubrec_prepare(eddy__mctx *c, eddy__mpubrec *r, const char *const *keys,
                           const size_t *klen, const char *id, size_t len,
                           unsigned long long window, eddy__mblob **value) {
    *value = NULL;
    for (int k = 0; k < 2; k++) {
        eddy__mobj **o = k ? &r->exp : &r->ids;
        if (*o)
            continue;
        if (!(*o = eddy__mkey_add(c, keys[k], klen[k], k ? EDDY__MT_ZSET : EDDY__MT_HASH)))
            return false;
        *(k ? &r->exp_new : &r->ids_new) = true;
        if (eddy__mkey_set_expire(c->eng, *o, c->now_ms + (long long)window) != 0)
            return false;
    }
    eddy__mblob *v = eddy__mem_malloc(sizeof(*v) + EDDY__MPUBREC_VALUE_MAX);
    if (!v)
        return false;
    v->len = 0;
    eddy__mdict_entry *e = NULL;
    int added = eddy__mdict_add(&r->ids->v.hash, id, len, v, &e);
    if (added < 0) {
        eddy__mem_free(v);
        return false;
    }
    if (added == 0) { /* an id whose time passed, not pruned yet */
        eddy__mem_free(e->val);
        e->val = v;
    }
    *value = v;
    return eddy__mzset_put(r->exp->v.zset, (double)(c->now_ms + (long long)window), id, len) == 0;
}

void eddy__mpubrec_forget(eddy__mctx *c, eddy__mpubrec *r, const char *id, size_t len) {
    (void)c;
    forget_field(id, len, r);
    if (r->exp)
        eddy__mzset_remove(r->exp->v.zset, id, len);
}

void eddy__mpubrec_close(eddy__mctx *c, eddy__mpubrec *r, bool keep, unsigned long long window) {
    drop_empty(c, r);
    if (!keep)
        return;
    /* A key created here has its expiry already; one that existed gets it now (it has one,
     * as every write sets it, so moving it allocates nothing). */
    if (r->ids && !r->ids_new)
        eddy__mkey_set_expire(c->eng, r->ids, c->now_ms + (long long)window);
    if (r->exp && !r->exp_new)
        eddy__mkey_set_expire(c->eng, r->exp, c->now_ms + (long long)window);
}

/* ---- the publish ---------------------------------------------------------------------------- */

static void fail(eddy__mctx *c, const char *why) {
    eddy__mctx_errorf(c, "ERR eddy_publish: %s", why);
}

/* Lua's isspace, for '%S'. */
static bool is_space(char ch) { return ch == ' ' || (ch >= '\t' && ch <= '\r'); }

/* The first publish's id: the value's leading run of non-space bytes (nil when empty). */
static void reply_first_id(eddy__mctx *c, const eddy__mblob *v) {
    size_t n = 0;
    while (n < v->len && !is_space(v->data[n]))
        n++;
    if (n)
        eddy__mresp_bulk(c->out, v->data, n);
    else
        eddy__mresp_nil(c->out);
}

void eddy__mfn_eddy_publish(eddy__mctx *c, int nkeys, const char *const *keys, const size_t *klen,
                            int nargs, const char *const *args, const size_t *alen) {
    if (nkeys != 3) {
        fail(c, "wrong number of keys");
        return;
    }
    unsigned long long window, maxlen;
    if (!eddy__mfn_count(nargs, args, alen, 0, &window) || window < 1) {
        fail(c, "bad dedup window");
        return;
    }
    if (!eddy__mfn_count(nargs, args, alen, 1, &maxlen)) {
        fail(c, "bad maxlen");
        return;
    }
    if (nargs < 5 || nargs % 2 == 0) {
        fail(c, "wrong number of arguments");
        return;
    }
    if (alen[2] == 0) {
        fail(c, "bad event id");
        return;
    }
    eddy__mobj *stream = eddy__mkey_find(c, keys[0], klen[0]);
    if (stream && stream->type != EDDY__MT_STREAM) {
        eddy__mctx_err_wrongtype(c);
        return;
    }
    eddy__mpubrec rec;
    if (!eddy__mpubrec_open(c, keys + 1, klen + 1, &rec))
        return;
    eddy__mpubrec_prune(c, &rec);
    const eddy__mblob *seen = eddy__mpubrec_first(c, &rec, args[2], alen[2]);
    if (seen) {
        reply_first_id(c, seen);
        return;
    }

    /* XADD <stream> [MAXLEN ~ <maxlen>] * <fields...> */
    int nfv = nargs - 3, argc = 3 + (maxlen ? 3 : 0) + nfv;
    const char **argv = eddy__mem_malloc(sizeof(*argv) * (size_t)argc);
    size_t *argvlen = eddy__mem_malloc(sizeof(*argvlen) * (size_t)argc);
    eddy__mblob *value = NULL;
    if (!argv || !argvlen ||
        !eddy__mpubrec_prepare(c, &rec, keys + 1, klen + 1, args[2], alen[2], window, &value)) {
        if (argv && argvlen)
            eddy__mpubrec_forget(c, &rec, args[2], alen[2]);
        eddy__mpubrec_close(c, &rec, false, window);
        eddy__mem_free(argv);
        eddy__mem_free(argvlen);
        eddy__mctx_oom(c);
        return;
    }
    int a = 0;
    argv[a] = "XADD", argvlen[a++] = 4;
    argv[a] = keys[0], argvlen[a++] = klen[0];
    if (maxlen) {
        argv[a] = "MAXLEN", argvlen[a++] = 6;
        argv[a] = "~", argvlen[a++] = 1;
        argv[a] = args[1], argvlen[a++] = alen[1];
    }
    argv[a] = "*", argvlen[a++] = 1;
    memcpy(&argv[a], &args[3], sizeof(*argv) * (size_t)nfv);
    memcpy(&argvlen[a], &alen[3], sizeof(*argvlen) * (size_t)nfv);

    eddy__mctx xadd = *c;
    xadd.argc = argc;
    xadd.argv = argv;
    xadd.argvlen = argvlen;
    xadd.appended = NULL;
    eddy__mcmd_xadd(&xadd); /* its reply (the id, or an error) is this call's */
    c->oom = xadd.oom;
    c->dirty = xadd.dirty || c->dirty;
    c->appended = xadd.appended;
    c->other_write = xadd.other_write;
    eddy__mem_free(argv);
    eddy__mem_free(argvlen);
    if (!xadd.appended) {
        eddy__mpubrec_forget(c, &rec, args[2], alen[2]);
        eddy__mpubrec_close(c, &rec, false, window);
        return;
    }
    eddy__mid id = xadd.appended->v.stream->last_id;
    int n = snprintf(value->data, EDDY__MPUBREC_VALUE_MAX, "%llu-%llu", (unsigned long long)id.ms,
                     (unsigned long long)id.seq);
    value->len = (size_t)n;
    eddy__mpubrec_close(c, &rec, true, window);
}
