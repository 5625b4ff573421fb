/* SPDX-License-Identifier: BSD-3-Clause */
/* Fake Redis servers for link tests: listening sockets the test itself accepts and answers with
 * scripted replies, and the steps that drive a link against them with poll(). */
#ifndef EDDY_TEST_FAKE_SERVER_H
#define EDDY_TEST_FAKE_SERVER_H

#include <stddef.h>

#include "link/link.h"

#define FAKE_STEPS 8

/* A fake server: answers[i] is written once the bytes received on the current connection hold
 * triggers[i] (in order). */
typedef struct fake {
    int lfd, port, peer, accepts;
    const char *triggers[FAKE_STEPS], *answers[FAKE_STEPS];
    size_t next;
    char got[65536]; /* every byte received, over all its connections (a function library) */
    size_t ngot, conn_start;
} fake;

void fake_listen(fake *f);
void fake_close(fake *f);
/* Accepts a new connection (closing the previous one: triggers start again), reads, and writes
 * each answer whose trigger (and every one before it) has arrived on this connection. */
void fake_step(fake *f);

/* One short poll on the link, then a step of every fake. */
eddy_status fake_link_step(eddy__link *l, fake **fakes, size_t n, eddy_error *err);
/* Drives until READY or a failure; the limit only guards against a hang. */
eddy_status fake_until_ready(eddy__link *l, fake **fakes, size_t n, eddy_error *err);
/* Drives until a reply (or a failure). */
eddy_status fake_one_reply(eddy__link *l, fake **fakes, size_t n, redisReply **r, eddy_error *err);

#endif
