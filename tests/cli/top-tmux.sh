#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# eddy top on a terminal (a detached tmux session of a fixed size, read with capture-pane and
# driven with send-keys) and off one (a pipe), against the test Redis while a publisher, a
# consumer and a responder run: the rates show, keys sort (the heading marks the column, the
# rows change order), a narrower terminal cuts the lines, q and Ctrl-C quit and give the
# terminal back as it was (mode, cursor, main screen); piped, it prints plain lines without
# escapes, one per subject and group per refresh.
#   tests/cli/top-tmux.sh EDDY   (ctest: cli.top_tmux; the redis fixture's EDDY_TEST_REDIS_DIR)
set -euo pipefail
eddy=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
command -v tmux >/dev/null || { echo "FAIL: tmux not found (scripts/install-deps.sh)" >&2; exit 1; }
command -v redis-cli >/dev/null || { echo "FAIL: redis-cli not found" >&2; exit 1; }
url=$(cat "${EDDY_TEST_REDIS_DIR:?the redis fixture}/url")
ns=top-$$-$RANDOM
work=$(mktemp -d)
sock=$work/tmux.sock
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    tmux -S "$sock" kill-server 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
failed=0
fail() {
    echo "FAIL: $*" >&2
    failed=1
}
export EDDY_URL=$url EDDY_NS=$ns
tm() { tmux -S "$sock" "$@"; }
pane() { tm capture-pane -p -t "$1"; }

# Polls until the command succeeds (every 0.1 s, at most 60 s); on a timeout says what was
# awaited and shows the pane.
wait_for() { # what, target pane, command...
    local what=$1 target=$2
    shift 2
    for _ in $(seq 1 600); do
        "$@" && return 0
        sleep 0.1
    done
    fail "timed out waiting for: $what"
    echo "---- pane $target ----" >&2
    pane "$target" >&2 || true
    return 1
}

# The line number of a subject's row in a screen ($1), 0 when it is not there.
row_of() { awk -v s="$2" '$1 == s && !n { n = NR } END { print n + 0 }' <<<"$1"; }
# True when subject $2's row comes before subject $3's in the screen of pane $1.
above() {
    local screen a b
    screen=$(pane "$1")
    a=$(row_of "$screen" "$2")
    b=$(row_of "$screen" "$3")
    [ "${a:-0}" -gt 0 ] && [ "${b:-0}" -gt 0 ] && [ "$a" -lt "$b" ]
}
# True when the screen of pane $1 shows t.zulu's workers row with both rates above zero.
rates_shown() {
    pane "$1" | awk '$1 == "t.zulu" && $2 == "workers" && $3 + 0 > 0 && $4 + 0 > 0 { ok = 1 }
        END { exit !ok }'
}
shows() { pane "$1" | grep -qF -- "$2"; }

# ---- the namespace -----------------------------------------------------------------------
# t.alpha: 300 entries and a group that read none (lag 300, rates 0). t.zulu: a publisher
# (20 a second, through a fifo into one `eddy pub -`) and a consumer group that keeps up.
seq 300 | sed 's/.*/{"n": &}/' | "$eddy" pub t.alpha - >/dev/null
redis-cli -u "$url" XGROUP CREATE "{$ns}:s:t.alpha" backlog 0 >/dev/null
mkfifo "$work/feed"
"$eddy" pub t.zulu - <"$work/feed" >/dev/null &
pids+=($!)
(while :; do echo '{"n": 1}'; sleep 0.05; done >"$work/feed") &
pids+=($!)
"$eddy" tail t.zulu --group workers >/dev/null &
pids+=($!)
"$eddy" respond 'calc.>' >/dev/null &
pids+=($!)

# ---- on a terminal: q ----------------------------------------------------------------------
# The pane's shell notes the terminal's mode before and after, and top's exit code.
run_top() { # window name, then the shell command around it
    echo "stty -g >$work/$1.before; $eddy top --interval 0.5; echo \$? >$work/$1.exit;" \
        "stty -g >$work/$1.after; exec sleep 600"
}
tm new-session -d -x 160 -y 40 -s top "$(run_top q)"
wait_for "t.zulu's rates" top rates_shown top
wait_for "the sort heading" top shows top "sort: subject"
shows top "SUBJECT*" || fail "the sorted column (subject) is not marked: SUBJECT*"
[ "$(tm display -p -t top '#{alternate_on}')" = 1 ] || fail "top is not on the alternate screen"
above top t.alpha t.zulu || fail "sorted by subject: t.alpha is not above t.zulu"
pane top | grep -q '^t\.alpha  *backlog  *0\.0  *0\.0  *300 ' ||
    fail "t.alpha's backlog row: rates 0.0, lag 300"
