"""Store and Lock (blocking) and AsyncStore and AsyncLock (asyncio), over ``ddblock._native``."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterable, Mapping
from types import TracebackType
from typing import Any, TypeVar

from ._native import Lock as _NativeLock
from ._native import Store as _NativeStore
from ._values import Backoff, Holder
from .exceptions import DdblockError, LockLostWarning

__all__ = ["AsyncLock", "AsyncStore", "Lock", "Store"]

_T = TypeVar("_T")


def _native_store(
    from_env: bool,
    table: str | None,
    prefix: str | None,
    layout: str | None,
    endpoint_url: str | None,
    region: str | None,
    key_attribute: str | None,
    value_attribute: str | None,
    expiration_attribute: str | None,
    connect_timeout: float | None,
    operation_timeout: float | None,
    max_attempts: int | None,
    backoff: Backoff | None,
) -> _NativeStore:
    return _NativeStore(
        from_env=from_env,
        table=table,
        prefix=prefix,
        layout=layout,
        endpoint_url=endpoint_url,
        region=region,
        key_attribute=key_attribute,
        value_attribute=value_attribute,
        expiration_attribute=expiration_attribute,
        connect_timeout=connect_timeout,
        operation_timeout=operation_timeout,
        max_attempts=max_attempts,
        backoff=None
        if backoff is None
        else (backoff.initial, backoff.max, backoff.multiplier, backoff.jitter),
    )


def _keys(keys: Iterable[str]) -> list[str]:
    if isinstance(keys, (str, bytes)):
        raise TypeError("many() takes an iterable of keys, not a single str")
    return list(keys)


def _release_failed(lock_name: str, body_error: BaseException, err: DdblockError) -> None:
    """Keeps the body's exception; the release failure becomes a note (or a warning before 3.11)."""
    message = f"ddblock: releasing lock {lock_name!r} after this error failed too: {err}"
    if sys.version_info >= (3, 11):
        body_error.add_note(message)
    else:
        warnings.warn(message, RuntimeWarning, stacklevel=3)


def _lost(lock_name: str) -> None:
    warnings.warn(
        f"lock {lock_name!r} was no longer held when its with block ended: it expired and was "
        "taken over, or was force-released (use a longer ttl, or refresh() long work)",
        LockLostWarning,
        stacklevel=3,
    )


class _StoreBase:
    """Configuration and key helpers shared by Store and AsyncStore."""

    __slots__ = ("_native",)

    _native: _NativeStore

    def __init__(
        self,
        table: str = "cache",
        *,
        prefix: str = "",
        layout: str = "laravel12",
        endpoint_url: str | None = None,
        region: str | None = None,
        key_attribute: str = "key",
        value_attribute: str = "value",
        expiration_attribute: str = "expires_at",
        connect_timeout: float | None = None,
        operation_timeout: float | None = None,
        max_attempts: int | None = None,
        backoff: Backoff | None = None,
    ) -> None:
        self._native = _native_store(
            False,
            table,
            prefix,
            layout,
            endpoint_url,
            region,
            key_attribute,
            value_attribute,
            expiration_attribute,
            connect_timeout,
            operation_timeout,
            max_attempts,
            backoff,
        )

    @classmethod
    def _over(cls: type[_T], native: _NativeStore) -> _T:
        self = cls.__new__(cls)
        self._native = native  # type: ignore[attr-defined]
        return self

    @property
    def table(self) -> str:
        """The table name."""
        return self._native.table

    @property
    def prefix(self) -> str:
        """The cache prefix as configured (before the layout adds anything)."""
        return self._native.prefix

    @property
    def layout(self) -> str:
        """The key layout: ``"laravel8"``, ``"laravel11"`` or ``"laravel12"``."""
        return self._native.layout

    @property
    def endpoint_url(self) -> str | None:
        """The endpoint URL override, if any."""
        return self._native.endpoint_url

    @property
    def region(self) -> str | None:
        """The region override, if any."""
        return self._native.region

    @property
    def backoff(self) -> Backoff:
        """How waiting for a lock retries."""
        return Backoff(*self._native.backoff)

    def cache_key(self, key: str) -> str:
        """The table key of cache entry ``key`` (prefix and layout applied); raises InvalidKey."""
        return self._native.cache_key(key)

    def lock_key(self, name: str) -> str:
        """The table key of lock ``name`` (prefix and layout applied); raises InvalidKey."""
        return self._native.lock_key(name)

    def __repr__(self) -> str:
        return type(self).__name__ + repr(self._native)[len("Store") :]


