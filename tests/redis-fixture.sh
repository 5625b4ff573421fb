#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# CTest fixture: start a private redis-server on a free 127.0.0.1 port, or stop it.
#   redis-fixture.sh start DIR   writes DIR/url (redis://127.0.0.1:PORT) and DIR/pid
#   redis-fixture.sh stop DIR
# Fails loudly when redis-server is missing: a test that needs Redis never skips.
set -euo pipefail
cmd=$1 dir=$2
case "$cmd" in
start)
    command -v redis-server >/dev/null || { echo "redis-server not found" >&2; exit 1; }
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd) # redis-server enters --dir before it opens --logfile and --pidfile
    "$0" stop "$dir" || true
    for _ in $(seq 1 50); do
        port=$(( (RANDOM % 20000) + 30000 ))
        (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && continue  # in use
        redis-server --bind 127.0.0.1 --port "$port" --save '' --appendonly no \
            --dir "$dir" --daemonize yes --pidfile "$dir/pid" --logfile "$dir/log" \
            --protected-mode yes --maxclients 4000 || continue
        for _ in $(seq 1 100); do
            if redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null | grep -q PONG; then
                echo "redis://127.0.0.1:$port" >"$dir/url"
                echo "redis fixture on port $port"
                exit 0
            fi
            sleep 0.05
        done
        "$0" stop "$dir" || true
    done
    echo "could not start redis-server" >&2; cat "$dir/log" >&2 || true; exit 1 ;;
stop)
    if [ -f "$dir/pid" ]; then
        pid=$(cat "$dir/pid")
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
        rm -f "$dir/pid"
    fi
    rm -f "$dir/url" ;;
*) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
