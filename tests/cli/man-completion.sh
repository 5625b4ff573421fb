#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The man page eddy(1) renders (groff, without a warning) with every command of `eddy --help`,
# and the bash and zsh completions (cli/completion/) complete the commands, their verbs, their
# options and the values of options, against the built tool.
#   tests/cli/man-completion.sh EDDY MANPAGE   (ctest: cli.man_completion)
set -euo pipefail
eddy=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
man=${2:?usage: man-completion.sh EDDY MANPAGE}
src=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0
fail() {
    echo "FAIL: $*" >&2
    failed=1
}
expect() { # what, got, want
    [ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"
}

# The commands, as the tool lists them (the first word of each line of its Commands section).
commands=$("$eddy" --help | sed -n '/^Commands:/,/^[^ ]/p' | grep -E '^  [a-z]' |
    sed -E 's/^  ([a-z]+).*/\1/' | tr '\n' ' ')
for c in pub tail request respond groups dlq store feed registry stats bench version; do
    [[ " $commands" == *" $c "* ]] || fail "eddy --help does not list '$c' (got: $commands)"
done

# ---- the man page ----
[ -s "$man" ] || { echo "FAIL: no man page at $man" >&2; exit 1; }
# -Wbreak: a URL longer than the line (redis-sentinel://...) cannot be adjusted, and need not be.
warnings=$(LC_ALL=C.UTF-8 groff -man -Tutf8 -ww -Wbreak -z "$man" 2>&1)
expect "groff warnings" "$warnings" ""
page=$(LC_ALL=C.UTF-8 groff -man -Tascii -P-cbou -rLL=80n "$man" 2>&1)
for heading in NAME SYNOPSIS DESCRIPTION COMMANDS; do
    grep -q "^$heading" <<<"$page" || fail "man page: no $heading section"
done
grep -q "eddy \[--url URL\]" <<<"$page" || fail "man page: no synopsis from eddy --help"
for c in $commands; do
    grep -qE "^ +eddy $c\$" <<<"$page" || fail "man page: no subsection for 'eddy $c'"
done
# A command's own help is in its subsection.
grep -q -- "--data-file PATH" <<<"$page" || fail "man page: eddy pub --help is not in it"

# ---- bash ----
bash_complete() { # the line up to the cursor: the completions, space-separated
    bash --norc --noprofile -c 'source "$1"; COMP_LINE=$2; COMP_POINT=${#2}
        read -ra COMP_WORDS <<<"$2"; [[ $2 == *" " ]] && COMP_WORDS+=("")
        COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _eddy; echo "${COMPREPLY[*]}"' \
        _ "$src/cli/completion/eddy.bash" "$1"
}
expect "bash: eddy <TAB>" "$(bash_complete "$eddy ") " "$commands"
expect "bash: eddy st<TAB>" "$(bash_complete "$eddy st")" "store stats"
expect "bash: eddy dlq <TAB>" "$(bash_complete "$eddy dlq ")" "list show replay purge"
expect "bash: eddy bench <TAB>" "$(bash_complete "$eddy bench ")" "pub sub req"
expect "bash: eddy after global options" \
    "$(bash_complete "$eddy --url redis://127.0.0.1:6379 --ns n dlq l")" "list"
expect "bash: eddy pub S --da<TAB>" "$(bash_complete "$eddy pub S --da")" "--data --data-file"
expect "bash: eddy --j<TAB>" "$(bash_complete "$eddy --j")" "--json"
expect "bash: eddy exporter --l<TAB>" "$(bash_complete "$eddy exporter --l")" "--listen"
expect "bash: eddy stats --p<TAB>" "$(bash_complete "$eddy stats --p")" "--prometheus"
expect "bash: eddy dlq replay G --a<TAB>" "$(bash_complete "$eddy dlq replay G --a")" "--all --askpass"
touch "$work/data.bin"
expect "bash: --data-file FILE" "$(bash_complete "$eddy pub S --data-file $work/da")" \
    "$work/data.bin"
expect "bash: --url <TAB>" "$(bash_complete "$eddy --url uni")" "unix://"
expect "bash: --type takes a value" "$(bash_complete "$eddy pub S --type ")" ""
# The COMP_WORDS form alone (no COMP_LINE), as a caller of the function may give it.
got=$(bash --norc --noprofile -c 'source "$1"; COMP_WORDS=("$2" fe); COMP_CWORD=1; _eddy
    echo "${COMPREPLY[*]}"' _ "$src/cli/completion/eddy.bash" "$eddy")
expect "bash: COMP_WORDS eddy fe<TAB>" "$got" "feed"

# ---- zsh: the completion function with the completion system's builtins stood in for ----
command -v zsh >/dev/null || { fail "zsh is not installed (scripts/install-deps.sh)"; exit 1; }
cat >"$work/complete.zsh" <<'EOF'
compadd() { # prints the matches, one a line
  while (( $# )); do
    case $1 in
      -a) shift; print -rl -- ${(P)1} ;;
      -d) shift; print -rl -- ${(P)1/#/D:} ;;
      -S) shift ;;
    esac
    shift
  done
}
_call_program() { shift; eval "$@"; }
_files() { print -r -- "FILES${*:+ $*}"; }
_message() { print -r -- "MESSAGE $*"; }
fpath=($1 $fpath)
autoload -Uz _eddy
words=(${=2})
[[ $2 == *' ' ]] && words+=('')
CURRENT=${#words}
_eddy
EOF
zsh_complete() { # the line up to the cursor: the matches (not the descriptions), space-separated
    zsh -f "$work/complete.zsh" "$src/cli/completion" "$1" | grep -v '^D:' | tr '\n' ' ' |
        sed 's/ $//'
}
expect "zsh: eddy <TAB>" "$(zsh_complete "$eddy ") " "$commands"
expect "zsh: eddy dlq <TAB>" "$(zsh_complete "$eddy dlq ")" "list show replay purge"
expect "zsh: eddy bench <TAB>" "$(zsh_complete "$eddy bench ")" "pub sub req"
expect "zsh: eddy --ns n store <TAB>" "$(zsh_complete "$eddy --ns n store ")" "read tail append"
grep -q -- "--data-file" <<<"$(zsh_complete "$eddy pub S --")" || fail "zsh: pub's options"
grep -q -- "--listen" <<<"$(zsh_complete "$eddy exporter --")" || fail "zsh: exporter's options"
# (Captured first: grep -q ending the pipe early would fail it under pipefail.)
got=$(zsh -f "$work/complete.zsh" "$src/cli/completion" "$eddy ")
grep -q "^D:pub  -- publish" <<<"$got" || fail "zsh: commands without their descriptions"
got=$(zsh -f "$work/complete.zsh" "$src/cli/completion" "$eddy pub S --")
grep -q "^D:--type  -- the event's type" <<<"$got" || fail "zsh: options without their descriptions"
expect "zsh: --data-file FILE" "$(zsh_complete "$eddy pub S --data-file ")" "FILES"
[[ " $(zsh_complete "$eddy --url ") " == *" redis:// "* ]] || fail "zsh: --url's schemes"

[ $failed -eq 0 ] && echo "man page and completions: all checks pass"
exit $failed
