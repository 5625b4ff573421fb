#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds eddy's Debian packages (debian/: libeddy0, libeddy-dev, eddy-tools) with
# dpkg-buildpackage from a copy of the tree (the checkout stays clean), checks them with lintian
# (any error fails; warnings are printed), installs them with dpkg (the tool and its man page,
# the API reference as HTML and man3 pages are checked to be there), builds programs against them
# (the request/reply examples with pkg-config eddy and eddy-reactive, the install check's
# consumer with find_package(eddy)) and runs them on memory://, then removes the packages.
# It installs into the machine it runs on: run it as root on a throwaway machine (CI does).
#   scripts/deb.sh [OUT_DIR]   the .deb files land in OUT_DIR (default build-deb)
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
out=${1:-build-deb}
mkdir -p "$out"
out=$(cd "$out" && pwd)
if [ "$(id -u)" -ne 0 ]; then
    echo "deb.sh: run as root (it installs the packages with dpkg)" >&2
    exit 2
fi
# What the packages need beyond the plain build: debhelper, dpkg-dev and lintian.
scripts/install-deps.sh debhelper dpkg-dev lintian >/dev/null

version=$(sed -n 's/^#define EDDY_VERSION_STRING "\(.*\)"$/\1/p' include/eddy/version.h)
deb_version=$(dpkg-parsechangelog -l debian/changelog -S Version)
if [ "${deb_version%-*}" != "$version" ]; then
    echo "deb.sh: debian/changelog is at $deb_version, include/eddy/version.h at $version" >&2
    exit 1
fi

work=$(mktemp -d)
installed=()
cleanup() {
    [ ${#installed[@]} -eq 0 ] || dpkg --purge "${installed[@]}" >/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

# The tree as it is checked out, with changes not yet committed, without build directories.
tree="$work/eddy-$version"
mkdir -p "$tree"
git ls-files -z --cached --others --exclude-standard |
    while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
    tar --null -T - -cf - | tar -xf - -C "$tree"

echo "== dpkg-buildpackage -us -uc -b (eddy $deb_version, without tests)"
start=$(date +%s)
(cd "$tree" && DEB_BUILD_OPTIONS="nocheck parallel=2" dpkg-buildpackage -us -uc -b) \
    >"$work/build.log" 2>&1 || { tail -n 60 "$work/build.log" >&2; exit 1; }
echo "built in $(($(date +%s) - start)) s"
changes=$(ls "$work"/eddy_"$deb_version"_*.changes)
cp "$work"/*.deb "$work"/*.changes "$work"/*.buildinfo "$out"/
ls -l "$out"/*.deb

echo "== lintian"
lintian --fail-on error "$changes"

echo "== install with dpkg"
arch=$(dpkg --print-architecture)
for p in libeddy0 libeddy-dev eddy-tools; do
    if [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" = "install ok installed" ]; then
        echo "deb.sh: $p is installed already; remove it first" >&2
        exit 1
    fi
done
installed=(eddy-tools libeddy-dev libeddy0)
dpkg -i "$work/libeddy0_${deb_version}_$arch.deb" "$work/libeddy-dev_${deb_version}_$arch.deb" \
    "$work/eddy-tools_${deb_version}_$arch.deb"
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
for f in /usr/lib/$multiarch/libeddy.so.0 /usr/lib/$multiarch/libeddy_reactive.so.0 \
    /usr/include/eddy/bus.h /usr/lib/$multiarch/libeddy.a /usr/lib/$multiarch/cmake/eddy \
    /usr/share/doc/libeddy-dev/html/index.html /usr/share/man/man1/eddy.1.gz \
    /usr/share/man/man3/eddy_bus_publish.3.gz /usr/share/man/man3/eddy_bus.h.3.gz \
    /usr/share/bash-completion/completions/eddy /usr/share/zsh/vendor-completions/_eddy; do
    [ -e "$f" ] || { echo "deb.sh: $f is not installed" >&2; exit 1; }
done
# (Outputs are captured before they are matched: grep -q ending a pipe early fails it.)
[ "$(eddy version)" = "eddy $version" ]
[ "$(man -w eddy)" = /usr/share/man/man1/eddy.1.gz ]
# A function's man page is a link to its header's.
[ "$(man -w eddy_bus_publish)" = /usr/share/man/man3/eddy_blocking.h.3.gz ]
man eddy_bus_publish >"$work/man.out" 2>&1
grep -q "eddy_bus_publish" "$work/man.out"

echo "== programs built against the installed packages"
prog="$work/prog"
mkdir -p "$prog"
cp examples/reqrep_blocking.c examples/reqrep_reactive.c tests/install/consumer.c \
    tests/install/msgpack_consumer.c tests/install/CMakeLists.txt "$prog"/
cd "$prog"
cflags=(-std=c11 -D_POSIX_C_SOURCE=200809L) # the examples use POSIX (sigwait)
cc "${cflags[@]}" -o reqrep_blocking reqrep_blocking.c $(pkg-config --cflags --libs eddy)
cc "${cflags[@]}" -o reqrep_reactive reqrep_reactive.c $(pkg-config --cflags --libs eddy-reactive)
cc "${cflags[@]}" -o consumer consumer.c $(pkg-config --cflags --libs eddy-reactive)
grep -qE "libeddy.so.0 => (/usr)?/lib/$multiarch/libeddy.so.0" <<<"$(ldd reqrep_blocking)"
grep -qE "libeddy_reactive.so.0 => (/usr)?/lib/$multiarch/libeddy_reactive.so.0" \
    <<<"$(ldd reqrep_reactive)"
# Each prints its outcomes, and the one request it makes fail is logged on stderr.
for p in reqrep_blocking reqrep_reactive; do
    "./$p" --url memory:// >"$p.out" 2>&1 || { cat "$p.out" >&2; exit 1; }
done
./consumer
# The static link through eddy-reactive-static.pc: nothing of eddy needed at run time.
cc "${cflags[@]}" -o consumer-static consumer.c $(pkg-config --cflags --libs eddy-reactive-static)
if ldd consumer-static | grep -q libeddy; then echo "FAIL: ldd consumer-static | grep -q libeddy" >&2; exit 1; fi
./consumer-static
for kind in shared static; do
    cmake -S . -B "fp-$kind" -DEDDY_KIND="$kind" >/dev/null
    cmake --build "fp-$kind" >/dev/null
    "fp-$kind/consumer"
done
fp-shared/msgpack_consumer
echo "deb.sh: the packages build, pass lintian, install, and programs built against them run"
echo "        ($out)"
