/* SPDX-License-Identifier: BSD-3-Clause */
/* eddy bench: its latency histogram (cli/bench_hist.c, linked in), then the tool itself driven
 * as a subprocess in each mode against memory:// and the fixture's redis-server with a small
 * --msgs: the exit code, the counts of its --json document against what was asked, percentiles
 * in order, and, on Redis, no key of the namespace left behind unless --keep. No timings are
 * asserted. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../cli/bench_hist.h"
#include "eddy_test.h"
#include "raw.h"

/* ---- the histogram -------------------------------------------------------------------------- */

static bench_hist *hist_new(void) {
    bench_hist *h = malloc(sizeof(*h));
    cr_assert(h);
    bench_hist_init(h);
    return h;
}

Test(bench_hist, empty_is_zero) {
    bench_hist *h = hist_new();
    cr_assert_eq(bench_hist_percentile(h, 50), 0);
    cr_assert_eq(bench_hist_percentile(h, 100), 0);
    free(h);
}

Test(bench_hist, small_values_are_exact_nearest_rank) {
    bench_hist *h = hist_new();
    for (uint64_t v = 1; v <= 100; v++) /* 1..100: the p-th percentile is p */
        bench_hist_record(h, v);
    cr_assert_eq(bench_hist_percentile(h, 50), 50);
    cr_assert_eq(bench_hist_percentile(h, 90), 90);
    cr_assert_eq(bench_hist_percentile(h, 99), 99);
    cr_assert_eq(bench_hist_percentile(h, 99.9), 100);
    cr_assert_eq(bench_hist_percentile(h, 100), 100);
    cr_assert_eq(bench_hist_percentile(h, 0.5), 1);
    cr_assert_eq(h->min, 1);
    cr_assert_eq(h->max, 100);
    cr_assert_eq(h->sum, 5050);
    free(h);
}

Test(bench_hist, one_sample_is_every_percentile) {
    bench_hist *h = hist_new();
    bench_hist_record(h, 123456789);
    cr_assert_eq(bench_hist_percentile(h, 50), 123456789, "clamped to the exact min and max");
    cr_assert_eq(bench_hist_percentile(h, 99.9), 123456789);
    free(h);
}

Test(bench_hist, large_values_within_one_128th) {
    bench_hist *h = hist_new();
    /* 10000 values spread over 7 powers of ten; each percentile against the sorted truth */
    static uint64_t v[10000];
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < 10000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        v[i] = 100 + x % 100000000;
        bench_hist_record(h, v[i]);
    }
    for (int i = 1; i < 10000; i++) /* insertion sort: small and obviously right */
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            uint64_t t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    const double ps[] = {1, 10, 50, 90, 99, 99.9, 99.99};
    uint64_t prev = 0;
    for (size_t k = 0; k < sizeof(ps) / sizeof(ps[0]); k++) {
        uint64_t truth = v[(size_t)(ps[k] / 100.0 * 10000 + 0.999999) - 1];
        uint64_t got = bench_hist_percentile(h, ps[k]);
        cr_assert(got >= truth && got - truth <= truth / 128, "p%g: %llu for %llu", ps[k],
                  (unsigned long long)got, (unsigned long long)truth);
        cr_assert(got >= prev, "percentiles in order");
        prev = got;
    }
    cr_assert_eq(bench_hist_percentile(h, 100), v[9999]);
    free(h);
}

Test(bench_hist, merge_adds_the_samples) {
    bench_hist *a = hist_new(), *b = hist_new();
    for (uint64_t i = 1; i <= 50; i++)
        bench_hist_record(a, i);
    for (uint64_t i = 51; i <= 100; i++)
        bench_hist_record(b, i);
    bench_hist_merge(a, b);
    cr_assert_eq(a->count, 100);
    cr_assert_eq(a->min, 1);
    cr_assert_eq(a->max, 100);
    cr_assert_eq(bench_hist_percentile(a, 50), 50);
    cr_assert_eq(bench_hist_percentile(a, 75), 75);
    free(a);
    free(b);
}

