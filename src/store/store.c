/* SPDX-License-Identifier: BSD-3-Clause */
/* The event store's core; see store.h for the key layout and the split with the front ends.
 *
 * An append is one server-side step, the "eddy" library's eddy_append function, so that the
 * version check, the position counter, both streams and the optional publish happen together
 * or not at all. The function checks every argument and reads everything it needs before its
 * first write, and it computes ids that XADD cannot refuse (a stream's version is the ms part
 * of its last generated id, deleted entries included, and the next position is above both the
 * counter and the last id of {ns}:es:all), because a Redis function that fails half-way keeps
 * the writes it made. The memory engine runs the same function natively
 * (src/memory/es_append.c); a differential test keeps the two equal.
 *
 * Reads never skip: an entry that does not decode, or whose metadata does not agree with its
 * id, stops the read with its position in the detail. */
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "events/entry.h"
#include "events/event_internal.h"
#include "events/subject.h"
#include "keys.h"
#include "link/cluster.h"
#include "link/redis.h"
#include "util/options.h"
#include "util/reply.h"

enum { T_APPEND = 301, T_READ };

struct eddy__store {
    const eddy__settings *s;
    char *all_key;
    char *pos_key;
};

eddy__store *eddy__store_new(const eddy__settings *s) {
    eddy__store *st = calloc(1, sizeof(*st));
    if (!st)
        return NULL;
    st->s = s;
    st->all_key = eddy__key_es_all(s->ns);
    st->pos_key = eddy__key_es_pos(s->ns);
    if (!st->all_key || !st->pos_key) {
        eddy__store_free(st);
        return NULL;
    }
    return st;
}

const eddy__settings *eddy__store_settings(const eddy__store *st) { return st->s; }

void eddy__store_free(eddy__store *st) {
    if (!st)
        return;
    free(st->all_key);
    free(st->pos_key);
    free(st);
}

eddy_status eddy__store_check_id(const char *id, const char *what, eddy_error *err) {
    if (!id)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "%s is NULL", what);
    if (!eddy__key_name_ok(id)) {
        char shown[64];
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT,
                          "%s '%s': 1-128 printable characters without space, '{', '}' or ':'",
                          what, eddy__printable(shown, sizeof(shown), id, strlen(id)));
    }
    return EDDY_OK;
}

/* A version or position as Redis gives it back: 1-18 decimal digits. */
static bool parse_count(const char *s, size_t len, long long *out) {
    if (len == 0 || len > 18)
        return false;
    long long v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return true;
}

/* An entry id "<n>-0", as every store stream writes them. */
static bool parse_store_id(const char *id, size_t len, long long *n) {
    const char *dash = memchr(id, '-', len);
    return dash && (size_t)(dash - id) + 2 == len && dash[1] == '0' &&
           parse_count(id, (size_t)(dash - id), n) && *n > 0;
}

static bool error_starts(const redisReply *r, const char *prefix) {
    size_t n = strlen(prefix);
    return r->type == REDIS_REPLY_ERROR && r->len >= n && memcmp(r->str, prefix, n) == 0;
}

/* ---- append ----------------------------------------------------------------------------- */

/* Checks one event for the store; `publish` adds the publishing rules. */
static eddy_status check_event(const eddy__store *st, const eddy_event *ev, size_t i, bool publish,
                               eddy_error *err) {
    if (!ev)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "append: event %zu is NULL", i);
    eddy_error why = {0};
    if (eddy_event_validate(ev, &why) != EDDY_OK || eddy__event_check_trace(ev, &why) != EDDY_OK)
        return eddy__fail(err, EDDY_ERR_INVALID_EVENT, "append: event %zu: %s", i, why.detail);
    if (2 * eddy_event_extension_count(ev) + 18 > EDDY__STORE_MAX_FIELDS)
        return eddy__fail(err, EDDY_ERR_TOO_LARGE,
                          "append: event %zu ('%s') has %zu extensions; the store takes at most %d",
                          i, eddy_event_id(ev), eddy_event_extension_count(ev),
                          (EDDY__STORE_MAX_FIELDS - 18) / 2);
    size_t size = eddy_event_size(ev);
    if (size > st->s->max_event_size)
        return eddy__fail(err, EDDY_ERR_TOO_LARGE,
                          "append: event %zu ('%s') is %zu bytes; the limit is %zu", i,
                          eddy_event_id(ev), size, st->s->max_event_size);
    if (publish && eddy_event_extension(ev, EDDY__FAILED_ATTR))
        return eddy__fail(err, EDDY_ERR_RESERVED_ATTRIBUTE,
                          "append: event %zu carries '" EDDY__FAILED_ATTR
                          "', which marks failure replies, and cannot be published",
                          i);
    return EDDY_OK;
}

