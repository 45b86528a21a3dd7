"""Mixed-language concurrency test of the once-only guard and compare-and-set, on moto, dynalite
and DynamoDB Local: peers in Rust (the core), Python, Node, the CLI and PHP (Laravel 8.83's real
DynamoDbStore) started together on one table.

- once: every peer goes through the same 40 event ids (10 of them given back before the
  start); exactly one peer may win each event. PHP claims the Laravel way,
  ``Cache::add($event, 1, $ttl)``.
- cas: every peer increments one counter; no increment may be lost. Twice: Rust, Python and
  Node through ``update`` with the CLI through ``get --with-version`` / ``put --if-version``;
  then Rust, Python and Node through ``update`` with PHP through Laravel's own atomic
  ``Cache::increment``. (Not the CLI with PHP: ``put --if-version`` checks the version only, and
  Laravel's increment keeps it; ``update`` also checks the value it read. See docs/patterns.md.)
- s3 lock (moto only: dynalite and DynamoDB Local have no S3): Rust, Python, Node and the CLI
  (``ddblock run``) take one lock in an S3 bucket in turns; under it each increments a number in a
  shared file (read, pause, write) and records its fence and wall-clock start and end. No increment
  may be lost and no two recorded intervals may overlap. Twice: with the default release
  (conditional delete), where the fences are only counted (a create that lands late starts from its
  own, older clock: docs/s3.md), and with DDBLOCK_S3_RELEASE=overwrite, where they must grow in the
  order of the intervals. Then a takeover race: the same peers make one attempt each at locks whose
  holder let them expire; exactly one may take each over, with the old fence + 1.

Run by ``./compat-tests/run-tests.sh patterns`` (after the Python and Node bindings, the CLI and
the Rust peer are built), with the venv of bindings/python:

    cargo build -p ddblock-cli -p ddblock-test-support --bin ddblock --bin ddblock-peer
    bindings/python/.venv/bin/python compat-tests/patterns/concurrency.py [moto|dynalite|ddblocal]

Every process is a peer of compat-tests/support/peers/PROTOCOL.md: all of a run's peers are
started and answer ``hello`` first, then each gets its whole work at the same moment; the
outcome checks do not depend on timing.
"""

from __future__ import annotations

import base64
import itertools
import os
import secrets
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import boto3

import ddblock

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "compat-tests/support/peers"))
from driver import Peer  # noqa: E402  (the peers' driver, beside them)

PREFIX = "app_"
EVENTS = [f"evt-{i}" for i in range(40)]
GIVEN_BACK = EVENTS[30:]
#: Peers per language (PHP: Laravel's harness).
ONCE = {"rust": 3, "python": 3, "node": 3, "cli": 2, "php": 2}
#: (peers, turns under the lock per peer) per language, for the s3 lock run.
S3_LOCK = {"rust": (3, 5), "python": (3, 5), "node": (3, 5), "cli": (3, 5)}
#: Expired locks raced for by the same peers.
TAKEOVERS = [f"expired-{i}" for i in range(5)]
#: (peers, increments per peer) per language, for each compare-and-set run.
CAS_WITH_CLI = {"rust": (3, 20), "python": (3, 20), "node": (3, 20), "cli": (2, 5)}
CAS_WITH_LARAVEL = {"rust": (2, 20), "python": (2, 20), "node": (2, 20), "php": (4, 20)}
#: How long a peer may take over its work.
TIMEOUT = 600.0


@contextmanager
def peers_of(
    spec: dict[str, int],
    endpoint: str,
    table: str,
    env: dict[str, str] | None = None,
    margin: float | None = None,
) -> Iterator[list[Peer]]:
    """``count`` peers per language, all started, each having answered ``hello``. Their
    environment (PROTOCOL.md): the table, Laravel 12's layout, the short wait backoff the
    compare-and-set loops always had (2 to 50 ms); ``env`` and ``margin`` (DDB_MARGIN) added."""
    peers: list[Peer] = []
    try:
        for lang, count in spec.items():
            peers.extend(
                Peer(
                    lang,
                    endpoint=endpoint,
                    table=table,
                    prefix=PREFIX,
                    layout="laravel12",
                    backoff_ms="2,50",
                    margin=margin,
                    env={"AWS_DEFAULT_REGION": "us-east-1", **(env or {})},
                    answer_timeout=TIMEOUT,
                )
                for _ in range(count)
            )
        for p in peers:  # all started: each loads while those before it answer
            p.hello(timeout=120)
        yield peers
    finally:
        for p in peers:
            p.close()