Test(bench_hist, the_top_of_the_range) {
    bench_hist *h = hist_new();
    bench_hist_record(h, UINT64_MAX);
    bench_hist_record(h, 0);
    cr_assert_eq(bench_hist_percentile(h, 50), 0);
    cr_assert_eq(bench_hist_percentile(h, 100), UINT64_MAX);
    free(h);
}

/* ---- the tool ------------------------------------------------------------------------------- */

typedef struct result {
    int code;
    char *out, *err;
} result;

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

/* Runs `eddy --url URL --ns NS bench ARGS...` to its end (stdin /dev/null). */
static result run(const char *url, const char *ns, const char *const *args) {
    char out_path[] = "/tmp/eddy-bench-out-XXXXXX", err_path[] = "/tmp/eddy-bench-err-XXXXXX";
    int out = mkstemp(out_path), err = mkstemp(err_path);
    cr_assert(out >= 0 && err >= 0);
    const char *bin = getenv("EDDY_TEST_BIN_DIR");
    cr_assert(bin, "EDDY_TEST_BIN_DIR is not set: run the tests through ctest");
    char path[1024];
    snprintf(path, sizeof(path), "%s/../cli/eddy", bin);
    const char *argv[40] = {path, "--url", url, "--ns", ns, "bench"};
    int n = 6;
    for (int i = 0; args[i]; i++) {
        cr_assert(n < 39);
        argv[n++] = args[i];
    }
    argv[n] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        dup2(out, STDOUT_FILENO);
        dup2(err, STDERR_FILENO);
        int in = open("/dev/null", O_RDONLY);
        dup2(in, STDIN_FILENO);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(out);
    close(err);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    result r = {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), slurp(out_path),
                slurp(err_path)};
    return r;
}

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

static void release(result *r) {
    free(r->out);
    free(r->err);
}

/* Runs with --json, expects exit 0 and returns the document. */
static json_t *run_json(const char *url, const char *ns, const char *const *args) {
    result r = run(url, ns, args);
    cr_assert_eq(r.code, 0, "eddy bench %s exited %d: %s", args[0], r.code, r.err);
    cr_assert(!strchr(r.err, '\r'), "no progress bar when stderr is not a terminal: %s", r.err);
    json_error_t e;
    json_t *v = json_loads(r.out, 0, &e);
    cr_assert(v, "not JSON (%s): %s", e.text, r.out);
    release(&r);
    return v;
}

static long long num(json_t *o, const char *key) {
    json_t *v = json_object_get(o, key);
    cr_assert(json_is_integer(v), "%s is not an integer", key);
    return (long long)json_integer_value(v);
}

static json_t *role(json_t *doc, const char *name) {
    json_t *r = json_object_get(json_object_get(doc, "roles"), name);
    cr_assert(json_is_object(r), "no role %s", name);
    return r;
}

/* The role's counts and its latency percentiles, in order; count latency samples. */
static void check_role(json_t *doc, const char *name, long long msgs, long long clients,
                       long long samples) {
    json_t *r = role(doc, name);
    cr_assert_eq(num(r, "msgs"), msgs, "%s msgs", name);
    cr_assert_eq(num(r, "clients"), clients, "%s clients", name);
    cr_assert_eq(num(r, "errors"), 0, "%s errors", name);
    cr_assert_eq(num(r, "bytes"), msgs * num(doc, "size"));
    cr_assert_eq(json_array_size(json_object_get(r, "per_client")), (size_t)clients);
    long long sum = 0;
    size_t i;
    json_t *pc;
    json_array_foreach(json_object_get(r, "per_client"), i, pc) sum += num(pc, "msgs");
    cr_assert_eq(sum, msgs, "%s: the clients' messages add up", name);
    json_t *l = json_object_get(r, "latency_us");
    cr_assert(json_is_object(l), "%s has latency figures", name);
    cr_assert_eq(num(l, "count"), samples, "%s latency samples", name);
    const char *order[] = {"min", "p50", "p90", "p99", "p99_9", "max"};
    double prev = -1;
    for (int k = 0; k < 6; k++) {
        json_t *v = json_object_get(l, order[k]);
        cr_assert(json_is_number(v), "%s %s", name, order[k]);
        cr_assert(json_number_value(v) >= prev, "%s: %s below the percentile before it", name,
                  order[k]);
        prev = json_number_value(v);
    }
    cr_assert(json_number_value(json_object_get(l, "avg")) <= prev);
}