/* Appends the event's field count and fields. The count comes first in the arguments, so
 * the fields are encoded aside and copied. */
static eddy_status add_event_fields(eddy__cmd *c, const eddy_event *ev) {
    eddy__cmd fields;
    eddy__cmd_init(&fields);
    eddy_status st = eddy__entry_encode(ev, &fields);
    if (st == EDDY_OK) {
        eddy__cmd_fmt(c, "%d", fields.argc);
        for (int i = 0; i < fields.argc; i++)
            eddy__cmd_arg(c, fields.argv[i], fields.argvlen[i]);
        st = eddy__cmd_status(c);
    }
    eddy__cmd_reset(&fields);
    return st;
}

static int by_id(const void *a, const void *b) {
    return strcmp(eddy_event_id(*(const eddy_event *const *)a),
                  eddy_event_id(*(const eddy_event *const *)b));
}

/* With publish_dedup_ms an event id is the key of its publish, so an append publishing two
 * events of one id would publish one: refused rather than half done. Sorted, so a long append
 * costs n log n. */
static eddy_status check_distinct_ids(const eddy_event *const *evs, size_t n, eddy_error *err) {
    const eddy_event **sorted = malloc(n * sizeof(*sorted));
    if (!sorted)
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    memcpy(sorted, evs, n * sizeof(*sorted));
    qsort(sorted, n, sizeof(*sorted), by_id);
    eddy_status st = EDDY_OK;
    for (size_t i = 1; st == EDDY_OK && i < n; i++)
        if (by_id(&sorted[i - 1], &sorted[i]) == 0)
            st = eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT,
                            "append: two events share the id '%s'; with publish_dedup_ms they "
                            "would be published once",
                            eddy_event_id(sorted[i]));
    free(sorted);
    return st;
}

static char *stream_key(const eddy__store *st, const char *stream_id) {
    return eddy__key_es_stream(st->s->ns, stream_id);
}

