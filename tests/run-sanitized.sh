#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs one test binary of a sanitizer build so that leaks fail it. Criterion passes a test
# whose worker leaks, and its own runner leaks a few bytes at exit; so workers run with
# --no-early-exit (LeakSanitizer then checks each of them), reports go to files, and a report
# fails the test when any frame below the allocator names a function (Criterion's own frames
# carry no symbols).
set -uo pipefail
bin=$1; shift
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}log_path=$logs/lsan:exitcode=0"
"$bin" --no-early-exit "$@"
rc=$?
leaked=0
for f in "$logs"/lsan*; do
    [ -e "$f" ] || continue
    if grep -E '^ +#[1-9][0-9]* .* in ' "$f" >/dev/null; then
        cat "$f" >&2
        leaked=1
    fi
done
if [ $leaked -ne 0 ]; then
    echo "memory leaked (see the LeakSanitizer reports above)" >&2
    exit 1
fi
exit $rc
