#!/usr/bin/env bash
# Builds every package of ddblock for x86_64 Linux into dist/, with dist/SHA256SUMS:
#
#   ./package.sh            # build all for x86_64 glibc Linux (release builds: ~7 min cold on 2 cores)
#   ./package.sh --target[=]TRIPLE [--target TRIPLE ...] # the wheel, the npm platform package and
#                           # the CLI tarball for each Linux target: x86_64-unknown-linux-gnu,
#                           # aarch64-unknown-linux-gnu, x86_64-unknown-linux-musl,
#                           # aarch64-unknown-linux-musl (gnu: glibc 2.17+, manylinux2014; musl:
#                           # musllinux_1_2, the CLI static)
#   ./package.sh --all-linux  # all four
#   ./package.sh --check    # also check every artifact by what it is (compat-tests/packages/
#                           # artifacts.py: ELF machine, interpreter, NEEDED, glibc symbols against
#                           # the declared platform), build a wheel from the sdist, then install each
#                           # glibc package (aarch64 under QEMU) with no Rust toolchain on PATH and
#                           # run its quickstart against a local server (compat-tests/packages/
#                           # install-tests.py; needs DDBLOCK_TEST_DDBLOCAL)
#
#   dist/ddblock-V-cp39-abi3-manylinux2014_x86_64...whl   Python wheel, abi3 (CPython 3.9+), glibc 2.17+
#   dist/ddblock-V.tar.gz                                Python sdist (builds with Rust + maturin)
#   dist/ddblock-V.tgz, dist/ddblock-linux-x64-gnu-V.tgz  npm: the main package, which names the
#                                                        platform package in optionalDependencies
#                                                        (napi-rs's layout), and that package
#   dist/ddblock-V-x86_64-unknown-linux-gnu.tar.gz       the `ddblock` CLI, glibc 2.17+, LICENSE, README
#   dist/ddblock{,-admin,-cli}-V.crate                   `cargo package` of the core, the admin crate and the CLI
#   dist/ddblock-laravel-V.zip                           `composer archive` of the PHP driver
#
# Native code is linked against glibc 2.17 with zig (maturin --zig, cargo-zigbuild), so the wheel
# is manylinux2014 and the binaries run on Amazon Linux 2, RHEL 7 and newer. The tools come from
# PyPI (scripts/package-requirements.txt, into target/package-tools) and Debian (Composer).
# Other platforms are built by .github/workflows/release.yml (docs/release.md).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$ROOT"
log() { printf '[package] %s\n' "$*"; }
die() { printf '[package] ERROR: %s\n' "$*" >&2; exit 1; }

check=0
LINUX=(x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu x86_64-unknown-linux-musl aarch64-unknown-linux-musl)
TRIPLES=()
while (($#)); do
    case $1 in
        --check) check=1 ;;
        --target | --target=*)
            if [[ $1 == --target ]]; then triple=${2:-} && shift; else triple=${1#--target=}; fi
            [[ " ${LINUX[*]} " == *" $triple "* ]] || die "--target wants one of ${LINUX[*]}, not '$triple'"
            TRIPLES+=("$triple")
            ;;
        --all-linux) TRIPLES+=("${LINUX[@]}") ;;
        -h | --help) awk 'NR > 1 && !/^#/ {exit} NR > 1' "$0"; exit 0 ;;
        *) die "unknown argument $1 (try --help)" ;;
    esac
    shift