eddy_status eddy__store_append_prepare(const eddy__store *st, const char *stream_id,
                                       const eddy_event *const *evs, size_t n,
                                       const eddy_append_opts *opts, eddy__cmdlist *out,
                                       eddy_error *err) {
    if (!st || !out)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "append: store is NULL");
    eddy_status rc = eddy__store_check_id(stream_id, "stream id", err);
    if (rc != EDDY_OK)
        return rc;
    if (n == 0)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "append: no events (n is 0)");
    if (!evs)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "append: events is NULL");
    eddy_append_opts full; /* the caller's fields (NULL: none), the defaults of the others */
    eddy__opts_widen(&eddy__append_opts_table, &full, opts);
    opts = &full;
    if (opts->expected_version < EDDY_ANY_VERSION || opts->expected_version > EDDY__STORE_MAX_COUNT)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT,
                          "append: expected version %lld is neither EDDY_ANY_VERSION, "
                          "EDDY_NO_STREAM nor a version",
                          opts->expected_version);
    if ((unsigned long long)n > (unsigned long long)EDDY__STORE_MAX_COUNT)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "append: %zu events", n);
    const char *subject = opts->publish_subject;
    if (subject && (rc = eddy__subject_check(subject, err)) != EDDY_OK)
        return rc;
    for (size_t i = 0; i < n; i++)
        if ((rc = check_event(st, evs[i], i, subject != NULL, err)) != EDDY_OK)
            return rc;
    bool dedup = subject && st->s->publish_dedup_ms;
    if (dedup && (rc = check_distinct_ids(evs, n, err)) != EDDY_OK)
        return rc;

    size_t before = out->n;
    eddy__cmd *c = eddy__cmdlist_add(out, T_APPEND, 0);
    char *skey = stream_key(st, stream_id);
    char *subject_key = subject ? eddy__key_stream(st->s->ns, subject) : NULL;
    char *subjects_key = subject ? eddy__key_subjects(st->s->ns) : NULL;
    rc = c && skey && (!subject || (subject_key && subjects_key)) ? EDDY_OK : EDDY_ERR_NOMEM;
    if (rc == EDDY_OK) {
        eddy__cmd_str(c, "FCALL");
        eddy__cmd_str(c, dedup ? EDDY__STORE_APPEND_DEDUP_FN : EDDY__STORE_APPEND_FN);
        eddy__cmd_fmt(c, "%d", subject ? (dedup ? 7 : 5) : 3);
        eddy__cmd_str(c, skey);
        eddy__cmd_str(c, st->all_key);
        eddy__cmd_str(c, st->pos_key);
        if (subject) {
            eddy__cmd_str(c, subject_key);
            eddy__cmd_str(c, subjects_key);
        }
        if (dedup) {
            char *ids = eddy__key_pubids(st->s->ns, subject);
            char *exp = eddy__key_pubexp(st->s->ns, subject);
            if (ids && exp) {
                eddy__cmd_str(c, ids);
                eddy__cmd_str(c, exp);
            } else {
                rc = EDDY_ERR_NOMEM;
            }
            free(ids);
            free(exp);
        }
        eddy__cmd_fmt(c, "%lld", opts->expected_version);
        eddy__cmd_str(c, stream_id);
        eddy__cmd_fmt(c, "%zu", n);
        for (size_t i = 0; rc == EDDY_OK && i < n; i++)
            rc = add_event_fields(c, evs[i]);
        eddy__cmd_str(c, subject ? subject : "");
        /* A bound past the function's range could never trim anything anyway. */
        long long maxlen = subject ? st->s->stream_maxlen : 0;
        eddy__cmd_fmt(c, "%lld", maxlen > EDDY__STORE_MAX_COUNT ? EDDY__STORE_MAX_COUNT : maxlen);
        if (dedup) {
            eddy__cmd_fmt(c, "%u", st->s->publish_dedup_ms);
            for (size_t i = 0; i < n; i++)
                eddy__cmd_str(c, eddy_event_id(evs[i]));
        }
        if (rc == EDDY_OK)
            rc = eddy__cmdlist_status(out);
    }
    free(skey);
    free(subject_key);
    free(subjects_key);
    if (rc != EDDY_OK) {
        while (out->n > before)
            eddy__cmd_reset(&out->cmds[--out->n]);
        return eddy__fail(err, rc, "append: could not build the command");
    }
    return EDDY_OK;
}

bool eddy__store_append_again(eddy_status st, const eddy_error *err, bool first) {
    eddy__cluster_refusal why = eddy__cluster_refused(st, err);
    return why == EDDY__CLUSTER_MOVED || (first && why != EDDY__CLUSTER_NOT_REFUSED);
}

