#!/usr/bin/env bash
# A shell process of the mixed-language concurrency test (concurrency.py), through the ddblock CLI.
#
#   worker.sh once EVENT...   `ddblock once EVENT -- ...` per event; the command records the win
#   worker.sh cas KEY N       N increments: `get --with-version`, `put --if-version` (exit 3: again)
#   worker.sh lock NAME COUNTER LOG N
#                             N times `ddblock run NAME`: the command increments the number in
#                             file COUNTER (read, pause, write), appends `cli fence start end` to LOG
#   worker.sh takeover NAME...  one `ddblock acquire` of each lock (expired ones): what it won
#
# DDBLOCK_BIN is the CLI. Prints `ready`, waits for a line on stdin, then prints one JSON line.
set -euo pipefail
mode=$1
shift
echo ready
read -r _
if [[ $mode == once ]]; then
    won=$(mktemp)
    for event in "$@"; do
        rc=0
        "$DDBLOCK_BIN" once "$event" --ttl 60 -- sh -c 'printf "%s\n" "$DDBLOCK_ONCE_EVENT" >>"$0"' "$won" 2>/dev/null || rc=$?
        [[ $rc -eq 0 || $rc -eq 75 ]] || { echo "ddblock once $event exited $rc" >&2; exit 1; }
    done
    printf '{"lang": "cli", "won": [%s]}\n' "$(sed 's/.*/"&"/' "$won" | paste -sd, -)"
    rm -f "$won"
elif [[ $mode == cas ]]; then
    key=$1 n=$2 conflicts=0
    for ((i = 0; i < n; i++)); do
        while :; do
            { read -r version; read -r value; } < <("$DDBLOCK_BIN" get "$key" --with-version)
            rc=0
            "$DDBLOCK_BIN" put "$key" $((value + 1)) --ttl 600 --if-version "$version" >/dev/null 2>&1 || rc=$?
            [[ $rc -eq 0 ]] && break
            [[ $rc -eq 3 ]] || { echo "ddblock put exited $rc" >&2; exit 1; }
            conflicts=$((conflicts + 1))
        done
    done
    printf '{"lang": "cli", "increments": %d, "conflicts": %d}\n' "$n" "$conflicts"
elif [[ $mode == lock ]]; then
    name=$1 counter=$2 log=$3 n=$4
    # shellcheck disable=SC2016 # expanded by the command's shell
    inc='s=$(date +%s%N); v=$(cat "$0"); sleep 0.01; echo $((v + 1)) >"$0"; echo "cli $DDBLOCK_FENCE $s $(date +%s%N)" >>"$1"'
    for ((i = 0; i < n; i++)); do
        "$DDBLOCK_BIN" run "$name" --ttl 30 --wait 120 -- sh -c "$inc" "$counter" "$log"
    done
    printf '{"lang": "cli", "held": %d}\n' "$n"
elif [[ $mode == takeover ]]; then
    won=()
    for name in "$@"; do
        rc=0
        out=$("$DDBLOCK_BIN" --json acquire "$name" --ttl 30 2>/dev/null) || rc=$?
        if [[ $rc -eq 0 ]]; then
            fence=$(sed 's/.*"fence":\([0-9]*\).*/\1/' <<<"$out")
            won+=("\"$name\": $fence")
        elif [[ $rc -ne 75 ]]; then
            echo "ddblock acquire $name exited $rc" >&2
            exit 1
        fi
    done
    printf '{"lang": "cli", "won": {%s}}\n' "$(IFS=,; echo "${won[*]}")"
else
    echo "unknown mode $mode" >&2
    exit 2
fi
