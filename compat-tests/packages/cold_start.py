#!/usr/bin/env python3
"""The cold-start figure: what a fresh process (a Lambda cold start, a cron job) pays to import
ddblock, build a store and take and release one lock, against the same work done with each
language's raw SDK, measured on installed packages.

    compat-tests/packages/cold_start.py --python VENV/bin/python --node APP --cli BIN --raw BIN \\
        --endpoint URL [--boto3-python PY] [--node-sdk DIR] [--runner 'qemu-aarch64-static -L ROOT']
        [--runs 15] [--only python,node,rust]

    --python    an interpreter that imports the ddblock wheel (and boto3, unless --boto3-python)
    --node      a folder whose node_modules holds ddblock (and @aws-sdk/client-dynamodb, unless
                --node-sdk names another folder: compat-tests/ holds it, compat-tests/setup.sh)
    --cli       the ddblock CLI: `ddblock run NAME --ttl 10 -- true` (one acquire, /bin/true, one
                release), and `create-table` for the table
    --raw       ddblock-cold-raw (compat-tests/bench/cycle/src/bin/cold_raw.rs), the raw
                aws-sdk-dynamodb program doing Laravel's acquire and an owner-conditioned release;
                build it in the CLI's profile, or the comparison says nothing
    --runner    a prefix for every measured command (QEMU's user mode for aarch64 artifacts)

Each contender runs `--runs` times (default 15) as a fresh process, once more before that
unmeasured (so every file is in the page cache: this measures starting, not reading a disk),
the contenders interleaved within each round so a drift in the machine's load hits all alike.
Wall time runs from spawning the child to reaping it; peak RSS is the child's ru_maxrss
(os.wait4). Each ddblock step is also timed inside the process (import, store, acquire, release),
and interpreter start alone (`python -c pass`, `node -e 0`, `ddblock --version`) is its own
contender: the breakdown lines are medians of those. The baselines write Laravel's format: a
PutItem conditioned on `attribute_not_exists(#key) OR #expires_at < :now` (Laravel's
DynamoDbLock::acquire through DynamoDbStore::add) and a DeleteItem conditioned on the owner.

Prints one line per pair with its goal (Python ≤ 0.2 x boto3's wall time, Node ≤ 0.4 x SDK v3's,
peak RSS below the baseline's; Rust: reported, no goal) and where ddblock's time goes. A missed
goal is reported, not failed: the exit status is non-zero only when a run crashes.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

TABLE = "ddblock-cold-start"
X, DASH = "\u00d7", "\u2013"  # the printed lines' times sign and dash
PREFIX = "cold_"

PY_DDBLOCK = """\
import time
t0 = time.perf_counter()
import ddblock
t1 = time.perf_counter()
store = ddblock.Store()
t2 = time.perf_counter()
lock = store.lock({name!r}, ttl=10)
assert lock.acquire(blocking=False), "held"
t3 = time.perf_counter()
assert lock.release(), "not released"
t4 = time.perf_counter()
ms = lambda a, b: (b - a) * 1000
print({{"import": ms(t0, t1), "store": ms(t1, t2), "acquire": ms(t2, t3), "release": ms(t3, t4)}})
"""

PY_BOTO3 = """\
import time
t0 = time.perf_counter()
import os, secrets
import boto3
t1 = time.perf_counter()
client = boto3.client("dynamodb", endpoint_url=os.environ["DYNAMODB_ENDPOINT"])
t2 = time.perf_counter()
table, key = os.environ["DYNAMODB_CACHE_TABLE"], {key!r}
owner = 's:16:"%s";' % secrets.token_hex(8)
now = int(time.time())
client.put_item(
    TableName=table,
    Item={{"key": {{"S": key}}, "value": {{"S": owner}}, "expires_at": {{"N": str(now + 10)}}}},
    ConditionExpression="attribute_not_exists(#key) OR #expires_at < :now",
    ExpressionAttributeNames={{"#key": "key", "#expires_at": "expires_at"}},
    ExpressionAttributeValues={{":now": {{"N": str(now)}}}},
)
t3 = time.perf_counter()
client.delete_item(
    TableName=table,
    Key={{"key": {{"S": key}}}},
    ConditionExpression="#value = :owner",
    ExpressionAttributeNames={{"#value": "value"}},
    ExpressionAttributeValues={{":owner": {{"S": owner}}}},
)
t4 = time.perf_counter()
ms = lambda a, b: (b - a) * 1000
print({{"import": ms(t0, t1), "store": ms(t1, t2), "acquire": ms(t2, t3), "release": ms(t3, t4)}})
"""

# CommonJS for both (each package serves require()); `performance.now()` counts from the
# process's start, so the first mark is Node's own start-up.
NODE_DDBLOCK = """\
const t0 = performance.now()
const native = {native}  // the platform package's .node: ddblock's loader then finds it cached
if (native) require(native)
const tn = performance.now()
const {{ Store }} = require(require.resolve('ddblock', {{ paths: [{dir}] }}))
const t1 = performance.now()
const store = new Store()
const t2 = performance.now()
;(async () => {{
  const lock = store.lock({name}, {{ ttl: 10 }})
  if (!(await lock.acquire())) throw new Error('held')
  const t3 = performance.now()
  if (!(await lock.release())) throw new Error('not released')
  const t4 = performance.now()
  const [n, i, s, a, r] = [tn - t0, t1 - tn, t2 - t1, t3 - t2, t4 - t3]
  console.log(JSON.stringify({{ native: n, import: i, store: s, acquire: a, release: r }}))
}})().catch((e) => {{ console.error(e); process.exit(1) }})
"""

NODE_SDK = """\
const t0 = performance.now()
const {{ DynamoDBClient, PutItemCommand, DeleteItemCommand }} =
  require(require.resolve('@aws-sdk/client-dynamodb', {{ paths: [{dir}] }}))
