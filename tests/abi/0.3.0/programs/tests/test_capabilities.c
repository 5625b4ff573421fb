/* SPDX-License-Identifier: BSD-3-Clause */
/* Backends declare what they can do; a bad URL is refused with its own status. */
#include <criterion/criterion.h>

#include "eddy/bus.h"

Test(capabilities, memory_and_redis) {
    unsigned caps = 0;
    cr_assert_eq(eddy_backend_capabilities("memory://", &caps, NULL), EDDY_OK);
    cr_expect(caps & EDDY_CAP_GROUPS);
    cr_expect(caps & EDDY_CAP_REQUEST_REPLY);
    cr_expect(caps & EDDY_CAP_EVENT_STORE);
    cr_expect_not(caps & EDDY_CAP_CROSS_PROCESS, "memory:// lives in one process");
    cr_assert_eq(eddy_backend_capabilities("redis://127.0.0.1:6379/2", &caps, NULL), EDDY_OK);
    cr_expect(caps & EDDY_CAP_CROSS_PROCESS);
    cr_expect(caps & EDDY_CAP_REQUEST_REPLY);
    cr_assert_eq(eddy_backend_capabilities("unix:///tmp/redis.sock", &caps, NULL), EDDY_OK);
    cr_expect(caps & EDDY_CAP_CROSS_PROCESS);
}

Test(capabilities, bad_input) {
    unsigned caps = 0;
    eddy_error err = {0};
    cr_expect_eq(eddy_backend_capabilities("ftp://x", &caps, &err), EDDY_ERR_INVALID_URL);
    cr_expect_eq(eddy_backend_capabilities(NULL, &caps, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy_backend_capabilities("memory://", NULL, &err), EDDY_ERR_INVALID_ARGUMENT);
}