/* Every key of the namespace on Redis (none may be left after a run without --keep). */
static size_t keys_left(const char *url, const char *ns) {
    redisReply *r = raw_cmdf(url, "KEYS {%s}:*", ns);
    cr_assert(r && r->type == REDIS_REPLY_ARRAY);
    size_t n = r->elements;
    for (size_t i = 0; i < n; i++)
        fprintf(stderr, "left behind: %s\n", r->element[i]->str);
    freeReplyObject(r);
    return n;
}

static void modes(bool redis) {
    char ns[96], url[160];
    eddy_test_namespace(ns, sizeof(ns), "bench");
    if (redis)
        snprintf(url, sizeof(url), "%s", eddy_test_redis_url());
    else
        snprintf(url, sizeof(url), "memory://%s", ns);

    json_t *d = run_json(url, ns, ARGS("pub", "--msgs", "300", "--pub", "2", "--json"));
    cr_assert_str_eq(json_string_value(json_object_get(d, "mode")), "pub");
    cr_assert_eq(num(d, "msgs"), 300);
    check_role(d, "pub", 300, 2, 300);
    cr_assert(json_is_true(json_object_get(d, "removed")));
    cr_assert(strncmp(json_string_value(json_object_get(d, "subject")), "eddy.bench.", 11) == 0);
    json_decref(d);

    d = run_json(url, ns, ARGS("pub", "--msgs", "300", "--batch", "7", "--size", "16", "--json"));
    check_role(d, "pub", 300, 1, 43); /* 42 calls of 7 and one of 6 */
    cr_assert_eq(num(role(d, "pub"), "bytes"), 300 * 16);
    json_decref(d);

    d = run_json(
        url, ns,
        ARGS("sub", "--msgs", "200", "--sub", "3", "--pub", "2", "--batch", "4", "--json"));
    check_role(d, "pub", 200, 2, 50);
    check_role(d, "sub", 600, 3, 600); /* fanout: each subscriber gets every message */
    cr_assert(json_is_false(json_object_get(d, "lost")));
    json_decref(d);

    d = run_json(url, ns,
                 ARGS("sub", "--msgs", "200", "--sub", "2", "--group", "bench-g", "--json"));
    check_role(d, "pub", 200, 1, 200);
    json_t *sub = role(d, "sub");
    cr_assert_eq(num(sub, "msgs"), 200, "competing: each message once");
    json_decref(d);

    d = run_json(url, ns,
                 ARGS("req", "--msgs", "200", "--clients", "2", "--inflight", "2", "--responders",
                      "2", "--json"));
    check_role(d, "req", 200, 2, 200);
    cr_assert_eq(num(d, "responded"), 200);
    cr_assert_eq(num(d, "responders"), 2);
    json_decref(d);

    if (redis)
        cr_assert_eq(keys_left(url, ns), 0, "a run without --keep leaves nothing behind");
}

Test(cli_bench, every_mode_on_memory, .timeout = 120) { modes(false); }
Test(cli_bench, every_mode_on_redis, .timeout = 120) { modes(true); }

