#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs one ThreadSanitizer harness: halts on the first report (exit code 66), shows the second
# stack of a lock-order inversion, and applies tsan.supp (third-party code only). When the
# TSan runtime cannot map its shadow memory because the kernel randomizes mmap addresses with
# more bits than LLVM 14's TSan allows ("FATAL: ThreadSanitizer: unexpected memory mapping"),
# the harness is run again with address randomization off for it alone (setarch -R).
set -uo pipefail
bin=$1; shift
here=$(cd "$(dirname "$0")" && pwd)
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$here/tsan.supp${TSAN_OPTIONS:+ $TSAN_OPTIONS}"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$bin" "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
if [ "$rc" -ne 0 ] && grep -q "unexpected memory mapping" "$log"; then
    echo "$(basename "$bin"): TSan cannot map its shadow memory with ASLR on; again under setarch -R"
    setarch "$(uname -m)" -R "$bin" "$@"
    rc=$?
fi
exit "$rc"
