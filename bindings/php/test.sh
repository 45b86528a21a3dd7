#!/usr/bin/env bash
# The PHP driver's checks (./compat-tests/run-tests.sh php-driver runs this), in order:
#   1. php -l on every PHP file of the package, then phpcs --standard=PSR12
#   2. the conformance vectors match their spec (compat-tests/conformance/generate.py --check)
#   3. the peers the tests drive: the ddblock CLI, the Rust peer (ddblock-peer, of
#      compat-tests/support/peers/PROTOCOL.md) and the fault proxy (cargo build, debug), the
#      Python binding (bindings/python/.venv) and the Node binding's native module; the last two
#      are built by their own scripts only when missing (the python and node steps of the test
#      command, which run first, build them)
#   4. PHPUnit on Debian's Laravel 8.83, then on upstream Laravel 13's cache lock classes
#      (DDBLOCK_LARAVEL=8, 13; see tests/bootstrap.php), against DDBLOCK_TEST_MOTO,
#      DDBLOCK_TEST_DYNALITE and DDBLOCK_TEST_DDBLOCAL (compat-tests/servers/servers.sh start;
#      source compat-tests/.run/env)
#
#   bindings/php/test.sh [phpunit args...]      e.g. --filter FaultProxyTest
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
cd "$HERE"
log() { printf '[php-driver] %s\n' "$*"; }

log "php -l"
find src config tests -name '*.php' -print0 | xargs -0 -n1 php -l >/dev/null
log "phpcs --standard=PSR12"
phpcs --standard=PSR12 src config tests

log "conformance vectors match compat-tests/conformance/generate.py"
python3 "$ROOT/compat-tests/conformance/generate.py" --check

log "peers: cargo build -p ddblock-cli -p ddblock-test-support -p ddblock-fault-proxy"
(cd "$ROOT" && cargo build --quiet -p ddblock-cli -p ddblock-test-support -p ddblock-fault-proxy)
if ! "$ROOT/bindings/python/.venv/bin/python" -c 'import ddblock' 2>/dev/null; then
    log "peers: the Python binding is not built: bindings/python/test.sh --collect-only (venv, maturin develop, checks)"
    "$ROOT/bindings/python/test.sh" --collect-only -q >/dev/null
fi
if ! node -e "require('$ROOT/bindings/node')" 2>/dev/null; then
    log "peers: the Node binding is not built: bindings/node/test.sh (npm install, napi build, its tests)"
    bash "$ROOT/bindings/node/test.sh" >/dev/null
fi

if [[ -z ${DDBLOCK_TEST_MOTO:-} || -z ${DDBLOCK_TEST_DYNALITE:-} || -z ${DDBLOCK_TEST_DDBLOCAL:-} ]]; then
    log "DDBLOCK_TEST_MOTO / DDBLOCK_TEST_DYNALITE / DDBLOCK_TEST_DDBLOCAL are not set: the tests will fail."
    log "start the servers with: compat-tests/servers/servers.sh start; source compat-tests/.run/env"
fi
junit="$(mktemp)"
trap 'rm -f "$junit"' EXIT
for laravel in 8 13; do
    log "phpunit on Laravel $laravel (DDBLOCK_LARAVEL=$laravel)"
    DDBLOCK_LARAVEL=$laravel phpunit --do-not-cache-result --log-junit "$junit" "$@"
    # Which servers the tests ran on (their data set names carry the server), from PHPUnit's log.
    counts=""
    for server in moto dynalite ddblocal; do
        counts+=" $server $(grep -c "<testcase name=\"[^\"]*$server" "$junit" || true),"
    done
    log "Laravel $laravel: tests per server:${counts%,}"
done
