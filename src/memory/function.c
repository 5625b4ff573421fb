/* SPDX-License-Identifier: BSD-3-Clause */
/* FUNCTION LOAD/DELETE/FLUSH and FCALL for the memory engine.
 *
 * Libraries are remembered by name (case-sensitive, as in Redis) in engine->functions, a
 * table created on the first load and kept across FLUSHALL (Redis keeps functions apart from
 * the keyspace). A library's code is checked the way Redis checks its metadata line, with
 * Redis's error texts (quotes inside that line are not interpreted), but it is not run: the engine
 * runs the functions of the libraries it knows natively (natives[] below), once a library of that
 * name has been loaded. A library it does not know is accepted and remembered, and its functions
 * answer like unknown functions. Function names are matched without regard to case, as Redis does.
 */
#include "memory/function.h"

#include "util/functions.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

typedef struct native {
    const char *library;
    const char *name;
    eddy__mnative_fn fn;
} native;

static const native natives[] = {
    {EDDY__STORE_LIBRARY, EDDY__STORE_APPEND_FN, eddy__mfn_eddy_append},
    {EDDY__STORE_LIBRARY, EDDY__STORE_APPEND_DEDUP_FN, eddy__mfn_eddy_append_dedup},
    {EDDY__STORE_LIBRARY, EDDY__PUBLISH_FN, eddy__mfn_eddy_publish},
    {EDDY__STORE_LIBRARY, EDDY__COMMIT_FN, eddy__mfn_eddy_commit},
    {EDDY__STORE_LIBRARY, EDDY__MODEL_FN, eddy__mfn_eddy_model},
};

void eddy__mfunctions_free(eddy__mem_engine *e) {
    if (!e->functions)
        return;
    eddy__mdict_clear(e->functions, NULL);
    eddy__mem_free(e->functions);
    e->functions = NULL;
}

static bool library_loaded(eddy__mem_engine *e, const char *name) {
    return e->functions && eddy__mdict_find(e->functions, name, strlen(name)) != NULL;
}

/* One whitespace-separated part of the metadata line. */
typedef struct part {
    const char *p;
    size_t n;
} part;

/* Redis's functionExtractLibMetaData and the checks of functionsCreateWithLibraryCtx that come
 * before compiling, in Redis's order. On success *name is the library's name. Replies and
 * returns false on error. */
static bool check_code(eddy__mctx *c, const char *code, size_t len, part *name) {
    if (len < 2 || memcmp(code, "#!", 2) != 0) {
        eddy__mctx_error(c, "ERR Missing library metadata");
        return false;
    }
    const char *end = memchr(code, '\n', len);
    if (!end) {
        eddy__mctx_error(c, "ERR Invalid library metadata");
        return false;
    }
    part engine = {NULL, 0};
    bool named = false;
    for (const char *p = code; p < end;) {
        while (p < end && isspace((unsigned char)*p))
            p++;
        if (p == end)
            break;
        part w = {p, 0};
        while (p < end && !isspace((unsigned char)*p))
            p++;
        w.n = (size_t)(p - w.p);
        if (!engine.p) {
            engine = (part){w.p + 2, w.n - 2}; /* the first part starts with "#!" */
            continue;
        }
        if (w.n >= 5 && strncasecmp(w.p, "name=", 5) == 0) {
            if (named) {
                eddy__mctx_error(c, "ERR Invalid metadata value, name argument was given multiple "
                                    "times");
                return false;
            }
            named = true;
            *name = (part){w.p + 5, w.n - 5};
            continue;
        }
        eddy__mctx_errorf(c, "ERR Invalid metadata value given: %.*s", eddy__mname_len(w.p, w.n),
                          w.p);
        return false;
    }
    if (!named) {
        eddy__mctx_error(c, "ERR Library name was not given");
        return false;
    }
    bool valid = name->n > 0;
    for (size_t i = 0; valid && i < name->n; i++)
        valid = isalnum((unsigned char)name->p[i]) || name->p[i] == '_';
    if (!valid) {
        eddy__mctx_error(c, "ERR Library names can only contain letters, numbers, or "
                            "underscores(_) and must be at least one character long");
        return false;
    }
    if (engine.n != 3 || strncasecmp(engine.p, "lua", 3) != 0) {
        eddy__mctx_errorf(c, "ERR Engine '%.*s' not found", eddy__mname_len(engine.p, engine.n),
                          engine.p);
        return false;
    }
    return true;
}

