"""Bad input and failures, each with its exception; the mapping of every core error kind."""

from __future__ import annotations

import socket
import time

import pytest

import ddblock
from ddblock import _native, exceptions

#: The class of each core error kind (by the core's name), and the builtin classes it also
#: derives from.
EXPECTED: dict[str, tuple[type[BaseException], tuple[type[BaseException], ...]]] = {
    "invalid_key": (ddblock.InvalidKey, (ValueError,)),
    "invalid_ttl": (ddblock.InvalidTtl, (ValueError,)),
    "table_not_found": (ddblock.TableNotFound, ()),
    "throttled": (ddblock.Throttled, ()),
    "lock_timeout": (ddblock.LockTimeout, (TimeoutError,)),
    "outcome_unknown": (ddblock.OutcomeUnknown, ()),
    "lease_lost": (ddblock.LeaseLost, ()),
    "codec": (ddblock.CodecError, (ValueError,)),
    "service": (ddblock.ServiceError, ()),
    "transport": (ddblock.TransportError, (ConnectionError,)),
    "credentials": (ddblock.CredentialsError, ()),
    "config": (ddblock.ConfigError, (ValueError,)),
    "unsupported": (ddblock.UnsupportedError, ()),
    "conflict": (ddblock.ConflictError, ()),
}


def test_every_core_error_kind_has_its_own_exception() -> None:
    # The core's list of kinds (ErrorKind::ALL), read as code through the binding.
    mapped = dict(_native._error_kinds())
    assert sorted(mapped) == sorted(EXPECTED), (
        "the core's error kinds changed: map the new kind in ddblock/exceptions.py, this test "
        "and docs/python.md (the Rust side does not compile until it is mapped)"
    )
    classes = set()
    for kind, (cls, bases) in EXPECTED.items():
        assert mapped[kind] == cls.__name__
        assert getattr(exceptions, cls.__name__) is cls
        assert cls is not ddblock.DdblockError
        classes.add(cls)
        err = _native._sample_error(kind)
        assert type(err) is cls
        assert isinstance(err, ddblock.DdblockError)
        for base in bases:
            assert isinstance(err, base)
        assert err.kind == kind
        assert "sample" in str(err) or kind in ("table_not_found", "lock_timeout")
    assert len(classes) == len(EXPECTED)


def test_exception_details() -> None:
    svc = _native._sample_error("service")
    assert isinstance(svc, ddblock.ServiceError)
    assert svc.code == "ValidationException" and svc.operation == "PutItem"
    thr = _native._sample_error("throttled")
    assert isinstance(thr, ddblock.Throttled)
    assert thr.code == "ThrottlingException"
    codec = _native._sample_error("codec")
    assert isinstance(codec, ddblock.CodecError) and codec.offset == 3
    lt = _native._sample_error("lock_timeout")
    assert isinstance(lt, ddblock.LockTimeout)
    assert lt.name == "orders" and lt.waited == 1.5 and lt.holder is None
    assert "1.5s" in str(lt), str(lt)
    tr = _native._sample_error("transport")
    assert isinstance(tr, ddblock.TransportError) and tr.endpoint == "http://127.0.0.1:1"
    nf = _native._sample_error("table_not_found")
    assert "store.create_table()" in str(nf), str(nf)


def test_empty_key(store: ddblock.Store) -> None:
    with pytest.raises(ddblock.InvalidKey, match="empty") as info:
        store.lock("")
    assert isinstance(info.value, ValueError)
    with pytest.raises(ddblock.InvalidKey):
        store.get("")
    with pytest.raises(ddblock.InvalidKey):
        store.put("", 1, ttl=60)
    with pytest.raises(ddblock.InvalidKey):
        store.restore_lock("", "owner")


def test_key_too_long(store: ddblock.Store) -> None:
    key = "k" * 3000
    with pytest.raises(ddblock.InvalidKey, match="2048") as info:
        store.lock(key)
    assert info.value.key is not None and len(info.value.key) < 100
    with pytest.raises(ddblock.InvalidKey, match="2048"):
        store.put(key, "v", ttl=60)
    with pytest.raises(ddblock.InvalidKey, match="2048"):
        store.many(["ok", key])
    # The limit counts the prefix: 2048 bytes in all.
    prefixed = ddblock.Store(store.table, prefix="app_", endpoint_url=store.endpoint_url)
    prefixed.lock_key("k" * 2044)
    with pytest.raises(ddblock.InvalidKey):
        prefixed.lock_key("k" * 2045)


