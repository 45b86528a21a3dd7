#!/usr/bin/env python3
"""Runs every code block of README.md and docs/*.md as written, each as its own process,
against a local DynamoDB server: the examples are tests.

    compat-tests/docs/snippets.py              # every block of every page, on each server
    compat-tests/docs/snippets.py docs/node.md # one page
    compat-tests/docs/snippets.py --servers ddblocal docs/node.md  # on one server
    compat-tests/docs/snippets.py --list       # what would run, and what is skipped and why

Every block runs on DynamoDB Local (AWS's own, what most readers run locally) and on moto; a block
that uses the S3 lock backend (it names `s3`) runs on moto only, since DynamoDB Local has no S3.
Each block gets a fresh table and this environment (what a reader on a local setup would have):
DYNAMODB_ENDPOINT (the server), DYNAMODB_CACHE_TABLE (the fresh table), AWS_DEFAULT_REGION,
test credentials, and PATH with the built `ddblock` CLI first; the S3 bucket `locks` exists on the
server (docs/s3.md's examples keep their locks there). Blocks are run by language:

    python        bindings/python/.venv/bin/python (the binding as `maturin develop` built it)
    js            node, as an ES module inside bindings/node (so `import ... from 'ddblock'` works)
    sh, bash      bash -euo pipefail
    rust          compat-tests/docs/rust-snippets: each block is a module of one binary, run by id
    php           not here: bindings/php/tests/DocsTest.php runs each PHP block of the pages in
                  PHP_DOCS as its own process, after a prelude that boots a Laravel app with the
                  driver installed (part of the php-driver step); a runnable PHP block on any other
                  page is an error

Languages that are data, not code (text, json, toml, cron, ...) are not run. A block that cannot
run here says why on the line before its fence: `<!-- not run: REASON -->` (a package registry
install, the test command itself); `--list` shows every such reason.

Needs: the servers (DDBLOCK_TEST_MOTO, DDBLOCK_TEST_DDBLOCAL, from compat-tests/servers/servers.sh), the CLI and the snippet
binary built (`cargo build -p ddblock-cli -p ddblock-doc-snippets`), the Python binding built
(bindings/python/test.sh) and the Node binding built (bindings/node/test.sh).
"""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUN = {"python", "js", "sh", "bash", "rust", "php"}
#: The pages whose PHP blocks bindings/php/tests/DocsTest.php runs (its DOCS list).
PHP_DOCS = {"docs/php.md", "docs/migration.md", "README.md", "bindings/php/README.md"}
DATA = {"", "text", "json", "toml", "cron", "console", "ini", "yaml", "diff", "output"}
FENCE = re.compile(r"^```([A-Za-z0-9_+-]*)\s*$")
NOT_RUN = re.compile(r"^<!--\s*not run:\s*(.+?)\s*-->\s*$")
TIMEOUT = 180
#: The servers the blocks run on, by the variable compat-tests/servers/servers.sh exports.
SERVERS = {"ddblocal": "DDBLOCK_TEST_DDBLOCAL", "moto": "DDBLOCK_TEST_MOTO"}
#: A block that names the S3 backend needs S3 at the endpoint: moto has it, DynamoDB Local not.
USES_S3 = re.compile(r"\bs3\b", re.IGNORECASE)