done
((${#TRIPLES[@]})) || TRIPLES=(x86_64-unknown-linux-gnu)
mapfile -t TRIPLES < <(printf '%s\n' "${TRIPLES[@]}" | awk '!seen[$0]++') # each once, in order

START=$SECONDS
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
GLIBC=2.17
DIST="$ROOT/dist"
STAGE="$TARGET_DIR/package-stage"
timed() { local t=$SECONDS; "$@"; log "  ($((SECONDS - t)) s)"; }

# --- one version ------------------------------------------------------------------------------
python3 scripts/check-version.py >/dev/null || { python3 scripts/check-version.py; die "the manifests disagree on the version"; }
VERSION="$(python3 -c 'import tomllib; print(tomllib.load(open("core/Cargo.toml", "rb"))["package"]["version"])')"
log "version $VERSION"

# --- tools: maturin, zig and cargo-zigbuild from PyPI; Composer from Debian -------------------
TOOLS="$TARGET_DIR/package-tools"
REQS="$ROOT/scripts/package-requirements.txt"
if ! cmp -s "$REQS" "$TOOLS/requirements.txt" 2>/dev/null; then
    log "tools: python3 -m venv $TOOLS; pip install -r scripts/package-requirements.txt"
    rm -rf "$TOOLS"
    python3 -m venv "$TOOLS"
    "$TOOLS/bin/pip" install --quiet --disable-pip-version-check --no-input -r "$REQS"
    cp "$REQS" "$TOOLS/requirements.txt"
fi
# maturin --zig and cargo-zigbuild find `python -m ziglang` through the venv's python3.
export PATH="$TOOLS/bin:$PATH"
command -v composer >/dev/null 2>&1 || "$ROOT/compat-tests/setup.sh" package
[[ -x bindings/node/node_modules/.bin/napi ]] || compat-tests/npm-install.sh bindings/node

rm -rf "$DIST" "$STAGE"
mkdir -p "$DIST" "$STAGE"

# The standard library of each target (rustup, seconds each).
for triple in "${TRIPLES[@]}"; do
    rustup target list --installed | grep -qx "$triple" || rustup target add "$triple"
done

node_stage="$STAGE/node"
mkdir -p "$node_stage"
cp bindings/node/{package.json,lib.js,lib.d.ts,native.js,native.d.ts,README.md,LICENSE} "$node_stage/"
"$ROOT/bindings/node/node_modules/.bin/napi" create-npm-dirs --cwd "$node_stage" >/dev/null 2>&1

# gnu: linked against glibc 2.17 (zig's target suffix); musl: the CLI static, the two native
# modules dynamic against the system's musl (a cdylib cannot be crt-static).
zig_target() { [[ $1 == *-gnu ]] && echo "$1.$GLIBC" || echo "$1"; }
for TRIPLE in "${TRIPLES[@]}"; do
    # One crypto library in what ships for this target: aws-lc (a C build, cross-compiled with zig).
    # A second (ring's C and assembly, or OpenSSL) would double the cross-build's failure points.
    crypto="$(cargo tree --quiet --locked --target "$TRIPLE" -e normal --prefix none -f '{p}' \
        -p ddblock-cli -p ddblock-node -p ddblock-python | awk '{print $1}' |
        grep -xE 'aws-lc-sys|ring|openssl-sys|boring-sys|native-tls' | sort -u | paste -sd' ')"
    [[ $crypto == aws-lc-sys ]] || die "$TRIPLE: the crypto libraries in the graph are '$crypto', not aws-lc-sys alone"
    log "crypto library for $TRIPLE: $crypto (cargo tree -e normal)"
done

# --- the release builds: two lanes at once ---------------------------------------------------------
# maturin's builds (the wheels) in one lane, cargo-zigbuild's (the CLI and the Node module) in the
# other, each in its own target dir: their zig wrappers differ (another linker path), so sharing one
# would make each build redo the other's every time. Each build ends in a fat-LTO link on one core,
# so two lanes keep both cores busy; within a lane one build at a time, as each tool rewrites its own
# zig wrappers when it starts.
python_lane() {
    for TRIPLE in "${TRIPLES[@]}"; do
        [[ $TRIPLE == *-gnu ]] && compat=manylinux2014 || compat=musllinux_1_2
        log "python: maturin build --release --zig --compatibility $compat --target $TRIPLE"
        timed maturin build --quiet --release --zig --compatibility "$compat" --target "$TRIPLE" \
            -m bindings/python/Cargo.toml --out "$DIST"
    done
}
rust_lane() {
    for TRIPLE in "${TRIPLES[@]}"; do
        zt="$(zig_target "$TRIPLE")"
        if [[ $TRIPLE == *-musl ]]; then
            log "rust: cargo zigbuild --release --target $zt -p ddblock-cli; -p ddblock-node (-crt-static)"
            timed env CARGO_TARGET_DIR="$TARGET_DIR/zigbuild" cargo zigbuild --quiet --release --locked \
                --target "$zt" -p ddblock-cli
            timed env CARGO_TARGET_DIR="$TARGET_DIR/zigbuild-dylib" RUSTFLAGS="-C target-feature=-crt-static" \
                cargo zigbuild --quiet --release --locked --target "$zt" -p ddblock-node
        else
            log "rust: cargo zigbuild --release --target $zt -p ddblock-cli -p ddblock-node"
            timed env CARGO_TARGET_DIR="$TARGET_DIR/zigbuild" cargo zigbuild --quiet --release --locked \
                --target "$zt" -p ddblock-cli -p ddblock-node
        fi
    done
}
t_builds=$SECONDS
(set -e; python_lane) >"$STAGE/python-lane.log" 2>&1 &
python_pid=$!
(set -e; rust_lane) >"$STAGE/rust-lane.log" 2>&1 &
rust_pid=$!
lanes_ok=1
wait "$python_pid" || lanes_ok=0
cat "$STAGE/python-lane.log"
wait "$rust_pid" || lanes_ok=0
cat "$STAGE/rust-lane.log"
((lanes_ok)) || die "a release build failed (its output is above)"
log "release builds, both lanes: $((SECONDS - t_builds)) s"

for TRIPLE in "${TRIPLES[@]}"; do
    OUT="$TARGET_DIR/zigbuild/$TRIPLE/release"
    node_so="$OUT/libddblock_node.so"
    [[ $TRIPLE == *-gnu ]] || node_so="$TARGET_DIR/zigbuild-dylib/$TRIPLE/release/libddblock_node.so"

    # --- CLI tarball -----------------------------------------------------------------------------
    cli="ddblock-$VERSION-$TRIPLE"
    mkdir -p "$STAGE/$cli"
    cp "$OUT/ddblock" LICENSE "$STAGE/$cli/"
    cp bindings/cli/README.md "$STAGE/$cli/README.md"
    tar -C "$STAGE" --owner=0 --group=0 --sort=name -czf "$DIST/$cli.tar.gz" "$cli"
    log "cli: $cli.tar.gz"

    # --- npm platform package (napi-rs's layout: npm/<platform>/) -----------------------------------
    case $TRIPLE in
        x86_64-unknown-linux-gnu) platform=linux-x64-gnu ;;
        aarch64-unknown-linux-gnu) platform=linux-arm64-gnu ;;
        x86_64-unknown-linux-musl) platform=linux-x64-musl ;;
        aarch64-unknown-linux-musl) platform=linux-arm64-musl ;;
    esac
    cp "$node_so" "$node_stage/npm/$platform/ddblock.$platform.node"
    cp LICENSE "$node_stage/npm/$platform/"