def test_negative_lock_ttl(store: ddblock.Store) -> None:
    with pytest.raises(ddblock.InvalidTtl) as info:
        store.lock("x", ttl=-5)
    assert isinstance(info.value, ValueError)
    assert info.value.ttl == -5


def test_missing_table(endpoint: str) -> None:
    store = ddblock.Store("no_such_table_here", endpoint_url=endpoint)
    with pytest.raises(ddblock.TableNotFound, match="no_such_table_here") as info:
        store.lock("x").acquire(blocking=False)
    assert info.value.table == "no_such_table_here"
    assert info.value.operation == "UpdateItem"
    with pytest.raises(ddblock.TableNotFound):
        store.get("x")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unreachable_endpoint_with_a_short_timeout() -> None:
    # A loopback port nothing listens on: the connection is refused.
    url = f"http://127.0.0.1:{free_port()}"
    store = ddblock.Store(
        "cache",
        endpoint_url=url,
        connect_timeout=0.5,
        operation_timeout=1.0,
        max_attempts=1,
    )
    start = time.monotonic()
    with pytest.raises(ddblock.TransportError, match="could not reach") as info:
        store.lock("x").acquire(blocking=False)
    assert time.monotonic() - start < 5
    assert isinstance(info.value, ConnectionError)
    assert info.value.endpoint == url
    with pytest.raises(ddblock.TransportError):
        store.get("x")


def test_operation_timeout() -> None:
    # A listening socket that never answers: the operation timeout ends the call.
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    try:
        port = sock.getsockname()[1]
        store = ddblock.Store(
            "cache", endpoint_url=f"http://127.0.0.1:{port}", operation_timeout=0.5, max_attempts=1
        )
        start = time.monotonic()
        with pytest.raises(ddblock.TransportError):
            store.get("x")
        assert time.monotonic() - start < 5
    finally:
        sock.close()


def test_config_errors() -> None:
    with pytest.raises(ddblock.ConfigError, match="layout") as info:
        ddblock.Store(layout="laravel5")
    assert isinstance(info.value, ValueError)
    with pytest.raises(ddblock.ConfigError, match="table name"):
        ddblock.Store("x")
    with pytest.raises(ddblock.ConfigError, match="endpoint"):
        ddblock.Store(endpoint_url="localhost:8000")
    with pytest.raises(ddblock.ConfigError, match="distinct"):
        ddblock.Store(key_attribute="value")
    with pytest.raises(ddblock.ConfigError, match="connect_timeout"):
        ddblock.Store(connect_timeout=-1)
    with pytest.raises(ddblock.ConfigError, match="max_attempts"):
        ddblock.Store(max_attempts=0)
    with pytest.raises(ddblock.ConfigError, match="jitter"):
        ddblock.Store(backoff=ddblock.Backoff(jitter=float("nan")))
    with pytest.raises(ddblock.ConfigError, match="backoff"):
        ddblock.Store(backoff=ddblock.Backoff(initial=2.0, max=1.0))


def test_flush_is_unsupported(store: ddblock.Store) -> None:
    with pytest.raises(ddblock.UnsupportedError, match="flush"):
        store.flush()


def test_layout_names() -> None:
    assert ddblock.Store(layout="8").layout == "laravel8"
    assert ddblock.Store(layout="Laravel10").layout == "laravel8"
    assert ddblock.Store(layout="laravel13").layout == "laravel12"


def test_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DYNAMODB_CACHE_TABLE", "envtable")
    monkeypatch.setenv("DYNAMODB_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setenv("CACHE_PREFIX", "app_")
    monkeypatch.setenv("DDBLOCK_LAYOUT", "laravel8")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    store = ddblock.Store(max_attempts=1)
    assert (store.table, store.prefix, store.layout) == ("envtable", "app_", "laravel8")
    assert (store.endpoint_url, store.region) == ("http://127.0.0.1:9", "eu-west-1")
    assert store.cache_key("k") == "app_:k"
    assert ddblock.AsyncStore.from_env().lock_key("o") == "app_:app_:o"
    monkeypatch.setenv("DDBLOCK_LAYOUT", "nope")
    with pytest.raises(ddblock.ConfigError):
        ddblock.Store.from_env()
