/* SPDX-License-Identifier: BSD-3-Clause */
/* Subscription rules that need no backend: names, patterns, shape and group. */
#include "bus/sub.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "events/subject.h"
#include "keys.h"
#include "util/options.h"

eddy_status eddy__sub_new(const eddy__settings *s, const eddy_subscription_spec *spec,
                          eddy__sub **out, eddy_error *err) {
    if (!spec || !out)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "subscription spec is NULL");
    eddy_subscription_spec full; /* the caller's fields, and the defaults of the newer ones */
    eddy__opts_widen(&eddy__subscription_spec_table, &full, spec);
    spec = &full;
    const char *name = spec->name ? spec->name : "";
    if (!eddy__key_name_ok(name))
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC,
                          "subscription '%s': name must be 1-128 printable characters without "
                          "space, '{', '}' or ':'",
                          name);
    if (!spec->pattern)
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC, "subscription '%s': no pattern", name);
    eddy_status st = eddy__pattern_check(spec->pattern, err);
    if (st != EDDY_OK)
        return st;
    if (spec->handler && spec->responder)
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC,
                          "subscription '%s': has both a handler and a responder", name);
    if (!spec->handler && !spec->responder)
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC,
                          "subscription '%s': needs a handler or a responder", name);
    if (spec->responder && spec->shape == EDDY_FANOUT)
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC,
                          "subscription '%s': a responder must be Competing: a request goes to "
                          "one member of one group",
                          name);
    if (spec->responder && spec->delivery == EDDY_AT_LEAST_ONCE)
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC,
                          "subscription '%s': a responder cannot be AtLeastOnce: a redelivered "
                          "request would answer nobody",
                          name);
    if (spec->responder && !spec->group)
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC,
                          "subscription '%s': a responder needs a group", name);
    if (spec->responder && !s->source)
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC,
                          "subscription '%s': a responder needs settings.source (failure "
                          "replies carry it)",
                          name);
    if (spec->shape != EDDY_COMPETING && spec->shape != EDDY_FANOUT)
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC, "subscription '%s': unknown shape %d", name,
                          (int)spec->shape);
    if (spec->delivery != EDDY_AT_MOST_ONCE && spec->delivery != EDDY_AT_LEAST_ONCE)
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC, "subscription '%s': unknown delivery mode %d",
                          name, (int)spec->delivery);
    if (spec->shape == EDDY_COMPETING && (!spec->group || !eddy__key_name_ok(spec->group)))
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC,
                          "subscription '%s': a competing subscription needs a group of 1-128 "
                          "printable characters without space, '{', '}' or ':'",
                          name);
    if (spec->shape == EDDY_FANOUT && spec->group)
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC,
                          "subscription '%s': a fanout subscription takes no group (each "
                          "subscriber is its own)",
                          name);

    eddy__sub *sub = calloc(1, sizeof(*sub));
    if (!sub)
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    sub->name = strdup(name);
    sub->pattern = strdup(spec->pattern);
    sub->consumer = strdup(s->instance);
    if (spec->shape == EDDY_COMPETING) {
        sub->group = strdup(spec->group);
    } else {
        size_t n = strlen(name) + strlen(s->instance) + 16;
        sub->group = malloc(n);
        if (sub->group)
            snprintf(sub->group, n, "fanout.%s.%s", name, s->instance);
    }
    if (!sub->name || !sub->pattern || !sub->consumer || !sub->group) {
        eddy__sub_free(sub);
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    }
    sub->shape = spec->shape;
    sub->delivery = spec->delivery;
    sub->handler = spec->handler;
    sub->responder = spec->responder;
    sub->user = spec->user;
    sub->literal = eddy__pattern_is_literal(spec->pattern);
    atomic_init(&sub->paused, spec->paused);
    *out = sub;
    return EDDY_OK;
}

