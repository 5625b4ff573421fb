/* SPDX-License-Identifier: BSD-3-Clause */
/* Stats for scraping: eddy_bus_stats_json, eddy_rbus_stats_json and an admin handle
 * (eddy/admin.h), on both backends; every JSON document is parsed back with jansson, and the
 * Prometheus ones (eddy_*_stats_prometheus) are looked at line by line (tests/cli/prometheus.sh
 * has promtool and a real Prometheus read them). */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <ev.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eddy/blocking.h"
#include "eddy/reactive.h"
#include "eddy_test.h"
#include "raw.h"
#include "test_backend.h"

static atomic_int handled;

static eddy_status count_it(eddy_delivery *d, void *user) {
    atomic_fetch_add(&handled, 1);
    return EDDY_OK;
}

static eddy_status pong(eddy_delivery *d, eddy_event **reply, void *user) {
    *reply = eddy_event_dup(eddy_delivery_event(d));
    return *reply ? EDDY_OK : EDDY_ERR_NOMEM;
}

static bool three_handled(void *user) { return atomic_load(&handled) >= 3; }

static json_t *parse(char *doc) {
    cr_assert(doc, "no document");
    json_error_t e;
    json_t *v = json_loads(doc, 0, &e);
    cr_assert(v, "not JSON (%s): %s", e.text, doc);
    free(doc);
    return v;
}

/* The Prometheus document has the line, whole. */
__attribute__((format(printf, 2, 3))) static void has_line(const char *doc, const char *fmt, ...) {
    char line[512], framed[520];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    snprintf(framed, sizeof(framed), "\n%s\n", line);
    cr_assert(strncmp(doc, line, strlen(line)) == 0 || strstr(doc, framed), "no line '%s' in:\n%s",
              line, doc);
}

static json_t *by_name(json_t *list, const char *key, const char *name) {
    size_t i;
    json_t *v;
    json_array_foreach(list, i, v) if (strcmp(json_string_value(json_object_get(v, key)), name) ==
                                       0) return v;
    cr_assert_fail("no %s '%s'", key, name);
    return NULL;
}

typedef struct seen {
    int subjects, registrations;
    uint64_t group_pending;
    long long group_lag;
} seen;

static eddy_status on_subject(const eddy_subject_info *si, void *user) {
    seen *s = user;
    s->subjects++;
    cr_assert_str_eq(si->subject, "st.a");
    cr_assert_eq(si->length, 3);
    for (size_t i = 0; i < si->ngroups; i++)
        if (strcmp(si->groups[i].group, "workers") == 0) {
            s->group_pending = si->groups[i].pending;
            s->group_lag = si->groups[i].lag;
        }
    return EDDY_OK;
}

static eddy_status on_registration(const eddy_registration *r, void *user) {
    ((seen *)user)->registrations++;
    return EDDY_OK;
}

