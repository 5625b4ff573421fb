/* SPDX-License-Identifier: BSD-3-Clause */
/* The admin scan; see admin.h for its rounds. Invariants: every string the result points at is
 * owned by the scan (copied out of replies, which are borrowed for one feed); a reply the scan
 * cannot read ends it with a status, never with a guess; a subject whose stream is gone (its
 * name stays in the subjects set) is listed with length 0 and no groups. */
#include "bus/admin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus/registry.h"
#include "error.h"
#include "events/entry.h"
#include "events/event_internal.h"
#include "events/subject.h"
#include "keys.h"
#include "link/redis.h"
#include "util/json.h"
#include "util/reply.h"

enum { T_SUBJECTS = 1, T_TIME, T_LEN, T_GROUPS, T_STREAM, T_PENDING, T_DLQ };

typedef struct pending_target {
    size_t subject, group;
} pending_target;

struct eddy__admin_scan {
    char *ns, *pattern;
    int round; /* the round last planned: 0 none yet, 4 complete */
    long long time_ms;
    eddy_subject_info *subjects;
    size_t nsubjects;
    /* Beside each subject (the public structs stay as they are): its stream's entries-added and
     * each group's entries-read (XINFO's counters, -1 when the server does not tell), the
     * stats document's "entries_added" and "entries_read". */
    long long *entries_added;
    long long **entries_read; /* per subject, one per group, in the groups' order */
    char **names;             /* distinct group names, sorted: round 3's dead-letter counts */
    uint64_t *dead_letters;
    size_t nnames;
    pending_target *targets; /* round 3's XPENDING commands, in order */
    size_t ntargets;
};

eddy__admin_scan *eddy__admin_scan_new(const char *ns, const char *pattern) {
    eddy__admin_scan *s = calloc(1, sizeof(*s));
    if (!s || !(s->ns = strdup(ns)) || (pattern && !(s->pattern = strdup(pattern)))) {
        eddy__admin_scan_free(s);
        return NULL;
    }
    return s;
}

void eddy__admin_scan_free(eddy__admin_scan *s) {
    if (!s)
        return;
    for (size_t i = 0; i < s->nsubjects; i++) {
        eddy_subject_info *si = &s->subjects[i];
        for (size_t j = 0; j < si->ngroups; j++) {
            free((char *)si->groups[j].group);
            free((char *)si->groups[j].last_delivered_id);
        }
        free((eddy_group_info *)si->groups);
        free((char *)si->subject);
        if (s->entries_read)
            free(s->entries_read[i]);
    }
    free(s->subjects);
    free(s->entries_added);
    free(s->entries_read);
    for (size_t i = 0; i < s->nnames; i++)
        free(s->names[i]);
    free(s->names);
    free(s->dead_letters);
    free(s->targets);
    free(s->ns);
    free(s->pattern);
    free(s);
}

/* ---- replies --------------------------------------------------------------------------- */

static long long field_int(const redisReply *rec, const char *name, long long missing) {
    const redisReply *v = eddy__reply_field(rec, name);
    return v && v->type == REDIS_REPLY_INTEGER ? v->integer : missing;
}

/* The milliseconds part of a stream id, -1 when it is not one. */
static long long id_ms(const char *id) {
    char *end;
    long long ms = strtoll(id, &end, 10);
    return end != id && (*end == '-' || *end == '\0') && ms >= 0 ? ms : -1;
}

static int cmp_subject(const void *a, const void *b) {
    return strcmp(((const eddy_subject_info *)a)->subject, ((const eddy_subject_info *)b)->subject);
}

