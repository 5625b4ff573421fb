/* SPDX-License-Identifier: BSD-3-Clause */
/* Slots as Redis Cluster computes them (src/link/cluster.c): CRC16-XMODEM of the hash tag, mod
 * 16384. The values are the cluster specification's check value and what
 * `redis-cli cluster keyslot` answers. */
#include <criterion/criterion.h>
#include <string.h>

#include "link/cluster.h"

Test(cluster_slot, crc16_check_value) {
    cr_expect_eq(eddy__crc16("123456789", 9), 0x31C3);
    cr_expect_eq(eddy__crc16("", 0), 0);
}

static unsigned slot(const char *key) { return eddy__cluster_key_slot(key, strlen(key)); }

Test(cluster_slot, keyslot) {
    cr_expect_eq(slot("foo"), 12182);
    cr_expect_eq(slot("bar"), 5061);
    cr_expect_eq(slot("hello"), 866);
    cr_expect_eq(slot("123456789"), 0x31C3);
}

/* The tag between the first '{' and the next '}'; "{}" or no '}' hashes the whole key. */
Test(cluster_slot, hash_tags) {
    cr_expect_eq(slot("{user1000}.following"), slot("user1000"));
    cr_expect_eq(slot("{user1000}.followers"), slot("user1000"));
    cr_expect_eq(slot("foo{}{bar}"), eddy__crc16("foo{}{bar}", 10) % 16384);
    cr_expect_eq(slot("foo{{bar}}zap"), slot("{bar"));
    cr_expect_eq(slot("foo{bar}{zap}"), slot("bar"));
    cr_expect_eq(slot("foo{bar"), slot("foo{bar") /* no '}': whole key */);
    cr_expect_eq(slot("foo{bar"), eddy__crc16("foo{bar", 7) % 16384);
}

/* Every key of a namespace is in the namespace's slot. */
Test(cluster_slot, namespace) {
    cr_expect_eq(eddy__cluster_ns_slot("orders"), slot("orders"));
    cr_expect_eq(eddy__cluster_ns_slot("foo"), 12182);
}