eddy_status eddy__sub_gather_twin(const eddy__sub *r, eddy__sub **out) {
    *out = NULL;
    eddy__sub *t = calloc(1, sizeof(*t));
    if (!t)
        return EDDY_ERR_NOMEM;
    t->name = strdup(r->name);
    t->pattern = strdup(r->pattern);
    t->consumer = strdup(r->consumer);
    size_t n = strlen(r->name) + strlen(r->consumer) + 16;
    if ((t->group = malloc(n)))
        snprintf(t->group, n, "gather.%s.%s", r->name, r->consumer);
    if (!t->name || !t->pattern || !t->consumer || !t->group) {
        eddy__sub_free(t);
        return EDDY_ERR_NOMEM;
    }
    t->shape = EDDY_FANOUT;
    t->delivery = EDDY_AT_MOST_ONCE;
    t->responder = r->responder;
    t->user = r->user;
    t->literal = r->literal;
    t->twin = true;
    atomic_init(&t->paused, atomic_load(&r->paused));
    *out = t;
    return EDDY_OK;
}

char *eddy__sub_stream_key(const char *ns, const eddy__sub *sub, const char *subject) {
    return sub->twin ? eddy__key_gather(ns, subject) : eddy__key_stream(ns, subject);
}

void eddy__sub_free(eddy__sub *sub) {
    if (!sub)
        return;
    free(sub->name);
    free(sub->pattern);
    free(sub->group);
    free(sub->consumer);
    free(sub);
}

static eddy_status check_against(const eddy__settings *s, unsigned caps, const eddy__sub *sub,
                                 eddy__sub *const *existing, size_t n, eddy_error *err) {
    (void)s;
    if (sub->responder && !(caps & EDDY_CAP_REQUEST_REPLY))
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC,
                          "subscription '%s': this backend does not answer requests", sub->name);
    for (size_t i = 0; i < n; i++) {
        const eddy__sub *o = existing[i];
        if (strcmp(o->name, sub->name) == 0)
            return eddy__fail(err, EDDY_ERR_INVALID_SPEC,
                              "subscription '%s': the name is already used on this bus", sub->name);
        /* A gather twin (o->twin) answers only scatter-gather requests, in a group of its own
         * per instance: it never competes with a responder for a request. */
        if (sub->responder && o->responder && !o->twin && strcmp(sub->group, o->group) != 0 &&
            eddy__pattern_overlap(sub->pattern, o->pattern))
            return eddy__fail(err, EDDY_ERR_INVALID_SPEC,
                              "subscription '%s': responder in group '%s' can answer the same "
                              "subjects as responder '%s' in group '%s' (both would answer)",
                              sub->name, sub->group, o->name, o->group);
        const eddy__sub *handler = sub->responder ? o : sub, *responder = sub->responder ? sub : o;
        if (responder->responder && !handler->responder && handler->shape == EDDY_COMPETING &&
            strcmp(handler->group, responder->group) == 0)
            return eddy__fail(err, EDDY_ERR_INVALID_SPEC,
                              "subscription '%s': handler '%s' is in responder '%s''s group "
                              "'%s' and would take requests it cannot answer",
                              sub->name, handler->name, responder->name, responder->group);
    }
    return EDDY_OK;
}

eddy_status eddy__sub_new_checked(const eddy__settings *s, unsigned caps,
                                  const eddy_subscription_spec *spec, eddy__sub *const *existing,
                                  size_t n, eddy__sub **out, eddy_error *err) {
    eddy__sub *sub = NULL;
    eddy_status st = eddy__sub_new(s, spec, &sub, err);
    if (st == EDDY_OK && (st = check_against(s, caps, sub, existing, n, err)) != EDDY_OK) {
        eddy__sub_free(sub);
        sub = NULL;
    }
    *out = sub;
    return st;
}

/* Outcomes are read before the deliveries they follow (which are counted first), so that no
 * snapshot shows more outcomes than deliveries. */
void eddy__stats_snapshot(const eddy__stats *st, eddy_consumer_stats *out) {
    out->handled = atomic_load(&st->handled);
    out->failed = atomic_load(&st->failed);
    out->redelivered = atomic_load(&st->redelivered);
    out->dead_lettered = atomic_load(&st->dead_lettered);
    out->malformed = atomic_load(&st->malformed);
    out->replied = atomic_load(&st->replied);
    out->refused = atomic_load(&st->refused);
    out->unaddressed = atomic_load(&st->unaddressed);
    out->responder_failed = atomic_load(&st->responder_failed);
    out->expired = atomic_load(&st->expired);
    out->held = atomic_load(&st->held);
    out->overlapping = atomic_load(&st->overlapping);
    out->delivered = atomic_load(&st->delivered);
    out->recreated = atomic_load(&st->recreated);
    out->lost_writes = atomic_load(&st->lost_writes);
}

