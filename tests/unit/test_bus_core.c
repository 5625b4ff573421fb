/* SPDX-License-Identifier: BSD-3-Clause */
/* The parts both front ends' buses are made of (src/bus/bus_core.h) with no front end: made for
 * the settings' backend, freed twice safely, the view a request gets of them, and what a stopping
 * bus logs. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "bus/bus_core.h"

Test(bus_core, makes_the_parts_and_gives_requests_their_view) {
    eddy_settings us;
    eddy_settings_init(&us);
    us.url = "memory://bus_core";
    us.ns = "t";
    eddy__settings s;
    cr_assert_eq(eddy__settings_copy(&s, &us, NULL), EDDY_OK);
    eddy__bus_core c;
    cr_assert_eq(eddy__bus_core_init(&c, &s, NULL), EDDY_OK);
    cr_expect(c.caps & EDDY_CAP_REQUEST_REPLY, "memory:// answers requests");
    cr_expect(c.publisher && c.requests && c.registry_cache && c.backend);

    eddy__request_ctx on = eddy__bus_core_request_ctx(&c, &s, true, false, "{t}:inbox:1");
    cr_expect_eq(on.requests, c.requests);
    cr_expect_eq(on.cache, c.registry_cache);
    cr_expect_eq(on.publisher, c.publisher);
    cr_expect_eq(on.caps, c.caps);
    cr_expect_str_eq(on.ns, "t");
    cr_expect_str_eq(on.reply_to, "{t}:inbox:1");
    eddy__request_ctx off = eddy__bus_core_request_ctx(&c, &s, false, true, "{t}:inbox:1");
    cr_expect_not(off.active);
    cr_expect(off.cancelled);
    cr_expect_null(off.reply_to, "no reply stream for a bus that is not active");

    eddy__bus_core_destroy(&c);
    cr_expect_null(c.publisher);
    eddy__bus_core_destroy(&c); /* a failed init's cleanup may run it again */
    eddy__settings_free(&s);
}

static char logged[512];
static int nlogged;

static void log_hook(eddy_log_level level, const char *msg, void *user) {
    (void)user;
    if (level == EDDY_LOG_WARN) {
        nlogged++;
        snprintf(logged, sizeof(logged), "%s", msg);
    }
}

/* A failed leave or drop is a warning with its detail; a bus being freed is no failure. */
Test(bus_core, a_failed_way_out_is_logged_a_closing_bus_is_not) {
    eddy_settings us;
    eddy_settings_init(&us);
    us.ns = "t";
    us.log = log_hook;
    eddy__settings s;
    cr_assert_eq(eddy__settings_copy(&s, &us, NULL), EDDY_OK);
    eddy_error e = {.status = EDDY_ERR_IO, .detail = "connection reset"};
    nlogged = 0;
    eddy__bus_core_left(&s, EDDY_OK, NULL);
    eddy__bus_core_left(&s, EDDY_ERR_CLOSED, NULL);
    eddy__bus_core_dropped(&s, EDDY_ERR_CLOSED, &e);
    cr_expect_eq(nlogged, 0);
    eddy__bus_core_left(&s, EDDY_ERR_IO, &e);
    cr_expect_eq(nlogged, 1);
    cr_expect(strstr(logged, "registry (connection reset)"), "%s", logged);
    eddy__bus_core_dropped(&s, EDDY_ERR_NOMEM, NULL);
    cr_expect_eq(nlogged, 2);
    cr_expect(strstr(logged, "fanout groups ("), "%s", logged);
    cr_expect(strstr(logged, eddy_status_str(EDDY_ERR_NOMEM)), "no detail: the status's text");
    eddy__settings_free(&s);
}

/* What the stats documents read: the bus's parts and counters, and the front end's state. */
Test(bus_core, the_stats_read_the_parts) {
    eddy_settings us;
    eddy_settings_init(&us);
    us.url = "memory://bus_core_stats";
    us.ns = "t";
    eddy__settings s;
    cr_assert_eq(eddy__settings_copy(&s, &us, NULL), EDDY_OK);
    eddy__bus_core c;
    cr_assert_eq(eddy__bus_core_init(&c, &s, NULL), EDDY_OK);
    atomic_store(&c.retention.passes, 4);
    eddy_error why = {.status = EDDY_ERR_NOT_SUPPORTED};
    eddy__bus_stats_in in = eddy__bus_core_stats_in(&c, &s, true, NULL, &why);
    cr_expect_eq(in.s, &s);
    cr_expect(in.started);
    cr_expect_eq(in.requests, c.requests);
    cr_expect_eq(in.nsubs, 0);
    cr_expect_eq(in.retention.passes, 4);
    cr_expect_null(in.scan);
    cr_expect_eq(in.scan_err, &why);
    eddy__bus_core_destroy(&c);
    eddy__settings_free(&s);
}

static eddy_status handle(eddy_delivery *d, void *user) {
    (void)d, (void)user;
    return EDDY_OK;
}

static size_t woken_at[4];
static size_t nwoken;

static void wake(size_t i, eddy__wake how, void *user) {
    (void)how, (void)user;
    woken_at[nwoken++ % 4] = i;
}

/* A pause reaches every subscription of that name, and only those; the front end wakes each. */
Test(bus_core, a_pause_reaches_the_subscriptions_of_its_name) {
    eddy_settings us;
    eddy_settings_init(&us);
    us.url = "memory://bus_core_pause";
    us.ns = "t";
    eddy__settings s;
    cr_assert_eq(eddy__settings_copy(&s, &us, NULL), EDDY_OK);
    eddy__bus_core c;
    cr_assert_eq(eddy__bus_core_init(&c, &s, NULL), EDDY_OK);
    const char *names[] = {"a", "b"};
    for (size_t i = 0; i < 2; i++) {
        eddy_subscription_spec spec;
        eddy_subscription_spec_init(&spec);
        spec.name = names[i];
        spec.pattern = "x.y";
        spec.group = names[i];
        spec.handler = handle;
        eddy__sub *sub;
        cr_assert_eq(eddy__subs_check_new(&c.all, &s, c.caps, &spec, &sub, NULL), EDDY_OK);
        cr_assert_eq(eddy__subs_reserve(&c.all, c.all.n + 1), EDDY_OK);
        eddy__subs_append(&c.all, sub);
    }
    nwoken = 0;
    eddy_error err = {0};
    cr_expect_eq(eddy__bus_core_pause(&c, "zz", true, wake, NULL, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(nwoken, 0);
    cr_assert_eq(eddy__bus_core_pause(&c, "b", true, wake, NULL, &err), EDDY_OK);
    cr_expect_eq(nwoken, 1);
    cr_expect_eq(woken_at[0], 1);
    cr_expect(atomic_load(&c.all.v[1]->paused));
    cr_expect_not(atomic_load(&c.all.v[0]->paused));
    for (size_t i = 0; i < c.all.n; i++)
        eddy__sub_free(c.all.v[i]);
    eddy__bus_core_destroy(&c);
    eddy__settings_free(&s);
}
