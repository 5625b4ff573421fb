/* SPDX-License-Identifier: BSD-3-Clause */
/* XGROUP CREATE (MKSTREAM, ENTRIESREAD), SETID (ENTRIESREAD), DESTROY, CREATECONSUMER,
 * DELCONSUMER and HELP. All share Redis's prologue, which fixes the order of the checks: CREATE's
 * options, the key's type, the key's existence (unless MKSTREAM), then the group's existence for
 * the subcommands that need it.
 *
 * Invariant: XGROUP CREATE ... MKSTREAM that fails (bad id, OOM) leaves no new key behind. */
#include <string.h>

#include "memory/internal.h"

typedef struct xgroup_ctx {
    eddy__mobj *o;
    eddy__mgroup *g;
    bool mkstream;
    long long entries_read;
} xgroup_ctx;

static void subcommand_syntax_error(eddy__mctx *c, const char *container) {
    size_t n = ARGLEN(c, 1) > 128 ? 128 : ARGLEN(c, 1);
    eddy__mctx_errorf(c,
                      "ERR unknown subcommand or wrong number of arguments for '%.*s'. Try %s "
                      "HELP.",
                      eddy__mname_len(ARG(c, 1), n), ARG(c, 1), container);
}

static bool parse_entries_read(eddy__mctx *c, int i, long long *out) {
    if (!eddy__mctx_ll(c, i, out, NULL))
        return false;
    if (*out < 0 && *out != EDDY__ENTRIES_READ_INVALID) {
        eddy__mctx_error(c, "ERR value for ENTRIESREAD must be positive or -1");
        return false;
    }
    return true;
}

static bool prologue(eddy__mctx *c, xgroup_ctx *x, bool create, bool need_group) {
    memset(x, 0, sizeof(*x));
    x->entries_read = EDDY__ENTRIES_READ_INVALID;
    if (create) {
        for (int i = 5; i < c->argc;) {
            if (ARGIS(c, i, "mkstream")) {
                x->mkstream = true;
                i++;
            } else if (ARGIS(c, i, "entriesread") && i + 1 < c->argc) {
                if (!parse_entries_read(c, i + 1, &x->entries_read))
                    return false;
                i += 2;
            } else {
                subcommand_syntax_error(c, "XGROUP");
                return false;
            }
        }
    }
    bool wrongtype;
    x->o = eddy__mstream_find(c, 2, &wrongtype);
    if (wrongtype)
        return false;
    if (!x->mkstream) {
        if (!x->o) {
            eddy__mctx_error(c, "ERR The XGROUP subcommand requires the key to exist. Note that "
                                "for CREATE you may want to use the MKSTREAM option to create "
                                "an empty stream automatically.");
            return false;
        }
        x->g = eddy__mgroup_find(x->o->v.stream, ARG(c, 3), ARGLEN(c, 3));
        if (!x->g && need_group) {
            eddy__mctx_errorf(c, "NOGROUP No such consumer group '%.*s' for key name '%.*s'",
                              eddy__mname_len(ARG(c, 3), ARGLEN(c, 3)), ARG(c, 3),
                              eddy__mname_len(ARG(c, 2), ARGLEN(c, 2)), ARG(c, 2));
            return false;
        }
    }
    return true;
}

void eddy__mcmd_xgroup_create(eddy__mctx *c) {
    xgroup_ctx x;
    if (!prologue(c, &x, true, false))
        return;
    if (c->argc > 8) {
        subcommand_syntax_error(c, "XGROUP");
        return;
    }
    eddy__mid id;
    if (ARGLEN(c, 4) == 1 && ARG(c, 4)[0] == '$')
        id = x.o ? x.o->v.stream->last_id : (eddy__mid){0, 0};
    else if (!eddy__mctx_id(c, 4, &id, 0, true))
        return;
    bool created = false;
    if (!x.o) {
        if (!(x.o = eddy__mkey_add(c, ARG(c, 2), ARGLEN(c, 2), EDDY__MT_STREAM))) {
            eddy__mctx_oom(c);
            return;
        }
        created = true;
    }
    eddy__mstream *s = x.o->v.stream;
    if (eddy__mgroup_find(s, ARG(c, 3), ARGLEN(c, 3))) {
        eddy__mctx_error(c, "BUSYGROUP Consumer Group name already exists");
        return;
    }
    eddy__mgroup *g = eddy__mgroup_new(ARG(c, 3), ARGLEN(c, 3), id, x.entries_read);
    if (!g || eddy__mdict_add(&s->groups, ARG(c, 3), ARGLEN(c, 3), g, NULL) != 1) {
        eddy__mgroup_free(g);
        if (created)
            eddy__mkey_delete(c, x.o);
        eddy__mctx_oom(c);
        return;
    }
    c->dirty = true;
    eddy__mresp_status(c->out, "OK");
}

