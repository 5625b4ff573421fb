/* SPDX-License-Identifier: BSD-3-Clause */
/* claim_kept: a consumer process (fault_worker hold, claim_refresh on) holds each message longer
 * than the redelivery_idle_ms of a second member of its group (in this process). While the
 * holder lives and reports progress, the other member's claim rounds leave its messages: none
 * is delivered twice. Then the holder takes a second batch and is killed with SIGKILL while it
 * holds it: its reports stop, and every message of that batch is redelivered to the other
 * member (lost 0). The other member is paused while each batch is handed to the holder, so that
 * the holder is the one that has them. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eddy/blocking.h"
#include "faults.h"
#include "scenarios.h"

#define SUBJECT "faults.claim"
#define GROUP "claim"
#define BATCH 5
#define HOLDER_IDLE_MS 1000 /* fx_settings' redelivery_idle_ms: the holder refreshes every third */
/* The other member claims what stayed idle this long: twice the holder's, so that a refresh
 * may come up to 1.6 s late on a loaded machine, and still shorter than a hold, so that
 * without the refreshes it would claim every held message. */
#define OTHER_IDLE_MS (2 * HOLDER_IDLE_MS)
#define HOLD_MS (3 * HOLDER_IDLE_MS)

typedef struct other {
    pthread_mutex_t lock;
    int seen[2][BATCH];         /* deliveries of a<i> and b<i> to the other member */
    unsigned attempt[2][BATCH]; /* the last one's attempt */
} other;

static other oth = {.lock = PTHREAD_MUTEX_INITIALIZER};

static eddy_status record(eddy_delivery *d, void *user) {
    (void)user;
    const char *id = eddy_event_id(eddy_delivery_event(d));
    int batch = id[0] == 'a' ? 0 : id[0] == 'b' ? 1 : -1;
    long i = batch >= 0 ? strtol(id + 1, NULL, 10) : -1;
    if (i >= 0 && i < BATCH) {
        pthread_mutex_lock(&oth.lock);
        oth.seen[batch][i]++;
        oth.attempt[batch][i] = eddy_delivery_attempt(d);
        pthread_mutex_unlock(&oth.lock);
    }
    return EDDY_OK;
}

static int other_saw(int batch) {
    int n = 0;
    pthread_mutex_lock(&oth.lock);
    for (int i = 0; i < BATCH; i++)
        n += oth.seen[batch][i] > 0;
    pthread_mutex_unlock(&oth.lock);
    return n;
}

static void publish_batch(eddy_bus *pub, char prefix) {
    for (unsigned long i = 0; i < BATCH; i++) {
        eddy_event *ev = fx_event(prefix, i, "faults.claim", "long work");
        eddy_error err = {0};
        FX_CHECK(eddy_bus_publish(pub, SUBJECT, ev, NULL, 0, &err) == EDDY_OK,
                 "claim_kept: publish: %s", err.detail);
        eddy_event_free(ev);
    }
}

/* Reads the holder's lines until it said `word` (got, done) for every message of the batch. */
static bool holder_says(fx_worker *w, const char *word, char prefix) {
    int n = 0;
    char line[256], want[16];
    snprintf(want, sizeof(want), "%s %c", word, prefix);
    long long until = fx_now_ms() + 30000;
    while (n < BATCH && fx_now_ms() < until)
        if (fx_worker_line(w, line, sizeof(line), until - fx_now_ms()) &&
            strncmp(line, want, strlen(want)) == 0)
            n++;
    return n == BATCH;
}

void fx_claim_kept(const driver *dr) {
    memset(oth.seen, 0, sizeof(oth.seen));
    fx_redis r;
    fx_redis_start(&r, NULL);
    const char *ns = "claim";
    eddy_settings s;
    fx_settings(&s, r.url, ns);
    s.log_user = "other";
    s.redelivery_idle_ms = OTHER_IDLE_MS;
    eddy_subscription_spec sp;
    fx_competing(&sp, "other", SUBJECT, GROUP, EDDY_AT_LEAST_ONCE);
    sp.handler = record;
    sp.paused = true;
    tbus *b = NULL;
    eddy_bus *pub = NULL;
    eddy_error err = {0};
    if (dr->bus_new(&s, &sp, 1, &b, &err) != EDDY_OK || dr->start(b, &err) != EDDY_OK ||
        eddy_bus_new(&s, NULL, 0, &pub, &err) != EDDY_OK) {
        fx_fail("claim_kept: %s", err.detail);
        fx_redis_stop(&r);
        return;
    }
    char hold_ms[16];
    snprintf(hold_ms, sizeof(hold_ms), "%d", HOLD_MS);
    const char *argv[] = {"hold", dr->name, r.url, ns, SUBJECT, GROUP, hold_ms, NULL};
    fx_worker w;
    if (!fx_worker_start(&w, argv, 20000)) {
        fx_fail("claim_kept: the holder did not start");
        goto out;
    }

    /* 1. The holder lives and reports: nothing it holds goes to the other member. */
    publish_batch(pub, 'a');
    FX_CHECK(holder_says(&w, "got", 'a'), "claim_kept: the holder did not get the first batch");
    dr->resume(b, "other", &err);
    FX_CHECK(holder_says(&w, "done", 'a'), "claim_kept: the holder did not finish the first batch");
    int while_reporting = other_saw(0);
    FX_CHECK(while_reporting == 0,
             "claim_kept: %d of %d messages were delivered again while their holder reported "
             "progress",
             while_reporting, BATCH);

    /* 2. The holder dies holding the second batch: all of it comes back. */
    dr->pause(b, "other", &err);
    publish_batch(pub, 'b');
    FX_CHECK(holder_says(&w, "got", 'b'), "claim_kept: the holder did not get the second batch");
    dr->resume(b, "other", &err);
    fx_worker_kill(&w);
    long long killed_at = fx_now_ms();
    while (other_saw(1) < BATCH && fx_now_ms() - killed_at < 30000)
        fx_sleep_ms(50);
    int after_kill = other_saw(1), retried = 0;
    pthread_mutex_lock(&oth.lock);
    for (int i = 0; i < BATCH; i++)
        retried += oth.attempt[1][i] >= 2;
    pthread_mutex_unlock(&oth.lock);
    FX_CHECK(after_kill == BATCH, "claim_kept: %d of %d held by the killed holder were lost",
             BATCH - after_kill, BATCH);
    FX_CHECK(retried == after_kill, "claim_kept: %d redelivered with a first attempt's count",
             after_kill - retried);
    printf("FIG claim_kept frontend=%s held=%d hold_ms=%s idle_ms=%d other_idle_ms=%d "
           "redelivered_while_reporting=%d held_at_kill=%d redelivered_after_kill=%d lost=%d\n",
           dr->name, BATCH, hold_ms, HOLDER_IDLE_MS, OTHER_IDLE_MS, while_reporting, BATCH,
           after_kill, BATCH - after_kill);
out:
    dr->stop(b);
    dr->free(b);
    eddy_bus_free(pub);
    fx_redis_stop(&r);
}
