#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Metrics for Prometheus, end to end with Debian's prometheus package (scripts/install-deps.sh):
#   1. a redis-server of its own (tests/redis-fixture.sh on a free port) with a namespace holding
#      a group with pending entries and lag, a group whose name needs escaping, and a responder;
#   2. `eddy stats --prometheus` is accepted by `promtool check metrics` and has the figures, and
#      so is a bus's own document (bus_prometheus: eddy_bus_stats_prometheus and the reactive
#      twin's, with request names that need escaping);
#   3. `eddy exporter --listen 127.0.0.1:0` answers GET /metrics (accepted by promtool; 404
#      elsewhere, 405 for POST);
#   4. a real Prometheus scrapes it every second and answers queries for the group's lag (and
#      for it again after more events are published), its pending entries under the escaped
#      name, and the responder's registration;
#   5. with Redis stopped the exporter answers eddy_up 0, and it stops on SIGTERM with exit 0.
# Every wait polls a condition under one overall deadline; nothing is skipped.
#   tests/cli/prometheus.sh EDDY BUS_PROMETHEUS   (ctest: cli.prometheus)
set -euo pipefail
eddy=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
bus_prometheus=${2:?usage: prometheus.sh EDDY BUS_PROMETHEUS}
src=$(cd "$(dirname "$0")/../.." && pwd)
for tool in promtool prometheus curl python3 redis-cli redis-server; do
    command -v "$tool" >/dev/null || {
        echo "FAIL: $tool is not installed (scripts/install-deps.sh)" >&2
        exit 1
    }
