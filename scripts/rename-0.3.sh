#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Applies eddy 0.3.0's renames of the public API (docs/twins.md, "Renamed in 0.3.0") to a
# tree, in place: scripts/rename-0.3.sh [DIR] (default: the current directory). Idempotent:
# the new names match none of the old patterns, so a second run changes nothing. Only whole
# public identifiers change (eddy_..., never the internal eddy__...). It edits the files git
# tracks in DIR (every file under it when DIR is not a git work tree), except those that must
# keep the old names: the deprecated aliases themselves, their tests and the rename table. The C files it
# changed are then clang-formatted (when clang-format is installed), since a longer name may
# move a line past the 100 columns.
set -eu

dir=${1:-.}
cd "$dir"

# old -> new, one sed expression each (GNU sed; \b is a word boundary).
renames='
s/\beddy_store_read_all\b/eddy_store_read_page/g
s/\beddy_rstore_ckpt_\([a-z_]*\)\b/eddy_rstore_checkpoint_\1/g
s/\beddy_rfeed_store_checkpoints\b/eddy_rstore_checkpoints/g
s/\beddy_feed_get_info\b/eddy_feed_stats/g
s/\beddy_rfeed_get_info\b/eddy_rfeed_stats/g
s/\beddy_domain_get_info\b/eddy_domain_stats/g
s/\beddy_rdomain_get_info\b/eddy_rdomain_stats/g
s/\beddy_push_sources_status\b/eddy_push_sources_stats/g
s/\beddy_rpush_sources_status\b/eddy_rpush_sources_stats/g
s/\beddy_feed_cancel_\(new\|fired\|fire\|free\)\b/eddy_cancel_\1/g
s/\beddy_feed_cancel\b/eddy_cancel/g
'

keep='^(cmake/eddy\.map|tests/abi/.*|tests/twins/self-test\.sh|tests/twins/old-names\.c|tests/twins/deprecated\.sh|tests/integration/test_twins\.c|tests/twins/check-twins\.py|include/eddy/deprecated\.h|include/eddy/rdeprecated\.h|blocking/deprecated\.c|reactive/deprecated\.c|docs/twins\.md|scripts/rename-0\.3\.sh|CHANGELOG\.md)$'

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    list() { git ls-files; }
else
    list() { find . -type f ! -path './.git/*' ! -path './build*' | sed 's|^\./||'; }
fi

list | grep -Ev "$keep" | while IFS= read -r f; do
    [ -f "$f" ] || continue
    # Text files that name an old identifier only.
    grep -Iq -e 'eddy_store_read_all' -e 'eddy_rstore_ckpt_' -e 'eddy_rfeed_store_checkpoints' \
        -e '_get_info' -e 'sources_status' -e 'eddy_feed_cancel' "$f" 2>/dev/null || continue
    cp "$f" "$f.rename-0.3"
    sed -i "$renames" "$f"
    if cmp -s "$f" "$f.rename-0.3"; then
        rm -f "$f.rename-0.3"
        continue
    fi
    rm -f "$f.rename-0.3"
    case $f in
    *.c | *.h) if command -v clang-format >/dev/null; then clang-format -i "$f"; fi ;;
    esac
    echo "renamed in $f"
done
