/* SPDX-License-Identifier: BSD-3-Clause */
/* Hostile entries on redis://, both front ends: an entry of tens of MiB written straight into a
 * subscribed stream (by another process, with no eddy in between) is skipped by the transport
 * as its bytes arrive: the consumer's peak RSS grows by no more than a few MiB over
 * max_event_size (a memory bound, measured with the kernel's high-water mark, reset first);
 * the entry is dead-lettered with its fields, size, reason and original id, not its payload;
 * the connection stays in step (the next message is delivered); and the dead letter cannot be
 * replayed. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "driver.h"
#include "eddy/blocking.h"
#include "eddy/dlq.h"
#include "eddy_test.h"
#include "raw.h"
#include "recorder.h"

#define HOSTILE_MIB 48
#define BOUND_MIB 6 /* over max_event_size (1 MiB): a few buffers, never the entry */

/* The kernel's high-water mark of this process's RSS (KiB), from /proc/self/status. */
static long long peak_kib(void) {
    FILE *f = fopen("/proc/self/status", "r");
    cr_assert(f);
    char line[256];
    long long kib = -1;
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, "VmHWM:", 6) == 0)
            kib = atoll(line + 6);
    fclose(f);
    cr_assert_gt(kib, 0, "no VmHWM");
    return kib;
}

/* Resets the high-water mark to the current RSS (Linux: "5" to clear_refs). */
static void reset_peak(void) {
    int fd = open("/proc/self/clear_refs", O_WRONLY);
    cr_assert_geq(fd, 0, "cannot reset the peak RSS");
    cr_assert_eq(write(fd, "5", 1), 1);
    close(fd);
}

/* In a child process (its memory is not ours): XADD of an entry with a data value of `mib`
 * MiB, the other fields those of a valid event. */
static void write_hostile(const char *url, const char *ns, int mib) {
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int port = atoi(strrchr(url, ':') + 1);
        redisContext *c = redisConnect("127.0.0.1", port);
        if (!c || c->err)
            _exit(2);
        size_t n = (size_t)mib * 1024 * 1024;
        char *data = malloc(n);
        if (!data)
            _exit(3);
        memset(data, 'x', n);
        char key[160];
        snprintf(key, sizeof(key), "{%s}:s:big", ns);
        const char *argv[] = {"XADD", key,   "*",           "id",  "hostile-1", "source", "/x",
                              "type", "t.x", "specversion", "1.0", "data",      data};
        size_t lens[13];
        for (int i = 0; i < 12; i++)
            lens[i] = strlen(argv[i]);
        lens[12] = n;
        redisReply *r = redisCommandArgv(c, 13, argv, lens);
        _exit(r && r->type == REDIS_REPLY_STRING ? 0 : 4);
    }
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the writer failed: %d", status);
}

typedef struct dl_wait {
    const char *url, *ns;
} dl_wait;

static bool dead_lettered(void *arg) {
    dl_wait *w = arg;
    return raw_int(w->url, "XLEN {%s}:dlq:g", w->ns) == 1;
}

/* A field of the (only) dead letter, read raw: its value's length into *len, NULL if absent. */
static char *dl_field(const char *url, const char *ns, const char *name, size_t *len,
                      size_t *total) {
    redisReply *r = raw_cmdf(url, "XRANGE {%s}:dlq:g - +", ns);
    cr_assert(r->type == REDIS_REPLY_ARRAY && r->elements == 1);
    redisReply *fv = r->element[0]->element[1];
    char *out = NULL;
    *total = 0;
    for (size_t i = 0; i + 1 < fv->elements; i += 2) {
        *total += fv->element[i]->len + fv->element[i + 1]->len;
        if (strcmp(fv->element[i]->str, name) == 0) {
            out = malloc(fv->element[i + 1]->len + 1);
            memcpy(out, fv->element[i + 1]->str, fv->element[i + 1]->len + 1);
            *len = fv->element[i + 1]->len;
        }
    }
    freeReplyObject(r);
    return out;
}

static int frontends[] = {0, 1};

