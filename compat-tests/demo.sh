#!/usr/bin/env bash
# The demo: Laravel's lock release vs Laravel with the ddblock driver vs ddblock, under stale
# eventually consistent reads.
#
#   ./compat-tests/demo.sh [--server moto|dynalite|ddblocal] [stuck-locks flags, e.g. --workers 8
#                          --cycles 500 --stale-probability 0.3]
#
# Installs what it needs (compat-tests/setup.sh: moto, dynalite, DynamoDB Local, PHP, Laravel and
# the AWS SDK for PHP), builds the comparison, starts the local DynamoDB servers and runs on one
# (moto by default; `--server ddblocal` for AWS's DynamoDB Local) through, in-process, the fault
# proxy that serves eventually consistent reads up to 500 ms stale (as real DynamoDB can under load;
# local servers never do). Then W real Laravel PHP workers, W Laravel PHP workers with the ddblock
# driver (bindings/php) and W ddblock workers each loop acquire -> 10 ms of work -> release on two
# lock names, then all three at once on one table, and a table shows cycles, stuck locks, double
# holders and requests per cycle for each. Everything is stopped at the end.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$HERE/.."

server=moto
if [[ ${1:-} == --server ]]; then
    server=${2:?--server needs moto, dynalite or ddblocal}
    shift 2
fi
case $server in
    moto) var=DDBLOCK_TEST_MOTO name="moto (Python)" ;;
    dynalite) var=DDBLOCK_TEST_DYNALITE name="dynalite (Node)" ;;
    ddblocal) var=DDBLOCK_TEST_DDBLOCAL name="AWS's DynamoDB Local (Java)" ;;
    *) echo "demo: unknown server '$server': moto, dynalite or ddblocal" >&2; exit 2 ;;
esac

"$HERE/setup.sh" base php servers
echo "== building the comparison (first time: a few minutes for the AWS SDK)"
cargo build -q -p ddblock-stuck-locks --bin stuck-locks

# Servers of its own, so the demo never disturbs a test run's servers.
export DDBLOCK_RUN_DIR="$HERE/.run/demo"
cleanup() { "$HERE/servers/servers.sh" stop >/dev/null 2>&1 || true; }
trap cleanup EXIT
"$HERE/servers/servers.sh" start --owner $$
# shellcheck disable=SC1091
source "$DDBLOCK_RUN_DIR/env"

upstream=${!var}
echo "== server: $name at $upstream"
echo "== running: Laravel 8.83's real DynamoDbLock, then Laravel with the ddblock driver, then ddblock, same workload, through the proxy"
target/debug/stuck-locks --upstream "$upstream" --workers 4 --cycles 300 --mixed "$@"
echo "== the demo ran on $name at $upstream"
