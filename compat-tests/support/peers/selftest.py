"""Self-test of the peers (PROTOCOL.md, beside this file): starts each peer on moto with a fresh
table (through driver.py) and checks what every test relies on: ``hello``; ``lock.acquire`` /
``lock.holder`` / ``lock.get`` / ``lock.release``, each lock seen the same by every other peer;
``once`` and ``cas`` (the ddblock peers); that an unknown op answers ``unsupported``, a bad
request ok:false (with the error kind from the core's peers), and that the peer goes on
answering.

    source compat-tests/.run/env    # DDBLOCK_TEST_MOTO (compat-tests/servers/servers.sh start)
    bindings/python/.venv/bin/python compat-tests/support/peers/selftest.py [PEER...]

PEER: python, node, cli, rust, php (stock Laravel), php-ddblock (the PHP driver). Without any,
every peer whose program is there runs (rust: target/debug/ddblock-peer; cli:
target/debug/ddblock; php: ``php`` on PATH) and the others are reported skipped; a peer named
on the command line must run. Exits 1 when a check failed.
"""

from __future__ import annotations

import base64
import os
import secrets
import sys
import time

from driver import PEERS, Peer, available

import ddblock

PREFIX = "app_"
#: Peers whose ops run on the core (the others: PHP), which answer the patterns and error kinds.
CORE = {"python", "node", "cli", "rust"}


def php_string(s: str | None) -> str:
    raw = b"N;" if s is None else b's:%d:"%s";' % (len(s.encode()), s.encode())
    return base64.b64encode(raw).decode()


def check_hello(p: Peer) -> None:
    hello = p.hello()  # the lang and driver of p.name
    assert abs(hello["now"] - time.time()) < 5, f"{p.name}: {hello}"


def check_locks(p: Peer, others: list[Peer]) -> None:
    name = f"self-{p.name}-{secrets.token_hex(3)}"
    took = p.call({"op": "lock.acquire", "name": name, "ttl": 30})
    assert took["acquired"] is True and isinstance(took["owner"], str), took
    owner = took["owner"]
    if p.name in CORE or p.name == "php-ddblock":
        assert isinstance(took.get("fence"), int), f"{p.name}: no fence in {took}"
    again = p.call({"op": "lock.acquire", "name": name, "ttl": 30, "owner": "someone-else"})
    assert again == {"ok": True, "acquired": False, "owner": "someone-else"}, again
    for q in [p, *others]:  # every peer sees the same holder
        holder = q.call({"op": "lock.holder", "name": name})["holder"]
        assert holder is not None and holder["owner"] == owner, f"{q.name} sees {holder}"
        assert abs(holder["expires_at"] - (time.time() + 30)) < 5, f"{q.name} sees {holder}"
        value = q.call({"op": "lock.get", "name": name})["value"]
        assert value == php_string(owner), f"{q.name}: lock.get {value}"
    wrong = p.call({"op": "lock.release", "name": name, "owner": "someone-else"})
    assert wrong["released"] is False, wrong
    # Released by the next peer, with the owner this one got.
    releaser = others[0] if others else p
    assert releaser.call({"op": "lock.release", "name": name, "owner": owner})["released"] is True
    assert p.call({"op": "lock.holder", "name": name})["holder"] is None
    assert p.call({"op": "lock.get", "name": name})["value"] == php_string(None)


def check_patterns(p: Peer, store: ddblock.Store) -> None:
    events = [f"self-{p.name}-{secrets.token_hex(3)}-{i}" for i in range(2)]
    assert p.call({"op": "once", "events": events, "ttl": 60})["won"] == events
    assert p.call({"op": "once", "events": events, "ttl": 60})["won"] == []
    for e in events:
        assert store.once(e, ttl=60).status().state == "done", e
    key = f"self-{p.name}-counter"
    store.put(key, 0, ttl=600)
    cas = p.call({"op": "cas", "key": key, "n": 3})
    assert cas["increments"] == 3 and cas["conflicts"] == 0, cas
    assert store.get(key, consistent=True) == 3


def check_errors(p: Peer) -> None:
    unknown = p.ask({"op": "no.such.op"})
    assert unknown == {"ok": False, "error": "unsupported: no.such.op"}, unknown
    missing = p.ask({"op": "lock.acquire"})
    assert missing["ok"] is False and isinstance(missing["error"], str), missing
    if p.name in CORE:
        bad = p.ask({"op": "lock.acquire", "name": "", "ttl": 30})
        assert bad["ok"] is False and bad.get("kind") == "invalid_key", bad
    else:  # the patterns are the ddblock peers'
        once = p.ask({"op": "once", "events": ["x"], "ttl": 60})
        assert once == {"ok": False, "error": "unsupported: once"}, once
    assert p.call({"op": "now"})["now"] > 0  # still answering


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
    named = sys.argv[1:]
    if unknown := [n for n in named if n not in PEERS]:
        raise SystemExit(f"unknown peers {unknown}; the peers are {', '.join(PEERS)}")
    wanted = named or [n for n in PEERS if available(n)]
    skipped = [n for n in PEERS if n not in wanted]
    if missing := [n for n in named if not available(n)]:
        raise SystemExit(f"not built or not installed here: {', '.join(missing)}")
    table = new_table(endpoint)
    store = ddblock.Store(table, endpoint_url=endpoint, prefix=PREFIX, layout="laravel12")
    peers = [
        Peer(n, endpoint=endpoint, table=table, prefix=PREFIX, layout="laravel12") for n in wanted
    ]
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
