#!/usr/bin/env bash
# The chaos run (docs/reliability.md): workers in Rust, Python, Node and PHP (the ddblock/laravel
# driver) on one table, stock Laravel workers on their own keys as a control, through the fault
# proxy with every fault at once, a server restart and clocks 2 s off; judged from the server's
# journal of committed writes. Exits 1 when a ddblock guarantee was broken.
#
#   ./compat-tests/chaos/run.sh                    # the short profile (a minute or two; CI runs it)
#   ./compat-tests/chaos/run.sh --profile long     # 16 workers x 1,000 acquisitions (the docs' figures)
#   ./compat-tests/chaos/run.sh --only rust,node   # some languages only
#   ./compat-tests/chaos/run.sh --server ddblocal  # on AWS's DynamoDB Local (default: dynalite)
#
# Installs what it needs (compat-tests/setup.sh), builds the Python and Node bindings (debug), the
# chaos binaries and the Rust peer (ddblock-peer); records, the journal and report.json go to
# compat-tests/.run/chaos/.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)" # compat-tests/
cd "$HERE/.."

"$HERE/setup.sh" base php servers
echo "== building the Python and Node bindings and the chaos run (first time: a few minutes)"
DDBLOCK_BUILD_ONLY=1 bindings/python/test.sh
DDBLOCK_BUILD_ONLY=1 bash bindings/node/test.sh
cargo build --quiet -p ddblock-chaos -p ddblock-test-support --bins
exec "${CARGO_TARGET_DIR:-target}/debug/chaos" "$@"
