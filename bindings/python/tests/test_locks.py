"""Locks, blocking API: acquire, release, with, timeouts, refresh, restore, inspection."""

from __future__ import annotations

import sys
import time
import warnings

import pytest

import ddblock
from conftest import Raw


def test_acquire_release(store: ddblock.Store, raw: Raw) -> None:
    lock = store.lock("orders:42", ttl=30)
    assert lock.name == "orders:42"
    assert lock.ttl == 30
    assert len(lock.owner) == 16 and lock.owner.isalnum()
    assert lock.acquire(blocking=False)
    item = raw.get("orders:42")
    assert item is not None
    assert item["value"] == {"S": f's:16:"{lock.owner}";'}
    now = int(time.time())
    assert now + 28 <= int(item["expires_at"]["N"]) <= now + 31
    assert lock.locked() and lock.owned()
    holder = lock.holder()
    assert holder is not None
    assert holder.owner == lock.owner
    assert holder.expires_at == int(item["expires_at"]["N"])
    assert lock.release() is True
    assert raw.get("orders:42") is None
    assert not lock.locked()
    assert lock.holder() is None
    # Released already: nothing to release, and no error.
    assert lock.release() is False


def test_second_owner_is_refused(store: ddblock.Store) -> None:
    first = store.lock("x", ttl=30)
    second = store.lock("x", ttl=30)
    assert first.owner != second.owner
    assert first.acquire(blocking=False)
    assert not second.acquire(blocking=False)
    assert second.locked() and not second.owned()
    # Release never removes someone else's lock.
    assert second.release() is False
    assert first.owned()
    assert first.release()
    assert second.acquire(blocking=False)
    assert second.release()


def test_acquiring_a_held_lock_again_is_refused(store: ddblock.Store) -> None:
    lock = store.lock("x", ttl=30)
    assert lock.acquire(blocking=False)
    # As Laravel's get() twice: only an attempt's own write (a lost answer) is recovered.
    assert not lock.acquire(blocking=False)
    assert lock.release()


def test_blocking_acquire_times_out_with_false(store: ddblock.Store) -> None:
    holder = store.lock("x", ttl=30)
    assert holder.acquire(blocking=False)
    waiter = store.lock("x", ttl=30)
    start = time.monotonic()
    assert waiter.acquire(timeout=0.3) is False
    assert 0.25 <= time.monotonic() - start < 5
    assert holder.release()
    assert waiter.acquire(timeout=2)
    assert waiter.release()


def test_blocking_acquire_waits_for_expiry(store: ddblock.Store) -> None:
    short = store.lock("x", ttl=1)
    assert short.acquire(blocking=False)
    waiter = store.lock("x", ttl=30)
    # Expired at now >= expires_at, taken over once expires_at < now: within about 2 s.
    assert waiter.acquire(timeout=5)
    assert waiter.owned()
    assert short.release() is False
    assert waiter.release()


def test_timeout_arguments_are_checked(store: ddblock.Store) -> None:
    lock = store.lock("x", ttl=30)
    with pytest.raises(ValueError, match="non-blocking"):
        lock.acquire(blocking=False, timeout=1)
    # The core's one wait rule: negative and NaN waits are refused, before any request.
    with pytest.raises(ddblock.ConfigError, match="a wait must be 0 or more seconds"):
        lock.acquire(timeout=-1)
    with pytest.raises(ddblock.ConfigError, match="got NaN"):
        lock.acquire(timeout=float("nan"))


def test_with_acquires_and_releases(store: ddblock.Store) -> None:
    lock = store.lock("x", ttl=30, timeout=5)
    with lock as held:
        assert held is lock
        assert lock.owned()
    assert not lock.locked()


def test_with_raises_lock_timeout(store: ddblock.Store) -> None:
    other = store.lock("x", ttl=30)
    assert other.acquire(blocking=False)
    ran = False
    with pytest.raises(ddblock.LockTimeout) as info, store.lock("x", ttl=30, timeout=0.2):
        ran = True
    assert not ran
    err = info.value
    assert isinstance(err, TimeoutError)
    assert isinstance(err, ddblock.DdblockError)
    assert err.kind == "lock_timeout"
    assert err.name == "x"
    assert err.waited is not None and err.waited >= 0.2
    assert err.holder is not None and err.holder.owner == other.owner
    assert other.owner not in str(err)  # the owner is a secret: never in messages
    assert other.release()


def test_with_timeout_zero_tries_once(store: ddblock.Store) -> None:
    other = store.lock("x", ttl=30)
    assert other.acquire(blocking=False)
    start = time.monotonic()
    with pytest.raises(ddblock.LockTimeout), store.lock("x", timeout=0):
        pass
    assert time.monotonic() - start < 2
    other.release()


