#!/usr/bin/env bash
# The Node binding's test loop (run from anywhere):
#   npm ci (skipped when package-lock.json is older than the last install), debug build of the native module
#   sharing the workspace target dir, index.d.ts/index.js drift check + tsc --noEmit, the Rust CLI
#   and fault proxy the tests drive, then node --test against the local servers.
# Needs DDBLOCK_TEST_MOTO and DDBLOCK_TEST_DYNALITE (compat-tests/servers.sh); the tests fail
# without them. PHP interop needs compat-tests/setup.sh (php + Laravel's cache component).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

# npm ci again only when package-lock.json changed since the last install (npm writes
# node_modules/.package-lock.json on every install).
if [[ ! node_modules/.package-lock.json -nt package-lock.json ]]; then
    if ! npm ci --no-audit --no-fund --loglevel=error; then
        # A registry mirror without other platforms' optional packages (404: @napi-rs/lzma-darwin-x64,
        # ...) cannot give a lock listing them, and npm ci refuses such a lock. Install from the
        # same lock instead, and fail if that changed it.
        echo "test.sh: npm ci refused the lock; npm install from it instead" >&2
        lock_copy="$(mktemp)"
        cp package-lock.json "$lock_copy"
        npm install --no-audit --no-fund --loglevel=error
        cmp -s package-lock.json "$lock_copy" || { echo "test.sh: npm install changed package-lock.json" >&2; rm -f "$lock_copy"; exit 1; }
        rm -f "$lock_copy"
    fi
fi
node scripts/check-types.mjs
# DDBLOCK_BUILD_ONLY=1: stop once the native module is built (compat-tests/chaos.sh uses it).
[[ ${DDBLOCK_BUILD_ONLY:-0} == 1 ]] && exit 0
cargo build -p ddblock-cli -p ddblock-fault-proxy --quiet
node --test test/*.test.mjs
