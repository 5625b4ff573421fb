/* SPDX-License-Identifier: BSD-3-Clause */
/* The test event type the feed and domain tests decode stored events into: a uev holds only the
 * event's id. uev_decode, uev_free and uev_id are the three codec callbacks of an
 * eddy_feed_config, for tests that need no more; tests that filter or count wrap uev_decode.
 * Also the order.big events with msgpack data {"amount": n} and the filter on that amount. */
#ifndef EDDY_TEST_CODEC_H
#define EDDY_TEST_CODEC_H

#include <stdbool.h>

#include "eddy/bus.h"
#include "eddy/filter.h"
#include "eddy/status.h"

typedef struct uev {
    char id[64];
} uev;

/* decode: a new uev with the stored event's id in *out. EDDY_ERR_NOMEM when allocation fails.
 * Ownership: the caller (the feed) frees *out with uev_free. */
eddy_status uev_decode(const eddy_event *ev, const eddy_event_meta *meta, void **out,
                       eddy_error *err, void *user);
/* free_event: frees a uev (NULL: no-op). */
void uev_free(void *event, void *user);
/* event_id: the uev's id; borrowed from the event. */
const char *uev_id(const void *event, void *user);

/* Whether ev's type is one the domain tests' projection knows ("order.placed", "order.big");
 * when not, false and err->detail says "unknown type <type>". */
bool uev_known_type(const eddy_event *ev, eddy_error *err);

/* An order.big event whose msgpack data is {"amount": amount}. Fails the test when it cannot be
 * built. Ownership: the caller frees it with eddy_event_free. */
eddy_event *amount_event(const char *id, int amount);
/* The filter data.amount > n. Ownership: the caller frees it with eddy_filter_free. */
eddy_filter *amount_over(int n);

#endif
