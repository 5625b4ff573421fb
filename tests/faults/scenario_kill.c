/* SPDX-License-Identifier: BSD-3-Clause */
/* kill_consumers: three consumer processes (fault_worker consume, Competing, AtLeastOnce) share
 * a group; the suite publishes N messages and kills one consumer with SIGKILL each time another
 * quarter of them was handled, while it holds pending entries, starting a new one (a new
 * instance) in its place. The entries the dead ones held come back through redelivery. In the
 * end every message must have been handled (lost 0) and nothing may be pending; duplicates (a
 * kill between handling and acknowledgement) are allowed, counted and printed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eddy/blocking.h"
#include "faults.h"
#include "scenarios.h"

#define CONSUMERS 3
#define SUBJECT "faults.kill"
#define GROUP "kill"

static void start_consumer(fx_worker *w, const driver *dr, const fx_redis *r, const char *ns,
                           const char *file) {
    const char *argv[] = {"consume", dr->name, r->url, ns, SUBJECT, GROUP, file, "200", NULL};
    if (!fx_worker_start(w, argv, 20000)) {
        fx_fail("kill_consumers: a consumer did not start");
        exit(2);
    }
}

typedef struct run {
    const driver *dr;
    fx_redis r;
    char ns[64], dir[160];
    char files[CONSUMERS + 16][224];
    long offset[CONSUMERS + 16]; /* how much of each file handled_lines has read */
    size_t lines;                /* lines read so far, in all files */
    int nfiles;
    fx_worker w[CONSUMERS];
    size_t total;
    int kills, killed;
    long long held_at_kills;
} run;

/* Messages handled so far (duplicates included): the lines in the consumers' files, read
 * from where the last call stopped. */
static size_t handled_lines(run *u) {
    for (int i = 0; i < u->nfiles; i++) {
        FILE *f = fopen(u->files[i], "r");
        if (!f)
            continue;
        fseek(f, u->offset[i], SEEK_SET);
        char buf[8192];
        size_t got;
        while ((got = fread(buf, 1, sizeof(buf), f)) > 0) {
            /* Count only whole lines: a partial one is read again next time. */
            size_t whole = 0;
            for (size_t j = 0; j < got; j++)
                if (buf[j] == '\n') {
                    u->lines++;
                    whole = j + 1;
                }
            u->offset[i] += (long)whole;
            if (whole < got) {
                fseek(f, u->offset[i], SEEK_SET);
                if (whole == 0)
                    break;
            }
        }
        fclose(f);
    }
    return u->lines;
}

static void add_consumer(run *u, int k) {
    snprintf(u->files[u->nfiles], sizeof(u->files[0]), "%s/c%d.log", u->dir, u->nfiles);
    start_consumer(&u->w[k], u->dr, &u->r, u->ns, u->files[u->nfiles++]);
}

/* Kills a consumer (and starts another) once another share of the messages was handled. */
static void maybe_kill(run *u) {
    if (u->killed >= u->kills)
        return;
    size_t handled = handled_lines(u);
    if (handled < u->total * (size_t)(u->killed + 1) / (size_t)(u->kills + 1))
        return;
    int k = u->killed % CONSUMERS;
    long long held = fx_pending_of(&u->r, u->ns, SUBJECT, GROUP, u->w[k].instance);
    if (held <= 0)
        return; /* not holding anything right now: try again in a moment */
    fx_worker_kill(&u->w[k]);
    u->held_at_kills += held;
    u->killed++;
    add_consumer(u, k);
}

static void tally(run *u, fx_tally *t) {
    fx_tally_init(t, u->total);
    for (int i = 0; i < u->nfiles; i++)
        fx_tally_file(t, u->files[i], 'm');
}

void fx_kill_consumers(const driver *dr) {
    static run u;
    memset(&u, 0, sizeof(u));
    u.dr = dr;
    u.total = fx_long_profile() ? 200000 : 50000;
    u.kills = fx_long_profile() ? 6 : 3;
    fx_redis_start(&u.r, NULL);
    snprintf(u.ns, sizeof(u.ns), "faults-kill-%s", dr->name);
    fx_scratch(u.dir, sizeof(u.dir), u.ns);
    for (int i = 0; i < CONSUMERS; i++)
        add_consumer(&u, i);

    /* The publisher is not under test: one blocking bus, batches, kept a little ahead of the
     * consumers so that the kills fall while messages flow. */
    eddy_settings s;
    fx_settings(&s, u.r.url, u.ns);
    s.log_user = "publisher";
    eddy_bus *pub = NULL;
    eddy_error err = {0};
    if (eddy_bus_new(&s, NULL, 0, &pub, &err) != EDDY_OK) {
        fx_fail("kill_consumers: publisher: %s", err.detail);
        return;
    }
    enum { BATCH = 500, AHEAD = 3000 };
    eddy_event *evs[BATCH];
    long long deadline = fx_now_ms() + 240000;
    for (size_t i = 0; i < u.total;) {
        size_t n = u.total - i < BATCH ? u.total - i : BATCH;
        for (size_t j = 0; j < n; j++)
            evs[j] = fx_event('m', i + j, "faults.kill", "x");
        eddy_status st =
            eddy_bus_publish_batch(pub, SUBJECT, (const eddy_event *const *)evs, n, NULL, &err);
        for (size_t j = 0; j < n; j++)
            eddy_event_free(evs[j]);
        FX_CHECK(st == EDDY_OK, "kill_consumers: publish: %s", err.detail);
        if (st != EDDY_OK)
            break;
        i += n;
        while (handled_lines(&u) + AHEAD < i && fx_now_ms() < deadline) {
            maybe_kill(&u);
            fx_sleep_ms(10);
        }
    }
    while (u.killed < u.kills && fx_now_ms() < deadline) {
        maybe_kill(&u);
        fx_sleep_ms(10);
    }
    FX_CHECK(u.killed == u.kills, "kill_consumers: only %d kills (handled %zu of %zu)", u.killed,
             handled_lines(&u), u.total);

    /* Wait until every message was handled and nothing is pending. */
    fx_tally t;
    for (;;) {
        tally(&u, &t);
        long long pending = fx_pending(&u.r, u.ns, SUBJECT, GROUP);
        bool done = fx_tally_missing(&t) == 0 && pending == 0;
        fx_tally_free(&t);
        if (done || fx_now_ms() > deadline)
            break;
        fx_sleep_ms(200);
    }
    for (int i = 0; i < CONSUMERS; i++)
        fx_worker_stop(&u.w[i], 10000);
    tally(&u, &t); /* again: the stopped consumers may have handled a last few */
    long long pending = fx_pending(&u.r, u.ns, SUBJECT, GROUP);
    size_t lost = fx_tally_missing(&t), dup = fx_tally_extra(&t);
    printf("FIG kill_consumers frontend=%s lost=%zu/%zu dup=%zu pending=%lld kills=%d "
           "held_at_kills=%lld consumers=%d\n",
           dr->name, lost, u.total, dup, pending, u.killed, u.held_at_kills, CONSUMERS);
    FX_CHECK(lost == 0, "kill_consumers: %zu messages never handled", lost);
    FX_CHECK(pending == 0, "kill_consumers: %lld entries still pending", pending);
    FX_CHECK(u.held_at_kills > 0, "kill_consumers: no kill fell on a consumer holding entries");
    fx_tally_free(&t);
    eddy_bus_free(pub);
    fx_redis_stop(&u.r);
}
