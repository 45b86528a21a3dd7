#!/usr/bin/env bash
# A shell process of the mixed-language concurrency test (concurrency.py), through the ddblock CLI.
#
#   worker.sh once EVENT...   `ddblock once EVENT -- ...` per event; the command records the win
#   worker.sh cas KEY N       N increments: `get --with-version`, `put --if-version` (exit 3: again)
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
else
    echo "unknown mode $mode" >&2
    exit 2
fi
