#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds the libFuzzer targets with clang and runs each for a short while (default 30 s):
# a smoke run for CI that catches a decoder crash on the first inputs it meets. Longer runs:
#   EDDY_FUZZ_SECONDS=600 scripts/fuzz-smoke.sh
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${EDDY_FUZZ_SECONDS:-30}
scripts/install-deps.sh clang-14 libclang-rt-14-dev >/dev/null
dir=build-fuzz
CC=clang-14 cmake -S . -B "$dir" -DEDDY_TESTS=ON -DEDDY_FUZZ=ON -DEDDY_SHARED=OFF -DEDDY_EXAMPLES=OFF -DEDDY_BENCH=OFF >/dev/null
cmake --build "$dir" -j"$(nproc)" --target fuzz_entry fuzz_msgpack fuzz_data_reader fuzz_resp_scan fuzz_event_json fuzz_cli_json >/dev/null
for target in fuzz_entry fuzz_msgpack fuzz_data_reader fuzz_resp_scan fuzz_event_json fuzz_cli_json; do
    corpus="$dir/corpus-$target"
    mkdir -p "$corpus"
    # tests/fuzz/seeds/<target>: inputs that once failed, run first every time (read only).
    seeds=()
    [ -d "tests/fuzz/seeds/$target" ] && seeds=("tests/fuzz/seeds/$target")
    echo "fuzzing $target for ${seconds}s"
    log="$dir/$target.log"
    # libFuzzer once ran on for 14 minutes past -max_total_time here (not reproduced since): a
    # run that overruns by a minute is stopped with SIGINT. It then passes only when libFuzzer
    # reported no failure (no crash, leak, timeout or sanitizer report, nothing written out).
    rc=0
    timeout -s INT -k 30 $((seconds + 60)) "$dir/tests/fuzz/$target" -max_total_time="$seconds" \
        -print_final_stats=1 "$corpus" "${seeds[@]}" >"$log" 2>&1 || rc=$?
    if [ "$rc" -eq 124 ] &&
        ! grep -qE "^==[0-9]+==ERROR|deadly signal|Test unit written|SUMMARY: |ALARM: " "$log"; then
        echo "$target ran past its ${seconds}s and was stopped (no failure reported)"
    elif [ "$rc" -ne 0 ]; then
        tail -n 60 "$log" >&2
        echo "$target found a failure (crash input saved in the working directory)" >&2
        exit 1
    fi
    grep -E "^stat::number_of_executed_units" "$log"
done
