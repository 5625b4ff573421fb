#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Installs eddy into a temporary prefix chosen at install time (cmake --install --prefix, as a
# packager does: the .pc files and the CMake package must not depend on the configure-time
# prefix), then builds and runs a small program against it four ways: pkg-config and
# find_package(eddy), each against the shared and the static libraries. Run by CI.
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
! pkg-config --libs eddy | grep -q msgpack

# pkg-config, static: eddy's own libraries linked in, nothing of eddy needed at run time.
cc -std=c11 -o "$work/pc-static" "$src/tests/install/consumer.c" \
    $(pkg-config --cflags eddy-reactive) -Wl,-Bstatic -leddy_reactive -leddy -Wl,-Bdynamic \
    $(pkg-config --static --libs-only-L eddy-reactive) \
    $(pkg-config --static --libs eddy-reactive | tr ' ' '\n' | grep -v -e '^-leddy' | tr '\n' ' ')
! ldd "$work/pc-static" | grep -q "libeddy"
"$work/pc-static"

# find_package(eddy), shared and static targets.
for kind in shared static; do
    cmake -S "$src/tests/install" -B "$work/fp-$kind" -DCMAKE_PREFIX_PATH="$prefix" \
        -DEDDY_KIND="$kind" >/dev/null
    cmake --build "$work/fp-$kind" >/dev/null
    LD_LIBRARY_PATH="$libdir" "$work/fp-$kind/consumer"
done
LD_LIBRARY_PATH="$libdir" "$work/fp-shared/msgpack_consumer"
! ldd "$work/fp-static/consumer" | grep -q "libeddy"
echo "install check: pkg-config and find_package(eddy), shared and static, and eddy/msgpack.h, all work"
