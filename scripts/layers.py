#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Checks that src/ is laid out by layer: every file includes only from its own folder and the
folders below it, and the top of src/ holds only the shared basics (at most ten files).

The layers, lowest first (a folder may include from any folder before it in this list):
  src/         the shared basics: status, errors, log, keys, the clock, the version
  util/        building blocks with no knowledge of eddy's model: commands, RESP replies,
               JSON, text checks, URLs, option tables, backoff, the function library's names
  memory/      the in-process Redis engine behind memory://
  config/      a handle's settings and the state of its connections
  events/      CloudEvents: events, values, filters, subjects, their stream entries
  link/        the transport: sockets, TLS, Sentinel, Cluster, the function library's source
  bus/, store/ messaging and the event store; neither includes the other
Exits 1 and lists every include that runs upwards or sideways."""
import os
import re
import sys

ORDER = [("",), ("util",), ("memory",), ("config",), ("events",), ("link",), ("bus", "store")]
RANK = {folder: rank for rank, group in enumerate(ORDER) for folder in group}
TOP_MAX = 10

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
bad = []
top = [f for f in os.listdir(root) if os.path.isfile(os.path.join(root, f))]
if len(top) > TOP_MAX:
    bad.append(f"src/ holds {len(top)} files at its top (at most {TOP_MAX}): {sorted(top)}")
for dirpath, _, names in os.walk(root):
    folder = os.path.relpath(dirpath, root).replace(os.sep, "/")
    folder = "" if folder == "." else folder
    if folder not in RANK:
        bad.append(f"src/{folder}: a folder no layer names (add it to scripts/layers.py)")
        continue
    for name in sorted(names):
        if not name.endswith((".c", ".h")):
            continue
        text = open(os.path.join(dirpath, name), encoding="utf-8").read()
        for inc in re.findall(r'^#include "([^"]+)"', text, re.M):
            if inc.startswith("eddy/"):
                continue  # the public headers
            target = os.path.dirname(inc) if os.path.exists(os.path.join(root, inc)) else None
            if target is None:
                bad.append(f"src/{folder}/{name}: includes \"{inc}\", which is not under src/ "
                           "(name it from src/, e.g. \"util/cmd.h\")")
                continue
            if target == folder:
                continue
            if RANK[target] >= RANK[folder]:
                bad.append(f"src/{folder}/{name}: includes \"{inc}\" ({target or 'top'} is not "
                           f"below {folder or 'top'})")
for line in bad:
    print(line.replace("src//", "src/"))
sys.exit(1 if bad else 0)
