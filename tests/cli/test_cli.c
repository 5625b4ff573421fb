/* SPDX-License-Identifier: BSD-3-Clause */
/* The eddy command-line tool, driven as a subprocess against the fixture's redis-server: each
 * test runs the built tool (EDDY_TEST_BIN_DIR/../cli/eddy) with its own namespace, reads its
 * stdout, stderr and exit code, and parses --json output back with jansson. Background commands
 * (tail, respond) are waited for through the registry, never through a sleep. */
#define _XOPEN_SOURCE 700 /* posix_openpt, ptsname */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "eddy/blocking.h"
#include "eddy/store.h"
#include "eddy_test.h"
#include "redis_server.h"
#include "tls_server.h"

#define MAX_ARGS 32

typedef struct proc {
    pid_t pid;
    char out_path[64], err_path[64];
    int code;
    bool reaped; /* exited() saw it end: status holds how */
    int status;
    char *out, *err;
} proc;

static const char *cli_path(void) {
    static char path[1024];
    const char *bin = getenv("EDDY_TEST_BIN_DIR");
    cr_assert(bin, "EDDY_TEST_BIN_DIR is not set: run the tests through ctest");
    snprintf(path, sizeof(path), "%s/../cli/eddy", bin);
    cr_assert(access(path, X_OK) == 0, "no eddy tool at %s", path);
    return path;
}

/* Starts `eddy --url URL --ns NS args...` (args NULL-terminated; url NULL: the fixture's), its
 * stdout to stdout_to when not NULL (then p->out stays empty). */
static void spawn_full(proc *p, const char *url, const char *stdout_to, const char *ns,
                       const char *const *args, const char *stdin_from) {
    memset(p, 0, sizeof(*p));
    snprintf(p->out_path, sizeof(p->out_path), "/tmp/eddy-cli-out-XXXXXX");
    snprintf(p->err_path, sizeof(p->err_path), "/tmp/eddy-cli-err-XXXXXX");
    int out = mkstemp(p->out_path), err = mkstemp(p->err_path);
    cr_assert(out >= 0 && err >= 0);
    const char *argv[MAX_ARGS + 6] = {cli_path(), "--url", url ? url : eddy_test_redis_url(),
                                      "--ns", ns};
    int n = 5;
    for (int i = 0; args[i]; i++) {
        cr_assert(i < MAX_ARGS);
        argv[n++] = args[i];
    }
    argv[n] = NULL;
    fflush(NULL);
    p->pid = fork();
    cr_assert(p->pid >= 0);
    if (p->pid == 0) {
        if (stdout_to)
            out = open(stdout_to, O_WRONLY);
        dup2(out, STDOUT_FILENO);
        dup2(err, STDERR_FILENO);
        int in = open(stdin_from ? stdin_from : "/dev/null", O_RDONLY);
        dup2(in, STDIN_FILENO);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(out);
    close(err);
}

static void spawn_url(proc *p, const char *url, const char *ns, const char *const *args) {
    spawn_full(p, url, NULL, ns, args, NULL);
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    cr_assert(f);
    size_t cap = 4096, n = 0;
    char *b = malloc(cap);
    for (size_t got; (got = fread(b + n, 1, cap - n - 1, f)) > 0;) {
        n += got;
        if (n + 1 == cap)
            b = realloc(b, cap *= 2);
    }
    b[n] = '\0';
    fclose(f);
    unlink(path);
    return b;
}

/* True once the process ended (reaped: finish then only reads its output). */
static bool exited(proc *p) {
    if (!p->reaped && waitpid(p->pid, &p->status, WNOHANG) == p->pid)
        p->reaped = true;
    return p->reaped;
}

static void finish(proc *p) {
    int status = p->status;
    cr_assert(p->reaped || waitpid(p->pid, &status, 0) == p->pid);
    p->code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    p->out = slurp(p->out_path);
    p->err = slurp(p->err_path);
}

static void release(proc *p) {
    free(p->out);
    free(p->err);
}

/* Runs the tool to its end. */
static proc run_url(const char *url, const char *ns, const char *const *args) {
    proc p;
    spawn_url(&p, url, ns, args);
    finish(&p);
    return p;
}

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})
#define RUN(ns, ...) run_url(NULL, ns, ARGS(__VA_ARGS__))

/* Runs and expects exit 0, returning stdout parsed as JSON. */
static json_t *run_json(const char *ns, const char *const *args) {
    proc p = run_url(NULL, ns, args);
    cr_assert_eq(p.code, 0, "%s exited %d: %s", args[0], p.code, p.err);
    json_error_t e;
    json_t *v = json_loads(p.out, 0, &e);
    cr_assert(v, "%s: not JSON (%s): %s", args[0], e.text, p.out);
    release(&p);
    return v;
}

/* Pace for polls that start a process each time (not a threshold: a poll only waits longer). */
static void pause_a_little(void) {
    struct timespec pause = {0, 50000000};
    nanosleep(&pause, NULL);
}

static const char *ns_new(char *buf, size_t size) { return eddy_test_namespace(buf, size, "cli"); }

/* True once the registry lists a subscription named `name`. */
typedef struct reg_wait {
    const char *ns, *name;
} reg_wait;

static bool registered(void *user) {
    reg_wait *w = user;
    json_t *list = run_json(w->ns, ARGS("registry", "--json"));
    bool found = false;
    size_t i;
    json_t *r;
    json_array_foreach(list, i, r) found |=
        strcmp(json_string_value(json_object_get(r, "name")), w->name) == 0;
    json_decref(list);
    if (!found)
        pause_a_little();
    return found;
}

static void wait_registered(const char *ns, const char *name) {
    reg_wait w = {ns, name};
    cr_assert(eddy_test_wait_until(registered, &w, 30000), "%s never registered", name);
}

/* Each line of out parsed as JSON (n of them expected). */
static json_t *line(const char *out, int index) {
    const char *s = out;
    for (int i = 0; i < index; i++) {
        s = strchr(s, '\n');
        cr_assert(s, "fewer than %d lines: %s", index + 1, out);
        s++;
    }
    json_error_t e;
    json_t *v = json_loadb(s, strcspn(s, "\n"), 0, &e);
    cr_assert(v, "line %d is not JSON (%s): %s", index, e.text, out);
    return v;
}

/* ---- publish and tail ------------------------------------------------------------------------ */

Test(cli, pub_then_tail_prints_json_lines_with_data_decoded) {
    char ns[96];
    ns_new(ns, sizeof(ns));
    proc tail;
    spawn_url(&tail, NULL, ns, ARGS("tail", "orders.>", "--count", "2", "--timeout", "60000"));
    wait_registered(ns, "eddy-tail");
    proc p = RUN(ns, "pub", "orders.created", "--type", "order.created", "--data",
                 "{\"id\":42,\"items\":[\"a\",1.5,true,null]}");
    cr_assert_eq(p.code, 0, "pub: %s", p.err);
    cr_assert(strchr(p.out, '-'), "pub prints the entry id: %s", p.out);
    release(&p);
    p = RUN(ns, "pub", "orders.eu.shipped", "--data-file", "/dev/null", "--content-type",
            "text/plain", "--json");
    cr_assert_eq(p.code, 0, "pub: %s", p.err);
    json_t *pub = line(p.out, 0);
    cr_assert_str_eq(json_string_value(json_object_get(pub, "subject")), "orders.eu.shipped");
    json_decref(pub);
    release(&p);
    finish(&tail);
    cr_assert_eq(tail.code, 0, "tail: %s", tail.err);
    /* Two subjects are two streams: the tail reads them together, in no promised order. */
    json_t *first = line(tail.out, 0), *second = line(tail.out, 1);
    if (strcmp(json_string_value(json_object_get(first, "subject")), "orders.created") != 0) {
        json_t *swap = first;
        first = second;
        second = swap;
    }
    cr_assert_str_eq(json_string_value(json_object_get(first, "subject")), "orders.created");
    json_t *ev = json_object_get(first, "event");
    cr_assert_str_eq(json_string_value(json_object_get(ev, "type")), "order.created");
    cr_assert_str_eq(json_string_value(json_object_get(ev, "datacontenttype")),
                     "application/msgpack");
    json_t *want = json_loads("{\"id\":42,\"items\":[\"a\",1.5,true,null]}", 0, NULL);
    cr_assert(json_equal(json_object_get(first, "data_value"), want), "data decoded from msgpack");
    /* the event itself is the CloudEvents JSON format: msgpack is binary, so data_base64 */
    cr_assert_null(json_object_get(ev, "data"));
    cr_assert(json_is_string(json_object_get(ev, "data_base64")));
    cr_assert_str_eq(json_string_value(json_object_get(ev, "specversion")), "1.0");
    cr_assert_str_eq(json_string_value(json_object_get(second, "subject")), "orders.eu.shipped");
    json_decref(want);
    json_decref(first);
    json_decref(second);
    release(&tail);
}

