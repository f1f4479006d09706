# bash completion for scenectl(1), the scene session daemon's client.
# Installed as /usr/share/bash-completion/completions/scenectl. Session ids, app ids and task
# tokens are asked of the running daemon (scenectl list/apps/tasks --no-legend; interruption
# tokens of scenectl status --json), through the socket named on the command line if there is
# one. After "interrupt --" the words are a command's, completed as bash completes commands.

# Prints the first column of `scenectl VERB --no-legend` (one id per line), or nothing.
__scenectl_ids() {
    local verb=$1
    scenectl "${__scenectl_socket[@]}" --no-legend --no-pager "$verb" 2>/dev/null |
        while read -r id _; do printf '%s\n' "$id"; done
}

# The tokens of the open background tasks: the first table of scenectl tasks (the tables of
# scheduled work after it start with an app id).
__scenectl_tokens() {
    __scenectl_ids tasks | grep '^t[0-9][0-9]*$'
}

# The tokens of the interruptions held now (scenectl status --json=short), or nothing.
__scenectl_interruptions() {
    scenectl "${__scenectl_socket[@]}" --json=short --no-pager status 2>/dev/null |
        grep -o '"token" *: *"i[0-9]*"' | grep -o 'i[0-9][0-9]*'
}

# The URL schemes ("notes:") or, with "activity", the activity types scened routes
# (scenectl routes --no-legend: KIND NAME APP FILE), or nothing.
__scenectl_routes() {
    scenectl "${__scenectl_socket[@]}" --no-legend --no-pager routes 2>/dev/null |
        while read -r kind name _; do
            if [[ $1 == scheme && $kind == scheme ]]; then printf '%s:\n' "$name"
            elif [[ $1 != scheme && $kind != scheme ]]; then printf '%s\n' "$name"
            fi
        done
}

# COMPREPLY from the words in $1 (separated by blanks or newlines) that start with $cur.
__scenectl_reply() {
    COMPREPLY=($(compgen -W "$1" -- "$cur"))
}

