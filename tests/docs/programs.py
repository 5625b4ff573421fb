#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Compiles and runs the complete C programs of eddy's documentation (ctest: docs.programs).

A program is a fenced block whose info string is `c` followed by the word `program` (other
words may follow or precede it, e.g. ```c getting-started program). When the next fenced block
is marked `output` (```text output), the program must print exactly that on stdout.

Each program is compiled with -std=c11 -Wall -Wextra -Werror against the libraries just built,
then run in a fresh directory with stdin from /dev/null, without EDDY_URL (so on memory://),
with a timeout; it must exit with status 0. The pages named in REQUIRED must hold at least one
program each, so that a misspelt marker cannot turn the test into nothing.

  programs.py --root SRC --work DIR --cc CC [--cflag F]... [--lib L]...
"""
import argparse
import os
import re
import subprocess
import sys

REQUIRED = ["README.md", "docs/getting-started.md", "docs/request-reply.md",
            "docs/store-and-feeds.md"]
TIMEOUT = 60  # seconds; a program that has not ended by then is stuck, not slow
FENCE = re.compile(r"^```(.*)$")


def blocks(path):
    """(line, info words, body) of each fenced block of a Markdown file."""
    out, info, body, start = [], None, [], 0
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            m = FENCE.match(line.rstrip("\n"))
            if info is None and m:
                info, body, start = m.group(1).split(), [], n
            elif info is not None and line.rstrip("\n") == "```":
                out.append((start, info, "".join(body)))
                info = None
            elif info is not None:
                body.append(line)
    if info is not None:
        sys.exit(f"{path}:{start}: a fenced block that never ends")
    return out


def programs(root, page):
    found = []
    bs = blocks(os.path.join(root, page))
    for i, (line, info, body) in enumerate(bs):
        if info[:1] == ["c"] and "program" in info[1:]:
            expected = None
            if i + 1 < len(bs) and "output" in bs[i + 1][1]:
                expected = bs[i + 1][2]
            found.append((f"{page}:{line}", body, expected))
    return found


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--cc", required=True)
    ap.add_argument("--cflag", action="append", default=[])
    ap.add_argument("--lib", action="append", default=[])
    a = ap.parse_args()
    pages = ["README.md"] + sorted(
        "docs/" + f for f in os.listdir(os.path.join(a.root, "docs")) if f.endswith(".md"))
    env = {k: v for k, v in os.environ.items() if k != "EDDY_URL"}
    failed, count = [], 0
    for page in pages:
        found = programs(a.root, page)
        if page in REQUIRED and not found:
            failed.append(f"{page}: no block marked ```c program")
        for name, body, expected in found:
            count += 1
            slug = re.sub(r"[^A-Za-z0-9]+", "_", name)
            d = os.path.join(a.work, slug)
            os.makedirs(d, exist_ok=True)
            src, exe = os.path.join(d, "prog.c"), os.path.join(d, "prog")
            with open(src, "w", encoding="utf-8") as f:
                f.write(body)
            cc = [a.cc, "-std=c11", "-Wall", "-Wextra", "-Werror", *a.cflag, src, "-o", exe,
                  *a.lib]
            r = subprocess.run(cc, capture_output=True, text=True)
            if r.returncode != 0:
                failed.append(f"{name}: does not compile:\n{r.stdout}{r.stderr}")
                continue
            try:
                r = subprocess.run([exe], cwd=d, env=env, stdin=subprocess.DEVNULL,
                                   capture_output=True, text=True, timeout=TIMEOUT)
            except subprocess.TimeoutExpired:
                failed.append(f"{name}: still running after {TIMEOUT} s")
                continue
            if r.returncode != 0:
                failed.append(f"{name}: exit status {r.returncode}\n{r.stdout}{r.stderr}")
            elif expected is not None and r.stdout != expected:
                failed.append(f"{name}: printed\n{r.stdout}instead of what the page shows\n"
                              f"{expected}")
            else:
                print(f"ok {name}" + (" (output as shown)" if expected is not None else ""))
    for f in failed:
        print(f"FAIL {f}", file=sys.stderr)
    print(f"{count} programs, {len(failed)} failures")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