Test(cli, tail_with_a_group_acknowledges_what_it_printed) {
    char ns[96];
    ns_new(ns, sizeof(ns));
    proc tail;
    spawn_url(&tail, NULL, ns, ARGS("tail", "jobs.run", "--group", "workers", "--count", "1"));
    wait_registered(ns, "eddy-tail");
    proc p = RUN(ns, "pub", "jobs.run", "--data", "1");
    cr_assert_eq(p.code, 0, "pub: %s", p.err);
    release(&p);
    finish(&tail);
    cr_assert_eq(tail.code, 0, "tail: %s", tail.err);
    release(&tail);
    json_t *g = run_json(ns, ARGS("groups", "jobs.run", "--json"));
    json_t *group = json_array_get(
        json_object_get(json_array_get(json_object_get(g, "subjects"), 0), "groups"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(group, "group")), "workers");
    cr_assert_eq(json_integer_value(json_object_get(group, "pending")), 0, "acknowledged");
    cr_assert_eq(json_integer_value(json_object_get(group, "lag")), 0);
    json_decref(g);
}

Test(cli, tail_that_cannot_print_hands_the_event_back) {
    char ns[96];
    ns_new(ns, sizeof(ns));
    proc tail;
    spawn_full(&tail, NULL, "/dev/full", ns, ARGS("tail", "jobs.run", "--group", "workers"), NULL);
    wait_registered(ns, "eddy-tail");
    proc p = RUN(ns, "pub", "jobs.run", "--data", "1");
    cr_assert_eq(p.code, 0, "pub: %s", p.err);
    release(&p);
    finish(&tail);
    cr_assert_eq(tail.code, 1, "exit %d: %s", tail.code, tail.err);
    cr_assert(strstr(tail.err, "cannot write to stdout"), "%s", tail.err);
    release(&tail);
    json_t *g = run_json(ns, ARGS("groups", "jobs.run", "--json"));
    json_t *group = json_array_get(
        json_object_get(json_array_get(json_object_get(g, "subjects"), 0), "groups"), 0);
    cr_assert_eq(json_integer_value(json_object_get(group, "pending")), 1,
                 "not acknowledged: the group keeps it");
    json_decref(g);
}

/* ---- request and respond --------------------------------------------------------------------- */

Test(cli, request_respond_round_trip) {
    char ns[96];
    ns_new(ns, sizeof(ns));
    proc resp;
    spawn_url(&resp, NULL, ns, ARGS("respond", "calc.>", "--count", "2"));
    wait_registered(ns, "eddy-respond");
    proc p = RUN(ns, "request", "calc.echo", "--type", "calc.q", "--data", "{\"x\":[1,2]}",
                 "--timeout", "30000");
    cr_assert_eq(p.code, 0, "request: %s", p.err);
    json_t *reply = line(p.out, 0), *ev = json_object_get(reply, "event");
    cr_assert_str_eq(json_string_value(json_object_get(ev, "type")), "calc.q.reply");
    json_t *want = json_loads("{\"x\":[1,2]}", 0, NULL);
    cr_assert(json_equal(json_object_get(reply, "data_value"), want), "the echo: %s", p.out);
    json_decref(want);
    json_decref(reply);
    release(&p);
    p = RUN(ns, "request", "calc.add", "--data", "3", "--timeout", "30000");
    cr_assert_eq(p.code, 0, "request: %s", p.err);
    release(&p);
    finish(&resp);
    cr_assert_eq(resp.code, 0, "respond: %s", resp.err);
    release(&resp);
}

/* True once the registry lists two subscriptions named "eddy-respond". */
static bool two_respond(void *user) {
    json_t *list = run_json(user, ARGS("registry", "--json"));
    int n = 0;
    size_t i;
    json_t *r;
    json_array_foreach(list, i, r) n +=
        strcmp(json_string_value(json_object_get(r, "name")), "eddy-respond") == 0;
    json_decref(list);
    if (n < 2)
        pause_a_little();
    return n >= 2;
}

Test(cli, request_all_gathers_every_responder) {
    char ns[96];
    ns_new(ns, sizeof(ns));
    proc a, b;
    spawn_url(&a, NULL, ns, ARGS("respond", "calc.>", "--all", "--count", "1"));
    spawn_url(&b, NULL, ns, ARGS("respond", "calc.>", "--all", "--count", "1"));
    cr_assert(eddy_test_wait_until(two_respond, ns, 30000), "the responders never registered");
    proc p = RUN(ns, "request", "calc.echo", "--type", "calc.q", "--data", "7", "--all", "--max",
                 "2", "--timeout", "30000");
    cr_assert_eq(p.code, 0, "request --all: %s", p.err);
    for (int i = 0; i < 2; i++) {
        json_t *reply = line(p.out, i), *ev = json_object_get(reply, "event");
        cr_expect_str_eq(json_string_value(json_object_get(ev, "type")), "calc.q.reply");
        json_decref(reply);
    }
    release(&p);
    finish(&a);
    finish(&b);
    cr_expect_eq(a.code, 0, "respond: %s", a.err);
    cr_expect_eq(b.code, 0, "respond: %s", b.err);
    release(&a);
    release(&b);
    /* --max without --all is a usage error; nobody answering gathers is "no responders". */
    p = RUN(ns, "request", "calc.echo", "--max", "2");
    cr_expect_neq(p.code, 0);
    release(&p);
    p = RUN(ns, "request", "nobody.here", "--all", "--timeout", "30000");
    cr_expect_eq(p.code, 5, "exit %d: %s", p.code, p.err);
    release(&p);
}

Test(cli, request_without_responders_exits_5) {
    char ns[96];
    ns_new(ns, sizeof(ns));
    proc p = RUN(ns, "request", "nobody.here", "--timeout", "30000");
    cr_assert_eq(p.code, 5, "exit %d: %s", p.code, p.err);
    cr_assert(strstr(p.err, "nothing is subscribed"), "%s", p.err);
    release(&p);
    p = RUN(ns, "request", "nobody.here", "--timeout", "30000", "--json");
    cr_assert_eq(p.code, 5);
    json_t *out = line(p.out, 0);
    cr_assert_str_eq(json_string_value(json_object_get(out, "status")), "EDDY_ERR_NO_RESPONDERS");
    json_decref(out);
    release(&p);
}

Test(cli, respond_with_a_fixed_reply) {
    char ns[96];
    ns_new(ns, sizeof(ns));
    proc resp;
    spawn_url(&resp, NULL, ns,
              ARGS("respond", "fixed.q", "--reply", "{\"ok\":true}", "--count", "1", "--type",
                   "fixed.answer"));
    wait_registered(ns, "eddy-respond");
    proc p = RUN(ns, "request", "fixed.q", "--data", "\"anything\"", "--timeout", "30000");
    cr_assert_eq(p.code, 0, "request: %s", p.err);
    json_t *reply = line(p.out, 0), *ev = json_object_get(reply, "event");
    cr_assert_str_eq(json_string_value(json_object_get(ev, "type")), "fixed.answer");
    cr_assert(json_is_true(json_object_get(json_object_get(reply, "data_value"), "ok")));
    json_decref(reply);
    release(&p);
    finish(&resp);
    release(&resp);
}

/* ---- groups, registry, stats ----------------------------------------------------------------- */

static eddy_status never_done(eddy_delivery *d, void *user) { return EDDY_ERR_HANDLER_FAILED; }

/* A bus in the test process whose handler always fails: max_deliveries 1 dead-letters each
 * message at its second delivery, which comes back at once (no backoff, a short idle time). */
static eddy_bus *failing_bus(const char *ns, const char *group, const char *pattern) {
    eddy_settings s;
    eddy_settings_init(&s);
    s.url = eddy_test_redis_url();
    s.ns = ns;
    s.max_deliveries = 1;
    s.redelivery_idle_ms = 50;
    s.redelivery_backoff_ms = 0;
    s.block_ms = 50;
    s.log = eddy_test_log;
    eddy_subscription_spec spec;
    eddy_subscription_spec_init(&spec);
    spec.name = "failing";
    spec.pattern = pattern;
    spec.group = group;
    spec.delivery = EDDY_AT_LEAST_ONCE;
    spec.handler = never_done;
    eddy_bus *bus;
    cr_assert_eq(eddy_bus_new(&s, &spec, 1, &bus, NULL), EDDY_OK);
    cr_assert_eq(eddy_bus_start(bus, NULL), EDDY_OK);
    return bus;
}

typedef struct dlq_wait {
    const char *ns, *group;
    size_t want;
} dlq_wait;

static bool has_dead_letters(void *user) {
    dlq_wait *w = user;
    json_t *list = run_json(w->ns, ARGS("dlq", "list", w->group, "--json"));
    bool enough = json_array_size(list) >= w->want;
    json_decref(list);
    if (!enough)
        pause_a_little();
    return enough;
}

