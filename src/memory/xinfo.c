/* SPDX-License-Identifier: BSD-3-Clause */
/* XINFO STREAM (plain and FULL [COUNT n]), XINFO GROUPS, XINFO CONSUMERS and XINFO HELP, with
 * Redis 7.0's field names and order. Groups and consumers are listed by name, as Redis's radix
 * trees list them.
 *
 * One number cannot be reproduced: "radix-tree-nodes" counts the internal nodes of Redis's
 * radix tree; the engine reports a plausible value (nodes + 1). "radix-tree-keys" (the number of
 * listpack nodes) is exact, thanks to the node emulation in stream.c. */
#include <string.h>

#include "memory/internal.h"

static eddy__mobj *lookup(eddy__mctx *c) {
    bool wrongtype;
    eddy__mobj *o = eddy__mstream_find(c, 2, &wrongtype);
    if (!o && !wrongtype)
        eddy__mctx_error(c, "ERR no such key");
    return o;
}

static void reply_entries_read(eddy__mctx *c, const eddy__mgroup *g) {
    if (g->entries_read != EDDY__ENTRIES_READ_INVALID)
        eddy__mresp_int(c->out, g->entries_read);
    else
        eddy__mresp_nil(c->out);
}

static void reply_lag(eddy__mctx *c, const eddy__mstream *s, const eddy__mgroup *g) {
    bool valid;
    long long lag = eddy__mgroup_lag(s, g, &valid);
    if (valid)
        eddy__mresp_int(c->out, lag);
    else
        eddy__mresp_nil(c->out);
}

static void reply_header(eddy__mctx *c, const eddy__mstream *s) {
    size_t keys = s->nn - s->nhead;
    eddy__mresp_cstr(c->out, "length");
    eddy__mresp_int(c->out, (long long)s->length);
    eddy__mresp_cstr(c->out, "radix-tree-keys");
    eddy__mresp_int(c->out, (long long)keys);
    eddy__mresp_cstr(c->out, "radix-tree-nodes");
    eddy__mresp_int(c->out, (long long)keys + 1);
    eddy__mresp_cstr(c->out, "last-generated-id");
    eddy__mresp_id(c->out, s->last_id.ms, s->last_id.seq);
    eddy__mresp_cstr(c->out, "max-deleted-entry-id");
    eddy__mresp_id(c->out, s->max_deleted.ms, s->max_deleted.seq);
    eddy__mresp_cstr(c->out, "entries-added");
    eddy__mresp_int(c->out, (long long)s->entries_added);
    eddy__mresp_cstr(c->out, "recorded-first-entry-id");
    eddy__mresp_id(c->out, s->first_id.ms, s->first_id.seq);
}

static void reply_edge(eddy__mctx *c, eddy__mstream *s, bool first) {
    eddy__mid id;
    if (!s->length) {
        eddy__mresp_nil(c->out);
        return;
    }
    if (first)
        id = s->first_id;
    else
        eddy__mstream_last_live(s, &id);
    eddy__mstream_reply_entry(c->out, eddy__mstream_get(s, id));
}