static void bus_stats(bool redis) {
    char url[128], ns[96];
    eddy_settings s;
    eddy_test_settings(&s, redis, "stats", url, sizeof(url), ns, sizeof(ns));
    const char *names[] = {"ping"};
    s.request_names = names;
    s.request_name_count = 1;
    eddy_subscription_spec specs[2];
    eddy_subscription_spec_init(&specs[0]);
    specs[0].name = "work";
    specs[0].pattern = "st.*";
    specs[0].group = "workers";
    specs[0].delivery = EDDY_AT_LEAST_ONCE;
    specs[0].handler = count_it;
    eddy_subscription_spec_init(&specs[1]);
    specs[1].name = "pinger";
    specs[1].pattern = "ping";
    specs[1].group = "pingers";
    specs[1].responder = pong;
    atomic_store(&handled, 0);
    eddy_bus *bus;
    cr_assert_eq(eddy_bus_new(&s, specs, 2, &bus, NULL), EDDY_OK);
    cr_assert_eq(eddy_bus_start(bus, NULL), EDDY_OK);
    for (int i = 0; i < 3; i++) {
        eddy_event *ev = eddy_event_new();
        eddy_event_set_id(ev, i == 0 ? "e0" : i == 1 ? "e1" : "e2");
        eddy_event_set_source(ev, "/tests");
        eddy_event_set_type(ev, "t");
        cr_assert_eq(eddy_bus_publish(bus, "st.a", ev, NULL, 0, NULL), EDDY_OK);
        eddy_event_free(ev);
    }
    cr_assert(eddy_test_wait_until(three_handled, NULL, 30000));
    eddy_consumer_stats cs;
    cr_assert_eq(eddy_bus_consumer_stats(bus, "work", &cs), EDDY_OK);

    json_t *doc = parse(eddy_bus_stats_json(bus, NULL));
    cr_assert(json_is_true(json_object_get(doc, "started")));
    cr_assert_str_eq(json_string_value(json_object_get(doc, "ns")), ns);
    json_t *work = by_name(json_object_get(doc, "subscriptions"), "name", "work");
    cr_assert_str_eq(json_string_value(json_object_get(work, "group")), "workers");
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(work, "counters"), "handled")),
                 3);
    cr_assert(json_object_get(json_object_get(work, "counters"), "recreated"));
    cr_assert_eq(
        json_integer_value(json_object_get(json_object_get(work, "counters"), "lost_writes")), 0);
    json_t *broker = json_object_get(work, "broker");
    cr_assert(broker, "the broker's view: %s", json_dumps(doc, 0));
    cr_assert_eq(json_integer_value(json_object_get(broker, "subjects")), 1);
    cr_assert(json_is_null(json_object_get(broker, "oldest_pending_ms")) ||
              json_integer_value(json_object_get(broker, "pending")) > 0);
    json_t *pinger = by_name(json_object_get(doc, "subscriptions"), "name", "pinger");
    cr_assert_str_eq(json_string_value(json_object_get(pinger, "kind")), "responder");
    cr_assert(json_object_get(json_object_get(pinger, "counters"), "replied"));
    json_t *requests = json_object_get(doc, "requests");
    cr_assert(json_object_get(json_object_get(requests, "named"), "ping"));
    cr_assert(json_object_get(json_object_get(requests, "total"), "sent"));
    cr_assert(json_object_get(json_object_get(doc, "retention"), "passes"));
    /* The connection counters, as eddy_bus_connection_stats has them. */
    json_t *conn = json_object_get(doc, "connection");
    eddy_connection_stats cst;
    cr_assert_eq(eddy_bus_connection_stats(bus, &cst), EDDY_OK);
    cr_assert_str_eq(json_string_value(json_object_get(conn, "state")), "connected");
    cr_assert_geq(json_integer_value(json_object_get(conn, "connects")), 1);
    cr_assert_leq((uint64_t)json_integer_value(json_object_get(conn, "connects")), cst.connects);
    cr_assert_eq(json_integer_value(json_object_get(conn, "disconnects")), 0);
    cr_assert(json_is_integer(json_object_get(conn, "lost_writes")));
    cr_assert_eq(json_integer_value(json_object_get(conn, "lost_writes")), 0);
    json_decref(doc);

    /* The same state in the Prometheus text format. */
    char *prom = eddy_bus_stats_prometheus(bus, NULL);
    cr_assert(prom);
    const char *inst = eddy_bus_instance(bus);
    has_line(prom, "eddy_bus_started{namespace=\"%s\",consumer=\"%s\"} 1", ns, inst);
    has_line(prom, "eddy_bus_broker_up{namespace=\"%s\",consumer=\"%s\"} 1", ns, inst);
    has_line(prom, "eddy_connection_state{namespace=\"%s\",consumer=\"%s\",state=\"connected\"} 1",
             ns, inst);
    has_line(prom, "eddy_connection_disconnects_total{namespace=\"%s\",consumer=\"%s\"} 0", ns,
             inst);
    has_line(prom, "# TYPE eddy_subscription_handled_total counter");
    has_line(prom,
             "eddy_subscription_handled_total{namespace=\"%s\",consumer=\"%s\",subscription="
             "\"work\",group=\"workers\"} 3",
             ns, inst);
    has_line(prom,
             "eddy_subscription_info{namespace=\"%s\",consumer=\"%s\",subscription=\"work\","
             "group=\"workers\",pattern=\"st.*\",shape=\"competing\",delivery=\"at_least_once\","
             "kind=\"handler\"} 1",
             ns, inst);
    has_line(prom,
             "eddy_subscription_subjects{namespace=\"%s\",consumer=\"%s\",subscription=\"work\","
             "group=\"workers\"} 1",
             ns, inst);
    has_line(prom, "# TYPE eddy_subscription_lag gauge");
    has_line(prom,
             "eddy_subscription_replied_total{namespace=\"%s\",consumer=\"%s\",subscription="
             "\"pinger\",group=\"pingers\"} 0",
             ns, inst);
    cr_assert_null(strstr(prom, "eddy_subscription_replied_total{namespace=\"%s\",consumer=\"%s\","
                                "subscription=\"work\""),
                   "a responder's counter on a handler");
    has_line(prom, "eddy_requests_sent_total{namespace=\"%s\",consumer=\"%s\",request=\"ping\"} 0",
             ns, inst);
    has_line(prom, "eddy_requests_sent_total{namespace=\"%s\",consumer=\"%s\",request=\"\"} 0", ns,
             inst);
    has_line(prom, "eddy_retention_passes_total{namespace=\"%s\",consumer=\"%s\"} 0", ns, inst);
    cr_assert_eq(prom[strlen(prom) - 1], '\n');
    free(prom);

    /* The same namespace through an admin handle: its subjects, groups and registry. */
    eddy_admin *a;
    cr_assert_eq(eddy_admin_open(&s, &a, NULL), EDDY_OK);
    seen sn = {0};
    cr_assert_eq(eddy_admin_subjects(a, "st.*", on_subject, &sn, NULL), EDDY_OK);
    cr_assert_eq(sn.subjects, 1);
    cr_assert_eq(eddy_admin_registry(a, on_registration, &sn, NULL), EDDY_OK);
    cr_assert_eq(sn.registrations, 2, "both subscriptions hold a lease");
    eddy_error err = {0};
    cr_assert_eq(eddy_admin_subjects(a, "st.>.x", on_subject, &sn, &err), EDDY_ERR_INVALID_PATTERN);
    json_t *ns_doc = parse(eddy_admin_stats_json(a, NULL, NULL));
    cr_assert_eq(json_array_size(json_object_get(ns_doc, "registry")), 2);
    json_t *workers = by_name(json_object_get(ns_doc, "groups"), "group", "workers");
    cr_assert_eq(json_integer_value(json_object_get(workers, "subjects")), 1);
    /* The counters eddy top takes its rates from: entries added to the stream, and read by
     * the group (all three delivered). */
    json_t *sta = by_name(json_object_get(ns_doc, "subjects"), "subject", "st.a");
    cr_assert_eq(json_integer_value(json_object_get(sta, "entries_added")), 3);
    json_t *sta_workers = by_name(json_object_get(sta, "groups"), "group", "workers");
    cr_assert_eq(json_integer_value(json_object_get(sta_workers, "entries_read")), 3);
    json_decref(ns_doc);
    char *ns_prom = eddy_admin_stats_prometheus(a, NULL, NULL);
    cr_assert(ns_prom);
    has_line(ns_prom, "eddy_subject_length{namespace=\"%s\",subject=\"st.a\"} 3", ns);
    has_line(ns_prom, "eddy_group_subjects{namespace=\"%s\",group=\"workers\"} 1", ns);
    has_line(ns_prom, "eddy_group_dead_letters{namespace=\"%s\",group=\"workers\"} 0", ns);
    has_line(ns_prom,
             "eddy_registry_subscriptions{namespace=\"%s\",group=\"pingers\",kind=\"responder\"} 1",
             ns);
    has_line(ns_prom,
             "eddy_registry_subscriptions{namespace=\"%s\",group=\"workers\",kind=\"handler\"} 1",
             ns);
    free(ns_prom);
    cr_assert_null(eddy_admin_stats_prometheus(a, "st.>.x", &err));
    cr_assert_eq(err.status, EDDY_ERR_INVALID_PATTERN);
    eddy_admin_close(a);
    cr_assert_null(eddy_admin_stats_prometheus(NULL, NULL, &err));
    cr_assert_eq(err.status, EDDY_ERR_INVALID_ARGUMENT);
    cr_assert_null(eddy_bus_stats_prometheus(NULL, &err));
    eddy_bus_free(bus);
}