Test(cli, groups_sum_a_pattern_and_show_pending_and_lag) {
    char ns[96];
    ns_new(ns, sizeof(ns));
    eddy_bus *bus = failing_bus(ns, "billing", "bill.>");
    for (int i = 0; i < 2; i++) {
        proc p = RUN(ns, "pub", i ? "bill.eu" : "bill.us", "--data", "{}");
        cr_assert_eq(p.code, 0, "pub: %s", p.err);
        release(&p);
    }
    dlq_wait w = {ns, "billing", 2};
    cr_assert(eddy_test_wait_until(has_dead_letters, &w, 60000));
    eddy_bus_free(bus);
    json_t *g = run_json(ns, ARGS("groups", "bill.*", "--json"));
    json_t *subjects = json_object_get(g, "subjects"), *totals = json_object_get(g, "groups");
    cr_assert_eq(json_array_size(subjects), 2);
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(subjects, 0), "subject")),
                     "bill.eu", "sorted by name");
    cr_assert_eq(json_array_size(totals), 1);
    json_t *t = json_array_get(totals, 0);
    cr_assert_str_eq(json_string_value(json_object_get(t, "group")), "billing");
    cr_assert_eq(json_integer_value(json_object_get(t, "subjects")), 2);
    cr_assert_eq(json_integer_value(json_object_get(t, "pending")), 0, "dead-lettered is acked");
    cr_assert_eq(json_integer_value(json_object_get(t, "lag")), 0);
    cr_assert_eq(json_integer_value(json_object_get(t, "dead_letters")), 2);
    json_decref(g);
    /* the table form names the group and the totals */
    proc p = RUN(ns, "groups", "bill.>");
    cr_assert_eq(p.code, 0);
    cr_assert(strstr(p.out, "billing") && strstr(p.out, "GROUP (over the subjects)"), "%s", p.out);
    release(&p);
    /* a bad pattern is a usage error */
    p = RUN(ns, "groups", "bill.>.x");
    cr_assert_eq(p.code, 2, "exit %d: %s", p.code, p.err);
    cr_assert(strstr(p.err, "pattern"), "%s", p.err);
    release(&p);
}

Test(cli, groups_show_pending_entries_and_their_age) {
    char ns[96];
    ns_new(ns, sizeof(ns));
    /* An entry read by a group's consumer and never acknowledged: pending, with an age. */
    eddy_settings s;
    eddy_settings_init(&s);
    s.url = eddy_test_redis_url();
    s.ns = ns;
    proc p = RUN(ns, "pub", "held.one", "--data", "1");
    cr_assert_eq(p.code, 0);
    release(&p);
    char key[160];
    snprintf(key, sizeof(key), "{%s}:s:held.one", ns);
    eddy_test_redis_int(s.url, "XGROUP CREATE %s keepers 0", key);
    eddy_test_redis_int(s.url, "XREADGROUP GROUP keepers c1 COUNT 1 STREAMS %s >", key);
    json_t *g = run_json(ns, ARGS("groups", "--json"));
    json_t *group = json_array_get(
        json_object_get(json_array_get(json_object_get(g, "subjects"), 0), "groups"), 0);
    cr_assert_eq(json_integer_value(json_object_get(group, "pending")), 1);
    cr_assert_eq(json_integer_value(json_object_get(group, "consumers")), 1);
    cr_assert(json_is_integer(json_object_get(group, "oldest_pending_ms")));
    cr_assert_geq(json_integer_value(json_object_get(group, "oldest_pending_ms")), 0);
    json_decref(g);
}

Test(cli, registry_and_stats_show_a_live_responder) {
    char ns[96];
    ns_new(ns, sizeof(ns));
    proc resp;
    spawn_url(&resp, NULL, ns, ARGS("respond", "live.q", "--group", "answerers", "--count", "1"));
    wait_registered(ns, "eddy-respond");
    json_t *list = run_json(ns, ARGS("registry", "--json"));
    cr_assert_eq(json_array_size(list), 1);
    json_t *r = json_array_get(list, 0);
    cr_assert_str_eq(json_string_value(json_object_get(r, "kind")), "responder");
    cr_assert_str_eq(json_string_value(json_object_get(r, "group")), "answerers");
    cr_assert_str_eq(json_string_value(json_object_get(r, "pattern")), "live.q");
    cr_assert_gt(json_integer_value(json_object_get(r, "lease_until_ms")), eddy_now_ms() - 1000);
    json_decref(list);
    json_t *stats = run_json(ns, ARGS("stats", "--json"));
    cr_assert_str_eq(json_string_value(json_object_get(stats, "ns")), ns);
    cr_assert_eq(json_array_size(json_object_get(stats, "registry")), 1);
    cr_assert(json_is_array(json_object_get(stats, "subjects")));
    cr_assert(json_is_array(json_object_get(stats, "groups")));
    json_decref(stats);
    proc p = RUN(ns, "request", "live.q", "--timeout", "30000");
    cr_assert_eq(p.code, 0, "request: %s", p.err);
    release(&p);
    finish(&resp);
    release(&resp);
    p = RUN(ns, "registry");
    cr_assert_eq(p.code, 0);
    cr_assert(strstr(p.out, "nothing subscribed"), "a stopped bus leaves the registry: %s", p.out);
    release(&p);
}

/* ---- dead letters ---------------------------------------------------------------------------- */

Test(cli, dlq_list_show_replay_purge) {
    char ns[96];
    ns_new(ns, sizeof(ns));
    eddy_bus *bus = failing_bus(ns, "payments", "pay.due");
    for (int i = 0; i < 3; i++) {
        char data[32];
        snprintf(data, sizeof(data), "{\"n\":%d}", i);
        proc p = RUN(ns, "pub", "pay.due", "--data", data);
        cr_assert_eq(p.code, 0);
        release(&p);
    }
    dlq_wait w = {ns, "payments", 3};
    cr_assert(eddy_test_wait_until(has_dead_letters, &w, 60000));
    eddy_bus_free(bus); /* nothing fails them again while they are replayed */

    json_t *list = run_json(ns, ARGS("dlq", "list", "payments", "--json"));
    cr_assert_eq(json_array_size(list), 3);
    json_t *d0 = json_array_get(list, 0);
    cr_assert_str_eq(json_string_value(json_object_get(d0, "subject")), "pay.due");
    cr_assert_str_eq(json_string_value(json_object_get(d0, "reason")), "max_deliveries");
    char id0[64], id1[64];
    snprintf(id0, sizeof(id0), "%s", json_string_value(json_object_get(d0, "id")));
    snprintf(id1, sizeof(id1), "%s",
             json_string_value(json_object_get(json_array_get(list, 1), "id")));
    json_decref(list);

    json_t *groups = run_json(ns, ARGS("dlq", "list", "--json"));
    cr_assert_eq(json_array_size(groups), 1);
    cr_assert_eq(json_integer_value(json_object_get(json_array_get(groups, 0), "dead_letters")), 3);
    json_decref(groups);

    json_t *shown = run_json(ns, ARGS("dlq", "show", "payments", id0, "--json"));
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(shown, "data_value"), "n")), 0);
    json_decref(shown);
    proc p = RUN(ns, "dlq", "show", "payments", "1-1");
    cr_assert_eq(p.code, 4, "an id that is not there: exit %d: %s", p.code, p.err);
    release(&p);

    p = RUN(ns, "dlq", "replay", "payments", id0, "--json");
    cr_assert_eq(p.code, 0, "replay: %s", p.err);
    release(&p);
    p = RUN(ns, "dlq", "purge", "payments", id1);
    cr_assert_eq(p.code, 0, "purge: %s", p.err);
    release(&p);
    json_t *left = run_json(ns, ARGS("dlq", "list", "payments", "--json"));
    cr_assert_eq(json_array_size(left), 1);
    json_decref(left);
    p = RUN(ns, "dlq", "replay", "payments", "--all", "--json");
    cr_assert_eq(p.code, 0, "replay --all: %s", p.err);
    json_t *done = line(p.out, 0);
    cr_assert_eq(json_integer_value(json_object_get(done, "replayed")), 1);
    json_decref(done);
    release(&p);
    /* the stream got the two replayed entries back: 3 published + 2 replays */
    json_t *g = run_json(ns, ARGS("groups", "pay.due", "--json"));
    cr_assert_eq(json_integer_value(
                     json_object_get(json_array_get(json_object_get(g, "subjects"), 0), "length")),
                 5);
    json_decref(g);
    p = RUN(ns, "dlq", "purge", "payments", "--all");
    cr_assert_eq(p.code, 0, "purge --all: %s", p.err);
    release(&p);
}

/* ---- store and feed -------------------------------------------------------------------------- */

