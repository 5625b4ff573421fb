/* SPDX-License-Identifier: BSD-3-Clause */
/* Stream commands that do not involve consumer groups: XADD (NOMKSTREAM, MAXLEN/MINID with = or
 * ~ and LIMIT, explicit, "ms-*" and automatic ids), XLEN, XRANGE, XREVRANGE, XDEL, XTRIM.
 *
 * Arguments are validated in Redis's order (options, then ids, then the key), so that a
 * command with several faults reports the same one a server would. */
#include <string.h>

#include "memory/internal.h"

typedef struct add_args {
    eddy__mtrim trim;
    bool nomkstream;
    bool id_given;
    bool seq_given;
    eddy__mid id;
} add_args;

/* Redis's streamParseAddOrTrimArgsOrReply. Returns the position of the id (XADD) or of the end
 * of the options, or -1 after replying with an error. */
static int parse_add_or_trim(eddy__mctx *c, add_args *a, bool xadd) {
    memset(a, 0, sizeof(*a));
    a->trim.strategy = EDDY__TRIM_NONE;
    a->trim.maxlen = -1;
    a->seq_given = true;
    bool limit_given = false;
    int i = 2;
    for (; i < c->argc; i++) {
        int moreargs = c->argc - 1 - i;
        if (xadd && ARGLEN(c, i) == 1 && ARG(c, i)[0] == '*') {
            break;
        } else if ((ARGIS(c, i, "maxlen") || ARGIS(c, i, "minid")) && moreargs) {
            bool is_maxlen = ARGIS(c, i, "maxlen");
            if (a->trim.strategy != EDDY__TRIM_NONE) {
                eddy__mctx_error(c, "ERR syntax error, MAXLEN and MINID options at the same time "
                                    "are not compatible");
                return -1;
            }
            a->trim.approx = false;
            if (moreargs >= 2 && ARGLEN(c, i + 1) == 1 && ARG(c, i + 1)[0] == '~') {
                a->trim.approx = true;
                i++;
            } else if (moreargs >= 2 && ARGLEN(c, i + 1) == 1 && ARG(c, i + 1)[0] == '=') {
                i++;
            }
            if (is_maxlen) {
                if (!eddy__mctx_ll(c, i + 1, &a->trim.maxlen, NULL))
                    return -1;
                if (a->trim.maxlen < 0) {
                    eddy__mctx_error(c, "ERR The MAXLEN argument must be >= 0.");
                    return -1;
                }
                a->trim.strategy = EDDY__TRIM_MAXLEN;
            } else {
                if (!eddy__mctx_id(c, i + 1, &a->trim.minid, 0, true))
                    return -1;
                a->trim.strategy = EDDY__TRIM_MINID;
            }
            i++;
        } else if (ARGIS(c, i, "limit") && moreargs) {
            if (!eddy__mctx_ll(c, i + 1, &a->trim.limit, NULL))
                return -1;
            if (a->trim.limit < 0) {
                eddy__mctx_error(c, "ERR The LIMIT argument must be >= 0.");
                return -1;
            }
            limit_given = true;
            i++;
        } else if (xadd && ARGIS(c, i, "nomkstream")) {
            a->nomkstream = true;
        } else if (xadd) {
            if (!eddy__mparse_id(ARG(c, i), ARGLEN(c, i), &a->id, 0, true, &a->seq_given)) {
                eddy__mctx_error(c, "ERR Invalid stream ID specified as stream command argument");
                return -1;
            }
            a->id_given = true;
            break;
        } else {
            eddy__mctx_err_syntax(c);
            return -1;
        }
    }
    if (a->trim.limit && a->trim.strategy == EDDY__TRIM_NONE) {
        eddy__mctx_error(c, "ERR syntax error, LIMIT cannot be used without specifying a "
                            "trimming strategy");
        return -1;
    }
    if (!xadd && a->trim.strategy == EDDY__TRIM_NONE) {
        eddy__mctx_error(c, "ERR syntax error, XTRIM must be called with a trimming strategy");
        return -1;
    }
    if (limit_given) {
        if (!a->trim.approx) {
            eddy__mctx_error(c, "ERR syntax error, LIMIT cannot be used without the special ~ "
                                "option");
            return -1;
        }
    } else {
        /* Redis bounds approximate trimming to 100 * stream-node-max-entries per call. */
        a->trim.limit = a->trim.approx ? 10000 : 0;
    }
    return i;
}

