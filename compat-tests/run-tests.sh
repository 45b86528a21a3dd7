#!/usr/bin/env bash
# THE project test command. On a fresh machine:
#
#   ./compat-tests/run-tests.sh            # every step
#   ./compat-tests/run-tests.sh clippy     # only the named step(s)
#   ./compat-tests/run-tests.sh --list     # list the steps
#
# It installs the test dependencies (compat-tests/setup.sh), starts the local
# DynamoDB emulators (compat-tests/servers/servers.sh; stopped again on exit, however
# this script ends), exports their endpoints (DDBLOCK_TEST_MOTO,
# DDBLOCK_TEST_DYNALITE, DDBLOCK_TEST_DDBLOCAL) plus dummy AWS credentials, then runs the steps.
# Steps run in waves (see WAVES); the steps of a wave run in parallel, up to
# DDBLOCK_JOBS at once (default 3: builds take turns on cargo's lock while
# other steps' tests, mostly waiting on the servers, run), each into its own
# log (compat-tests/.run/logs/STEP.log), printed whole when the step ends.
# Every step runs even if an earlier one failed (set DDBLOCK_FAIL_FAST=1 to
# stop after the first wave with a failure); the exit status is non-zero if
# any failed.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
cd "$ROOT"

# --- steps ------------------------------------------------------------------------
# To add a step: define `step_NAME` (it runs from the repo root, in a subshell
# with `set -e`, the emulator env exported) and add "NAME|description" to
# STEPS, in the order it should run.
step_fmt() { cargo fmt --all -- --check; }
step_clippy() { cargo clippy --workspace --all-targets -- -D warnings; }
step_test() { cargo test --workspace --no-fail-fast; }  # every failing binary reported, not the first
step_php() { bash compat-tests/laravel/selftest.sh; }
step_python() { bindings/python/test.sh; }
step_node() { bash bindings/node/test.sh; }
step_docs() {
    cargo build --quiet -p ddblock-cli -p ddblock-doc-snippets
    python3 compat-tests/docs/snippets.py
    # docs/deploy.md's IAM policies, each enforced by moto's IAM mode on what its use sends.
    compat-tests/.venv/bin/python compat-tests/deploy/iam_policies.py
}
step_php-driver() { bash bindings/php/test.sh; }
# The Python and Node bindings, built (debug) unless a step before built them: the chaos and
# patterns steps start peers over them, and may run without the python and node steps. Under a
# lock: those two steps run at once, and two `maturin develop` in one tree trip over each other.
ensure_bindings() {
    (
        flock 9
        bindings/python/.venv/bin/python -c 'import ddblock' 2>/dev/null ||
            DDBLOCK_BUILD_ONLY=1 bindings/python/test.sh
        node -e "require('./bindings/node')" 2>/dev/null ||
            DDBLOCK_BUILD_ONLY=1 bash bindings/node/test.sh
    ) 9>"$LOG_DIR/.bindings.lock"
}
step_chaos() {
    ensure_bindings
    cargo build --quiet -p ddblock-chaos -p ddblock-test-support --bins
    # On dynalite and on DynamoDB Local, each started by the run itself with its data on disk;
    # dynalite's run releases by delete (the default), DynamoDB Local's with the keep-fence
    # release, whose fences never go back across a release (docs/semantics.md, "Release modes").
    local server mode
    for server in dynalite ddblocal; do
        mode=delete
        [[ $server == ddblocal ]] && mode=keep-fence
        "${CARGO_TARGET_DIR:-target}/debug/chaos" --profile short --server "$server" \
            --release-mode "$mode" --out "compat-tests/.run/chaos/$server"
    done
}
step_bench() { compat-tests/bench/run.sh --smoke --prebuilt; }
step_patterns() {
    ensure_bindings
    cargo build --quiet -p ddblock-cli -p ddblock-test-support --bin ddblock --bin ddblock-peer
    # Every peer of the peer protocol answers as compat-tests/support/peers/PROTOCOL.md says.
    bindings/python/.venv/bin/python compat-tests/support/peers/selftest.py python node cli rust php php-ddblock
    bindings/python/.venv/bin/python compat-tests/patterns/concurrency.py
}
step_fuzz() { fuzz/run.sh smoke; }
# The protocol model (compat-tests/model): every configuration, the states each explored, each
# property's verdict and the counterexample traces (docs/model.md).
step_model() { cargo run --quiet -p ddblock-model --bin model; }
# Three of the four Linux targets: the fourth, aarch64 musl, would take CI past an hour on 2 cores
# (docs/release.md, "What CI builds"); ./package.sh --all-linux --check builds and runs all four.
CI_TARGETS=(x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu x86_64-unknown-linux-musl)
step_package() {
    DDBLOCK_SHELLCHECK=required scripts/actionlint.sh
    ./package.sh --check "${CI_TARGETS[@]/#/--target=}"
}