def test_with_never_swallows_the_body_exception(store: ddblock.Store) -> None:
    lock = store.lock("x", ttl=30, timeout=5)
    with pytest.raises(KeyError, match="boom"), lock:
        raise KeyError("boom")
    assert not lock.locked()  # released all the same


def test_with_keeps_the_body_exception_when_release_fails_too(store: ddblock.Store) -> None:
    # The body deletes the table, so the release after it fails (TableNotFound).
    lock = store.lock("x", ttl=30, timeout=5)
    client = Raw(store.endpoint_url or "", store.table).client
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with pytest.raises(ZeroDivisionError) as info, lock:
            client.delete_table(TableName=store.table)
            time.sleep(0.05)
            1 / 0  # noqa: B018
    notes = getattr(info.value, "__notes__", [])
    if sys.version_info >= (3, 11):
        assert any("releasing lock 'x'" in n and "not found" in n for n in notes), notes
    else:
        assert any("releasing lock 'x'" in str(w.message) for w in seen)


def test_with_raises_the_release_error_when_the_body_succeeded(store: ddblock.Store) -> None:
    lock = store.lock("x", ttl=30, timeout=5)
    client = Raw(store.endpoint_url or "", store.table).client
    with pytest.raises(ddblock.TableNotFound), lock:
        client.delete_table(TableName=store.table)
        time.sleep(0.05)


def test_with_raises_lease_lost_when_a_refresh_finds_the_lock_gone(store: ddblock.Store) -> None:
    # ttl 3: the heartbeat refreshes every second, and its refresh finds the lock gone.
    lock = store.lock("x", ttl=3, timeout=5)
    with pytest.raises(ddblock.LeaseLost, match="no longer ours") as info, lock:
        store.lock("x").force_release()
        deadline = time.monotonic() + 5
        while not lock.lease_lost and time.monotonic() < deadline:
            time.sleep(0.05)
    assert info.value.kind == "lease_lost" and info.value.name == "x"


def test_with_raises_lease_lost_when_the_lock_vanished_under_the_body(
    store: ddblock.Store,
) -> None:
    # The lock is removed under the body (as by an operator, a foreign writer or a fault) and no
    # refresh saw it: the release's first send finds it gone, so the body ran without the lock
    # for a while: LeaseLost (issue 36; a resend after a lost answer finding it gone is a release).
    lock = store.lock("x", ttl=30, timeout=5)
    with pytest.raises(ddblock.LeaseLost, match="first send found the lock gone") as info, lock:
        store.lock("x").force_release()
    assert info.value.kind == "lease_lost" and info.value.name == "x"
    assert not lock.locked()


def test_release_raises_lease_lost_when_another_owner_took_the_lock(
    store: ddblock.Store,
) -> None:
    lock = store.lock("x", ttl=30)
    assert lock.acquire(blocking=False)
    store.lock("x").force_release()
    other = store.lock("x", ttl=30)
    assert other.acquire(blocking=False)
    with pytest.raises(ddblock.LeaseLost, match="held by"):
        lock.release()
    assert other.owned(), "the other owner's lock stays"
    assert not lock.release(), "a handle that holds no lease gets the answer"


def test_refresh_extends_only_our_live_lock(store: ddblock.Store, raw: Raw) -> None:
    lock = store.lock("x", ttl=5)
    assert lock.acquire(blocking=False)
    assert lock.refresh(ttl=600)
    item = raw.get("x")
    assert item is not None
    assert int(item["expires_at"]["N"]) >= int(time.time()) + 590
    assert lock.refresh()  # the lock's own ttl
    item = raw.get("x")
    assert item is not None
    assert int(item["expires_at"]["N"]) <= int(time.time()) + 6
    assert not store.lock("x").refresh()  # not ours
    assert lock.release()
    assert not lock.refresh()  # gone


def test_force_release_and_restore_lock(store: ddblock.Store) -> None:
    lock = store.lock("x", ttl=30)
    assert lock.acquire(blocking=False)
    restored = store.restore_lock("x", lock.owner)
    assert restored.owner == lock.owner
    assert restored.ttl == 86400
    assert restored.owned()
    assert restored.release()
    assert lock.acquire(blocking=False)
    store.lock("x").force_release()
    assert not lock.locked()


