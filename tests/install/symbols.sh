#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The shared libraries export exactly the public API: every function a public header declares
# EDDY_EXPORT, and nothing else (internal eddy__ names, front-end helpers, the libraries eddy
# uses stay hidden). libeddy.so has the core and blocking headers' functions, libeddy_reactive.so
# those of every header. The static libraries cannot hide anything, so every global name they
# define carries the eddy_ or eddy__ prefix (a program's own names never collide with them).
# Every exported name carries a version node of cmake/eddy.map (the linker version script),
# which names exactly the headers' functions (scripts/abi-map.py --check).
# Usage: tests/install/symbols.sh BUILD_DIR. Run by CI.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:?usage: $0 BUILD_DIR}
reactive_only="reactive.h rfeed.h rstore.h rdomain.h rpush.h rdeprecated.h rmodel.h"
declared() { # the names declared EDDY_EXPORT in the given headers
    grep -h 'EDDY_EXPORT' "$@" | grep -v '#define' | sed -E 's/^.*[ *]([a-z_0-9]+)\(.*$/\1/' |
        sort -u
}
exported() { # the names, without their version (every one must have EDDY_<release>)
    nm -D --defined-only "$1" | awk '$2 ~ /^[TDBRW]$/ {print $3}' | sed 's/@.*//' | sort -u
}
versioned() { # every exported function carries a version node of cmake/eddy.map
    local bad
    bad=$(nm -D --defined-only "$1" | awk '$2 ~ /^[TDBRW]$/ {print $3}' |
        grep -v '@@\?EDDY_[0-9][0-9.]*$' || true)
    if [ -n "$bad" ]; then
        echo "$1: exported without an EDDY_ version (cmake/eddy.map):" >&2
        echo "$bad" | sed 's/^/  /' >&2
        exit 1
    fi
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
    versioned "$lib"
    echo "$(basename "$lib"): $(echo "$got" | wc -l) symbols, exactly the public API, versioned"
}
blocking_headers=()
for h in "$src"/include/eddy/*.h; do
    case " $reactive_only " in *" $(basename "$h") "*) ;; *) blocking_headers+=("$h") ;; esac
done
"$src/scripts/abi-map.py" --check
check "$build/libeddy.so" "${blocking_headers[@]}"
check "$build/libeddy_reactive.so" "$src"/include/eddy/*.h
prefixed() { # a static library's global definitions all start with eddy_ (eddy__ included)
    local bad
    bad=$(nm --defined-only -g "$1" | awk 'NF == 3 && $2 ~ /^[TDBRCW]$/ {print $3}' |
        grep -v '^eddy_' | sort -u || true)
    if [ -n "$bad" ]; then
        echo "$1: global names without the eddy_ prefix:" >&2
        echo "$bad" | sed 's/^/  /' >&2
        exit 1
    fi
    echo "$(basename "$1"): every global name carries the eddy_ prefix"
}
prefixed "$build/libeddy.a"
prefixed "$build/libeddy_reactive.a"