static bool reply_full(eddy__mctx *c, eddy__mstream *s, long long count) {
    eddy__mresp_array(c->out, 18);
    reply_header(c, s);
    eddy__mresp_cstr(c->out, "entries");
    eddy__mstream_reply_range(c->out, s, (eddy__mid){0, 0}, EDDY__MID_MAX, (size_t)count, false);
    eddy__mresp_cstr(c->out, "groups");
    size_t ng;
    eddy__mgroup **gs = eddy__mstream_sorted_groups(s, &ng);
    if (!gs)
        return false;
    eddy__mresp_array(c->out, ng);
    bool ok = true;
    for (size_t i = 0; i < ng && ok; i++) {
        eddy__mgroup *g = gs[i];
        eddy__mresp_array(c->out, 14);
        eddy__mresp_cstr(c->out, "name");
        eddy__mresp_bulk(c->out, g->name, g->nlen);
        eddy__mresp_cstr(c->out, "last-delivered-id");
        eddy__mresp_id(c->out, g->last_id.ms, g->last_id.seq);
        eddy__mresp_cstr(c->out, "entries-read");
        reply_entries_read(c, g);
        eddy__mresp_cstr(c->out, "lag");
        reply_lag(c, s, g);
        eddy__mresp_cstr(c->out, "pel-count");
        eddy__mresp_int(c->out, (long long)g->pel.len);
        eddy__mresp_cstr(c->out, "pending");
        size_t mark = eddy__mresp_defer(c->out), n = 0;
        for (eddy__mskl_node *node = eddy__mskl_first(&g->pel);
             node && (!count || n < (size_t)count); node = eddy__mskl_next(node), n++) {
            const eddy__mnack *nack = node->item;
            eddy__mresp_array(c->out, 4);
            eddy__mresp_id(c->out, nack->id.ms, nack->id.seq);
            eddy__mresp_bulk(c->out, nack->consumer->name, nack->consumer->nlen);
            eddy__mresp_int(c->out, nack->delivery_time);
            eddy__mresp_int(c->out, (long long)nack->delivery_count);
        }
        eddy__mresp_set_array(c->out, mark, n);
        eddy__mresp_cstr(c->out, "consumers");
        size_t nc;
        eddy__mconsumer **cs = eddy__mgroup_sorted_consumers(g, &nc);
        if (!cs) {
            ok = false;
            break;
        }
        eddy__mresp_array(c->out, nc);
        for (size_t k = 0; k < nc; k++) {
            eddy__mconsumer *cons = cs[k];
            eddy__mresp_array(c->out, 8);
            eddy__mresp_cstr(c->out, "name");
            eddy__mresp_bulk(c->out, cons->name, cons->nlen);
            eddy__mresp_cstr(c->out, "seen-time");
            eddy__mresp_int(c->out, cons->seen_time);
            eddy__mresp_cstr(c->out, "pel-count");
            eddy__mresp_int(c->out, (long long)cons->pel.len);
            eddy__mresp_cstr(c->out, "pending");
            size_t pmark = eddy__mresp_defer(c->out), pn = 0;
            for (eddy__mskl_node *node = eddy__mskl_first(&cons->pel);
                 node && (!count || pn < (size_t)count); node = eddy__mskl_next(node), pn++) {
                const eddy__mnack *nack = node->item;
                eddy__mresp_array(c->out, 3);
                eddy__mresp_id(c->out, nack->id.ms, nack->id.seq);
                eddy__mresp_int(c->out, nack->delivery_time);
                eddy__mresp_int(c->out, (long long)nack->delivery_count);
            }
            eddy__mresp_set_array(c->out, pmark, pn);
        }
        eddy__mem_free(cs);
    }
    eddy__mem_free(gs);
    return ok;
}

static void stream_syntax_error(eddy__mctx *c) {
    size_t n = ARGLEN(c, 1) > 128 ? 128 : ARGLEN(c, 1);
    eddy__mctx_errorf(c,
                      "ERR unknown subcommand or wrong number of arguments for '%.*s'. Try XINFO "
                      "HELP.",
                      eddy__mname_len(ARG(c, 1), n), ARG(c, 1));
}

void eddy__mcmd_xinfo_stream(eddy__mctx *c) {
    eddy__mobj *o = lookup(c);
    if (!o)
        return;
    eddy__mstream *s = o->v.stream;
    bool full = false;
    long long count = 10;
    if (c->argc > 3) {
        if (!ARGIS(c, 3, "full")) {
            stream_syntax_error(c);
            return;
        }
        full = true;
        if (c->argc > 4) {
            if (c->argc != 6 || !ARGIS(c, 4, "count")) {
                stream_syntax_error(c);
                return;
            }
            if (!eddy__mctx_ll(c, 5, &count, NULL))
                return;
            if (count < 0)
                count = 10;
        }
    }
    if (full) {
        if (!reply_full(c, s, count))
            eddy__mctx_oom(c);
        return;
    }
    eddy__mresp_array(c->out, 20);
    reply_header(c, s);
    eddy__mresp_cstr(c->out, "groups");
    eddy__mresp_int(c->out, (long long)eddy__mdict_size(&s->groups));
    eddy__mresp_cstr(c->out, "first-entry");
    reply_edge(c, s, true);
    eddy__mresp_cstr(c->out, "last-entry");
    reply_edge(c, s, false);
}