static int cmp_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static eddy_status feed_subjects(eddy__admin_scan *s, const redisReply *r, eddy_error *err) {
    eddy_status st = eddy__reply_status(r, "SMEMBERS subjects", err);
    if (st != EDDY_OK)
        return st;
    if (r->type != REDIS_REPLY_ARRAY)
        return eddy__fail(err, EDDY_ERR_PROTOCOL, "SMEMBERS subjects: not a list");
    if (r->elements > 0 && (!(s->subjects = calloc(r->elements, sizeof(*s->subjects))) ||
                            !(s->entries_added = calloc(r->elements, sizeof(*s->entries_added))) ||
                            !(s->entries_read = calloc(r->elements, sizeof(*s->entries_read)))))
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *m = r->element[i];
        if (!eddy__reply_is_str(m) || strlen(m->str) != m->len ||
            eddy__subject_check(m->str, NULL) != EDDY_OK ||
            (s->pattern && !eddy__pattern_match(s->pattern, m->str)))
            continue; /* not a subject eddy wrote, or not asked for */
        if (!(s->subjects[s->nsubjects].subject = strdup(m->str)))
            return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
        s->nsubjects++;
    }
    if (s->nsubjects > 1) /* qsort's base must not be NULL, even for none */
        qsort(s->subjects, s->nsubjects, sizeof(*s->subjects), cmp_subject);
    return EDDY_OK;
}

static eddy_status feed_time(eddy__admin_scan *s, const redisReply *r, eddy_error *err) {
    eddy_status st = eddy__reply_status(r, "TIME", err);
    if (st != EDDY_OK)
        return st;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 || !eddy__reply_is_str(r->element[0]) ||
        !eddy__reply_is_str(r->element[1]))
        return eddy__fail(err, EDDY_ERR_PROTOCOL, "TIME: not two numbers");
    s->time_ms =
        strtoll(r->element[0]->str, NULL, 10) * 1000 + strtoll(r->element[1]->str, NULL, 10) / 1000;
    return EDDY_OK;
}

/* A group and its entries-read, sorted together by the group's name. */
typedef struct group_row {
    eddy_group_info g;
    long long read;
} group_row;

static int cmp_row(const void *a, const void *b) {
    return strcmp(((const group_row *)a)->g.group, ((const group_row *)b)->g.group);
}

static eddy_status feed_groups(eddy__admin_scan *s, size_t at, const redisReply *len,
                               const redisReply *r, eddy_error *err) {
    eddy_subject_info *si = &s->subjects[at];
    eddy_status st = eddy__reply_status(len, "XLEN", err);
    if (st != EDDY_OK)
        return st;
    if (len->type != REDIS_REPLY_INTEGER)
        return eddy__fail(err, EDDY_ERR_PROTOCOL, "XLEN %s: not a number", si->subject);
    si->length = len->integer > 0 ? (uint64_t)len->integer : 0;
    if (r && r->type == REDIS_REPLY_ERROR && len->integer == 0)
        return EDDY_OK; /* the stream is gone: no such key */
    if ((st = eddy__reply_status(r, "XINFO GROUPS", err)) != EDDY_OK)
        return st;
    if (r->type != REDIS_REPLY_ARRAY)
        return eddy__fail(err, EDDY_ERR_PROTOCOL, "XINFO GROUPS %s: not a list", si->subject);
    eddy_group_info *groups = r->elements ? calloc(r->elements, sizeof(*groups)) : NULL;
    long long *reads = r->elements ? calloc(r->elements, sizeof(*reads)) : NULL;
    si->groups = groups;
    s->entries_read[at] = reads;
    if (r->elements && (!groups || !reads))
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *rec = r->element[i], *name = eddy__reply_field(rec, "name");
        const redisReply *last = eddy__reply_field(rec, "last-delivered-id");
        if (!eddy__reply_is_str(name))
            continue;
        eddy_group_info *g = &groups[si->ngroups];
        g->group = strdup(name->str);
        g->last_delivered_id = strdup(eddy__reply_is_str(last) ? last->str : "0-0");
        si->ngroups++; /* counted before the check, so that free finds both strings */
        if (!g->group || !g->last_delivered_id)
            return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
        long long consumers = field_int(rec, "consumers", 0),
                  pending = field_int(rec, "pending", 0);
        g->consumers = consumers > 0 ? (uint64_t)consumers : 0;
        g->pending = pending > 0 ? (uint64_t)pending : 0;
        g->lag = field_int(rec, "lag", -1);
        g->oldest_pending_ms = -1;
        reads[si->ngroups - 1] = field_int(rec, "entries-read", -1);
    }
    if (si->ngroups > 1) {
        group_row *rows = calloc(si->ngroups, sizeof(*rows));
        if (!rows)
            return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
        for (size_t i = 0; i < si->ngroups; i++)
            rows[i] = (group_row){groups[i], reads[i]};
        qsort(rows, si->ngroups, sizeof(*rows), cmp_row);
        for (size_t i = 0; i < si->ngroups; i++) {
            groups[i] = rows[i].g;
            reads[i] = rows[i].read;
        }
        free(rows);
    }
    return EDDY_OK;
}