def test_force_release_says_whether_a_lock_was_there(endpoint: str, table: str) -> None:
    """True when a lock item was there, False when there was nothing to release (a name that
    lost its backslashes in a shell), in both release modes."""
    for mode in ("delete", "keep-fence"):
        store = ddblock.Store(table, endpoint_url=endpoint, region="us-east-1", release_mode=mode)
        name = f"laravel-queue-overlap:App\\Jobs\\Sync:{mode}"
        assert store.lock(name, ttl=0).acquire(blocking=False)
        assert store.lock(name.replace("\\", "")).force_release() is False
        assert store.lock(name).locked(), "the real lock is still held"
        assert store.lock(name).force_release() is True
        assert not store.lock(name).locked()
    never = ddblock.Store(table, endpoint_url=endpoint, region="us-east-1").lock("never")
    assert never.force_release() is False


def test_given_and_numeric_owners(store: ddblock.Store, raw: Raw) -> None:
    lock = store.lock("x", ttl=30, owner="worker-7")
    assert lock.owner == "worker-7"
    assert lock.acquire(blocking=False)
    item = raw.get("x")
    assert item is not None and item["value"] == {"S": 's:8:"worker-7";'}
    assert lock.release()
    numeric = store.lock("n", ttl=30, owner="12345")
    assert numeric.acquire(blocking=False)
    item = raw.get("n")
    assert item is not None and item["value"] == {"N": "12345"}
    # Laravel cannot release a restored numeric owner; ddblock can.
    assert store.restore_lock("n", "12345").release()


def test_ttl_zero_means_a_day(store: ddblock.Store, raw: Raw) -> None:
    lock = store.lock("x")
    assert lock.ttl == 86400
    assert lock.acquire(blocking=False)
    item = raw.get("x")
    assert item is not None
    assert int(item["expires_at"]["N"]) >= int(time.time()) + 86390
    lock.release()


def test_layouts_and_prefix(endpoint: str, table: str, raw: Raw) -> None:
    for layout, key in [
        ("laravel8", "app_:app_:orders"),
        ("laravel11", "app_app_orders"),
        ("laravel12", "app_orders"),
    ]:
        store = ddblock.Store(table, prefix="app_", layout=layout, endpoint_url=endpoint)
        lock = store.lock("orders", ttl=30)
        assert lock.key == key == store.lock_key("orders")
        assert lock.acquire(blocking=False)
        assert raw.get(key) is not None
        assert lock.release()


def test_repr_does_not_show_the_owner(store: ddblock.Store) -> None:
    lock = store.lock("x", ttl=30, owner="secretowner12345")
    assert "secretowner12345" not in repr(lock)
    assert repr(lock).startswith("Lock(name='x'") or repr(lock).startswith('Lock(name="x"')
    assert "secretowner12345" not in repr(ddblock.Holder("secretowner12345", 1))
    # The core's one redaction rule (holder.rs `redact_owner`), not a copy of its own.
    assert repr(ddblock.Holder("secretowner12345", 1)) == (
        'Holder(owner=owner "secr…" (16 chars), expires_at=1, fence=None)'
    )
    assert repr(ddblock.Holder(None, None)).startswith("Holder(owner=None,")
    assert repr(store).startswith("Store(table=")


def test_keep_fence_release_keeps_the_token(
    endpoint: str, table: str, raw: Raw, monkeypatch: pytest.MonkeyPatch
) -> None:
    """release_mode="keep-fence" (DDBLOCK_RELEASE_MODE): the release expires the item and keeps
    its fencing token; the next acquisition continues it."""
    store = ddblock.Store(
        table, endpoint_url=endpoint, region="us-east-1", release_mode="keep-fence"
    )
    lock = store.lock("kf", ttl=30)
    assert lock.acquire(blocking=False)
    fence = lock.fence
    assert fence is not None
    assert lock.release() is True
    item = raw.get("kf")
    assert item is not None and "value" not in item and "ddblock_attempt" not in item
    assert item["ddblock_fence"] == {"N": str(fence)}
    assert int(item["expires_at"]["N"]) <= int(time.time()) - 86399
    assert not lock.locked() and lock.holder() is None
    assert lock.release() is False  # a second release is not a release
    # The same setting from the environment; the next acquisition continues the fence.
    monkeypatch.setenv("DDBLOCK_RELEASE_MODE", "keep-fence")
    other = ddblock.Store(table, endpoint_url=endpoint, region="us-east-1").lock("kf", ttl=30)
    assert other.acquire(blocking=False) and other.fence == fence + 1
    assert other.release() is True
    assert raw.get("kf")["ddblock_fence"] == {"N": str(fence + 1)}  # type: ignore[index]
    with pytest.raises(ddblock.ConfigError, match="keep-fence"):
        ddblock.Store(table, endpoint_url=endpoint, release_mode="keep")