class Store(_StoreBase):
    """A Laravel DynamoDB cache table: locks and cache entries, blocking calls.

    Creating a store sends nothing; the client connects on first use (and
    again in a child process after ``os.fork()``). Share one store between
    threads: every call releases the GIL while it waits on DynamoDB.
    """

    __slots__ = ()

    @classmethod
    def from_env(
        cls,
        *,
        connect_timeout: float | None = None,
        operation_timeout: float | None = None,
        max_attempts: int | None = None,
        backoff: Backoff | None = None,
    ) -> Store:
        """A store configured from Laravel's environment variables.

        Reads ``DYNAMODB_CACHE_TABLE`` (default ``cache``), ``DYNAMODB_ENDPOINT``,
        ``AWS_DEFAULT_REGION``, ``CACHE_PREFIX`` and ``DDBLOCK_LAYOUT``.
        """
        return cls._over(
            _native_store(
                True, None, None, None, None, None, None, None, None,
                connect_timeout, operation_timeout, max_attempts, backoff,
            )
        )  # fmt: skip

    @property
    def aio(self) -> AsyncStore:
        """The same store (same client) with coroutine methods."""
        return AsyncStore._over(self._native)

    # ---- locks ----

    def lock(
        self,
        name: str,
        ttl: int = 0,
        owner: str | None = None,
        *,
        timeout: float | None = None,
    ) -> Lock:
        """A lock handle; sends nothing. See :class:`Lock`.

        ``ttl`` is the lease in seconds (0: Laravel's default, 86400). ``owner``
        defaults to a fresh random 16-character token. ``timeout`` is how long
        ``with`` waits for the lock (None: no limit).
        """
        return Lock(self._native.lock(name, ttl, owner), timeout)

    def restore_lock(self, name: str, owner: str, *, timeout: float | None = None) -> Lock:
        """A handle on a lock someone holds as ``owner`` (Laravel's ``restoreLock``)."""
        return Lock(self._native.restore_lock(name, owner), timeout)

    # ---- cache ----

    def get(self, key: str, default: Any = None, *, consistent: bool = False) -> Any:
        """The value of ``key``, or ``default`` when missing, expired or null.

        An eventually consistent read, as Laravel's; ``consistent=True`` reads strongly.
        """
        value = self._native.get(key, consistent)
        return default if value is None else value

    def many(self, keys: Iterable[str]) -> dict[str, Any]:
        """Values of many keys in one dict, in input order; None for missing ones."""
        return self._native.many(_keys(keys))

    def put(self, key: str, value: Any, ttl: int) -> None:
        """Stores ``value`` for ``ttl`` seconds (ttl <= 0 writes an already-expired item)."""
        self._native.put(key, value, ttl)

    def put_many(self, values: Mapping[str, Any], ttl: int) -> None:
        """Stores many values with one expiry (BatchWriteItem, 25 per request)."""
        self._native.put_many(dict(values), ttl)

    def add(self, key: str, value: Any, ttl: int) -> bool:
        """Stores ``value`` only if ``key`` is missing or expired; True when stored."""
        return self._native.add(key, value, ttl)

    def increment(self, key: str, by: int = 1) -> int | None:
        """Adds ``by`` to a live number; the new value, or None when missing or expired."""
        return self._native.increment(key, by)

    def decrement(self, key: str, by: int = 1) -> int | None:
        """Subtracts ``by`` from a live number; the new value, or None when missing or expired."""
        return self._native.decrement(key, by)

    def forever(self, key: str, value: Any) -> None:
        """Stores ``value`` for 5 years (what Laravel's ``forever()`` means)."""
        self._native.forever(key, value)

    def forget(self, key: str) -> None:
        """Deletes ``key``."""
        self._native.forget(key)

    def touch(self, key: str, ttl: int) -> bool:
        """Sets a live entry's expiry to now + ``ttl``; False when missing or expired."""
        return self._native.touch(key, ttl)

    def flush(self) -> None:
        """Always raises UnsupportedError: a DynamoDB table cannot be flushed (as in Laravel)."""
        self._native.flush()


