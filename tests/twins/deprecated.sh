#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The 0.2 names (eddy/deprecated.h) still compile, and every use warns, naming the new name:
# old-names.c compiles with deprecation warnings off, fails with them as errors, and the
# warnings name each replacement.
# Usage: deprecated.sh CC INCLUDE_DIR LIBEV_INCLUDE_DIR
set -eu
cc=$1
inc=$2
evinc=$3
src=$(dirname "$0")/old-names.c
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
flags="-std=c11 -fsyntax-only -I$inc -I$evinc"
# shellcheck disable=SC2086
if ! $cc $flags -Werror -Wno-deprecated-declarations "$src" 2>"$tmp/quiet"; then
    echo "deprecated: the old names do not compile:"
    cat "$tmp/quiet"
    exit 1
fi
# shellcheck disable=SC2086
if $cc $flags -Werror=deprecated-declarations "$src" 2>"$tmp/loud"; then
    echo "deprecated: the old names compile without a deprecation warning"
    exit 1
fi
fails=0
for new in eddy_cancel eddy_cancel_new eddy_cancel_fire eddy_cancel_fired eddy_cancel_free \
    eddy_store_read_page eddy_feed_stats eddy_domain_stats eddy_push_sources_stats \
    eddy_rstore_checkpoint_read_fn eddy_rstore_checkpoint_exists eddy_rstore_checkpoint_read \
    eddy_rstore_checkpoint_save eddy_rstore_checkpoint_remove eddy_rstore_checkpoints \
    eddy_rfeed_stats eddy_rdomain_stats eddy_rpush_sources_stats; do
    if ! grep -q "use $new\b" "$tmp/loud"; then
        echo "deprecated: no warning says \"use $new\""
        fails=$((fails + 1))
    fi
done
[ "$fails" -eq 0 ] && echo "deprecated: every old name warns and names its replacement"
[ "$fails" -eq 0 ]
