#!/usr/bin/env bash
# The Python binding's checks, in order:
#   1. bindings/python/.venv with the pinned tools of requirements-dev.txt (created once,
#      reinstalled only when that file changes)
#   2. maturin develop: the extension in debug mode, sharing the workspace's target/
#   3. the generated sources are current (the _native.pyi stub, the blocking _sync.py), then
#      ruff check + ruff format --check (also on the project's Python tools: install-tests.py,
#      artifacts.py, cold_start.py, deploy/iam_policies.py, scripts/check-version.py; and on the
#      test peers, with mypy)
#   4. mypy --strict on the package, the tests and bench.py; mypy's stubtest: _native.pyi
#      against the built extension
#   5. pytest against the local DynamoDB servers: DDBLOCK_TEST_MOTO / DDBLOCK_TEST_DYNALITE /
#      DDBLOCK_TEST_DDBLOCAL (compat-tests/servers/servers.sh start; source compat-tests/.run/env).
#      Missing servers fail.
#
#   bindings/python/test.sh [pytest args...]
#
# DDBLOCK_PY_RELEASE=1 builds the extension in release mode instead (for bench.py).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$HERE"

log() { printf '[python] %s\n' "$*"; }

VENV="$HERE/.venv"
REQS="$HERE/requirements-dev.txt"
STAMP="$VENV/.requirements-dev.sha256"
want="$(sha256sum "$REQS" | cut -d' ' -f1)"
if [[ ! -x $VENV/bin/python || ! -f $STAMP || $(cat "$STAMP") != "$want" ]]; then
    log "creating $VENV with requirements-dev.txt"
    python3 -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$REQS"
    echo "$want" >"$STAMP"
else
    log "venv up to date ($VENV)"
fi
export VIRTUAL_ENV="$VENV"
export PATH="$VENV/bin:$PATH"

release=()
[[ ${DDBLOCK_PY_RELEASE:-0} == 1 ]] && release=(--release)
log "maturin develop ${release[*]}"
maturin develop --quiet "${release[@]}"
# DDBLOCK_BUILD_ONLY=1: stop once the extension is built (compat-tests/chaos/run.sh uses it).
[[ ${DDBLOCK_BUILD_ONLY:-0} == 1 ]] && exit 0

log "generated sources are current: _native.pyi (maturin generate-stubs), _sync.py (tools/unasync.py)"
stubs="$(mktemp -d)"
trap 'rm -rf "$stubs"' EXIT
maturin generate-stubs --quiet --out "$stubs" >/dev/null 2>&1 || maturin generate-stubs --out "$stubs"
if ! diff -u python/ddblock/_native.pyi "$stubs/ddblock/_native.pyi"; then
    log "python/ddblock/_native.pyi is out of date: run"
    log "  maturin generate-stubs --out /tmp/s && cp /tmp/s/ddblock/_native.pyi python/ddblock/"
    exit 1
fi
python tools/unasync.py --check

log "ruff"
ruff check .
ruff format --check .
# The project's Python tools outside the binding, with the binding's rules (stdlib only, 3.11+).
tools=(../../compat-tests/packages/install-tests.py ../../compat-tests/packages/artifacts.py ../../compat-tests/packages/cold_start.py ../../compat-tests/deploy/iam_policies.py ../../scripts/check-version.py)
ruff check "${tools[@]}"
ruff format --check "${tools[@]}"
mypy --strict --python-version 3.11 ../../compat-tests/packages/install-tests.py ../../compat-tests/packages/artifacts.py ../../compat-tests/packages/cold_start.py ../../scripts/check-version.py
# The test peers and their driver (compat-tests/support/peers/*.py: the peers over the binding,
# boto3, or the stdlib for the CLI's; driver.py, peer_base.py and selftest.py) and the suite that
# drives them all, with the binding's rules and mypy settings.
peers=(../../compat-tests/support/peers/*.py ../../compat-tests/patterns/concurrency.py)
ruff check "${peers[@]}"
ruff format --check "${peers[@]}"
mypy --strict "${peers[@]}"

log "mypy --strict, and stubtest (the stubs match the built module)"
mypy --strict python/ddblock tests bench.py
python -m mypy.stubtest ddblock._native

if [[ -z ${DDBLOCK_TEST_MOTO:-} || -z ${DDBLOCK_TEST_DYNALITE:-} || -z ${DDBLOCK_TEST_DDBLOCAL:-} ]]; then
    log "DDBLOCK_TEST_MOTO / DDBLOCK_TEST_DYNALITE / DDBLOCK_TEST_DDBLOCAL: not all set, the server tests will fail."
    log "start the servers with: compat-tests/servers/servers.sh start; source compat-tests/.run/env"
fi
# The fault proxy the lease and bad-input tests put in front of the servers (the test step builds
# it too, but `run-tests.sh python` alone must not depend on that).
log "cargo build -p ddblock-fault-proxy"
(cd "$HERE/../.." && cargo build --quiet -p ddblock-fault-proxy)
log "pytest"
cd "$HERE"
# -v: the log names every test with its server (test_x[moto], test_x[dynalite], test_x[ddblocal]).
python -m pytest -v "$@"
