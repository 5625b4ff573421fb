#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Patches a scratch copy of the tree (tests/abi/check.sh, part d) the way
docs/compatibility.md says a struct the library fills grows: one more field at the end of
eddy_consumer_stats (4242 in every snapshot), a new default version of
eddy_bus_consumer_stats (EDDY_0.4, the new layout) and the old one kept as
eddy_bus_consumer_stats@EDDY_0.3, which writes the 0.3.0 layout only.
Usage: tests/abi/grow-output.py SCRATCH_DIR"""
import sys

root = sys.argv[1]


def patch(path, old, new):
    p = root + "/" + path
    s = open(p).read()
    if s.count(old) != 1:
        sys.exit("grow-output.py: %s: %r is not there once (the code moved: update this patch)"
                 % (path, old))
    open(p, "w").write(s.replace(old, new))


patch("include/eddy/bus.h", "} eddy_consumer_stats;",
      "    uint64_t abi_probe; /**< scratch: a field added after the release */\n"
      "} eddy_consumer_stats;")
patch("src/bus/sub.c", "    out->lost_writes = atomic_load(&st->lost_writes);\n",
      "    out->lost_writes = atomic_load(&st->lost_writes);\n    out->abi_probe = 4242;\n")
head = ("eddy_status eddy_bus_consumer_stats(eddy_bus *bus, const char *name, "
        "eddy_consumer_stats *out) {")
patch("blocking/bus.c", head,
      '#define EDDY_SCRATCH_EXPORT __attribute__((visibility("default")))\n'
      "EDDY_SCRATCH_EXPORT eddy_status eddy_bus_consumer_stats_v04(eddy_bus *bus, "
      "const char *name, eddy_consumer_stats *out);\n"
      "EDDY_SCRATCH_EXPORT eddy_status eddy_bus_consumer_stats_v03(eddy_bus *bus, "
      "const char *name, eddy_consumer_stats *out);\n"
      '__asm__(".symver eddy_bus_consumer_stats_v04, eddy_bus_consumer_stats@@EDDY_0.4");\n'
      '__asm__(".symver eddy_bus_consumer_stats_v03, eddy_bus_consumer_stats@EDDY_0.3");\n'
      "eddy_status eddy_bus_consumer_stats_v03(eddy_bus *bus, const char *name, "
      "eddy_consumer_stats *out) {\n"
      "    eddy_consumer_stats full;\n"
      "    if (!out)\n"
      "        return EDDY_ERR_INVALID_ARGUMENT;\n"
      "    eddy_status st = eddy_bus_consumer_stats_v04(bus, name, &full);\n"
      "    if (st == EDDY_OK) /* the layout of 0.3.0: up to abi_probe */\n"
      "        memcpy(out, &full, offsetof(eddy_consumer_stats, abi_probe));\n"
      "    return st;\n"
      "}\n"
      "eddy_status eddy_bus_consumer_stats_v04(eddy_bus *bus, const char *name, "
      "eddy_consumer_stats *out) {")
m = root + "/cmake/eddy.map"
s = open(m).read()
node = "EDDY_0.4 {\n  global:\n"
if node in s:  # the next release's node exists already: the new version goes into it
    s = s.replace(node, node + "    eddy_bus_consumer_stats;\n")
else:
    s += node + "    eddy_bus_consumer_stats;\n} EDDY_0.3;\n"
open(m, "w").write(s)
