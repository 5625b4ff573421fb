/* SPDX-License-Identifier: BSD-3-Clause */
/* Dead letters as data; see dlq.h.
 *
 * Rules:
 * - A dead letter is one allocation: the struct, the original pairs' pointer and length
 *   arrays, and every byte it shows (each string NUL-terminated, so the event can be a view
 *   over them). It is independent of the reply it came from and of the handle.
 * - A replay is one MULTI/EXEC: the publish and the delete run together or not at all, except
 *   when the server runs the transaction but refuses the publish inside it (a subject key
 *   that is not a stream): then the delete ran alone, and the caller writes the dead letter
 *   back (eddy__dlq_restore_cmd) so nothing is lost.
 * - Replays never retry: the server may have run what failed in transit. */
#include "bus/dlq.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "events/entry.h"
#include "events/subject.h"
#include "keys.h"
#include "link/redis.h"
#include "log.h"
#include "util/options.h"
#include "util/reply.h"
#include "util/resp_scan.h"

#define DLQ_PREFIX "_dlq_"

enum { F_SUBJECT, F_ENTRY, F_DELIVERIES, F_REASON, F_GROUP, F_COUNT };
static const char *const dlq_fields[F_COUNT] = {"_dlq_subject", "_dlq_entry", "_dlq_deliveries",
                                                "_dlq_reason", "_dlq_group"};

static bool is_dlq_field(const char *name, size_t len) {
    return len >= sizeof(DLQ_PREFIX) - 1 && memcmp(name, DLQ_PREFIX, sizeof(DLQ_PREFIX) - 1) == 0;
}

static int dlq_field_index(const char *name, size_t len) {
    for (int i = 0; i < F_COUNT; i++)
        if (strlen(dlq_fields[i]) == len && memcmp(dlq_fields[i], name, len) == 0)
            return i;
    return -1;
}

/* ---- one dead letter ------------------------------------------------------------------- */

struct dl_block {
    eddy_dead_letter dl;
    size_t max_size;
};

static char *put(char **at, const char *s, size_t len) {
    char *p = *at;
    memcpy(p, s, len);
    p[len] = '\0';
    *at = p + len + 1;
    return p;
}

eddy_dead_letter *eddy__dead_letter_new(const char *id, size_t idlen, const char *const *fv,
                                        const size_t *fvlen, size_t nfv, size_t max_size) {
    const char *dv[F_COUNT] = {NULL};
    size_t dvlen[F_COUNT] = {0};
    size_t norig = 0, bytes = idlen + 1 + 1;
    for (size_t i = 0; i + 1 < nfv; i += 2) {
        if (is_dlq_field(fv[i], fvlen[i])) {
            int k = dlq_field_index(fv[i], fvlen[i]);
            if (k >= 0 && !dv[k]) {
                dv[k] = fv[i + 1];
                dvlen[k] = fvlen[i + 1];
                bytes += fvlen[i + 1] + 1;
            }
            continue;
        }
        norig += 2;
        bytes += fvlen[i] + 1 + fvlen[i + 1] + 1;
    }
    size_t head = sizeof(struct dl_block);
    size_t arrays = norig * (sizeof(char *) + sizeof(size_t));
    if (bytes > SIZE_MAX - head - arrays)
        return NULL;
    struct dl_block *b = malloc(head + arrays + bytes);
    if (!b)
        return NULL;
    memset(b, 0, sizeof(*b));
    b->max_size = max_size;
    eddy_dead_letter *dl = &b->dl;
    dl->fv = (const char **)(void *)(b + 1);
    dl->fvlen = (size_t *)(void *)(dl->fv + norig);
    char *at = (char *)(dl->fvlen + norig);
    const char *empty = put(&at, "", 0);
    dl->id = put(&at, id, idlen);
    const char **slots[F_COUNT] = {&dl->subject, &dl->entry, NULL, &dl->reason, &dl->group};
    for (int k = 0; k < F_COUNT; k++) {
        const char *v = dv[k] ? put(&at, dv[k], dvlen[k]) : empty;
        if (slots[k])
            *slots[k] = v;
        else
            dl->deliveries = (unsigned)strtoul(v, NULL, 10);
    }
    for (size_t i = 0; i + 1 < nfv; i += 2) {
        if (is_dlq_field(fv[i], fvlen[i]))
            continue;
        dl->fvlen[dl->nfv] = fvlen[i];
        dl->fv[dl->nfv++] = put(&at, fv[i], fvlen[i]);
        dl->fvlen[dl->nfv] = fvlen[i + 1];
        dl->fv[dl->nfv++] = put(&at, fv[i + 1], fvlen[i + 1]);
    }
    dl->decoded = eddy__entry_decode_view((const char *const *)dl->fv, dl->fvlen, dl->nfv, max_size,
                                          &dl->view, &dl->event, &dl->decode_err);
    if (dl->decoded == EDDY_ERR_NOMEM) {
        free(b);
        return NULL;
    }
    if (dl->decoded != EDDY_OK)
        dl->event = NULL;
    return dl;
}

