# SPDX-License-Identifier: BSD-3-Clause
# bash completion for eddy(1), installed as share/bash-completion/completions/eddy.
#
# It completes what the tool itself lists, read from its help when TAB is pressed, so that it
# cannot fall behind the tool: the commands and their verbs (`eddy --help`, its Commands
# section: "dlq list|show|replay|purge"), the global options (`eddy --help`) and each command's
# options (`eddy COMMAND --help`). An option's value is completed by the name the help gives it:
# PATH, FILE and DIR as files or directories, URL as the URL schemes the help names. Needs only
# bash (not the bash-completion package).

# The help of eddy ($1) or of one of its commands ($2...).
_eddy_help() {
    local eddy=$1
    shift
    "$eddy" "$@" --help 2>/dev/null
}

# The commands in eddy's help ($1), one per line.
_eddy_commands() {
    awk '/^Commands:/ {on = 1; next} on && /^[^ ]/ {on = 0} on && /^  [a-z]/ {print $1}' <<<"$1"
}

# The verbs of command $2 in eddy's help ($1): "dlq list|show|replay|purge" gives its four.
_eddy_verbs() {
    awk -v cmd="$2" '/^Commands:/ {on = 1; next} on && /^[^ ]/ {on = 0}
        on && $1 == cmd && $2 ~ /^[a-z]+(\|[a-z]+)+$/ {gsub(/\|/, "\n", $2); print $2}' <<<"$1"
}

# The global options section of eddy's help ($1): from its "... options ...:" heading to the
# next heading.
_eddy_global() {
    awk '/^[A-Z].*[Oo]ptions.*:$/ {on = 1; next} on && /^[^ ]/ {on = 0} on' <<<"$1"
}

# The options a help text ($1) names (--long and -X), one per line.
_eddy_options() {
    grep -oE -- '(^|[][ (|,])--?[A-Za-z][A-Za-z0-9-]*' <<<"$1" | sed -E 's/^[][ (|,]//' | sort -u
}

# The options of a help text ($1) that take a value, each with its value's name: "--url URL".
_eddy_valued() {
    grep -oE -- '(^|[][ (|,])--?[A-Za-z][A-Za-z0-9-]*[ =]([A-Z][A-Z_]*|[a-z_]+=[a-z_]+)' <<<"$1" |
        sed -E 's/^[][ (|,]//; s/=/ /' | sort -u
}

_eddy() {
    local -a words
    local cword
    # The words up to the cursor, split at blanks only: bash's own split (COMP_WORDBREAKS)
    # cuts a URL at its colons.
    if [ -n "${COMP_LINE-}" ]; then
        local line=${COMP_LINE:0:${COMP_POINT:-${#COMP_LINE}}}
        read -ra words <<<"$line"
        [[ $line =~ [[:space:]]$ || ${#words[@]} -eq 0 ]] && words+=("")
        cword=$((${#words[@]} - 1))
    else
        words=("${COMP_WORDS[@]}")
        cword=$COMP_CWORD
    fi
    local cur=${words[cword]} prev=
    ((cword > 0)) && prev=${words[cword - 1]}
    COMPREPLY=()

    local eddy
    eddy=$(type -P -- "${words[0]}") || return 0
    local top
    top=$(_eddy_help "$eddy") || return 0
    local global global_valued
    global=$(_eddy_global "$top")
    global_valued=$(_eddy_valued "$global")

    # The command: the first word that is neither an option nor a global option's value.
    local i cmd= cmdi=0 w
    for ((i = 1; i < cword; i++)); do
        w=${words[i]}
        if [[ $w == -* ]]; then
            [[ $w != *=* ]] && grep -q -- "^$w " <<<"$global_valued" && ((i++))
        else
            cmd=$w
            cmdi=$i
            break
        fi
    done

    local help=$global valued=$global_valued
    if [ -n "$cmd" ]; then
        help=$(_eddy_help "$eddy" "$cmd")$'\n'$global
        valued=$(_eddy_valued "$help")
    fi

    # The value of an option.
    local value_name
    if [[ $prev == -* ]] && value_name=$(grep -m1 -- "^$prev " <<<"$valued"); then
        value_name=${value_name#* }
        case $value_name in
        PATH | FILE | *_FILE | *FILE)
            mapfile -t COMPREPLY < <(compgen -f -- "$cur")
            compopt -o filenames 2>/dev/null
            ;;
        DIR | *_DIR | *DIR)
            mapfile -t COMPREPLY < <(compgen -d -- "$cur")
            compopt -o filenames 2>/dev/null
            ;;
        URL)
            local schemes
            schemes=$(grep -oE '(^|[^a-z-])[a-z][a-z-]*://' <<<"$top" | sed -E 's/^[^a-z]//' |
                sort -u)
            mapfile -t COMPREPLY < <(compgen -W "$schemes" -- "$cur")
            compopt -o nospace 2>/dev/null
            ;;
        esac
        # bash inserts a completion in place of its own current word, which starts after the
        # last colon of a URL.
        if [[ $cur == *:* && ${COMP_WORDBREAKS-} == *:* ]]; then
            local colon=${cur%"${cur##*:}"} j
            for j in "${!COMPREPLY[@]}"; do COMPREPLY[j]=${COMPREPLY[j]#"$colon"}; done
        fi
        return 0
    fi

    if [[ $cur == -* ]]; then
        mapfile -t COMPREPLY < <(compgen -W "$(_eddy_options "$help")" -- "$cur")
        return 0
    fi
    if [ -z "$cmd" ]; then
        mapfile -t COMPREPLY < <(compgen -W "$(_eddy_commands "$top")" -- "$cur")
        return 0
    fi
    # A command with verbs (dlq, store, feed): the first word after it.
    local verbs
    verbs=$(_eddy_verbs "$top" "$cmd")
    if [ -n "$verbs" ]; then
        local has_verb=0
        for ((i = cmdi + 1; i < cword; i++)); do
            [[ ${words[i]} != -* ]] && has_verb=1 && break
        done
        if ((has_verb == 0)); then
            mapfile -t COMPREPLY < <(compgen -W "$verbs" -- "$cur")
            return 0
        fi
    fi
    return 0
}
complete -F _eddy eddy
