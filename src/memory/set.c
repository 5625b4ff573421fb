/* SPDX-License-Identifier: BSD-3-Clause */
/* Set commands: SADD, SREM, SMEMBERS, SISMEMBER, SCARD. Members are keys of an insertion-ordered
 * table (Redis's order for non-integer sets is unspecified, so any order is faithful).
 *
 * Invariant: a set key never exists empty; an SADD that runs out of memory part-way keeps the
 * members it added and removes a set it created if that set is still empty. */
#include "memory/internal.h"

void eddy__mcmd_sadd(eddy__mctx *c) {
    bool wrongtype;
    eddy__mobj *o = eddy__mkey_find_typed(c, ARG(c, 1), ARGLEN(c, 1), EDDY__MT_SET, &wrongtype);
    if (wrongtype)
        return;
    if (!o && !(o = eddy__mkey_add(c, ARG(c, 1), ARGLEN(c, 1), EDDY__MT_SET))) {
        eddy__mctx_oom(c);
        return;
    }
    long long added = 0;
    for (int i = 2; i < c->argc; i++) {
        int r = eddy__mdict_add(&o->v.set, ARG(c, i), ARGLEN(c, i), NULL, NULL);
        if (r < 0) {
            if (eddy__mdict_size(&o->v.set) == 0)
                eddy__mkey_delete(c, o);
            eddy__mctx_oom(c);
            return;
        }
        added += r;
    }
    if (added)
        c->dirty = true;
    eddy__mresp_int(c->out, added);
}

void eddy__mcmd_srem(eddy__mctx *c) {
    bool wrongtype;
    eddy__mobj *o = eddy__mkey_find_typed(c, ARG(c, 1), ARGLEN(c, 1), EDDY__MT_SET, &wrongtype);
    if (wrongtype)
        return;
    long long removed = 0;
    for (int i = 2; o && i < c->argc; i++) {
        if (eddy__mdict_del(&o->v.set, ARG(c, i), ARGLEN(c, i), NULL)) {
            removed++;
            c->dirty = true;
            if (eddy__mdict_size(&o->v.set) == 0) {
                eddy__mkey_delete(c, o);
                break;
            }
        }
    }
    eddy__mresp_int(c->out, removed);
}

void eddy__mcmd_smembers(eddy__mctx *c) {
    bool wrongtype;
    eddy__mobj *o = eddy__mkey_find_typed(c, ARG(c, 1), ARGLEN(c, 1), EDDY__MT_SET, &wrongtype);
    if (wrongtype)
        return;
    if (!o) {
        eddy__mresp_array(c->out, 0);
        return;
    }
    eddy__mresp_array(c->out, eddy__mdict_size(&o->v.set));
    for (size_t i = 0; i < o->v.set.nent; i++)
        if (o->v.set.ent[i].key)
            eddy__mresp_bulk(c->out, o->v.set.ent[i].key, o->v.set.ent[i].klen);
}

void eddy__mcmd_sismember(eddy__mctx *c) {
    bool wrongtype;
    eddy__mobj *o = eddy__mkey_find_typed(c, ARG(c, 1), ARGLEN(c, 1), EDDY__MT_SET, &wrongtype);
    if (wrongtype)
        return;
    eddy__mresp_int(c->out, o && eddy__mdict_find(&o->v.set, ARG(c, 2), ARGLEN(c, 2)) ? 1 : 0);
}

void eddy__mcmd_scard(eddy__mctx *c) {
    bool wrongtype;
    eddy__mobj *o = eddy__mkey_find_typed(c, ARG(c, 1), ARGLEN(c, 1), EDDY__MT_SET, &wrongtype);
    if (wrongtype)
        return;
    eddy__mresp_int(c->out, o ? (long long)eddy__mdict_size(&o->v.set) : 0);
}