done
log "python: maturin sdist"
timed maturin sdist -m bindings/python/Cargo.toml --out "$DIST"

# --- npm: the main package, naming each platform package built -----------------------------------
node - "$node_stage" <<'JS'
// The published main package ships no binary: it names each platform package as an optional
// dependency at its own version, and native.js loads whichever npm installed (as napi prepublish does).
const fs = require('fs')
const path = require('path')
const dir = process.argv[2]
const main = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'))
main.files = main.files.filter((f) => !f.endsWith('.node'))
main.optionalDependencies = {}
for (const p of fs.readdirSync(path.join(dir, 'npm'))) {
  const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'npm', p, 'package.json'), 'utf8'))
  pkg.files = [...new Set([...(pkg.files || []), 'LICENSE'])]
  fs.writeFileSync(path.join(dir, 'npm', p, 'package.json'), JSON.stringify(pkg, null, 2) + '\n')
  if (fs.existsSync(path.join(dir, 'npm', p, pkg.main))) main.optionalDependencies[pkg.name] = pkg.version
}
delete main.devDependencies
delete main.scripts
delete main.overrides
delete main['//overrides']
fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify(main, null, 2) + '\n')
JS
(cd "$node_stage" && npm pack --silent --pack-destination "$DIST" >/dev/null)
for dir in "$node_stage"/npm/*/; do
    compgen -G "$dir*.node" >/dev/null && (cd "$dir" && npm pack --silent --pack-destination "$DIST" >/dev/null)
done
log "node: $(cd "$DIST" && ls ./*.tgz | xargs -n1 basename | tr '\n' ' ')"

# --- Rust crates ---------------------------------------------------------------------------------
# Verified: each packaged crate is built from its .crate alone, the admin crate and the CLI against
# the packaged core (cargo's local overlay registry), so no path-only dependency can hide.
log "rust: cargo package -p ddblock -p ddblock-admin -p ddblock-cli"
# Cargo trusts a registry crate never to change, and the overlay's ddblock 0.1.0 does change between
# runs: the crate it once unpacked into $CARGO_HOME/registry/src/-<hash of the overlay's path>/
# and the library it once built from it are reused as they are, so the CLI was verified against an
# old core (a CI run failed with E0432 on imports the old core lacked). Both go before each run:
# the unpacked copies (only overlays, local registries, have "-<hash>" folders) and the verify
# build's own target dir (a registry crate's units have no source file to tell them stale by;
# it is also removed after a run, but an interrupted run leaves it).
VERIFY_DIR="$TARGET_DIR/package-verify"
rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/-*/ddblock-"$VERSION" \
    "${CARGO_HOME:-$HOME/.cargo}"/registry/src/-*/ddblock-admin-"$VERSION" \
    "${CARGO_HOME:-$HOME/.cargo}"/registry/src/-*/ddblock-cli-"$VERSION" \
    "$VERIFY_DIR"
