"""Mixed-language concurrency test of the once-only guard and compare-and-set, on moto and
dynalite: processes in Rust (the core), Python, Node, the CLI and PHP (Laravel 8.83's real
DynamoDbStore) started together on one table.

- once: every process goes through the same 40 event ids (10 of them given back before the
  start); exactly one process may win each event. PHP claims the Laravel way,
  ``Cache::add($event, 1, $ttl)``.
- cas: every process increments one counter; no increment may be lost. Twice: Rust, Python and
  Node through ``update`` with the CLI through ``get --with-version`` / ``put --if-version``;
  then Rust, Python and Node through ``update`` with PHP through Laravel's own atomic
  ``Cache::increment``. (Not the CLI with PHP: ``put --if-version`` checks the version only, and
  Laravel's increment keeps it; ``update`` also checks the value it read. See docs/patterns.md.)
- s3 lock (moto only: dynalite has no S3): Rust, Python, Node and the CLI (``ddblock run``) take
  one lock in an S3 bucket in turns; under it each increments a number in a shared file (read,
  pause, write) and records its fence and wall-clock start and end. No increment may be lost and
  no two recorded intervals may overlap. Twice: with the default release (conditional delete),
  where the fences are only counted (a create that lands late starts from its own, older clock:
  docs/s3.md), and with DDBLOCK_S3_RELEASE=overwrite, where they must grow in the order of the
  intervals. Then a takeover race: the same processes make one attempt each at locks whose
  holder let them expire; exactly one may take each over, with the old fence + 1.

Run by ``./compat-tests/run-tests.sh patterns`` (after the Python and Node bindings, the CLI and
``pattern-worker`` are built), with the venv of bindings/python:

    bindings/python/.venv/bin/python compat-tests/patterns/concurrency.py [moto|dynalite]

Workers print ``ready``, then wait for a line on stdin, so all of them start together; the
outcome checks do not depend on timing.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import secrets
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import boto3

import ddblock

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PREFIX = "app_"
EVENTS = [f"evt-{i}" for i in range(40)]
GIVEN_BACK = EVENTS[30:]
#: Processes per language (PHP: Laravel's harness).
ONCE = {"rust": 3, "python": 3, "node": 3, "cli": 2, "php": 2}
#: (processes, turns under the lock per process) per language, for the s3 lock run.
S3_LOCK = {"rust": (3, 5), "python": (3, 5), "node": (3, 5), "cli": (3, 5)}
#: Expired locks raced for by the same processes.
TAKEOVERS = [f"expired-{i}" for i in range(5)]
#: (processes, increments per process) per language, for each compare-and-set run.
CAS_WITH_CLI = {"rust": (3, 20), "python": (3, 20), "node": (3, 20), "cli": (2, 5)}
CAS_WITH_LARAVEL = {"rust": (2, 20), "python": (2, 20), "node": (2, 20), "php": (4, 20)}


def new_table(endpoint: str) -> str:
    client = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1")
    name = f"patterns_{secrets.token_hex(4)}"
    client.create_table(
        TableName=name,
        AttributeDefinitions=[{"AttributeName": "key", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "key", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )
    for _ in range(500):
        if client.describe_table(TableName=name)["Table"]["TableStatus"] == "ACTIVE":
            return name
        time.sleep(0.01)
    raise AssertionError(f"table {name} never became ACTIVE")


class Worker:
    """One process: ``ready`` on stdout, a line on stdin starts it, a JSON line at the end."""

    def __init__(self, lang: str, argv: list[str], env: dict[str, str]) -> None:
        self.lang = lang
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True, cwd=HERE
        )
        assert self.proc.stdout is not None
        first = self.proc.stdout.readline().strip()
        assert first == "ready", f"{lang} worker {argv} said {first!r}"

    def go(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def result(self, timeout: float = 600) -> dict[str, Any]:
        out, _ = self.proc.communicate(timeout=timeout)
        assert self.proc.returncode == 0, f"{self.lang} worker exited {self.proc.returncode}"
        result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
        return result


class PhpWorker:
    """Laravel's real store in ``php compat-tests/php/harness.php``, driven from a thread."""

    def __init__(self, endpoint: str, table: str, commands: list[dict[str, Any]]) -> None:
        env = {
            **os.environ,
            "DDB_ENDPOINT": endpoint,
            "DDB_TABLE": table,
            "DDB_LAYOUT": "laravel12",
            "DDB_PREFIX": PREFIX,
        }
        self.lang = "php"
        self.proc = subprocess.Popen(
            ["php", str(ROOT / "compat-tests/php/harness.php")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            text=True,
        )
        self.call({"op": "now"})  # started: Laravel and the SDK are loaded
        self.commands = commands
        self.answers: list[dict[str, Any]] = []
        self.start = threading.Event()
        self.thread = threading.Thread(target=self._run)
        self.thread.start()

    def call(self, cmd: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        answer: dict[str, Any] = json.loads(self.proc.stdout.readline())
        assert answer["ok"], f"PHP failed {cmd}: {answer.get('error')}"
        return answer

    def _run(self) -> None:
        self.start.wait()
        self.answers = [self.call(c) for c in self.commands]

    def go(self) -> None:
        self.start.set()

    def result(self, timeout: float = 600) -> list[dict[str, Any]]:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the PHP worker hung"
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)
        return self.answers


def php_int(i: int) -> str:
    return base64.b64encode(f"i:{i};".encode()).decode()


def rotated(items: list[str], k: int) -> list[str]:
    k %= len(items)
    return items[k:] + items[:k]


def workers_of(
    spec: dict[str, int], argv_of: dict[str, list[str]], env: dict[str, str], rotate: bool
) -> list[Worker]:
    out = []
    n = 0
    for lang, count in spec.items():
        for _ in range(count):
            argv = argv_of[lang]
            if rotate:  # each process walks the events from a different start
                argv = argv[: -len(EVENTS)] + rotated(EVENTS, 7 * n)
            out.append(Worker(lang, argv, env))
            n += 1
    return out


def commands() -> dict[str, list[str]]:
    return {
        "rust": [str(ROOT / "target/debug/pattern-worker")],
        "python": [sys.executable, str(HERE / "worker.py")],
        "node": ["node", str(HERE / "worker.mjs")],
        "cli": ["bash", str(HERE / "worker.sh")],
    }


def run_once(server: str, endpoint: str) -> None:
    table = new_table(endpoint)
    env = env_for(endpoint, table)
    store = ddblock.Store(table, prefix=PREFIX, endpoint_url=endpoint)
    for event in GIVEN_BACK:  # claimed and given back: free again, with a live item
        claim = store.once(event, ttl=60).claim()
        assert claim and claim.give_back()
    base = commands()
    argv = {lang: [*cmd, "once", *EVENTS] for lang, cmd in base.items()}
    procs: list[Worker | PhpWorker] = list(
        workers_of({k: v for k, v in ONCE.items() if k != "php"}, argv, env, rotate=True)
    )
    for i in range(ONCE["php"]):
        cmds = [
            {"op": "add", "key": e, "v": php_int(1), "ttl": 60} for e in rotated(EVENTS, 5 * i + 3)
        ]
        procs.append(PhpWorker(endpoint, table, cmds))
    started = time.monotonic()
    for p in procs:
        p.go()
    winners: dict[str, list[str]] = {e: [] for e in EVENTS}
    by_lang: dict[str, int] = {}
    for p in procs:
        if isinstance(p, PhpWorker):
            cmds = p.commands
            won = [c["key"] for c, a in zip(cmds, p.result()) if a["result"] is True]
        else:
            won = p.result()["won"]
        for e in won:
            winners[e].append(p.lang)
        by_lang[p.lang] = by_lang.get(p.lang, 0) + len(won)
    elapsed = time.monotonic() - started
    wrong = {e: w for e, w in winners.items() if len(w) != 1}
    assert not wrong, f"events without exactly one winner: {wrong}"
    done = {e: store.once(e, ttl=60).status().state for e in EVENTS}
    php_won = {e for e, w in winners.items() if w == ["php"]}
    for e, state in done.items():
        assert state == ("in_progress" if e in php_won else "done"), (e, state)
    print(
        f"once on {server}: {len(procs)} processes ({fmt(ONCE)}), {len(EVENTS)} events "
        f"({len(GIVEN_BACK)} given back before), exactly one winner each; wins by language "
        f"{fmt(by_lang)}; {elapsed:.1f} s"
    )


def run_cas(server: str, endpoint: str, spec: dict[str, tuple[int, int]]) -> None:
    table = new_table(endpoint)
    env = env_for(endpoint, table)
    store = ddblock.Store(table, prefix=PREFIX, endpoint_url=endpoint)
    store.put("counter", 0, ttl=600)
    base = commands()
    procs: list[Worker | PhpWorker] = []
    for lang, (count, n) in spec.items():
        for _ in range(count):
            if lang == "php":
                cmds = [{"op": "increment", "key": "counter", "by": 1}] * n
                procs.append(PhpWorker(endpoint, table, cmds))
            else:
                procs.append(Worker(lang, [*base[lang], "cas", "counter", str(n)], env))
    started = time.monotonic()
    for p in procs:
        p.go()
    conflicts: dict[str, int] = {}
    for p in procs:
        if isinstance(p, PhpWorker):
            assert all(isinstance(a["result"], int) for a in p.result())
        else:
            r = p.result()
            conflicts[p.lang] = conflicts.get(p.lang, 0) + r["conflicts"]
    elapsed = time.monotonic() - started
    total = sum(count * n for count, n in spec.values())
    final = store.get("counter", consistent=True)
    assert final == total, f"lost updates: the counter is {final}, {total} increments were made"
    print(
        f"cas on {server}: {len(procs)} processes ({fmt({k: c for k, (c, _) in spec.items()})}), "
        f"{total} increments, counter = {final} (none lost); conflicts retried by language "
        f"{fmt(conflicts)}; {elapsed:.1f} s"
    )


def new_bucket(endpoint: str) -> str:
    name = f"patterns-{secrets.token_hex(4)}"
    boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(Bucket=name)
    return name


def run_s3_lock(server: str, endpoint: str, release: str) -> None:
    bucket = new_bucket(endpoint)
    env = {
        **env_for(endpoint, new_table(endpoint)),
        "DDBLOCK_BACKEND": "s3",
        "DDBLOCK_S3_BUCKET": bucket,
        "DDBLOCK_S3_RELEASE": release,
    }
    scratch = Path(os.environ.get("TMPDIR", "/tmp")) / f"ddblock-s3-lock-{secrets.token_hex(4)}"
    scratch.mkdir()
    counter, log = scratch / "counter", scratch / "log"
    counter.write_text("0")
    log.write_text("")
    base = commands()
    procs = [
        Worker(lang, [*base[lang], "lock", "shared", str(counter), str(log), str(n)], env)
        for lang, (count, n) in S3_LOCK.items()
        for _ in range(count)
    ]
    started = time.monotonic()
    for p in procs:
        p.go()
    for p in procs:
        p.result()
    elapsed = time.monotonic() - started
    total = sum(count * n for count, n in S3_LOCK.values())
    value = int(counter.read_text())
    assert value == total, f"lost updates under the lock: the counter is {value}, not {total}"
    held = sorted(
        (int(start), int(end), int(fence), lang)
        for lang, fence, start, end in (line.split() for line in log.read_text().splitlines())
    )
    assert len(held) == total, f"{len(held)} turns recorded, {total} made"
    down = 0
    for (s0, e0, f0, l0), (s1, e1, f1, l1) in itertools.pairwise(held):
        assert e0 <= s1, f"two holders at once: {l0} {s0}..{e0} and {l1} {s1}..{e1}"
        if f1 <= f0:
            assert release == "delete", f"the fence went from {f0} ({l0}) to {f1} ({l1})"
            down += 1
    by_lang = {lang: sum(1 for h in held if h[3] == lang) for lang in S3_LOCK}
    fences = "fences grow" if release == "overwrite" else f"{down} fences below the one before"
    print(
        f"s3 lock ({release} release) on {server}: {len(procs)} processes "
        f"({fmt({k: c for k, (c, _) in S3_LOCK.items()})}), {total} turns under one lock, "
        f"counter = {value} (none lost), no two intervals overlap, {fences}; turns by "
        f"language {fmt(by_lang)}; {elapsed:.1f} s"
    )
    if release == "overwrite":
        return

    # The takeover race: locks left to expire by a holder that never came back.
    env["DDBLOCK_CLOCK_SKEW_MARGIN"] = "0"
    store = ddblock.Store(
        endpoint_url=endpoint, prefix=PREFIX, backend="s3", bucket=bucket, clock_skew_margin=0
    )
    old: dict[str, int] = {}
    for name in TAKEOVERS:
        lock = store.lock(name, ttl=1)
        assert lock.acquire(blocking=False)
        assert lock.fence is not None
        old[name] = lock.fence
    # Each expires at (the second of its acquire) + 1; a takeover needs expires_at < now.
    expired_from = int(time.time()) + 2.05
    procs = [
        Worker(lang, [*base[lang], "takeover", *rotated(TAKEOVERS, i)], env)
        for i, lang in enumerate(lang for lang, (count, _) in S3_LOCK.items() for _ in range(count))
    ]
    while time.time() < expired_from:
        time.sleep(0.05)
    for p in procs:
        p.go()
    winners: dict[str, list[tuple[str, int]]] = {name: [] for name in TAKEOVERS}
    for p in procs:
        for name, fence in p.result()["won"].items():
            winners[name].append((p.lang, fence))
    for name, won in winners.items():
        assert len(won) == 1, f"{name} taken over by {won or 'nobody'}"
        assert won[0][1] == old[name] + 1, f"{name}: fence {won[0][1]} after {old[name]}"
    print(
        f"s3 takeover race on {server}: {len(procs)} processes, {len(TAKEOVERS)} expired locks, "
        f"each taken over by exactly one (the old fence + 1); won by "
        f"{fmt({n: w[0][0] for n, w in winners.items()})}"
    )


def fmt(d: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in d.items())


def env_for(endpoint: str, table: str) -> dict[str, str]:
    return {
        **os.environ,
        "DYNAMODB_ENDPOINT": endpoint,
        "DYNAMODB_CACHE_TABLE": table,
        "CACHE_PREFIX": PREFIX,
        "DDBLOCK_LAYOUT": "laravel12",
        "DDBLOCK_BIN": str(ROOT / "target/debug/ddblock"),
        "AWS_ACCESS_KEY_ID": os.environ.get("AWS_ACCESS_KEY_ID", "test"),
        "AWS_SECRET_ACCESS_KEY": os.environ.get("AWS_SECRET_ACCESS_KEY", "test"),
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_EC2_METADATA_DISABLED": "true",
    }


def main() -> int:
    servers = {"moto": "DDBLOCK_TEST_MOTO", "dynalite": "DDBLOCK_TEST_DYNALITE"}
    wanted = sys.argv[1:] or list(servers)
    for server in wanted:
        endpoint = os.environ.get(servers[server])
        if not endpoint:
            raise SystemExit(
                f"{servers[server]} is not set: run ./compat-tests/run-tests.sh patterns "
                "(or compat-tests/servers.sh start; source compat-tests/.run/env)"
            )
        run_once(server, endpoint)
        run_cas(server, endpoint, CAS_WITH_CLI)
        run_cas(server, endpoint, CAS_WITH_LARAVEL)
        if server == "moto":
            run_s3_lock(server, endpoint, "delete")
            run_s3_lock(server, endpoint, "overwrite")
    return 0


if __name__ == "__main__":
    sys.exit(main())
