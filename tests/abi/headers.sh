#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# No third-party types in the default headers: every public header but eddy/msgpack.h compiles
# in a program that cannot see msgpack-c. The include path starts with a directory whose
# msgpack.h (and msgpack/*.h) stops the compiler with #error, so a header that reached for
# msgpack-c fails to compile; -H lists every header opened, and none may be msgpack-c's or
# <arpa/inet.h> (which <msgpack.h> brings, and whose names collide with a program's own).
# eddy/msgpack.h itself must reach the real <msgpack.h> (checked last, without the trap).
# Usage: tests/abi/headers.sh [CC]. Run by ctest (abi.headers).
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
cc=${1:-cc}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/trap/msgpack"
for f in "$work/trap/msgpack.h" "$work/trap/msgpack/object.h" "$work/trap/msgpack/pack.h"; do
    echo '#error "msgpack-c reached from a default eddy header"' >"$f"
done
fail=0
for h in "$src"/include/eddy/*.h; do
    name=$(basename "$h")
    [ "$name" = msgpack.h ] && continue
    printf '#include <eddy/%s>\nint main(void) { return 0; }\n' "$name" >"$work/p.c"
    if ! "$cc" -std=c11 -fsyntax-only -H -I"$work/trap" -I"$src/include" "$work/p.c" \
        2>"$work/h.txt"; then
        echo "eddy/$name does not compile without msgpack-c:" >&2
        grep -v '^\.' "$work/h.txt" >&2 || true
        fail=1
        continue
    fi
    if grep -E '^\.+ .*(msgpack|arpa/inet\.h)' "$work/h.txt" >&2; then
        echo "eddy/$name opens the headers above" >&2
        fail=1
    fi
done
printf '#include <eddy/msgpack.h>\nint main(void) { msgpack_object o; (void)o; return 0; }\n' \
    >"$work/m.c"
if ! "$cc" -std=c11 -fsyntax-only -I"$src/include" "$work/m.c"; then
    echo "eddy/msgpack.h does not give msgpack-c's types" >&2
    fail=1
fi
[ "$fail" = 0 ] && echo "default headers: no msgpack-c; eddy/msgpack.h: msgpack-c's types"
exit "$fail"
