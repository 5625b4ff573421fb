#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Installs eddy into a temporary prefix chosen at install time (cmake --install --prefix, as a
# packager does: the .pc files and the CMake package must not depend on the configure-time
# prefix), checks the tool and the API reference (HTML, man3) are there, then builds and runs a
# small program against it four ways: pkg-config and find_package(eddy), each against the shared
# and the static libraries, and the steps of docs/getting-started.md as written. Run by CI.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake -S "$src" -B "$work/build" -DEDDY_TESTS=OFF -DEDDY_EXAMPLES=OFF -DEDDY_BENCH=OFF >/dev/null
cmake --build "$work/build" -j"$(nproc)" >/dev/null
prefix="$work/prefix"
cmake --install "$work/build" --prefix "$prefix" >/dev/null
libdir=$(dirname "$(find "$prefix" -name eddy.pc)")/..
# The command-line tool is installed with the libraries and runs from the prefix.
"$prefix/bin/eddy" version | grep -q "^eddy [0-9]"
# With it its man page and its bash and zsh completions (when help2man was there to write it).
if command -v help2man >/dev/null; then
    test -s "$prefix/share/man/man1/eddy.1"
fi
test -s "$prefix/share/bash-completion/completions/eddy"
test -s "$prefix/share/zsh/vendor-completions/_eddy"
# The API reference (EDDY_DOCS is on when Doxygen is there; scripts/install-deps.sh installs
# it): the HTML pages, and man3 pages, one per function, type and header, that man renders
# without a warning (a function's page is a link to its header's).
test -s "$prefix/share/doc/eddy/html/index.html"
man3="$prefix/share/man/man3"
for page in eddy_bus_publish eddy_rbus_request eddy_settings eddy_bus.h; do
    test -s "$man3/$page.3"
    LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$man3/$page.3" >"$work/man.out" 2>"$work/man.err"
    [ ! -s "$work/man.err" ] || { cat "$work/man.err" >&2; exit 1; }
    grep -q "eddy_bus_publish\|eddy_rbus_request\|eddy_settings" "$work/man.out"
done
# No page that could be another package's (a struct member's name, a bare header name).
stray=$(ls "$man3" | grep -v -e '^eddy_' -e '^EDDY_' || true)
[ -z "$stray" ] || { echo "man3 pages not named eddy_*: $stray" >&2; exit 1; }
export PKG_CONFIG_PATH="$libdir/pkgconfig"
grep -q "pcfiledir" "$libdir/pkgconfig/eddy.pc"

# pkg-config, shared: the program needs libeddy_reactive.so.0 at run time.
cc -std=c11 -o "$work/pc-shared" "$src/tests/install/consumer.c" \
    $(pkg-config --cflags --libs eddy-reactive)
LD_LIBRARY_PATH="$libdir" ldd "$work/pc-shared" | grep -q "libeddy_reactive.so.0"
LD_LIBRARY_PATH="$libdir" "$work/pc-shared"

# The opt-in eddy/msgpack.h: the program asks for msgpack-c too; without it, eddy's flags alone
# do not link msgpack-c (a private dependency of the shared library).
cc -std=c11 -o "$work/pc-msgpack" "$src/tests/install/msgpack_consumer.c" \
    $(pkg-config --cflags --libs eddy msgpack)
LD_LIBRARY_PATH="$libdir" "$work/pc-msgpack"
if pkg-config --libs eddy | grep -q msgpack; then echo "FAIL: pkg-config --libs eddy | grep -q msgpack" >&2; exit 1; fi

# pkg-config, static: eddy's own libraries linked in, nothing of eddy needed at run time.
cc -std=c11 -o "$work/pc-static" "$src/tests/install/consumer.c" \
    $(pkg-config --cflags eddy-reactive) -Wl,-Bstatic -leddy_reactive -leddy -Wl,-Bdynamic \
    $(pkg-config --static --libs-only-L eddy-reactive) \
    $(pkg-config --static --libs eddy-reactive | tr ' ' '\n' | grep -v -e '^-leddy' | tr '\n' ' ')
if ldd "$work/pc-static" | grep -q "libeddy"; then echo "FAIL: ldd '$work/pc-static' | grep -q 'libeddy'" >&2; exit 1; fi
"$work/pc-static"

# find_package(eddy), shared and static targets.
for kind in shared static; do
    cmake -S "$src/tests/install" -B "$work/fp-$kind" -DCMAKE_PREFIX_PATH="$prefix" \
        -DEDDY_KIND="$kind" >/dev/null
    cmake --build "$work/fp-$kind" >/dev/null
    LD_LIBRARY_PATH="$libdir" "$work/fp-$kind/consumer"
done
LD_LIBRARY_PATH="$libdir" "$work/fp-shared/msgpack_consumer"
if ldd "$work/fp-static/consumer" | grep -q "libeddy"; then echo "FAIL: ldd '$work/fp-static/consumer' | grep -q 'libeddy'" >&2; exit 1; fi
# eddy-static.pc: eddy's static libraries by their path, nothing of eddy needed at run time.
cc -std=c11 -o "$work/pc-static2" "$src/tests/install/consumer.c" \
    $(pkg-config --cflags --libs eddy-reactive-static)
if ldd "$work/pc-static2" | grep -q "libeddy"; then echo "FAIL: ldd '$work/pc-static2' | grep -q 'libeddy'" >&2; exit 1; fi
"$work/pc-static2"

# docs/getting-started.md's steps as written: its blocks marked `getting-started` (the install,
# CMake, pkg-config with a run path, the static link), with its first program as app.c, run in
# order in a fresh directory with HOME there. The programs must run without LD_LIBRARY_PATH.
gs="$work/getting-started"
mkdir -p "$gs/home"
python3 - "$src/docs/getting-started.md" "$gs" <<'PY'
import re, sys
text, out = open(sys.argv[1]).read(), sys.argv[2]
steps = []
for lang, _, body in re.findall(r"```(\w+) getting-started( program)?\n(.*?)```", text, re.S):
    if lang == "c":
        open(out + "/app.c", "w").write(body)
    elif lang == "cmake":
        open(out + "/CMakeLists.txt", "w").write(body)
    else:
        steps.append(body)
assert len(steps) >= 4, "getting-started.md: fewer steps than install, CMake, pkg-config, static"
open(out + "/steps.sh", "w").write("set -euo pipefail\n" + "".join(steps))
PY
ln -s "$work/build" "$gs/build"
(cd "$gs" && env -u LD_LIBRARY_PATH -u PKG_CONFIG_PATH HOME="$gs/home" bash steps.sh >/dev/null)
ldd "$gs/app" | grep -q "$gs/home/.local/lib/libeddy.so.0"
ldd "$gs/app-build/app" | grep -q "$gs/home/.local/lib/libeddy.so.0"
if ldd "$gs/app-static" | grep -q "libeddy"; then echo "FAIL: ldd '$gs/app-static' | grep -q 'libeddy'" >&2; exit 1; fi
echo "install check: pkg-config and find_package(eddy), shared and static, eddy/msgpack.h and the getting-started steps, all work"