void eddy_dead_letter_free(eddy_dead_letter *dl) {
    if (!dl)
        return;
    if (dl->event)
        eddy__event_view_release(&dl->view);
    free(dl); /* the block starts with it */
}

eddy_dead_letter *eddy_dead_letter_dup(const eddy_dead_letter *dl) {
    if (!dl)
        return NULL;
    size_t n = dl->nfv + 2 * F_COUNT;
    const char **fv = malloc(n * sizeof(*fv));
    size_t *fvlen = malloc(n * sizeof(*fvlen));
    eddy_dead_letter *copy = NULL;
    if (fv && fvlen) {
        char deliveries[24];
        snprintf(deliveries, sizeof(deliveries), "%u", dl->deliveries);
        const char *dv[F_COUNT] = {dl->subject, dl->entry, deliveries, dl->reason, dl->group};
        for (int k = 0; k < F_COUNT; k++) {
            fv[2 * k] = dlq_fields[k];
            fvlen[2 * k] = strlen(dlq_fields[k]);
            fv[2 * k + 1] = dv[k];
            fvlen[2 * k + 1] = strlen(dv[k]);
        }
        memcpy(fv + 2 * F_COUNT, dl->fv, dl->nfv * sizeof(*fv));
        memcpy(fvlen + 2 * F_COUNT, dl->fvlen, dl->nfv * sizeof(*fvlen));
        copy = eddy__dead_letter_new(dl->id, strlen(dl->id), fv, fvlen, n,
                                     ((const struct dl_block *)(const void *)dl)->max_size);
    }
    free(fv);
    free(fvlen);
    return copy;
}

const char *eddy_dead_letter_id(const eddy_dead_letter *dl) { return dl ? dl->id : ""; }
const char *eddy_dead_letter_group(const eddy_dead_letter *dl) { return dl ? dl->group : ""; }
const char *eddy_dead_letter_subject(const eddy_dead_letter *dl) { return dl ? dl->subject : ""; }
const char *eddy_dead_letter_entry_id(const eddy_dead_letter *dl) { return dl ? dl->entry : ""; }
const char *eddy_dead_letter_reason(const eddy_dead_letter *dl) { return dl ? dl->reason : ""; }
unsigned eddy_dead_letter_deliveries(const eddy_dead_letter *dl) { return dl ? dl->deliveries : 0; }

eddy_status eddy_dead_letter_event(const eddy_dead_letter *dl, const eddy_event **ev,
                                   eddy_error *err) {
    if (!dl || !ev) {
        if (ev)
            *ev = NULL;
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "dead letter or ev is NULL");
    }
    *ev = dl->event;
    if (dl->decoded != EDDY_OK)
        return eddy__fail(err, dl->decoded, "dead letter %s: %s", dl->id, dl->decode_err.detail);
    return EDDY_OK;
}

const char *eddy_dead_letter_field(const eddy_dead_letter *dl, const char *name, size_t *len) {
    if (!dl || !name)
        return NULL;
    size_t nlen = strlen(name);
    for (size_t i = 0; i + 1 < dl->nfv; i += 2)
        if (dl->fvlen[i] == nlen && memcmp(dl->fv[i], name, nlen) == 0) {
            if (len)
                *len = dl->fvlen[i + 1];
            return dl->fv[i + 1];
        }
    return NULL;
}

void eddy_dlq_cursor_init_sized(eddy_dlq_cursor *cursor, size_t size) {
    eddy_dlq_cursor full;
    memset(&full, 0, sizeof(full));
    eddy__init_sized(cursor, size, &full, sizeof(full));
}

/* ---- commands -------------------------------------------------------------------------- */

static bool digits(const char *s, size_t n) {
    if (n == 0 || n > 20)
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    return true;
}

