/* fault_suite: eddy against a real redis-server that misbehaves, on both front ends. Each
 * scenario starts its own redis-server on a free loopback port, runs once on the blocking and
 * once on the reactive front end, prints "FIG <name> frontend=<f> lost=<n>/<N> dup=<n> ..." and
 * checks the outcome (never a speed). The exit status is the number of failed checks (capped).
 *   fault_suite [scenario ...]      all default scenarios, or only those named
 *   EDDY_FAULTS_PROFILE=long        bigger counts and more faults (the fast profile is the
 *                                   default: CI runs it, well within 6 minutes on 2 cores)
 *   EDDY_FAULTS_PENDING=1           also the scenarios that wait for work not merged yet (see
 *                                   `pending` below) */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "faults.h"
#include "scenarios.h"

typedef struct scenario {
    const char *name;
    fx_scenario_fn fn;
    /* Left out of the default run on these front ends (bit 0 blocking, bit 1 reactive) until
     * the work it waits for, named in waits_for, is merged. */
    unsigned pending;
    const char *waits_for;
} scenario;

// clang-format off
static const scenario scenarios[] = {
    {"kill_consumers",   fx_kill_consumers,   0, NULL},
    {"aof_restart",      fx_aof_restart,      0, NULL},
    {"responder_killed", fx_responder_killed, 0, NULL},
    {"feed_killed",      fx_feed_killed,      0, NULL},
    {"redis_stopped",    fx_redis_stopped,    0, NULL},
    {"auth_changed",     fx_auth_changed,     0, NULL},
    {"tls_restart",      fx_tls_restart,      0, NULL},
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
    const char *pending = getenv("EDDY_FAULTS_PENDING");
    bool with_pending = pending && strcmp(pending, "1") == 0;
    const driver *drivers[] = {&blocking_driver, &reactive_driver};
    printf("fault suite, %s profile\n", fx_long_profile() ? "long" : "fast");
    for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++) {
        const scenario *sc = &scenarios[i];
        if (!wanted(sc->name, argc, argv))
            continue;
        for (int d = 0; d < 2; d++) {
            if ((sc->pending & (1u << d)) && !with_pending) {
                printf("SKIP %s frontend=%s (waits for %s; EDDY_FAULTS_PENDING=1 runs it)\n",
                       sc->name, drivers[d]->name, sc->waits_for);
                continue;
            }
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
