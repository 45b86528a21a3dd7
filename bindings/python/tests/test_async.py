"""AsyncStore and AsyncLock: coroutines, async with, cancellation, a free event loop."""

from __future__ import annotations

import asyncio
import time

import pytest

import ddblock
from conftest import Raw

pytestmark = pytest.mark.asyncio


async def test_async_with(aio: ddblock.AsyncStore, raw: Raw) -> None:
    lock = aio.lock("orders:42", ttl=30, timeout=5)
    async with lock as held:
        assert held is lock
        assert await lock.owned()
        item = raw.get("orders:42")
        assert item is not None and item["value"] == {"S": f's:16:"{lock.owner}";'}
    assert not await lock.locked()
    assert raw.get("orders:42") is None


async def test_async_methods(aio: ddblock.AsyncStore) -> None:
    a = aio.lock("x", ttl=30)
    b = aio.lock("x", ttl=30)
    assert await a.acquire(blocking=False)
    assert not await b.acquire(blocking=False)
    assert not await b.acquire(timeout=0.2)
    holder = await b.holder()
    assert holder is not None and holder.owner == a.owner
    assert await a.refresh(60)
    assert not await b.release()
    assert await a.release()
    assert await b.acquire(timeout=1)
    await aio.restore_lock("x", b.owner).force_release()
    assert await b.holder() is None


async def test_async_with_raises_lock_timeout(aio: ddblock.AsyncStore) -> None:
    other = aio.lock("x", ttl=30)
    assert await other.acquire(blocking=False)
    with pytest.raises(ddblock.LockTimeout):
        async with aio.lock("x", timeout=0.2):
            pytest.fail("the body must not run")
    assert await other.release()


async def test_async_with_never_swallows_the_body_exception(aio: ddblock.AsyncStore) -> None:
    lock = aio.lock("x", ttl=30, timeout=5)
    with pytest.raises(RuntimeError, match="boom"):
        async with lock:
            raise RuntimeError("boom")
    assert not await lock.locked()


async def test_waiting_does_not_block_the_event_loop(aio: ddblock.AsyncStore) -> None:
    holder = aio.lock("x", ttl=30)
    assert await holder.acquire(blocking=False)
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    task = asyncio.create_task(ticker())
    try:
        assert not await aio.lock("x", ttl=30).acquire(timeout=0.5)
    finally:
        task.cancel()
    # 0.5 s of waiting; the loop ran the ticker meanwhile (about 50 ticks).
    assert ticks >= 20
    await holder.release()


async def test_cancelling_a_wait(aio: ddblock.AsyncStore) -> None:
    holder = aio.lock("x", ttl=30)
    assert await holder.acquire(blocking=False)
    waiter = aio.lock("x", ttl=30)
    start = time.monotonic()
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(waiter.acquire(), timeout=0.3)  # no timeout of its own
    assert time.monotonic() - start < 3
    assert await holder.release()
    assert await waiter.acquire(timeout=2)
    await waiter.release()


async def test_tasks_contending(aio: ddblock.AsyncStore) -> None:
    inside = 0
    done = 0

    async def worker() -> None:
        nonlocal inside, done
        for _ in range(10):
            async with aio.lock("shared", ttl=30, timeout=30):
                inside += 1
                assert inside == 1
                await asyncio.sleep(0.001)
                inside -= 1
                done += 1

    await asyncio.gather(*(worker() for _ in range(5)))
    assert done == 50


async def test_async_cache(aio: ddblock.AsyncStore) -> None:
    await aio.put("k", {"a": [1, 2]}, ttl=60)
    assert await aio.get("k") == {"a": [1, 2]}
    assert await aio.get("missing", "dflt") == "dflt"
    assert await aio.get("k", consistent=True) == {"a": [1, 2]}
    await aio.put_many({"a": 1, "b": "two"}, ttl=60)
    assert await aio.many(["a", "b", "c"]) == {"a": 1, "b": "two", "c": None}
    assert await aio.add("a", 5, ttl=60) is False
    assert await aio.add("new", 5, ttl=60) is True
    assert await aio.increment("new", 2) == 7
    assert await aio.decrement("new") == 6
    assert await aio.increment("nope") is None
    assert await aio.touch("new", ttl=600)
    await aio.forever("f", "ever")
    assert await aio.get("f") == "ever"
    await aio.forget("f")
    assert await aio.get("f") is None
    with pytest.raises(ddblock.UnsupportedError):
        await aio.flush()


async def test_errors_reach_the_awaiting_coroutine(endpoint: str) -> None:
    aio = ddblock.AsyncStore("no_such_table", endpoint_url=endpoint)
    with pytest.raises(ddblock.TableNotFound):
        await aio.get("k")
    with pytest.raises(ddblock.TableNotFound):
        await aio.lock("x").acquire(blocking=False)
    with pytest.raises(ddblock.InvalidKey):
        aio.lock("")


async def test_sync_and_async_share_a_store(store: ddblock.Store) -> None:
    aio = store.aio
    assert aio.sync.table == store.table
    lock = store.lock("x", ttl=30)
    assert lock.acquire(blocking=False)
    assert not await aio.lock("x").acquire(blocking=False)
    assert await aio.restore_lock("x", lock.owner).release()
