/* SPDX-License-Identifier: BSD-3-Clause */
/* The parts both front ends' buses are made of (src/bus/bus_core.h) with no front end: made for
 * the settings' backend, freed twice safely, and the view a request gets of them. */
#include <criterion/criterion.h>

#include "bus/bus_core.h"

Test(bus_core, makes_the_parts_and_gives_requests_their_view) {
    eddy_settings us;
    eddy_settings_init(&us);
    us.url = "memory://bus_core";
    us.ns = "t";
    eddy__settings s;
    cr_assert_eq(eddy__settings_copy(&s, &us, NULL), EDDY_OK);
    eddy__bus_core c;
    cr_assert_eq(eddy__bus_core_init(&c, &s, NULL), EDDY_OK);
    cr_expect(c.caps & EDDY_CAP_REQUEST_REPLY, "memory:// answers requests");
    cr_expect(c.publisher && c.requests && c.registry_cache && c.backend);

    eddy__request_ctx on = eddy__bus_core_request_ctx(&c, &s, true, false, "{t}:inbox:1");
    cr_expect_eq(on.requests, c.requests);
    cr_expect_eq(on.cache, c.registry_cache);
    cr_expect_eq(on.publisher, c.publisher);
    cr_expect_eq(on.caps, c.caps);
    cr_expect_str_eq(on.ns, "t");
    cr_expect_str_eq(on.reply_to, "{t}:inbox:1");
    eddy__request_ctx off = eddy__bus_core_request_ctx(&c, &s, false, true, "{t}:inbox:1");
    cr_expect_not(off.active);
    cr_expect(off.cancelled);
    cr_expect_null(off.reply_to, "no reply stream for a bus that is not active");

    eddy__bus_core_destroy(&c);
    cr_expect_null(c.publisher);
    eddy__bus_core_destroy(&c); /* a failed init's cleanup may run it again */
    eddy__settings_free(&s);
}