Test(stats, bus_document_memory) { bus_stats(false); }
Test(stats, bus_document_redis) { bus_stats(true); }

Test(stats, reactive_document_has_the_counters_without_the_broker) {
    char url[128], ns[96];
    eddy_settings s;
    eddy_test_settings(&s, false, "rstats", url, sizeof(url), ns, sizeof(ns));
    eddy_subscription_spec spec;
    eddy_subscription_spec_init(&spec);
    spec.name = "work";
    spec.pattern = "st.*";
    spec.group = "workers";
    spec.handler = count_it;
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    eddy_rbus *bus;
    cr_assert_eq(eddy_rbus_new(loop, &s, &spec, 1, &bus, NULL), EDDY_OK);
    json_t *doc = parse(eddy_rbus_stats_json(bus, NULL));
    cr_assert(json_is_false(json_object_get(doc, "started")));
    json_t *work = by_name(json_object_get(doc, "subscriptions"), "name", "work");
    cr_assert(json_object_get(work, "counters"));
    cr_assert_null(json_object_get(work, "broker"));
    cr_assert(json_is_string(json_object_get(doc, "broker_error")));
    json_decref(doc);
    char *prom = eddy_rbus_stats_prometheus(bus, NULL);
    cr_assert(prom);
    const char *inst = eddy_rbus_instance(bus);
    has_line(prom, "eddy_bus_started{namespace=\"%s\",consumer=\"%s\"} 0", ns, inst);
    has_line(prom, "eddy_bus_broker_up{namespace=\"%s\",consumer=\"%s\"} 0", ns, inst);
    has_line(prom,
             "eddy_subscription_delivered_total{namespace=\"%s\",consumer=\"%s\",subscription="
             "\"work\",group=\"workers\"} 0",
             ns, inst);
    cr_assert_null(strstr(prom, "\neddy_subscription_pending{"), "%s", prom);
    free(prom);
    cr_assert_null(eddy_rbus_stats_prometheus(NULL, NULL));
    eddy_rbus_free(bus);
    ev_loop_destroy(loop);
}