ParameterizedTestParameters(hostile, an_oversize_entry_is_skipped_and_dead_lettered_small) {
    return cr_make_param_array(int, frontends, 2);
}
ParameterizedTest(int *frontend, hostile, an_oversize_entry_is_skipped_and_dead_lettered_small,
                  .timeout = 120) {
    const driver *d = *frontend ? &reactive_driver : &blocking_driver;
    char ns[96];
    eddy_test_namespace(ns, sizeof(ns), "hostile");
    const char *url = eddy_test_redis_url();
    eddy_settings s;
    eddy_settings_init(&s);
    s.url = url;
    s.ns = ns;
    s.source = "/tests/hostile";
    s.block_ms = 200;
    s.log = eddy_test_log;
    s.log_user = "hostile";
    recorder rec;
    rec_init(&rec);
    eddy_subscription_spec sp;
    eddy_subscription_spec_init(&sp);
    sp.name = "s";
    sp.pattern = "big";
    sp.group = "g";
    sp.delivery = EDDY_AT_LEAST_ONCE;
    sp.handler = rec_handler;
    sp.user = &rec;
    tbus *b = NULL;
    eddy_error err = {0};
    cr_assert_eq(d->bus_new(&s, &sp, 1, &b, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(d->start(b, &err), EDDY_OK, "%s", err.detail);
    eddy_event *warm = make_event("warm-1", "t.x");
    cr_assert_eq(d->publish(b, "big", warm, &err), EDDY_OK, "%s", err.detail);
    eddy_event_free(warm);
    cr_assert(rec_wait(&rec, 1, 20000));

    reset_peak();
    long long before = peak_kib();
    write_hostile(url, ns, HOSTILE_MIB);
    dl_wait w = {url, ns};
    cr_assert(eddy_test_wait_until(dead_lettered, &w, 60000), "not dead-lettered");
    eddy_event *next = make_event("after-1", "t.x");
    cr_assert_eq(d->publish(b, "big", next, &err), EDDY_OK, "%s", err.detail);
    eddy_event_free(next);
    cr_expect(rec_wait(&rec, 2, 20000), "the connection lost its step after the skip");
    cr_expect_eq(rec_seen(&rec, "after-1"), 1);
    cr_expect_eq(rec_seen(&rec, "hostile-1"), 0);
    long long grew = peak_kib() - before;
    cr_expect_lt(grew, BOUND_MIB * 1024, "peak RSS grew by %lld KiB for a %d MiB entry", grew,
                 HOSTILE_MIB);
    cr_log_info("peak RSS grew by %lld KiB for a %d MiB entry", grew, HOSTILE_MIB);

    /* The dead letter: reason, original id, size, the small fields; not the payload. */
    size_t len = 0, total = 0;
    char *reason = dl_field(url, ns, "_dlq_reason", &len, &total);
    cr_expect(reason && strcmp(reason, "too_large") == 0, "%s", reason ? reason : "(none)");
    cr_expect_lt(total, 64 * 1024, "the dead letter holds %zu bytes", total);
    char *size = dl_field(url, ns, "_dlq_size", &len, &total);
    cr_expect(size && atoll(size) > (long long)HOSTILE_MIB * 1024 * 1024, "size %s",
              size ? size : "(none)");
    char *id = dl_field(url, ns, "id", &len, &total);
    cr_expect(id && strcmp(id, "hostile-1") == 0);
    char *entry = dl_field(url, ns, "_dlq_entry", &len, &total);
    cr_expect(entry && strchr(entry, '-'), "original entry id %s", entry ? entry : "(none)");
    char *data = dl_field(url, ns, "data", &len, &total);
    cr_expect(data && len < 64 && memcmp(data, "\0eddy:skipped:", 14) == 0, "data of %zu bytes",
              len);
    free(reason);
    free(size);
    free(id);
    free(entry);
    free(data);
    cr_expect_eq(raw_int(url, "MEMORY USAGE {%s}:dlq:g", ns) < 64 * 1024, 1);

    /* Not replayable: it lacks its payload. */
    eddy_dlq *dlq = NULL;
    cr_assert_eq(eddy_dlq_open(&s, &dlq, &err), EDDY_OK, "%s", err.detail);
    size_t replayed = 0;
    eddy_status st = eddy_dlq_replay_all(dlq, "g", &replayed, &err);
    cr_expect_neq(st, EDDY_OK);
    cr_expect_eq(replayed, 0);
    cr_expect_eq(raw_int(url, "XLEN {%s}:dlq:g", ns), 1, "left in place");
    eddy_dlq_close(dlq);

    d->free(b);
    rec_destroy(&rec);
    freeReplyObject(raw_cmdf(url, "DEL {%s}:s:big", ns));
}