eddy_status eddy__store_append_result(const eddy__cmdlist *cmds, size_t first, redisReply **replies,
                                      long long *new_version, bool *reload, eddy_error *err) {
    *reload = false;
    if (first >= cmds->n || cmds->tags[first] != T_APPEND)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "append: no append command at %zu",
                          first);
    const redisReply *r = replies[first];
    const eddy__cmd *c = &cmds->cmds[first];
    if (r && error_starts(r, "ERR Function not found")) {
        *reload = true;
        return eddy__fail(err, EDDY_ERR_BACKEND, "append: the server does not know %s",
                          EDDY__STORE_APPEND_FN);
    }
    if (r && error_starts(r, "VERSIONCONFLICT ")) {
        /* The expected version is the first argument after the keys. */
        int nkeys = atoi(c->argv[2]);
        const char *expected = c->argv[3 + nkeys];
        long long actual;
        if (!parse_count(r->str + 16, r->len - 16, &actual))
            return eddy__fail(err, EDDY_ERR_PROTOCOL, "append: unexpected reply %.*s", (int)r->len,
                              r->str);
        return eddy__fail(err, EDDY_ERR_VERSION_CONFLICT,
                          "stream '%s': expected version %s, actual version %lld",
                          c->argv[4 + nkeys], expected, actual);
    }
    eddy_status st = eddy__reply_status(r, "append", err);
    if (st != EDDY_OK)
        return st;
    if (r->type != REDIS_REPLY_INTEGER || r->integer < 1)
        return eddy__fail(err, EDDY_ERR_PROTOCOL, "append: unexpected reply type %d", r->type);
    if (new_version)
        *new_version = r->integer;
    return EDDY_OK;
}

/* ---- reads ------------------------------------------------------------------------------ */

static eddy_status reply_entries(const redisReply *r, const char *what, eddy_error *err) {
    eddy_status st = eddy__reply_status(r, what, err);
    if (st != EDDY_OK)
        return st;
    if (eddy__reply_entries(r) != EDDY_OK)
        return eddy__fail(err, EDDY_ERR_PROTOCOL, "%s: unexpected reply", what);
    return EDDY_OK;
}

/* A decoded stored entry: a view over the reply's bytes (entry.h), valid while the reply
 * lives and until stored_release. */
typedef struct stored {
    const eddy_event *ev;
    eddy__event_view view;
    eddy_event_meta meta;
    char stream_id[129];
} stored;

static void stored_release(stored *e) {
    if (e->ev)
        eddy__event_view_release(&e->view);
    e->ev = NULL;
}

/* Fields an entry usually has: flattened on the stack, a larger entry allocates. */
#define STACK_FIELDS 64

/* The store metadata among an entry's fields, found in one pass. */
typedef struct meta_fields {
    const char *sid, *ver, *pos;
    size_t slen, vlen, plen;
} meta_fields;

static void find_meta(const char *const *fv, const size_t *fvlen, size_t nfv, meta_fields *m) {
    memset(m, 0, sizeof(*m));
    for (size_t i = 0; i + 1 < nfv; i += 2) {
        if (fvlen[i] < 2 || fv[i][0] != '_')
            continue;
        const char *name = fv[i], *v = fv[i + 1] ? fv[i + 1] : "";
        size_t n = fvlen[i];
        if (!m->sid && n == sizeof(EDDY__F_STREAM) - 1 && memcmp(name, EDDY__F_STREAM, n) == 0)
            m->sid = v, m->slen = fvlen[i + 1];
        else if (!m->ver && n == sizeof(EDDY__F_VERSION) - 1 &&
                 memcmp(name, EDDY__F_VERSION, n) == 0)
            m->ver = v, m->vlen = fvlen[i + 1];
        else if (!m->pos && n == sizeof(EDDY__F_POSITION) - 1 &&
                 memcmp(name, EDDY__F_POSITION, n) == 0)
            m->pos = v, m->plen = fvlen[i + 1];
    }
}

/* Decodes entry i of a checked XRANGE reply into a view over it. `n` is what the entry id
 * counts (a version in a stream, a position in the store); `where` names it for the detail.
 * The metadata must agree with the id, and (stream_id not NULL) with the stream read. On
 * EDDY_OK the caller calls stored_release. */
