"""Versioned compare-and-set from Python: versions in Laravel's items, conflicts, Laravel writes in
between, update() under thread contention and giving up, asyncio, and bad input."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import ddblock
from conftest import Raw, in_threads


def test_versions_and_conflicts(store: ddblock.Store, raw: Raw) -> None:
    missing = store.get_versioned("stock")
    assert (missing.value, missing.version) == (None, 0)
    v1 = store.put_if_version("stock", {"count": 10}, ttl=60, version=0)
    assert v1 is not None and v1 > 1_700_000_000_000_000
    item = raw.get("stock")
    assert item is not None and item["ddblock_version"] == {"N": str(v1)}
    assert store.get("stock") == {"count": 10}, "Laravel's get reads it"
    read = store.get_versioned("stock")
    assert (read.value, read.version) == ({"count": 10}, v1)
    assert repr(read) == f"Versioned(value={{'count': 10}}, version={v1})"
    assert store.put_if_version("stock", {"count": 9}, ttl=60, version=read) == v1 + 1
    assert store.put_if_version("stock", {"count": 8}, ttl=60, version=v1) is None
    assert store.put_if_version("stock", {"count": 8}, ttl=60, version=read) is None
    assert store.get("stock", consistent=True) == {"count": 9}


def test_laravel_writes_in_between(store: ddblock.Store) -> None:
    v = store.put_if_version("n", 5, ttl=60, version=0)
    assert v is not None
    read = store.get_versioned("n")
    assert store.increment("n") == 6  # Laravel's increment keeps the version
    assert store.put_if_version("n", 50, ttl=60, version=read) is None, "the value changed"
    store.put("n", 100, ttl=60)  # Laravel's put drops it
    assert store.put_if_version("n", 50, ttl=60, version=v) is None
    assert store.get_versioned("n").version == 0


def test_update_under_thread_contention(store: ddblock.Store) -> None:
    threads_n, each = 8, 10

    def work() -> None:
        for _ in range(each):
            store.update("counter", lambda v: (v or 0) + 1, ttl=60, attempts=1000)

    in_threads(threads_n, work)
    assert store.get("counter", consistent=True) == threads_n * each


def test_update_gives_up_with_conflict_error(store: ddblock.Store) -> None:
    rounds = 0

    def fn(v: Any) -> Any:
        nonlocal rounds
        rounds += 1
        store.put("k", rounds, ttl=60)  # a Laravel put lands between each read and write
        return (v or 0) + 100

    with pytest.raises(ddblock.ConflictError, match="each of 3 attempts") as info:
        store.update("k", fn, ttl=60, attempts=3)
    assert rounds == 3 and info.value.key == "k"
    written = store.update("k", lambda v: v + 100, ttl=60)
    assert (written.value, store.get_versioned("k").version) == (103, written.version)


def test_asyncio(aio: ddblock.AsyncStore) -> None:
    async def main() -> None:
        async def bump() -> None:
            for _ in range(5):
                await aio.update("c", lambda v: (v or 0) + 1, ttl=60, attempts=1000)

        await asyncio.gather(*(bump() for _ in range(4)))
        read = await aio.get_versioned("c")
        assert read.value == 20
        assert await aio.put_if_version("c", 0, ttl=60, version=read.version) == read.version + 1

    asyncio.run(main())


@pytest.mark.parametrize(
    ("version", "error"),
    [
        (-1, ddblock.ConfigError),
        (1.5, ddblock.ConfigError),
        (2**60, ddblock.ConfigError),
        ("1", TypeError),
        (True, TypeError),
    ],
)
def test_bad_versions(store: ddblock.Store, version: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        store.put_if_version("k", 1, ttl=60, version=version)


def test_bad_update_input(store: ddblock.Store) -> None:
    with pytest.raises(ddblock.ConfigError):
        store.update("k", lambda v: v, ttl=60, attempts=0)
    with pytest.raises(ddblock.InvalidKey):
        store.get_versioned("")