_scenectl() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
    local -a __scenectl_socket=()
    local global_flags='-h --help --version -v --verbose -q --quiet -j --json --json= --legend= --no-legend --no-pager --socket'
    local verbs='status reload monitor top logs pressure simulate export-trace metrics list show connect activate deactivate
        background disconnect discard save-state set-user-info set-footprint set-protected apps show-app
        launch terminate memory-warning set-app-footprint tasks task notify schedule cancel-task interrupt
        end-interruption open routes desktop-entries help'

    # "--opt=value": bash splits at "=" (COMP_WORDBREAKS), so the option is two words back.
    local eq=
    if [[ $cur == = ]]; then
        prev=${COMP_WORDS[COMP_CWORD-1]}
        cur=
        eq=1
    elif [[ $prev == = && $COMP_CWORD -ge 2 ]]; then
        prev=${COMP_WORDS[COMP_CWORD-2]}
        eq=1
    fi

    # The verb (one or two words), its positional arguments so far, and --socket.
    local i word verb= after_dashdash= command_at=
    local -a args=()
    for ((i = 1; i < COMP_CWORD; i++)); do
        word=${COMP_WORDS[i]}
        if [[ $word == --socket && ${COMP_WORDS[i+1]} == = ]]; then
            ((i + 2 < COMP_CWORD)) && __scenectl_socket=(--socket "${COMP_WORDS[i+2]}")
            ((i += 2))
            continue
        fi
        if [[ $word == --socket ]]; then
            ((i + 1 < COMP_CWORD)) && __scenectl_socket=(--socket "${COMP_WORDS[i+1]}")
            ((i++))
            continue
        fi
        [[ -z $after_dashdash && $word == -- ]] && { after_dashdash=1; continue; }
        # interrupt's COMMAND: everything from its first word on is the command's.
        if [[ $verb == interrupt && ( -n $after_dashdash || $word != -* ) ]]; then
            command_at=$i
            break
        fi
        # The value of an "--opt=value" that no case below knows (--json=pretty).
        [[ -z $after_dashdash && $word == = ]] && { ((i++)); continue; }
        if [[ -z $after_dashdash && $word == -* ]]; then
            # Skip the value of an option that takes one.
            case $word in
                --app | --session | --since | --lines | -n | --journal-directory | --for | --role | \
                    --configuration | --footprint | --user-info | --restore-cost | --base64 | --name | \
                    --state | --condition | --policy | --budget | --svg | --generate | --seed | --size | \
                    --out | --scenarios | --seeds | --budgets | --sessions | --aging | --settle | --delay | --level | --limit | -n | --since | \
                    --order | --legend | -d | -o | --reason | --priority | --kind | --at | --in | --activity | --title | \
                    --target | --webpage-url | --directory | --exec)
                    ((i++))
                    [[ ${COMP_WORDS[i]} == = ]] && ((i++))
                    ;;
            esac
            continue
        fi
        if [[ -z $verb ]]; then
            verb=$word
        elif [[ ${#args[@]} -eq 0 && ( $verb == pressure && ( $word == set || $word == clear || $word == plan || $word == chart ) ||
                                        $verb == task && ( $word == begin || $word == end ) ) ]]; then
            verb="$verb $word"
        else
            args+=("$word")
        fi
    done

    # interrupt's COMMAND and its arguments, as bash completes a command line.
    if [[ $verb == interrupt && ( -n $command_at || -n $after_dashdash ) ]]; then
        if [[ -n $command_at ]] && declare -F _command_offset >/dev/null; then
            _command_offset "$command_at"
        elif [[ -n $command_at ]]; then
            COMPREPLY=($(compgen -f -- "$cur"))
        else
            COMPREPLY=($(compgen -c -- "$cur"))
        fi
        return 0
    fi

    # Option values.
    case $prev in
        # A bare --json takes no value: only --json=MODE does.
        --json) [[ -n $eq ]] && { __scenectl_reply 'short pretty off'; return; } ;;
        --legend) __scenectl_reply 'yes no'; return ;;
        --socket | --svg | --out) COMPREPLY=($(compgen -f -- "$cur")); return ;;
        --journal-directory | --directory) COMPREPLY=($(compgen -d -- "$cur")); return 0 ;;
        --exec) COMPREPLY=($(compgen -f -- "$cur")); return 0 ;;
        --activity) __scenectl_reply "$(__scenectl_routes activity)"; return ;;
        --app) __scenectl_reply "$(__scenectl_ids apps)"; return ;;
        --session) __scenectl_reply "$(__scenectl_ids list)"; return ;;
        --state) __scenectl_reply 'unattached foregroundInactive foregroundActive background'; return ;;
        --condition) __scenectl_reply 'live archived'; return ;;
        --role) __scenectl_reply 'windowApplication windowExternalDisplayNonInteractive carTemplateApplication
            volumetricApplication immersiveSpaceApplication'; return ;;
        --policy) __scenectl_reply 'ours lru largest chrome lmkd opt'; return ;;
        --format) __scenectl_reply 'openmetrics prometheus'; return ;;
        --generate | --scenarios) __scenectl_reply 'mix pingpong size spikes acks'; return ;;
        --size) __scenectl_reply 'fixture full'; return ;;
        --order | -o) __scenectl_reply 'footprint state name activity'; return ;;
        --lines | -n) __scenectl_reply 'all 10 50 100'; return ;;
        --priority) __scenectl_reply 'normal high'; return ;;
        --kind) __scenectl_reply 'refresh processing'; return ;;
        --since | --for | --configuration | --footprint | --user-info | --restore-cost | --base64 | --name | -d | \
            --budget | --seed | --seeds | --budgets | --sessions | --aging | --settle | --delay | --reason | --at | --in | \
            --title | --target | --webpage-url)
            return ;;
    esac

    # Options: the global ones and the verb's own.
    if [[ -z $after_dashdash && $cur == -* ]]; then
        local own=
        case $verb in
            monitor) own='--app --session --since' ;;
            top) own='-d --delay -o --order' ;;
            logs) own='--app -n --lines -f --follow --journal-directory' ;;
            'pressure set') own='--for' ;;
            'pressure plan') own='--level -n --limit' ;;
            'pressure chart') own='--svg --since --all' ;;
            simulate) own='--policy --budget --svg --all --generate --seed --size --out --sweep --scenarios --seeds
                --budgets --decision-bench --sessions --log --aging --settle --actions' ;;
            export-trace) own='--since -o --output' ;;
            metrics) own='--format' ;;
            list) own='--app --state --condition' ;;
            show) own='-n --lines --journal-directory' ;;
            connect) own='--role --configuration --footprint --background --user-info --protected --restore-cost' ;;
            save-state) own='--base64 --clear' ;;
            'task begin') own='--app --name' ;;
            notify) own='--priority' ;;
            schedule) own='--kind --at --in' ;;
            interrupt) own='--reason' ;;
            open) own='--session --background --activity --title --user-info --target --webpage-url' ;;
            desktop-entries) own='--directory --exec' ;;
        esac
        __scenectl_reply "$global_flags $own"
        [[ ${COMPREPLY[0]} == *= ]] && compopt -o nospace 2>/dev/null
        return 0
    fi

    # The verb, a group's second word, then its arguments.
    local n=${#args[@]}
    case $verb in
        '') __scenectl_reply "$verbs" ;;
        pressure) [[ $n -eq 0 ]] && __scenectl_reply 'set clear plan chart' ;;
        task) [[ $n -eq 0 ]] && __scenectl_reply 'begin end' ;;
        help) [[ $n -eq 0 ]] && __scenectl_reply "$verbs" ;;
        show | activate | deactivate | background | disconnect | discard | save-state | set-user-info | \
            set-footprint | logs | 'task begin')
            [[ $n -eq 0 ]] && __scenectl_reply "$(__scenectl_ids list)" ;;
        set-protected)
            if [[ $n -eq 0 ]]; then __scenectl_reply "$(__scenectl_ids list)"
            elif [[ $n -eq 1 ]]; then __scenectl_reply 'yes no'
            fi ;;
        show-app | launch | terminate | set-app-footprint | connect | notify | schedule | cancel-task)
            [[ $n -eq 0 ]] && __scenectl_reply "$(__scenectl_ids apps)" ;;
        memory-warning) __scenectl_reply "$(__scenectl_ids apps)" ;;
        'task end') [[ $n -eq 0 ]] && __scenectl_reply "$(__scenectl_tokens)" ;;
        interrupt) [[ $n -eq 0 ]] && COMPREPLY=($(compgen -c -- "$cur")) ;;
        end-interruption) [[ $n -eq 0 ]] && __scenectl_reply "$(__scenectl_interruptions)" ;;
        # A scheme, then the rest of the URL is the user's (no space after the colon).
        open) [[ $n -eq 0 && $cur != *:* ]] && { __scenectl_reply "$(__scenectl_routes scheme)"; compopt -o nospace 2>/dev/null; } ;;
        'pressure set') [[ $n -eq 0 ]] && __scenectl_reply 'warning critical' ;;
        simulate) [[ $n -eq 0 ]] && COMPREPLY=($(compgen -f -X '!*.jsonl' -- "$cur") $(compgen -d -- "$cur")) ;;
    esac
    return 0
}

complete -F _scenectl scenectl