static eddy_status decode_entry(const eddy__store *st, const redisReply *r, size_t i,
                                bool by_version, const char *stream_id, stored *out,
                                eddy_error *err) {
    eddy__entry_view v = eddy__reply_entry(r, i);
    const char *where = by_version ? "version" : "position";
    char shown[64];
    long long n;
    out->ev = NULL;
    if (!parse_store_id(v.id, v.idlen, &n))
        return eddy__fail(err, EDDY_ERR_MALFORMED, "entry '%s' is not a store entry id",
                          eddy__printable(shown, sizeof(shown), v.id, v.idlen));
    if (!v.fields)
        return eddy__fail(err, EDDY_ERR_MALFORMED, "%s %lld: entry without fields", where, n);
    size_t nfv = v.fields->elements;
    const char *fv_small[STACK_FIELDS];
    size_t fvlen_small[STACK_FIELDS];
    const char **fv = fv_small;
    size_t *fvlen = fvlen_small;
    if (nfv > STACK_FIELDS) {
        fv = malloc(nfv * sizeof(*fv));
        fvlen = malloc(nfv * sizeof(*fvlen));
        if (!fv || !fvlen) {
            free(fv);
            free(fvlen);
            return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory reading %s %lld", where, n);
        }
    }
    eddy_status rc = EDDY_OK;
    meta_fields m;
    if (!eddy__entry_flatten(v.fields, fv, fvlen))
        rc = eddy__fail(err, EDDY_ERR_PROTOCOL, "%s %lld: a field is not a string", where, n);
    if (rc == EDDY_OK) {
        find_meta(fv, fvlen, nfv, &m);
        out->meta.version = out->meta.position = 0;
        if (!m.sid || !m.ver || !m.pos || m.slen == 0 || m.slen >= sizeof(out->stream_id) ||
            memchr(m.sid, '\0', m.slen) || !parse_count(m.ver, m.vlen, &out->meta.version) ||
            !parse_count(m.pos, m.plen, &out->meta.position) || out->meta.version < 1 ||
            out->meta.position < 1)
            rc = eddy__fail(err, EDDY_ERR_MALFORMED,
                            "%s %lld: missing or bad store metadata (_stream, _version, "
                            "_position)",
                            where, n);
        else if ((by_version ? out->meta.version : out->meta.position) != n ||
                 (stream_id &&
                  (strlen(stream_id) != m.slen || memcmp(stream_id, m.sid, m.slen) != 0)))
            rc = eddy__fail(err, EDDY_ERR_MALFORMED,
                            "%s %lld: the store metadata does not match the entry", where, n);
    }
    if (rc == EDDY_OK) {
        memcpy(out->stream_id, m.sid, m.slen);
        out->stream_id[m.slen] = '\0';
        out->meta.stream_id = out->stream_id;
        eddy_error why; /* every refusal writes it */
        rc = eddy__entry_decode_view(fv, fvlen, nfv, st->s->max_event_size, &out->view, &out->ev,
                                     &why);
        if (rc != EDDY_OK)
            rc = eddy__fail(err, rc, "stream '%s' version %lld (position %lld): %s", out->stream_id,
                            out->meta.version, out->meta.position, why.detail);
    }
    if (fv != fv_small) {
        free(fv);
        free(fvlen);
    }
    return rc;
}

static eddy_status call(eddy_stored_fn fn, void *user, const stored *e, eddy_error *err) {
    eddy_status st = fn(e->ev, &e->meta, user);
    if (st != EDDY_OK)
        return eddy__fail(err, st, "the read was stopped by its callback at position %lld (%s)",
                          e->meta.position, eddy_status_name(st));
    return EDDY_OK;
}

