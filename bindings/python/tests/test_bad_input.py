"""The shared bad-input table (compat-tests/conformance/bad-input.json) through Python: each case
gets the same kind as in every other front (the rules are the core's)."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from typing import Any

import pytest

import ddblock
from conftest import ROOT, FaultProxy, Raw, endpoint_of, new_table

TABLE = ROOT / "compat-tests/conformance/bad-input.json"
CASES: list[dict[str, Any]] = json.loads(TABLE.read_text())["cases"]


def name_of(c: dict[str, Any]) -> str:
    if "name_repeat" in c:
        text, times = c["name_repeat"]
        return str(text) * int(times)
    return str(c.get("name", ""))


def closed_endpoint() -> str:
    """A loopback URL nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def without_credentials(c: dict[str, Any], endpoint: str, table: str) -> str:
    """Runs the case in a fresh interpreter with no AWS credentials anywhere; returns the kind."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    with tempfile.TemporaryDirectory() as home:
        env.update(HOME=home, AWS_EC2_METADATA_DISABLED="true")
        script = (
            "import ddblock, json, sys\n"
            "c = json.loads(sys.argv[1])\n"
            "store = ddblock.Store(sys.argv[2], endpoint_url=sys.argv[3], region='us-east-1')\n"
            "try:\n"
            "    store.lock(c['name'], c['ttl']).acquire()\n"
            "except ddblock.DdblockError as e:\n"
            "    print(e.kind)\n"
        )
        out = subprocess.run(
            [sys.executable, "-c", script, json.dumps(c), table, endpoint],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def run(c: dict[str, Any], endpoint: str, table: str) -> None:
    if c.get("server") == "unreachable":
        endpoint = closed_endpoint()
    if "stored" in c:
        Raw(endpoint, table).put({"key": {"S": c["key"]}, "value": {"S": c["stored"]}})
    if c["op"] == "config":
        ddblock.Store(
            c.get("table", table),
            layout=c.get("layout"),
            endpoint_url=c.get("endpoint", endpoint),
            clock_skew_margin=c.get("clock_skew_margin"),
        )
        return
    store = ddblock.Store(
        "ddblock_no_such_table" if c.get("table") == "missing" else table,
        endpoint_url=endpoint,
        region="us-east-1",
        prefix="",
        max_attempts=2,
    )
    if c["op"] == "lock":
        store.lock(name_of(c), c["ttl"])
    elif c["op"] == "acquire":
        store.lock(name_of(c), c["ttl"]).acquire()
    elif c["op"] == "get":
        store.get(c["key"])
    elif c["op"] == "put":
        store.put(c["key"], c["value"], ttl=c["ttl"])
    elif c["op"] == "once":
        store.once(name_of(c), ttl=c["ttl"])
    elif c["op"] == "put_if_version":
        store.put_if_version(c["key"], c["value"], ttl=c["ttl"], version=c["version"])
    else:
        raise AssertionError(c["op"])


@pytest.mark.parametrize("case", CASES, ids=[c["case"] for c in CASES])
def test_bad_input_gets_its_kind(case: dict[str, Any]) -> None:
    endpoint = endpoint_of("moto")
    table = new_table(endpoint)
    if case.get("server") == "no_credentials":
        assert without_credentials(case, endpoint, table) == case["kind"]
        return
    proxy = FaultProxy(endpoint) if case.get("server") == "throttling" else None
    try:
        if proxy is not None:
            proxy.faults(throttle_rate=1.0)
        with pytest.raises(ddblock.DdblockError) as info:
            run(case, endpoint if proxy is None else proxy.url, table)
    finally:
        if proxy is not None:
            proxy.close()
    assert info.value.kind == case["kind"], str(info.value)


OUTCOMES: list[dict[str, Any]] = json.loads(TABLE.read_text())["outcomes"]


def timeout_of(c: dict[str, Any]) -> float | None:
    """The case's wait in Python's idiom: ``timeout=`` seconds, None for forever."""
    w = c["wait"]
    if w == "forever":
        return None
    return float("nan") if w == "NaN" else float(w)


def body(c: dict[str, Any], direct: ddblock.Store, lock: ddblock.Lock | None) -> None:
    """The case's body: ``raise`` fails; ``lose_lease`` force-releases the lock from a second
    handle and waits until the heartbeat has seen it; ``remove`` force-releases it and ends."""
    if c["body"] == "raise":
        raise RuntimeError("body")
    if c["body"] == "remove":
        assert lock is not None
        assert direct.lock(lock.name).force_release()
    if c["body"] == "lose_lease":
        assert lock is not None
        direct.lock(lock.name).force_release()
        deadline = time.monotonic() + 5
        while not lock.lease_lost and time.monotonic() < deadline:
            time.sleep(0.05)
        assert lock.lease_lost, "the heartbeat sees the lease lost"


def outcome(c: dict[str, Any], name: str, store: ddblock.Store, direct: ddblock.Store) -> Any:
    """What the case did, in the table's words (its ``expect``)."""
    try:
        if c["op"] == "acquire":
            if c.get("held_by_other"):
                assert direct.lock(name, 60).acquire(blocking=False)
            return {"acquired": store.lock(name, c["ttl"]).acquire(timeout=timeout_of(c))}
        if c["op"] == "with_lock":
            try:
                with store.lock(name, c["ttl"], timeout=timeout_of(c)) as lock:
                    body(c, direct, lock)
            except RuntimeError as e:
                return {"body_error": True, "attached": attached_kind(e)}
            return {"ok": True}
        if c["op"] == "once_run":
            try:
                store.once(name, ttl=c["ttl"]).run(lambda: body(c, direct, None))
            except RuntimeError as e:
                return {"body_error": True, "attached": attached_kind(e)}
            return {"ok": True}
    except ddblock.DdblockError as e:
        return {"error": e.kind}
    raise AssertionError(c["op"])


def attached_kind(e: BaseException) -> str | None:
    """The kind of the ddblock error that rides on the body's exception as a note
    (``ddblock: ... failed too (KIND): message``)."""
    for note in getattr(e, "__notes__", []):
        m = re.match(r"ddblock: .* failed too \((\w+)\): ", note)
        if m:
            return m.group(1)
    return None


@pytest.mark.skipif(sys.version_info < (3, 11), reason="notes are Python 3.11+")
@pytest.mark.parametrize("case", OUTCOMES, ids=[c["case"] for c in OUTCOMES])
def test_wait_and_lease_case_has_its_outcome(case: dict[str, Any]) -> None:
    endpoint = endpoint_of("moto")
    table = new_table(endpoint)
    proxy = FaultProxy(endpoint)
    try:
        proxy.faults(**case.get("faults", {}))
        store = ddblock.Store(table, endpoint_url=proxy.url, region="us-east-1", prefix="")
        direct = ddblock.Store(table, endpoint_url=endpoint, region="us-east-1", prefix="")
        got = outcome(case, case["name"], store, direct)
        # The scripted faults happened (a case that passes without them proves nothing).
        stats = proxy.stats()
        for op, script in case.get("faults", {}).get("sequence", {}).items():
            want = next(f for f in script if f != "ok")
            assert stats[op].get("throttled" if want == "throttle" else "dropped", 0) > 0, op
    finally:
        proxy.close()
    assert got == case["expect"], case["case"]
    if case.get("free_after"):
        assert not direct.lock(case["name"]).locked()
