"""Leases through the Python binding (issue 11): only an attempt's own write is recovered,
unknown outcomes are cleaned up, a cancelled task leaves no lock, the ``with`` block keeps the
lease with a heartbeat and says when it was lost, and fencing tokens grow."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest

import ddblock
from conftest import FaultProxy, Raw


def through(proxy: FaultProxy, table: str) -> ddblock.Store:
    return ddblock.Store(table, endpoint_url=proxy.url, max_attempts=2, attempt_timeout=0.4)


def heartbeating(store: ddblock.Store, endpoint: str, interval: float) -> ddblock.Store:
    """A handle on STORE's table whose heartbeats refresh every INTERVAL seconds."""
    return ddblock.Store(store.table, endpoint_url=endpoint, heartbeat_interval=interval)


def wait_until(done: Callable[[], bool], seconds: float = 3) -> None:
    """Polls DONE every 50 ms until it is true or SECONDS have passed."""
    deadline = time.monotonic() + seconds
    while not done() and time.monotonic() < deadline:
        time.sleep(0.05)


def test_another_handle_with_the_same_owner_is_refused(store: ddblock.Store) -> None:
    first = store.lock("orders", 30)
    assert first.acquire(blocking=False)
    twin = store.restore_lock("orders", first.owner)
    assert not twin.acquire(blocking=False), "as Laravel: a second holder is refused"
    assert twin.release(), "but the owner can still release it (restoreLock)"


def test_an_unknown_outcome_is_cleaned_up(proxy: FaultProxy, table: str, raw: Raw) -> None:
    proxy.faults(drop_response_rate=1.0, drop_ops=["UpdateItem"])
    lock = through(proxy, table).lock("orders", 3600)
    with pytest.raises(ddblock.OutcomeUnknown) as info:
        lock.acquire(blocking=False)
    assert info.value.kind == "outcome_unknown"
    assert "clean-up" in str(info.value) and lock.owner not in str(info.value)
    assert raw.get("orders") is None, "its own write was deleted again"


def test_a_cancelled_task_leaves_no_lock(proxy: FaultProxy, table: str, raw: Raw) -> None:
    proxy.faults(delay_response_ms=300, delay_response_ops=["UpdateItem"])
    aio = through(proxy, table).aio

    async def main() -> None:
        lock = aio.lock("orders", 3600)
        task = asyncio.create_task(lock.acquire(blocking=False))
        await asyncio.sleep(0.15)  # the write has been sent; its answer is delayed
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    wait_until(lambda: raw.get("orders") is None, 5)
    assert raw.get("orders") is None, "the cancelled acquire cleaned up after itself"


def test_with_keeps_the_lease_past_its_ttl(store: ddblock.Store, endpoint: str) -> None:
    beating = heartbeating(store, endpoint, 0.4)
    with beating.lock("long", 2, timeout=5) as lock:
        time.sleep(3.0)
        assert not lock.lease_lost
        assert lock.owned(), "still ours past the ttl"
        remaining = lock.remaining()
        assert remaining is not None and remaining > 0
    assert not beating.lock("long").locked()


def test_lease_lost_is_seen_during_the_body(store: ddblock.Store, endpoint: str) -> None:
    lock = heartbeating(store, endpoint, 0.2).lock("job", 30, timeout=5)
    with pytest.raises(ddblock.LeaseLost), lock:
        store.lock("job").force_release()
        wait_until(lambda: lock.lease_lost)
        assert lock.lease_lost, "the flag turns as soon as the heartbeat sees it"


def test_fences_grow(store: ddblock.Store) -> None:
    a = store.lock("f", 30)
    assert a.fence is None
    assert a.acquire(blocking=False)
    first = a.fence
    assert first is not None
    assert a.release()
    b = store.lock("f", 30)
    assert b.acquire(blocking=False)
    assert b.fence is not None and b.fence > first


def test_a_heartbeat_outside_with_keeps_and_then_loses_the_lease(
    store: ddblock.Store, endpoint: str
) -> None:
    lock = heartbeating(store, endpoint, 0.3).lock("export", 2)
    assert lock.acquire(blocking=False)
    hb = lock.heartbeat()
    time.sleep(3.0)  # past the 2 s ttl
    assert not hb.lost and hb.reason is None
    assert lock.owned(), "the heartbeat kept it past its ttl"
    store.lock("export").force_release()  # an operator steps in
    wait_until(lambda: hb.lost)
    assert hb.lost, "seen at the next refresh"
    assert hb.reason is not None and "no longer ours" in hb.reason
    assert hb.stop() == hb.reason
    assert hb.lost and hb.stop() == hb.reason, "stopping again keeps the verdict"


def test_a_heartbeat_block_raises_lease_lost_and_keeps_the_lock_otherwise(
    store: ddblock.Store, endpoint: str
) -> None:
    beating = heartbeating(store, endpoint, 0.2)
    kept = beating.lock("kept", 2)
    assert kept.acquire(blocking=False)
    with kept.heartbeat() as hb:
        time.sleep(2.5)
        assert not hb.lost
    assert kept.owned(), "the block stops the heartbeat; it does not release"
    assert kept.release()

    lost = beating.lock("lost", 30)
    assert lost.acquire(blocking=False)
    with pytest.raises(ddblock.LeaseLost) as info, lost.heartbeat() as hb:
        store.lock("lost").force_release()
        wait_until(lambda: hb.lost)
    assert info.value.kind == "lease_lost" and info.value.name == "lost"
    assert "no longer ours" in str(info.value)


def test_an_async_heartbeat(store: ddblock.Store, endpoint: str) -> None:
    aio = ddblock.AsyncStore(store.table, endpoint_url=endpoint, heartbeat_interval=0.2)

    async def main() -> None:
        lock = aio.lock("aio", 30)
        assert await lock.acquire(blocking=False)
        hb = lock.heartbeat()
        assert isinstance(hb, ddblock.AsyncHeartbeat)
        await aio.lock("aio").force_release()
        for _ in range(60):
            if hb.lost:
                break
            await asyncio.sleep(0.05)
        assert hb.lost
        assert await hb.stop() == hb.reason
        with pytest.raises(ddblock.LeaseLost):
            async with lock.heartbeat() as again:  # the lock is not ours: the first refresh says so
                for _ in range(60):
                    if again.lost:
                        break
                    await asyncio.sleep(0.05)

    asyncio.run(main())


def test_holders_carry_the_fence(store: ddblock.Store) -> None:
    lock = store.lock("fenced", 30)
    assert lock.acquire(blocking=False)
    holder = lock.holder()
    assert holder is not None and holder.fence is not None
    assert holder.fence == lock.fence
    with pytest.raises(ddblock.LockTimeout) as info, store.lock("fenced", 30, timeout=0):
        pass
    assert info.value.holder is not None and info.value.holder.fence == lock.fence
    assert "fence=" in repr(holder)
