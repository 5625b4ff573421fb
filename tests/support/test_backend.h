/* SPDX-License-Identifier: BSD-3-Clause */
/* Settings for a test on one of the two backends, memory:// or the fixture's redis-server, and
 * a libev loop driver for the reactive tests. */
#ifndef EDDY_TEST_BACKEND_H
#define EDDY_TEST_BACKEND_H

#include <stdbool.h>
#include <stddef.h>

#include "eddy/bus.h"

struct ev_loop;

/* Initialises s for a test: a fresh namespace "<prefix>-..." in ns, the URL in url
 * ("memory://<ns>", or the fixture's redis URL when redis), source "/tests", eddy_test_log as
 * the log hook with "redis" or "memory" as its user. The caller sets any other field after.
 * Ownership: s points into url and ns, which the caller keeps alive as long as s. */
void eddy_test_settings(eddy_settings *s, bool redis, const char *prefix, char *url,
                        size_t url_size, char *ns, size_t ns_size);

/* Runs loop until *counter >= n or timeout_ms passes, waking at least every 5 ms; whether the
 * count was reached. */
bool eddy_test_run_until(struct ev_loop *loop, const int *counter, int n, long long timeout_ms);
/* Runs loop for ms milliseconds. */
void eddy_test_run_for(struct ev_loop *loop, long long ms);

/* Deletes the entries of positions after+1..upto from the store's global stream ({ns}:es:all,
 * entry ids "<position>-0", src/keys.h) behind the store's back; returns how many went. */
long long eddy_test_delete_history_after(const char *url, const char *ns, long long after,
                                         long long upto);

#endif
