#!/usr/bin/env bash
# The shared libraries export exactly the public API: every function a public header declares
# EDDY_EXPORT, and nothing else (internal eddy__ names, front-end helpers, the libraries eddy
# uses stay hidden). libeddy.so has the core and blocking headers' functions, libeddy_reactive.so
# those of every header. Usage: tests/install/symbols.sh BUILD_DIR. Run by CI.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:?usage: $0 BUILD_DIR}
reactive_only="reactive.h rfeed.h rstore.h rdomain.h rpush.h"
declared() { # the names declared EDDY_EXPORT in the given headers
    grep -h 'EDDY_EXPORT' "$@" | grep -v '#define' | sed -E 's/^.*[ *]([a-z_0-9]+)\(.*$/\1/' |
        sort -u
}
exported() {
    nm -D --defined-only "$1" | awk '$2 ~ /^[TDBRW]$/ {print $3}' | sort -u
}
check() { # library, headers...
    local lib=$1
    shift
    local want got
    want=$(declared "$@")
    got=$(exported "$lib")
    if [ "$want" != "$got" ]; then
        echo "$lib: exported symbols differ from the public headers" >&2
        diff <(echo "$want") <(echo "$got") | sed 's/^</  declared, not exported:/; s/^>/  exported, not declared:/' >&2
        exit 1
    fi
    echo "$(basename "$lib"): $(echo "$got" | wc -l) symbols, exactly the public API"
}
blocking_headers=()
for h in "$src"/include/eddy/*.h; do
    case " $reactive_only " in *" $(basename "$h") "*) ;; *) blocking_headers+=("$h") ;; esac
done
check "$build/libeddy.so" "${blocking_headers[@]}"
check "$build/libeddy_reactive.so" "$src"/include/eddy/*.h
