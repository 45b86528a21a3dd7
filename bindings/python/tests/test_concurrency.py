"""Threads contending (the GIL is released while waiting) and os.fork() (a child gets a working
runtime and client)."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time

import pytest

import ddblock
from conftest import in_threads


def test_threads_contending_never_overlap(store: ddblock.Store) -> None:
    threads, cycles = 8, 50
    state = {"inside": 0, "counter": 0, "overlaps": 0}

    def work() -> None:
        for _ in range(cycles):
            with store.lock("shared", ttl=30, timeout=60):
                state["inside"] += 1
                if state["inside"] != 1:
                    state["overlaps"] += 1
                seen = state["counter"]
                time.sleep(0.0005)  # let another thread run if it could get in
                state["counter"] = seen + 1
                state["inside"] -= 1

    in_threads(threads, work)
    assert state["overlaps"] == 0
    assert state["counter"] == threads * cycles


def test_the_gil_is_released_while_waiting(store: ddblock.Store) -> None:
    holder = store.lock("x", ttl=30)
    assert holder.acquire(blocking=False)
    waiter = store.lock("x", ttl=30)
    t = threading.Thread(target=waiter.acquire, kwargs={"timeout": 1.5})
    t.start()
    time.sleep(0.2)  # the thread is now inside the native wait
    count = 0
    end = time.monotonic() + 0.5
    while time.monotonic() < end:
        count += 1
    t.join()
    # With the GIL held by the waiting thread this loop would barely run.
    assert count > 10_000, count
    holder.release()


def _wait_child(pid: int, deadline_s: float = 60) -> int:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.02)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    raise AssertionError("the forked child hung")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_fork_child_uses_the_inherited_store(store: ddblock.Store) -> None:
    # Make sure the parent's runtime and client exist (and have pooled connections).
    store.put("before", "fork", ttl=60)
    parent_lock = store.lock("p", ttl=30)
    assert parent_lock.acquire(blocking=False)
    child_name = "c"

    pid = os.fork()
    if pid == 0:  # the child: must always leave through os._exit
        code = 1
        try:
            assert store.get("before") == "fork"
            lock = store.lock(child_name, ttl=30)
            assert lock.acquire(blocking=False)
            assert lock.owned()
            # A lock handle made in the parent works here too.
            assert parent_lock.owned()
            assert not store.lock("p").acquire(blocking=False)

            async def aio() -> None:
                assert await store.aio.get("before") == "fork"
                async with store.aio.lock("ca", ttl=30, timeout=5):
                    pass

            asyncio.run(aio())
            assert lock.release()
            store.put("from-child", os.getpid(), ttl=60)
            code = 0
        except BaseException:
            import traceback

            traceback.print_exc()
        finally:
            os._exit(code)

    assert _wait_child(pid) == 0
    # The parent still works after the fork, on its own runtime and client.
    assert store.get("from-child", consistent=True) == pid
    assert not store.lock(child_name).locked()
    assert parent_lock.release()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_fork_before_first_use(endpoint: str, table: str) -> None:
    store = ddblock.Store(table, endpoint_url=endpoint)
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            lock = store.lock("x", ttl=30)
            code = 0 if lock.acquire(blocking=False) and lock.release() else 1
        finally:
            os._exit(code)
    assert _wait_child(pid) == 0
    assert store.lock("x").acquire(blocking=False)


class _Interrupted(Exception):
    pass


def test_a_signal_interrupts_an_unbounded_wait(store: ddblock.Store) -> None:
    holder = store.lock("x", ttl=30)
    assert holder.acquire(blocking=False)

    def on_signal(signum: int, frame: object) -> None:
        raise _Interrupted

    previous = signal.signal(signal.SIGUSR1, on_signal)
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGUSR1))
    try:
        timer.start()
        start = time.monotonic()
        with pytest.raises(_Interrupted):
            store.lock("x", ttl=30).acquire()  # no timeout: waits until the signal
        assert time.monotonic() - start < 5
    finally:
        timer.cancel()
        signal.signal(signal.SIGUSR1, previous)
    assert holder.release()
