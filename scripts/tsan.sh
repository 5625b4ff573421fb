#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds eddy and the ThreadSanitizer harnesses (tests/tsan) with clang-14
# (-fsanitize=thread -g -O1) in build-tsan, and runs each harness on memory:// and on a private
# redis-server. Criterion aborts at start under TSan, so these are plain programs, and the
# Criterion suite is not built here. Any TSan report fails the run (halt_on_error=1).
#   EDDY_TSAN_BUILD_DIR=/tmp/b scripts/tsan.sh   another build directory
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh clang-14 libclang-rt-14-dev >/dev/null
dir=${EDDY_TSAN_BUILD_DIR:-build-tsan}
CC=clang-14 cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS="-O1" \
    -DEDDY_SANITIZE=thread -DEDDY_TSAN_HARNESS=ON -DEDDY_WERROR=ON \
    -DEDDY_TESTS=OFF -DEDDY_EXAMPLES=OFF -DEDDY_BENCH=OFF >/dev/null
cmake --build "$dir" -j"$(nproc)" --target tsan_harnesses >/dev/null
cd "$dir" && ctest -L tsan --output-on-failure -j4
