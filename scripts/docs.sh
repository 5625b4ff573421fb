#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds the API reference (Doxygen over include/eddy; any warning fails) into
# build-docs/docs/html and build-docs/docs/man/man3, the way CI does.
#   EDDY_DOCS_BUILD_DIR=dir scripts/docs.sh   another build directory
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${EDDY_DOCS_BUILD_DIR:-build-docs}
cmake -S . -B "$dir" -DEDDY_DOCS=ON -DEDDY_EXAMPLES=OFF -DEDDY_SHARED=OFF >/dev/null
cmake --build "$dir" --target docs
echo "API reference: $dir/docs/html/index.html"
