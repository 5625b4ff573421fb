#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Installs everything eddy needs to build and test on Debian 12, from Debian's packages.
# Idempotent: packages already present are left alone. Uses sudo when not run as root.
# Extra package names given as arguments are installed too (the fuzz run adds clang).
set -euo pipefail
# libssl-dev: TLS (rediss://); openssl: the TLS tests make their own certificates; libjansson-dev:
# the eddy tool's JSON; doxygen: the API reference; python3-redis: the wire-format test's peer;
# help2man: the tool's man page (groff-base renders it in its test); zsh: the test of its zsh
# completion; abigail-tools: abidw/abidiff of the ABI check (tests/abi/check.sh);
# libmicrohttpd-dev: eddy exporter's HTTP server; prometheus (promtool and the server) and curl:
# the exporter's test (tests/cli/prometheus.sh); tmux: the terminal of eddy top's test
# (tests/cli/top-tmux.sh).
packages=(build-essential cmake pkg-config libhiredis-dev libev-dev libmsgpack-dev libssl-dev
          libcriterion-dev redis-server redis-tools redis-sentinel clang-format openssl
          libjansson-dev doxygen python3 python3-redis help2man groff-base zsh abigail-tools
          libmicrohttpd-dev prometheus curl tmux "$@")
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    echo "eddy: dependencies already installed"
    exit 0
fi
as_root=()
[ "$(id -u)" -eq 0 ] || as_root=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
# Debian starts a system redis-server on 6379 when it installs the package; the tests never
# use it (they start their own on a free port), so it is left as the system configured it. The
# same holds for the prometheus package's server on 9090.