STEPS=(
    "fmt|rustfmt check: cargo fmt --all -- --check"
    "clippy|lints: cargo clippy --workspace --all-targets -- -D warnings"
    "test|Rust tests (core, real-Laravel interop, fault proxy, stuck locks): cargo test --workspace"
    "php|Laravel harness self-test: compat-tests/laravel/selftest.sh"
    "python|Python binding: bindings/python/test.sh (maturin develop, ruff, mypy --strict, stubtest, pytest on moto, dynalite and DynamoDB Local)"
    "node|Node binding (napi-rs): bindings/node/test.sh (debug build, native.d.ts drift, tsc, node --test)"
    "php-driver|PHP driver ddblock/laravel: bindings/php/test.sh (php -l, phpcs PSR-12, conformance vectors, PHPUnit on Laravel 8.83 and 13 with the CLI, Python and Node as peers)"
    "docs|every code block of README.md and docs/, run as written: compat-tests/docs/snippets.py; docs/deploy.md's IAM policies enforced by moto: compat-tests/deploy/iam_policies.py"
    "patterns|the peers of every language checked against the peer protocol (compat-tests/support/peers/selftest.py), then the once-only guard, compare-and-set and the S3 lock, 10+ peers in Rust, Python, Node, the CLI (and PHP) at once: compat-tests/patterns/concurrency.py"
    "bench|benchmarks, smoke profile: every figure on a tiny load, debug builds, no timing judged (compat-tests/bench/run.sh --smoke)"
    "chaos|chaos run, short profile, on dynalite and on DynamoDB Local: every language on one table through every fault at once, judged from the server's journal (compat-tests/chaos)"
    "package|the release workflow checked (scripts/actionlint.sh), and the packages as users install them: ./package.sh --check for x86_64 glibc, aarch64 glibc and x86_64 musl (wheels, sdist, npm tarballs, CLI tarballs, crates, Composer archive into dist/; each checked by what it is, installed with no Rust on PATH and its quickstart run, aarch64 under QEMU: compat-tests/packages/install-tests.py)"
    "model|the protocol model (stateright): ddblock's properties hold within their bounds, stock Laravel's stuck lock and each broken assumption found as a counterexample trace; prints the states explored (cargo run -p ddblock-model --bin model)"
    "fuzz|fuzz smoke run: fuzz/run.sh smoke (cargo fuzz: each target ${FUZZ_SMOKE_SECONDS:-5} s from its seeds, generated from the PHP fixtures)"
)

# Waves: a step starts once every step of the waves before it has ended. The
# PHP driver's cross-language tests, the snippets and the bench need the Python
# and Node bindings those steps build. The fuzz step builds into its own target dir
# (target/fuzz: instrumented, so nothing is shared), so it never waits on
# cargo's lock; it runs last, beside the PHP driver, docs, chaos, patterns and bench steps.
WAVES=(
    "fmt clippy"
    "test php python node model"
    "package php-driver docs chaos patterns fuzz bench"
)

# --- plumbing --------------------------------------------------------------------
banner() {
    printf '\n%s\n== %s\n%s\n' \
        "================================================================================" "$*" \
        "================================================================================"
}

step_names() {
    local s
    for s in "${STEPS[@]}"; do printf '%s\n' "${s%%|*}"; done
}

is_step() {
    local s
    for s in "${STEPS[@]}"; do [[ ${s%%|*} == "$1" ]] && return 0; done
    return 1
}

selected=()
for arg in "$@"; do
    case $arg in
        --list) step_names; exit 0 ;;
        -h | --help) sed -n '2,13p' "$0"; exit 0 ;;
        -*) echo "unknown option $arg (try --help)" >&2; exit 2 ;;
        *)
            is_step "$arg" || { echo "unknown step '$arg'; steps: $(step_names | tr '\n' ' ')" >&2; exit 2; }
            selected+=("$arg")
            ;;
    esac
done

