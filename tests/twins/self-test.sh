#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Proves that check-twins.py can fail: on copies of the public headers it must pass unchanged,
# then fail on each breakage below (a twin deleted, a twin renamed, a twin's arguments changed,
# a word the API gave up, a stale one-sided entry).
# Usage: self-test.sh INCLUDE_DIR TWINS_MD
set -eu
inc=$1
md=$2
here=$(dirname "$0")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

check() { python3 "$here/check-twins.py" "$tmp/eddy" "$tmp/twins.md" >"$tmp/out" 2>&1; }

fresh() {
    rm -rf "$tmp/eddy"
    cp -r "$inc" "$tmp/eddy"
    cp "$md" "$tmp/twins.md"
}

expect_fail() { # name, then the sed expression and the file it edits
    fresh
    sed -i "$2" "$tmp/$3"
    if check; then
        echo "self-test: '$1' went unnoticed"
        fails=$((fails + 1))
    elif ! grep -q "$4" "$tmp/out"; then
        echo "self-test: '$1' failed, but without naming $4:"
        cat "$tmp/out"
        fails=$((fails + 1))
    else
        echo "self-test: '$1' noticed"
    fi
}

fresh
if ! check; then
    echo "self-test: the unchanged headers fail:"
    cat "$tmp/out"
    exit 1
fi
expect_fail "a twin deleted" '/eddy_rbus_publish_batch(/,/err);/d' eddy/reactive.h \
    eddy_bus_publish_batch
expect_fail "a twin renamed" 's/eddy_rfeed_offer(/eddy_rfeed_offer_event(/' eddy/rfeed.h \
    eddy_feed_offer
expect_fail "arguments changed" \
    's/long long after_version, eddy_stored_fn each,/long long after_version, int extra, eddy_stored_fn each,/' \
    eddy/rstore.h eddy_rstore_read_stream_page
expect_fail "an old word" 's/eddy_rdomain_stats(/eddy_rdomain_get_info(/' eddy/rdomain.h \
    'introspection suffix'
expect_fail "a stale entry" 's/^| `eddy_push_sources_wait` |/| `eddy_push_sources_waits` |/' \
    twins.md eddy_push_sources_waits
expect_fail "a deprecated name without its replacement" \
    's/use eddy_feed_stats/use eddy_feed_statz/' eddy/deprecated.h eddy_feed_get_info
[ "$fails" -eq 0 ]