void eddy__mcmd_function_load(eddy__mctx *c) {
    bool replace = false;
    for (int i = 2; i < c->argc - 1; i++) {
        if (ARGIS(c, i, "replace")) {
            replace = true;
        } else {
            eddy__mctx_errorf(c, "ERR Unknown option given: %.*s",
                              eddy__mname_len(ARG(c, i), ARGLEN(c, i)), ARG(c, i));
            return;
        }
    }
    part name = {NULL, 0};
    if (!check_code(c, ARG(c, c->argc - 1), ARGLEN(c, c->argc - 1), &name))
        return;
    eddy__mem_engine *e = c->eng;
    if (e->functions && eddy__mdict_find(e->functions, name.p, name.n)) {
        if (!replace) {
            eddy__mctx_errorf(c, "ERR Library '%.*s' already exists",
                              eddy__mname_len(name.p, name.n), name.p);
            return;
        }
    } else {
        if (!e->functions) {
            if (!(e->functions = eddy__mem_calloc(1, sizeof(eddy__mdict)))) {
                eddy__mctx_oom(c);
                return;
            }
            eddy__mdict_init(e->functions);
        }
        if (eddy__mdict_add(e->functions, name.p, name.n, NULL, NULL) < 0) {
            eddy__mctx_oom(c);
            return;
        }
    }
    eddy__mresp_bulk(c->out, name.p, name.n);
}

void eddy__mcmd_function_delete(eddy__mctx *c) {
    eddy__mem_engine *e = c->eng;
    if (!e->functions || !eddy__mdict_del(e->functions, ARG(c, 2), ARGLEN(c, 2), NULL)) {
        eddy__mctx_error(c, "ERR Library not found");
        return;
    }
    eddy__mresp_status(c->out, "OK");
}

void eddy__mcmd_function_flush(eddy__mctx *c) {
    if (c->argc > 3) {
        size_t n = ARGLEN(c, 1) > 128 ? 128 : ARGLEN(c, 1);
        eddy__mctx_errorf(c,
                          "ERR unknown subcommand or wrong number of arguments for '%.*s'. Try "
                          "FUNCTION HELP.",
                          eddy__mname_len(ARG(c, 1), n), ARG(c, 1));
        return;
    }
    if (c->argc == 3 && !ARGIS(c, 2, "async") && !ARGIS(c, 2, "sync")) {
        eddy__mctx_error(c, "ERR FUNCTION FLUSH only supports SYNC|ASYNC option");
        return;
    }
    eddy__mfunctions_free(c->eng);
    eddy__mresp_status(c->out, "OK");
}

void eddy__mcmd_fcall(eddy__mctx *c) {
    const native *fn = NULL;
    for (size_t i = 0; !fn && i < sizeof(natives) / sizeof(natives[0]); i++)
        if (eddy__marg_is(ARG(c, 1), ARGLEN(c, 1), natives[i].name) &&
            library_loaded(c->eng, natives[i].library))
            fn = &natives[i];
    if (!fn) {
        eddy__mctx_error(c, "ERR Function not found");
        return;
    }
    long long nkeys;
    if (!eddy__mparse_ll(ARG(c, 2), ARGLEN(c, 2), &nkeys)) {
        eddy__mctx_error(c, "ERR Bad number of keys provided");
        return;
    }
    if (nkeys > c->argc - 3) {
        eddy__mctx_error(c, "ERR Number of keys can't be greater than number of args");
        return;
    }
    if (nkeys < 0) {
        eddy__mctx_error(c, "ERR Number of keys can't be negative");
        return;
    }
    int k = (int)nkeys;
    fn->fn(c, k, &c->argv[3], &c->argvlen[3], c->argc - 3 - k, &c->argv[3 + k], &c->argvlen[3 + k]);
}
