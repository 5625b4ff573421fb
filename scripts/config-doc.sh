#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# docs/configuration.md is generated from the option tables in src/ by eddy_config_doc
# (tools/config_doc.c). Usage:
#   scripts/config-doc.sh [BUILD_DIR]          rewrite docs/configuration.md
#   scripts/config-doc.sh --check [BUILD_DIR]  fail when the checked-in file differs (CI; also
#                                              the ctest docs.configuration)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
check=0
if [ "${1:-}" = "--check" ]; then
    check=1
    shift
fi
build=${1:-$src/build}
if [ ! -f "$build/CMakeCache.txt" ]; then
    cmake -S "$src" -B "$build" >/dev/null
fi
cmake --build "$build" --target eddy_config_doc >/dev/null
tool="$build/tools/eddy_config_doc"
doc="$src/docs/configuration.md"
if [ "$check" = 1 ]; then
    if ! "$tool" | diff -u "$doc" -; then
        echo "docs/configuration.md differs from the option tables: run scripts/config-doc.sh" >&2
        exit 1
    fi
    echo "docs/configuration.md matches the option tables"
else
    "$tool" >"$doc.tmp"
    mv "$doc.tmp" "$doc"
    echo "wrote $doc"
fi