def work(peers: list[Peer], requests: list[list[dict[str, Any]]]) -> list[list[dict[str, Any]]]:
    """Sends each peer its requests, all at the same moment, then reads every answer."""
    for p, reqs in zip(peers, requests):
        p.send(*reqs)
    return [p.receive_all() for p in peers]


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


def php_int(i: int) -> str:
    return base64.b64encode(f"i:{i};".encode()).decode()


def rotated(items: list[str], k: int) -> list[str]:
    k %= len(items)
    return items[k:] + items[:k]


def run_once(server: str, endpoint: str) -> None:
    table = new_table(endpoint)
    store = ddblock.Store(table, prefix=PREFIX, endpoint_url=endpoint)
    for event in GIVEN_BACK:  # claimed and given back: free again, with a live item
        claim = store.once(event, ttl=60).claim()
        assert claim and claim.give_back()
    with peers_of(ONCE, endpoint, table) as peers:
        requests: list[list[dict[str, Any]]] = []
        n = php = 0
        for p in peers:
            if p.lang == "php":  # Laravel's way: Cache::add, event by event
                events = rotated(EVENTS, 5 * php + 3)
                requests.append(
                    [{"op": "add", "key": e, "v": php_int(1), "ttl": 60} for e in events]
                )
                php += 1
            else:  # each peer walks the events from a different start
                requests.append([{"op": "once", "events": rotated(EVENTS, 7 * n), "ttl": 60}])
                n += 1
        started = time.monotonic()
        answers = work(peers, requests)
        elapsed = time.monotonic() - started
    winners: dict[str, list[str]] = {e: [] for e in EVENTS}
    by_lang: dict[str, int] = {}
    for p, reqs, got in zip(peers, requests, answers):
        if p.lang == "php":
            won = [r["key"] for r, a in zip(reqs, got) if a["result"] is True]
        else:
            won = got[0]["won"]
        for e in won:
            winners[e].append(p.lang)
        by_lang[p.lang] = by_lang.get(p.lang, 0) + len(won)
    wrong = {e: w for e, w in winners.items() if len(w) != 1}
    assert not wrong, f"events without exactly one winner: {wrong}"
    done = {e: store.once(e, ttl=60).status().state for e in EVENTS}
    php_won = {e for e, w in winners.items() if w == ["php"]}
    for e, state in done.items():
        assert state == ("in_progress" if e in php_won else "done"), (e, state)
    print(
        f"once on {server}: {len(peers)} processes ({fmt(ONCE)}), {len(EVENTS)} events "
        f"({len(GIVEN_BACK)} given back before), exactly one winner each; wins by language "
        f"{fmt(by_lang)}; {elapsed:.1f} s"
    )


def run_cas(server: str, endpoint: str, spec: dict[str, tuple[int, int]]) -> None:
    table = new_table(endpoint)
    store = ddblock.Store(table, prefix=PREFIX, endpoint_url=endpoint)
    store.put("counter", 0, ttl=600)
    turns = {lang: n for lang, (_, n) in spec.items()}
    with peers_of({k: c for k, (c, _) in spec.items()}, endpoint, table) as peers:
        requests = [
            [{"op": "increment", "key": "counter", "by": 1}] * turns[p.lang]
            if p.lang == "php"  # Laravel's atomic Cache::increment
            else [{"op": "cas", "key": "counter", "n": turns[p.lang]}]
            for p in peers
        ]
        started = time.monotonic()
        answers = work(peers, requests)
        elapsed = time.monotonic() - started
    conflicts: dict[str, int] = {}
    for p, got in zip(peers, answers):
        if p.lang == "php":
            assert all(isinstance(a["result"], int) for a in got)
        else:
            conflicts[p.lang] = conflicts.get(p.lang, 0) + got[0]["conflicts"]
    total = sum(count * n for count, n in spec.values())
    final = store.get("counter", consistent=True)
    assert final == total, f"lost updates: the counter is {final}, {total} increments were made"
    print(
        f"cas on {server}: {len(peers)} processes ({fmt({k: c for k, (c, _) in spec.items()})}), "
        f"{total} increments, counter = {final} (none lost); conflicts retried by language "
        f"{fmt(conflicts)}; {elapsed:.1f} s"
    )


