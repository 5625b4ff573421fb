/* SPDX-License-Identifier: BSD-3-Clause */
/* txn_killed: kill_consumers (scenario_kill.c) with a transactional pipeline: three
 * fault_worker transform processes share a group on faults.txn.in; each input "m<n>" makes one
 * output "o<n>" on faults.txn.out, committed with the input's acknowledgement
 * (eddy_delivery_emit). The suite kills one worker with SIGKILL each time another share of the
 * inputs was handled, while it holds pending entries, and starts another in its place; and every
 * 100 ms it drops the workers' connections (CLIENT KILL ID of the clients whose last command was
 * a read, a commit or an acknowledgement), so that commits whose replies are lost are sent
 * again on the next connection. Inputs
 * the dead held come back and are handled again (handler runs beyond one per input are counted
 * and printed: they are allowed), but the output stream must hold each input's output exactly
 * once: lost 0, dup 0, nothing pending. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eddy/blocking.h"
#include "faults.h"
#include "scenarios.h"

#define CONSUMERS 3
#define SUBJECT "faults.txn.in"
#define OUT "faults.txn.out"
#define GROUP "txn"

static void start_consumer(fx_worker *w, const driver *dr, const fx_redis *r, const char *ns,
                           const char *file) {
    const char *argv[] = {"transform", dr->name, r->url, ns,    SUBJECT,
                          GROUP,       OUT,      file,   "200", NULL};
    if (!fx_worker_start(w, argv, 20000)) {
        fx_fail("txn_killed: a worker did not start");
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
    long long next_drop;
    int drops; /* connections dropped */
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

/* Drops the workers' connections: the clients whose last command was theirs (the publisher's
 * are XADD and SADD). */
static void drop_connections(run *u) {
    if (fx_now_ms() < u->next_drop)
        return;
    u->next_drop = fx_now_ms() + 100;
    redisReply *r = fx_cmd(&u->r, "CLIENT LIST");
    if (!r || (r->type != REDIS_REPLY_STRING)) {
        freeReplyObject(r);
        return;
    }
    for (char *line = r->str; line && *line;) {
        char *end = strchr(line, '\n');
        if (end)
            *end = '\0';
        long long id;
        if ((strstr(line, " cmd=fcall") || strstr(line, " cmd=xreadgroup") ||
             strstr(line, " cmd=xack")) &&
            sscanf(line, "id=%lld", &id) == 1 && fx_int(&u->r, "CLIENT KILL ID %lld", id) == 1)
            u->drops++;
        line = end ? end + 1 : NULL;
    }
    freeReplyObject(r);
}

/* Kills a consumer (and starts another) once another share of the messages was handled. */
static void maybe_kill(run *u) {
    drop_connections(u);
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

/* How often each output "o<i>" is in the output stream. */
static void tally_outputs(run *u, fx_tally *t) {
    fx_tally_init(t, u->total);
    char from[64] = "-";
    for (;;) {
        redisReply *r = fx_cmd(&u->r, "XRANGE {%s}:s:" OUT " %s + COUNT 5000", u->ns, from);
        if (!r || r->type != REDIS_REPLY_ARRAY || r->elements == 0) {
            freeReplyObject(r);
            return;
        }
        for (size_t i = 0; i < r->elements; i++) {
            const redisReply *f = r->element[i]->element[1];
            for (size_t j = 0; j + 1 < f->elements; j += 2) {
                const char *v = f->element[j + 1]->str;
                if (strcmp(f->element[j]->str, "id") == 0 && v[0] == 'o') {
                    unsigned long n = strtoul(v + 1, NULL, 10);
                    if (n < t->n)
                        t->count[n]++;
                }
            }
        }
        snprintf(from, sizeof(from), "(%s", r->element[r->elements - 1]->element[0]->str);
        freeReplyObject(r);
    }
}

void fx_txn_killed(const driver *dr) {
    static run u;
    memset(&u, 0, sizeof(u));
    u.dr = dr;
    u.total = 100000; /* issue 23's figure: at least 10 kills over 100,000 inputs, both profiles */
    u.kills = 10;
    fx_redis_start(&u.r, NULL);
    snprintf(u.ns, sizeof(u.ns), "faults-txn-%s", dr->name);
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
        fx_fail("txn_killed: publisher: %s", err.detail);
        return;
    }
    enum { BATCH = 500, AHEAD = 3000 };
    eddy_event *evs[BATCH];
    long long deadline = fx_now_ms() + 240000;
    for (size_t i = 0; i < u.total;) {
        size_t n = u.total - i < BATCH ? u.total - i : BATCH;
        for (size_t j = 0; j < n; j++)
            evs[j] = fx_event('m', i + j, "faults.txn", "x");
        eddy_status st =
            eddy_bus_publish_batch(pub, SUBJECT, (const eddy_event *const *)evs, n, NULL, &err);
        for (size_t j = 0; j < n; j++)
            eddy_event_free(evs[j]);
        FX_CHECK(st == EDDY_OK, "txn_killed: publish: %s", err.detail);
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
    FX_CHECK(u.killed == u.kills, "txn_killed: only %d kills (handled %zu of %zu)", u.killed,
             handled_lines(&u), u.total);

    /* Wait until every input's output is there and nothing is pending. */
    fx_tally t;
    for (;;) {
        tally_outputs(&u, &t);
        long long pending = fx_pending(&u.r, u.ns, SUBJECT, GROUP);
        bool done = fx_tally_missing(&t) == 0 && pending == 0;
        fx_tally_free(&t);
        if (done || fx_now_ms() > deadline)
            break;
        fx_sleep_ms(200);
    }
    for (int i = 0; i < CONSUMERS; i++)
        fx_worker_stop(&u.w[i], 10000);
    fx_tally runs;
    tally(&u, &runs);
    tally_outputs(&u, &t);
    long long pending = fx_pending(&u.r, u.ns, SUBJECT, GROUP);
    size_t lost = fx_tally_missing(&t), dup = fx_tally_extra(&t), reran = fx_tally_extra(&runs);
    printf("FIG txn_killed frontend=%s inputs=%zu outputs_lost=%zu outputs_dup=%zu "
           "handler_reruns=%zu pending=%lld kills=%d held_at_kills=%lld drops=%d workers=%d\n",
           dr->name, u.total, lost, dup, reran, pending, u.killed, u.held_at_kills, u.drops,
           CONSUMERS);
    FX_CHECK(lost == 0, "txn_killed: %zu inputs have no output", lost);
    FX_CHECK(dup == 0, "txn_killed: %zu outputs appended more than once", dup);
    FX_CHECK(pending == 0, "txn_killed: %lld entries still pending", pending);
    FX_CHECK(u.drops > 0, "txn_killed: no connection was dropped");
    FX_CHECK(u.held_at_kills > 0, "txn_killed: no kill fell on a worker holding entries");
    fx_tally_free(&runs);
    fx_tally_free(&t);
    eddy_bus_free(pub);
    fx_redis_stop(&u.r);
}
