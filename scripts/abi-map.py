#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Writes cmake/eddy.map, the linker version script of both shared libraries, from the public
headers: every function a header declares EDDY_EXPORT is named in a version node. A symbol
already named in a node stays there (a released node is never edited); a symbol no node names
yet goes into the node of the next release: EDDY_<major>.<minor> from version.h, or the next
minor's once that version is released (its ABI baseline, tests/abi/<version>, exists), created,
inheriting the previous one, when it does not exist; a symbol the headers no
longer declare is dropped (the abidiff check says whether that was allowed).
Usage: scripts/abi-map.py [--check]   (--check: fail when the file would change)"""
import os
import re
import sys

src = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
inc = os.path.join(src, "include", "eddy")
mapfile = os.path.join(src, "cmake", "eddy.map")

declared = set()
for name in sorted(os.listdir(inc)):
    if not name.endswith(".h"):
        continue
    # As tests/install/symbols.sh reads them: a line with EDDY_EXPORT (not a #define) declares
    # the last lower-case name followed by "(" on it.
    for line in open(os.path.join(inc, name)):
        if "EDDY_EXPORT" not in line or "#define" in line:
            continue
        m = re.match(r"^.*[ *]([a-z_0-9]+)\(", line)
        if m:
            declared.add(m.group(1))

ver = open(os.path.join(inc, "version.h")).read()
major = re.search(r"#define EDDY_VERSION_MAJOR (\d+)", ver).group(1)
minor = re.search(r"#define EDDY_VERSION_MINOR (\d+)", ver).group(1)
patch = re.search(r"#define EDDY_VERSION_PATCH (\d+)", ver).group(1)
if os.path.isdir(os.path.join(src, "tests", "abi", "%s.%s.%s" % (major, minor, patch))):
    minor = str(int(minor) + 1)  # released: what is added now comes with the next release
current = "EDDY_%s.%s" % (major, minor)

nodes = []  # [name, [symbols], parent]
if os.path.exists(mapfile):
    body = re.sub(r"/\*.*?\*/", "", open(mapfile).read(), flags=re.S)
    for m in re.finditer(r"(EDDY_[0-9.]+)\s*\{(.*?)\}\s*([A-Z_0-9.]*)\s*;", body, re.S):
        syms = re.findall(r"^\s*([a-z_0-9]+);", m.group(2).replace("global:", ""), re.M)
        nodes.append([m.group(1), syms, m.group(3) or None])
named = {s for n in nodes for s in n[1]}
for n in nodes:
    n[1] = sorted(s for s in n[1] if s in declared)
new = sorted(declared - named)
if current not in [n[0] for n in nodes]:
    nodes.append([current, [], nodes[-1][0] if nodes else None])
for n in nodes:
    if n[0] == current:
        n[1] = sorted(set(n[1]) | set(new))

out = ["/* SPDX-License-Identifier: BSD-3-Clause */",
       "/* The linker version script of libeddy.so and libeddy_reactive.so (docs/compatibility.md):",
       " * each release's new functions in a node of their own, inheriting the previous one; a",
       " * released node never changes. Written by scripts/abi-map.py from the EDDY_EXPORT",
       " * declarations of include/eddy/; a name a library does not define is ignored by it. */"]
for i, (name, syms, parent) in enumerate(nodes):
    out.append("%s {" % name)
    out.append("  global:")
    out.extend("    %s;" % s for s in syms)
    if i == 0:
        out.append("  local:")
        out.append("    *;")
    out.append("}%s;" % (" " + parent if parent else ""))
text = "\n".join(out) + "\n"
old = open(mapfile).read() if os.path.exists(mapfile) else ""
if "--check" in sys.argv[1:]:
    if old != text:
        sys.stderr.write("cmake/eddy.map does not name exactly the exported functions of "
                         "include/eddy: run scripts/abi-map.py\n")
        sys.exit(1)
    print("cmake/eddy.map names every exported function (%d)" % len(declared))
else:
    if old != text:
        open(mapfile, "w").write(text)
    print("cmake/eddy.map: %d functions, %d new in %s" % (len(declared), len(new), current))
