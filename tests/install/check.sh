#!/usr/bin/env bash
# Installs eddy into a temporary prefix, then builds a small program against it twice: with
# pkg-config and with CMake's find_package(eddy). Run by CI.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake -S "$src" -B "$work/build" -DEDDY_TESTS=OFF -DEDDY_EXAMPLES=OFF -DEDDY_BENCH=OFF \
    -DCMAKE_INSTALL_PREFIX="$work/prefix" >/dev/null
cmake --build "$work/build" -j"$(nproc)" >/dev/null
cmake --install "$work/build" >/dev/null
export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig:$work/prefix/lib/x86_64-linux-gnu/pkgconfig"
cc -std=c11 -o "$work/pc-consumer" "$src/tests/install/consumer.c" \
    $(pkg-config --cflags --libs eddy-reactive)
"$work/pc-consumer"
cmake -S "$src/tests/install" -B "$work/fp" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/fp" >/dev/null
"$work/fp/consumer"
echo "install check: pkg-config and find_package(eddy) both work"