bool eddy__dlq_id_ok(const char *id) {
    if (!id)
        return false;
    const char *dash = strchr(id, '-');
    return dash && digits(id, (size_t)(dash - id)) && digits(dash + 1, strlen(dash + 1));
}

static eddy_status check_group(const char *group, eddy_error *err) {
    if (!group || !*group)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "dead letters: group is NULL or empty");
    return EDDY_OK;
}

static eddy_status check_id(const char *id, eddy_error *err) {
    if (!eddy__dlq_id_ok(id))
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT,
                          "dead letters: '%.60s' is not a stream entry id (<ms>-<seq>)",
                          id ? id : "(null)");
    return EDDY_OK;
}

/* Adds a command on the group's dead-letter key: "<verb> {ns}:dlq:<group>". */
static eddy__cmd *add_on_key(const eddy__settings *s, const char *group, eddy__cmdlist *out,
                             const char *verb) {
    char *key = eddy__key_dlq(s->ns, group);
    eddy__cmd *c = key ? eddy__cmdlist_add(out, 0, 0) : NULL;
    if (c) {
        eddy__cmd_str(c, verb);
        eddy__cmd_str(c, key);
    }
    free(key);
    return c;
}

static eddy__cmd *add_plain(eddy__cmdlist *out, const char *verb) {
    eddy__cmd *c = eddy__cmdlist_add(out, 0, 0);
    if (c)
        eddy__cmd_str(c, verb);
    return c;
}

/* Checks what was appended from `before`; on failure removes it. */
static eddy_status finish(eddy__cmdlist *out, size_t before, bool ok, eddy_error *err) {
    if (ok && eddy__cmdlist_status_from(out, before) == EDDY_OK)
        return EDDY_OK;
    while (out->n > before)
        eddy__cmd_reset(&out->cmds[--out->n]);
    return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
}

eddy_status eddy__dlq_range_cmd(const eddy__settings *s, const char *group, const char *after,
                                const char *last, size_t max, eddy__cmdlist *out, eddy_error *err) {
    eddy_status st = check_group(group, err);
    if (st != EDDY_OK)
        return st;
    if (!after || max == 0)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "dead letters: no cursor, or max 0");
    if (*after && (st = check_id(after, err)) != EDDY_OK)
        return st;
    if (last && (st = check_id(last, err)) != EDDY_OK)
        return st;
    size_t before = out->n;
    eddy__cmd *c = add_on_key(s, group, out, "XRANGE");
    if (c) {
        if (*after)
            eddy__cmd_fmt(c, "(%s", after);
        else
            eddy__cmd_str(c, "-");
        eddy__cmd_str(c, last ? last : "+");
        eddy__cmd_str(c, "COUNT");
        eddy__cmd_u64(c, max);
    }
    return finish(out, before, c != NULL, err);
}

eddy_status eddy__dlq_get_cmd(const eddy__settings *s, const char *group, const char *id,
                              eddy__cmdlist *out, eddy_error *err) {
    eddy_status st = check_group(group, err);
    if (st != EDDY_OK || (st = check_id(id, err)) != EDDY_OK)
        return st;
    size_t before = out->n;
    eddy__cmd *c = add_on_key(s, group, out, "XRANGE");
    if (c) {
        eddy__cmd_str(c, id);
        eddy__cmd_str(c, id);
    }
    return finish(out, before, c != NULL, err);
}

eddy_status eddy__dlq_count_cmd(const eddy__settings *s, const char *group, eddy__cmdlist *out,
                                eddy_error *err) {
    eddy_status st = check_group(group, err);
    if (st != EDDY_OK)
        return st;
    size_t before = out->n;
    return finish(out, before, add_on_key(s, group, out, "XLEN") != NULL, err);
}

eddy_status eddy__dlq_last_cmd(const eddy__settings *s, const char *group, eddy__cmdlist *out,
                               eddy_error *err) {
    eddy_status st = check_group(group, err);
    if (st != EDDY_OK)
        return st;
    size_t before = out->n;
    eddy__cmd *c = add_on_key(s, group, out, "XREVRANGE");
    if (c) {
        eddy__cmd_str(c, "+");
        eddy__cmd_str(c, "-");
        eddy__cmd_str(c, "COUNT");
        eddy__cmd_str(c, "1");
    }
    return finish(out, before, c != NULL, err);
}