wait_for "the responder" top shows top "calc.>"
shows top "RESPONDER" || fail "no RESPONDER section"

tm send-keys -t top i
wait_for "sort by rate in" top shows top "sort: in"
shows top "IN/s*" || fail "the sorted column (in) is not marked: IN/s*"
wait_for "t.zulu (publishing) above t.alpha" top above top t.zulu t.alpha

tm send-keys -t top l
wait_for "sort by lag" top shows top "sort: lag"
shows top "LAG*" || fail "the sorted column (lag) is not marked: LAG*"
wait_for "t.alpha (lag 300) above t.zulu" top above top t.alpha t.zulu

# A narrower terminal: every line is cut to its width (the keys line is longer).
tm resize-window -t top -x 90 -y 40
long_lines() { [ "$(pane top | awk 'length > 90' | wc -l)" -eq 0 ]; }
wait_for "lines cut to 90 columns" top long_lines
wait_for "the view at 90 columns" top shows top "sort: lag"

tm send-keys -t top q
wait_for "top to exit on q" top test -s "$work/q.exit"
[ "$(cat "$work/q.exit")" = 0 ] || fail "q: exit code $(cat "$work/q.exit"), want 0"
wait_for "the shell's stty after q" top test -s "$work/q.after"
cmp -s "$work/q.before" "$work/q.after" || fail "q: the terminal's mode was not restored"
[ "$(tm display -p -t top '#{alternate_on}')" = 0 ] || fail "q: still on the alternate screen"
[ "$(tm display -p -t top '#{cursor_flag}')" = 1 ] || fail "q: the cursor is still hidden"
shows top "sort:" && fail "q: the main screen shows top's view"

# ---- on a terminal: Ctrl-C ---------------------------------------------------------------
tm new-window -d -t top -n intr "$(run_top intr)"
wait_for "top in the second window" top:intr shows top:intr "sort: subject"
tm send-keys -t top:intr C-c
wait_for "top to exit on Ctrl-C" top:intr test -s "$work/intr.exit"
[ "$(cat "$work/intr.exit")" = 0 ] || fail "Ctrl-C: exit code $(cat "$work/intr.exit"), want 0"
wait_for "the shell's stty after Ctrl-C" top:intr test -s "$work/intr.after"
cmp -s "$work/intr.before" "$work/intr.after" || fail "Ctrl-C: the terminal's mode was not restored"
[ "$(tm display -p -t top:intr '#{alternate_on}')" = 0 ] ||
    fail "Ctrl-C: still on the alternate screen"

# ---- not a terminal ----------------------------------------------------------------------
"$eddy" top --count 2 --interval 0.5 | cat >"$work/plain"
if grep -q $'\x1b' "$work/plain"; then fail "piped: escape codes in the output"; fi
times=$(awk '{ print $1 }' "$work/plain" | sort -u | wc -l)
[ "$times" -eq 2 ] || fail "piped --count 2: $times distinct timestamps, want 2"
first='^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z subject=t\.alpha group=backlog in=- out=- lag=300 '
grep -Eq "$first" "$work/plain" || fail "piped: no first t.alpha line (rates -, lag 300)"
zulu=$(grep -c 'subject=t\.zulu group=workers ' "$work/plain" || true)
[ "$zulu" -eq 2 ] || fail "piped: $zulu t.zulu lines, want one per refresh"
grep 'subject=t\.zulu group=workers ' "$work/plain" | tail -1 |
    grep -Eq ' in=[0-9.]+ out=[0-9.]+ ' ||
    fail "piped: the second refresh has no rates for t.zulu"
grep -q 'responder=eddy-respond pattern=calc.>' "$work/plain" || fail "piped: no responder line"
"$eddy" --json top --count 1 | python3 -c '
import json, sys
lines = [json.loads(l) for l in sys.stdin]
rows = {(l.get("subject"), l.get("group")): l for l in lines if "subject" in l}
assert rows[("t.alpha", "backlog")]["lag"] == 300, rows
assert rows[("t.zulu", "workers")]["consumers"] == 1, rows
assert any(l.get("responder") == "eddy-respond" for l in lines), lines
' || fail "--json: not the JSON lines expected"

# ---- usage and failures ------------------------------------------------------------------
rc=0; "$eddy" top --sort nothing >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 2 ] || fail "--sort nothing: exit $rc, want 2"
rc=0; "$eddy" top --interval 0 >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 2 ] || fail "--interval 0: exit $rc, want 2"
rc=0; "$eddy" --url redis://127.0.0.1:1 top --count 1 >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 3 ] || fail "an unreachable server: exit $rc, want 3"
"$eddy" top --help | grep -q -- "--interval SECONDS" || fail "top --help does not name --interval"

[ "$failed" -eq 0 ] && echo "top-tmux: all checks passed"
exit "$failed"