void eddy_subscription_spec_init_sized(eddy_subscription_spec *spec, size_t size) {
    if (spec)
        eddy__opts_init(&eddy__subscription_spec_table, spec, size);
}

void eddy__stats_add(const eddy__stats *st, eddy_consumer_stats *out) {
    eddy_consumer_stats s;
    eddy__stats_snapshot(st, &s);
    out->delivered += s.delivered;
    out->handled += s.handled;
    out->failed += s.failed;
    out->redelivered += s.redelivered;
    out->dead_lettered += s.dead_lettered;
    out->malformed += s.malformed;
    out->replied += s.replied;
    out->refused += s.refused;
    out->unaddressed += s.unaddressed;
    out->responder_failed += s.responder_failed;
    out->expired += s.expired;
    out->held += s.held;
    out->overlapping += s.overlapping;
    out->recreated += s.recreated;
    out->lost_writes += s.lost_writes;
}

const eddy_subscription_spec *eddy__spec_at(const eddy_subscription_spec *specs, size_t i) {
    size_t recorded = specs[0].struct_size;
    size_t stride = recorded ? recorded : EDDY__SPEC_STRIDE_0_3;
    return (const eddy_subscription_spec *)(const void *)((const char *)specs + i * stride);
}

/* ---- the table ---------------------------------------------------------------------- */

#define P_OFF(f) offsetof(eddy_subscription_spec, f), sizeof(((eddy_subscription_spec *)0)->f)
#define ROW(f, type, def, max, flags, ddoc, choices, doc)                                          \
    {                                                                                              \
#f, EDDY__OPT_##type, P_OFF(f), EDDY__OPT_NO_COPY, NULL, def, 0, max, flags, "", ddoc,     \
            NULL, choices, doc                                                                     \
    }
static const char *const shapes[] = {"competing", "fanout", NULL};
static const char *const modes[] = {"at_most_once", "at_least_once", NULL};
static const eddy__opt spec_rows[] = {
    ROW(name, STRING, 0, 0, EDDY__OPT_REQUIRED, "none (required)", NULL,
        "Unique within the bus; names the counters (1-128 printable, no space, '{', '}', ':')"),
    ROW(pattern, STRING, 0, 0, EDDY__OPT_REQUIRED, "none (required)", NULL,
        "Subject or pattern: orders.created, orders.*, orders.>"),
    ROW(shape, ENUM, EDDY_COMPETING, 1, 0, NULL, shapes,
        "competing: one member of the group handles each message; fanout: every subscriber"),
    ROW(group, STRING, 0, 0, 0, "none", NULL,
        "Competing: the group's name, required; fanout: must be NULL"),
    ROW(delivery, ENUM, EDDY_AT_MOST_ONCE, 1, 0, NULL, modes,
        "at_most_once: acknowledged when read; at_least_once: after the handler succeeded"),
    ROW(handler, CALLBACK, 0, 0, 0, "none", NULL,
        "The handler (exactly one of handler, responder)"),
    ROW(user, POINTER, 0, 0, 0, "NULL", NULL, "The handler's or responder's user pointer"),
    ROW(responder, CALLBACK, 0, 0, 0, "none", NULL,
        "The responder: competing, at_most_once, with a group and settings.source"),
    ROW(paused, BOOL, 0, 1, 0, "false", NULL,
        "Start paused: the group is created at start, nothing is read until resumed"),
};
#undef ROW

const eddy__opt_table eddy__subscription_spec_table = {
    .prefix = "subscription_spec",
    .type_name = "eddy_subscription_spec",
    .init_name = "eddy_subscription_spec_init",
    .rows = spec_rows,
    .nrows = sizeof(spec_rows) / sizeof(spec_rows[0]),
    .size = sizeof(eddy_subscription_spec),
    .size_0_3 = EDDY__SPEC_STRIDE_0_3,
    .doc = "A subscription (eddy_bus_subscribe, eddy_rbus_subscribe, the specs of eddy_bus_new and "
           "eddy_rbus_new): include/eddy/bus.h. Its rules between fields are checked when it is "
           "subscribed.",
};