Test(cli, store_append_read_and_tail) {
    char ns[96];
    ns_new(ns, sizeof(ns));
    proc p = RUN(ns, "store", "append", "order-7", "--type", "order.placed", "--data",
                 "{\"total\":12}", "--no-stream");
    cr_assert_eq(p.code, 0, "append: %s", p.err);
    cr_assert_str_eq(p.out, "1\n");
    release(&p);
    p = RUN(ns, "store", "append", "order-7", "--data", "2", "--expect-version", "1", "--json");
    cr_assert_eq(p.code, 0, "append: %s", p.err);
    release(&p);
    p = RUN(ns, "store", "append", "order-7", "--data", "3", "--expect-version", "1");
    cr_assert_eq(p.code, 1, "a version conflict fails: exit %d", p.code);
    cr_assert(strstr(p.err, "expected version"), "%s", p.err);
    release(&p);
    p = RUN(ns, "store", "append", "other-1", "--data", "4");
    cr_assert_eq(p.code, 0);
    release(&p);

    p = RUN(ns, "store", "read", "order-7");
    cr_assert_eq(p.code, 0, "read: %s", p.err);
    json_t *e1 = line(p.out, 0), *e2 = line(p.out, 1);
    cr_assert_eq(json_integer_value(json_object_get(e1, "version")), 1);
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(e1, "data_value"), "total")),
                 12);
    cr_assert_eq(json_integer_value(json_object_get(e2, "version")), 2);
    json_decref(e1);
    json_decref(e2);
    release(&p);
    p = RUN(ns, "store", "read", "--after", "1");
    cr_assert_eq(p.code, 0, "read all: %s", p.err);
    json_t *a = line(p.out, 1);
    cr_assert_eq(json_integer_value(json_object_get(a, "position")), 3);
    cr_assert_str_eq(json_string_value(json_object_get(a, "stream_id")), "other-1");
    json_decref(a);
    release(&p);

    /* tail from now on: what is stored before it starts is not shown; the poll finds the rest */
    proc tail;
    spawn_url(&tail, NULL, ns, ARGS("store", "tail", "--count", "1", "--timeout", "60000"));
    /* Appends until tail has seen one (it may start after some of them): each is new to it. */
    for (int i = 0; i < 600; i++) {
        p = RUN(ns, "store", "append", "order-8", "--data", "5");
        cr_assert_eq(p.code, 0);
        release(&p);
        if (exited(&tail))
            break;
        pause_a_little();
    }
    finish(&tail);
    cr_assert_eq(tail.code, 0, "store tail: %s", tail.err);
    json_t *t = line(tail.out, 0);
    cr_assert_str_eq(json_string_value(json_object_get(t, "stream_id")), "order-8");
    json_decref(t);
    release(&tail);
}

Test(cli, feed_status_and_reset) {
    char ns[96];
    ns_new(ns, sizeof(ns));
    eddy_settings s;
    eddy_settings_init(&s);
    s.url = eddy_test_redis_url();
    s.ns = ns;
    eddy_store *store;
    cr_assert_eq(eddy_store_open(&s, &store, NULL), EDDY_OK);
    eddy_checkpoints cp = eddy_store_checkpoints(store);
    cr_assert_eq(cp.ops->save(cp.self, "orders-view", "done", NULL), EDDY_OK);

    json_t *st = run_json(ns, ARGS("feed", "status", "orders-view", "--json"));
    cr_assert(json_is_true(json_object_get(st, "marker")));
    cr_assert_str_eq(json_string_value(json_object_get(st, "value")), "done");
    json_decref(st);
    json_t *r = run_json(ns, ARGS("feed", "reset", "orders-view", "--json"));
    cr_assert(json_is_true(json_object_get(r, "had_marker")));
    json_decref(r);
    bool exists = true;
    cr_assert_eq(cp.ops->exists(cp.self, "orders-view", &exists, NULL), EDDY_OK);
    cr_assert(!exists, "reset deleted the marker");
    proc p = RUN(ns, "feed", "status", "orders-view");
    cr_assert_eq(p.code, 0);
    cr_assert(strstr(p.out, "no marker"), "%s", p.out);
    release(&p);
    eddy_store_close(store);
}

/* ---- bad input ------------------------------------------------------------------------------- */

Test(cli, bad_json_is_a_usage_error_naming_where) {
    char ns[96];
    ns_new(ns, sizeof(ns));
    proc p = RUN(ns, "pub", "a.b", "--data", "{\"x\": tru}");
    cr_assert_eq(p.code, 2, "exit %d", p.code);
    cr_assert(strstr(p.err, "--data is not JSON") && strstr(p.err, "column"), "%s", p.err);
    cr_assert_str_eq(p.out, "");
    release(&p);
}

Test(cli, bad_subject_is_a_usage_error) {
    char ns[96];
    ns_new(ns, sizeof(ns));
    proc p = RUN(ns, "pub", "a..b", "--data", "1");
    cr_assert_eq(p.code, 2, "exit %d", p.code);
    cr_assert(strstr(p.err, "invalid subject"), "%s", p.err);
    release(&p);
}

Test(cli, unknown_command_and_option_are_usage_errors) {
    char ns[96];
    ns_new(ns, sizeof(ns));
    proc p = RUN(ns, "publish", "a.b");
    cr_assert_eq(p.code, 2);
    cr_assert(strstr(p.err, "unknown command 'publish'"), "%s", p.err);
    release(&p);
    p = RUN(ns, "pub", "a.b", "--colour", "red");
    cr_assert_eq(p.code, 2);
    cr_assert(strstr(p.err, "unknown option '--colour'"), "%s", p.err);
    release(&p);
    p = RUN(ns, "tail", "x.y", "--count", "many");
    cr_assert_eq(p.code, 2);
    release(&p);
}

Test(cli, help_on_every_command_documents_exit_codes) {
    char ns[96];
    ns_new(ns, sizeof(ns));
    proc p = RUN(ns, "--help");
    cr_assert_eq(p.code, 0);
    cr_assert(strstr(p.out, "Exit codes") && strstr(p.out, "3  the backend cannot be reached"));
    release(&p);
    const char *cmds[] = {"pub",   "tail", "request",  "respond", "groups", "dlq",
                          "store", "feed", "registry", "stats",   "version"};
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
        /* --help needs no server: a dead URL proves nothing is contacted */
        proc h = run_url("redis://127.0.0.1:1", ns, ARGS(cmds[i], "--help"));
        cr_assert_eq(h.code, 0, "%s --help: %d %s", cmds[i], h.code, h.err);
        cr_assert(strstr(h.out, "usage: eddy"), "%s --help: %s", cmds[i], h.out);
        release(&h);
    }
}

Test(cli, redis_down_exits_3_with_a_clear_message) {
    char ns[96], url[64];
    ns_new(ns, sizeof(ns));
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", eddy_test_free_port());
    const char *const *cases[] = {
        ARGS("pub", "a.b", "--data", "1"),
        ARGS("groups"),
        ARGS("registry"),
        ARGS("dlq", "list", "g"),
        ARGS("store", "read"),
        ARGS("feed", "status", "f"),
        ARGS("stats"),
        ARGS("tail", "a.b"),
        ARGS("request", "a.b"),
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        proc p = run_url(url, ns, cases[i]);
        cr_assert_eq(p.code, 3, "%s: exit %d: %s", cases[i][0], p.code, p.err);
        cr_assert(strstr(p.err, "connection") && strstr(p.err, url), "%s: %s", cases[i][0], p.err);
        cr_assert_str_eq(p.out, "", "%s printed: %s", cases[i][0], p.out);
        release(&p);
    }
}

/* ---- secrets --------------------------------------------------------------------------------- */

/* The password every case below gives: it must appear in no output. */
#define KNOWN_PW "Kn0wn-s3cret-PW"

/* Every command, each bounded (a wait ends at once or at its --timeout). */
static const char *const *const every_command[] = {
    ARGS("pub", "a.b", "--data", "1"),
    ARGS("tail", "a.b", "--timeout", "3000"),
    ARGS("request", "a.b", "--timeout", "3000"),
    ARGS("respond", "a.b", "--timeout", "3000"),
    ARGS("groups"),
    ARGS("registry"),
    ARGS("stats"),
    ARGS("dlq", "list"),
    ARGS("dlq", "list", "g"),
    ARGS("dlq", "show", "g", "1-0"),
    ARGS("dlq", "replay", "g", "--all"),
    ARGS("dlq", "purge", "g", "1-0"),
    ARGS("store", "read"),
    ARGS("store", "tail", "--timeout", "3000"),
    ARGS("store", "append", "s-1", "--data", "1"),
    ARGS("feed", "status", "f"),
    ARGS("feed", "reset", "f"),
    ARGS("bench", "pub", "--msgs", "1"),
    ARGS("version"),
};
#define N_COMMANDS (sizeof(every_command) / sizeof(every_command[0]))

/* Runs one command against url with extra global options first; checks the exit code (3 unless
 * it is `version`), that KNOWN_PW is nowhere, and that stderr says `want` and not `never`. */
