/* SPDX-License-Identifier: BSD-3-Clause */
/* The function library's read model commit (eddy_feed_config.writes), run natively by the memory
 * engine: the same checks in the same order with the same replies as the Lua in
 * src/link/library.c, and the same resulting keys. tests/integration/test_model_fn.c runs both
 * (the Lua on a real server) and compares them.
 *
 * Keys: the model's position (a string), its versions (a hash: stream id -> the last version
 * committed), its registry (a hash: each key of the model -> "hash" or "set"), then the model's
 * keys. Arguments: the mode ("page" or "live"), the number of events n, then per event its
 * stream id, version and store position, its number of writes w and w writes (an operation,
 * the 1-based index k of its key, keys[k + 2] here, and its arguments: hset field value, hdel
 * field, hincr field by, sadd member, srem member, del). An event whose version is at or below
 * its stream's committed one (before the call or earlier in it) is skipped; the others' writes
 * run in order, each setting its stream's version, the registry following each key, and a
 * page's position becomes its last event's when that is higher. Reply: the number of events
 * applied.
 *
 * It runs under the engine lock like every command, so it is atomic. Unlike the Lua (a Redis
 * function keeps what it wrote before an error), it is also all-or-nothing: when a write fails
 * midway (memory; an hincr of a field holding no integer, past 64 bits, or by an increment
 * that HINCRBY does not read as one; a key that an earlier write of the call made of the other
 * type, which only keys named twice can reach) nothing is left changed and the reply is
 * HINCRBY's or HSET's own error without the " script: ..." that Redis appends (out of memory:
 * the engine's OOM). The Lua keeps the writes made before such a failure.
 *
 * How a failure undoes (every key the call writes, the position and the registry included, is
 * tracked by name, and nothing below allocates once the writes are done):
 *  - adding a field or member to a key that existed, or replacing a field's value, is done in
 *    place and logged; undone in reverse (the field deleted, or its old value put back);
 *  - removing a field or member of a key that existed only records it as gone; it is removed
 *    once nothing can fail any more;
 *  - a key that did not exist, was deleted (del) or was left empty gets its new content built
 *    apart, which replaces the object's (or a new object's) at the end.
 * So a field removed and added again in one call keeps its place in the hash, where Redis
 * moves it to the end; hash order is not part of Redis's contract (it is not kept past 128
 * fields). */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "memory/function.h"

static void fail(eddy__mctx *c, const char *why) {
    eddy__mctx_errorf(c, "ERR eddy_model: %s", why);
}

/* The Lua's MARGS and MKIND. */
typedef enum { OP_HSET, OP_HDEL, OP_HINCR, OP_SADD, OP_SREM, OP_DEL, OP_NONE } op_kind;
static const struct {
    const char *name;
    int nargs;
    int kind; /* the type the key must have (K_HASH, K_SET), K_NONE for del */
} ops[] = {{"hset", 2, 2}, {"hdel", 1, 2}, {"hincr", 2, 2},
           {"sadd", 1, 3}, {"srem", 1, 3}, {"del", 0, 0}};

/* What TYPE says, as the Lua's kind[]. */
enum { K_NONE, K_STRING, K_HASH, K_SET, K_OTHER };

static op_kind op_of(int nargs, const char *const *args, const size_t *alen, long long i) {
    if (i < 0 || i >= nargs)
        return OP_NONE;
    for (int o = 0; o < OP_NONE; o++)
        if (alen[i] == strlen(ops[o].name) && memcmp(args[i], ops[o].name, alen[i]) == 0)
            return (op_kind)o;
    return OP_NONE;
}

