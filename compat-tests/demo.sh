#!/usr/bin/env bash
# The demo: Laravel's lock release vs Laravel with the ddblock driver vs ddblock, under stale
# eventually consistent reads.
#
#   ./compat-tests/demo.sh [stuck-locks flags, e.g. --workers 8 --cycles 500 --stale-probability 0.3]
#
# Installs what it needs (compat-tests/setup.sh: moto, dynalite, PHP, Laravel and the AWS SDK for
# PHP), builds the comparison, starts a local DynamoDB server (moto) and, in-process, the fault
# proxy that serves eventually consistent reads up to 500 ms stale (as real DynamoDB can under load;
# local servers never do). Then W real Laravel PHP workers, W Laravel PHP workers with the ddblock
# driver (bindings/php) and W ddblock workers each loop acquire -> 10 ms of work -> release on two
# lock names, then all three at once on one table, and a table shows cycles, stuck locks, double
# holders and requests per cycle for each. Everything is stopped at the end.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$HERE/.."

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

echo "== running: Laravel 8.83's real DynamoDbLock, then Laravel with the ddblock driver, then ddblock, same workload, through the proxy"
target/debug/stuck-locks --upstream "$DDBLOCK_TEST_MOTO" --workers 4 --cycles 300 --mixed "$@"