/* XINFO STREAM: the stream's entries-added. An error (the stream is gone) or an older server
 * leaves it unknown; XLEN has already said whether the key is a stream. */
static eddy_status feed_stream(eddy__admin_scan *s, size_t at, const redisReply *r,
                               eddy_error *err) {
    s->entries_added[at] = -1;
    if (!r || r->type == REDIS_REPLY_ERROR)
        return EDDY_OK;
    if (r->type != REDIS_REPLY_ARRAY)
        return eddy__fail(err, EDDY_ERR_PROTOCOL, "XINFO STREAM %s: not a record",
                          s->subjects[at].subject);
    long long added = field_int(r, "entries-added", -1);
    s->entries_added[at] = added >= 0 ? added : -1;
    return EDDY_OK;
}

static eddy_status feed_pending(eddy__admin_scan *s, eddy_group_info *g, const redisReply *r,
                                eddy_error *err) {
    eddy_status st = eddy__reply_status(r, "XPENDING", err);
    if (st != EDDY_OK)
        return st;
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 2)
        return eddy__fail(err, EDDY_ERR_PROTOCOL, "XPENDING %s: not a summary", g->group);
    long long ms = eddy__reply_is_str(r->element[1]) ? id_ms(r->element[1]->str) : -1;
    if (ms >= 0)
        g->oldest_pending_ms = s->time_ms > ms ? s->time_ms - ms : 0;
    return EDDY_OK;
}

/* Round 3's list of group names: each distinct one once, sorted. */
static eddy_status collect_names(eddy__admin_scan *s) {
    size_t total = 0;
    for (size_t i = 0; i < s->nsubjects; i++)
        total += s->subjects[i].ngroups;
    if (total == 0)
        return EDDY_OK;
    if (!(s->names = calloc(total, sizeof(*s->names))) ||
        !(s->dead_letters = calloc(total, sizeof(*s->dead_letters))))
        return EDDY_ERR_NOMEM;
    for (size_t i = 0; i < s->nsubjects; i++)
        for (size_t j = 0; j < s->subjects[i].ngroups; j++)
            s->names[s->nnames++] = (char *)s->subjects[i].groups[j].group; /* borrowed for now */
    if (s->nnames > 1)
        qsort(s->names, s->nnames, sizeof(*s->names), cmp_name);
    size_t n = 0;
    for (size_t i = 0; i < s->nnames; i++)
        if (n == 0 || strcmp(s->names[n - 1], s->names[i]) != 0)
            s->names[n++] = s->names[i];
    size_t borrowed = n;
    s->nnames = 0;
    for (size_t i = 0; i < borrowed; i++) { /* own them, so that free needs no care */
        if (!(s->names[i] = strdup(s->names[i])))
            return EDDY_ERR_NOMEM;
        s->nnames++;
    }
    return EDDY_OK;
}

/* ---- rounds ---------------------------------------------------------------------------- */

static eddy__cmd *add(eddy__cmdlist *out, int tag, long arg, const char *name, char *key) {
    eddy__cmd *c = key ? eddy__cmdlist_add(out, tag, arg) : NULL;
    if (c) {
        eddy__cmd_str(c, name);
        eddy__cmd_str(c, key);
    }
    free(key);
    return c;
}