done
work=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    "$src/tests/redis-fixture.sh" stop "$work/redis" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM # ctest's timeout: clean up too
fail() {
    echo "FAIL: $*" >&2
    for f in "$work"/*.log "$work"/*.out; do
        [ -f "$f" ] && { echo "--- $f" >&2; tail -n 40 "$f" >&2; }
    done
    exit 1
}
deadline=$((SECONDS + 120)) # for every wait below together
# poll DESCRIPTION COMMAND...: runs the command until it succeeds, or fails past the deadline.
poll() {
    local what=$1
    shift
    until "$@"; do
        ((SECONDS < deadline)) || fail "timed out waiting for $what"
        sleep 0.1
    done
}

"$src/tests/redis-fixture.sh" start "$work/redis" >/dev/null
url=$(cat "$work/redis/url")
port=${url##*:}
ns="prom$$"
ed() { "$eddy" --url "$url" --ns "$ns" "$@"; }
# In the background, the tool itself (not a subshell running it): its pid is $!.
ed_bg() { exec "$eddy" --url "$url" --ns "$ns" "$@"; }
rcli() { redis-cli -p "$port" "$@"; }

# ---- 1. the namespace ----
stream="{$ns}:s:orders.created"
ed pub orders.created --repeat 5 --data '{"n": 1}' >/dev/null
rcli XGROUP CREATE "$stream" workers 0 >/dev/null
rcli XREADGROUP GROUP workers w1 COUNT 2 STREAMS "$stream" '>' >/dev/null # 2 pending, lag 3
odd='odd "quoted" \ group'
rcli XGROUP CREATE "$stream" "$odd" '$' >/dev/null
ed_bg respond svc.echo --group echoers >"$work/respond.out" 2>"$work/respond.log" &
pids+=($!)
registered() { ed registry --json 2>/dev/null | grep -q '"echoers"'; }
poll "the responder's registration" registered

# ---- 2. eddy stats --prometheus ----
ed stats --prometheus >"$work/stats.txt"
promtool check metrics <"$work/stats.txt" >"$work/promtool.log" 2>&1 ||
    fail "promtool check metrics refused eddy stats --prometheus: $(cat "$work/promtool.log")"
has() { # file line: the line is in the file, exactly
    grep -qxF -- "$2" "$1" || fail "no line '$2' in $1: $(cat "$1")"
}
has "$work/stats.txt" "eddy_group_lag{namespace=\"$ns\",group=\"workers\"} 3"
has "$work/stats.txt" "eddy_group_pending{namespace=\"$ns\",group=\"workers\"} 2"
has "$work/stats.txt" "eddy_subject_length{namespace=\"$ns\",subject=\"orders.created\"} 5"
has "$work/stats.txt" "eddy_subject_group_consumers{namespace=\"$ns\",subject=\"orders.created\",group=\"odd \\\"quoted\\\" \\\\ group\"} 0"
has "$work/stats.txt" "eddy_registry_subscriptions{namespace=\"$ns\",group=\"echoers\",kind=\"responder\"} 1"
has "$work/stats.txt" "# TYPE eddy_group_lag gauge"
ed stats --prometheus 'nothing.*' >"$work/none.txt"
has "$work/none.txt" "eddy_subjects{namespace=\"$ns\"} 0"
if ed stats --prometheus --json >/dev/null 2>&1; then fail "--prometheus with --json was accepted"; fi
for kind in blocking reactive; do
    "$bus_prometheus" "$kind" >"$work/bus-$kind.txt" || fail "bus_prometheus $kind failed"
    promtool check metrics <"$work/bus-$kind.txt" >"$work/promtool.log" 2>&1 ||
        fail "promtool check metrics refused a $kind bus's document: $(cat "$work/promtool.log")"
done
grep -qE '^eddy_subscription_handled_total\{.*subscription="work",group="workers"\} 3$' \
    "$work/bus-blocking.txt" || fail "the bus's document: $(cat "$work/bus-blocking.txt")"
grep -qF 'request="odd \"name\" \\ with\na newline"} 0' "$work/bus-blocking.txt" ||
    fail "the bus's document: a request name escaped: $(cat "$work/bus-blocking.txt")"
grep -qE '^eddy_bus_broker_up\{.*\} 0$' "$work/bus-reactive.txt" ||
    fail "the reactive bus's document: $(cat "$work/bus-reactive.txt")"

# ---- 3. eddy exporter ----
# Refused at the start, exit 2 (bounded: a bad one that served would not stop by itself).
for bad in "--listen 127.0.0.1" "--listen 127.0.0.1:70000" "--listen :9464" \
    "--listen 127.0.0.1:0 bad..pattern" ""; do
    rc=0
    # shellcheck disable=SC2086 # the words of $bad are the arguments
    timeout 30 "$eddy" --url "$url" --ns "$ns" exporter $bad >/dev/null 2>&1 || rc=$?
    [ "$rc" = 2 ] || fail "eddy exporter $bad: exit $rc, want 2"
done
ed_bg exporter --listen 127.0.0.1:0 >"$work/exporter.out" 2>"$work/exporter.log" &
exporter=$!
pids+=("$exporter")
serving() { grep -q '^eddy exporter: serving http://127.0.0.1:[0-9]*/metrics' "$work/exporter.out"; }
poll "the exporter to listen" serving
metrics=$(grep -o 'http://127.0.0.1:[0-9]*/metrics' "$work/exporter.out")
target=${metrics#http://}
target=${target%/metrics}
code=$(curl -s -o "$work/scrape.txt" -D "$work/headers.txt" -w '%{http_code}' "$metrics")
[ "$code" = 200 ] || fail "GET /metrics: HTTP $code"
grep -qi '^content-type: text/plain; version=0.0.4' "$work/headers.txt" ||
    fail "GET /metrics: content type: $(cat "$work/headers.txt")"
promtool check metrics <"$work/scrape.txt" >"$work/promtool.log" 2>&1 ||
    fail "promtool check metrics refused /metrics: $(cat "$work/promtool.log")"
has "$work/scrape.txt" "eddy_up{namespace=\"$ns\"} 1"
has "$work/scrape.txt" "eddy_group_lag{namespace=\"$ns\",group=\"workers\"} 3"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://$target/")
[ "$code" = 404 ] || fail "GET /: HTTP $code, want 404"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST --data x=1 "$metrics")
[ "$code" = 405 ] || fail "POST /metrics: HTTP $code, want 405"

# ---- 4. a real Prometheus ----
cat >"$work/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: eddy
    static_configs:
      - targets: ['$target']
EOF
promtool check config "$work/prometheus.yml" >/dev/null || fail "promtool refused the config"
api=
for _ in $(seq 1 20); do # a free port: one nothing answers on, and that prometheus could bind
    pport=$(((RANDOM % 20000) + 30000))
    (exec 3<>/dev/tcp/127.0.0.1/$pport) 2>/dev/null && continue
    prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" \
        --web.listen-address="127.0.0.1:$pport" --log.level=warn >"$work/prometheus.log" 2>&1 &
    prom=$!
    ready() { ! kill -0 "$prom" 2>/dev/null || curl -sf "http://127.0.0.1:$pport/-/ready" >/dev/null; }
    poll "prometheus to start" ready
    if kill -0 "$prom" 2>/dev/null; then
        pids+=("$prom")
        api="http://127.0.0.1:$pport/api/v1/query"
        break
    fi
    wait "$prom" 2>/dev/null || true
done
[ -n "$api" ] || fail "could not start prometheus"
# query PROMQL WANT: Prometheus answers the query with exactly one series of value WANT.
query() {
    curl -sf --get --data-urlencode "query=$1" "$api" >"$work/query.json" 2>/dev/null || return 1
    python3 - "$work/query.json" "$2" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
r = doc.get("data", {}).get("result", [])
sys.exit(0 if doc.get("status") == "success" and len(r) == 1 and r[0]["value"][1] == sys.argv[2] else 1)
PY
}
lag="eddy_group_lag{job=\"eddy\",namespace=\"$ns\",group=\"workers\"}"
poll "Prometheus to answer $lag = 3" query "$lag" 3
poll "Prometheus to see up = 1" query "up{job=\"eddy\"}" 1
# The escaped name comes back as it is in Redis.
poll "Prometheus to answer the odd group's pending" \
    query "eddy_group_pending{namespace=\"$ns\",group=\"odd \\\"quoted\\\" \\\\ group\"}" 0
poll "Prometheus to answer the responder's registration" \
    query "eddy_registry_subscriptions{namespace=\"$ns\",group=\"echoers\",kind=\"responder\"}" 1
# Each scrape reads the namespace afresh: two more events, a lag of 5.
ed pub orders.created --repeat 2 --data '{"n": 2}' >/dev/null
poll "Prometheus to answer $lag = 5" query "$lag" 5

# ---- 5. Redis down, then SIGTERM ----
"$src/tests/redis-fixture.sh" stop "$work/redis"
down() {
    curl -sf "$metrics" >"$work/down.txt" && grep -qxF "eddy_up{namespace=\"$ns\"} 0" "$work/down.txt"
}
poll "eddy_up 0 with Redis stopped" down
promtool check metrics <"$work/down.txt" >"$work/promtool.log" 2>&1 ||
    fail "promtool check metrics refused the eddy_up 0 answer: $(cat "$work/promtool.log")"
grep -q '^eddy_group_lag' "$work/down.txt" && fail "figures served with Redis stopped"
kill -TERM "$exporter"
stopped() { ! kill -0 "$exporter" 2>/dev/null; }
poll "the exporter to stop on SIGTERM" stopped
rc=0
wait "$exporter" || rc=$?
[ "$rc" = 0 ] || fail "the exporter exited $rc on SIGTERM"
grep -q "cannot read namespace $ns" "$work/exporter.log" || fail "the exporter did not say Redis was down"
echo "prometheus: all checks pass"