eddy_status eddy__store_read_stream_cmd(const eddy__store *st, const char *stream_id,
                                        long long after_version, eddy__cmdlist *out,
                                        eddy_error *err) {
    if (!st || !out)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "read: store is NULL");
    eddy_status rc = eddy__store_check_id(stream_id, "stream id", err);
    if (rc != EDDY_OK)
        return rc;
    if (after_version < 0)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "read: after_version %lld is negative",
                          after_version);
    eddy__cmd *c = eddy__cmdlist_add(out, T_READ, 0);
    char *key = stream_key(st, stream_id);
    if (c && key) {
        eddy__cmd_str(c, "XRANGE");
        eddy__cmd_str(c, key);
        eddy__cmd_fmt(c, "(%lld-0", after_version);
        eddy__cmd_str(c, "+");
        eddy__cmd_str(c, "COUNT");
        eddy__cmd_fmt(c, "%d", EDDY__STORE_PAGE);
    }
    free(key);
    if (!c || !key || eddy__cmd_status(c) != EDDY_OK) {
        if (c)
            eddy__cmd_reset(&out->cmds[--out->n]);
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    }
    return EDDY_OK;
}

eddy_status eddy__store_read_stream_page(const eddy__store *st, const char *stream_id,
                                         const redisReply *r, eddy_stored_fn fn, void *user,
                                         long long *after, bool *more, eddy_error *err) {
    *more = false;
    eddy_status rc = reply_entries(r, "read stream", err);
    for (size_t i = 0; rc == EDDY_OK && i < r->elements; i++) {
        stored e;
        if ((rc = decode_entry(st, r, i, true, stream_id, &e, err)) == EDDY_OK &&
            (rc = call(fn, user, &e, err)) == EDDY_OK)
            *after = e.meta.version;
        stored_release(&e);
    }
    if (rc == EDDY_OK)
        *more = r->elements == EDDY__STORE_PAGE;
    return rc;
}

eddy_status eddy__store_read_all_cmd(const eddy__store *st, long long after_position,
                                     size_t max_entries, eddy__cmdlist *out, eddy_error *err) {
    if (!st || !out)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "read: store is NULL");
    if (after_position < 0)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "read: after_position %lld is negative",
                          after_position);
    if (max_entries == 0)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "read: max_entries is 0");
    eddy__cmd *c = eddy__cmdlist_add(out, T_READ, 0);
    if (!c)
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    eddy__cmd_str(c, "XRANGE");
    eddy__cmd_str(c, st->all_key);
    eddy__cmd_fmt(c, "(%lld-0", after_position);
    eddy__cmd_str(c, "+");
    eddy__cmd_str(c, "COUNT");
    eddy__cmd_fmt(c, "%zu", max_entries);
    if (eddy__cmd_status(c) != EDDY_OK) {
        eddy__cmd_reset(&out->cmds[--out->n]);
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    }
    return EDDY_OK;
}

eddy_status eddy__store_read_all_page(const eddy__store *st, const redisReply *r,
                                      const eddy_filter *filter, eddy_stored_fn fn, void *user,
                                      long long after_position, long long *next_position,
                                      eddy_error *err) {
    *next_position = after_position;
    eddy_status rc = reply_entries(r, "read all", err);
    for (size_t i = 0; rc == EDDY_OK && i < r->elements; i++) {
        stored e;
        if ((rc = decode_entry(st, r, i, false, NULL, &e, err)) == EDDY_OK &&
            (!eddy_filter_matches(filter, e.ev) || (rc = call(fn, user, &e, err)) == EDDY_OK))
            *next_position = e.meta.position;
        stored_release(&e);
    }
    return rc;
}

eddy_status eddy__store_head_cmd(const eddy__store *st, eddy__cmdlist *out) {
    eddy__cmd *c = eddy__cmdlist_add(out, T_READ, 0);
    if (!c)
        return EDDY_ERR_NOMEM;
    eddy__cmd_str(c, "GET");
    eddy__cmd_str(c, st->pos_key);
    if (eddy__cmd_status(c) != EDDY_OK) {
        eddy__cmd_reset(&out->cmds[--out->n]);
        return EDDY_ERR_NOMEM;
    }
    return EDDY_OK;
}