eddy_status eddy__admin_scan_plan(eddy__admin_scan *s, eddy__cmdlist *out) {
    size_t first = out->n;
    switch (s->round) {
    case 0:
        if (!add(out, T_SUBJECTS, 0, "SMEMBERS", eddy__key_subjects(s->ns)) ||
            !eddy__cmdlist_add(out, T_TIME, 0))
            return EDDY_ERR_NOMEM;
        eddy__cmd_str(&out->cmds[out->n - 1], "TIME");
        break;
    case 1:
        for (size_t i = 0; i < s->nsubjects; i++) {
            const char *subject = s->subjects[i].subject;
            eddy__cmd *c;
            if (!add(out, T_LEN, (long)i, "XLEN", eddy__key_stream(s->ns, subject)) ||
                !(c = eddy__cmdlist_add(out, T_GROUPS, (long)i)))
                return EDDY_ERR_NOMEM;
            eddy__cmd_str(c, "XINFO");
            eddy__cmd_str(c, "GROUPS");
            char *key = eddy__key_stream(s->ns, subject);
            if (!key)
                return EDDY_ERR_NOMEM;
            eddy__cmd_str(c, key);
            free(key);
            if (!(c = eddy__cmdlist_add(out, T_STREAM, (long)i)))
                return EDDY_ERR_NOMEM;
            eddy__cmd_str(c, "XINFO");
            eddy__cmd_str(c, "STREAM");
            if (!(key = eddy__key_stream(s->ns, subject)))
                return EDDY_ERR_NOMEM;
            eddy__cmd_str(c, key);
            free(key);
        }
        break;
    case 2: {
        if (collect_names(s) != EDDY_OK)
            return EDDY_ERR_NOMEM;
        size_t total = 0;
        for (size_t i = 0; i < s->nsubjects; i++)
            total += s->subjects[i].ngroups;
        if (total && !(s->targets = calloc(total, sizeof(*s->targets))))
            return EDDY_ERR_NOMEM;
        for (size_t i = 0; i < s->nsubjects; i++)
            for (size_t j = 0; j < s->subjects[i].ngroups; j++) {
                if (s->subjects[i].groups[j].pending == 0)
                    continue;
                eddy__cmd *c = add(out, T_PENDING, (long)s->ntargets, "XPENDING",
                                   eddy__key_stream(s->ns, s->subjects[i].subject));
                if (!c)
                    return EDDY_ERR_NOMEM;
                eddy__cmd_str(c, s->subjects[i].groups[j].group);
                s->targets[s->ntargets++] = (pending_target){i, j};
            }
        for (size_t k = 0; k < s->nnames; k++)
            if (!add(out, T_DLQ, (long)k, "XLEN", eddy__key_dlq(s->ns, s->names[k])))
                return EDDY_ERR_NOMEM;
        break;
    }
    default:
        return EDDY_OK;
    }
    s->round++;
    if (out->n == first) /* nothing to ask: the scan is complete */
        s->round = 4;
    return eddy__cmdlist_status_from(out, first);
}

