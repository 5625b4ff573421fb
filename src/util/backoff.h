/* SPDX-License-Identifier: BSD-3-Clause */
/* Reconnect backoff for the front ends: how long to wait before the next attempt. */
#ifndef EDDY_SRC_BACKOFF_H
#define EDDY_SRC_BACKOFF_H

#include <stdbool.h>

#include "eddy/status.h"

/* Delay in milliseconds before reconnect attempt `attempt` (0 for the first retry).
 *
 * The base delay is min_ms doubled once per attempt (min_ms, 2*min_ms, 4*min_ms, ...) and
 * capped at max_ms; the result is drawn uniformly from [base/2, base] so that clients which
 * lost the same server do not all come back at the same instant. A negative min_ms counts as
 * 0 (every delay is then 0) and a max_ms below min_ms counts as min_ms. Large attempts do not
 * overflow: the base simply stays at max_ms.
 *
 * The jitter comes from *seed, a rand_r-style state the function advances; seed it once per
 * connection (from the time, the pid, the address of the connection), not per call. A NULL
 * seed gives the base delay without jitter.
 *
 * Ownership: seed is borrowed for the call. Thread: any; no global state, so each thread or
 * connection keeps its own seed. */
long long eddy__backoff_delay_ms(unsigned attempt, long long min_ms, long long max_ms,
                                 unsigned *seed);

/* The reconnect gate of one connection (the owner keeps it across reconnects): every connect
 * waits for the backoff after the previous one started, whatever ended that one (a refused
 * connect, a lost socket, a cluster redirect that gave the connection up right after its
 * handshake), so that no reconnect follows the previous one within the shortest delay and a
 * connection that keeps failing backs off exponentially. The step goes back to the shortest
 * delay only once a connection proved itself (answered a command: eddy__link_proved); refused
 * credentials jump to the longest (eddy__reconnect_failed).
 *
 * Thread: the owner's (no lock). */
typedef struct eddy__reconnect {
    unsigned attempt;     /* connects since the last that proved itself */
    long long not_before; /* monotonic ms: no connect starts earlier; 0 when none started */
    unsigned seed;
    bool proved; /* eddy__reconnect_proved since the last start */
} eddy__reconnect;

void eddy__reconnect_init(eddy__reconnect *g, unsigned seed);
/* How long from now (monotonic ms) before the next connect may start: 0 for at once. */
long long eddy__reconnect_wait_ms(const eddy__reconnect *g, long long now);
/* A connect starts at now; `proved`: the previous connection answered a command (or
 * eddy__reconnect_proved said so). The next one may start at now + eddy__backoff_delay_ms(step,
 * min_ms, max_ms) at the earliest. */
void eddy__reconnect_started(eddy__reconnect *g, long long now, bool proved, long long min_ms,
                             long long max_ms);
/* The connect failed with st: refused credentials wait the longest from then on (retrying
 * sooner cannot help and only fills the server's log). */
void eddy__reconnect_failed(eddy__reconnect *g, eddy_status st);
/* The current connection answered a command: the next reconnect starts from the shortest
 * delay. For an owner that does not keep the link (the reactive front end's connections). */
void eddy__reconnect_proved(eddy__reconnect *g);

#endif
