/* SPDX-License-Identifier: BSD-3-Clause */
/* fault_suite: eddy against a real redis-server that misbehaves, on both front ends. Each
 * scenario starts its own redis-server on a free loopback port, runs once on the blocking and
 * once on the reactive front end, prints "FIG <name> frontend=<f> lost=<n>/<N> dup=<n> ..." and
 * checks the outcome (never a speed). The exit status is the number of failed checks (capped).
 *   fault_suite [scenario ...]      all default scenarios, or only those named
 *   EDDY_FAULTS_PROFILE=long        bigger counts and more faults (the fast profile is the
 *                                   default: CI runs it, well within 6 minutes on 2 cores) */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "faults.h"
#include "scenarios.h"

/* Scenarios again with every subscription on the shared reads (blocking/share.h,
 * reactive/share.h): the drivers, the workers' included, read EDDY_TEST_SHARE_READS. */
static void shared(const driver *dr, fx_scenario_fn fn) {
    setenv("EDDY_TEST_SHARE_READS", "1", 1);
    fn(dr);
    unsetenv("EDDY_TEST_SHARE_READS");
}
static void redis_stopped_shared(const driver *dr) { shared(dr, fx_redis_stopped); }
static void kill_consumers_shared(const driver *dr) { shared(dr, fx_kill_consumers); }

typedef struct scenario {
    const char *name;
    fx_scenario_fn fn;
} scenario;

// clang-format off
static const scenario scenarios[] = {
    {"kill_consumers",   fx_kill_consumers},
    {"txn_killed",       fx_txn_killed},
    {"aof_restart",      fx_aof_restart},
    {"responder_killed", fx_responder_killed},
    {"feed_killed",      fx_feed_killed},
    {"feed_resumed",     fx_feed_resumed},
    {"feed_model",       fx_feed_model},
    {"redis_stopped",    fx_redis_stopped},
    {"redis_stopped_shared", redis_stopped_shared},
    {"kill_consumers_shared", kill_consumers_shared},
    {"auth_changed",     fx_auth_changed},
    {"tls_restart",      fx_tls_restart},
    {"claim_kept",       fx_claim_kept},
    {"cluster",          fx_cluster},
    {"sentinel_failover", fx_sentinel_failover},
    {"sentinel_kill",    fx_sentinel_kill},
};
// clang-format on

eddy_event *fx_event(char prefix, unsigned long i, const char *type, const char *data) {
    char id[48];
    snprintf(id, sizeof(id), "%c%lu", prefix, i);
    eddy_event *ev = eddy_event_new();
    if (!ev || eddy_event_set_id(ev, id) != EDDY_OK ||
        eddy_event_set_source(ev, "/faults") != EDDY_OK ||
        eddy_event_set_type(ev, type) != EDDY_OK ||
        eddy_event_set_data(ev, data, strlen(data)) != EDDY_OK) {
        fprintf(stderr, "out of memory building an event\n");
        exit(2);
    }
    return ev;
}

static bool wanted(const char *name, int argc, char **argv) {
    if (argc < 2)
        return true;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], name) == 0)
            return true;
    return false;
}

int main(int argc, char **argv) {
    signal(SIGPIPE, SIG_IGN);
    setvbuf(stdout, NULL, _IOLBF, 0);
    const driver *drivers[] = {&blocking_driver, &reactive_driver};
    printf("fault suite, %s profile\n", fx_long_profile() ? "long" : "fast");
    for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++) {
        const scenario *sc = &scenarios[i];
        if (!wanted(sc->name, argc, argv))
            continue;
        for (int d = 0; d < 2; d++) {
            int before = fx_failures;
            long long t0 = fx_now_ms();
            sc->fn(drivers[d]);
            printf("%s %s frontend=%s (%.1f s)\n", fx_failures == before ? "PASS" : "FAIL",
                   sc->name, drivers[d]->name, (fx_now_ms() - t0) / 1000.0);
        }
    }
    char cmd[96];
    snprintf(cmd, sizeof(cmd), "rm -rf /tmp/eddy-faults-%d", (int)getpid());
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove the scratch directory\n");
    printf("fault suite: %d failed check(s)\n", fx_failures);
    return fx_failures > 100 ? 100 : fx_failures;
}
