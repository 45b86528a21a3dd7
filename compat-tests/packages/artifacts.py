#!/usr/bin/env python3
"""Checks each artifact of dist/ by what it is, not by its name: every ELF file's machine,
interpreter, `NEEDED` entries and glibc symbol versions (readelf, which reads any architecture),
against the platform its package declares (the wheel's tags, the npm package's `os`/`cpu`/`libc`,
the CLI tarball's target triple). A mismatch fails.

    compat-tests/packages/artifacts.py [DIST]     # every artifact in DIST (default dist/)
    compat-tests/packages/artifacts.py --swapped  # shows a swapped file failing (needs DIST too)

For glibc targets the newest `GLIBC_` symbol a file needs must be at most 2.17 (manylinux2014,
Amazon Linux 2); for musl targets no glibc at all, and the CLI is static.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GLIBC = (2, 17)
# What a glibc binary may link beyond the C library's own parts: nothing else.
GLIBC_LIBS = {
    "libc.so.6",
    "libm.so.6",
    "libdl.so.2",
    "libpthread.so.0",
    "librt.so.1",
    "libutil.so.1",
    "libgcc_s.so.1",
    "ld-linux-x86-64.so.2",
    "ld-linux-aarch64.so.1",
}


@dataclass(frozen=True)
class Target:
    """One Linux target: what its files must be, and the names its packages carry."""

    triple: str
    machine: str  # readelf -h's "Machine:"
    libc: str  # "glibc" or "musl"
    interpreter: str  # the dynamic loader a glibc executable names
    wheel_platform: str  # the wheel's platform tag
    npm: str  # the napi platform suffix (ddblock-<npm>)
    cpu: str  # npm's cpu


TARGETS = {
    t.triple: t
    for t in (
        Target(
            "x86_64-unknown-linux-gnu",
            "Advanced Micro Devices X86-64",
            "glibc",
            "/lib64/ld-linux-x86-64.so.2",
            "manylinux2014_x86_64",
            "linux-x64-gnu",
            "x64",
        ),
        Target(
            "aarch64-unknown-linux-gnu",
            "AArch64",
            "glibc",
            "/lib/ld-linux-aarch64.so.1",
            "manylinux2014_aarch64",
            "linux-arm64-gnu",
            "arm64",
        ),
        Target(
            "x86_64-unknown-linux-musl",
            "Advanced Micro Devices X86-64",
            "musl",
            "",
            "musllinux_1_2_x86_64",
            "linux-x64-musl",
            "x64",
        ),
        Target(
            "aarch64-unknown-linux-musl",
            "AArch64",
            "musl",
            "",
            "musllinux_1_2_aarch64",
            "linux-arm64-musl",
            "arm64",
        ),
    )
}


def readelf(path: Path, *flags: str) -> str:
    """readelf's output for `path` (any architecture), in the C locale."""
    return subprocess.run(
        ["readelf", "--wide", *flags, str(path)],
        capture_output=True,
        text=True,
        check=True,
        env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"},
    ).stdout