def new_bucket(endpoint: str) -> str:
    name = f"patterns-{secrets.token_hex(4)}"
    boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(Bucket=name)
    return name


def run_s3_lock(server: str, endpoint: str, release: str) -> None:
    bucket = new_bucket(endpoint)
    table = new_table(endpoint)
    env = {
        "DDBLOCK_BACKEND": "s3",
        "DDBLOCK_S3_BUCKET": bucket,
        "DDBLOCK_S3_RELEASE": release,
        # The takeover race below needs expired locks taken at once (also the default).
        "DDBLOCK_CLOCK_SKEW_MARGIN": "0",
    }
    scratch = Path(os.environ.get("TMPDIR", "/tmp")) / f"ddblock-s3-lock-{secrets.token_hex(4)}"
    scratch.mkdir()
    counter, log = scratch / "counter", scratch / "log"
    counter.write_text("0")
    log.write_text("")
    turns = {lang: n for lang, (_, n) in S3_LOCK.items()}
    spec = {k: c for k, (c, _) in S3_LOCK.items()}
    with peers_of(spec, endpoint, table, env, margin=0) as peers:
        request = {"op": "lock.counter", "name": "shared", "counter": str(counter), "log": str(log)}
        started = time.monotonic()
        work(peers, [[{**request, "n": turns[p.lang]}] for p in peers])
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
            f"s3 lock ({release} release) on {server}: {len(peers)} processes "
            f"({fmt({k: c for k, (c, _) in S3_LOCK.items()})}), {total} turns under one lock, "
            f"counter = {value} (none lost), no two intervals overlap, {fences}; turns by "
            f"language {fmt(by_lang)}; {elapsed:.1f} s"
        )
        if release == "delete":
            run_takeover(server, endpoint, table, bucket, peers)


def run_takeover(server: str, endpoint: str, table: str, bucket: str, peers: list[Peer]) -> None:
    """The takeover race: locks left to expire by a holder that never came back."""
    store = ddblock.Store(
        table,
        endpoint_url=endpoint,
        prefix=PREFIX,
        layout="laravel12",
        backend="s3",
        bucket=bucket,
        clock_skew_margin=0,
    )
    old: dict[str, int] = {}
    for name in TAKEOVERS:
        lock = store.lock(name, ttl=1)
        assert lock.acquire(blocking=False)
        assert lock.fence is not None
        old[name] = lock.fence
    # Each expires at (the second of its acquire) + 1; a takeover needs expires_at < now.
    expired_from = int(time.time()) + 2.05
    while time.time() < expired_from:
        time.sleep(0.05)
    answers = work(
        peers,
        [
            [{"op": "takeover", "names": rotated(TAKEOVERS, i), "ttl": 30}]
            for i in range(len(peers))
        ],
    )
    winners: dict[str, list[tuple[str, int]]] = {name: [] for name in TAKEOVERS}
    for p, got in zip(peers, answers):
        for name, fence in got[0]["won"].items():
            winners[name].append((p.lang, fence))
    for name, won in winners.items():
        assert len(won) == 1, f"{name} taken over by {won or 'nobody'}"
        assert won[0][1] == old[name] + 1, f"{name}: fence {won[0][1]} after {old[name]}"
    print(
        f"s3 takeover race on {server}: {len(peers)} processes, {len(TAKEOVERS)} expired locks, "
        f"each taken over by exactly one (the old fence + 1); won by "
        f"{fmt({n: w[0][0] for n, w in winners.items()})}"
    )


def fmt(d: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in d.items())


def main() -> int:
    servers = {
        "moto": "DDBLOCK_TEST_MOTO",
        "dynalite": "DDBLOCK_TEST_DYNALITE",
        "ddblocal": "DDBLOCK_TEST_DDBLOCAL",
    }
    wanted = sys.argv[1:] or list(servers)
    for program in (ROOT / "target/debug/ddblock-peer", ROOT / "target/debug/ddblock"):
        if not program.exists():
            raise SystemExit(
                f"{program} is missing: cargo build -p ddblock-cli -p ddblock-test-support "
                "--bin ddblock --bin ddblock-peer"
            )
    for server in wanted:
        endpoint = os.environ.get(servers[server])
        if not endpoint:
            raise SystemExit(
                f"{servers[server]} is not set: run ./compat-tests/run-tests.sh patterns "
                "(or compat-tests/servers/servers.sh start; source compat-tests/.run/env)"
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
