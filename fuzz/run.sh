#!/usr/bin/env bash
# Runs ddblock's fuzz targets with cargo fuzz (libFuzzer) on the stable toolchain.
#
#   fuzz/run.sh smoke [TARGET...]            CI: each target briefly over its seeds (dev build)
#   fuzz/run.sh campaign TARGET [RUNS]       a long run (release build, debug assertions on)
#   fuzz/run.sh repro TARGET FILE            run one input through a target (dev build)
#   fuzz/run.sh list                         the targets
#
# Smoke: FUZZ_SMOKE_SECONDS per target (default 5) of coverage-guided fuzzing that starts from
# fuzz/seeds/TARGET (replayed first, so a regression seed fails at once), in a scratch corpus;
# a failing input is kept in fuzz/artifacts/TARGET/ (gitignored).
# Campaign: RUNS executions (default 10000000), corpus fuzz/corpus/TARGET (kept, gitignored,
# seeded from fuzz/seeds/TARGET); prints one figures line at the end. Either stops at the first
# failure, prints the input (base64) and the repro command, and exits non-zero.
#
# `-s none`: no sanitizer, so no nightly toolchain is needed (the core is safe Rust: what ASan
# would add is caught as a panic). Limits on every run: -timeout (seconds per input: a hang),
# -rss_limit_mb (memory blow-up), -max_len (bytes per input).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
cd "$ROOT"

TARGETS=(unserialize roundtrip decode_stored item layout)
# Instrumented builds share nothing with the workspace's own builds: their own target dir, so
# they never wait on (or hold) cargo's lock on target/ while other test steps build.
TARGET_DIR="${FUZZ_TARGET_DIR:-$ROOT/target/fuzz}"
SMOKE_SECONDS="${FUZZ_SMOKE_SECONDS:-5}"

dict_of() {
    case $1 in
        item) echo "$HERE/dict/item.dict" ;;
        layout) echo "$HERE/dict/layout.dict" ;;
        *) echo "$HERE/dict/php-serialize.dict" ;;
    esac
}

check_target() {
    local t
    for t in "${TARGETS[@]}"; do [[ $t == "$1" ]] && return 0; done
    echo "unknown target '$1'; targets: ${TARGETS[*]}" >&2
    exit 2
}

need_cargo_fuzz() {
    cargo fuzz --version >/dev/null 2>&1 || {
        echo "cargo fuzz is missing: compat-tests/setup.sh installs it (cargo install --locked cargo-fuzz)" >&2
        exit 2
    }
}

# Prints a failing input found by libFuzzer in $1 (its log) and how to reproduce it.
report_failure() {
    local target=$1 log=$2 artifact
    artifact="$(grep -o "Test unit written to [^ ]*" "$log" | tail -1 | sed 's/Test unit written to //' || true)"
    echo "== fuzz target $target FAILED"
    grep -E "panicked at|^(assertion|decoded|called)|ERROR: libFuzzer|SUMMARY" -A2 "$log" | head -30 || true
    if [[ -n $artifact && -f $artifact ]]; then
        echo "== input ($(wc -c <"$artifact") bytes, base64): $(base64 -w0 "$artifact" | head -c 2000)"
        echo "== reproduce: fuzz/run.sh repro $target $artifact"
    fi
}

libfuzzer_args() {
    local target=$1
    printf '%s\n' "-dict=$(dict_of "$target")" -timeout=10 -rss_limit_mb=2048 -max_len=8192 \
        -print_final_stats=1
}

smoke() {
    local targets=("$@") t log scratch failed=()
    [[ ${#targets[@]} -gt 0 ]] || targets=("${TARGETS[@]}")
    for t in "${targets[@]}"; do check_target "$t"; done
    need_cargo_fuzz
    python3 "$HERE/gen-seeds.py" --check
    local start=$SECONDS
    # `cargo fuzz build` takes one target or all: build all once, then run each.
    cargo fuzz build --dev -s none --target-dir "$TARGET_DIR"
    echo "== built in $((SECONDS - start)) s"
    scratch="$(mktemp -d)"
    trap 'rm -rf "$scratch"' RETURN
    for t in "${targets[@]}"; do
        mkdir -p "$scratch/$t" "$HERE/artifacts/$t"
        log="$scratch/$t.log"
        local t0=$SECONDS
        if cargo fuzz run --dev -s none --target-dir "$TARGET_DIR" "$t" "$scratch/$t" "$HERE/seeds/$t" -- \
            $(libfuzzer_args "$t") -max_total_time="$SMOKE_SECONDS" \
            -artifact_prefix="$HERE/artifacts/$t/" >"$log" 2>&1; then
            echo "== $t: ok, $(stats_line "$log") ($((SECONDS - t0)) s)"
        else
            report_failure "$t" "$log"
            failed+=("$t")
        fi
    done
    if [[ ${#failed[@]} -gt 0 ]]; then
        echo "== fuzz smoke FAILED: ${failed[*]}"
        return 1
    fi
    echo "== fuzz smoke ok: ${#targets[@]} targets in $((SECONDS - start)) s"
}

# "N execs, N/s, cov N, ft N, corpus N, peak rss N MB" from libFuzzer's final stats in log $1.
stats_line() {
    local log=$1
    local execs rate rss done_line cov ft corp
    execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
    rate="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)"
    rss="$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -1)"
    done_line="$(grep -E '^#[0-9]+.*(DONE|pulse|NEW|REDUCE|INITED)' "$log" | tail -1)"
    cov="$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$done_line")"
    ft="$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$done_line")"
    corp="$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$done_line")"
    echo "${execs:-?} execs, ${rate:-?}/s, cov ${cov:-?}, ft ${ft:-?}, corpus ${corp:-?}, peak rss ${rss:-?} MB"
}

campaign() {
    local t=${1:?usage: fuzz/run.sh campaign TARGET [RUNS]} runs=${2:-10000000}
    check_target "$t"
    need_cargo_fuzz
    local corpus="$HERE/corpus/$t" log
    mkdir -p "$corpus" "$HERE/artifacts/$t" "$HERE/logs"
    log="$HERE/logs/$t-$(date -u +%Y%m%dT%H%M%SZ).log"
    cargo fuzz build -s none -a --target-dir "$TARGET_DIR" "$t"
    local start
    start=$(date +%s)
    if cargo fuzz run -s none -a --target-dir "$TARGET_DIR" "$t" "$corpus" "$HERE/seeds/$t" -- \
        $(libfuzzer_args "$t") -runs="$runs" >"$log" 2>&1; then
        local wall=$(($(date +%s) - start))
        echo "$t: $(stats_line "$log"), wall ${wall} s, $(date -u +%F), $(nproc) cores, $(uname -m), log $log"
    else
        report_failure "$t" "$log"
        return 1
    fi
}

repro() {
    local t=${1:?usage: fuzz/run.sh repro TARGET FILE} file=${2:?usage: fuzz/run.sh repro TARGET FILE}
    check_target "$t"
    need_cargo_fuzz
    cargo fuzz run --dev -s none --target-dir "$TARGET_DIR" "$t" "$file"
}

case ${1:-} in
    smoke) shift; smoke "$@" ;;
    campaign) shift; campaign "$@" ;;
    repro) shift; repro "$@" ;;
    list) printf '%s\n' "${TARGETS[@]}" ;;
    *) sed -n '2,18p' "$0"; exit 2 ;;
esac