eddy_status eddy__admin_scan_feed(eddy__admin_scan *s, const eddy__cmdlist *cmds,
                                  redisReply **replies, size_t n, eddy_error *err) {
    eddy_status st = EDDY_OK;
    for (size_t i = 0; i < n && st == EDDY_OK; i++) {
        long arg = cmds->args[i];
        switch (cmds->tags[i]) {
        case T_SUBJECTS:
            st = feed_subjects(s, replies[i], err);
            break;
        case T_TIME:
            st = feed_time(s, replies[i], err);
            break;
        case T_LEN: /* followed by its XINFO GROUPS */
            st = i + 1 < n ? feed_groups(s, (size_t)arg, replies[i], replies[i + 1], err)
                           : eddy__fail(err, EDDY_ERR_PROTOCOL, "XLEN without XINFO");
            i++;
            break;
        case T_STREAM:
            st = feed_stream(s, (size_t)arg, replies[i], err);
            break;
        case T_PENDING: {
            pending_target t = s->targets[arg];
            st = feed_pending(s, (eddy_group_info *)&s->subjects[t.subject].groups[t.group],
                              replies[i], err);
            break;
        }
        case T_DLQ:
            if ((st = eddy__reply_status(replies[i], "XLEN dead letters", err)) == EDDY_OK)
                s->dead_letters[arg] =
                    replies[i]->type == REDIS_REPLY_INTEGER && replies[i]->integer > 0
                        ? (uint64_t)replies[i]->integer
                        : 0;
            break;
        }
    }
    if (st == EDDY_OK && s->round == 3) { /* every group learns its dead-letter count */
        s->round = 4;
        for (size_t i = 0; i < s->nsubjects; i++)
            for (size_t j = 0; j < s->subjects[i].ngroups; j++) {
                eddy_group_info *g = (eddy_group_info *)&s->subjects[i].groups[j];
                char *const *found =
                    s->nnames ? bsearch(&g->group, s->names, s->nnames, sizeof(*s->names), cmp_name)
                              : NULL;
                g->dead_letters = found ? s->dead_letters[found - s->names] : 0;
            }
    }
    return st;
}

const eddy_subject_info *eddy__admin_scan_result(const eddy__admin_scan *s, size_t *n) {
    *n = s->nsubjects;
    return s->subjects;
}

long long eddy__admin_scan_time_ms(const eddy__admin_scan *s) { return s->time_ms; }

/* ---- registry -------------------------------------------------------------------------- */

eddy_status eddy__admin_registry_each(const redisReply *r, eddy_registration_fn fn, void *user,
                                      eddy_error *err) {
    eddy_status st = eddy__reply_status(r, "subscription registry", err);
    if (st != EDDY_OK)
        return st;
    if (r->type != REDIS_REPLY_ARRAY || r->elements % 2 != 0)
        return eddy__fail(err, EDDY_ERR_PROTOCOL, "subscription registry: not member, score pairs");
    for (size_t i = 0; i + 1 < r->elements && st == EDDY_OK; i += 2) {
        const redisReply *m = r->element[i], *score = r->element[i + 1];
        const char *f[5];
        size_t fl[5];
        if (!eddy__reply_is_str(m) || !eddy__reply_is_str(score) ||
            !eddy__registry_split_member(m->str, m->len, f, fl) || fl[0] != 1 ||
            (f[0][0] != 'r' && f[0][0] != 'h'))
            continue;
        char *copy = malloc(m->len + 1); /* the fields as strings: the tabs become NULs */
        if (!copy)
            return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
        memcpy(copy, m->str, m->len + 1);
        for (int k = 1; k < 4; k++)
            copy[f[k] - m->str + fl[k]] = '\0';
        eddy_registration reg = {
            .responder = f[0][0] == 'r',
            .group = copy + (f[1] - m->str),
            .instance = copy + (f[2] - m->str),
            .name = copy + (f[3] - m->str),
            .pattern = copy + (f[4] - m->str),
            .lease_until_ms = strtoll(score->str, NULL, 10),
        };
        st = fn(&reg, user);
        free(copy);
    }
    return st;
}

/* ---- the stats document ---------------------------------------------------------------- */

static void json_figure(eddy__json *j, const char *key, long long v) {
    if (v < 0)
        eddy__json_null(j, key);
    else
        eddy__json_i64(j, key, v);
}

static eddy_status json_registration(const eddy_registration *reg, void *user) {
    eddy__json *j = user;
    eddy__json_object(j, NULL);
    eddy__json_str(j, "kind", reg->responder ? "responder" : "handler");
    eddy__json_str(j, "group", reg->group);
    eddy__json_str(j, "instance", reg->instance);
    eddy__json_str(j, "name", reg->name);
    eddy__json_str(j, "pattern", reg->pattern);
    eddy__json_i64(j, "lease_until_ms", reg->lease_until_ms);
    eddy__json_end(j);
    return EDDY_OK;
}