Test(cli_bench, keep_leaves_the_subject_and_an_existing_one_is_refused, .timeout = 120) {
    char ns[96];
    eddy_test_namespace(ns, sizeof(ns), "bench");
    const char *url = eddy_test_redis_url();
    json_t *d = run_json(url, ns, ARGS("pub", "bench.kept", "--msgs", "50", "--keep", "--json"));
    cr_assert(json_is_true(json_object_get(d, "kept")));
    cr_assert(json_is_false(json_object_get(d, "removed")));
    json_decref(d);
    cr_assert_eq(raw_int(url, "XLEN {%s}:s:bench.kept", ns), 50);
    result r = run(url, ns, ARGS("pub", "bench.kept", "--msgs", "10"));
    cr_assert_eq(r.code, 2, "an existing subject is the user's: %s", r.err);
    cr_assert(strstr(r.err, "already exists") && strstr(r.err, "--keep"), "%s", r.err);
    release(&r);
    cr_assert_eq(raw_int(url, "XLEN {%s}:s:bench.kept", ns), 50, "refused: nothing written");
    d = run_json(url, ns, ARGS("pub", "bench.kept", "--msgs", "10", "--keep", "--json"));
    json_decref(d);
    cr_assert_eq(raw_int(url, "XLEN {%s}:s:bench.kept", ns), 60);
    /* a named fresh subject is removed like the default one */
    d = run_json(url, ns, ARGS("sub", "bench.fresh", "--msgs", "20", "--json"));
    cr_assert(json_is_true(json_object_get(d, "removed")));
    json_decref(d);
    cr_assert_eq(raw_int(url, "EXISTS {%s}:s:bench.fresh", ns), 0);
}

Test(cli_bench, csv_text_duration_and_usage, .timeout = 120) {
    char ns[96];
    eddy_test_namespace(ns, sizeof(ns), "bench");
    const char *url = eddy_test_redis_url();
    result r = run(url, ns, ARGS("sub", "--msgs", "50", "--csv"));
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_assert(strncmp(r.out, "role,clients,msgs,bytes,", 24) == 0, "%s", r.out);
    cr_assert(strstr(r.out, "\npub,1,50,6400,") && strstr(r.out, "\nsub,1,50,6400,"), "%s", r.out);
    release(&r);
    r = run(url, ns, ARGS("req", "--msgs", "20"));
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_assert(strstr(r.out, "req  1 client: 20 msgs") && strstr(r.out, "p99.9"), "%s", r.out);
    cr_assert(strstr(r.out, "removed subject eddy.bench."), "%s", r.out);
    release(&r);
    json_t *d = run_json(url, ns, ARGS("pub", "--duration", "200", "--json"));
    cr_assert(json_is_null(json_object_get(d, "msgs")));
    cr_assert_eq(num(d, "duration_ms"), 200);
    cr_assert(num(role(d, "pub"), "msgs") > 0);
    json_decref(d);
    r = run(url, ns, ARGS("req", "--no-responder", "--msgs", "5", "--timeout", "2000"));
    cr_assert_eq(r.code, 5, "no responders: %s", r.err);
    release(&r);
    const char *const *bad[] = {ARGS("bogus"),
                                ARGS("pub", "--msgs", "5", "--duration", "5"),
                                ARGS("pub", "--batch", "0"),
                                ARGS("pub", "--group", "g"),
                                ARGS("sub", "--inflight", "2"),
                                ARGS("req", "--batch", "3"),
                                ARGS("pub", "--csv", "--json"),
                                ARGS("pub", "bad..subject")};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        r = run(url, ns, bad[i]);
        cr_assert_eq(r.code, 2, "%s %s: exit %d: %s", bad[i][0], bad[i][1] ? bad[i][1] : "", r.code,
                     r.err);
        release(&r);
    }
    r = run(url, ns, ARGS("--help"));
    cr_assert_eq(r.code, 0);
    cr_assert(strstr(r.out, "WRITES TO THE TARGET REDIS"), "%s", r.out);
    release(&r);
    cr_assert_eq(keys_left(url, ns), 0);
}