void eddy__mcmd_xadd(eddy__mctx *c) {
    add_args a;
    int idpos = parse_add_or_trim(c, &a, true);
    if (idpos < 0)
        return;
    int field_pos = idpos + 1;
    if (c->argc - field_pos < 2 || (c->argc - field_pos) % 2 == 1) {
        eddy__mctx_err_arity(c, "xadd");
        return;
    }
    if (a.id_given && a.seq_given && eddy__mid_is_zero(a.id)) {
        eddy__mctx_error(c, "ERR The ID specified in XADD must be greater than 0-0");
        return;
    }
    bool wrongtype, created = false;
    eddy__mobj *o = eddy__mstream_find(c, 1, &wrongtype);
    if (wrongtype)
        return;
    if (!o) {
        if (a.nomkstream) {
            eddy__mresp_nil(c->out);
            return;
        }
        if (!(o = eddy__mkey_add(c, ARG(c, 1), ARGLEN(c, 1), EDDY__MT_STREAM))) {
            eddy__mctx_oom(c);
            return;
        }
        created = true;
    }
    eddy__mstream *s = o->v.stream;
    if (s->last_id.ms == UINT64_MAX && s->last_id.seq == UINT64_MAX) {
        eddy__mctx_error(c, "ERR The stream has exhausted the last possible ID, unable to add "
                            "more items");
        return;
    }
    eddy__mid id;
    if (a.id_given) {
        id = a.id;
        if (!a.seq_given && s->last_id.ms == a.id.ms) {
            if (s->last_id.seq == UINT64_MAX) {
                eddy__mctx_error(c, "ERR Elements are too large to be stored");
                return;
            }
            id = s->last_id;
            id.seq++;
        }
    } else {
        uint64_t ms = (uint64_t)c->now_ms;
        if (ms < c->eng->last_id_ms)
            ms = c->eng->last_id_ms; /* the wall clock stepped back */
        c->eng->last_id_ms = ms;
        if (ms > s->last_id.ms) {
            id = (eddy__mid){ms, 0};
        } else {
            id = s->last_id;
            eddy__mid_incr(&id);
        }
    }
    if (eddy__mid_cmp(id, s->last_id) <= 0) {
        eddy__mctx_error(c, "ERR The ID specified in XADD is equal or smaller than the target "
                            "stream top item");
        return;
    }
    int nfields = (c->argc - field_pos) / 2;
    if (eddy__mstream_append(s, id, nfields, &c->argv[field_pos], &c->argvlen[field_pos]) != 0) {
        if (created)
            eddy__mkey_delete(c, o);
        eddy__mctx_oom(c);
        return;
    }
    c->dirty = true;
    c->appended = o;
    eddy__mresp_id(c->out, id.ms, id.seq);
    eddy__mstream_trim(s, &a.trim);
}

void eddy__mcmd_xlen(eddy__mctx *c) {
    bool wrongtype;
    eddy__mobj *o = eddy__mstream_find(c, 1, &wrongtype);
    if (!wrongtype)
        eddy__mresp_int(c->out, o ? (long long)o->v.stream->length : 0);
}

static void xrange_generic(eddy__mctx *c, bool rev) {
    int start_arg = rev ? 3 : 2, end_arg = rev ? 2 : 3;
    eddy__mid start, end;
    bool startex, endex;
    if (!eddy__mctx_interval_id(c, start_arg, &start, &startex, 0))
        return;
    if (startex && !eddy__mid_incr(&start)) {
        eddy__mctx_error(c, "ERR invalid start ID for the interval");
        return;
    }
    if (!eddy__mctx_interval_id(c, end_arg, &end, &endex, UINT64_MAX))
        return;
    if (endex && !eddy__mid_decr(&end)) {
        eddy__mctx_error(c, "ERR invalid end ID for the interval");
        return;
    }
    long long count = -1;
    for (int j = 4; j < c->argc; j++) {
        if (ARGIS(c, j, "count") && c->argc - j - 1 >= 1) {
            if (!eddy__mctx_ll(c, j + 1, &count, NULL))
                return;
            if (count < 0)
                count = 0;
            j++;
        } else {
            eddy__mctx_err_syntax(c);
            return;
        }
    }
    bool wrongtype;
    eddy__mobj *o = eddy__mstream_find(c, 1, &wrongtype);
    if (wrongtype)
        return;
    if (!o) {
        eddy__mresp_array(c->out, 0);
        return;
    }
    if (count == 0) {
        eddy__mresp_nil_array(c->out);
        return;
    }
    eddy__mstream_reply_range(c->out, o->v.stream, start, end, count < 0 ? 0 : (size_t)count, rev);
}

void eddy__mcmd_xrange(eddy__mctx *c) { xrange_generic(c, false); }

void eddy__mcmd_xrevrange(eddy__mctx *c) { xrange_generic(c, true); }

void eddy__mcmd_xdel(eddy__mctx *c) {
    bool wrongtype;
    eddy__mobj *o = eddy__mstream_find(c, 1, &wrongtype);
    if (wrongtype)
        return;
    if (!o) {
        eddy__mresp_int(c->out, 0);
        return;
    }
    eddy__mid id;
    for (int j = 2; j < c->argc; j++)
        if (!eddy__mctx_id(c, j, &id, 0, true))
            return;
    eddy__mstream *s = o->v.stream;
    long long deleted = 0;
    for (int j = 2; j < c->argc; j++) {
        eddy__mctx_id(c, j, &id, 0, true);
        if (eddy__mstream_delete(s, id)) {
            if (eddy__mid_cmp(id, s->max_deleted) > 0)
                s->max_deleted = id;
            deleted++;
        }
    }
    if (deleted)
        c->dirty = true;
    eddy__mresp_int(c->out, deleted);
}

void eddy__mcmd_xtrim(eddy__mctx *c) {
    add_args a;
    if (parse_add_or_trim(c, &a, false) < 0)
        return;
    bool wrongtype;
    eddy__mobj *o = eddy__mstream_find(c, 1, &wrongtype);
    if (wrongtype)
        return;
    long long deleted = o ? eddy__mstream_trim(o->v.stream, &a.trim) : 0;
    if (deleted)
        c->dirty = true;
    eddy__mresp_int(c->out, deleted);
}
