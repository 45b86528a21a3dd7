#!/usr/bin/env bash
# The Node binding's test loop (run from anywhere):
#   npm ci (compat-tests/npm-install.sh: skipped when node_modules matches the lock), debug build of the native module
#   sharing the workspace target dir, native.d.ts/native.js drift check + tsc --noEmit, the Rust peer
#   (ddblock-peer) and fault proxy the tests drive, then node --test against the local servers.
# Needs DDBLOCK_TEST_MOTO, DDBLOCK_TEST_DYNALITE and DDBLOCK_TEST_DDBLOCAL (compat-tests/servers/servers.sh);
# the tests fail without them. PHP interop needs compat-tests/setup.sh (php + Laravel's cache component).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

# npm ci from the lock (skipped when node_modules was installed from it), tolerant of optional
# packages for other platforms that the registry serves: compat-tests/npm-install.sh.
../../compat-tests/npm-install.sh .
node scripts/check-types.mjs
# DDBLOCK_BUILD_ONLY=1: stop once the native module is built (compat-tests/chaos/run.sh uses it).
[[ ${DDBLOCK_BUILD_ONLY:-0} == 1 ]] && exit 0
cargo build -p ddblock-test-support -p ddblock-fault-proxy --bin ddblock-peer --bin fault-proxy --quiet
node --test test/*.test.mjs