class AsyncStore(_StoreBase):
    """:class:`Store` for asyncio: the same methods as coroutines.

    Calls run on the binding's tokio runtime and never block the event loop.
    """

    __slots__ = ()

    @classmethod
    def from_env(
        cls,
        *,
        connect_timeout: float | None = None,
        operation_timeout: float | None = None,
        max_attempts: int | None = None,
        backoff: Backoff | None = None,
    ) -> AsyncStore:
        """As :meth:`Store.from_env`."""
        return cls._over(
            _native_store(
                True, None, None, None, None, None, None, None, None,
                connect_timeout, operation_timeout, max_attempts, backoff,
            )
        )  # fmt: skip

    @property
    def sync(self) -> Store:
        """The same store (same client) with blocking methods."""
        return Store._over(self._native)

    def lock(
        self,
        name: str,
        ttl: int = 0,
        owner: str | None = None,
        *,
        timeout: float | None = None,
    ) -> AsyncLock:
        """As :meth:`Store.lock`, for ``async with`` and coroutines."""
        return AsyncLock(self._native.lock(name, ttl, owner), timeout)

    def restore_lock(self, name: str, owner: str, *, timeout: float | None = None) -> AsyncLock:
        """As :meth:`Store.restore_lock`."""
        return AsyncLock(self._native.restore_lock(name, owner), timeout)

    async def get(self, key: str, default: Any = None, *, consistent: bool = False) -> Any:
        """As :meth:`Store.get`."""
        value = await self._native.get_async(key, consistent)
        return default if value is None else value

    async def many(self, keys: Iterable[str]) -> dict[str, Any]:
        """As :meth:`Store.many`."""
        return await self._native.many_async(_keys(keys))

    async def put(self, key: str, value: Any, ttl: int) -> None:
        """As :meth:`Store.put`."""
        await self._native.put_async(key, value, ttl)

    async def put_many(self, values: Mapping[str, Any], ttl: int) -> None:
        """As :meth:`Store.put_many`."""
        await self._native.put_many_async(dict(values), ttl)

    async def add(self, key: str, value: Any, ttl: int) -> bool:
        """As :meth:`Store.add`."""
        return await self._native.add_async(key, value, ttl)

    async def increment(self, key: str, by: int = 1) -> int | None:
        """As :meth:`Store.increment`."""
        return await self._native.increment_async(key, by)

    async def decrement(self, key: str, by: int = 1) -> int | None:
        """As :meth:`Store.decrement`."""
        return await self._native.decrement_async(key, by)

    async def forever(self, key: str, value: Any) -> None:
        """As :meth:`Store.forever`."""
        await self._native.forever_async(key, value)

    async def forget(self, key: str) -> None:
        """As :meth:`Store.forget`."""
        await self._native.forget_async(key)

    async def touch(self, key: str, ttl: int) -> bool:
        """As :meth:`Store.touch`."""
        return await self._native.touch_async(key, ttl)

    async def flush(self) -> None:
        """As :meth:`Store.flush`: always raises UnsupportedError."""
        await self._native.flush_async()


