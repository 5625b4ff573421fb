#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds eddy with warnings as errors and runs the whole test suite through ctest. The suite
# starts its own redis-server on a free 127.0.0.1 port and stops it afterwards.
#   EDDY_SANITIZE=address,undefined scripts/test.sh   a sanitizer build (in build-<sanitizers>)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh >/dev/null
san=${EDDY_SANITIZE:-}
dir=${EDDY_BUILD_DIR:-build${san:+-${san//,/-}}}
cmake -S . -B "$dir" -DEDDY_WERROR=ON -DEDDY_TESTS=ON -DEDDY_BENCH=ON -DEDDY_SANITIZE="$san" >/dev/null
cmake --build "$dir" -j"$(nproc)"
if [ -n "$san" ]; then
    export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
    export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
fi
# The fault suite (label "faults") runs in scripts/faults.sh.
cd "$dir" && ctest --output-on-failure -j2 -LE faults