Test(stats, admin_on_a_dead_server_is_an_io_error) {
    eddy_settings s;
    eddy_settings_init(&s);
    char url[64];
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", 1);
    s.url = url;
    s.connect_timeout_ms = 1000;
    eddy_admin *a = NULL;
    eddy_error err = {0};
    cr_assert_eq(eddy_admin_open(&s, &a, &err), EDDY_ERR_IO);
    cr_assert_null(a);
}

/* ---- a subject's history ---------------------------------------------------------------- */

typedef struct hseen {
    char ids[600][64];
    char types[600][16];
    int n, undecoded, stop_at;
} hseen;

static eddy_status on_entry(const char *subject, const char *entry_id, const eddy_event *ev,
                            const char *why, void *user) {
    hseen *s = user;
    cr_assert_str_eq(subject, "hist.a");
    cr_assert_lt(s->n, 600);
    snprintf(s->ids[s->n], sizeof(s->ids[0]), "%s", entry_id);
    if (ev)
        snprintf(s->types[s->n], sizeof(s->types[0]), "%s", eddy_event_type(ev));
    else
        s->undecoded += why && *why;
    s->n++;
    return s->stop_at && s->n == s->stop_at ? EDDY_ERR_CANCELLED : EDDY_OK;
}

static void history(bool redis) {
    char url[128], ns[96];
    eddy_settings s;
    eddy_test_settings(&s, redis, "hist", url, sizeof(url), ns, sizeof(ns));
    eddy_bus *bus;
    eddy_error err = {0};
    cr_assert_eq(eddy_bus_new(&s, NULL, 0, &bus, &err), EDDY_OK, "%s", err.detail);
    char ids[300][64];
    for (int i = 0; i < 300; i++) { /* more than one round of 256 */
        eddy_event *ev = eddy_event_new();
        char id[16], type[16];
        snprintf(id, sizeof(id), "e%d", i);
        snprintf(type, sizeof(type), "t%d", i);
        eddy_event_set_id(ev, id);
        eddy_event_set_source(ev, "/h");
        eddy_event_set_type(ev, type);
        cr_assert_eq(eddy_bus_publish(bus, "hist.a", ev, ids[i], sizeof(ids[i]), &err), EDDY_OK,
                     "%s", err.detail);
        eddy_event_free(ev);
    }
    eddy_admin *a;
    cr_assert_eq(eddy_admin_open(&s, &a, &err), EDDY_OK, "%s", err.detail);
    static hseen all, from, last, last_from, none, stopped;
    memset(&all, 0, sizeof(all));
    cr_assert_eq(eddy_admin_history(a, "hist.a", NULL, 0, on_entry, &all, &err), EDDY_OK, "%s",
                 err.detail);
    cr_assert_eq(all.n, 300);
    for (int i = 0; i < 300; i++) {
        cr_assert_str_eq(all.ids[i], ids[i]);
        char type[16];
        snprintf(type, sizeof(type), "t%d", i);
        cr_assert_str_eq(all.types[i], type);
    }
    memset(&from, 0, sizeof(from));
    cr_assert_eq(eddy_admin_history(a, "hist.a", ids[290], 0, on_entry, &from, &err), EDDY_OK);
    cr_assert_eq(from.n, 10, "from is inclusive");
    cr_assert_str_eq(from.ids[0], ids[290]);
    memset(&last, 0, sizeof(last));
    cr_assert_eq(eddy_admin_history(a, "hist.a", NULL, 3, on_entry, &last, &err), EDDY_OK);
    cr_assert_eq(last.n, 3);
    cr_assert_str_eq(last.ids[0], ids[297], "oldest first");
    cr_assert_str_eq(last.ids[2], ids[299]);
    memset(&last_from, 0, sizeof(last_from));
    cr_assert_eq(eddy_admin_history(a, "hist.a", ids[298], 5, on_entry, &last_from, &err), EDDY_OK);
    cr_assert_eq(last_from.n, 2, "the last 5 at or after from: only 2 are");
    memset(&none, 0, sizeof(none));
    cr_assert_eq(eddy_admin_history(a, "never.published", NULL, 0, on_entry, &none, &err), EDDY_OK);
    cr_assert_eq(none.n, 0);
    memset(&stopped, 0, sizeof(stopped));
    stopped.stop_at = 5;
    cr_assert_eq(eddy_admin_history(a, "hist.a", NULL, 0, on_entry, &stopped, &err),
                 EDDY_ERR_CANCELLED);
    cr_assert_eq(stopped.n, 5);
    cr_assert_eq(eddy_admin_history(a, "a..b", NULL, 0, on_entry, &none, &err),
                 EDDY_ERR_INVALID_SUBJECT);
    cr_assert_eq(eddy_admin_history(a, "hist.a", "12-x", 0, on_entry, &none, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(err.detail, "12-x"), "%s", err.detail);
    eddy_admin_close(a);
    eddy_bus_free(bus);
}

Test(stats, history_memory) { history(false); }
Test(stats, history_redis) { history(true); }

static eddy_status count_subject(const eddy_subject_info *si, void *user) {
    (void)si;
    (*(int *)user)++;
    return EDDY_OK;
}

/* eddy_admin_subject_remove: the stream with its group, the dedup records and the subject's
 * place in the set go; other subjects stay; a second removal finds nothing. */
static void subject_remove(bool redis) {
    char url[128], ns[96];
    eddy_settings s;
    eddy_test_settings(&s, redis, "rm", url, sizeof(url), ns, sizeof(ns));
    s.publish_dedup_ms = 60000;
    eddy_subscription_spec spec;
    eddy_subscription_spec_init(&spec);
    spec.name = "g";
    spec.pattern = "rm.a";
    spec.group = "rm-group";
    spec.handler = count_it;
    eddy_bus *bus;
    eddy_error err = {0};
    cr_assert_eq(eddy_bus_new(&s, &spec, 1, &bus, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(eddy_bus_start(bus, &err), EDDY_OK, "%s", err.detail);
    for (int i = 0; i < 3; i++) {
        eddy_event *ev;
        cr_assert_eq(eddy_bus_new_event(bus, "t", &ev, &err), EDDY_OK, "%s", err.detail);
        cr_assert_eq(eddy_bus_publish(bus, i < 2 ? "rm.a" : "rm.b", ev, NULL, 0, &err), EDDY_OK);
        eddy_event_free(ev);
    }
    eddy_bus_stop(bus); /* stopped, not freed: memory:// lives as long as a handle on it */
    eddy_admin *a;
    cr_assert_eq(eddy_admin_open(&s, &a, &err), EDDY_OK, "%s", err.detail);
    int before = 0, after = 0, a_left = 0;
    cr_assert_eq(eddy_admin_subjects(a, NULL, count_subject, &before, &err), EDDY_OK);
    cr_assert_eq(before, 2);
    bool removed = false;
    cr_assert_eq(eddy_admin_subject_remove(a, "rm.a", &removed, &err), EDDY_OK, "%s", err.detail);
    cr_assert(removed);
    cr_assert_eq(eddy_admin_subjects(a, NULL, count_subject, &after, &err), EDDY_OK);
    cr_assert_eq(after, 1, "rm.b stays");
    cr_assert_eq(eddy_admin_subjects(a, "rm.a", count_subject, &a_left, &err), EDDY_OK);
    cr_assert_eq(a_left, 0);
    cr_assert_eq(raw_int(url, "EXISTS {%s}:s:rm.a {%s}:pubids:rm.a {%s}:pubexp:rm.a", ns, ns, ns),
                 0, "stream and dedup records gone");
    cr_assert_eq(raw_int(url, "EXISTS {%s}:s:rm.b", ns), 1);
    cr_assert_eq(eddy_admin_subject_remove(a, "rm.a", &removed, &err), EDDY_OK);
    cr_assert(!removed, "nothing left to remove");
    cr_assert_eq(eddy_admin_subject_remove(a, "a..b", NULL, &err), EDDY_ERR_INVALID_SUBJECT);
    eddy_admin_close(a);
    eddy_bus_free(bus);
}

Test(stats, subject_remove_memory) { subject_remove(false); }
Test(stats, subject_remove_redis) { subject_remove(true); }
