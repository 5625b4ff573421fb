/* SPDX-License-Identifier: BSD-3-Clause */
/* The keyspace: objects under keys, their expiry, and the commands that act on any key (DEL,
 * EXISTS, TYPE, EXPIRE family, FLUSHALL) plus PING and TIME.
 *
 * Invariants: an object is in engine->expires iff expire_at >= 0; a key whose time has passed
 * (now > expire_at, Redis's rule) is never visible: every command first removes the keys that
 * are due, so an abandoned inbox stream does not linger in memory, and lookups check again.
 * Aggregates (sets, hashes, sorted sets) are deleted when they become empty, as in Redis;
 * streams are not. */
#include <limits.h>
#include <string.h>
#include <time.h>

#include "memory/internal.h"

eddy__mblob *eddy__mblob_new(const void *data, size_t len) {
    eddy__mblob *b = eddy__mem_malloc(sizeof(*b) + len);
    if (!b)
        return NULL;
    b->len = len;
    if (len)
        memcpy(b->data, data, len);
    return b;
}

int eddy__mkey_expire_cmp(const void *a, const void *b) {
    const eddy__mobj *x = a, *y = b;
    if (x->expire_at != y->expire_at)
        return x->expire_at < y->expire_at ? -1 : 1;
    size_t n = x->klen < y->klen ? x->klen : y->klen;
    int r = memcmp(x->key, y->key, n);
    if (r)
        return r;
    return x->klen < y->klen ? -1 : x->klen > y->klen;
}

static void obj_free_value(eddy__mobj *o) {
    switch (o->type) {
    case EDDY__MT_STRING:
        eddy__mem_free(o->v.str.ptr);
        break;
    case EDDY__MT_SET:
        eddy__mdict_clear(&o->v.set, NULL);
        break;
    case EDDY__MT_HASH:
        eddy__mdict_clear(&o->v.hash, eddy__mem_free);
        break;
    case EDDY__MT_ZSET:
        eddy__mzset_free(o->v.zset);
        break;
    case EDDY__MT_STREAM:
        eddy__mstream_free(o->v.stream);
        break;
    }
}

static void obj_free(void *p) {
    obj_free_value(p);
    eddy__mem_free(p);
}

void eddy__mkey_make_string(eddy__mobj *o) {
    obj_free_value(o);
    o->type = EDDY__MT_STRING;
    o->v.str.ptr = NULL;
    o->v.str.len = 0;
}

static void obj_remove(eddy__mem_engine *eng, eddy__mobj *o) {
    if (o->expire_at >= 0)
        eddy__mskl_remove(&eng->expires, o);
    eddy__mdict_del(&eng->keys, o->key, o->klen, NULL); /* frees the key o->key points to */
    obj_free(o);
}

eddy__mobj *eddy__mkey_find(eddy__mctx *c, const char *key, size_t klen) {
    eddy__mdict_entry *e = eddy__mdict_find(&c->eng->keys, key, klen);
    if (!e)
        return NULL;
    eddy__mobj *o = e->val;
    if (o->expire_at >= 0 && c->now_ms > o->expire_at) {
        eddy__mkey_delete(c, o);
        return NULL;
    }
    return o;
}

eddy__mobj *eddy__mkey_find_typed(eddy__mctx *c, const char *key, size_t klen, eddy__mtype type,
                                  bool *wrongtype) {
    *wrongtype = false;
    eddy__mobj *o = eddy__mkey_find(c, key, klen);
    if (o && o->type != type) {
        eddy__mctx_err_wrongtype(c);
        *wrongtype = true;
        return NULL;
    }
    return o;
}

