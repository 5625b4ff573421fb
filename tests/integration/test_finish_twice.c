/* SPDX-License-Identifier: BSD-3-Clause */
/* A delivery finished twice (a misuse eddy_delivery_finish forbids), or finished after its
 * handler returned a result, on both front ends: the second call is caught, logged once and
 * ignored; the message counts once. Under the sanitizers this also shows that nothing reads
 * freed memory. And a delivery finished with EDDY_PENDING (it cannot be put off twice) counts
 * as a handler failure on both front ends: redelivered, as any failure is. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "driver.h"
#include "eddy_test.h"
#include "recorder.h"

static atomic_int again_lines;
static eddy_delivery *_Atomic held;
static bool pending_mode;

static void on_log(eddy_log_level level, const char *msg, void *user) {
    (void)user;
    if (level == EDDY_LOG_ERROR && strstr(msg, "was finished again"))
        atomic_fetch_add(&again_lines, 1);
    eddy_test_log(level, msg, NULL);
}

static eddy_status handler(eddy_delivery *d, void *user) {
    (void)user;
    atomic_store(&held, d);
    return pending_mode ? EDDY_PENDING : EDDY_OK;
}

static void finish_twice(void *arg) {
    eddy_delivery_finish(arg, EDDY_OK);
    eddy_delivery_finish(arg, EDDY_OK);
}

static void finish_once(void *arg) { eddy_delivery_finish(arg, EDDY_OK); }

typedef struct ctx {
    const driver *d;
    tbus *b;
    uint64_t handled;
} ctx;

static bool got_delivery(void *user) {
    (void)user;
    return atomic_load(&held) != NULL;
}

static bool handled(void *user) {
    ctx *c = user;
    eddy_consumer_stats st;
    cr_assert_eq(c->d->stats(c->b, "work", &st), EDDY_OK);
    return st.handled >= c->handled;
}

static void misuse(const driver *d, bool pending) {
    pending_mode = pending;
    char url[64], ns[64];
    snprintf(url, sizeof(url), "memory://twice-%d", (int)getpid());
    eddy_settings s;
    eddy_settings_init(&s);
    s.url = url;
    s.ns = eddy_test_namespace(ns, sizeof(ns), "twice");
    s.source = "/tests";
    s.log = on_log;
    eddy_subscription_spec sp;
    eddy_subscription_spec_init(&sp);
    sp.name = "work";
    sp.pattern = "jobs";
    sp.group = "workers";
    sp.delivery = EDDY_AT_LEAST_ONCE;
    sp.handler = handler;
    ctx c = {.d = d, .handled = 1};
    eddy_error err;
    cr_assert_eq(d->bus_new(&s, &sp, 1, &c.b, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(d->start(c.b, &err), EDDY_OK, "%s", err.detail);
    eddy_event *ev = make_event("once", "t");
    cr_assert_eq(d->publish(c.b, "jobs", ev, &err), EDDY_OK, "%s", err.detail);
    eddy_event_free(ev);
    cr_assert(eddy_test_wait_until(got_delivery, NULL, 20000));
    if (pending) {
        d->run(c.b, finish_twice, atomic_load(&held));
    } else {
        cr_assert(eddy_test_wait_until(handled, &c, 20000));
        d->run(c.b, finish_once, atomic_load(&held)); /* its handler returned EDDY_OK */
    }
    cr_assert(eddy_test_wait_until(handled, &c, 20000));
    cr_expect_eq(atomic_load(&again_lines), 1);
    eddy_consumer_stats st;
    cr_assert_eq(d->stats(c.b, "work", &st), EDDY_OK);
    cr_expect_eq(st.delivered, 1);
    cr_expect_eq(st.handled, 1);
    cr_expect_eq(st.failed, 0);
    cr_expect_eq(d->stop(c.b), EDDY_OK);
    d->free(c.b);
}

Test(finish_twice, pending_blocking) { misuse(&blocking_driver, true); }
Test(finish_twice, pending_reactive) { misuse(&reactive_driver, true); }
Test(finish_twice, after_a_result_blocking) { misuse(&blocking_driver, false); }
Test(finish_twice, after_a_result_reactive) { misuse(&reactive_driver, false); }

static eddy_delivery *_Atomic second;
static atomic_int calls;

static eddy_status hold_each(eddy_delivery *d, void *user) {
    (void)user;
    atomic_store(atomic_fetch_add(&calls, 1) == 0 ? &held : &second, d);
    return EDDY_PENDING;
}

static void finish_pending(void *arg) { eddy_delivery_finish(arg, EDDY_PENDING); }

static bool got_second(void *user) {
    (void)user;
    return atomic_load(&second) != NULL;
}

static void late_pending(const driver *d) {
    atomic_store(&held, NULL);
    atomic_store(&second, NULL);
    atomic_store(&calls, 0);
    char url[64], ns[64];
    snprintf(url, sizeof(url), "memory://late-%d", (int)getpid());
    eddy_settings s;
    eddy_settings_init(&s);
    s.url = url;
    s.ns = eddy_test_namespace(ns, sizeof(ns), "late");
    s.source = "/tests";
    s.log = on_log;
    s.redelivery_idle_ms = 100;
    s.redelivery_backoff_ms = 0;
    eddy_subscription_spec sp;
    eddy_subscription_spec_init(&sp);
    sp.name = "work";
    sp.pattern = "jobs";
    sp.group = "workers";
    sp.delivery = EDDY_AT_LEAST_ONCE;
    sp.handler = hold_each;
    ctx c = {.d = d, .handled = 1};
    eddy_error err;
    cr_assert_eq(d->bus_new(&s, &sp, 1, &c.b, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(d->start(c.b, &err), EDDY_OK, "%s", err.detail);
    eddy_event *ev = make_event("late", "t");
    cr_assert_eq(d->publish(c.b, "jobs", ev, &err), EDDY_OK, "%s", err.detail);
    eddy_event_free(ev);
    cr_assert(eddy_test_wait_until(got_delivery, NULL, 20000));
    d->run(c.b, finish_pending, atomic_load(&held));
    cr_assert(eddy_test_wait_until(got_second, NULL, 20000), "the failed delivery came back");
    cr_expect_eq(eddy_delivery_attempt(atomic_load(&second)), 2);
    d->run(c.b, finish_once, atomic_load(&second));
    cr_assert(eddy_test_wait_until(handled, &c, 20000));
    eddy_consumer_stats st;
    cr_assert_eq(d->stats(c.b, "work", &st), EDDY_OK);
    cr_expect_eq(st.delivered, 2);
    cr_expect_eq(st.failed, 1, "the late EDDY_PENDING counts as a failure");
    cr_expect_eq(st.handled, 1);
    cr_expect_eq(d->stop(c.b), EDDY_OK);
    d->free(c.b);
}

Test(finish_twice, late_pending_blocking) { late_pending(&blocking_driver); }
Test(finish_twice, late_pending_reactive) { late_pending(&reactive_driver); }