static void expect_secret_kept(const char *url, const char *const *pre, const char *const *cmd,
                               const char *want, const char *never) {
    char ns[96];
    ns_new(ns, sizeof(ns));
    const char *args[MAX_ARGS];
    int n = 0;
    for (int i = 0; pre && pre[i]; i++)
        args[n++] = pre[i];
    for (int i = 0; cmd[i]; i++)
        args[n++] = cmd[i];
    args[n] = NULL;
    proc p = run_url(url, ns, args);
    bool version = strcmp(cmd[0], "version") == 0;
    cr_expect_eq(p.code, version ? 0 : 3, "%s %s: exit %d: %s", cmd[0], cmd[1] ? cmd[1] : "",
                 p.code, p.err);
    cr_expect(!strstr(p.out, KNOWN_PW), "%s: the password in stdout: %s", cmd[0], p.out);
    cr_expect(!strstr(p.err, KNOWN_PW), "%s: the password in stderr: %s", cmd[0], p.err);
    if (!version) {
        cr_expect(strstr(p.err, want), "%s: stderr should say '%s': %s", cmd[0], want, p.err);
        cr_expect(!never || !strstr(p.err, never), "%s: stderr should not say '%s': %s", cmd[0],
                  never, p.err);
        cr_expect(!strstr(p.err, "reconnecting") && !strstr(p.err, "retrying"),
                  "%s: the library's reconnect lines: %s", cmd[0], p.err);
        cr_expect_eq(strchr(p.err, '\n'), p.err + strlen(p.err) - 1, "%s: one line: %s", cmd[0],
                     p.err);
    }
    release(&p);
}

Test(cli, a_refused_password_is_never_printed_and_says_so, .timeout = 300) {
    eddy_test_redis srv;
    eddy_test_redis_start_with(&srv, 0, (const char *const[]){"--requirepass", "other-pw", NULL});
    char url[128];
    snprintf(url, sizeof(url), "redis://:" KNOWN_PW "@127.0.0.1:%d", srv.port);
    for (size_t i = 0; i < N_COMMANDS; i++)
        expect_secret_kept(url, NULL, every_command[i], "refused the credentials", "up?");
    /* The same from $EDDY_PASSWORD, with a user in the URL. */
    snprintf(url, sizeof(url), "redis://default@127.0.0.1:%d", srv.port);
    setenv("EDDY_PASSWORD", KNOWN_PW, 1);
    for (size_t i = 0; i < N_COMMANDS; i++)
        expect_secret_kept(url, NULL, every_command[i], "refused the credentials", "up?");
    unsetenv("EDDY_PASSWORD");
    eddy_test_redis_kill(&srv);
}

Test(cli, a_down_server_is_said_so_without_the_password, .timeout = 300) {
    char url[128];
    snprintf(url, sizeof(url), "redis://user:" KNOWN_PW "@127.0.0.1:%d", eddy_test_free_port());
    char masked[128];
    snprintf(masked, sizeof(masked), "redis://user:***@127.0.0.1:");
    for (size_t i = 0; i < N_COMMANDS; i++)
        expect_secret_kept(url, NULL, every_command[i], "up?", "credentials");
    proc p = run_url(url, "x", ARGS("groups"));
    cr_expect(strstr(p.err, masked), "the URL shown masked: %s", p.err);
    release(&p);
}

Test(cli, a_tls_mismatch_never_prints_the_password, .timeout = 300) {
    eddy_test_tls_files f;
    eddy_test_tls_certs(&f);
    eddy_test_redis tls, plain;
    eddy_test_tls_redis_start(&tls, &f, f.server_cert, 0);
    eddy_test_redis_start(&plain, 0);
    char url[128];
    /* A CA that did not sign the server's certificate. */
    snprintf(url, sizeof(url), "rediss://:" KNOWN_PW "@localhost:%d", tls.port);
    for (size_t i = 0; i < N_COMMANDS; i++)
        expect_secret_kept(url, ARGS("--tls-cacert", f.other_ca), every_command[i],
                           "certificate was refused", "up?");
    /* The right CA, no client certificate: the server wants one. */
    for (size_t i = 0; i < 3; i++)
        expect_secret_kept(url, ARGS("--tls-cacert", f.ca), every_command[i],
                           "wants a client certificate", "up?");
    /* redis:// to the TLS port: the server hangs up. */
    snprintf(url, sizeof(url), "redis://:" KNOWN_PW "@127.0.0.1:%d", tls.port);
    for (size_t i = 0; i < 3; i++)
        expect_secret_kept(url, NULL, every_command[i], "does it want TLS", "credentials");
    /* rediss:// to a plain port: no TLS handshake comes back (each waits the connect timeout,
     * so a few commands). */
    snprintf(url, sizeof(url), "rediss://:" KNOWN_PW "@127.0.0.1:%d", plain.port);
    for (size_t i = 0; i < 3; i++)
        expect_secret_kept(url, ARGS("--tls-cacert", f.ca), every_command[i],
                           "did not answer the TLS handshake", "credentials");
    eddy_test_redis_kill(&plain);
    eddy_test_redis_kill(&tls);
    eddy_test_tls_certs_remove(&f);
}

Test(cli, the_password_from_the_environment_is_used_escaped) {
    const char *pw = "p@ss:w%rd/x";
    eddy_test_redis srv;
    eddy_test_redis_start_with(&srv, 0, (const char *const[]){"--requirepass", pw, NULL});
    char url[128], ns[96];
    ns_new(ns, sizeof(ns));
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", srv.port);
    setenv("EDDY_PASSWORD", pw, 1);
    proc p = run_url(url, ns, ARGS("pub", "a.b", "--data", "1"));
    cr_expect_eq(p.code, 0, "exit %d: %s", p.code, p.err);
    release(&p);
    /* It takes the place of the URL's. */
    snprintf(url, sizeof(url), "redis://:wrong@127.0.0.1:%d", srv.port);
    p = run_url(url, ns, ARGS("groups"));
    cr_expect_eq(p.code, 0, "exit %d: %s", p.code, p.err);
    release(&p);
    /* memory:// and unix:// take no password: said, not ignored. */
    p = run_url("memory://", ns, ARGS("groups"));
    cr_expect_eq(p.code, 2, "exit %d: %s", p.code, p.err);
    cr_expect(strstr(p.err, "needs a redis://"), "%s", p.err);
    release(&p);
    unsetenv("EDDY_PASSWORD");
    eddy_test_redis_kill(&srv);
}

/* Runs the tool on a new pseudo-terminal (its controlling terminal; stdout and stderr to files
 * still), answers the password prompt with `answer`, and returns what the terminal showed. */