# --allow-dirty: dist/ is for trying the packages; publishing is the release workflow's, from a tag.
# The verify build is only compiled, never debugged: no debug info, no incremental cache (it
# halves the 2.3 GB it took). With --check, the sdist's debug build below reuses its dependencies
# (the same flags; its own crates are path crates, never the overlay's); then it goes.
timed env CARGO_PROFILE_DEV_DEBUG=false CARGO_INCREMENTAL=0 \
    cargo package --quiet --locked --allow-dirty --target-dir "$VERIFY_DIR" -p ddblock -p ddblock-admin -p ddblock-cli
for crate in ddblock ddblock-admin ddblock-cli; do cp "$VERIFY_DIR/package/$crate-$VERSION.crate" "$DIST/"; done
[[ $check == 1 ]] || rm -rf "$VERIFY_DIR"

# --- PHP: composer validate --strict, composer archive -------------------------------------------
log "php: composer validate --strict; composer archive"
(cd bindings/php && composer validate --strict --no-check-publish --no-interaction --quiet) ||
    (cd bindings/php && composer validate --strict --no-check-publish --no-interaction; exit 1)
(cd bindings/php && composer archive --no-interaction --quiet --format=zip --dir="$DIST" --file="ddblock-laravel-$VERSION")

# --- checksums -----------------------------------------------------------------------------------
(cd "$DIST" && sha256sum -- * >SHA256SUMS)
log "dist/ ($((SECONDS - START)) s):"
(cd "$DIST" && ls -l --block-size=K -- * | awk '{print "  " $5 "  " $9}')

if [[ $check == 1 ]]; then
    # The sdist builds: pip builds a wheel from it as a user without a wheel for their platform
    # would (maturin from PyPI in an isolated env), in the debug profile to save time. Not in the
    # workspace's target dir: there cargo would take the sdist's files (same relative paths, older
    # mtimes) for the ones it already built and compile nothing. In the crates' verify build's,
    # which built no workspace path crate: its dependencies are reused. --no-cache-dir: no wheel
    # from pip's cache either.
    log "python: the sdist builds (pip wheel from dist/ddblock-$VERSION.tar.gz, debug profile)"
    # Its whole output goes to a log; on failure, cargo's error lines and the free disk space are
    # printed last, where a CI summary that shows only the end of the output still has them.
    rm -rf "$STAGE/sdist-wheel"
    sdist_log="$STAGE/sdist-wheel.log"
    t_sdist=$SECONDS
    if ! env CARGO_TARGET_DIR="$VERIFY_DIR" MATURIN_PEP517_ARGS="--profile dev" \
        CARGO_PROFILE_DEV_DEBUG=false CARGO_INCREMENTAL=0 \
        "$TOOLS/bin/python" -m pip wheel --verbose --no-deps --no-cache-dir --disable-pip-version-check \
        -w "$STAGE/sdist-wheel" "$DIST/ddblock-$VERSION.tar.gz" >"$sdist_log" 2>&1; then
        tail -n 40 "$sdist_log"
        log "the errors in $sdist_log:"
        grep -E '(^|[^a-z])(error|Error|ERROR)(\[E[0-9]+\])?:|No space|Killed|signal: ' "$sdist_log" | tail -n 15
        log "free space: $(df -h --output=avail "$TARGET_DIR" | tail -1) on $TARGET_DIR"
        die "pip could not build a wheel from dist/ddblock-$VERSION.tar.gz (the lines above)"
    fi
    log "  ($((SECONDS - t_sdist)) s)"
    # The debug builds are not needed after it (about 1 GB).
    rm -rf "$VERIFY_DIR"
    compgen -G "$STAGE/sdist-wheel/ddblock-$VERSION-*.whl" >/dev/null || die "pip wheel gave no wheel from the sdist"
    log "artifacts: each checked by what it is (compat-tests/packages/artifacts.py)"
    python3 compat-tests/packages/artifacts.py "$DIST"
    python3 compat-tests/packages/artifacts.py --swapped "$DIST"
    [[ " ${TRIPLES[*]}" != *" aarch64-"* ]] || compat-tests/setup.sh qemu
    python3 compat-tests/packages/install-tests.py "$DIST" "${TRIPLES[@]/#/--target=}"
fi