eddy__mobj *eddy__mkey_add(eddy__mctx *c, const char *key, size_t klen, eddy__mtype type) {
    eddy__mobj *o = eddy__mem_calloc(1, sizeof(*o));
    if (!o)
        return NULL;
    o->type = type;
    o->expire_at = -1;
    switch (type) {
    case EDDY__MT_STRING:
        break;
    case EDDY__MT_SET:
        eddy__mdict_init(&o->v.set);
        break;
    case EDDY__MT_HASH:
        eddy__mdict_init(&o->v.hash);
        break;
    case EDDY__MT_ZSET:
        o->v.zset = eddy__mzset_new();
        if (!o->v.zset)
            goto fail;
        break;
    case EDDY__MT_STREAM:
        o->v.stream = eddy__mstream_new();
        if (!o->v.stream)
            goto fail;
        break;
    }
    eddy__mdict_entry *e;
    if (eddy__mdict_add(&c->eng->keys, key, klen, o, &e) != 1)
        goto fail;
    o->key = e->key;
    o->klen = e->klen;
    c->dirty = true;
    return o;
fail:
    obj_free(o);
    return NULL;
}

void eddy__mkey_delete(eddy__mctx *c, eddy__mobj *o) {
    obj_remove(c->eng, o);
    c->dirty = true;
    c->other_write = true; /* a blocked read of this key must see it go */
}

int eddy__mkey_set_expire(eddy__mem_engine *eng, eddy__mobj *o, long long at) {
    if (at < 0) {
        if (o->expire_at >= 0)
            eddy__mskl_remove(&eng->expires, o);
        o->expire_at = -1;
        return 0;
    }
    if (o->expire_at >= 0) {
        eddy__mskl_node *n = eddy__mskl_unlink(&eng->expires, o);
        o->expire_at = at;
        eddy__mskl_relink(&eng->expires, n);
        return 0;
    }
    o->expire_at = at;
    if (eddy__mskl_insert(&eng->expires, o) != 0) {
        o->expire_at = -1;
        return -1;
    }
    return 0;
}

void eddy__mkey_expire_due(eddy__mctx *c) {
    eddy__mskl_node *n;
    while ((n = eddy__mskl_first(&c->eng->expires))) {
        eddy__mobj *o = n->item;
        if (o->expire_at >= c->now_ms)
            break;
        eddy__mkey_delete(c, o);
    }
}

void eddy__mkey_flush(eddy__mem_engine *eng) {
    eddy__mskl_clear(&eng->expires, NULL);
    eddy__mdict_clear(&eng->keys, obj_free);
}

/* ---- commands ----------------------------------------------------------------------------- */

void eddy__mcmd_ping(eddy__mctx *c) {
    if (c->argc > 2)
        eddy__mctx_err_arity(c, "ping");
    else if (c->argc == 2)
        eddy__mresp_bulk(c->out, ARG(c, 1), ARGLEN(c, 1));
    else
        eddy__mresp_status(c->out, "PONG");
}

void eddy__mcmd_time(eddy__mctx *c) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    eddy__mresp_array(c->out, 2);
    eddy__mresp_bulk_ll(c->out, (long long)ts.tv_sec);
    eddy__mresp_bulk_ll(c->out, (long long)(ts.tv_nsec / 1000));
}

void eddy__mcmd_del(eddy__mctx *c) {
    long long n = 0;
    for (int i = 1; i < c->argc; i++) {
        eddy__mobj *o = eddy__mkey_find(c, ARG(c, i), ARGLEN(c, i));
        if (o) {
            eddy__mkey_delete(c, o);
            n++;
        }
    }
    eddy__mresp_int(c->out, n);
}

void eddy__mcmd_exists(eddy__mctx *c) {
    long long n = 0;
    for (int i = 1; i < c->argc; i++)
        if (eddy__mkey_find(c, ARG(c, i), ARGLEN(c, i)))
            n++;
    eddy__mresp_int(c->out, n);
}

void eddy__mcmd_type(eddy__mctx *c) {
    static const char *names[] = {"string", "set", "hash", "zset", "stream"};
    eddy__mobj *o = eddy__mkey_find(c, ARG(c, 1), ARGLEN(c, 1));
    eddy__mresp_status(c->out, o ? names[o->type] : "none");
}

enum { EXP_NX = 1, EXP_XX = 2, EXP_GT = 4, EXP_LT = 8 };

