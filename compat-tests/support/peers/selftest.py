"""Self-test of the peers (PROTOCOL.md, beside this file): starts each peer on moto with a fresh
table and checks what every test relies on: ``hello``; ``lock.acquire`` / ``lock.holder`` /
``lock.get`` / ``lock.release``, each lock seen the same by every other peer; ``once`` and
``cas`` (the ddblock peers); that an unknown op answers ``unsupported``, a bad request ok:false
(with the error kind from the core's peers), and that the peer goes on answering.

    source compat-tests/.run/env    # DDBLOCK_TEST_MOTO (compat-tests/servers/servers.sh start)
    bindings/python/.venv/bin/python compat-tests/support/peers/selftest.py [PEER...]

PEER: python, node, cli, rust, php (stock Laravel), php-ddblock (the PHP driver). Without any,
every peer whose program is there runs (rust: target/debug/ddblock-peer; cli:
target/debug/ddblock; php: ``php`` on PATH) and the others are reported skipped; a peer named
on the command line must run. Exits 1 when a check failed.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import ddblock

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
PREFIX = "app_"
#: Peers whose ops run on the core (the others: PHP), which answer the patterns and error kinds.
CORE = {"python", "node", "cli", "rust"}


def programs() -> dict[str, tuple[list[str], dict[str, str], bool]]:
    """Each peer: its command line, extra environment, and whether it can run here."""
    php = shutil.which("php") is not None
    harness = ["php", str(ROOT / "compat-tests/laravel/harness.php")]
    cli = os.environ.get("DDBLOCK_CLI") or str(ROOT / "target/debug/ddblock")
    return {
        "python": ([sys.executable, str(HERE / "peer.py")], {}, True),
        "node": (["node", str(HERE / "peer.mjs")], {}, shutil.which("node") is not None),
        "cli": (
            [sys.executable, str(HERE / "peer_cli.py")],
            {"DDBLOCK_CLI": cli},
            Path(cli).exists(),
        ),
        "rust": (
            [str(ROOT / "target/debug/ddblock-peer")],
            {},
            (ROOT / "target/debug/ddblock-peer").exists(),
        ),
        "php": (harness, {"DDB_DRIVER": "laravel"}, php),
        "php-ddblock": (harness, {"DDB_DRIVER": "ddblock"}, php),
    }


class Peer:
    """One peer process, one request at a time."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str]) -> None:
        self.name = name
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True
        )

    def call(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, f"{self.name} exited ({self.proc.wait()}) on {request}"
        answer: dict[str, Any] = json.loads(line)
        return answer

    def ok(self, request: dict[str, Any]) -> dict[str, Any]:
        answer = self.call(request)
        assert answer.get("ok") is True, f"{self.name}: {request} answered {answer}"
        return answer

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def php_string(s: str | None) -> str:
    raw = b"N;" if s is None else b's:%d:"%s";' % (len(s.encode()), s.encode())
    return base64.b64encode(raw).decode()


def check_hello(p: Peer) -> None:
    hello = p.ok({"op": "hello"})
    lang = p.name.split("-")[0]
    driver = {"php": "laravel", "php-ddblock": "ddblock"}.get(p.name, "core")
    assert (hello["lang"], hello["driver"]) == (lang, driver), f"{p.name}: {hello}"
    assert abs(hello["now"] - time.time()) < 5, f"{p.name}: {hello}"


def check_locks(p: Peer, others: list[Peer]) -> None:
    name = f"self-{p.name}-{secrets.token_hex(3)}"
    took = p.ok({"op": "lock.acquire", "name": name, "ttl": 30})
    assert took["acquired"] is True and isinstance(took["owner"], str), took
    owner = took["owner"]
    if p.name in CORE or p.name == "php-ddblock":
        assert isinstance(took.get("fence"), int), f"{p.name}: no fence in {took}"
    again = p.ok({"op": "lock.acquire", "name": name, "ttl": 30, "owner": "someone-else"})
    assert again == {"ok": True, "acquired": False, "owner": "someone-else"}, again
    for q in [p, *others]:  # every peer sees the same holder
        holder = q.ok({"op": "lock.holder", "name": name})["holder"]
        assert holder is not None and holder["owner"] == owner, f"{q.name} sees {holder}"
        assert abs(holder["expires_at"] - (time.time() + 30)) < 5, f"{q.name} sees {holder}"
        value = q.ok({"op": "lock.get", "name": name})["value"]
        assert value == php_string(owner), f"{q.name}: lock.get {value}"
    wrong = p.ok({"op": "lock.release", "name": name, "owner": "someone-else"})
    assert wrong["released"] is False, wrong
    # Released by the next peer, with the owner this one got.
    releaser = others[0] if others else p
    assert releaser.ok({"op": "lock.release", "name": name, "owner": owner})["released"] is True
    assert p.ok({"op": "lock.holder", "name": name})["holder"] is None
    assert p.ok({"op": "lock.get", "name": name})["value"] == php_string(None)


def check_patterns(p: Peer, store: ddblock.Store) -> None:
    events = [f"self-{p.name}-{secrets.token_hex(3)}-{i}" for i in range(2)]
    assert p.ok({"op": "once", "events": events, "ttl": 60})["won"] == events
    assert p.ok({"op": "once", "events": events, "ttl": 60})["won"] == []
    for e in events:
        assert store.once(e, ttl=60).status().state == "done", e
    key = f"self-{p.name}-counter"
    store.put(key, 0, ttl=600)
    cas = p.ok({"op": "cas", "key": key, "n": 3})
    assert cas["increments"] == 3 and cas["conflicts"] == 0, cas
    assert store.get(key, consistent=True) == 3


def check_errors(p: Peer) -> None:
    unknown = p.call({"op": "no.such.op"})
    assert unknown == {"ok": False, "error": "unsupported: no.such.op"}, unknown
    missing = p.call({"op": "lock.acquire"})
    assert missing["ok"] is False and isinstance(missing["error"], str), missing
    if p.name in CORE:
        bad = p.call({"op": "lock.acquire", "name": "", "ttl": 30})
        assert bad["ok"] is False and bad.get("kind") == "invalid_key", bad
    else:  # the patterns are the ddblock peers'
        once = p.call({"op": "once", "events": ["x"], "ttl": 60})
        assert once == {"ok": False, "error": "unsupported: once"}, once
    assert p.ok({"op": "now"})["now"] > 0  # still answering


def new_table(endpoint: str) -> str:
    name = f"peers_{secrets.token_hex(4)}"
    store = ddblock.Store(name, endpoint_url=endpoint, prefix=PREFIX, layout="laravel12")
    store.create_table()
    return name


def main() -> int:
    endpoint = os.environ.get("DDBLOCK_TEST_MOTO")
    if not endpoint:
        raise SystemExit(
            "DDBLOCK_TEST_MOTO is not set: compat-tests/servers/servers.sh start; "
            "source compat-tests/.run/env"
        )
    known = programs()
    named = sys.argv[1:]
    if unknown := [n for n in named if n not in known]:
        raise SystemExit(f"unknown peers {unknown}; the peers are {', '.join(known)}")
    wanted = named or [n for n, (_, _, present) in known.items() if present]
    skipped = [n for n in known if n not in wanted]
    if missing := [n for n in named if not known[n][2]]:
        raise SystemExit(f"not built or not installed here: {', '.join(missing)}")
    table = new_table(endpoint)
    env = {
        **os.environ,
        "DDB_ENDPOINT": endpoint,
        "DDB_TABLE": table,
        "DDB_PREFIX": PREFIX,
        "DDB_LAYOUT": "laravel12",
        "AWS_ACCESS_KEY_ID": os.environ.get("AWS_ACCESS_KEY_ID", "test"),
        "AWS_SECRET_ACCESS_KEY": os.environ.get("AWS_SECRET_ACCESS_KEY", "test"),
    }
    store = ddblock.Store(table, endpoint_url=endpoint, prefix=PREFIX, layout="laravel12")
    peers = [Peer(n, known[n][0], {**env, **known[n][1]}) for n in wanted]
    failed = []
    try:
        for i, p in enumerate(peers):
            try:
                check_hello(p)
                check_locks(p, peers[i + 1 :] + peers[:i])
                if p.name in CORE:
                    check_patterns(p, store)
                check_errors(p)
                print(f"peer {p.name}: ok")
            except AssertionError as e:
                failed.append(p.name)
                print(f"peer {p.name}: FAILED: {e}")
    finally:
        for p in peers:
            p.close()
    print(
        f"{len(peers) - len(failed)} of {len(peers)} peers passed on moto (table {table})"
        + (f"; not run: {', '.join(skipped)}" if skipped else "")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
