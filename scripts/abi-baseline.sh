#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Stores the ABI baseline of this release, which tests/abi/check.sh compares every later build
# with (docs/compatibility.md). In one command:
#   1. cmake/eddy.map from the headers (scripts/abi-map.py: new functions into this release's
#      version node; released nodes untouched);
#   2. tests/abi/<version>/include/eddy: a snapshot of the public headers;
#   3. tests/abi/<version>/programs: the programs tests/abi/check.sh builds against that
#      snapshot (the examples, a few public-API unit tests, tests/abi/program.c), as they are now;
#   4. tests/abi/<version>/libeddy.abi and libeddy_reactive.abi: abidw of the shared libraries
#      built from this tree (RelWithDebInfo, so with the DWARF abidw reads), public types only.
# Run it when a release's API is final (after the last merge before the tag), and commit what it
# wrote. Usage: scripts/abi-baseline.sh [BUILD_DIR]   (default build-abi; built from scratch
# when absent, with ccache when installed).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
cd "$src"
v() { sed -n "s/^#define EDDY_VERSION_$1 \([0-9]*\).*/\1/p" include/eddy/version.h; }
version="$(v MAJOR).$(v MINOR).$(v PATCH)"
build=${1:-$src/build-abi}
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache); fi
scripts/abi-map.py
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEDDY_SHARED=ON \
    -DEDDY_TESTS=OFF -DEDDY_EXAMPLES=OFF -DEDDY_CLI=OFF -DEDDY_BENCH=OFF -DEDDY_SANITIZE= \
    "${launcher[@]}" >/dev/null
cmake --build "$build" --target eddy_shared eddy_reactive_shared -j"$(nproc)" >/dev/null
dir=tests/abi/$version
rm -rf "$dir/include"
mkdir -p "$dir/include"
cp -r include/eddy "$dir/include/"
rm -rf "$dir/programs"
mkdir -p "$dir/programs/examples" "$dir/programs/tests"
cp examples/*.c "$dir/programs/examples/"
cp tests/abi/program.c "$dir/programs/"
# Unit tests that use the public headers only (and Criterion).
for t in test_event test_value test_capabilities test_headers; do
    cp "tests/unit/$t.c" "$dir/programs/tests/"
done
for lib in libeddy libeddy_reactive; do
    abidw --no-corpus-path --no-comp-dir-path --no-show-locs --headers-dir include/eddy \
        --drop-private-types --out-file "$dir/$lib.abi" "$build/$lib.so"
done
echo "ABI baseline of $version: cmake/eddy.map, $dir/include/eddy ($(ls "$dir/include/eddy" | wc -l)" \
    "headers), $dir/libeddy.abi, $dir/libeddy_reactive.abi"