/* The Lua's '^%-?%d+$'. */
static bool int_shaped(const char *s, size_t len) {
    size_t i = len > 0 && s[0] == '-' ? 1 : 0;
    if (i == len)
        return false;
    for (; i < len; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    return true;
}

/* A key the call writes, once per name. */
typedef struct tkey {
    const char *key;
    size_t klen;
    eddy__mobj *o; /* the object at the start (NULL: none), or the one made at the end */
    bool created;  /* o made at the end by this call */
    /* fresh: the key's content is `val` (of `type`), which replaces o's at the end: a key that
     * did not exist, was deleted or left empty. Else it is o's, less the fields in `gone`. */
    bool fresh;
    eddy__mtype type;
    eddy__mdict val;  /* field -> eddy__mblob*, or member -> NULL */
    eddy__mdict gone; /* o's fields or members removed by this call */
    char *str;        /* type STRING (the position): the value */
    size_t slen;
} tkey;

/* A change made in place to a key that existed. */
typedef struct change {
    tkey *t;
    const char *f; /* the field or member (an argument of the call) */
    size_t flen;
    bool added;       /* else the value replaced */
    eddy__mblob *old; /* ... this one */
} change;

typedef enum { F_OK, F_OOM, F_WRONGTYPE, F_NOTINT, F_HASHNOTINT, F_OVERFLOW } failure;

typedef struct model_run {
    eddy__mctx *c;
    tkey *t;
    size_t nt;
    tkey **of; /* per key index */
    change *log;
    size_t nlog, caplog;
} model_run;

static void free_val(void *v) { eddy__mem_free(v); }

static eddy__mdict *obj_dict(eddy__mobj *o) {
    return o->type == EDDY__MT_SET ? &o->v.set : &o->v.hash;
}

static eddy__mtype view_type(const tkey *t) { return t->fresh ? t->type : t->o->type; }

/* Whether the key exists (Redis's EXISTS) as the call has left it so far. */
static bool view_exists(const tkey *t) {
    if (view_type(t) == EDDY__MT_STRING)
        return t->fresh ? t->str != NULL : true;
    if (t->fresh)
        return eddy__mdict_size(&t->val) > 0;
    return eddy__mdict_size(obj_dict(t->o)) > eddy__mdict_size(&t->gone);
}

/* The field's entry as the call has left it so far, or NULL. */
static eddy__mdict_entry *view_find(const tkey *t, const char *f, size_t flen) {
    if (t->fresh)
        return eddy__mdict_find(&t->val, f, flen);
    eddy__mdict_entry *e = eddy__mdict_find(obj_dict(t->o), f, flen);
    return e && !eddy__mdict_find(&t->gone, f, flen) ? e : NULL;
}

/* The key's content dropped (DEL, or left empty): from now on it is built apart. */
static void go_fresh(tkey *t) {
    if (t->fresh) {
        eddy__mdict_clear(&t->val, free_val);
        return;
    }
    eddy__mdict_clear(&t->gone, NULL);
    t->fresh = true;
    t->type = t->o->type;
    eddy__mdict_init(&t->val);
}

/* HSET key f v (v non-NULL) or SADD key f. */
static failure put(model_run *r, tkey *t, const char *f, size_t flen, const char *v, size_t vlen) {
    eddy__mtype type = v ? EDDY__MT_HASH : EDDY__MT_SET;
    if (view_exists(t) && view_type(t) != type)
        return F_WRONGTYPE;
    if (t->fresh)
        t->type = type; /* the key is empty, or of this type already */
    else if (r->nlog == r->caplog) {
        size_t ncap = r->caplog ? r->caplog * 2 : 8;
        change *log = eddy__mem_realloc(r->log, ncap * sizeof(*log));
        if (!log)
            return F_OOM;
        r->log = log;
        r->caplog = ncap;
    }
    eddy__mblob *b = NULL;
    if (v && !(b = eddy__mblob_new(v, vlen)))
        return F_OOM;
    eddy__mdict_entry *e = NULL;
    int added = eddy__mdict_add(t->fresh ? &t->val : obj_dict(t->o), f, flen, b, &e);
    if (added < 0) {
        eddy__mem_free(b);
        return F_OOM;
    }
    if (t->fresh) {
        if (added == 0) {
            eddy__mem_free(e->val);
            e->val = b;
        }
        return F_OK;
    }
    if (added > 0) {
        r->log[r->nlog++] = (change){t, f, flen, true, NULL};
        return F_OK;
    }
    if (b) {
        r->log[r->nlog++] = (change){t, f, flen, false, e->val};
        e->val = b;
    }
    eddy__mdict_del(&t->gone, f, flen, NULL); /* there again, if it was gone */
    return F_OK;
}

/* HDEL key f or SREM key f. */
static failure drop(tkey *t, eddy__mtype type, const char *f, size_t flen) {
    if (!view_exists(t))
        return F_OK;
    if (view_type(t) != type)
        return F_WRONGTYPE;
    if (t->fresh) {
        void *val = NULL;
        if (eddy__mdict_del(&t->val, f, flen, &val))
            eddy__mem_free(val);
        return F_OK;
    }
    if (!view_find(t, f, flen))
        return F_OK;
    if (eddy__mdict_add(&t->gone, f, flen, NULL, NULL) < 0)
        return F_OOM;
    if (!view_exists(t))
        go_fresh(t);
    return F_OK;
}

/* HINCRBY key f by, with Redis's checks in its order. */
static failure incr(model_run *r, tkey *t, const char *f, size_t flen, const char *by,
                    size_t bylen) {
    long long inc, old = 0;
    if (!eddy__mparse_ll(by, bylen, &inc))
        return F_NOTINT;
    if (view_exists(t) && view_type(t) != EDDY__MT_HASH)
        return F_WRONGTYPE;
    const eddy__mdict_entry *e = view_exists(t) ? view_find(t, f, flen) : NULL;
    if (e) {
        const eddy__mblob *v = e->val;
        if (!eddy__mparse_ll(v->data, v->len, &old))
            return F_HASHNOTINT;
    }
    if ((inc < 0 && old < 0 && inc < LLONG_MIN - old) ||
        (inc > 0 && old > 0 && inc > LLONG_MAX - old))
        return F_OVERFLOW;
    char text[24];
    int n = snprintf(text, sizeof(text), "%lld", old + inc);
    return put(r, t, f, flen, text, (size_t)n);
}

/* Undoes every write, newest first, and forgets what was built apart. */
static void rollback(model_run *r) {
    while (r->nlog) {
        change *ch = &r->log[--r->nlog];
        eddy__mdict *d = obj_dict(ch->t->o);
        if (ch->added) {
            void *val = NULL;
            eddy__mdict_del(d, ch->f, ch->flen, &val);
            eddy__mem_free(val);
        } else {
            eddy__mdict_entry *e = eddy__mdict_find(d, ch->f, ch->flen);
            eddy__mem_free(e->val);
            e->val = ch->old;
        }
    }
    for (size_t i = 0; i < r->nt; i++) {
        tkey *t = &r->t[i];
        eddy__mdict_clear(&t->val, free_val);
        eddy__mdict_clear(&t->gone, NULL);
        eddy__mem_free(t->str);
        if (t->created)
            eddy__mkey_delete(r->c, t->o);
    }
}

/* Puts every change in place; cannot fail. */
static void settle(model_run *r) {
    for (size_t i = 0; i < r->nlog; i++)
        eddy__mem_free(r->log[i].old);
    for (size_t i = 0; i < r->nt; i++) {
        tkey *t = &r->t[i];
        if (!t->fresh) {
            eddy__mdict *d = obj_dict(t->o);
            for (size_t g = 0; g < t->gone.nent; g++) {
                void *val = NULL;
                if (t->gone.ent[g].key &&
                    eddy__mdict_del(d, t->gone.ent[g].key, t->gone.ent[g].klen, &val))
                    eddy__mem_free(val);
            }
            eddy__mdict_clear(&t->gone, NULL);
            continue;
        }
        if (!view_exists(t)) {
            eddy__mdict_clear(&t->val, free_val);
            if (t->o)
                eddy__mkey_delete(r->c, t->o);
            continue;
        }
        /* a new key (made empty by mkey_add) or one whose content went: no expiry either */
        eddy__mkey_make_string(t->o);
        eddy__mkey_set_expire(r->c->eng, t->o, -1); /* a removal: cannot fail */
        t->o->type = t->type;
        if (t->type == EDDY__MT_STRING) {
            t->o->v.str.ptr = t->str;
            t->o->v.str.len = t->slen;
        } else if (t->type == EDDY__MT_SET) {
            t->o->v.set = t->val;
        } else {
            t->o->v.hash = t->val;
        }
    }
}

/* The writes of the events that run (run[e]), each with its stream's version, then a page's
 * position SET (set_pos). */
static failure apply(model_run *r, int nargs, const char *const *args, const size_t *alen,
                     unsigned long long n, const bool *run_of, bool set_pos,
                     unsigned long long last) {
    long long j = 2;
    for (unsigned long long e = 0; e < n; e++) {
        unsigned long long w;
        eddy__mfn_count(nargs, args, alen, j + 3, &w);
        bool run = run_of[e];
        if (run) {
            failure why = put(r, r->of[1], args[j], alen[j], args[j + 1], alen[j + 1]);
            if (why != F_OK)
                return why;
        }
        j += 4;
        for (unsigned long long o = 0; o < w; o++) {
            op_kind op = op_of(nargs, args, alen, j);
            unsigned long long k;
            eddy__mfn_count(nargs, args, alen, j + 1, &k);
            tkey *t = r->of[k + 2], *reg = r->of[2];
            const char *f = ops[op].nargs ? args[j + 2] : NULL;
            size_t flen = ops[op].nargs ? alen[j + 2] : 0;
            failure why = F_OK;
            if (!run) {
            } else if (op == OP_HSET || op == OP_HINCR) {
                why = op == OP_HSET ? put(r, t, f, flen, args[j + 3], alen[j + 3])
                                    : incr(r, t, f, flen, args[j + 3], alen[j + 3]);
                if (why == F_OK)
                    why = put(r, reg, t->key, t->klen, "hash", 4);
            } else if (op == OP_SADD) {
                if ((why = put(r, t, f, flen, NULL, 0)) == F_OK)
                    why = put(r, reg, t->key, t->klen, "set", 3);
            } else if (op == OP_DEL) {
                go_fresh(t);
                why = drop(reg, EDDY__MT_HASH, t->key, t->klen);
            } else {
                why = drop(t, op == OP_HDEL ? EDDY__MT_HASH : EDDY__MT_SET, f, flen);
                if (why == F_OK && !view_exists(t))
                    why = drop(reg, EDDY__MT_HASH, t->key, t->klen);
            }
            if (why != F_OK)
                return why;
            j += 2 + ops[op].nargs;
        }
    }
    if (set_pos) { /* SET <position> <last>: over whatever the key holds */
        tkey *pt = r->of[0];
        char text[24];
        int len = snprintf(text, sizeof(text), "%llu", last);
        char *s = eddy__mem_memdup(text, (size_t)len);
        if (!s)
            return F_OOM;
        go_fresh(pt);
        pt->type = EDDY__MT_STRING;
        pt->str = s;
        pt->slen = (size_t)len;
    }
    /* the keys that come to exist, made now: the last that can fail */
    for (size_t i = 0; i < r->nt; i++) {
        tkey *t = &r->t[i];
        if (t->fresh && !t->o && view_exists(t)) {
            if (!(t->o = eddy__mkey_add(r->c, t->key, t->klen, t->type)))
                return F_OOM;
            t->created = true;
        }
    }
    return F_OK;
}

void eddy__mfn_eddy_model(eddy__mctx *c, int nkeys, const char *const *keys, const size_t *klen,
                          int nargs, const char *const *args, const size_t *alen) {
    unsigned long long n;
    if (nkeys < 3) {
        fail(c, "wrong number of keys");
        return;
    }
    bool page = nargs > 0 && alen[0] == 4 && memcmp(args[0], "page", 4) == 0;
    if (!page && !(nargs > 0 && alen[0] == 4 && memcmp(args[0], "live", 4) == 0)) {
        fail(c, "bad mode");
        return;
    }
    bool counted = eddy__mfn_count(nargs, args, alen, 1, &n);
    if (!counted || n < 1) {
        fail(c, "bad event count");
        return;
    }
    unsigned char *kind = eddy__mem_malloc((size_t)nkeys);
    if (!kind) {
        eddy__mctx_oom(c);
        return;
    }
    for (int k = 0; k < nkeys; k++) {
        eddy__mobj *o = eddy__mkey_find(c, keys[k], klen[k]);
        int t = !o                           ? K_NONE
                : o->type == EDDY__MT_STRING ? K_STRING
                : o->type == EDDY__MT_HASH   ? K_HASH
                : o->type == EDDY__MT_SET    ? K_SET
                                             : K_OTHER;
        bool ok = t == K_NONE || (k == 0 && t == K_STRING) || (k <= 2 && k > 0 && t == K_HASH) ||
                  (k > 2 && (t == K_HASH || t == K_SET));
        if (!ok) {
            eddy__mem_free(kind);
            eddy__mctx_err_wrongtype(c);
            return;
        }
        kind[k] = (unsigned char)t;
    }
    unsigned long long stored = 0;
    if (kind[0] == K_STRING) {
        eddy__mobj *o = eddy__mkey_find(c, keys[0], klen[0]);
        const char *s = o->v.str.ptr ? o->v.str.ptr : "";
        if (!eddy__mfn_count(1, &s, &o->v.str.len, 0, &stored)) {
            eddy__mem_free(kind);
            fail(c, "bad stored position");
            return;
        }
    }
    const char *bad = NULL;
    bool wrongtype = false, oom = false;
    long long j = 2; /* 0-based: the Lua's args[3] */
    unsigned long long last = 0, applied = 0;
    /* Each stream's version as the call leaves it (the Lua's ver table). */
    eddy__mobj *vo = kind[1] == K_HASH ? eddy__mkey_find(c, keys[1], klen[1]) : NULL;
    eddy__mdict ver;
    eddy__mdict_init(&ver);
    bool *run = eddy__mem_calloc(n < (unsigned long long)nargs ? (size_t)n : (size_t)nargs + 1,
                                 sizeof(bool));
    if (!run)
        oom = true;
    for (unsigned long long e = 0; !oom && !bad && !wrongtype && e < n; e++) {
        unsigned long long v, pos, w;
        if (j >= nargs || alen[j] == 0 || !eddy__mfn_count(nargs, args, alen, j + 1, &v) || v < 1 ||
            !eddy__mfn_count(nargs, args, alen, j + 2, &pos) || pos < 1 ||
            !eddy__mfn_count(nargs, args, alen, j + 3, &w) || (page && pos <= last)) {
            bad = "bad event";
            break;
        }
        last = pos;
        eddy__mdict_entry *ve = eddy__mdict_find(&ver, args[j], alen[j]);
        if (!ve) {
            unsigned long long have = 0;
            eddy__mdict_entry *he = vo ? eddy__mdict_find(&vo->v.hash, args[j], alen[j]) : NULL;
            if (he) {
                const eddy__mblob *b = he->val;
                const char *hs = b->data;
                if (!eddy__mfn_count(1, &hs, &b->len, 0, &have)) {
                    bad = "bad stored version";
                    break;
                }
            }
            if (eddy__mdict_add(&ver, args[j], alen[j], (void *)(uintptr_t)have, &ve) < 0) {
                oom = true;
                break;
            }
        }
        run[e] = v > (unsigned long long)(uintptr_t)ve->val;
        if (run[e])
            ve->val = (void *)(uintptr_t)v;
        applied += run[e];
        bool runs = run[e];
        j += 4;
        for (unsigned long long o = 0; o < w; o++) {
            op_kind op = op_of(nargs, args, alen, j);
            unsigned long long k;
            if (op == OP_NONE || !eddy__mfn_count(nargs, args, alen, j + 1, &k) || k < 1 ||
                k + 3 > (unsigned long long)nkeys || j + 1 + ops[op].nargs >= nargs) {
                bad = "bad write";
                break;
            }
            if (op == OP_HINCR && (alen[j + 3] > 20 || !int_shaped(args[j + 3], alen[j + 3]))) {
                bad = "bad increment";
                break;
            }
            if (runs) {
                int want = ops[op].kind;
                unsigned char *at = &kind[k + 2];
                if (op == OP_DEL)
                    *at = K_NONE;
                else if (*at != K_NONE && *at != want) {
                    wrongtype = true;
                    break;
                } else if (op != OP_HDEL && op != OP_SREM)
                    *at = (unsigned char)want;
            }
            j += 2 + ops[op].nargs;
        }
    }
    eddy__mem_free(kind);
    eddy__mdict_clear(&ver, NULL);
    if (oom) {
        eddy__mem_free(run);
        eddy__mctx_oom(c);
        return;
    }
    if (bad || wrongtype || j != nargs)
        eddy__mem_free(run);
    if (bad) {
        fail(c, bad);
        return;
    }
    if (wrongtype) {
        eddy__mctx_err_wrongtype(c);
        return;
    }
    if (j != nargs) {
        fail(c, "wrong number of arguments");
        return;
    }
    bool set_pos = page && last > stored;
    if (applied == 0 && !set_pos) { /* every event committed before: nothing to write */
        eddy__mem_free(run);
        eddy__mresp_int(c->out, (long long)applied);
        return;
    }

    /* ---- the writes, undoably ---- */
    model_run r = {.c = c};
    r.t = eddy__mem_calloc((size_t)nkeys, sizeof(*r.t));
    r.of = eddy__mem_calloc((size_t)nkeys, sizeof(*r.of));
    eddy__mdict names;
    eddy__mdict_init(&names);
    failure why = r.t && r.of ? F_OK : F_OOM;
    for (int k = 0; why == F_OK && k < nkeys; k++) {
        eddy__mdict_entry *e = NULL;
        int added = eddy__mdict_add(&names, keys[k], klen[k], NULL, &e);
        if (added < 0) {
            why = F_OOM;
        } else if (added == 0) {
            r.of[k] = &r.t[(size_t)(uintptr_t)e->val];
        } else {
            e->val = (void *)(uintptr_t)r.nt;
            tkey *t = &r.t[r.nt++];
            t->key = keys[k];
            t->klen = klen[k];
            t->o = eddy__mkey_find(c, keys[k], klen[k]);
            t->fresh = !t->o;
            r.of[k] = t;
        }
    }
    eddy__mdict_clear(&names, NULL);
    if (why == F_OK)
        why = apply(&r, nargs, args, alen, n, run, set_pos, last);
    eddy__mem_free(run);
    if (why != F_OK) {
        if (r.t && r.of)
            rollback(&r);
        eddy__mem_free(r.t);
        eddy__mem_free(r.of);
        eddy__mem_free(r.log);
        if (why == F_WRONGTYPE)
            eddy__mctx_err_wrongtype(c);
        else if (why == F_NOTINT)
            eddy__mctx_err_notint(c);
        else if (why == F_HASHNOTINT)
            eddy__mctx_error(c, "ERR hash value is not an integer");
        else if (why == F_OVERFLOW)
            eddy__mctx_error(c, "ERR increment or decrement would overflow");
        else
            eddy__mctx_oom(c);
        return;
    }
    settle(&r);
    eddy__mem_free(r.t);
    eddy__mem_free(r.of);
    eddy__mem_free(r.log);
    /* several writes: whatever they wrote wakes every waiter */
    c->appended = NULL;
    c->other_write = true;
    c->dirty = true;
    eddy__mresp_int(c->out, (long long)applied);
}