eddy_status eddy__dlq_purge_cmd(const eddy__settings *s, const char *group, const char *id,
                                eddy__cmdlist *out, eddy_error *err) {
    eddy_status st = check_group(group, err);
    if (st != EDDY_OK || (st = check_id(id, err)) != EDDY_OK)
        return st;
    size_t before = out->n;
    eddy__cmd *c = add_on_key(s, group, out, "XDEL");
    if (c)
        eddy__cmd_str(c, id);
    return finish(out, before, c != NULL, err);
}

eddy_status eddy__dlq_purge_all_cmds(const eddy__settings *s, const char *group, eddy__cmdlist *out,
                                     eddy_error *err) {
    eddy_status st = check_group(group, err);
    if (st != EDDY_OK)
        return st;
    size_t before = out->n;
    bool ok = add_plain(out, "MULTI") && add_on_key(s, group, out, "XLEN") &&
              add_on_key(s, group, out, "DEL") && add_plain(out, "EXEC");
    return finish(out, before, ok, err);
}

eddy_status eddy__dlq_replayable(const char *group, const eddy_dead_letter *dl, eddy_error *err) {
    eddy_status st = check_group(group, err);
    if (st != EDDY_OK)
        return st;
    eddy_error why;
    if (eddy__subject_check(dl->subject, &why) != EDDY_OK)
        return eddy__fail(err, EDDY_ERR_MALFORMED,
                          "dead letter %s of group '%s' names no valid subject (%s): left in place",
                          dl->id, group, why.detail);
    if (dl->nfv == 0)
        return eddy__fail(err, EDDY_ERR_MALFORMED,
                          "dead letter %s of group '%s' holds no original entry: left in place",
                          dl->id, group);
    for (size_t i = 1; i < dl->nfv; i += 2)
        if (eddy__resp_skipped(dl->fv[i], dl->fvlen[i], NULL))
            return eddy__fail(err, EDDY_ERR_TOO_LARGE,
                              "dead letter %s of group '%s' was too large: it keeps the entry's "
                              "fields and size, not its payload, so it cannot be replayed: left "
                              "in place",
                              dl->id, group);
    return EDDY_OK;
}

eddy_status eddy__dlq_replay_cmds(const eddy__settings *s, const char *group,
                                  const eddy_dead_letter *dl, eddy__cmdlist *out, eddy_error *err) {
    eddy_status st = eddy__dlq_replayable(group, dl, err);
    if (st != EDDY_OK)
        return st;
    size_t before = out->n;
    char *stream = eddy__key_stream(s->ns, dl->subject);
    char *subjects = eddy__key_subjects(s->ns);
    bool ok = stream && subjects && add_plain(out, "MULTI");
    eddy__cmd *x = ok ? add_plain(out, "XADD") : NULL;
    if (x) {
        eddy__cmd_str(x, stream);
        if (s->stream_maxlen > 0) {
            eddy__cmd_str(x, "MAXLEN");
            eddy__cmd_str(x, "~");
            eddy__cmd_fmt(x, "%lld", s->stream_maxlen);
        }
        eddy__cmd_str(x, "*");
        for (size_t i = 0; i < dl->nfv; i++)
            eddy__cmd_arg(x, dl->fv[i], dl->fvlen[i]);
    }
    eddy__cmd *sadd = x ? add_plain(out, "SADD") : NULL;
    if (sadd) {
        eddy__cmd_str(sadd, subjects);
        eddy__cmd_str(sadd, dl->subject);
    }
    eddy__cmd *xdel = sadd ? add_on_key(s, group, out, "XDEL") : NULL;
    if (xdel)
        eddy__cmd_str(xdel, dl->id);
    ok = xdel && add_plain(out, "EXEC");
    free(stream);
    free(subjects);
    return finish(out, before, ok, err);
}

eddy_status eddy__dlq_restore_cmd(const eddy__settings *s, const char *group,
                                  const eddy_dead_letter *dl, eddy__cmdlist *out, eddy_error *err) {
    eddy_status st = check_group(group, err);
    if (st != EDDY_OK)
        return st;
    size_t before = out->n;
    eddy__cmd *x = add_on_key(s, group, out, "XADD");
    if (x) {
        eddy__cmd_str(x, "*");
        const char *dv[F_COUNT] = {dl->subject, dl->entry, NULL, dl->reason, dl->group};
        for (int k = 0; k < F_COUNT; k++) {
            eddy__cmd_str(x, dlq_fields[k]);
            if (dv[k])
                eddy__cmd_str(x, dv[k]);
            else
                eddy__cmd_u64(x, dl->deliveries);
        }
        for (size_t i = 0; i < dl->nfv; i++)
            eddy__cmd_arg(x, dl->fv[i], dl->fvlen[i]);
    }
    return finish(out, before, x != NULL, err);
}