eddy__group_total *eddy__admin_scan_totals(const eddy__admin_scan *s, size_t *n) {
    size_t nt = s->nnames;
    eddy__group_total *t = calloc(nt ? nt : 1, sizeof(*t));
    *n = 0;
    if (!t)
        return NULL;
    for (size_t i = 0; i < nt; i++)
        t[i] = (eddy__group_total){.group = s->names[i], .oldest_pending_ms = -1};
    for (size_t i = 0; i < s->nsubjects; i++)
        for (size_t k = 0; k < s->subjects[i].ngroups; k++) {
            const eddy_group_info *g = &s->subjects[i].groups[k];
            char *const *found = bsearch(&g->group, s->names, nt, sizeof(*s->names), cmp_name);
            if (!found)
                continue; /* not possible: every group's name is in names */
            eddy__group_total *at = &t[found - s->names];
            at->dead_letters = g->dead_letters;
            at->subjects++;
            at->consumers += g->consumers;
            at->pending += g->pending;
            if (at->subjects == 1)
                at->lag = g->lag;
            else if (at->lag >= 0)
                at->lag = g->lag < 0 ? -1 : at->lag + g->lag; /* one unknown: unknown */
            if (g->oldest_pending_ms > at->oldest_pending_ms)
                at->oldest_pending_ms = g->oldest_pending_ms;
        }
    *n = nt;
    return t;
}

static void json_totals(eddy__json *j, const eddy__group_total *t, size_t nt) {
    eddy__json_array(j, "groups");
    for (size_t i = 0; i < nt; i++) {
        eddy__json_object(j, NULL);
        eddy__json_str(j, "group", t[i].group);
        eddy__json_u64(j, "subjects", t[i].subjects);
        eddy__json_u64(j, "consumers", t[i].consumers);
        eddy__json_u64(j, "pending", t[i].pending);
        json_figure(j, "lag", t[i].lag);
        json_figure(j, "oldest_pending_ms", t[i].oldest_pending_ms);
        eddy__json_u64(j, "dead_letters", t[i].dead_letters);
        eddy__json_end(j);
    }
    eddy__json_end(j);
}

char *eddy__admin_stats_json(const char *ns, const eddy__admin_scan *s, const redisReply *registry,
                             eddy_error *err) {
    size_t nt;
    eddy__group_total *t = eddy__admin_scan_totals(s, &nt);
    if (!t) {
        eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
        return NULL;
    }
    eddy__json j;
    eddy__json_init(&j);
    eddy__json_object(&j, NULL);
    eddy__json_str(&j, "ns", ns);
    eddy__json_i64(&j, "time_ms", s->time_ms);
    eddy__json_array(&j, "subjects");
    for (size_t i = 0; i < s->nsubjects; i++) {
        const eddy_subject_info *si = &s->subjects[i];
        eddy__json_object(&j, NULL);
        eddy__json_str(&j, "subject", si->subject);
        eddy__json_u64(&j, "length", si->length);
        json_figure(&j, "entries_added", s->entries_added[i]);
        eddy__json_array(&j, "groups");
        for (size_t k = 0; k < si->ngroups; k++) {
            const eddy_group_info *g = &si->groups[k];
            eddy__json_object(&j, NULL);
            eddy__json_str(&j, "group", g->group);
            eddy__json_u64(&j, "consumers", g->consumers);
            eddy__json_u64(&j, "pending", g->pending);
            json_figure(&j, "lag", g->lag);
            json_figure(&j, "oldest_pending_ms", g->oldest_pending_ms);
            eddy__json_str(&j, "last_delivered_id", g->last_delivered_id);
            eddy__json_u64(&j, "dead_letters", g->dead_letters);
            json_figure(&j, "entries_read", s->entries_read[i][k]);
            eddy__json_end(&j);
        }
        eddy__json_end(&j);
        eddy__json_end(&j);
    }
    eddy__json_end(&j);
    json_totals(&j, t, nt);
    eddy__json_array(&j, "registry");
    eddy_status st = eddy__admin_registry_each(registry, json_registration, &j, err);
    eddy__json_end(&j);
    eddy__json_end(&j);
    free(t);
    if (st != EDDY_OK)
        j.failed = true;
    char *doc = eddy__json_finish(&j);
    if (!doc && st == EDDY_OK)
        eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    return doc;
}

