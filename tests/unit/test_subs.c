/* SPDX-License-Identifier: BSD-3-Clause */
/* A bus's subscriptions as the core reads them (eddy__subs, src/bus/sub.h) with no front end:
 * adding with the checks against the others, the counters read by name (a gather responder's
 * and its twin's as one), answer_all's refusals and twin, removal in order, the heartbeat's
 * listed ones, and the counters' getters. */
#include <criterion/criterion.h>
#include <string.h>

#include "bus/bus_stats.h"
#include "bus/sub.h"

static eddy__settings settings;
static eddy__subs subs;

static void setup(void) {
    eddy_settings s;
    eddy_settings_init(&s);
    s.ns = "t";
    s.source = "/t";
    cr_assert_eq(eddy__settings_copy(&settings, &s, NULL), EDDY_OK);
    memset(&subs, 0, sizeof(subs));
}

static void teardown(void) {
    for (size_t i = 0; i < subs.n; i++)
        eddy__sub_free(subs.v[i]);
    eddy__subs_free(&subs);
    eddy__settings_free(&settings);
}

TestSuite(subs, .init = setup, .fini = teardown);

static eddy_status handle(eddy_delivery *d, void *user) {
    (void)d, (void)user;
    return EDDY_OK;
}

static eddy_status answer(eddy_delivery *d, eddy_event **reply, void *user) {
    (void)d, (void)reply, (void)user;
    return EDDY_OK;
}

/* Adds a competing subscription (a responder when `responder`) as a front end does. */
static eddy_status add(const char *name, const char *pattern, bool responder, eddy__sub **out) {
    eddy_subscription_spec spec;
    eddy_subscription_spec_init(&spec);
    spec.name = name;
    spec.pattern = pattern;
    spec.group = name;
    if (responder)
        spec.responder = answer;
    else
        spec.handler = handle;
    eddy__sub *sub = NULL;
    eddy_status st =
        eddy__subs_check_new(&subs, &settings, EDDY_CAP_REQUEST_REPLY, &spec, &sub, NULL);
    if (st == EDDY_OK) {
        cr_assert_eq(eddy__subs_reserve(&subs, subs.n + 1), EDDY_OK);
        eddy__subs_append(&subs, sub);
    }
    if (out)
        *out = sub;
    return st;
}

Test(subs, adds_checked_against_the_others) {
    cr_assert_eq(add("a", "x.y", false, NULL), EDDY_OK);
    cr_assert_eq(add("b", "x.z", false, NULL), EDDY_OK);
    eddy__sub *dup = NULL;
    cr_expect_neq(add("a", "x.w", false, &dup), EDDY_OK, "names are unique within a bus");
    cr_expect_null(dup);
    cr_expect_eq(subs.n, 2);
    cr_expect_str_eq(subs.v[0]->name, "a");
    cr_expect_str_eq(subs.v[1]->name, "b");
}

