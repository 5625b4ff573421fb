/* SPDX-License-Identifier: BSD-3-Clause */
/* The fault suite's scenarios (scenario_*.c), each run once per front end by fault_suite.c.
 * A scenario prints its FIG line(s) and records failed checks with fx_fail. */
#ifndef EDDY_FAULTS_SCENARIOS_H
#define EDDY_FAULTS_SCENARIOS_H

#include "driver.h"

typedef void (*fx_scenario_fn)(const driver *dr);

void fx_kill_consumers(const driver *dr);
void fx_txn_killed(const driver *dr); /* scenario_txn.c */
void fx_aof_restart(const driver *dr);
void fx_responder_killed(const driver *dr);
void fx_feed_killed(const driver *dr);
void fx_feed_resumed(const driver *dr);
void fx_feed_model(const driver *dr);
void fx_redis_stopped(const driver *dr);
void fx_auth_changed(const driver *dr);
void fx_tls_restart(const driver *dr);
void fx_claim_kept(const driver *dr);
void fx_cluster(const driver *dr);
void fx_sentinel_failover(const driver *dr); /* scenario_sentinel.c */
void fx_sentinel_kill(const driver *dr);

/* A blocking bus with no subscription, for the scenarios' own publishing and requests. */
#include "eddy/blocking.h"

/* A test event "<prefix><i>" of type `type` with data `data`; exits on failure. */
eddy_event *fx_event(char prefix, unsigned long i, const char *type, const char *data);

#endif