eddy_status eddy__subs_answer_all(const eddy__subs *subs, const char *name, bool started,
                                  eddy__sub **twin, eddy_error *err) {
    *twin = NULL;
    if (!name)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "name is NULL");
    eddy__sub *r = NULL;
    bool twinned = false;
    for (size_t i = 0; i < subs->n; i++)
        if (strcmp(subs->v[i]->name, name) == 0) {
            if (subs->v[i]->twin)
                twinned = true;
            else
                r = subs->v[i];
        }
    if (!r)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "no subscription '%s' on this bus", name);
    if (!r->responder)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT,
                          "subscription '%s' is not a responder: only a responder answers "
                          "scatter-gather requests",
                          name);
    if (twinned)
        return EDDY_OK;
    if (started)
        return eddy__fail(err, EDDY_ERR_ILLEGAL_STATE,
                          "subscription '%s': a responder answers scatter-gather requests from "
                          "the bus's next start; call this before starting it",
                          name);
    if (eddy__sub_gather_twin(r, twin) != EDDY_OK)
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    return EDDY_OK;
}

void eddy__subs_free(eddy__subs *subs) {
    free(subs->v);
    *subs = (eddy__subs){0};
}

eddy_status eddy__subs_reserve(eddy__subs *subs, size_t n) {
    if (n <= subs->cap)
        return EDDY_OK;
    size_t cap = subs->cap ? subs->cap * 2 : 4;
    if (cap < n)
        cap = n;
    eddy__sub **v = realloc(subs->v, cap * sizeof(*v));
    if (!v)
        return EDDY_ERR_NOMEM;
    subs->v = v;
    subs->cap = cap;
    return EDDY_OK;
}

void eddy__subs_append(eddy__subs *subs, eddy__sub *sub) { subs->v[subs->n++] = sub; }

void eddy__subs_remove(eddy__subs *subs, const eddy__sub *sub) {
    for (size_t i = 0; i < subs->n; i++)
        if (subs->v[i] == sub) {
            memmove(&subs->v[i], &subs->v[i + 1], (subs->n - i - 1) * sizeof(*subs->v));
            subs->n--;
            return;
        }
}

size_t eddy__subs_listed(const eddy__subs *subs, eddy__sub **out) {
    size_t n = 0;
    for (size_t i = 0; i < subs->n; i++)
        if (subs->v[i]->listed)
            out[n++] = subs->v[i];
    return n;
}

void eddy__subs_unlist(eddy__subs *subs) {
    for (size_t i = 0; i < subs->n; i++)
        subs->v[i]->listed = false;
}

eddy_status eddy__subs_check_new(const eddy__subs *subs, const eddy__settings *s, unsigned caps,
                                 const eddy_subscription_spec *spec, eddy__sub **out,
                                 eddy_error *err) {
    return eddy__sub_new_checked(s, caps, spec, subs->v, subs->n, out, err);
}

eddy_status eddy__subs_admit(eddy__subs *subs, const eddy__settings *s, unsigned caps,
                             const eddy_subscription_spec *spec, eddy__sub **sub, eddy_error *err) {
    eddy_status st = spec ? eddy__subs_check_new(subs, s, caps, spec, sub, err) : EDDY_OK;
    if (st == EDDY_OK && eddy__subs_reserve(subs, subs->n + 1) != EDDY_OK) {
        eddy__sub_free(*sub);
        *sub = NULL;
        st = eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    }
    return st;
}

eddy_status eddy__subs_consumer_stats(const eddy__subs *subs, const char *name,
                                      eddy_consumer_stats *out) {
    eddy_status st = EDDY_ERR_INVALID_ARGUMENT;
    eddy_consumer_stats sum = {0};
    for (size_t i = 0; i < subs->n; i++) /* a gather responder's twin has its name too */
        if (strcmp(subs->v[i]->name, name) == 0) {
            eddy__stats_add(&subs->v[i]->stats, &sum);
            st = EDDY_OK;
        }
    if (st == EDDY_OK)
        *out = sum;
    return st;
}