is_selected() {
    [[ ${#selected[@]} -eq 0 ]] && return 0
    local s
    for s in "${selected[@]}"; do [[ $s == "$1" ]] && return 0; done
    return 1
}

RUN_START=$SECONDS

# What the chosen steps need installed (compat-tests/setup.sh parts): the servers always; PHP
# for every step that runs Laravel's code (all but the Rust-only checks); cargo-fuzz for fuzz;
# Composer for the packages.
setup_parts=(base servers)
for name in $(step_names); do
    is_selected "$name" || continue
    case $name in
        fmt | clippy | model) ;;
        fuzz) setup_parts+=(fuzz) ;;
        package) setup_parts+=(php package) ;;
        *) setup_parts+=(php) ;;
    esac
done
mapfile -t setup_parts < <(printf '%s\n' "${setup_parts[@]}" | awk '!seen[$0]++')
banner "setup: compat-tests/setup.sh ${setup_parts[*]}"
"$HERE/setup.sh" "${setup_parts[@]}"

cleanup() { "$HERE/servers/servers.sh" stop || true; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

banner "servers: compat-tests/servers/servers.sh start (moto, dynalite, DynamoDB Local)"
# --owner: the servers also go away if this script is killed without its trap.
"$HERE/servers/servers.sh" start --owner $$
# shellcheck source=/dev/null
source "${DDBLOCK_RUN_DIR:-$HERE/.run}/env"
echo "DDBLOCK_TEST_MOTO=$DDBLOCK_TEST_MOTO"
echo "DDBLOCK_TEST_DYNALITE=$DDBLOCK_TEST_DYNALITE"
echo "DDBLOCK_TEST_DDBLOCAL=$DDBLOCK_TEST_DDBLOCAL"

desc_of() {
    local s
    for s in "${STEPS[@]}"; do [[ ${s%%|*} == "$1" ]] && { printf '%s' "${s#*|}"; return; }; done
}

LOG_DIR="${DDBLOCK_RUN_DIR:-$HERE/.run}/logs"
mkdir -p "$LOG_DIR"
JOBS="${DDBLOCK_JOBS:-3}"

# Every step is in exactly one wave.
for s in "${STEPS[@]}"; do
    name=${s%%|*}
    grep -qw -- "$name" <<<"${WAVES[*]}" || { echo "step $name is in no wave" >&2; exit 2; }
done

results=()
failed=()
declare -A started=() pids=()

# Runs step $1 into its log; the exit status is the step's.
run_step() {
    local name=$1
    (
        set -e
        "step_$name"
    ) >"$LOG_DIR/$name.log" 2>&1
}

# Waits for any running step, prints its log and records its result.
reap() {
    local pid="" name rc=0
    wait -n -p pid "${!pids[@]}" || rc=$?
    [[ -n $pid ]] || return 0
    name=${pids[$pid]}
    unset "pids[$pid]"
    local dt=$((SECONDS - started[$name]))
    banner "step $name: $(desc_of "$name")"
    cat "$LOG_DIR/$name.log"
    if [[ $rc -eq 0 ]]; then
        results+=("  ok    $name (${dt} s)")
        echo "== step $name: ok (${dt} s)"
    else
        results+=("  FAIL  $name (exit $rc, ${dt} s)")
        failed+=("$name")
        echo "== step $name: FAILED with exit code $rc (${dt} s); log: $LOG_DIR/$name.log"
    fi
}

for wave in "${WAVES[@]}"; do
    for name in $wave; do
        is_selected "$name" || continue
        while [[ ${#pids[@]} -ge $JOBS ]]; do reap; done
        echo "== starting step $name ($(desc_of "$name"))"
        started[$name]=$SECONDS
        run_step "$name" &
        pids[$!]=$name
    done
    while [[ ${#pids[@]} -gt 0 ]]; do reap; done
    if [[ ${#failed[@]} -gt 0 && ${DDBLOCK_FAIL_FAST:-0} == 1 ]]; then
        echo "== DDBLOCK_FAIL_FAST=1: skipping the remaining waves"
        break
    fi
done

banner "summary ($((SECONDS - RUN_START)) s)"
printf '%s\n' "${results[@]}"
if [[ ${#failed[@]} -gt 0 ]]; then
    # The last error lines of each failed step, at the very end: a CI page that shows only the
    # tail of the output still says why.
    for name in "${failed[@]}"; do
        echo "== why $name failed (last error lines of $LOG_DIR/$name.log):"
        grep -E '(^|[^a-z_])(error|ERROR|FAIL|FAILED|panicked|Error)([^a-z_]|$)' "$LOG_DIR/$name.log" |
            grep -v -E '^== step ' | tail -n 8 | cut -c1-300
    done
    echo "== free disk space: $(df -h --output=avail . | tail -1 | tr -d ' ')"
    echo "== FAILED steps: ${failed[*]}"
    exit 1
fi
echo "== all ${#results[@]} steps ok"