/* ---- replies --------------------------------------------------------------------------- */

eddy_status eddy__dlq_entries(const eddy__settings *s, const redisReply *r, eddy__dl_take_fn fn,
                              void *user, size_t *n, char *after, eddy_error *err) {
    if (n)
        *n = 0;
    eddy_status st = eddy__reply_status(r, "dead letters: XRANGE", err);
    if (st != EDDY_OK)
        return st;
    if (r->type == REDIS_REPLY_NIL)
        return EDDY_OK; /* COUNT 0 answers nil; an empty page either way */
    if (eddy__reply_entries(r) != EDDY_OK)
        return eddy__fail(err, EDDY_ERR_PROTOCOL, "dead letters: XRANGE: unexpected reply");
    for (size_t i = 0; i < r->elements; i++) {
        eddy__entry_view e = eddy__reply_entry(r, i);
        size_t nfv = e.fields ? e.fields->elements : 0;
        const char **fv = nfv ? malloc(nfv * sizeof(*fv)) : NULL;
        size_t *fvlen = nfv ? malloc(nfv * sizeof(*fvlen)) : NULL;
        if (nfv && (!fv || !fvlen)) {
            free(fv);
            free(fvlen);
            return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
        }
        if (nfv && !eddy__entry_flatten(e.fields, fv, fvlen)) {
            free(fv);
            free(fvlen);
            return eddy__fail(err, EDDY_ERR_PROTOCOL, "dead letters: a field is not a string");
        }
        if (e.idlen >= EDDY_DLQ_ID_SIZE) {
            free(fv);
            free(fvlen);
            return eddy__fail(err, EDDY_ERR_PROTOCOL, "dead letters: entry id too long");
        }
        eddy_dead_letter *dl =
            eddy__dead_letter_new(e.id, e.idlen, fv, fvlen, nfv, s->max_event_size);
        free(fv);
        free(fvlen);
        if (!dl)
            return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
        char id[EDDY_DLQ_ID_SIZE];
        memcpy(id, e.id, e.idlen);
        id[e.idlen] = '\0';
        if ((st = fn(dl, user)) != EDDY_OK)
            return st;
        if (n)
            (*n)++;
        if (after)
            memcpy(after, id, e.idlen + 1);
    }
    return EDDY_OK;
}

eddy_status eddy__dlq_count_result(const redisReply *r, size_t *count, eddy_error *err) {
    eddy_status st = eddy__reply_status(r, "dead letters: XLEN", err);
    if (st != EDDY_OK)
        return st;
    if (r->type != REDIS_REPLY_INTEGER || r->integer < 0)
        return eddy__fail(err, EDDY_ERR_PROTOCOL, "dead letters: XLEN: unexpected reply");
    *count = (size_t)r->integer;
    return EDDY_OK;
}

static eddy_status keep_one(eddy_dead_letter *dl, void *user) {
    eddy_dead_letter **out = user;
    if (*out) { /* XRANGE id id: one entry at most */
        eddy_dead_letter_free(dl);
        return EDDY_ERR_PROTOCOL;
    }
    *out = dl;
    return EDDY_OK;
}

eddy_status eddy__dlq_one(const eddy__settings *s, const redisReply *r, const char *group,
                          const char *id, eddy_dead_letter **out, eddy_error *err) {
    *out = NULL;
    eddy_status st = eddy__dlq_entries(s, r, keep_one, out, NULL, NULL, err);
    if (st == EDDY_ERR_PROTOCOL && *out)
        eddy__fail(err, st, "dead letters: XRANGE %s %s: more than one entry", id, id);
    else if (st == EDDY_OK && !*out)
        st = eddy__fail(err, EDDY_ERR_NOT_FOUND, "group '%s' has no dead letter %s", group, id);
    if (st != EDDY_OK) {
        eddy_dead_letter_free(*out);
        *out = NULL;
    }
    return st;
}

