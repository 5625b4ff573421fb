#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs every bench of a build directory in sequence (builds nothing) and prints all their lines,
# so one command gives the before or after figures:
#   bench/run-all.sh BUILD_DIR [--pin] [--reps R] [--no-peers] [--rss [N]]
# --pin and --reps go to every bench; --rss adds the long flat-memory consume (bench_rss, N
# messages, default 5,000,000); --no-peers leaves out bench/peers/run.sh (redis-py, ioredis).
# Each bench starts and stops its own redis-server on a free 127.0.0.1 port. Every figure is a
# median of 5 repetitions unless --reps says otherwise, each ratio printed with the min and max
# of its per-repetition ratios; the load average and CPU count are printed before and after,
# so a reader can tell a quiet run from a busy one.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:?usage: $0 BUILD_DIR [--pin] [--reps R] [--no-peers] [--rss [N]]}
shift
common=() peers=1 rss=0 rss_n=5000000
while [ $# -gt 0 ]; do
    case $1 in
    --pin) common+=(--pin); shift ;;
    --reps) common+=(--reps "$2"); shift 2 ;;
    --no-peers) peers=0; shift ;;
    --rss)
        rss=1; shift
        if [[ ${1:-} =~ ^[0-9]+$ ]]; then rss_n=$1; shift; fi ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
machine_line() {
    echo "machine $1 cpus=$(nproc) loadavg=$(cut -d' ' -f1-3 /proc/loadavg) at=$(date -u +%FT%TZ)"
}
# A build with tests on compiles the allocation fault injection and the feed's asserts into the
# library (CMakeLists.txt, EDDY_TESTS): its eddy figures are not the shipped library's.
if grep -q '^EDDY_TESTS:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
    echo "warning: $build has EDDY_TESTS=ON (fault injection compiled in); for figures to" \
        "compare, build with -DEDDY_TESTS=OFF -DEDDY_BENCH=ON"
fi
machine_line before
started=$(date +%s)
for b in bench_pubsub bench_reqrep bench_latency bench_replay bench_store bench_domain bench_idle bench_wait \
    bench_cluster bench_subs; do
    echo "== $b"
    began=$(date +%s)
    "$build/bench/$b" "${common[@]}"
    echo "elapsed_s $b $(($(date +%s) - began))"
done
if [ $rss = 1 ]; then
    echo "== bench_rss"
    "$build/bench/bench_rss" "${common[@]}" -n "$rss_n"
fi
if [ $peers = 1 ]; then
    echo "== peers"
    peer_opts=()
    for o in "${common[@]}"; do peer_opts+=("$o"); done
    "$here/peers/run.sh" "$build" "${peer_opts[@]}"
fi
machine_line after
echo "elapsed_s $(($(date +%s) - started))"
