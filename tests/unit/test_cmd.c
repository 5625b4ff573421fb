/* SPDX-License-Identifier: BSD-3-Clause */
/* Commands: arguments packed into one buffer stay valid as it grows, and eddy's RESP writer
 * produces exactly what hiredis's own formatter does. */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <stdlib.h>
#include <string.h>

#include "util/cmd.h"

static void expect_same_as_hiredis(const eddy__cmd *cmd) {
    char *want = NULL;
    int want_len = redisFormatCommandArgv(&want, cmd->argc, eddy__cmd_argv(cmd), cmd->argvlen);
    cr_assert_gt(want_len, 0);
    size_t size = eddy__cmd_resp_size(cmd);
    cr_assert_eq(size, (size_t)want_len);
    char *got = malloc(size);
    cr_assert(got);
    char *end = eddy__cmd_resp_write(cmd, got);
    cr_expect_eq((size_t)(end - got), size);
    cr_expect(memcmp(got, want, size) == 0, "RESP differs from hiredis's");
    free(got);
    free(want);
}

Test(cmd, resp_matches_hiredis) {
    eddy__cmd c;
    eddy__cmd_init(&c);
    eddy__cmd_str(&c, "XADD");
    eddy__cmd_str(&c, "{ns}:s:orders");
    eddy__cmd_str(&c, "*");
    eddy__cmd_arg(&c, "", 0);
    eddy__cmd_arg(&c, "a\0b\r\nc", 6);
    eddy__cmd_u64(&c, 1234567890123ULL);
    cr_assert_eq(eddy__cmd_status(&c), EDDY_OK);
    expect_same_as_hiredis(&c);
    eddy__cmd_reset(&c);
}

Test(cmd, many_and_large_arguments_survive_the_buffer_growing) {
    eddy__cmd c;
    eddy__cmd_init(&c);
    char big[100000];
    memset(big, 'x', sizeof(big));
    for (int i = 0; i < 1000; i++) {
        if (i == 500)
            eddy__cmd_arg(&c, big, sizeof(big));
        else
            eddy__cmd_fmt(&c, "arg-%d", i);
    }
    cr_assert_eq(eddy__cmd_status(&c), EDDY_OK);
    cr_assert_eq(c.argc, 1000);
    cr_expect_str_eq(c.argv[0], "arg-0");
    cr_expect_str_eq(c.argv[999], "arg-999");
    cr_expect_eq(c.argvlen[500], sizeof(big));
    cr_expect(memcmp(c.argv[500], big, sizeof(big)) == 0);
    cr_expect_eq(c.argv[500][sizeof(big)], '\0', "each argument is NUL-terminated");
    expect_same_as_hiredis(&c);
    eddy__cmd_reset(&c);
    cr_expect_eq(c.argc, 0);
}

Test(cmd, an_empty_command_is_an_empty_array) {
    eddy__cmd c;
    eddy__cmd_init(&c);
    char out[8];
    cr_assert_eq(eddy__cmd_resp_size(&c), 4);
    cr_expect(memcmp(out, "*0\r\n", (size_t)(eddy__cmd_resp_write(&c, out) - out)) == 0);
}

Test(cmd, a_reserved_command_is_one_block_that_appends_never_move) {
    eddy__cmd c;
    eddy__cmd_init(&c);
    eddy__cmd_str(&c, "XADD"); /* reserving after an argument keeps it */
    eddy__cmd_reserve(&c, 40, 40 * 10);
    cr_assert_eq(eddy__cmd_status(&c), EDDY_OK);
    char **block = c.argv;
    cr_expect_str_eq(c.argv[0], "XADD");
    cr_expect_eq((char *)c.argvlen, (char *)(c.argv + c.cap), "the lengths follow the pointers");
    cr_expect_eq(c.buf, (char *)(c.argvlen + c.cap), "the bytes follow the lengths");
    for (int i = 0; i < 20; i++)
        eddy__cmd_fmt(&c, "field-%03d", i); /* 9 bytes each, within the 10 reserved */
    eddy__cmd_reserve(&c, 20, 20 * 9);      /* what is left: nothing moves */
    for (int i = 20; i < 40; i++)
        eddy__cmd_fmt(&c, "field-%03d", i);
    cr_expect_eq(c.argv, block, "appends within the reservation allocate nothing");
    eddy__cmd_str(&c, "past the reservation, so the block moves");
    cr_assert_eq(eddy__cmd_status(&c), EDDY_OK);
    cr_expect_str_eq(c.argv[1], "field-000");
    cr_expect_str_eq(c.argv[40], "field-039");
    expect_same_as_hiredis(&c);
    eddy__cmd_reset(&c);
}

Test(cmd, an_impossible_reservation_fails_the_command_and_a_negative_one_is_ignored) {
    eddy__cmd c;
    eddy__cmd_init(&c);
    eddy__cmd_reserve(&c, -1, 10);
    cr_expect_eq(eddy__cmd_status(&c), EDDY_OK);
    cr_expect_null(c.argv);
    eddy__cmd_reserve(&c, 1, (size_t)-1 / 2);
    cr_expect_eq(eddy__cmd_status(&c), EDDY_ERR_NOMEM);
    eddy__cmd_str(&c, "ignored once failed");
    cr_expect_eq(c.argc, 0);
    eddy__cmd_reset(&c);
}