/* ---- one subject's history ------------------------------------------------------------- */

/* <ms> or <ms>-<seq>, decimal digits. */
static bool stream_id_ok(const char *id) {
    size_t ms = strspn(id, "0123456789");
    if (ms == 0 || ms > 20)
        return false;
    if (id[ms] == '\0')
        return true;
    size_t seq = id[ms] == '-' ? strspn(id + ms + 1, "0123456789") : 0;
    return seq > 0 && seq <= 20 && id[ms + 1 + seq] == '\0';
}

eddy_status eddy__admin_history_cmd(const char *ns, const char *subject, const char *start,
                                    bool exclusive, bool reverse, size_t count, eddy__cmdlist *out,
                                    eddy_error *err) {
    eddy_status st = eddy__subject_check(subject, err);
    if (st != EDDY_OK)
        return st;
    if (start && !stream_id_ok(start))
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT,
                          "history: '%.60s' is not a stream entry id (<ms>-<seq> or <ms>)", start);
    if (count == 0)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "history: count 0");
    eddy__cmd *c = add(out, 0, 0, reverse ? "XREVRANGE" : "XRANGE", eddy__key_stream(ns, subject));
    if (!c)
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    if (reverse) /* XREVRANGE key end start */
        eddy__cmd_str(c, "+");
    if (!start)
        eddy__cmd_str(c, "-");
    else
        eddy__cmd_fmt(c, "%s%s", exclusive ? "(" : "", start);
    if (!reverse)
        eddy__cmd_str(c, "+");
    eddy__cmd_str(c, "COUNT");
    eddy__cmd_u64(c, count);
    return eddy__cmd_status(c) == EDDY_OK ? EDDY_OK
                                          : eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
}

/* One entry to fn: decoded as a view, or NULL with the reason. */
static eddy_status history_entry(const redisReply *r, size_t i, const char *subject,
                                 size_t max_size, eddy_history_fn fn, void *user, eddy_error *err) {
    eddy__entry_view v = eddy__reply_entry(r, i);
    char id[64];
    snprintf(id, sizeof(id), "%.*s", (int)(v.idlen < 63 ? v.idlen : 63), v.id);
    const eddy_event *ev = NULL;
    eddy__event_view view;
    eddy_error why = {0};
    eddy_status st = EDDY_ERR_MALFORMED;
    size_t nfv = v.fields ? v.fields->elements : 0;
    const char **fv = nfv ? malloc(nfv * sizeof(*fv)) : NULL;
    size_t *fvlen = nfv ? malloc(nfv * sizeof(*fvlen)) : NULL;
    if (nfv && (!fv || !fvlen)) {
        free(fv);
        free(fvlen);
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory reading %s", id);
    }
    if (!v.fields)
        snprintf(why.detail, sizeof(why.detail), "entry without fields");
    else if (!eddy__entry_flatten(v.fields, fv, fvlen))
        snprintf(why.detail, sizeof(why.detail), "a field is not a string");
    else
        st = eddy__entry_decode_view(fv, fvlen, nfv, max_size, &view, &ev, &why);
    free(fv);
    free(fvlen);
    eddy_status rc =
        fn(subject, id, st == EDDY_OK ? ev : NULL, st == EDDY_OK ? NULL : why.detail, user);
    if (st == EDDY_OK)
        eddy__event_view_release(&view);
    if (rc != EDDY_OK)
        return eddy__fail(err, rc, "history of '%s' stopped by its callback at %s (%s)", subject,
                          id, eddy_status_name(rc));
    return EDDY_OK;
}

