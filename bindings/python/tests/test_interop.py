"""Interop: the same locks and cache entries from Python, PHP (Laravel 8.83's real DynamoDbStore
and DynamoDbLock, driven through compat-tests/laravel/harness.php) and Rust (the core's peer,
ddblock-peer): peers over JSON lines (compat-tests/support/peers/PROTOCOL.md), started and
driven by compat-tests/support/peers/driver.py (conftest.py puts its folder on sys.path)."""

from __future__ import annotations

import base64
import json
import subprocess
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

import pytest
from driver import Peer

import ddblock
from conftest import ROOT

LAYOUTS = ["laravel8", "laravel12"]
PREFIX = "app_"


def b64(serialized: bytes) -> str:
    return base64.b64encode(serialized).decode()


def unb64(text: str) -> bytes:
    return base64.b64decode(text)


@pytest.fixture(params=LAYOUTS)
def layout(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def php(endpoint: str, table: str, layout: str) -> Iterator[Peer]:
    """Stock Laravel's peer, ``php compat-tests/laravel/harness.php``."""
    try:
        harness = Peer("php", endpoint=endpoint, table=table, layout=layout, prefix=PREFIX)
    except FileNotFoundError:
        pytest.fail("php is not installed: run compat-tests/setup.sh")
    yield harness
    harness.close(timeout=10)


@pytest.fixture
def py(endpoint: str, table: str, layout: str) -> ddblock.Store:
    return ddblock.Store(table, prefix=PREFIX, layout=layout, endpoint_url=endpoint)


def released_in_python(py: ddblock.Store, peer: Peer) -> str:
    """PEER takes lock "orders:42"; Python sees its owner, cannot take it, and releases it as
    that owner (restore_lock). Returns the owner."""
    got = peer.call(op="lock.acquire", name="orders:42", ttl=30)
    assert got["acquired"] is True
    owner: str = got["owner"]
    lock = py.lock("orders:42", ttl=30)
    assert not lock.acquire(blocking=False)
    holder = lock.holder()
    assert holder is not None and holder.owner == owner
    assert py.restore_lock("orders:42", owner).release()
    return owner


# ---- PHP ----------------------------------------------------------------------------------------


def test_python_lock_is_seen_and_released_by_php(py: ddblock.Store, php: Peer) -> None:
    lock = py.lock("orders:42", ttl=30)
    assert lock.acquire(blocking=False)
    # Laravel sees our owner, and cannot take the lock.
    assert unb64(php.call(op="lock.get", name="orders:42")["value"]) == ddblock.serialize(
        lock.owner
    )
    assert php.call(op="lock.acquire", name="orders:42", ttl=30)["acquired"] is False
    # Laravel's restoreLock(name, owner)->release() frees it.
    assert php.call(op="lock.release", name="orders:42", owner=lock.owner)["released"] is True
    assert not lock.locked()
    assert php.call(op="lock.acquire", name="orders:42", ttl=30)["acquired"] is True


def test_php_lock_is_seen_and_released_by_python(py: ddblock.Store, php: Peer) -> None:
    released_in_python(py, php)
    assert php.call(op="lock.acquire", name="orders:42", ttl=30)["acquired"] is True


def test_numeric_php_owner_released_by_python(py: ddblock.Store, php: Peer) -> None:
    got = php.call(op="lock.acquire", name="n", ttl=30, owner="12345")
    assert got["acquired"] is True
    # Laravel itself cannot release a restored numeric owner (it compares 12345 === '12345').
    assert php.call(op="lock.release", name="n", owner="12345")["released"] is False
    assert py.restore_lock("n", "12345").release()


def test_python_with_block_excludes_php(py: ddblock.Store, php: Peer) -> None:
    with py.lock("job", ttl=30, timeout=5):
        assert php.call(op="lock.acquire", name="job", ttl=30)["acquired"] is False
    assert php.call(op="lock.acquire", name="job", ttl=30)["acquired"] is True
    with pytest.raises(ddblock.LockTimeout), py.lock("job", timeout=0.2):
        pass


def test_python_refresh_seen_by_php(py: ddblock.Store, php: Peer, layout: str) -> None:
    lock = py.lock("r", ttl=5)
    assert lock.acquire(blocking=False)
    assert lock.refresh(600)
    if layout == "laravel12":
        assert php.call(op="lock.refresh", name="r", owner=lock.owner, ttl=900)["refreshed"]
    assert lock.release()


# Values written by Python, read by PHP: serialize() text as PHP's own serialize() writes it.
PY_TO_PHP: list[tuple[Any, bytes]] = [
    ("hello", b's:5:"hello";'),
    (42, b"i:42;"),
    (1.5, b"d:1.5;"),
    (True, b"b:1;"),
    (None, b"N;"),
    ("12345", b"i:12345;"),  # numeric strings come back as numbers, in PHP too
    ([1, "two", None], b'a:3:{i:0;i:1;i:1;s:3:"two";i:2;N;}'),
    ({"a": {"b": [True, 0.5]}}, b'a:1:{s:1:"a";a:1:{s:1:"b";a:2:{i:0;b:1;i:1;d:0.5;}}}'),
    (ddblock.PhpObject("stdClass", {"p": 1}), b'O:8:"stdClass":1:{s:1:"p";i:1;}'),
]


def test_cache_values_python_to_php(py: ddblock.Store, php: Peer) -> None:
    for i, (value, expected) in enumerate(PY_TO_PHP):
        py.put(f"k{i}", value, ttl=60)
        assert unb64(php.call(op="get", key=f"k{i}")["value"]) == expected, value
    many = php.call(op="many", keys=[f"k{i}" for i in range(len(PY_TO_PHP))])["values"]
    for i, (_, expected) in enumerate(PY_TO_PHP):
        assert unb64(many[f"k{i}"]) == expected


# Values written by PHP, read by Python.
PHP_TO_PY: list[tuple[bytes, Any]] = [
    (b's:5:"hello";', "hello"),
    (b"i:-7;", -7),
    (b"d:0.25;", 0.25),
    (b"b:0;", False),
    (b'a:2:{i:0;s:1:"x";s:1:"k";a:0:{}}', {0: "x", "k": []}),
    (b'O:8:"stdClass":2:{s:1:"a";i:1;s:1:"b";a:1:{i:0;i:2;}}', None),
]


def test_cache_values_php_to_python(py: ddblock.Store, php: Peer) -> None:
    for i, (serialized, expected) in enumerate(PHP_TO_PY):
        assert php.call(op="put", key=f"p{i}", v=b64(serialized), ttl=60)["result"] is True
        got = py.get(f"p{i}")
        if expected is None:
            assert got == ddblock.PhpObject("stdClass", {"a": 1, "b": [2]})
        else:
            assert got == expected
    php.call(op="putMany", values={"m1": b64(b"i:1;"), "m2": b64(b's:1:"2";')}, ttl=60)
    assert py.many(["m1", "m2"]) == {"m1": 1, "m2": 2}  # '2' is numeric: stored as N 2
    php.call(op="forever", key="f", v=b64(b's:4:"ever";'))
    assert py.get("f") == "ever"


def test_counters_shared_with_php(py: ddblock.Store, php: Peer) -> None:
    py.put("count", 5, ttl=60)
    assert php.call(op="increment", key="count", by=2)["result"] == 7
    assert py.increment("count", 3) == 10
    assert php.call(op="decrement", key="count")["result"] == 9
    assert py.get("count", consistent=True) == 9
    assert py.add("count", 1, ttl=60) is False
    assert php.call(op="add", key="new", v=b64(b"i:1;"), ttl=60)["result"] is True
    assert py.add("new", 2, ttl=60) is False


# ---- Rust ---------------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def rust_peer_binary() -> str:
    """Builds the Rust peer, ddblock-peer (fast when up to date), and returns its path."""
    out = subprocess.run(
        [
            "cargo",
            "build",
            "--quiet",
            "-p",
            "ddblock-test-support",
            "--bin",
            "ddblock-peer",
            "--message-format=json",
        ],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    for line in out.splitlines():
        msg = json.loads(line)
        if msg.get("reason") == "compiler-artifact" and msg["target"]["name"] == "ddblock-peer":
            exe: str = msg["executable"]
            return exe
    raise AssertionError("cargo did not report the ddblock-peer executable")


def rust_holder(rust: Peer, name: str) -> str | None:
    """The owner holding lock ``name`` now, None when free, as the Rust peer reads it."""
    got = rust.call(op="lock.holder", name=name)["holder"]
    return None if got is None else str(got["owner"])


@pytest.fixture
def rust(endpoint: str, table: str, layout: str) -> Iterator[Peer]:
    """The Rust peer over the core, configured through the DDB_* environment."""
    # Built here, before the test takes any lock: a build under load can outlast a lock's ttl
    # (a 30 s lock taken first was seen expired by the peer's first call).
    program = rust_peer_binary()
    peer = Peer(
        "rust",
        endpoint=endpoint,
        table=table,
        layout=layout,
        prefix=PREFIX,
        region="us-east-1",
        argv=[program],
    )
    peer.hello()
    yield peer
    peer.close(timeout=10)


def test_python_lock_is_seen_and_released_by_rust(py: ddblock.Store, rust: Peer) -> None:
    lock = py.lock("orders:42", ttl=30)
    assert lock.acquire(blocking=False)
    assert rust_holder(rust, "orders:42") == lock.owner
    assert rust.call(op="lock.acquire", name="orders:42", ttl=30)["acquired"] is False
    assert rust.call(op="lock.release", name="orders:42", owner="someone-else")["released"] is False
    assert rust_holder(rust, "orders:42") == lock.owner
    assert rust.call(op="lock.release", name="orders:42", owner=lock.owner)["released"] is True
    assert not lock.locked()
    assert rust_holder(rust, "orders:42") is None


def test_rust_lock_is_seen_and_released_by_python(py: ddblock.Store, rust: Peer) -> None:
    owner = released_in_python(py, rust)
    assert rust.call(op="lock.release", name="orders:42", owner=owner)["released"] is False


def test_cache_values_python_and_rust(py: ddblock.Store, rust: Peer) -> None:
    for i, (value, expected) in enumerate(PY_TO_PHP):
        py.put(f"k{i}", value, ttl=60)
        assert unb64(rust.call(op="get", key=f"k{i}")["value"]) == expected, value
    assert unb64(rust.call(op="get", key="missing")["value"]) == b"N;"
    for i, (serialized, expected) in enumerate(PHP_TO_PY[:5]):
        assert rust.call(op="put", key=f"r{i}", v=b64(serialized), ttl=60)["result"] is True
        assert py.get(f"r{i}") == expected
    rust.call(op="put", key="bin", v=b64(b's:3:"\xc3\xa9!";'), ttl=60)
    assert py.get("bin") == "é!"