eddy_status eddy__dlq_purge_result(const redisReply *r, const char *group, const char *id,
                                   eddy_error *err) {
    eddy_status st = eddy__reply_status(r, "dead letters: XDEL", err);
    if (st != EDDY_OK)
        return st;
    if (r->type != REDIS_REPLY_INTEGER)
        return eddy__fail(err, EDDY_ERR_PROTOCOL, "dead letters: XDEL: unexpected reply");
    if (r->integer == 0)
        return eddy__fail(err, EDDY_ERR_NOT_FOUND, "group '%s' has no dead letter %s", group, id);
    return EDDY_OK;
}

/* MULTI's "OK" and each queued command's "QUEUED"; an error here means EXEC ran nothing. */
static eddy_status queued(redisReply **replies, size_t n, eddy_error *err) {
    for (size_t i = 0; i < n; i++) {
        eddy_status st = eddy__reply_status(replies[i], "dead letters: MULTI", err);
        if (st != EDDY_OK)
            return st;
    }
    return EDDY_OK;
}

/* EXEC's reply: an array of n, or why the transaction did not run. */
static eddy_status exec_reply(const redisReply *r, size_t n, eddy_error *err) {
    eddy_status st = eddy__reply_status(r, "dead letters: EXEC", err);
    if (st != EDDY_OK)
        return st;
    if (r->type == REDIS_REPLY_NIL)
        return eddy__fail(err, EDDY_ERR_BACKEND, "dead letters: the transaction was aborted");
    if (r->type != REDIS_REPLY_ARRAY || r->elements != n)
        return eddy__fail(err, EDDY_ERR_PROTOCOL, "dead letters: EXEC: unexpected reply");
    return EDDY_OK;
}

eddy_status eddy__dlq_purge_all_result(redisReply **replies, size_t *purged, eddy_error *err) {
    eddy_status st = queued(replies, 3, err);
    if (st != EDDY_OK || (st = exec_reply(replies[3], 2, err)) != EDDY_OK)
        return st;
    const redisReply *len = replies[3]->element[0], *del = replies[3]->element[1];
    if ((st = eddy__dlq_count_result(len, purged, err)) != EDDY_OK)
        return st;
    return eddy__reply_status(del, "dead letters: DEL", err);
}

eddy_status eddy__dlq_replay_result(const eddy__settings *s, const char *group,
                                    const eddy_dead_letter *dl, redisReply **replies,
                                    char *entry_id, size_t entry_id_size, bool *restore,
                                    eddy_error *err) {
    *restore = false;
    eddy_status st = queued(replies, 4, err);
    if (st != EDDY_OK || (st = exec_reply(replies[4], 3, err)) != EDDY_OK)
        return st;
    const redisReply *xadd = replies[4]->element[0], *sadd = replies[4]->element[1],
                     *xdel = replies[4]->element[2];
    bool deleted = xdel && xdel->type == REDIS_REPLY_INTEGER && xdel->integer > 0;
    if ((st = eddy__reply_status(xadd, "dead letters: replay: XADD", err)) != EDDY_OK ||
        xadd->type != REDIS_REPLY_STRING) {
        if (st == EDDY_OK)
            st = eddy__fail(err, EDDY_ERR_PROTOCOL, "dead letters: replay: XADD: unexpected reply");
        *restore = deleted; /* the delete ran without the publish */
        return st;
    }
    if (entry_id && entry_id_size)
        snprintf(entry_id, entry_id_size, "%s", xadd->str);
    if (eddy__reply_status(sadd, "SADD", NULL) != EDDY_OK)
        eddy__log(&s->log, EDDY_LOG_WARN,
                  "dead letters: replay of %s: subject registration failed (pattern "
                  "subscriptions find '%s' at its next publish)",
                  dl->id, dl->subject);
    if (!deleted)
        eddy__log(&s->log, EDDY_LOG_WARN,
                  "dead letters: %s of group '%s' was gone (replayed or purged elsewhere) when "
                  "its replay ran: published again as %s all the same",
                  dl->id, group, xadd->str);
    return EDDY_OK;
}

eddy_status eddy__dlq_restore_result(const redisReply *r, eddy_error *err) {
    eddy_status st = eddy__reply_status(r, "dead letters: write-back", err);
    if (st == EDDY_OK && r->type != REDIS_REPLY_STRING)
        st = eddy__fail(err, EDDY_ERR_PROTOCOL, "dead letters: write-back: unexpected reply");
    return st;
}
