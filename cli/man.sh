#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Writes the man page eddy(1) from the tool's own help, with help2man: `eddy --help` gives the
# synopsis, the global options, the commands and the exit codes; each command's
# `eddy COMMAND --help` becomes a subsection of COMMANDS. The page says what the tool says.
#   cli/man.sh EDDY VERSION OUT   (EDDY: the built tool; run by CMake when the tool is built)
set -euo pipefail
eddy=${1:?usage: man.sh EDDY VERSION OUT} version=${2:?} out=${3:?}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# help2man takes the synopsis from a line that starts "Usage:".
"$eddy" --help | sed '1s/^usage:/Usage:/' >"$work/help.txt"
# The commands: the first word of each line of the Commands section.
commands=$(awk '/^Commands:/ {on = 1; next} on && /^[^ ]/ {on = 0} on && /^  [a-z]/ {print $1}' \
    "$work/help.txt")
[ -n "$commands" ] || { echo "man.sh: no commands in '$eddy --help'" >&2; exit 1; }

roff_text() { # plain text as roff, kept as it is laid out (.nf)
    sed -e 's/\\/\\e/g' -e 's/-/\\-/g' -e "s/^\([.']\)/\\\\\&\1/"
}
{
    echo "[COMMANDS]"
    echo "Each command prints its own help with \\fBeddy\\fR \\fICOMMAND\\fR \\fB\\-\\-help\\fR:"
    for c in $commands; do
        echo ".SS \"eddy $c\""
        echo ".nf"
        "$eddy" "$c" --help | roff_text
        echo ".fi"
    done
    echo "[COPYRIGHT]"
    echo "Copyright (c) 2026, the eddy authors. Licensed under the BSD 3-Clause License."
} >"$work/include.h2m"

# help2man runs the program it documents: a stand-in named eddy that prints the help above.
mkdir "$work/bin"
printf '#!/bin/sh\ncat "%s"\n' "$work/help.txt" >"$work/bin/eddy"
chmod +x "$work/bin/eddy"
help2man --no-info --version-string="$version" --include="$work/include.h2m" \
    --name="CloudEvents messaging and event stores on Redis Streams, from the shell" \
    --section=1 --output="$work/eddy.1" "$work/bin/eddy"
mv "$work/eddy.1" "$out"