class _LockBase:
    __slots__ = ("_native", "_timeout")

    def __init__(self, native: _NativeLock, timeout: float | None) -> None:
        self._native = native
        self._timeout = timeout

    @property
    def name(self) -> str:
        """The lock name as given."""
        return self._native.name

    @property
    def key(self) -> str:
        """The table key (prefix and layout applied)."""
        return self._native.key

    @property
    def owner(self) -> str:
        """The owner token: whoever has it can release or refresh the lock. Keep it secret."""
        return self._native.owner

    @property
    def ttl(self) -> int:
        """The lease in seconds (0 was turned into 86400)."""
        return self._native.ttl

    @property
    def timeout(self) -> float | None:
        """How long ``with`` waits for the lock (None: no limit)."""
        return self._timeout

    def __repr__(self) -> str:
        return type(self).__name__ + repr(self._native)[len("Lock") :]


class Lock(_LockBase):
    """A named lock with an owner, in Laravel's ``DynamoDbLock`` format.

    Use it as ``with store.lock("orders:42", ttl=30, timeout=5): ...``: waits up
    to ``timeout`` (raising :class:`~ddblock.LockTimeout`), runs the body, and
    releases with one owner-conditioned DeleteItem. The body's exceptions
    always propagate.
    """

    __slots__ = ()

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        """Takes the lock; True when it is ours.

        ``blocking=False``: one attempt (one conditional PutItem). ``blocking=True``:
        retries with backoff for up to ``timeout`` seconds (None: no limit), then
        returns False. Ctrl-C interrupts the wait.
        """
        return self._native.acquire(blocking, timeout)

    def release(self) -> bool:
        """Releases the lock if it is ours (one conditional DeleteItem); False if it was not."""
        return self._native.release()

    def force_release(self) -> None:
        """Deletes the lock whoever holds it (Laravel's ``forceRelease``)."""
        self._native.force_release()

    def refresh(self, ttl: int | None = None) -> bool:
        """Extends our live lock to now + ``ttl`` (default: the lock's ttl); False if not ours."""
        return self._native.refresh(ttl)

    def locked(self) -> bool:
        """Whether anyone holds the lock now (consistent read)."""
        return self._native.locked()

    def owned(self) -> bool:
        """Whether this lock's owner holds it now (consistent read)."""
        return self._native.owned()

    def holder(self) -> Holder | None:
        """Who holds the lock now and until when; None when it is free (consistent read)."""
        return self._native.holder()

    def __enter__(self) -> Lock:
        self._native.block(self._timeout)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            released = self._native.release()
        except DdblockError as err:
            if exc is None:
                raise
            _release_failed(self.name, exc, err)
            return
        if not released:
            _lost(self.name)


class AsyncLock(_LockBase):
    """:class:`Lock` for asyncio: the same methods as coroutines, and ``async with``."""

    __slots__ = ()

    async def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        """As :meth:`Lock.acquire`; cancelling the task stops the wait."""
        return await self._native.acquire_async(blocking, timeout)

    async def release(self) -> bool:
        """As :meth:`Lock.release`."""
        return await self._native.release_async()

    async def force_release(self) -> None:
        """As :meth:`Lock.force_release`."""
        await self._native.force_release_async()

    async def refresh(self, ttl: int | None = None) -> bool:
        """As :meth:`Lock.refresh`."""
        return await self._native.refresh_async(ttl)

    async def locked(self) -> bool:
        """As :meth:`Lock.locked`."""
        return await self._native.locked_async()

    async def owned(self) -> bool:
        """As :meth:`Lock.owned`."""
        return await self._native.owned_async()

    async def holder(self) -> Holder | None:
        """As :meth:`Lock.holder`."""
        return await self._native.holder_async()

    async def __aenter__(self) -> AsyncLock:
        await self._native.block_async(self._timeout)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            released = await self._native.release_async()
        except DdblockError as err:
            if exc is None:
                raise
            _release_failed(self.name, exc, err)
            return
        if not released:
            _lost(self.name)
