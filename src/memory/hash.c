/* SPDX-License-Identifier: BSD-3-Clause */
/* Hash commands: HSET, HGET, HDEL, HGETALL, HLEN. Fields keep insertion order, which is what
 * Redis shows for small (listpack-encoded) hashes.
 *
 * Invariant: a hash key never exists empty; a value is replaced only once its copy exists, so
 * an HSET that runs out of memory leaves every field either old or new, never missing. */
#include "memory/internal.h"

void eddy__mcmd_hset(eddy__mctx *c) {
    if (c->argc % 2 == 1) {
        eddy__mctx_err_arity(c, "hset");
        return;
    }
    bool wrongtype;
    eddy__mobj *o = eddy__mkey_find_typed(c, ARG(c, 1), ARGLEN(c, 1), EDDY__MT_HASH, &wrongtype);
    if (wrongtype)
        return;
    if (!o && !(o = eddy__mkey_add(c, ARG(c, 1), ARGLEN(c, 1), EDDY__MT_HASH))) {
        eddy__mctx_oom(c);
        return;
    }
    long long created = 0;
    for (int i = 2; i + 1 < c->argc; i += 2) {
        eddy__mblob *value = eddy__mblob_new(ARG(c, i + 1), ARGLEN(c, i + 1));
        eddy__mdict_entry *e = NULL;
        int r = value ? eddy__mdict_add(&o->v.hash, ARG(c, i), ARGLEN(c, i), value, &e) : -1;
        if (r < 0) {
            eddy__mem_free(value);
            if (eddy__mdict_size(&o->v.hash) == 0)
                eddy__mkey_delete(c, o);
            eddy__mctx_oom(c);
            return;
        }
        if (r == 0) {
            eddy__mem_free(e->val);
            e->val = value;
        }
        created += r;
        c->dirty = true;
    }
    eddy__mresp_int(c->out, created);
}

void eddy__mcmd_hget(eddy__mctx *c) {
    bool wrongtype;
    eddy__mobj *o = eddy__mkey_find_typed(c, ARG(c, 1), ARGLEN(c, 1), EDDY__MT_HASH, &wrongtype);
    if (wrongtype)
        return;
    eddy__mdict_entry *e = o ? eddy__mdict_find(&o->v.hash, ARG(c, 2), ARGLEN(c, 2)) : NULL;
    if (!e) {
        eddy__mresp_nil(c->out);
        return;
    }
    const eddy__mblob *v = e->val;
    eddy__mresp_bulk(c->out, v->data, v->len);
}

void eddy__mcmd_hdel(eddy__mctx *c) {
    bool wrongtype;
    eddy__mobj *o = eddy__mkey_find_typed(c, ARG(c, 1), ARGLEN(c, 1), EDDY__MT_HASH, &wrongtype);
    if (wrongtype)
        return;
    long long deleted = 0;
    for (int i = 2; o && i < c->argc; i++) {
        void *val;
        if (eddy__mdict_del(&o->v.hash, ARG(c, i), ARGLEN(c, i), &val)) {
            eddy__mem_free(val);
            deleted++;
            c->dirty = true;
            if (eddy__mdict_size(&o->v.hash) == 0) {
                eddy__mkey_delete(c, o);
                break;
            }
        }
    }
    eddy__mresp_int(c->out, deleted);
}

void eddy__mcmd_hgetall(eddy__mctx *c) {
    bool wrongtype;
    eddy__mobj *o = eddy__mkey_find_typed(c, ARG(c, 1), ARGLEN(c, 1), EDDY__MT_HASH, &wrongtype);
    if (wrongtype)
        return;
    if (!o) {
        eddy__mresp_array(c->out, 0);
        return;
    }
    eddy__mresp_array(c->out, 2 * eddy__mdict_size(&o->v.hash));
    for (size_t i = 0; i < o->v.hash.nent; i++) {
        const eddy__mdict_entry *e = &o->v.hash.ent[i];
        if (!e->key)
            continue;
        const eddy__mblob *v = e->val;
        eddy__mresp_bulk(c->out, e->key, e->klen);
        eddy__mresp_bulk(c->out, v->data, v->len);
    }
}

void eddy__mcmd_hlen(eddy__mctx *c) {
    bool wrongtype;
    eddy__mobj *o = eddy__mkey_find_typed(c, ARG(c, 1), ARGLEN(c, 1), EDDY__MT_HASH, &wrongtype);
    if (wrongtype)
        return;
    eddy__mresp_int(c->out, o ? (long long)eddy__mdict_size(&o->v.hash) : 0);
}
