#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Peers: redis-py (Debian python3-redis) and ioredis (npm) doing eddy's publish and consume work
# (eddy's exact fields; XADD pipelined 256; XREADGROUP COUNT 256 with one XACK per batch) beside
# eddy (bench_peer_eddy, built with the benches) and raw hiredis doing the same at its best
# (bench_peer_hiredis: the most this server lets a client do), against one private redis-server
# on a free 127.0.0.1 port, in the same run. Each repetition runs the three clients in rotating order, each
# on fresh keys; figures are medians over the repetitions. Installs what it needs itself; not part
# of the test suite.
#   bench/peers/run.sh BUILD_DIR [-n N] [--reps R] [--pin]
# prints `peer <work> <client>=<x> eddy=<y> ratio=<eddy/peer>` for work publish and consume, for
# redis-py, ioredis and hiredis, and `# <work>: raw hiredis is <r>x <peer>` beside each peer.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:?usage: $0 BUILD_DIR [-n N] [--reps R] [--pin]}
shift
n=200000 reps=5 pin=0
while [ $# -gt 0 ]; do
    case $1 in
    -n) n=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --pin) pin=1; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
eddy_bin=$build/bench/bench_peer_eddy
hiredis_bin=$build/bench/bench_peer_hiredis
for b in "$eddy_bin" "$hiredis_bin"; do
    [ -x "$b" ] || { echo "no $b: build the benches first" >&2; exit 1; }
done

# Debian's python (the one python3-redis installs for), whatever python3 is first on PATH.
py=/usr/bin/python3
if ! $py -c 'import redis' 2>/dev/null; then
    apt-get update -qq >/dev/null && apt-get install -y -qq python3-redis >/dev/null
fi
if [ ! -d "$here/node_modules/ioredis" ]; then
    (cd "$here" && npm install --no-audit --no-fund --silent >/dev/null)
fi

client=() server=()
if [ $pin = 1 ]; then
    client=(taskset -c 0) server=(taskset -c 1)
    echo "placement client=cpu0 server=cpu1"
else
    echo "placement unpinned"
fi
port=$($py -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"${server[@]}" redis-server --bind 127.0.0.1 --port "$port" --save '' --appendonly no \
    --loglevel warning --logfile /dev/null &
server_pid=$!
trap 'kill $server_pid 2>/dev/null; wait $server_pid 2>/dev/null || true' EXIT
for _ in $(seq 100); do
    redis-cli -h 127.0.0.1 -p "$port" ping >/dev/null 2>&1 && break
    sleep 0.05
done
version=$(redis-cli -h 127.0.0.1 -p "$port" info server | sed -n 's/^redis_version:\([^\r]*\).*/\1/p')
echo "machine cpus=$(nproc) redis=$version reps=$reps n=$n"

declare -A runs # "<client> <work>" -> figures, one per repetition
clients=(eddy hiredis redis-py ioredis)
run_client() { # client rep
    local tag="peer$$-$1-$2"
    case $1 in
    eddy) "${client[@]}" "$eddy_bin" "redis://127.0.0.1:$port" "$n" "$tag" ;;
    hiredis) "${client[@]}" "$hiredis_bin" "redis://127.0.0.1:$port" "$n" "$tag" ;;
    redis-py) "${client[@]}" $py "$here/peer_redis.py" "$port" "$n" "$tag" ;;
    ioredis) "${client[@]}" node "$here/peer_ioredis.js" "$port" "$n" "$tag" ;;
    esac
}
for ((r = 0; r < reps; r++)); do
    for ((k = 0; k < ${#clients[@]}; k++)); do
        c=${clients[$(((r + k) % ${#clients[@]}))]}
        line=$(run_client "$c" "$r")
        echo "# rep $((r + 1)) $line"
        for work in publish consume; do
            v=$(sed -n "s/.* $work=\([0-9.]*\).*/\1/p" <<<"$line")
            runs["$c $work"]+="$v "
        done
        redis-cli -h 127.0.0.1 -p "$port" flushall >/dev/null
    done
done
median() { tr ' ' '\n' <<<"$1" | grep . | sort -g | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
for peer in redis-py ioredis hiredis; do
    for work in publish consume; do
        p=$(median "${runs[$peer $work]}")
        e=$(median "${runs[eddy $work]}")
        h=$(median "${runs[hiredis $work]}")
        awk -v w=$work -v c=$peer -v p="$p" -v e="$e" \
            'BEGIN {printf "peer %s %s=%.0f eddy=%.0f ratio=%.3f\n", w, c, p, e, e / p}'
        [ $peer = hiredis ] ||
            awk -v w=$work -v c=$peer -v p="$p" -v h="$h" \
                'BEGIN {printf "# %s: raw hiredis is %.2fx %s\n", w, h / p, c}'
    done
done