const t1 = performance.now()
const client = new DynamoDBClient({{ endpoint: process.env.DYNAMODB_ENDPOINT }})
const t2 = performance.now()
;(async () => {{
  const TableName = process.env.DYNAMODB_CACHE_TABLE
  const key = {key}
  const owner = `s:16:"${{require('crypto').randomBytes(8).toString('hex')}}";`
  const now = Math.floor(Date.now() / 1000)
  await client.send(new PutItemCommand({{
    TableName,
    Item: {{ key: {{ S: key }}, value: {{ S: owner }}, expires_at: {{ N: String(now + 10) }} }},
    ConditionExpression: 'attribute_not_exists(#key) OR #expires_at < :now',
    ExpressionAttributeNames: {{ '#key': 'key', '#expires_at': 'expires_at' }},
    ExpressionAttributeValues: {{ ':now': {{ N: String(now) }} }},
  }}))
  const t3 = performance.now()
  await client.send(new DeleteItemCommand({{
    TableName,
    Key: {{ key: {{ S: key }} }},
    ConditionExpression: '#value = :owner',
    ExpressionAttributeNames: {{ '#value': 'value' }},
    ExpressionAttributeValues: {{ ':owner': {{ S: owner }} }},
  }}))
  const t4 = performance.now()
  const [i, s, a, r] = [t1 - t0, t2 - t1, t3 - t2, t4 - t3]
  console.log(JSON.stringify({{ import: i, store: s, acquire: a, release: r }}))
}})().catch((e) => {{ console.error(e); process.exit(1) }})
"""


@dataclass
class Contender:
    """One measured command and what its runs gave."""

    name: str
    argv: list[str]
    timed: bool  # prints its step marks (a ddblock or baseline script)
    walls: list[float] = field(default_factory=list)  # ms
    rss: list[float] = field(default_factory=list)  # MB
    marks: list[dict[str, float]] = field(default_factory=list)  # ms, from the child's stdout

    def wall(self) -> float:
        return statistics.median(self.walls)

    def peak(self) -> float:
        return statistics.median(self.rss)

    def mark(self, step: str) -> float:
        return statistics.median(m[step] for m in self.marks)


def spawn(argv: list[str], env: dict[str, str], scratch: Path) -> tuple[float, float, str, str]:
    """Runs argv once: wall ms, peak RSS MB, stdout, stderr. Raises on a non-zero exit."""
    exe = shutil.which(argv[0])
    if exe is None:
        raise SystemExit(f"cold_start: {argv[0]!r} not found")
    out_path, err_path = scratch / "out", scratch / "err"
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        actions = [
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_DUP2, out.fileno(), 1),
            (os.POSIX_SPAWN_DUP2, err.fileno(), 2),
        ]
        start = time.perf_counter()
        pid = os.posix_spawn(exe, argv, env, file_actions=actions)
        _, status, usage = os.wait4(pid, 0)
        wall = (time.perf_counter() - start) * 1000
    code = os.waitstatus_to_exitcode(status)
    err_text = err_path.read_text(errors="replace")
    if code != 0:
        raise RuntimeError(f"{shlex.join(argv)} exited {code}: {err_text.strip()[-2000:]}")
    return wall, usage.ru_maxrss / 1024, out_path.read_text(errors="replace"), err_text


def parse_marks(out: str) -> dict[str, float]:
    """The last line a ddblock or baseline script printed: its step marks."""
    line = out.strip().splitlines()[-1]
    text = line.replace("'", '"')  # Python prints its dict with single quotes
    return {k: float(v) for k, v in json.loads(text).items()}


def ratio_range(a: Contender, b: Contender) -> tuple[float, float]:
    """The quartiles of the per-round wall ratios a / b."""
    ratios = sorted(x / y for x, y in zip(a.walls, b.walls, strict=True))
    q = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [ratios[0]] * 3
    return q[0], q[2]


def pair_line(
    lang: str, ours: Contender, base: Contender, base_name: str, goal: float | None
) -> tuple[str, bool]:
    """`cold start LANG: ddblock R x BASE wall (...), peak RSS a vs b MB [goal ...: met]`."""
    r = ours.wall() / base.wall()
    lo, hi = ratio_range(ours, base)
    rss_ok = ours.peak() < base.peak()
    word = {True: "met", False: "MISSED"}
    if goal is None:
        verdict = f"no goal set; RSS below: {'yes' if rss_ok else 'no'}"
        met = True
    else:
        met = r <= goal and rss_ok
        verdict = f"goal ≤ {goal:g} {X}: {word[r <= goal]}, RSS below: {word[rss_ok]}"
    return (
        f"cold start {lang}: ddblock {r:.2f} {X} {base_name} wall (median {ours.wall():.0f} ms vs "
        f"{base.wall():.0f} ms, rounds' quartiles {lo:.2f}{DASH}{hi:.2f} {X}), peak RSS "
        f"{ours.peak():.1f} vs {base.peak():.1f} MB [{verdict}]",
        met,
    )


def import_times(stderr: str) -> dict[str, float]:
    """Where `python -X importtime -c 'import ddblock'` went (ms), from its tree (a module's
    imports are listed before it, one level deeper): the native module's self time, ddblock's
    Python modules' self times ("ddblock"), and the cumulative time of each module from outside
    ddblock that a ddblock module imported first (the standard library's asyncio, typing, ...)."""
    out: dict[str, float] = {}
    done: list[tuple[int, str, float]] = []  # (level, module, cumulative): not yet claimed
    for line in stderr.splitlines():
        parts = line.split("|")
        if not line.startswith("import time:") or not parts[1].strip().isdigit():
            continue
        module = parts[2].strip()
        level = (len(parts[2]) - len(parts[2].lstrip()) - 1) // 2
        own, cumulative = int(parts[0].split(":")[1]) / 1000, int(parts[1]) / 1000
        children = [d for d in done if d[0] > level]
        done = [d for d in done if d[0] <= level] + [(level, module, cumulative)]
        if module == "ddblock._native":
            out[module] = out.get(module, 0.0) + own
        elif module == "ddblock" or module.startswith("ddblock."):
            out["ddblock"] = out.get("ddblock", 0.0) + own
            for child_level, child, child_cumulative in children:
                if child_level == level + 1 and not child.startswith("ddblock"):
                    out[child] = out.get(child, 0.0) + child_cumulative
    return out


def import_line(c: Contender) -> str:
    """Where `import ddblock` goes, by the medians of -X importtime's figures."""
    groups = {g for m in c.marks for g in m}
    med = {g: statistics.median(m.get(g, 0.0) for m in c.marks) for g in groups}
    native = med.pop("ddblock._native", 0.0)
    own = med.pop("ddblock", 0.0)
    std = sum(med.values())
    top = sorted(med.items(), key=lambda kv: -kv[1])
    shown = ", ".join(f"{g} {ms:.1f}" for g, ms in top[:6])
    rest = sum(ms for _, ms in top[6:])
    return (
        f"cold start python, import ddblock by -X importtime (ms, medians of {len(c.marks)} "
        f"runs): {native + own + std:.1f} in all: the native module {native:.1f}, ddblock's Python "
        f"modules {own:.1f}, what they import from the standard library {std:.1f} ({shown}, "
        f"the rest {rest:.1f})"
    )


def breakdown(lang: str, c: Contender, start: Contender, start_what: str) -> str:
    """Where a script's median wall time goes: start-up alone, its steps timed inside the process,
    and the rest (the median over runs of the wall time less the steps: start-up and exit)."""
    outside = statistics.median(w - sum(m.values()) for w, m in zip(c.walls, c.marks, strict=True))
    first, second = c.mark("acquire"), c.mark("release")
    native = f"the native module {c.mark('native'):.1f} ms, " if "native" in c.marks[0] else ""
    return (
        f"cold start {lang}, where {c.name}'s {c.wall():.0f} ms go: {start_what} alone "
        f"{start.wall():.0f} ms; inside the process: {native}import {c.mark('import'):.1f} ms, "
        f"build the client {c.mark('store'):.1f} ms, acquire {first:.1f} ms (the first "
        f"request, with the SDK's config, credentials and connection: {first - second:.1f} ms more "
        f"than the second), release {second:.1f} ms; start-up and exit around them {outside:.0f} ms"
    )


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--python", help="an interpreter that imports ddblock (and boto3)")
    ap.add_argument("--boto3-python", help="an interpreter that imports boto3 (default: --python)")
    ap.add_argument("--node", type=Path, help="a folder whose node_modules holds ddblock")
    ap.add_argument(
        "--node-sdk", type=Path, help="one holding @aws-sdk/client-dynamodb (default: --node)"
    )
    ap.add_argument(
        "--node-bin", default="node", help="the node executable (default: node on PATH)"
    )
    ap.add_argument("--cli", help="the ddblock CLI binary")
    ap.add_argument("--raw", help="the ddblock-cold-raw binary (the raw aws-sdk-dynamodb baseline)")
    ap.add_argument(
        "--runner",
        default="",
        help="a prefix for every command, e.g. 'qemu-aarch64-static -L ROOT'",
    )
    ap.add_argument(
        "--endpoint", default=os.environ.get("DDBLOCK_TEST_DDBLOCAL"), help="the DynamoDB endpoint"
    )
    ap.add_argument("--runs", type=int, default=15, help="measured runs per contender (default 15)")
    ap.add_argument(
        "--only", default="python,node,rust", help="which pairs (default: python,node,rust)"
    )
    a = ap.parse_args()
    only = set(a.only.split(","))
    if not a.endpoint:
        raise SystemExit("cold_start: no --endpoint (nor DDBLOCK_TEST_DDBLOCAL)")
    if a.runs < 1:
        raise SystemExit("cold_start: --runs must be at least 1")
    need = {"python": ["python"], "node": ["node"], "rust": ["cli", "raw"]}
    for lang in only:
        if lang not in need:
            raise SystemExit(f"cold_start: --only takes python, node, rust, not {lang!r}")
        for opt in need[lang]:
            if getattr(a, opt) is None:
                raise SystemExit(f"cold_start: {lang} needs --{opt}")
    if a.cli is None:
        raise SystemExit("cold_start: --cli is needed to create the table")
    runner = shlex.split(a.runner)
    scratch = Path(tempfile.mkdtemp(prefix="ddblock-cold-start-"))
    # Nothing of this machine's AWS setup: static keys, a region, no profile files, no IMDS.
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(scratch),
        "LANG": "C.UTF-8",
        "AWS_ACCESS_KEY_ID": "cold",
        "AWS_SECRET_ACCESS_KEY": "start",
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_EC2_METADATA_DISABLED": "true",
        "DYNAMODB_ENDPOINT": a.endpoint,
        "DYNAMODB_CACHE_TABLE": TABLE,
        "CACHE_PREFIX": PREFIX,
    }

    c: dict[str, Contender] = {}

    def add(name: str, argv: list[str], timed: bool = True) -> None:
        """A contender; `timed`: it prints its step marks."""
        c[name] = Contender(name, [*runner, *argv], timed)

    if "python" in only:
        py, boto = a.python, a.boto3_python or a.python
        add("python -c pass", [py, "-c", "pass"], timed=False)
        add("python ddblock", [py, "-c", PY_DDBLOCK.format(name="python")])
        add("python boto3", [boto, "-c", PY_BOTO3.format(key=PREFIX + "boto3")])
        add("python -X importtime", [py, "-X", "importtime", "-c", "import ddblock"], timed=False)
    if "node" in only:
        nb = shutil.which(a.node_bin) or a.node_bin
        sdk = a.node_sdk or a.node
        node = a.node.resolve()
        # The platform package (ddblock-linux-x64-gnu, ...): its package.json's main is the .node.
        natives = [
            p / json.loads((p / "package.json").read_text())["main"]
            for p in sorted((node / "node_modules").glob("ddblock-*"))
            if (p / "package.json").is_file()
        ]
        native = json.dumps(str(natives[0])) if len(natives) == 1 else "null"
        add("node -e 0", [nb, "-e", "0"], timed=False)
        add(
            "node ddblock",
            [
                nb,
                "-e",
                NODE_DDBLOCK.format(dir=json.dumps(str(node)), native=native, name='"node"'),
            ],
        )
        add(
            "node SDK v3",
            [
                nb,
                "-e",
                NODE_SDK.format(
                    dir=json.dumps(str(sdk.resolve())), key=json.dumps(PREFIX + "sdk-v3")
                ),
            ],
        )
    if "rust" in only:
        add("ddblock --version", [a.cli, "--version"], timed=False)
        add("ddblock run", [a.cli, "run", "rust", "--ttl", "10", "--", "true"], timed=False)
        add("raw aws-sdk-dynamodb", [a.raw, a.endpoint, TABLE, PREFIX + "raw"], timed=False)

    names = list(c)
    print(
        f"cold start: {len(names)} contenders, {a.runs} runs each (+1 unmeasured), "
        f"endpoint {a.endpoint}",
        flush=True,
    )
    try:
        create = [*runner, a.cli, "--endpoint", a.endpoint, "--table", TABLE, "create-table"]
        spawn(create, env, scratch)
        for name in names:
            spawn(c[name].argv, env, scratch)
        for i in range(a.runs):
            for name in names[i % len(names) :] + names[: i % len(names)]:
                wall, rss, out, err = spawn(c[name].argv, env, scratch)
                c[name].walls.append(wall)
                c[name].rss.append(rss)
                if c[name].timed:
                    c[name].marks.append(parse_marks(out))
                elif "importtime" in c[name].argv:
                    c[name].marks.append(import_times(err))
    except RuntimeError as e:
        print(f"cold start: CRASH: {e}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    lines: list[str] = []
    missed = 0
    if "python" in only:
        line, met = pair_line("python", c["python ddblock"], c["python boto3"], "boto3", 0.2)
        lines.append(line)
        missed += not met
        lines.append(
            breakdown("python", c["python ddblock"], c["python -c pass"], "python -c pass")
        )
        lines.append(import_line(c["python -X importtime"]))
        lines.append(breakdown("python", c["python boto3"], c["python -c pass"], "python -c pass"))
    if "node" in only:
        line, met = pair_line("node", c["node ddblock"], c["node SDK v3"], "SDK v3", 0.4)
        lines.append(line)
        missed += not met
        lines.append(breakdown("node", c["node ddblock"], c["node -e 0"], "node -e 0"))
        lines.append(breakdown("node", c["node SDK v3"], c["node -e 0"], "node -e 0"))
    if "rust" in only:
        line, _ = pair_line(
            "rust", c["ddblock run"], c["raw aws-sdk-dynamodb"], "raw aws-sdk-dynamodb", None
        )
        lines.append(
            line + " (the CLI's `ddblock run NAME --ttl 10 -- true` against ddblock-cold-raw)"
        )
        start = c["ddblock --version"].wall()
        lines.append(
            f"cold start rust, where ddblock run's {c['ddblock run'].wall():.0f} ms go: "
            f"process start {start:.0f} ms (ddblock --version); SDK config, the two requests, "
            f"/bin/true and exit "
            f"{c['ddblock run'].wall() - start:.0f} ms"
        )
    for line in lines:
        print(line)
    print(
        f"cold start: {missed} goal(s) missed"
        + (
            " (reported, not failed: the exit status only says whether every run worked)"
            if missed
            else ""
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
