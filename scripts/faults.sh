#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds eddy's tests and runs the fault suite (tests/faults) through ctest: its own
# redis-server per scenario, killed, restarted and stopped, on both front ends. It prints the
# FIG lines of each scenario. The fast profile (the default, and CI's) takes a few minutes on
# 2 cores; scripts/test.sh does not run it.
#   EDDY_FAULTS_PROFILE=long scripts/faults.sh   bigger counts, more kills
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh >/dev/null
dir=${EDDY_BUILD_DIR:-build}
cmake -S . -B "$dir" -DEDDY_WERROR=ON -DEDDY_TESTS=ON -DEDDY_BENCH=ON >/dev/null
cmake --build "$dir" -j"$(nproc)" --target fault_suite fault_worker
cd "$dir" && ctest --output-on-failure --verbose -L faults
