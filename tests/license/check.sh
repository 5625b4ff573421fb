#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Every tracked source file names eddy's licence in its first two lines (the second when the
# first is a #! line), and LICENSE is the BSD 3-Clause text. Exit 1 lists the files without it.
# Data files are not sources: fuzz seeds (tests/fuzz/seeds) are raw inputs.
set -euo pipefail
cd "$(dirname "$0")/../.."
grep -q "BSD 3-Clause License" LICENSE || { echo "LICENSE: not the BSD 3-Clause text"; exit 1; }
missing=0
while IFS= read -r f; do
    case "$f" in *.md | *.json | LICENSE | debian/copyright | debian/changelog | debian/compat \
        | debian/source/format | *.abi | tests/abi/*/include/* | tests/fuzz/seeds/*) continue ;; esac
    [ -f "$f" ] || continue
    if ! head -n 2 "$f" | grep -q "SPDX-License-Identifier: BSD-3-Clause"; then
        echo "no SPDX-License-Identifier line: $f"
        missing=1
    fi
done < <(git ls-files)
exit $missing
