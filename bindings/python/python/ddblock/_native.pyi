"""Type stubs of the native module ``ddblock._native`` (bindings/python/src).

Use the ``ddblock`` package instead: it wraps these classes with context
managers, ``AsyncStore``/``AsyncLock`` and documentation. Awaitable methods
(``*_async``) return asyncio futures running on the binding's tokio runtime.
"""

from collections.abc import Awaitable
from typing import Any, final

from ._values import Holder

__all__ = [
    "Lock",
    "Store",
    "__version__",
    "_error_kinds",
    "_sample_error",
    "serialize",
    "unserialize",
]

__version__: str

def serialize(value: Any) -> bytes:
    """PHP ``serialize()`` of a Python value."""

def unserialize(data: bytes | str) -> Any:
    """PHP ``unserialize()`` into a Python value; objects become ``PhpObject``."""

def _error_kinds() -> list[tuple[str, str]]:
    """``(core ErrorKind name, exception class name)`` of every mapped kind."""

def _sample_error(kind: str) -> BaseException:
    """The exception a sample core error of ``kind`` becomes (for tests)."""

@final
class Store:
    """A core ``Store`` per process; connects on first use and again after ``os.fork()``."""

    def __new__(
        cls,
        *,
        from_env: bool = False,
        table: str | None = None,
        prefix: str | None = None,
        layout: str | None = None,
        endpoint_url: str | None = None,
        region: str | None = None,
        key_attribute: str | None = None,
        value_attribute: str | None = None,
        expiration_attribute: str | None = None,
        connect_timeout: float | None = None,
        operation_timeout: float | None = None,
        max_attempts: int | None = None,
        backoff: tuple[float, float, float, float] | None = None,
    ) -> Store: ...
    @property
    def table(self) -> str:
        """The table name."""
    @property
    def prefix(self) -> str:
        """The cache prefix as configured."""
    @property
    def layout(self) -> str:
        """The key layout (laravel8, laravel11, laravel12)."""
    @property
    def endpoint_url(self) -> str | None:
        """The endpoint URL override."""
    @property
    def region(self) -> str | None:
        """The region override."""
    @property
    def backoff(self) -> tuple[float, float, float, float]:
        """(initial, max, multiplier, jitter) of lock waits."""
    @property
    def key_attribute(self) -> str:
        """The partition key attribute name."""
    @property
    def value_attribute(self) -> str:
        """The value attribute name."""
    @property
    def expiration_attribute(self) -> str:
        """The expiry attribute name."""
    def cache_key(self, key: str) -> str:
        """The table key of a cache entry; raises InvalidKey."""
    def lock_key(self, name: str) -> str:
        """The table key of a lock; raises InvalidKey."""
    def lock(self, name: str, ttl: int = 0, owner: str | None = None) -> Lock:
        """A lock handle (sends nothing); ttl 0 means 86400, owner random by default."""
    def restore_lock(self, name: str, owner: str) -> Lock:
        """A handle on a lock held as owner."""
    def get(self, key: str, consistent: bool = False) -> Any:
        """The value, or None when missing, expired or null."""
    def many(self, keys: list[str]) -> dict[str, Any]:
        """Values of many keys, in input order; None when missing."""
    def put(self, key: str, value: Any, ttl: int) -> None:
        """Stores for ttl seconds."""
    def put_many(self, values: dict[str, Any], ttl: int) -> None:
        """Stores many values with one expiry."""
    def add(self, key: str, value: Any, ttl: int) -> bool:
        """Stores only if missing or expired; True when stored."""
    def increment(self, key: str, by: int = 1) -> int | None:
        """Adds to a live number; None when missing or expired."""
    def decrement(self, key: str, by: int = 1) -> int | None:
        """Subtracts from a live number; None when missing or expired."""
    def forever(self, key: str, value: Any) -> None:
        """Stores for 5 years."""
    def forget(self, key: str) -> None:
        """Deletes the key."""
    def touch(self, key: str, ttl: int) -> bool:
        """New expiry for a live entry; False when missing or expired."""
    def flush(self) -> None:
        """Raises UnsupportedError."""
    # Awaitable forms of the methods above (AsyncStore uses them).
    def get_async(self, key: str, consistent: bool = False) -> Awaitable[Any]: ...
    def many_async(self, keys: list[str]) -> Awaitable[dict[str, Any]]: ...
    def put_async(self, key: str, value: Any, ttl: int) -> Awaitable[None]: ...
    def put_many_async(self, values: dict[str, Any], ttl: int) -> Awaitable[None]: ...
    def add_async(self, key: str, value: Any, ttl: int) -> Awaitable[bool]: ...
    def increment_async(self, key: str, by: int = 1) -> Awaitable[int | None]: ...
    def decrement_async(self, key: str, by: int = 1) -> Awaitable[int | None]: ...
    def forever_async(self, key: str, value: Any) -> Awaitable[None]: ...
    def forget_async(self, key: str) -> Awaitable[None]: ...
    def touch_async(self, key: str, ttl: int) -> Awaitable[bool]: ...
    def flush_async(self) -> Awaitable[None]: ...

@final
class Lock:
    """A lock handle (name, owner, ttl); each call runs on the process's connected store."""

    @property
    def name(self) -> str:
        """The lock name."""
    @property
    def key(self) -> str:
        """The table key."""
    @property
    def owner(self) -> str:
        """The owner token (a secret)."""
    @property
    def ttl(self) -> int:
        """The lease in seconds."""
    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        """One attempt, or waiting up to timeout (None: no limit); True when ours."""
    def block(self, timeout: float | None = None) -> int:
        """Waits up to ``timeout`` (None: no limit); returns the expiry, raises LockTimeout."""
    def release(self) -> bool:
        """One owner-conditioned DeleteItem; False when not ours."""
    def force_release(self) -> None:
        """Deletes the lock whoever holds it."""
    def refresh(self, ttl: int | None = None) -> bool:
        """Extends our live lock; False when not ours or expired."""
    def locked(self) -> bool:
        """Whether anyone holds it (consistent read)."""
    def owned(self) -> bool:
        """Whether this owner holds it (consistent read)."""
    def holder(self) -> Holder | None:
        """Who holds it and until when; None when free."""
    # Awaitable forms of the methods above (AsyncLock uses them).
    def acquire_async(
        self, blocking: bool = True, timeout: float | None = None
    ) -> Awaitable[bool]: ...
    def block_async(self, timeout: float | None = None) -> Awaitable[int]: ...
    def release_async(self) -> Awaitable[bool]: ...
    def force_release_async(self) -> Awaitable[None]: ...
    def refresh_async(self, ttl: int | None = None) -> Awaitable[bool]: ...
    def locked_async(self) -> Awaitable[bool]: ...
    def owned_async(self) -> Awaitable[bool]: ...
    def holder_async(self) -> Awaitable[Holder | None]: ...
