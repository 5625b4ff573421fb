/* SPDX-License-Identifier: BSD-3-Clause */
/* A bounded set of event ids, the feed's memory of the ids it applied (it needs them only for
 * events that carry no store position, see feed.h): membership in O(1), and
 * once it holds `capacity` ids each new one evicts the oldest (first in, first out), so a feed
 * that runs for months keeps a fixed amount of memory. Storage grows with use up to the
 * capacity, so a large capacity costs nothing until it is filled.
 *
 * Thread: none; the feed calls it under its own lock. */
#ifndef EDDY_SRC_DEDUP_H
#define EDDY_SRC_DEDUP_H

#include <stdbool.h>
#include <stddef.h>

#include "eddy/status.h"
#include "util/falloc.h"

typedef struct eddy__dedup eddy__dedup;

/* capacity >= 1. NULL on OOM. */
eddy__dedup *eddy__dedup_new(size_t capacity);
void eddy__dedup_free(eddy__dedup *d);

bool eddy__dedup_contains(const eddy__dedup *d, const char *id);
/* Adds a copy of id (a no-op when present). EDDY_ERR_NOMEM leaves the set as it was. */
eddy_status eddy__dedup_add(eddy__dedup *d, const char *id);
/* Forgets every id (storage is kept). */
void eddy__dedup_clear(eddy__dedup *d);
size_t eddy__dedup_count(const eddy__dedup *d);

#endif
