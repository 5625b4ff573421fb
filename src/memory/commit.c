/* SPDX-License-Identifier: BSD-3-Clause */
/* The function library's commit of a transactional handler (eddy_delivery_emit), run natively by
 * the memory engine: the same checks in the same order with the same replies as the Lua in
 * src/link/library.c, and the same resulting keys. tests/unit/test_commit_fn.c runs both (the
 * Lua on a real server) and compares them.
 *
 * Keys: the input's stream, the namespace's subject set, then each output's stream. Arguments:
 * the group, the input's entry id, the MAXLEN ~ bound (0: none), the number of outputs n, then
 * per output its subject, its field count k and its k fields. While the input is pending in the
 * group, every output is added as XADD adds it (the XADD handler runs on a context whose
 * arguments are built here), its subject added to the set, and the input acknowledged: reply 1.
 * Once it is not pending, nothing is written: reply 0.
 *
 * Unlike eddy_append, it is not all-or-nothing when memory runs out in the middle: the outputs
 * added so far stay (as they would in a Redis function that fails midway) and the input stays
 * pending. It runs under the engine lock, so it is atomic otherwise. */
#include <string.h>

#include "memory/function.h"

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

/* Runs one command's handler on argv, its reply dropped; false when it failed (out of memory,
 * or an error reply, which is then this call's). */
static bool run(eddy__mctx *c, eddy__mcmd_fn fn, int argc, const char **argv, size_t *argvlen) {
    eddy__mctx sub = *c;
    sub.argc = argc;
    sub.argv = argv;
    sub.argvlen = argvlen;
    sub.appended = NULL;
    sub.mark = c->out->len;
    fn(&sub);
    c->oom = sub.oom || c->oom;
    c->dirty = sub.dirty || c->dirty;
    if (eddy__mctx_failed(c))
        return false;
    if (eddy__mresp_is_error_at(c->out, sub.mark)) {
        /* keep the error as the call's reply */
        size_t n = c->out->len - sub.mark;
        memmove(c->out->buf + c->mark, c->out->buf + sub.mark, n);
        c->out->len = c->mark + n;
        return false;
    }
    eddy__mresp_truncate(c->out, sub.mark);
    return true;
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
    if (!eddy__mgroup_pending(g, id)) {
        eddy__mresp_int(c->out, 0);
        return;
    }

    /* XADD <stream> [MAXLEN ~ <maxlen>] * <fields...>, SADD <set> <subject>, XACK */
    int cap = 6 + (int)kmax;
    const char **argv = eddy__mem_malloc(sizeof(*argv) * (size_t)cap);
    size_t *argvlen = eddy__mem_malloc(sizeof(*argvlen) * (size_t)cap);
    if (!argv || !argvlen) {
        eddy__mem_free(argv);
        eddy__mem_free(argvlen);
        eddy__mctx_oom(c);
        return;
    }
    bool ok = true;
    j = 4;
    for (unsigned long long e = 0; ok && e < n; e++) {
        unsigned long long k;
        eddy__mfn_count(nargs, args, alen, j + 1, &k); /* checked above */
        int a = 0;
        argv[a] = "XADD", argvlen[a++] = 4;
        argv[a] = keys[e + 2], argvlen[a++] = klen[e + 2];
        if (maxlen) {
            argv[a] = "MAXLEN", argvlen[a++] = 6;
            argv[a] = "~", argvlen[a++] = 1;
            argv[a] = args[2], argvlen[a++] = alen[2];
        }
        argv[a] = "*", argvlen[a++] = 1;
        memcpy(&argv[a], &args[j + 2], sizeof(*argv) * (size_t)k);
        memcpy(&argvlen[a], &alen[j + 2], sizeof(*argvlen) * (size_t)k);
        ok = run(c, eddy__mcmd_xadd, a + (int)k, argv, argvlen);
        if (ok) {
            argv[0] = "SADD", argvlen[0] = 4;
            argv[1] = keys[1], argvlen[1] = klen[1];
            argv[2] = args[j], argvlen[2] = alen[j];
            ok = run(c, eddy__mcmd_sadd, 3, argv, argvlen);
        }
        j += 2 + (long long)k;
    }
    if (ok) {
        argv[0] = "XACK", argvlen[0] = 4;
        argv[1] = keys[0], argvlen[1] = klen[0];
        argv[2] = args[0], argvlen[2] = alen[0];
        argv[3] = args[1], argvlen[3] = alen[1];
        ok = run(c, eddy__mcmd_xack, 4, argv, argvlen);
    }
    eddy__mem_free(argv);
    eddy__mem_free(argvlen);
    /* several writes: whatever they wrote wakes every waiter */
    c->appended = NULL;
    c->other_write = true;
    c->dirty = true;
    if (!ok) {
        if (eddy__mctx_failed(c))
            eddy__mctx_oom(c);
        return;
    }
    eddy__mresp_int(c->out, 1);
}
