/* SPDX-License-Identifier: BSD-3-Clause */
/* String commands: GET, SET (NX, XX, GET, EX, PX, EXAT, PXAT, KEEPTTL), INCR, INCRBY.
 *
 * Invariant: a SET or INCR that runs out of memory changes nothing (the new value and any new
 * key or expiry slot are obtained before the old value is touched). */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "memory/internal.h"

void eddy__mcmd_get(eddy__mctx *c) {
    bool wrongtype;
    eddy__mobj *o = eddy__mkey_find_typed(c, ARG(c, 1), ARGLEN(c, 1), EDDY__MT_STRING, &wrongtype);
    if (wrongtype)
        return;
    if (!o)
        eddy__mresp_nil(c->out);
    else
        eddy__mresp_bulk(c->out, o->v.str.ptr, o->v.str.len);
}

/* Stores value under key as a string. expire_at: -1 to clear the TTL, -2 to keep it, else the
 * new expiry. Returns false on OOM, with nothing changed. */
static bool store_string(eddy__mctx *c, const char *key, size_t klen, const char *value,
                         size_t vlen, long long expire_at) {
    char *copy = eddy__mem_memdup(value, vlen);
    if (!copy)
        return false;
    eddy__mobj *o = eddy__mkey_find(c, key, klen);
    bool created = false;
    if (!o) {
        if (!(o = eddy__mkey_add(c, key, klen, EDDY__MT_STRING))) {
            eddy__mem_free(copy);
            return false;
        }
        created = true;
    }
    if (expire_at != -2 && eddy__mkey_set_expire(c->eng, o, expire_at) != 0) {
        if (created)
            eddy__mkey_delete(c, o);
        eddy__mem_free(copy);
        return false;
    }
    if (o->type != EDDY__MT_STRING)
        eddy__mkey_make_string(o);
    eddy__mem_free(o->v.str.ptr);
    o->v.str.ptr = copy;
    o->v.str.len = vlen;
    c->dirty = true;
    return true;
}

enum {
    SET_NX = 1 << 0,
    SET_XX = 1 << 1,
    SET_GET = 1 << 2,
    SET_KEEPTTL = 1 << 3,
    SET_EX = 1 << 4,
    SET_PX = 1 << 5,
    SET_EXAT = 1 << 6,
    SET_PXAT = 1 << 7,
};

void eddy__mcmd_set(eddy__mctx *c) {
    int flags = 0;
    int expire_arg = -1;
    const int ttl_flags = SET_KEEPTTL | SET_EX | SET_PX | SET_EXAT | SET_PXAT;
    /* Redis's parseExtendedStringArgumentsOrReply: an option may repeat, but expiry options
     * exclude each other. */
    for (int j = 3; j < c->argc; j++) {
        bool next = j + 1 < c->argc;
        if (ARGIS(c, j, "nx") && !(flags & SET_XX)) {
            flags |= SET_NX;
        } else if (ARGIS(c, j, "xx") && !(flags & SET_NX)) {
            flags |= SET_XX;
        } else if (ARGIS(c, j, "get")) {
            flags |= SET_GET;
        } else if (ARGIS(c, j, "keepttl") && !(flags & (ttl_flags & ~SET_KEEPTTL))) {
            flags |= SET_KEEPTTL;
        } else if (ARGIS(c, j, "ex") && !(flags & (ttl_flags & ~SET_EX)) && next) {
            flags |= SET_EX;
            expire_arg = ++j;
        } else if (ARGIS(c, j, "px") && !(flags & (ttl_flags & ~SET_PX)) && next) {
            flags |= SET_PX;
            expire_arg = ++j;
        } else if (ARGIS(c, j, "exat") && !(flags & (ttl_flags & ~SET_EXAT)) && next) {
            flags |= SET_EXAT;
            expire_arg = ++j;
        } else if (ARGIS(c, j, "pxat") && !(flags & (ttl_flags & ~SET_PXAT)) && next) {
            flags |= SET_PXAT;
            expire_arg = ++j;
        } else {
            eddy__mctx_err_syntax(c);
            return;
        }
    }
    long long expire_at = (flags & SET_KEEPTTL) ? -2 : -1;
    if (expire_arg >= 0) {
        long long ms;
        if (!eddy__mctx_ll(c, expire_arg, &ms, NULL))
            return;
        bool in_seconds = flags & (SET_EX | SET_EXAT);
        bool relative = flags & (SET_EX | SET_PX);
        if (ms <= 0 || (in_seconds && ms > LLONG_MAX / 1000)) {
            eddy__mctx_error(c, "ERR invalid expire time in 'set' command");
            return;
        }
        if (in_seconds)
            ms *= 1000;
        if (relative) {
            if (ms > LLONG_MAX - c->now_ms) {
                eddy__mctx_error(c, "ERR invalid expire time in 'set' command");
                return;
            }
            ms += c->now_ms;
        }
        expire_at = ms;
    }
    eddy__mobj *o = eddy__mkey_find(c, ARG(c, 1), ARGLEN(c, 1));
    if (flags & SET_GET) {
        if (o && o->type != EDDY__MT_STRING) {
            eddy__mctx_err_wrongtype(c);
            return;
        }
        if (o)
            eddy__mresp_bulk(c->out, o->v.str.ptr, o->v.str.len);
        else
            eddy__mresp_nil(c->out);
    }
    if (((flags & SET_NX) && o) || ((flags & SET_XX) && !o)) {
        if (!(flags & SET_GET))
            eddy__mresp_nil(c->out);
        return;
    }
    if (!store_string(c, ARG(c, 1), ARGLEN(c, 1), ARG(c, 2), ARGLEN(c, 2), expire_at)) {
        eddy__mctx_oom(c);
        return;
    }
    if (!(flags & SET_GET))
        eddy__mresp_status(c->out, "OK");
}

static void incr_generic(eddy__mctx *c, long long incr) {
    bool wrongtype;
    eddy__mobj *o = eddy__mkey_find_typed(c, ARG(c, 1), ARGLEN(c, 1), EDDY__MT_STRING, &wrongtype);
    if (wrongtype)
        return;
    long long value = 0;
    if (o && !eddy__mparse_ll(o->v.str.ptr, o->v.str.len, &value)) {
        eddy__mctx_err_notint(c);
        return;
    }
    if ((incr < 0 && value < 0 && incr < LLONG_MIN - value) ||
        (incr > 0 && value > 0 && incr > LLONG_MAX - value)) {
        eddy__mctx_error(c, "ERR increment or decrement would overflow");
        return;
    }
    value += incr;
    char buf[32];
    int n = snprintf(buf, sizeof(buf), "%lld", value);
    /* INCR keeps the key's TTL. */
    if (!store_string(c, ARG(c, 1), ARGLEN(c, 1), buf, (size_t)n, -2)) {
        eddy__mctx_oom(c);
        return;
    }
    eddy__mresp_int(c->out, value);
}

void eddy__mcmd_incr(eddy__mctx *c) { incr_generic(c, 1); }

void eddy__mcmd_incrby(eddy__mctx *c) {
    long long incr;
    if (eddy__mctx_ll(c, 2, &incr, NULL))
        incr_generic(c, incr);
}
