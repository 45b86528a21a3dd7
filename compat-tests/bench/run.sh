#!/usr/bin/env bash
# Every benchmark figure in one run, each against its baseline in the same run (docs/benchmarks.md):
# requests per uncontended cycle of every front, client CPU against each language's raw SDK,
# contention against stock Laravel's block(), local waiters, scaling to 256 locks, stuck locks.
#
#   ./compat-tests/bench/run.sh                  # release builds (first time ~20 min on 2 cores), then
#                                            # ~8 min of runs; rewrites the tables of
#                                            # docs/benchmarks.md and docs/benchmarks/*.png
#   ./compat-tests/bench/run.sh --smoke          # tiny profile on debug builds, results and plots in
#                                            # compat-tests/.run/bench/ only (the test command's
#                                            # bench step: checks that the code runs, judges no time)
#   ./compat-tests/bench/run.sh --smoke --prebuilt   # the same on the bindings as the test command's
#                                            # python and node steps left them (no setup, no
#                                            # binding builds: run-tests.sh's bench step)
#   ./compat-tests/bench/run.sh --only cpu,scaling   # some figures (requests, cpu, contention, local,
#                                            # scaling, stuck); the docs are left alone
#
# Installs what it needs (compat-tests/setup.sh; matplotlib into compat-tests/bench/.venv from the
# pinned compat-tests/bench/requirements.txt), builds the Python and Node bindings, the CLI, the
# Rust peer (ddblock-peer: the Rust contention workers) and the bench (compat-tests/bench), starts
# its own moto and dynalite (compat-tests/.run/bench/servers), runs everything, prints one summary
# table and stops the servers.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)" # compat-tests/
ROOT="$(cd "$HERE/.." && pwd)"
cd "$ROOT"

profile=full
only=""
prebuilt=0
while [[ $# -gt 0 ]]; do
    case $1 in
        --smoke) profile=smoke; shift ;;
        --prebuilt) prebuilt=1; shift ;;
        --only) only=${2:?--only needs a list}; shift 2 ;;
        -h | --help) sed -n '2,22p' "$0"; exit 0 ;;
        *) echo "bench/run.sh: unknown argument $1 (try --help)" >&2; exit 2 ;;
    esac
done

log() { printf '[bench] %s\n' "$*"; }
OUT="$HERE/.run/bench"
mkdir -p "$OUT"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"

[[ $prebuilt == 1 && $profile == full ]] && { echo "bench/run.sh: --prebuilt is for --smoke" >&2; exit 2; }
[[ $prebuilt == 1 ]] || "$HERE/setup.sh" base php servers

# --- the plotting venv (matplotlib, pinned) ---------------------------------------------------
BVENV="$HERE/bench/.venv"
BREQS="$HERE/bench/requirements.txt"
want="$(sha256sum "$BREQS" | cut -d' ' -f1)"
if [[ ! -x $BVENV/bin/python || "$(cat "$BVENV/.requirements.sha256" 2>/dev/null)" != "$want" ]]; then
    log "creating $BVENV with $BREQS"
    python3 -m venv "$BVENV"
    "$BVENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-input -r "$BREQS"
    echo "$want" >"$BVENV/.requirements.sha256"
fi

# --- builds -------------------------------------------------------------------------------------
log "building the bindings, the CLI and the bench ($profile)"
export DDBLOCK_BUILD_ONLY=1
if [[ $profile == full ]]; then
    DDBLOCK_PY_RELEASE=1 bindings/python/test.sh
    bash bindings/node/test.sh # npm ci, and the debug module the types are checked against
    (cd bindings/node && npx napi build --platform --release --js native.js --dts native.d.ts -o "$OUT/node" >/dev/null)
    export NAPI_RS_NATIVE_LIBRARY_PATH="$OUT/node/ddblock.linux-x64-gnu.node"
    cargo build --quiet --release -p ddblock-bench -p ddblock-cli -p ddblock-test-support --bin ddblock-bench --bin ddblock --bin ddblock-peer
    # Alone, so that its core has no metrics compiled in (the CPU figure's baseline).
    cargo build --quiet --release -p ddblock-bench-cycle
    BIN="$TARGET/release"
else
    if [[ $prebuilt == 0 ]]; then
        bindings/python/test.sh
        bash bindings/node/test.sh
    fi
    cargo build --quiet -p ddblock-bench -p ddblock-cli -p ddblock-test-support --bin ddblock-bench --bin ddblock --bin ddblock-peer
    cargo build --quiet -p ddblock-bench-cycle
    BIN="$TARGET/debug"
fi
unset DDBLOCK_BUILD_ONLY

# --- servers of its own, so a test run's servers are left alone --------------------------------
export DDBLOCK_RUN_DIR="$OUT/servers"
cleanup() { "$HERE/servers/servers.sh" stop >/dev/null 2>&1 || true; }
trap cleanup EXIT
"$HERE/servers/servers.sh" start --owner $$
# shellcheck source=/dev/null
source "$DDBLOCK_RUN_DIR/env"

args=(run --profile "$profile" --out "$OUT/results.json")
[[ -n $only ]] && args+=(--only "$only")
BENCH_PYTHON="$ROOT/bindings/python/.venv/bin/python" BENCH_CLI="$BIN/ddblock" BENCH_PEER="$BIN/ddblock-peer" \
    "$BIN/ddblock-bench" "${args[@]}"

report=("$HERE/bench/report.py" "$OUT/results.json" --plots "$OUT/plots")
if [[ $profile == full && -z $only ]]; then
    report=("$HERE/bench/report.py" "$OUT/results.json" --plots "$ROOT/docs/benchmarks" --docs "$ROOT/docs/benchmarks.md")
fi
"$BVENV/bin/python" "${report[@]}"
