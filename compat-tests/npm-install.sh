#!/usr/bin/env bash
# Installs a folder's npm dependencies exactly as its package-lock.json pins them, and does not
# fail when the registry serves more (or fewer) optional platform packages than the lock lists.
#
#   compat-tests/npm-install.sh DIR
#
# 1. Skipped when DIR/node_modules was installed from this very lock (npm writes
#    node_modules/.package-lock.json on every install; we stamp the lock's hash beside it).
# 2. `npm ci`: the reproducible install. With a complete lock (every platform's optional packages
#    listed, with their os/cpu), npm fetches only this platform's packages, so a registry that
#    serves fewer platforms does not matter.
# 3. If npm ci refuses the lock (it is missing optional packages that a package in it names and
#    that the registry now serves, as @napi-rs/cli's @napi-rs/tar-* once were), `npm install`
#    from the same lock, then check that every package it actually installed is the one the
#    committed lock pins (same version and integrity). Entries npm added for other platforms
#    are tolerated; the committed lock is put back unchanged, with a warning saying how to
#    refresh it. Anything else that differs fails the install.
set -euo pipefail

dir="$(cd "${1:?usage: npm-install.sh DIR}" && pwd)"
cd "$dir"
log() { printf '[npm-install] %s: %s\n' "${dir#"$PWD/"}" "$*" >&2; }

[[ -f package-lock.json ]] || { log "no package-lock.json: run 'npm install' once and commit the lock"; exit 1; }
stamp=node_modules/.ddblock-lock-sha256
want="$(sha256sum package.json package-lock.json | sha256sum | cut -d' ' -f1)"
if [[ -f $stamp && -f node_modules/.package-lock.json && "$(cat "$stamp")" == "$want" ]]; then
    log "node_modules matches package-lock.json, skipping"
    exit 0
fi

npm_flags=(--no-audit --no-fund --loglevel=error)
saved="$(mktemp)"
ci_err="$(mktemp)"
trap 'rm -f "$saved" "$ci_err"' EXIT
if npm ci "${npm_flags[@]}" 2>"$ci_err"; then
    echo "$want" >"$stamp"
    exit 0
fi
# npm ci follows its reason with its whole usage text: print the reason only.
grep -v -e '^npm error *$' "$ci_err" | sed -n '1,6p' >&2
log "npm ci refused the lock; installing from it with npm install and checking what installed"
cp package-lock.json "$saved"
restore() { cp "$saved" package-lock.json; }
npm install "${npm_flags[@]}" || { restore; log "npm install failed"; exit 1; }

# Every installed package (node_modules/.package-lock.json lists exactly those) must be pinned by
# the committed lock at the same version and integrity; extra lock entries are other platforms'.
if ! node - "$saved" <<'JS'; then
const fs = require('fs')
const committed = JSON.parse(fs.readFileSync(process.argv[2], 'utf8')).packages
const installed = JSON.parse(fs.readFileSync('node_modules/.package-lock.json', 'utf8')).packages
const bad = []
for (const [path, pkg] of Object.entries(installed)) {
  if (path === '' || pkg.link) continue
  const want = committed[path]
  if (!want) bad.push(`${path}@${pkg.version}: installed, but not in the committed lock`)
  else if (want.version !== pkg.version || (want.integrity && pkg.integrity && want.integrity !== pkg.integrity))
    bad.push(`${path}: installed ${pkg.version}, the committed lock pins ${want.version}`)
}
for (const [path, pkg] of Object.entries(committed)) {
  if (path === "" || installed[path] || pkg.optional) continue
  if (pkg.os || pkg.cpu) continue
  bad.push(`${path}@${pkg.version}: pinned by the committed lock, but not installed`)
}
if (bad.length) {
  console.error('[npm-install] what installed is not what package-lock.json pins:\n  ' + bad.join('\n  '))
  process.exit(1)
}
JS
    restore
    log "refresh the lock with 'npm install' (with an empty npm cache: npm_config_cache=\$(mktemp -d)) and commit it"
    exit 1
fi
added="$(node -e '
const a = Object.keys(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).packages)
const b = Object.keys(JSON.parse(require("fs").readFileSync("package-lock.json", "utf8")).packages)
console.log(b.filter((k) => !a.includes(k)).length)' "$saved")"
restore
echo "$want" >"$stamp"
log "warning: installed as pinned; the registry serves $added optional package(s) the lock does not list (other platforms')."
log "refresh the lock with 'npm install' (with an empty npm cache: npm_config_cache=\$(mktemp -d)) and commit it"