@dataclass
class Block:
    path: Path
    line: int
    lang: str
    code: str
    skip: str | None

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of a markdown file, with the not-run reason above each, if any."""
    out: list[Block] = []
    lines = path.read_text(encoding="utf-8").split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        lang = m.group(1).lower()
        start = i
        i += 1
        body: list[str] = []
        while i < len(lines) and lines[i].rstrip() != "```":
            body.append(lines[i])
            i += 1
        skip = None
        if start > 0:
            n = NOT_RUN.match(lines[start - 1].strip())
            skip = n.group(1) if n else None
        out.append(Block(path, start + 1, lang, "\n".join(body) + "\n", skip))
        i += 1
    return out


def pages(args: list[str]) -> list[Path]:
    if args:
        return [Path(a).resolve() for a in args]
    return [
        ROOT / "README.md",
        *sorted((ROOT / "docs").glob("*.md")),
        *sorted((ROOT / "bindings").glob("*/README.md")),
    ]


def endpoint(server: str) -> str:
    var = SERVERS[server]
    url = os.environ.get(var)
    if not url:
        sys.exit(
            f"snippets: {var} is not set: start the servers "
            "(compat-tests/servers/servers.sh start; source compat-tests/.run/env)"
        )
    return url


def runs_on(b: Block, server: str) -> bool:
    """Whether block `b` runs on `server`: S3 blocks only where S3 is (moto)."""
    return server == "moto" or not USES_S3.search(b.code)


def ddblock_bin() -> Path:
    return ROOT / "target" / "debug" / "ddblock"


def fresh_table(url: str, n: int) -> str:
    table = f"doc{os.getpid()}_{n}_{int(time.time() * 1000) % 100000}"
    subprocess.run(
        [str(ddblock_bin()), "create-table", "--table", table, "--endpoint", url],
        check=True,
        capture_output=True,
        env=base_env(url, table),
    )
    return table


def ensure_bucket(url: str, name: str = "locks") -> None:
    """Creates bucket `name` on moto (which checks no signatures) unless it exists."""
    req = urllib.request.Request(f"{url}/{name}", method="PUT")
    try:
        urllib.request.urlopen(req, timeout=30).close()
    except urllib.error.HTTPError as e:
        if e.code != 409:  # BucketAlreadyOwnedByYou
            raise


def base_env(url: str, table: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(
            ("DYNAMODB_", "CACHE_PREFIX", "DDBLOCK_LAYOUT", "DDBLOCK_BACKEND", "DDBLOCK_S3_", "AWS_")
        )
    }
    env.update(
        DYNAMODB_ENDPOINT=url,
        DYNAMODB_CACHE_TABLE=table,
        AWS_DEFAULT_REGION="us-east-1",
        AWS_ACCESS_KEY_ID="test",
        AWS_SECRET_ACCESS_KEY="test",
        AWS_EC2_METADATA_DISABLED="true",
        PATH=f"{ddblock_bin().parent}{os.pathsep}{env.get('PATH', '')}",
    )
    return env


def command(block: Block, index: int, scratch: Path) -> tuple[list[str], Path]:
    """The command running `block`, and the directory to run it in."""
    if block.lang == "python":
        f = scratch / f"snippet{index}.py"
        f.write_text(block.code)
        return [str(ROOT / "bindings/python/.venv/bin/python"), str(f)], scratch
    if block.lang == "js":
        # Inside the package directory, `import ... from 'ddblock'` resolves to the package itself.
        node_dir = ROOT / "bindings" / "node"
        f = node_dir / f".snippet{os.getpid()}_{index}.mjs"
        f.write_text(block.code)
        return ["node", str(f)], scratch
    if block.lang in ("sh", "bash"):
        f = scratch / f"snippet{index}.sh"
        f.write_text(block.code)
        return ["bash", "-euo", "pipefail", str(f)], scratch
    if block.lang == "rust":
        binary = ROOT / "target" / "debug" / "doc-snippets"
        return [str(binary), snippet_id(block)], scratch
    raise ValueError(block.lang)


def snippet_id(block: Block) -> str:
    """The id rust-snippets/build.rs gives a block: page stem and line."""
    return f"{block.path.stem.lower().replace('-', '_')}_{block.line}"


def main(argv: list[str]) -> int:
    listing = "--list" in argv
    args = [a for a in argv if a != "--list"]
    servers = list(SERVERS)
    if "--servers" in args:
        i = args.index("--servers")
        servers = args[i + 1].split(",") if i + 1 < len(args) else []
        del args[i : i + 2]
        unknown = [s for s in servers if s not in SERVERS]
        if unknown or not servers:
            print(f"--servers takes a comma-separated list of {', '.join(SERVERS)}")
            return 2
    todo: list[Block] = []
    for page in pages(args):
        for b in blocks(page):
            if b.lang not in RUN and b.lang not in DATA:
                print(f"{b.where}: unknown block language {b.lang!r}: add it to RUN or DATA")
                return 1
            if b.lang in RUN:
                todo.append(b)
    stray = [
        b
        for b in todo
        if b.lang == "php" and not b.skip and str(b.path.relative_to(ROOT)) not in PHP_DOCS
    ]
    for b in stray:
        print(f"{b.where}: a PHP block on a page DocsTest.php does not run: add the page to its DOCS")
    if stray:
        return 1
    if listing:
        for b in todo:
            on = [s for s in servers if runs_on(b, s)]
            how = f"runs on {', '.join(on)}"
            if b.lang == "php":
                how = "runs in bindings/php/tests/DocsTest.php"
            print(f"{b.where:30} {b.lang:7} {'not run: ' + b.skip if b.skip else how}")
        return 0
    urls = {server: endpoint(server) for server in servers}
    if "moto" in urls:
        ensure_bucket(urls["moto"])
    failed = 0
    ran = 0
    skipped = 0
    delegated = 0
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        for (i, b), (server, url) in itertools.product(enumerate(todo), urls.items()):
            if b.skip or b.lang == "php":
                if server == servers[0]:
                    skipped += bool(b.skip)
                    delegated += not b.skip
                continue
            if not runs_on(b, server):
                continue
            table = fresh_table(url, i)
            cmd, cwd = command(b, i, scratch)
            t0 = time.monotonic()
            try:
                out = subprocess.run(
                    cmd,
                    cwd=cwd,
                    env=base_env(url, table),
                    capture_output=True,
                    text=True,
                    timeout=TIMEOUT,
                )
                code, stdout, stderr = out.returncode, out.stdout, out.stderr
            except subprocess.TimeoutExpired:
                code, stdout, stderr = -1, "", f"timed out after {TIMEOUT} s"
            finally:
                if b.lang == "js":
                    Path(cmd[1]).unlink(missing_ok=True)
            ran += 1
            dt = time.monotonic() - t0
            if code == 0:
                print(f"ok    {b.where} ({b.lang}, {server}, {dt:.1f} s)")
            else:
                failed += 1
                print(f"FAIL  {b.where} ({b.lang}, {server}): exit {code}")
                for name, text in (("stdout", stdout), ("stderr", stderr)):
                    if text.strip():
                        print(f"      {name}:\n" + "\n".join("        " + l for l in text.splitlines()[-30:]))
    print(
        f"snippets: {ran} runs on {', '.join(servers)}, {failed} failed, {delegated} PHP blocks left to DocsTest.php, "
        f"{skipped} not run (see --list)"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
