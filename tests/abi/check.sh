#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The ABI promise of docs/compatibility.md, checked against the last stored release baseline
# (tests/abi/<release>/, written by scripts/abi-baseline.sh):
#   (a) old programs, new library: the baseline's programs (its examples, a few test programs
#       and tests/abi/program.c, stored in tests/abi/<release>/programs) compiled against its
#       header snapshot run against the shared libraries of BUILD_DIR;
#   (b) abidiff between the baseline's ABI (abidw of the release's libraries) and BUILD_DIR's
#       reports nothing but added functions and the changes tests/abi/suppressions.abignore
#       allows (a field appended to an option struct that records its size);
#   (c) a scratch copy of this tree with one more field at the end of eddy_settings (default
#       777, and 777 its only valid value, so a library that read the program's bytes past its
#       struct would refuse them) runs the baseline's program, which does not know the field:
#       the library sees it at its default;
#   (d) in the same copy eddy_consumer_stats has one more field too, with a new default
#       version of eddy_bus_consumer_stats (tests/abi/grow-output.py): the program, linked to
#       the old version, finds the bytes after its struct untouched.
# Usage: tests/abi/check.sh [BUILD_DIR]   (default build: a RelWithDebInfo build with the
# shared libraries, as scripts/test.sh makes). Needs abigail-tools, criterion, python3. CI.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
cc=${CC:-cc}
base=$(ls -d "$src"/tests/abi/[0-9]*/ | sort -V | tail -n 1)
base=${base%/}
release=$(basename "$base")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for lib in libeddy libeddy_reactive; do
    [ -f "$build/$lib.so" ] || { echo "$build/$lib.so: build the shared libraries first" >&2; exit 1; }
done

echo "-- (b) abidiff against the $release baseline"
fail=0
for lib in libeddy libeddy_reactive; do
    abidw --no-corpus-path --no-comp-dir-path --no-show-locs --headers-dir "$src/include/eddy" \
        --drop-private-types --out-file "$work/$lib.abi" "$build/$lib.so"
    set +e
    abidiff --no-added-syms --suppressions "$src/tests/abi/suppressions.abignore" \
        "$base/$lib.abi" "$work/$lib.abi" >"$work/$lib.diff" 2>&1
    rc=$?
    set -e
    if [ "$rc" != 0 ]; then
        echo "$lib.so: ABI change against $release (abidiff exit $rc):" >&2
        cat "$work/$lib.diff" >&2
        fail=1
    else
        added=$(abidiff "$base/$lib.abi" "$work/$lib.abi" | grep -c "^  \[A\]" || true)
        echo "$lib.so: compatible with $release ($added functions added)"
    fi
done

echo "-- (a) programs built against the $release headers, run against this build"
msgpack=$(pkg-config --cflags --libs msgpack)
criterion=$(pkg-config --cflags --libs criterion)
old() { # name source libs...: compile against the baseline headers, link with BUILD_DIR's
    local name=$1 source=$2
    shift 2
    if ! "$cc" -std=c11 -D_POSIX_C_SOURCE=200809L -o "$work/$name" "$source" \
        -I"$base/include" -L"$build" "$@" -pthread 2>"$work/$name.cc"; then
        echo "$name (built against $release) does not link with this build:" >&2
        tail -n 30 "$work/$name.cc" >&2
        fail=1
    fi
}
run() { # name args...: run against BUILD_DIR's libraries
    local name=$1
    shift
    [ -x "$work/$name" ] || return 0 # its build failed, said above
    if ! LD_LIBRARY_PATH="$build" timeout 120 "$work/$name" "$@" >"$work/$name.out" 2>&1; then
        echo "$name (built against $release) fails against this build:" >&2
        tail -n 30 "$work/$name.out" >&2
        fail=1
    else
        echo "$name: ok"
    fi
}
shopt -s nullglob
for p in "$base"/programs/examples/*.c; do
    name=example_$(basename "$p" .c)
    old "$name" "$p" -leddy_reactive -lev $msgpack
    run "$name"
done
for p in "$base"/programs/tests/*.c; do
    name=$(basename "$p" .c)
    old "$name" "$p" -leddy_reactive -lev $msgpack $criterion
    run "$name" --jobs=2
done
old program "$base/programs/program.c" -leddy
[ -x "$work/program" ] || { echo "ABI check: the $release program does not build" >&2; exit 1; }
run program

echo "-- (c, d) one more field in eddy_settings and in eddy_consumer_stats: a scratch library," \
    "the $release program unchanged"
scratch=$work/scratch
mkdir -p "$scratch"
(cd "$src" && git ls-files -z --cached --others --exclude-standard | xargs -0 tar --ignore-failed-read -cf - 2>/dev/null) |
    tar -xf - -C "$scratch"
python3 - "$scratch" <<'PY'
import sys
root = sys.argv[1]
bus = root + "/include/eddy/bus.h"
s = open(bus).read()
anchor = "} eddy_settings;"
assert s.count(anchor) == 1, "bus.h: where does eddy_settings end?"
s = s.replace(anchor, "    /** Scratch: a field added after the release. */\n"
              "    unsigned abi_probe_ms;\n" + anchor)
open(bus, "w").write(s)
st = root + "/src/config/settings.c"
s = open(st).read()
start = s.index("static const eddy__opt settings_rows[] = {")
end = s.index("\n};", start)
row = ('\n    ROW(abi_probe_ms, UNSIGNED, NO, NULL, 777, 777, 777, 0, "ms", NULL, NULL,'
       ' "scratch: a field added after the release"),')
s = s[:end] + row + s[end:]
open(st, "w").write(s)
PY
# (d) in the same copy: eddy_consumer_stats grows the way docs/compatibility.md says a struct
# the library fills grows (a new default version of its function, the old one kept).
"$src/tests/abi/grow-output.py" "$scratch"
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache); fi
cmake -S "$scratch" -B "$scratch/build" -DEDDY_TESTS=OFF -DEDDY_EXAMPLES=OFF -DEDDY_CLI=OFF \
    -DEDDY_BENCH=OFF "${launcher[@]}" >/dev/null
cmake --build "$scratch/build" --target eddy_shared -j"$(nproc)" >/dev/null
if ! LD_LIBRARY_PATH="$scratch/build" EDDY_ABI_PROBE=abi_probe_ms=777 timeout 120 \
    "$work/program" >"$work/scratch.out" 2>&1; then
    echo "the $release program fails against a library with one more field:" >&2
    cat "$work/scratch.out" >&2
    fail=1
else
    echo "scratch library with eddy_settings.abi_probe_ms and eddy_consumer_stats.abi_probe" \
        "(eddy_bus_consumer_stats@@EDDY_0.4): $(cat "$work/scratch.out")"
fi
# And the probe can fail: against this build's library (no such field) it must.
if LD_LIBRARY_PATH="$build" EDDY_ABI_PROBE=abi_probe_ms=777 "$work/program" >/dev/null 2>&1; then
    echo "the probe passed against a library without the field: it proves nothing" >&2
    fail=1
fi
[ "$fail" = 0 ] && echo "ABI check against $release: compatible"
exit "$fail"
