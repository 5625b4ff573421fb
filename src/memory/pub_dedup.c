/* SPDX-License-Identifier: BSD-3-Clause */
/* The function library's deduplicating publish, run natively by the memory engine: the same
 * checks in the same order with the same replies as the Lua in src/store.c.
 *
 * A dedup key holding the entry id of an earlier publish (or "<entry id> <version>" from an
 * append with publish) answers with that id and writes nothing. Otherwise the entry is added
 * exactly as XADD adds it (the XADD handler runs on a context whose arguments are built here)
 * and the dedup key is set to its id with the window as its expiry. All-or-nothing when memory
 * runs out: the key, its expiry and its value's room exist before the entry is added, and are
 * removed again if adding fails. */
#include <stdio.h>
#include <string.h>

#include "memory/function.h"

static void fail(eddy__mctx *c, const char *why) {
    eddy__mctx_errorf(c, "ERR eddy_publish: %s", why);
}

/* Lua's isspace, for '%S'. */
static bool is_space(char ch) { return ch == ' ' || (ch >= '\t' && ch <= '\r'); }

/* The first publish's id: the value's leading run of non-space bytes (nil when empty). */
static void reply_first_id(eddy__mctx *c, const eddy__mobj *o) {
    size_t n = 0;
    while (n < o->v.str.len && !is_space(o->v.str.ptr[n]))
        n++;
    if (n)
        eddy__mresp_bulk(c->out, o->v.str.ptr, n);
    else
        eddy__mresp_nil(c->out);
}

#define ID_MAX 48 /* "<ms>-<seq>", both 20 digits at most */

void eddy__mfn_eddy_publish(eddy__mctx *c, int nkeys, const char *const *keys, const size_t *klen,
                            int nargs, const char *const *args, const size_t *alen) {
    if (nkeys != 2) {
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
    if (nargs < 4 || nargs % 2 == 1) {
        fail(c, "wrong number of arguments");
        return;
    }
    eddy__mobj *stream = eddy__mkey_find(c, keys[0], klen[0]);
    eddy__mobj *seen = eddy__mkey_find(c, keys[1], klen[1]);
    if ((stream && stream->type != EDDY__MT_STREAM) || (seen && seen->type != EDDY__MT_STRING)) {
        eddy__mctx_err_wrongtype(c);
        return;
    }
    if (seen) {
        reply_first_id(c, seen);
        return;
    }

    /* XADD <stream> [MAXLEN ~ <maxlen>] * <fields...> */
    int nfv = nargs - 2, argc = 3 + (maxlen ? 3 : 0) + nfv;
    const char **argv = eddy__mem_malloc(sizeof(*argv) * (size_t)argc);
    size_t *argvlen = eddy__mem_malloc(sizeof(*argvlen) * (size_t)argc);
    char *value = eddy__mem_malloc(ID_MAX);
    eddy__mobj *key =
        argv && argvlen && value ? eddy__mkey_add(c, keys[1], klen[1], EDDY__MT_STRING) : NULL;
    if (!key || eddy__mkey_set_expire(c->eng, key, c->now_ms + (long long)window) != 0) {
        if (key)
            eddy__mkey_delete(c, key);
        eddy__mem_free(argv);
        eddy__mem_free(argvlen);
        eddy__mem_free(value);
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
    memcpy(&argv[a], &args[2], sizeof(*argv) * (size_t)nfv);
    memcpy(&argvlen[a], &alen[2], sizeof(*argvlen) * (size_t)nfv);

    eddy__mctx xadd = *c;
    xadd.argc = argc;
    xadd.argv = argv;
    xadd.argvlen = argvlen;
    xadd.appended = NULL;
    eddy__mcmd_xadd(&xadd); /* its reply (the id, or an error) is this call's */
    c->oom = xadd.oom;
    c->dirty = xadd.dirty;
    c->appended = xadd.appended;
    c->other_write = xadd.other_write;
    eddy__mem_free(argv);
    eddy__mem_free(argvlen);
    if (!xadd.appended) {
        eddy__mkey_delete(c, key);
        eddy__mem_free(value);
        return;
    }
    eddy__mid id = xadd.appended->v.stream->last_id;
    snprintf(value, ID_MAX, "%llu-%llu", (unsigned long long)id.ms, (unsigned long long)id.seq);
    eddy__mem_free(key->v.str.ptr);
    key->v.str.ptr = value;
    key->v.str.len = strlen(value);
}