eddy_status eddy__store_head_result(const redisReply *r, long long *position, eddy_error *err) {
    eddy_status st = eddy__reply_status(r, "head", err);
    if (st != EDDY_OK)
        return st;
    if (r->type == REDIS_REPLY_NIL) {
        *position = 0;
        return EDDY_OK;
    }
    if (r->type != REDIS_REPLY_STRING)
        return eddy__fail(err, EDDY_ERR_PROTOCOL, "head: unexpected reply type %d", r->type);
    if (!parse_count(r->str, r->len, position)) {
        char shown[64];
        return eddy__fail(err, EDDY_ERR_MALFORMED, "head: the position counter holds '%s'",
                          eddy__printable(shown, sizeof(shown), r->str, r->len));
    }
    return EDDY_OK;
}

/* ---- checkpoints ------------------------------------------------------------------------ */

eddy_status eddy__ckpt_cmd(const eddy__store *st, eddy__ckpt_op op, const char *feed_id,
                           const char *value, eddy__cmdlist *out, eddy_error *err) {
    if (!st || !out)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "checkpoint: store is NULL");
    eddy_status rc = eddy__store_check_id(feed_id, "feed id", err);
    if (rc != EDDY_OK)
        return rc;
    if (op == EDDY__CKPT_SAVE && !value)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "checkpoint '%s': value is NULL",
                          feed_id);
    static const char *const verbs[] = {"EXISTS", "GET", "SET", "DEL"};
    eddy__cmd *c = eddy__cmdlist_add(out, T_READ, op);
    char *key = eddy__key_checkpoint(st->s->ns, feed_id);
    if (c && key) {
        eddy__cmd_str(c, verbs[op]);
        eddy__cmd_str(c, key);
        if (op == EDDY__CKPT_SAVE)
            eddy__cmd_str(c, value);
    }
    free(key);
    if (!c || !key || eddy__cmd_status(c) != EDDY_OK) {
        if (c)
            eddy__cmd_reset(&out->cmds[--out->n]);
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    }
    return EDDY_OK;
}

eddy_status eddy__ckpt_exists_result(const redisReply *r, bool *exists, eddy_error *err) {
    eddy_status st = eddy__reply_status(r, "checkpoint exists", err);
    if (st != EDDY_OK)
        return st;
    if (r->type != REDIS_REPLY_INTEGER || r->integer < 0 || r->integer > 1)
        return eddy__fail(err, EDDY_ERR_PROTOCOL, "checkpoint exists: unexpected reply");
    *exists = r->integer == 1;
    return EDDY_OK;
}

eddy_status eddy__ckpt_read_result(const redisReply *r, char *buf, size_t size, bool *found,
                                   eddy_error *err) {
    eddy_status st = eddy__reply_status(r, "checkpoint read", err);
    if (st != EDDY_OK)
        return st;
    if (r->type == REDIS_REPLY_NIL) {
        *found = false;
        buf[0] = '\0';
        return EDDY_OK;
    }
    if (r->type != REDIS_REPLY_STRING)
        return eddy__fail(err, EDDY_ERR_PROTOCOL, "checkpoint read: unexpected reply type %d",
                          r->type);
    if (r->len >= size) {
        buf[0] = '\0';
        return eddy__fail(err, EDDY_ERR_TOO_LARGE,
                          "checkpoint read: the marker is %zu bytes; the buffer holds %zu", r->len,
                          size - 1);
    }
    memcpy(buf, r->str, r->len);
    buf[r->len] = '\0';
    *found = true;
    return EDDY_OK;
}

eddy_status eddy__ckpt_write_result(const redisReply *r, eddy__ckpt_op op, eddy_error *err) {
    const char *what = op == EDDY__CKPT_SAVE ? "checkpoint save" : "checkpoint remove";
    eddy_status st = eddy__reply_status(r, what, err);
    if (st != EDDY_OK)
        return st;
    bool ok = op == EDDY__CKPT_SAVE ? r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0
                                    : r->type == REDIS_REPLY_INTEGER;
    return ok ? EDDY_OK : eddy__fail(err, EDDY_ERR_PROTOCOL, "%s: unexpected reply", what);
}
