#!/usr/bin/env python3
"""Checks that every package of ddblock carries the same version, and that every LICENSE copy is
the root one.

    scripts/check-version.py               # all the versions agree with core/Cargo.toml's
    scripts/check-version.py --tag v0.1.0  # ... and with the release tag

The version is core/Cargo.toml's; each of these must equal it: the Rust crates (the CLI, the
Python and Node bindings), the CLI's dependency on `ddblock` (`version =`), Cargo.lock's entries
of those crates, pyproject.toml, package.json, package-lock.json (its root), the version the
generated Node loader (bindings/node/native.js) expects, and CHANGELOG.md's latest released
section. composer.json must carry no version (Packagist takes it from the tag). The LICENSE of
every package folder must be byte-identical to the root LICENSE.

Prints one line per check and ends with `N passed, M failed`; exits 1 if any check failed.
Python 3.11+ (tomllib), standard library only.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

import tomllib

ROOT = Path(__file__).resolve().parents[1]

#: The crate whose version the others follow.
REFERENCE = "core/Cargo.toml"
#: Rust crates released with it (package.version).
CRATES = [
    "admin/Cargo.toml",
    "bindings/cli/Cargo.toml",
    "bindings/python/Cargo.toml",
    "bindings/node/Cargo.toml",
]
#: Folders whose LICENSE ships in a package.
LICENSED = ["core", "admin", "bindings/cli", "bindings/python", "bindings/node", "bindings/php"]
#: A released section of a Keep a Changelog file: `## [X.Y.Z] - YYYY-MM-DD`.
RELEASED = re.compile(r"^## \[(?P<version>[^\]]+)\] - (?P<date>\d{4}-\d{2}-\d{2})\s*$", re.M)
SEMVER = re.compile(r"^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$")


class Checks:
    def __init__(self) -> None:
        self.passed = 0
        self.failed = 0

    def check(self, ok: bool, what: str, detail: str) -> None:
        if ok:
            self.passed += 1
            print(f"ok    {what}: {detail}")
        else:
            self.failed += 1
            print(f"FAIL  {what}: {detail}")

    def equal(self, what: str, found: object, expected: str) -> None:
        if found == expected:
            self.check(True, what, str(found))
        else:
            self.check(False, what, f"{found!r}, expected {expected!r}")


def toml(path: str) -> dict[str, Any]:
    with open(ROOT / path, "rb") as f:
        return tomllib.load(f)


def read_json(path: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((ROOT / path).read_text(encoding="utf-8"))
    return data


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tag", help="the release tag, vX.Y.Z, to check against the versions")
    args = parser.parse_args(argv)
    c = Checks()

    version = toml(REFERENCE)["package"]["version"]
    c.check(bool(SEMVER.match(version)), REFERENCE, f"{version} (the reference version)")

    if args.tag is not None:
        c.equal("--tag", args.tag, f"v{version}")

    crates = {toml(REFERENCE)["package"]["name"]: version}
    for path in CRATES:
        package = toml(path)["package"]
        crates[package["name"]] = package.get("version")
        c.equal(path, package.get("version"), version)

    dep = toml("bindings/cli/Cargo.toml").get("dependencies", {}).get("ddblock", {})
    dep_version = dep.get("version") if isinstance(dep, dict) else dep
    # `version = "X.Y.Z"` means ^X.Y.Z: it must name this release exactly, with no operator.
    c.equal("bindings/cli/Cargo.toml [dependencies] ddblock version", dep_version, version)

    lock = toml("Cargo.lock")
    locked = {p["name"]: p["version"] for p in lock.get("package", []) if p["name"] in crates}
    for name in crates:
        c.equal(f"Cargo.lock {name}", locked.get(name), version)

    c.equal(
        "bindings/python/pyproject.toml [project] version",
        toml("bindings/python/pyproject.toml")["project"].get("version"),
        version,
    )

    c.equal(
        "bindings/node/package.json version",
        read_json("bindings/node/package.json").get("version"),
        version,
    )
    node_lock = read_json("bindings/node/package-lock.json")
    c.equal("bindings/node/package-lock.json version", node_lock.get("version"), version)
    c.equal(
        'bindings/node/package-lock.json packages[""].version',
        node_lock.get("packages", {}).get("", {}).get("version"),
        version,
    )

    loader = (ROOT / "bindings/node/native.js").read_text(encoding="utf-8")
    expected = set(re.findall(r"bindingPackageVersion !== '([^']*)'", loader))
    if expected == {version}:
        c.check(True, "bindings/node/native.js (generated loader) expects", version)
    else:
        c.check(
            False,
            "bindings/node/native.js (generated loader) expects",
            f"{sorted(expected)}, expected [{version!r}] (regenerate it: npm run build)",
        )

    composer = read_json("bindings/php/composer.json")
    if "version" not in composer:
        c.check(
            True, "bindings/php/composer.json", "no version field (Packagist takes it from the tag)"
        )
    else:
        c.check(
            False,
            "bindings/php/composer.json",
            f'has "version": {composer["version"]!r}: remove it, Packagist takes it from the tag',
        )
    php_versions = []
    for php in sorted((ROOT / "bindings/php/src").rglob("*.php")):
        for m in re.finditer(r"const\s+VERSION\s*=\s*'([^']*)'", php.read_text(encoding="utf-8")):
            php_versions.append((php.relative_to(ROOT), m.group(1)))
    if php_versions:
        for where, found in php_versions:
            c.equal(f"{where} VERSION", found, version)
    else:
        c.check(True, "bindings/php/src", "no VERSION constant")

    for changelog in ("CHANGELOG.md", "bindings/php/CHANGELOG.md"):
        text = (ROOT / changelog).read_text(encoding="utf-8")
        released = RELEASED.search(text)
        c.equal(
            f"{changelog} latest release", released.group("version") if released else None, version
        )
        unreleased = "## [Unreleased]" in text
        c.check(
            unreleased,
            changelog,
            "has an [Unreleased] section" if unreleased else "no ## [Unreleased] section",
        )

    root_license = (ROOT / "LICENSE").read_bytes()
    c.check(root_license.startswith(b"MIT License"), "LICENSE", "MIT License")
    for folder in LICENSED:
        license_path = ROOT / folder / "LICENSE"
        if not license_path.exists():
            c.check(False, f"{folder}/LICENSE", "missing: copy the root LICENSE")
        else:
            same = license_path.read_bytes() == root_license
            c.check(
                same,
                f"{folder}/LICENSE",
                "identical to LICENSE" if same else "differs from LICENSE: copy the root one",
            )

    print(f"{c.passed} passed, {c.failed} failed")
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