void eddy__mcmd_xinfo_groups(eddy__mctx *c) {
    eddy__mobj *o = lookup(c);
    if (!o)
        return;
    eddy__mstream *s = o->v.stream;
    size_t n;
    eddy__mgroup **gs = eddy__mstream_sorted_groups(s, &n);
    if (!gs) {
        eddy__mctx_oom(c);
        return;
    }
    eddy__mresp_array(c->out, n);
    for (size_t i = 0; i < n; i++) {
        eddy__mgroup *g = gs[i];
        eddy__mresp_array(c->out, 12);
        eddy__mresp_cstr(c->out, "name");
        eddy__mresp_bulk(c->out, g->name, g->nlen);
        eddy__mresp_cstr(c->out, "consumers");
        eddy__mresp_int(c->out, (long long)eddy__mdict_size(&g->consumers));
        eddy__mresp_cstr(c->out, "pending");
        eddy__mresp_int(c->out, (long long)g->pel.len);
        eddy__mresp_cstr(c->out, "last-delivered-id");
        eddy__mresp_id(c->out, g->last_id.ms, g->last_id.seq);
        eddy__mresp_cstr(c->out, "entries-read");
        reply_entries_read(c, g);
        eddy__mresp_cstr(c->out, "lag");
        reply_lag(c, s, g);
    }
    eddy__mem_free(gs);
}

void eddy__mcmd_xinfo_consumers(eddy__mctx *c) {
    eddy__mobj *o = lookup(c);
    if (!o)
        return;
    eddy__mgroup *g = eddy__mgroup_find(o->v.stream, ARG(c, 3), ARGLEN(c, 3));
    if (!g) {
        eddy__mctx_errorf(c, "NOGROUP No such consumer group '%.*s' for key name '%.*s'",
                          eddy__mname_len(ARG(c, 3), ARGLEN(c, 3)), ARG(c, 3),
                          eddy__mname_len(ARG(c, 2), ARGLEN(c, 2)), ARG(c, 2));
        return;
    }
    size_t n;
    eddy__mconsumer **cs = eddy__mgroup_sorted_consumers(g, &n);
    if (!cs) {
        eddy__mctx_oom(c);
        return;
    }
    eddy__mresp_array(c->out, n);
    for (size_t i = 0; i < n; i++) {
        long long idle = c->now_ms - cs[i]->seen_time;
        eddy__mresp_array(c->out, 6);
        eddy__mresp_cstr(c->out, "name");
        eddy__mresp_bulk(c->out, cs[i]->name, cs[i]->nlen);
        eddy__mresp_cstr(c->out, "pending");
        eddy__mresp_int(c->out, (long long)cs[i]->pel.len);
        eddy__mresp_cstr(c->out, "idle");
        eddy__mresp_int(c->out, idle < 0 ? 0 : idle);
    }
    eddy__mem_free(cs);
}

void eddy__mcmd_xinfo_help(eddy__mctx *c) {
    static const char *lines[] = {
        "XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CONSUMERS <key> <groupname>",
        "    Show consumers of <groupname>.",
        "GROUPS <key>",
        "    Show the stream consumer groups.",
        "STREAM <key> [FULL [COUNT <count>]",
        "    Show information about the stream.",
        "HELP",
        "    Prints this help.",
    };
    size_t n = sizeof(lines) / sizeof(lines[0]);
    eddy__mresp_array(c->out, n);
    for (size_t i = 0; i < n; i++)
        eddy__mresp_status(c->out, lines[i]);
}