void eddy__mcmd_xgroup_setid(eddy__mctx *c) {
    xgroup_ctx x;
    if (!prologue(c, &x, false, true))
        return;
    if (c->argc != 5 && c->argc != 7) {
        subcommand_syntax_error(c, "XGROUP");
        return;
    }
    eddy__mid id;
    if (ARGLEN(c, 4) == 1 && ARG(c, 4)[0] == '$')
        id = x.o->v.stream->last_id;
    else if (!eddy__mctx_id(c, 4, &id, 0, false))
        return;
    long long entries_read = EDDY__ENTRIES_READ_INVALID;
    if (c->argc == 7) {
        if (!ARGIS(c, 5, "entriesread")) {
            subcommand_syntax_error(c, "XGROUP");
            return;
        }
        if (!parse_entries_read(c, 6, &entries_read))
            return;
    }
    x.g->last_id = id;
    x.g->entries_read = entries_read;
    c->dirty = true;
    eddy__mresp_status(c->out, "OK");
}

void eddy__mcmd_xgroup_destroy(eddy__mctx *c) {
    xgroup_ctx x;
    if (!prologue(c, &x, false, false))
        return;
    if (!x.g) {
        eddy__mresp_int(c->out, 0);
        return;
    }
    eddy__mdict_del(&x.o->v.stream->groups, x.g->name, x.g->nlen, NULL);
    eddy__mgroup_free(x.g);
    c->dirty = true; /* also wakes blocked XREADGROUPs, which then answer NOGROUP */
    eddy__mresp_int(c->out, 1);
}

void eddy__mcmd_xgroup_createconsumer(eddy__mctx *c) {
    xgroup_ctx x;
    if (!prologue(c, &x, false, true))
        return;
    bool created;
    if (!eddy__mconsumer_get(x.g, ARG(c, 4), ARGLEN(c, 4), c->now_ms, &created)) {
        eddy__mctx_oom(c);
        return;
    }
    if (created)
        c->dirty = true;
    eddy__mresp_int(c->out, created ? 1 : 0);
}

void eddy__mcmd_xgroup_delconsumer(eddy__mctx *c) {
    xgroup_ctx x;
    if (!prologue(c, &x, false, true))
        return;
    eddy__mconsumer *consumer = eddy__mconsumer_find(x.g, ARG(c, 4), ARGLEN(c, 4));
    long long pending = 0;
    if (consumer) {
        pending = (long long)consumer->pel.len;
        eddy__mconsumer_delete(x.g, consumer);
        c->dirty = true;
    }
    eddy__mresp_int(c->out, pending);
}

void eddy__mcmd_xgroup_help(eddy__mctx *c) {
    static const char *lines[] = {
        "XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CREATE <key> <groupname> <id|$> [option]",
        "    Create a new consumer group. Options are:",
        "    * MKSTREAM",
        "      Create the empty stream if it does not exist.",
        "    * ENTRIESREAD entries_read",
        "      Set the group's entries_read counter (internal use).",
        "CREATECONSUMER <key> <groupname> <consumer>",
        "    Create a new consumer in the specified group.",
        "DELCONSUMER <key> <groupname> <consumer>",
        "    Remove the specified consumer.",
        "DESTROY <key> <groupname>",
        "    Remove the specified group.",
        "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
        "    Set the current group ID and entries_read counter.",
        "HELP",
        "    Prints this help.",
    };
    size_t n = sizeof(lines) / sizeof(lines[0]);
    eddy__mresp_array(c->out, n);
    for (size_t i = 0; i < n; i++)
        eddy__mresp_status(c->out, lines[i]);
}