Test(subs, counters_are_read_by_name) {
    eddy__sub *a, *b;
    cr_assert_eq(add("a", "x.y", false, &a), EDDY_OK);
    cr_assert_eq(add("b", "x.z", false, &b), EDDY_OK);
    atomic_store(&a->stats.delivered, 3);
    atomic_store(&b->stats.delivered, 5);
    eddy_consumer_stats out = {.delivered = 99};
    cr_assert_eq(eddy__subs_consumer_stats(&subs, "a", &out), EDDY_OK);
    cr_expect_eq(out.delivered, 3, "only its own, not b's");
    eddy_consumer_stats untouched = {.delivered = 42};
    cr_expect_eq(eddy__subs_consumer_stats(&subs, "nope", &untouched), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(untouched.delivered, 42);
}

Test(subs, answer_all_twins_a_responder_once_before_start) {
    eddy__sub *r, *twin = NULL;
    cr_assert_eq(add("h", "x.y", false, NULL), EDDY_OK);
    cr_assert_eq(add("r", "q.>", true, &r), EDDY_OK);
    cr_expect_eq(eddy__subs_answer_all(&subs, "nope", false, &twin, NULL),
                 EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy__subs_answer_all(&subs, "h", false, &twin, NULL), EDDY_ERR_INVALID_ARGUMENT,
                 "a handler answers no scatter-gather request");
    cr_expect_eq(eddy__subs_answer_all(&subs, "r", true, &twin, NULL), EDDY_ERR_ILLEGAL_STATE);
    cr_expect_null(twin);
    cr_assert_eq(eddy__subs_answer_all(&subs, "r", false, &twin, NULL), EDDY_OK);
    cr_assert_not_null(twin);
    cr_expect(twin->twin);
    cr_expect_str_eq(twin->name, "r");
    cr_assert_eq(eddy__subs_reserve(&subs, subs.n + 1), EDDY_OK);
    eddy__subs_append(&subs, twin);
    eddy__sub *again = r;
    cr_expect_eq(eddy__subs_answer_all(&subs, "r", true, &again, NULL), EDDY_OK,
                 "twinned already: nothing to do, even started");
    cr_expect_null(again);

    /* The responder's counters and its twin's, read as one. */
    atomic_store(&r->stats.replied, 1);
    atomic_store(&twin->stats.replied, 2);
    eddy_consumer_stats out;
    cr_assert_eq(eddy__subs_consumer_stats(&subs, "r", &out), EDDY_OK);
    cr_expect_eq(out.replied, 3);
}

Test(subs, removal_keeps_the_order) {
    eddy__sub *a, *b, *c, *d;
    cr_assert_eq(add("a", "x.a", false, &a), EDDY_OK);
    cr_assert_eq(add("b", "x.b", false, &b), EDDY_OK);
    cr_assert_eq(add("c", "x.c", false, &c), EDDY_OK);
    cr_assert_eq(add("d", "x.d", false, &d), EDDY_OK);
    eddy__subs_remove(&subs, b);
    cr_assert_eq(subs.n, 3);
    cr_expect_eq(subs.v[0], a);
    cr_expect_eq(subs.v[1], c);
    cr_expect_eq(subs.v[2], d);
    eddy__sub_free(b);
}

/* The counters' getters both front ends call (bus_stats.h): a NULL out is refused, else the
 * counters are copied. */
Test(subs, counter_getters_refuse_a_null_out) {
    eddy__retention_counters c = {0};
    atomic_store(&c.passes, 2);
    atomic_store(&c.trimmed, 7);
    eddy_retention_stats r = {0};
    cr_expect_eq(eddy__bus_retention_stats(&c, NULL), EDDY_ERR_INVALID_ARGUMENT);
    cr_assert_eq(eddy__bus_retention_stats(&c, &r), EDDY_OK);
    cr_expect_eq(r.passes, 2);
    cr_expect_eq(r.trimmed, 7);
    eddy__requests *q = eddy__requests_new(&settings);
    cr_assert(q);
    eddy_request_stats rs = {.sent = 9};
    cr_expect_eq(eddy__bus_request_stats(q, NULL, NULL), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy__bus_request_stats(q, NULL, &rs), EDDY_OK);
    cr_expect_eq(rs.sent, 0, "nothing was sent");
    eddy__requests_free(q);
    eddy_connection_stats cs;
    cr_expect_eq(eddy__bus_connection_stats(settings.conn_state, NULL), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy__bus_connection_stats(settings.conn_state, &cs), EDDY_OK);
}

/* The heartbeat's rule: a subscription added to a started bus is renewed only once it is listed
 * (ready, or registered), so the registry never names it before its group exists; a stop lists
 * none. */
Test(subs, heartbeat_renews_only_listed) {
    eddy__sub *a, *b, *c, *out[3];
    cr_assert_eq(add("a", "x.a", false, &a), EDDY_OK);
    cr_assert_eq(add("b", "x.b", false, &b), EDDY_OK);
    cr_assert_eq(add("c", "x.c", false, &c), EDDY_OK);
    cr_assert_eq(eddy__subs_listed(&subs, out), 0);
    a->listed = c->listed = true;
    cr_assert_eq(eddy__subs_listed(&subs, out), 2);
    cr_assert_eq(out[0], a);
    cr_assert_eq(out[1], c);
    eddy__subs_unlist(&subs);
    cr_assert_eq(eddy__subs_listed(&subs, out), 0);
    (void)b;
}

/* Admitting checks a spec against the others and makes room for it, so appending cannot fail;
 * a refused one leaves nothing behind. */
Test(subs, admit_checks_and_makes_room) {
    eddy_subscription_spec spec;
    eddy_subscription_spec_init(&spec);
    spec.name = "a";
    spec.pattern = "x.a";
    spec.group = "a";
    spec.handler = handle;
    eddy__sub *sub = NULL;
    cr_assert_eq(eddy__subs_admit(&subs, &settings, 0, &spec, &sub, NULL), EDDY_OK);
    cr_assert_not_null(sub);
    cr_expect_geq(subs.cap, subs.n + 1, "room for the admitted subscription");
    if (subs.cap > subs.n)
        eddy__subs_append(&subs, sub);
    else
        eddy__sub_free(sub);
    spec.pattern = "x.b";
    cr_expect_neq(eddy__subs_admit(&subs, &settings, 0, &spec, &sub, NULL), EDDY_OK);
    cr_expect_null(sub, "a refused subscription is not kept");
}