eddy_status eddy__admin_history_feed(const redisReply *r, const char *subject, size_t max_size,
                                     bool reverse, eddy_history_fn fn, void *user, char *last_id,
                                     size_t last_size, size_t *n, eddy_error *err) {
    *n = 0;
    eddy_status st = eddy__reply_status(r, "history: XRANGE", err);
    if (st != EDDY_OK)
        return st;
    if (eddy__reply_entries(r) != EDDY_OK)
        return eddy__fail(err, EDDY_ERR_PROTOCOL, "history: XRANGE: unexpected reply");
    size_t count = r->elements;
    for (size_t k = 0; k < count; k++) {
        size_t i = reverse ? count - 1 - k : k;
        if ((st = history_entry(r, i, subject, max_size, fn, user, err)) != EDDY_OK)
            return st;
    }
    *n = count;
    if (count > 0 && last_size > 0) {
        eddy__entry_view v = eddy__reply_entry(r, reverse ? 0 : count - 1);
        snprintf(last_id, last_size, "%.*s", (int)v.idlen, v.id);
    }
    return EDDY_OK;
}

/* ---- removing a subject (eddy_admin_subject_remove) ------------------------------------- */

eddy_status eddy__admin_remove_cmds(const char *ns, const char *subject, eddy__cmdlist *out,
                                    eddy_error *err) {
    eddy_status st = eddy__subject_check(subject, err);
    if (st != EDDY_OK)
        return st;
    size_t before = out->n;
    char *keys[3] = {eddy__key_stream(ns, subject), eddy__key_pubids(ns, subject),
                     eddy__key_pubexp(ns, subject)};
    eddy__cmd *multi = eddy__cmdlist_add(out, 0, 0);
    if (multi)
        eddy__cmd_str(multi, "MULTI");
    eddy__cmd *del = multi && keys[0] && keys[1] && keys[2] ? eddy__cmdlist_add(out, 0, 0) : NULL;
    if (del) {
        eddy__cmd_str(del, "DEL");
        for (int i = 0; i < 3; i++)
            eddy__cmd_str(del, keys[i]);
    }
    eddy__cmd *srem = del ? add(out, 0, 0, "SREM", eddy__key_subjects(ns)) : NULL;
    if (srem)
        eddy__cmd_str(srem, subject);
    eddy__cmd *exec = srem ? eddy__cmdlist_add(out, 0, 0) : NULL;
    if (exec)
        eddy__cmd_str(exec, "EXEC");
    for (int i = 0; i < 3; i++)
        free(keys[i]);
    if (exec && eddy__cmdlist_status_from(out, before) == EDDY_OK)
        return EDDY_OK;
    while (out->n > before)
        eddy__cmd_reset(&out->cmds[--out->n]);
    return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
}

eddy_status eddy__admin_remove_result(redisReply **replies, size_t n, bool *removed,
                                      eddy_error *err) {
    *removed = false;
    eddy_status st = EDDY_OK;
    for (size_t i = 0; i + 1 < n && st == EDDY_OK; i++) /* MULTI's OK, then QUEUED each */
        st = eddy__reply_status(replies[i], "remove subject", err);
    if (st != EDDY_OK)
        return st;
    const redisReply *r = replies[n - 1];
    if ((st = eddy__reply_status(r, "remove subject: EXEC", err)) != EDDY_OK)
        return st;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2)
        return eddy__fail(err, EDDY_ERR_PROTOCOL, "remove subject: EXEC: unexpected reply");
    for (size_t i = 0; i < 2 && st == EDDY_OK; i++)
        st = eddy__reply_status(r->element[i],
                                i == 0 ? "remove subject: DEL" : "remove subject: SREM", err);
    if (st == EDDY_OK)
        *removed = (r->element[0]->type == REDIS_REPLY_INTEGER && r->element[0]->integer > 0) ||
                   (r->element[1]->type == REDIS_REPLY_INTEGER && r->element[1]->integer > 0);
    return st;
}