def check_elf(path: Path, target: Target, executable: bool) -> str:
    """Fails unless `path` is an ELF file for `target`; returns a one-line description."""
    what = f"{path.name} (declared {target.triple})"
    header = readelf(path, "-h")
    machine = re.search(r"Machine:\s+(.+)", header)
    assert machine, f"{what}: not an ELF file"
    assert machine.group(1).strip() == target.machine, (
        f"{what}: an ELF file for {machine.group(1).strip()}, not {target.machine}"
    )
    interp = re.search(r"Requesting program interpreter: ([^\]]+)\]", readelf(path, "-l"))
    needed = set(re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", readelf(path, "-d")))
    versions = re.findall(r"Name: GLIBC_([0-9.]+)", readelf(path, "-V"))
    newest = max((tuple(int(n) for n in v.split(".")) for v in versions), default=None)
    if target.libc == "glibc":
        if executable:
            assert interp and interp.group(1) == target.interpreter, (
                f"{what}: interpreter {interp.group(1) if interp else None}, "
                f"not {target.interpreter}"
            )
        assert needed <= GLIBC_LIBS, f"{what}: needs {sorted(needed - GLIBC_LIBS)} beyond glibc"
        assert newest is not None and newest <= GLIBC, (
            f"{what}: needs GLIBC_{'.'.join(map(str, newest or ()))}, newer than "
            f"{'.'.join(map(str, GLIBC))}"
        )
        return f"{machine.group(1).strip()}, glibc {'.'.join(map(str, newest))}+"
    assert newest is None, f"{what}: a musl target's file needs glibc (GLIBC_ symbols)"
    glibc = needed & {"libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "libgcc_s.so.1"}
    assert not glibc, f"{what}: a musl target's file links glibc's {sorted(glibc)}"
    if executable:
        assert not interp and not needed, (
            f"{what}: the musl CLI should be static, but names "
            f"{interp.group(1) if interp else ''} {sorted(needed)}"
        )
        return f"{machine.group(1).strip()}, static (musl)"
    return f"{machine.group(1).strip()}, musl"


def target_of(name: str, field: str, value: str) -> Target:
    found = [t for t in TARGETS.values() if getattr(t, field) == value]
    assert len(found) == 1, f"{name}: no known target has {field} {value!r}"
    return found[0]


def check_cli(tgz: Path, scratch: Path) -> str:
    triple = re.sub(r"^ddblock-[0-9][^-]*-", "", tgz.name.removesuffix(".tar.gz"))
    target = TARGETS.get(triple)
    assert target, f"{tgz.name}: unknown target {triple}"
    with tarfile.open(tgz) as t:
        t.extractall(scratch / tgz.name)  # our own tarball, just built
    (binary,) = (scratch / tgz.name).glob("*/ddblock")
    return check_elf(binary, target, executable=True)


def check_wheel(whl: Path, scratch: Path) -> str:
    # name-version-python-abi-platform.whl; the platform part may list several tags with '.'.
    platforms = whl.name.removesuffix(".whl").split("-")[-1].split(".")
    with zipfile.ZipFile(whl) as z:
        (wheel_meta,) = [n for n in z.namelist() if n.endswith(".dist-info/WHEEL")]
        tags = {
            line.split(":", 1)[1].strip().split("-")[-1]
            for line in z.read(wheel_meta).decode().splitlines()
            if line.startswith("Tag:")
        }
        (so,) = [n for n in z.namelist() if n.endswith(".so")]
        z.extract(so, scratch / whl.name)
    assert tags == set(platforms), f"{whl.name}: its WHEEL file says {sorted(tags)}"
    # manylinux2014 is also spelled manylinux_2_17: one target for all of a wheel's tags.
    canonical = {p.replace("manylinux_2_17_", "manylinux2014_") for p in platforms}
    assert len(canonical) == 1, f"{whl.name}: tags for several platforms {platforms}"
    target = target_of(whl.name, "wheel_platform", canonical.pop())
    return check_elf(scratch / whl.name / so, target, executable=False)


def check_npm(tgz: Path, scratch: Path) -> str:
    with tarfile.open(tgz) as t:
        t.extractall(scratch / tgz.name)  # our own tarball, just built
    pkg = scratch / tgz.name / "package"
    meta = json.loads((pkg / "package.json").read_text(encoding="utf-8"))
    if not meta["name"].startswith("ddblock-"):
        # The main package: no binary, and an optional dependency for each platform package.
        assert not list(pkg.glob("*.node")), f"{tgz.name}: the main package ships a binary"
        return f"main package, optional: {', '.join(sorted(meta['optionalDependencies']))}"
    target = target_of(tgz.name, "npm", meta["name"].removeprefix("ddblock-"))
    declared = (meta.get("os"), meta.get("cpu"), meta.get("libc"))
    assert declared == (["linux"], [target.cpu], [target.libc]), (
        f"{tgz.name}: declares os/cpu/libc {declared}, not linux/{target.cpu}/{target.libc}"
    )
    (module,) = pkg.glob("*.node")
    return check_elf(module, target, executable=False)


def check_all(dist: Path) -> list[tuple[str, bool, str]]:
    """Checks every wheel, npm tarball and CLI tarball in `dist`: (file, ok, detail)."""
    out = []
    with tempfile.TemporaryDirectory(prefix="ddblock-artifacts-") as tmp:
        for f in sorted(dist.iterdir()):
            fn: Callable[[Path, Path], str]
            if f.name.endswith(".whl"):
                fn = check_wheel
            elif f.name.endswith(".tgz"):
                fn = check_npm
            elif re.match(r"ddblock-[0-9].*-linux-(gnu|musl)\.tar\.gz$", f.name):
                fn = check_cli
            else:
                continue
            try:
                out.append((f.name, True, fn(f, Path(tmp))))
            except AssertionError as e:
                out.append((f.name, False, str(e)))
    return out


def swapped(dist: Path) -> None:
    """A CLI tarball renamed to the other architecture's name fails the check."""
    cli = sorted(dist.glob("ddblock-*-linux-*.tar.gz"))[0]
    arch, other, machine = (
        ("x86_64", "aarch64", "AArch64")
        if "-x86_64-" in cli.name
        else ("aarch64", "x86_64", "Advanced Micro Devices X86-64")
    )
    with tempfile.TemporaryDirectory(prefix="ddblock-swapped-") as tmp:
        fake = Path(tmp) / "dist"
        fake.mkdir()
        shutil.copy(cli, fake / cli.name.replace(f"-{arch}-", f"-{other}-"))
        ((name, ok, detail),) = check_all(fake)
        assert not ok and f"not {machine}" in detail, f"a swapped file passed: {name}: {detail}"
        print(f"ok    a swapped file fails: {name}: {detail}")


def main(argv: list[str]) -> int:
    args = [a for a in argv[1:] if not a.startswith("--")]
    dist = Path(args[0]).resolve() if args else ROOT / "dist"
    if "--swapped" in argv:
        swapped(dist)
        return 0
    results = check_all(dist)
    for name, ok, detail in results:
        print(f"{'ok  ' if ok else 'FAIL'}  {name}: {detail}", flush=True)
    failed = sum(not ok for _, ok, _ in results)
    print(f"artifacts: {len(results) - failed} checked, {failed} failed")
    return 1 if failed or not results else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