static void expire_generic(eddy__mctx *c, bool seconds, const char *name) {
    int flags = 0;
    for (int j = 3; j < c->argc; j++) {
        if (ARGIS(c, j, "nx"))
            flags |= EXP_NX;
        else if (ARGIS(c, j, "xx"))
            flags |= EXP_XX;
        else if (ARGIS(c, j, "gt"))
            flags |= EXP_GT;
        else if (ARGIS(c, j, "lt"))
            flags |= EXP_LT;
        else {
            eddy__mctx_errorf(c, "ERR Unsupported option %.*s",
                              eddy__mname_len(ARG(c, j), ARGLEN(c, j)), ARG(c, j));
            return;
        }
    }
    if ((flags & EXP_NX) && (flags & (EXP_XX | EXP_GT | EXP_LT))) {
        eddy__mctx_error(c, "ERR NX and XX, GT or LT options at the same time are not compatible");
        return;
    }
    if ((flags & EXP_GT) && (flags & EXP_LT)) {
        eddy__mctx_error(c, "ERR GT and LT options at the same time are not compatible");
        return;
    }
    long long when;
    if (!eddy__mctx_ll(c, 2, &when, NULL))
        return;
    if (seconds) {
        if (when > LLONG_MAX / 1000 || when < LLONG_MIN / 1000) {
            eddy__mctx_errorf(c, "ERR invalid expire time in '%s' command", name);
            return;
        }
        when *= 1000;
    }
    if (when > LLONG_MAX - c->now_ms) {
        eddy__mctx_errorf(c, "ERR invalid expire time in '%s' command", name);
        return;
    }
    when += c->now_ms;
    eddy__mobj *o = eddy__mkey_find(c, ARG(c, 1), ARGLEN(c, 1));
    if (!o) {
        eddy__mresp_int(c->out, 0);
        return;
    }
    long long cur = o->expire_at;
    if (((flags & EXP_NX) && cur != -1) || ((flags & EXP_XX) && cur == -1) ||
        ((flags & EXP_GT) && (when <= cur || cur == -1)) ||
        ((flags & EXP_LT) && cur != -1 && when >= cur)) {
        eddy__mresp_int(c->out, 0);
        return;
    }
    if (when <= c->now_ms) {
        eddy__mkey_delete(c, o);
    } else {
        if (eddy__mkey_set_expire(c->eng, o, when) != 0) {
            eddy__mctx_oom(c);
            return;
        }
        c->dirty = true;
    }
    eddy__mresp_int(c->out, 1);
}

void eddy__mcmd_expire(eddy__mctx *c) { expire_generic(c, true, "expire"); }

void eddy__mcmd_pexpire(eddy__mctx *c) { expire_generic(c, false, "pexpire"); }

static void ttl_generic(eddy__mctx *c, bool ms) {
    eddy__mobj *o = eddy__mkey_find(c, ARG(c, 1), ARGLEN(c, 1));
    if (!o) {
        eddy__mresp_int(c->out, -2);
        return;
    }
    if (o->expire_at < 0) {
        eddy__mresp_int(c->out, -1);
        return;
    }
    long long ttl = o->expire_at - c->now_ms;
    if (ttl < 0)
        ttl = 0;
    eddy__mresp_int(c->out, ms ? ttl : (ttl + 500) / 1000);
}

void eddy__mcmd_ttl(eddy__mctx *c) { ttl_generic(c, false); }

void eddy__mcmd_pttl(eddy__mctx *c) { ttl_generic(c, true); }

void eddy__mcmd_persist(eddy__mctx *c) {
    eddy__mobj *o = eddy__mkey_find(c, ARG(c, 1), ARGLEN(c, 1));
    if (!o || o->expire_at < 0) {
        eddy__mresp_int(c->out, 0);
        return;
    }
    eddy__mkey_set_expire(c->eng, o, -1);
    c->dirty = true;
    eddy__mresp_int(c->out, 1);
}

void eddy__mcmd_flushall(eddy__mctx *c) {
    if (c->argc > 2 || (c->argc == 2 && !ARGIS(c, 1, "sync") && !ARGIS(c, 1, "async"))) {
        eddy__mctx_err_syntax(c);
        return;
    }
    eddy__mkey_flush(c->eng);
    c->dirty = true;
    eddy__mresp_status(c->out, "OK");
}