static char *run_on_a_terminal(proc *p, const char *url, const char *ns, const char *const *args,
                               const char *answer) {
    int master = posix_openpt(O_RDWR | O_NOCTTY);
    cr_assert(master >= 0 && grantpt(master) == 0 && unlockpt(master) == 0);
    const char *slave = ptsname(master);
    cr_assert(slave);
    char slave_path[64];
    snprintf(slave_path, sizeof(slave_path), "%s", slave);
    memset(p, 0, sizeof(*p));
    snprintf(p->out_path, sizeof(p->out_path), "/tmp/eddy-cli-out-XXXXXX");
    snprintf(p->err_path, sizeof(p->err_path), "/tmp/eddy-cli-err-XXXXXX");
    int out = mkstemp(p->out_path), err = mkstemp(p->err_path);
    cr_assert(out >= 0 && err >= 0);
    const char *argv[MAX_ARGS + 6] = {cli_path(), "--url", url, "--ns", ns};
    int n = 5;
    for (int i = 0; args[i]; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    fflush(NULL);
    p->pid = fork();
    cr_assert(p->pid >= 0);
    if (p->pid == 0) {
        setsid();
        int tty = open(slave_path, O_RDWR); /* the first terminal a session leader opens */
        dup2(tty, STDIN_FILENO);
        dup2(out, STDOUT_FILENO);
        dup2(err, STDERR_FILENO);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(out);
    close(err);
    /* Read the terminal until the prompt, answer, then read until the tool ends. */
    char *shown = calloc(1, 8192);
    size_t len = 0;
    bool answered = false;
    for (int rounds = 0; rounds < 400 && !exited(p); rounds++) {
        struct pollfd pfd = {master, POLLIN, 0};
        if (poll(&pfd, 1, 50) > 0 && (pfd.revents & POLLIN)) {
            ssize_t k = read(master, shown + len, 8191 - len);
            if (k > 0)
                len += (size_t)k;
        }
        if (!answered && strstr(shown, "Password:")) {
            cr_assert_eq(write(master, answer, strlen(answer)), (ssize_t)strlen(answer));
            answered = true;
        }
    }
    cr_assert(answered, "no prompt on the terminal: %s", shown);
    finish(p);
    close(master);
    return shown;
}

Test(cli, askpass_reads_the_password_from_the_terminal_without_echo) {
    eddy_test_redis srv;
    eddy_test_redis_start_with(&srv, 0, (const char *const[]){"--requirepass", KNOWN_PW, NULL});
    char url[128], ns[96];
    ns_new(ns, sizeof(ns));
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", srv.port);
    proc p;
    char *shown =
        run_on_a_terminal(&p, url, ns, ARGS("--askpass", "groups", "--json"), KNOWN_PW "\n");
    cr_expect_eq(p.code, 0, "exit %d: %s", p.code, p.err);
    cr_expect(!strstr(shown, KNOWN_PW), "echoed on the terminal: %s", shown);
    release(&p);
    free(shown);
    shown = run_on_a_terminal(&p, url, ns, ARGS("--askpass", "groups"), "Not-" KNOWN_PW "\n");
    cr_expect_eq(p.code, 3, "exit %d: %s", p.code, p.err);
    cr_expect(strstr(p.err, "refused the credentials"), "%s", p.err);
    cr_expect(!strstr(shown, KNOWN_PW) && !strstr(p.err, KNOWN_PW) && !strstr(p.out, KNOWN_PW));
    release(&p);
    free(shown);
    /* No terminal: said, not hung. */
    p = run_url(url, ns, ARGS("--askpass", "groups"));
    cr_expect(p.code == 2 || p.code == 3, "exit %d: %s", p.code, p.err);
    release(&p);
    eddy_test_redis_kill(&srv);
}

Test(cli, tls_options_and_their_environment_reach_a_private_ca_server, .timeout = 120) {
    eddy_test_tls_files f;
    eddy_test_tls_certs(&f);
    eddy_test_redis tls;
    eddy_test_tls_redis_start(&tls, &f, f.server_cert, 0);
    char ns[96];
    ns_new(ns, sizeof(ns));
    proc p = run_url(tls.url, ns,
                     ARGS("--tls-cacert", f.ca, "--tls-cert", f.client_cert, "--tls-key",
                          f.client_key, "pub", "a.b", "--data", "1"));
    cr_expect_eq(p.code, 0, "exit %d: %s", p.code, p.err);
    release(&p);
    /* The same from the environment. */
    setenv("EDDY_TLS_CACERT", f.ca, 1);
    setenv("EDDY_TLS_CERT", f.client_cert, 1);
    setenv("EDDY_TLS_KEY", f.client_key, 1);
    p = run_url(tls.url, ns, ARGS("groups", "--json"));
    cr_expect_eq(p.code, 0, "exit %d: %s", p.code, p.err);
    cr_expect(strstr(p.out, "\"a.b\""), "%s", p.out);
    release(&p);
    /* A name the certificate does not carry; then no verification at all, with a wrong CA. */
    p = run_url(tls.url, ns, ARGS("--tls-sni", "elsewhere.example", "groups"));
    cr_expect_eq(p.code, 3, "exit %d: %s", p.code, p.err);
    cr_expect(strstr(p.err, "hostname mismatch") && strstr(p.err, "--tls-sni"), "%s", p.err);
    release(&p);
    setenv("EDDY_TLS_CACERT", f.other_ca, 1);
    p = run_url(tls.url, ns, ARGS("groups"));
    cr_expect_eq(p.code, 3, "exit %d: %s", p.code, p.err);
    release(&p);
    p = run_url(tls.url, ns, ARGS("--tls-insecure", "groups"));
    cr_expect_eq(p.code, 0, "exit %d: %s", p.code, p.err);
    release(&p);
    setenv("EDDY_TLS_INSECURE", "1", 1);
    p = run_url(tls.url, ns, ARGS("groups"));
    cr_expect_eq(p.code, 0, "exit %d: %s", p.code, p.err);
    release(&p);
    unsetenv("EDDY_TLS_INSECURE");
    /* A missing CA file: named, with the system's reason. */
    char missing[256];
    snprintf(missing, sizeof(missing), "%s/none.pem", f.dir);
    p = run_url(tls.url, ns, ARGS("--tls-cacert", missing, "groups"));
    cr_expect_eq(p.code, 3, "exit %d: %s", p.code, p.err);
    cr_expect(strstr(p.err, missing) && strstr(p.err, "No such file"), "%s", p.err);
    release(&p);
    unsetenv("EDDY_TLS_CACERT");
    unsetenv("EDDY_TLS_CERT");
    unsetenv("EDDY_TLS_KEY");
    /* Usage: a certificate without its key, TLS options with a plain URL. */
    p = run_url(tls.url, ns, ARGS("--tls-cert", f.client_cert, "groups"));
    cr_expect_eq(p.code, 2, "exit %d: %s", p.code, p.err);
    release(&p);
    p = run_url("redis://127.0.0.1:1", ns, ARGS("--tls-cacert", f.ca, "groups"));
    cr_expect_eq(p.code, 2, "exit %d: %s", p.code, p.err);
    cr_expect(strstr(p.err, "need a TLS URL"), "%s", p.err);
    release(&p);
    eddy_test_redis_kill(&tls);
    eddy_test_tls_certs_remove(&f);
}

Test(cli, version_and_help_name_every_url) {
    char ns[96];
    ns_new(ns, sizeof(ns));
    proc p = run_url("redis://127.0.0.1:1", ns, ARGS("--version"));
    cr_expect_eq(p.code, 0, "exit %d: %s", p.code, p.err);
    char want[64];
    snprintf(want, sizeof(want), "eddy %s\n", eddy_version());
    cr_expect_str_eq(p.out, want);
    cr_expect_str_eq(want, "eddy 0.3.0\n");
    release(&p);
    p = run_url("redis://127.0.0.1:1", ns, ARGS("groups", "--version"));
    cr_expect_eq(p.code, 0, "exit %d: %s", p.code, p.err);
    cr_expect_str_eq(p.out, want, "after a command too, contacting nothing");
    release(&p);
    p = RUN(ns, "--help");
    const char *urls[] = {"redis://",          "rediss://",
                          "redis-sentinel://", "rediss-sentinel://",
                          "redis-cluster://",  "rediss-cluster://",
                          "unix://",           "memory://",
                          "--tls-cacert",      "--tls-cacertdir",
                          "--tls-cert",        "--tls-key",
                          "--tls-sni",         "--tls-insecure",
                          "EDDY_PASSWORD",     "--askpass",
                          "--version",         "--raw"};
    for (size_t i = 0; i < sizeof(urls) / sizeof(urls[0]); i++)
        cr_expect(strstr(p.out, urls[i]), "--help does not name %s", urls[i]);
    release(&p);
}

Test(cli, a_bad_database_number_exits_3_and_says_so) {
    char ns[96], url[128];
    ns_new(ns, sizeof(ns));
    snprintf(url, sizeof(url), "%s/9999", eddy_test_redis_url());
    proc p = run_url(url, ns, ARGS("groups"));
    cr_expect_eq(p.code, 3, "exit %d: %s", p.code, p.err);
    cr_expect(strstr(p.err, "no such database"), "%s", p.err);
    release(&p);
}

/* ---- history, stdin, extensions, raw --------------------------------------------------------- */

/* Publishes with the tool; returns the entry id (static storage, overwritten by the next). */
static const char *pub(const char *ns, const char *subject, const char *data) {
    static char entry[64];
    proc p = RUN(ns, "pub", subject, "--data", data);
    cr_assert_eq(p.code, 0, "pub: %s", p.err);
    snprintf(entry, sizeof(entry), "%.*s", (int)strcspn(p.out, "\n"), p.out);
    release(&p);
    return entry;
}

static int count_lines(const char *s) {
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

Test(cli, tail_from_start_prints_the_history_in_order_then_live_without_repeats) {
    char ns[96], ids[5][64];
    ns_new(ns, sizeof(ns));
    const char *subjects[5] = {"h.a", "h.b", "h.a", "h.b", "h.a"};
    for (int i = 0; i < 5; i++) {
        char data[16];
        snprintf(data, sizeof(data), "%d", i);
        snprintf(ids[i], sizeof(ids[i]), "%s", pub(ns, subjects[i], data));
    }
    proc tail;
    spawn_url(&tail, NULL, ns, ARGS("tail", "h.*", "--from", "start", "--count", "6"));
    wait_registered(ns, "eddy-tail");
    char live[64];
    snprintf(live, sizeof(live), "%s", pub(ns, "h.b", "5")); /* maybe in the history too */
    finish(&tail);
    cr_assert_eq(tail.code, 0, "tail: %s", tail.err);
    cr_assert_eq(count_lines(tail.out), 6, "%s", tail.out);
    for (int i = 0; i < 6; i++) {
        json_t *l = line(tail.out, i);
        const char *id = json_string_value(json_object_get(l, "entry_id"));
        cr_assert_str_eq(id, i < 5 ? ids[i] : live, "line %d, in entry id order: %s", i, tail.out);
        json_t *want = json_integer(i);
        cr_assert(json_equal(json_object_get(l, "data_value"), want), "%s", tail.out);
        json_decref(want);
        if (i < 5)
            cr_assert_eq(json_integer_value(json_object_get(l, "attempt")), 0, "history");
        json_decref(l);
    }
    release(&tail);
    /* One subject: printed as it is read, the same rule against repeats. */
    spawn_url(&tail, NULL, ns, ARGS("--raw", "tail", "h.a", "--from", "start", "--count", "4"));
    wait_registered(ns, "eddy-tail");
    pub(ns, "h.a", "6");
    finish(&tail);
    cr_assert_eq(tail.code, 0, "tail: %s", tail.err);
    cr_assert_str_eq(tail.out, "0\n2\n4\n6\n");
    release(&tail);
}

Test(cli, tail_last_n_and_from_an_id_or_a_time) {
    char ns[96], ids[4][64];
    ns_new(ns, sizeof(ns));
    for (int i = 0; i < 4; i++) {
        char data[16];
        snprintf(data, sizeof(data), "%d", i);
        snprintf(ids[i], sizeof(ids[i]), "%s", pub(ns, i % 2 ? "k.odd" : "k.even", data));
    }
    /* The last 2 across both subjects (--raw: only the data). */
    proc p = RUN(ns, "--raw", "tail", "k.>", "--last", "2", "--count", "2");
    cr_assert_eq(p.code, 0, "%s", p.err);
    cr_assert_str_eq(p.out, "2\n3\n");
    release(&p);
    /* From an id, inclusive. */
    p = RUN(ns, "--raw", "tail", "k.>", "--from", ids[1], "--count", "3");
    cr_assert_eq(p.code, 0, "%s", p.err);
    cr_assert_str_eq(p.out, "1\n2\n3\n");
    release(&p);
    /* The last 1 at or after an id. */
    p = RUN(ns, "--raw", "tail", "k.even", "--from", ids[0], "--last", "1", "--count", "1");
    cr_assert_eq(p.code, 0, "%s", p.err);
    cr_assert_str_eq(p.out, "2\n");
    release(&p);
    /* A time long ago: everything; one in the future: nothing (until --timeout). */
    p = RUN(ns, "--raw", "tail", "k.>", "--from", "1970-01-01T00:00:01.5+01:00", "--count", "4");
    cr_assert_eq(p.code, 0, "%s", p.err);
    cr_assert_str_eq(p.out, "0\n1\n2\n3\n");
    release(&p);
    p = RUN(ns, "tail", "k.>", "--from", "2999-01-01T00:00:00Z", "--timeout", "300");
    cr_assert_eq(p.code, 0, "%s", p.err);
    cr_assert_str_eq(p.out, "");
    release(&p);
    /* Bad input is a usage error. */
    p = RUN(ns, "tail", "k.>", "--from", "last tuesday");
    cr_assert_eq(p.code, 2, "%s", p.err);
    cr_assert(strstr(p.err, "RFC 3339"), "%s", p.err);
    release(&p);
    p = RUN(ns, "tail", "k.>", "--from", "2026-13-01T00:00:00Z");
    cr_assert_eq(p.code, 2, "%s", p.err);
    release(&p);
    p = RUN(ns, "tail", "k.>", "--last", "2", "--group", "g");
    cr_assert_eq(p.code, 2, "%s", p.err);
    release(&p);
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fputs(text, f);
    fclose(f);
}

Test(cli, pub_reads_one_event_per_line_of_stdin) {
    char ns[96], in[64];
    ns_new(ns, sizeof(ns));
    snprintf(in, sizeof(in), "/tmp/eddy-cli-in-XXXXXX");
    int fd = mkstemp(in);
    cr_assert(fd >= 0);
    close(fd);
    write_file(in, "{\"a\":1}\n\n[2]\r\n\"three\"\n");
    proc p;
    spawn_full(&p, NULL, NULL, ns, ARGS("pub", "in.json", "-", "--json"), in);
    finish(&p);
    cr_assert_eq(p.code, 0, "%s", p.err);
    cr_assert_eq(count_lines(p.out), 3, "the empty line is skipped: %s", p.out);
    release(&p);
    /* Lines as they are, with a content type, through --stdin. */
    write_file(in, "plain one\nplain two\n");
    spawn_full(&p, NULL, NULL, ns,
               ARGS("pub", "in.text", "--stdin", "--content-type", "text/plain"), in);
    finish(&p);
    cr_assert_eq(p.code, 0, "%s", p.err);
    release(&p);
    p = RUN(ns, "--raw", "tail", "in.*", "--from", "start", "--count", "5");
    cr_assert_eq(p.code, 0, "%s", p.err);
    cr_assert_str_eq(p.out, "{\"a\":1}\n[2]\n\"three\"\nplain one\nplain two\n");
    release(&p);
    /* A line that is not JSON stops there, naming it; the ones before are published. */
    write_file(in, "1\nnot json\n3\n");
    spawn_full(&p, NULL, NULL, ns, ARGS("pub", "in.bad", "-"), in);
    finish(&p);
    cr_assert_eq(p.code, 2, "%s", p.err);
    cr_assert(strstr(p.err, "line 2"), "%s", p.err);
    cr_assert_eq(count_lines(p.out), 1, "%s", p.out);
    release(&p);
    p = RUN(ns, "pub", "in.bad", "-", "--data", "1");
    cr_assert_eq(p.code, 2, "%s", p.err);
    release(&p);
    unlink(in);
}

Test(cli, pub_sets_extensions_and_the_time) {
    char ns[96];
    ns_new(ns, sizeof(ns));
    proc p = RUN(ns, "pub", "x.y", "--data", "1", "--ext", "tenant=acme", "--ext", "region=eu",
                 "--time", "2026-01-31T12:00:00Z");
    cr_assert_eq(p.code, 0, "%s", p.err);
    release(&p);
    p = RUN(ns, "pub", "x.y", "--data", "2", "--time", "now");
    cr_assert_eq(p.code, 0, "%s", p.err);
    release(&p);
    p = RUN(ns, "tail", "x.y", "--from", "start", "--count", "2");
    cr_assert_eq(p.code, 0, "%s", p.err);
    json_t *first = line(p.out, 0), *second = line(p.out, 1);
    json_t *ev = json_object_get(first, "event");
    cr_assert_str_eq(json_string_value(json_object_get(ev, "tenant")), "acme");
    cr_assert_str_eq(json_string_value(json_object_get(ev, "region")), "eu");
    cr_assert_str_eq(json_string_value(json_object_get(ev, "time")), "2026-01-31T12:00:00Z");
    const char *now = json_string_value(json_object_get(json_object_get(second, "event"), "time"));
    cr_assert(now && strlen(now) == 24 && now[10] == 'T' && now[23] == 'Z', "now: %s",
              now ? now : "(none)");
    json_decref(first);
    json_decref(second);
    release(&p);
    /* Bad ones are usage errors that say why. */
    p = RUN(ns, "pub", "x.y", "--ext", "Not-A-Name=1");
    cr_assert_eq(p.code, 2, "%s", p.err);
    cr_assert(strstr(p.err, "Not-A-Name"), "%s", p.err);
    release(&p);
    p = RUN(ns, "pub", "x.y", "--ext", "novalue");
    cr_assert_eq(p.code, 2, "%s", p.err);
    release(&p);
    p = RUN(ns, "pub", "x.y", "--time", "yesterday");
    cr_assert_eq(p.code, 2, "%s", p.err);
    cr_assert(strstr(p.err, "RFC 3339"), "%s", p.err);
    release(&p);
}

Test(cli, raw_prints_only_the_data_for_request_and_store_read) {
    char ns[96];
    ns_new(ns, sizeof(ns));
    proc resp;
    spawn_url(&resp, NULL, ns, ARGS("respond", "raw.>", "--count", "1"));
    wait_registered(ns, "eddy-respond");
    proc p =
        RUN(ns, "--raw", "request", "raw.echo", "--data", "{\"k\":[1,true]}", "--timeout", "30000");
    cr_assert_eq(p.code, 0, "%s", p.err);
    cr_assert_str_eq(p.out, "{\"k\":[1,true]}\n");
    release(&p);
    finish(&resp);
    release(&resp);
    p = RUN(ns, "store", "append", "acct-1", "--data", "\"opened\"");
    cr_assert_eq(p.code, 0, "%s", p.err);
    release(&p);
    p = RUN(ns, "store", "read", "acct-1", "--raw");
    cr_assert_eq(p.code, 0, "%s", p.err);
    cr_assert_str_eq(p.out, "\"opened\"\n");
    release(&p);
}

/* A server that is not Redis: answers every connection as an HTTP server would, then hangs up
 * (a child process; at most `conns` connections). */
static pid_t not_redis(int *port) {
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    cr_assert(lfd >= 0 && bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
              listen(lfd, 8) == 0);
    socklen_t len = sizeof(sa);
    cr_assert(getsockname(lfd, (struct sockaddr *)&sa, &len) == 0);
    *port = ntohs(sa.sin_port);
    fflush(NULL);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        const char answer[] = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
        for (int i = 0; i < 200; i++) {
            int c = accept(lfd, NULL, NULL);
            if (c < 0)
                continue;
            char buf[512];
            (void)!read(c, buf, sizeof(buf));
            (void)!write(c, answer, sizeof(answer) - 1);
            close(c);
        }
        _exit(0);
    }
    close(lfd);
    return pid;
}

Test(cli, hints_match_the_failure_not_redis_and_no_password_given) {
    int port;
    pid_t fake = not_redis(&port);
    char url[128];
    snprintf(url, sizeof(url), "redis://:" KNOWN_PW "@127.0.0.1:%d", port);
    for (size_t i = 0; i < N_COMMANDS; i++)
        expect_secret_kept(url, NULL, every_command[i], "is not a Redis server", "credentials");
    kill(fake, SIGKILL);
    waitpid(fake, NULL, 0);
    /* A server that wants a password when none is given. */
    eddy_test_redis srv;
    eddy_test_redis_start_with(&srv, 0, (const char *const[]){"--requirepass", KNOWN_PW, NULL});
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", srv.port);
    proc p = run_url(url, "x", ARGS("groups"));
    cr_expect_eq(p.code, 3, "exit %d: %s", p.code, p.err);
    cr_expect(strstr(p.err, "wants a password") && strstr(p.err, "EDDY_PASSWORD"), "%s", p.err);
    release(&p);
    eddy_test_redis_kill(&srv);
}

/* -X NAME=VALUE sets any bus setting by its name (eddy_settings_set), before or after the
 * command, and overrides the tool's own options; a bad name or value is a usage error naming
 * the setting. */
Test(cli, dash_x_sets_any_setting_by_name) {
    char ns[96], other[96];
    ns_new(ns, sizeof(ns));
    ns_new(other, sizeof(other));
    char set_ns[128];
    snprintf(set_ns, sizeof(set_ns), "ns=%s", other);
    /* -X ns=OTHER wins over --ns NS: the event lands in OTHER. */
    proc p = RUN(ns, "-X", set_ns, "pub", "x.one", "--data", "7");
    cr_assert_eq(p.code, 0, "%s", p.err);
    release(&p);
    p = RUN(other, "--raw", "tail", "x.one", "--last", "1", "--count", "1");
    cr_assert_eq(p.code, 0, "%s", p.err);
    cr_assert_str_eq(p.out, "7\n");
    release(&p);
    p = RUN(ns, "--raw", "tail", "x.one", "--last", "1", "--timeout", "200");
    cr_assert_str_eq(p.out, "", "nothing in the namespace -X replaced");
    release(&p);
    /* After the command, and joined: -XNAME=VALUE. */
    p = RUN(ns, "stats", "-Xcommand_timeout_ms=9000", "-X", "read_batch=7");
    cr_assert_eq(p.code, 0, "%s", p.err);
    release(&p);
    /* Refusals name the setting, with the library's reason; exit 2. */
    p = RUN(ns, "-X", "nosuch=1", "stats");
    cr_assert_eq(p.code, 2);
    cr_assert(strstr(p.err, "-X nosuch") && strstr(p.err, "no option 'nosuch'"), "%s", p.err);
    release(&p);
    p = RUN(ns, "-X", "workers=lots", "stats");
    cr_assert_eq(p.code, 2);
    cr_assert(strstr(p.err, "settings.workers"), "%s", p.err);
    release(&p);
    p = RUN(ns, "-X", "workers", "stats");
    cr_assert_eq(p.code, 2);
    cr_assert(strstr(p.err, "NAME=VALUE"), "%s", p.err);
    release(&p);
    p = RUN(ns, "stats", "-X");
    cr_assert_eq(p.code, 2);
    release(&p);
}

/* ---- CloudEvents in the JSON format ------------------------------------------------------ */

static void write_temp(char *path, size_t size, const char *text) {
    snprintf(path, size, "/tmp/eddy-cli-event-XXXXXX");
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    size_t n = strlen(text);
    cr_assert_eq(write(fd, text, n), (ssize_t)n);
    close(fd);
}

/* pub reads a CloudEvent (and a batch) in the JSON format; tail writes each in that format: the
 * Integer extension stays a number, text data a string, binary data data_base64, JSON data
 * inline; what was published comes back member for member. */
Test(cli, pub_and_tail_speak_the_cloudevents_json_format) {
    char ns[96], one[64], batch[64];
    ns_new(ns, sizeof(ns));
    const char *event =
        "{\"specversion\":\"1.0\",\"id\":\"json-1\",\"source\":\"/cli/test\","
        "\"type\":\"t.xml\",\"comexampleothervalue\":5,\"flag\":true,"
        "\"averyveryverylongextensionname\":\"long\","
        "\"datacontenttype\":\"application/xml\",\"data\":\"<much wow=\\\"xml\\\"/>\"}";
    write_temp(one, sizeof(one), event);
    write_temp(batch, sizeof(batch),
               "[{\"specversion\":\"1.0\",\"id\":\"json-2\",\"source\":\"/cli/test\",\"type\":"
               "\"t.bin\",\"datacontenttype\":\"application/octet-stream\",\"data_base64\":"
               "\"AAEC/w==\"},\n {\"specversion\":\"1.0\",\"id\":\"json-3\",\"source\":"
               "\"/cli/test\",\"type\":\"t.json\",\"data\":{\"a\": [1, 2]}}]");
    proc tail;
    spawn_url(&tail, NULL, ns, ARGS("tail", "ce.json", "--count", "3", "--timeout", "60000"));
    wait_registered(ns, "eddy-tail");
    proc p = RUN(ns, "pub", "ce.json", "--event-file", one);
    cr_assert_eq(p.code, 0, "pub: %s", p.err);
    release(&p);
    p = RUN(ns, "pub", "ce.json", "--event-file", batch, "--json");
    cr_assert_eq(p.code, 0, "pub: %s", p.err);
    json_t *l = line(p.out, 1);
    cr_assert_str_eq(json_string_value(json_object_get(l, "id")), "json-3");
    json_decref(l);
    release(&p);
    finish(&tail);
    cr_assert_eq(tail.code, 0, "tail: %s", tail.err);
    json_t *e[3];
    for (int i = 0; i < 3; i++) { /* one subject, one stream: in publishing order */
        l = line(tail.out, i);
        e[i] = json_incref(json_object_get(l, "event"));
        json_decref(l);
    }
    json_t *want = json_loads(event, 0, NULL);
    cr_assert(json_equal(e[0], want), "the event as published: %s", tail.out);
    cr_assert(json_is_integer(json_object_get(e[0], "comexampleothervalue")));
    json_decref(want);
    cr_assert_str_eq(json_string_value(json_object_get(e[1], "data_base64")), "AAEC/w==");
    cr_assert_null(json_object_get(e[1], "data"));
    want = json_loads("{\"a\":[1,2]}", 0, NULL);
    cr_assert(json_equal(json_object_get(e[2], "data"), want), "%s", tail.out);
    json_decref(want);
    for (int i = 0; i < 3; i++)
        json_decref(e[i]);
    release(&tail);
    unlink(one);
    unlink(batch);
}

Test(cli, pub_refuses_a_bad_json_event_with_exit_2) {
    char ns[96], path[64];
    ns_new(ns, sizeof(ns));
    static const struct {
        const char *text, *why;
    } cases[] = {
        {"{\"specversion\":\"1.0\",\"source\":\"/s\",\"type\":\"t\"}",
         "id: required attribute is missing"},
        {"{\"specversion\":\"1.0\",\"id\":\"1\",\"source\":\"/s\",\"type\":\"t\",\"data\":1,"
         "\"data_base64\":\"AQ==\"}",
         "not both"},
        {"{\"specversion\":\"1.0\",\"id\":\"a\\nb\",\"source\":\"/s\",\"type\":\"t\"}",
         "id: not a CloudEvents String: control character U+000A at byte 1"},
        {"{\"specversion\":\"1.0\",", "JSON: unexpected end of input at byte 21"},
        {"[{\"specversion\":\"1.0\",\"id\":\"1\",\"source\":\"/s\",\"type\":\"t\"}, 5]",
         "event 1: event: an event must be a JSON object, not a number"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        write_temp(path, sizeof(path), cases[i].text);
        proc p = RUN(ns, "pub", "ce.bad", "--event-file", path);
        cr_expect_eq(p.code, 2, "case %zu: exit %d: %s", i, p.code, p.err);
        cr_expect(strstr(p.err, cases[i].why), "case %zu: %s", i, p.err);
        cr_expect(strstr(p.err, "--event-file"), "case %zu: %s", i, p.err);
        release(&p);
        unlink(path);
    }
    proc p = RUN(ns, "pub", "ce.bad", "--event-file", "/nonexistent/x.json");
    cr_expect_eq(p.code, 2);
    cr_expect(strstr(p.err, "cannot read --event-file"), "%s", p.err);
    release(&p);
    p = RUN(ns, "pub", "ce.bad", "--event-file", "/dev/null", "--type", "t");
    cr_expect_eq(p.code, 2);
    cr_expect(strstr(p.err, "no other event option"), "%s", p.err);
    release(&p);
}
