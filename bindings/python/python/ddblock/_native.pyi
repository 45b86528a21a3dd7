"""
The extension module, declared so that its stubs can be generated (`maturin generate-stubs`).
"""

from _typeshed import SupportsGetItem
from typing import Any, Final, SupportsFloat, SupportsIndex, final

__all__ = ["__version__", "Heartbeat", "Lock", "Pending", "Store", "_default_backoff", "_error_kinds", "_sample_error", "_shutdown", "serialize", "unserialize"]

__version__: Final[str]

@final
class Heartbeat:
    """
    A running heartbeat (the core's): refreshes the lock until stopped; `lost` turns true when the
    lease is lost.
    """
    @property
    def lost(self, /) -> bool:
        """
        Whether the lease has been lost.
        """
    @property
    def reason(self, /) -> str | None:
        """
        Why the lease was lost, if it was.
        """
    def stop(self, /) -> Pending:
        """
        Stops refreshing; the reason the lease was lost, or `None`.
        """

@final
class Lock:
    """
    The native lock; `ddblock.Lock` and `ddblock.AsyncLock` wrap it.
    """
    def __repr__(self, /) -> str: ...
    def acquire(self, /, wait: SupportsFloat | SupportsIndex | None) -> Pending:
        """
        Takes the lock: `wait=None` one attempt; else retries up to `wait` seconds (`inf`: no
        limit). True when it is ours.
        """
    def block(self, /, wait: SupportsFloat | SupportsIndex | None) -> Pending:
        """
        Waits up to `wait` seconds (`None`: no limit) or raises `LockTimeout`; the expiry.
        """
    @property
    def fence(self, /) -> int | None:
        """
        The fencing token of this handle's current acquisition (`None` when it holds none).
        """
    def force_release(self, /) -> Pending: ...
    def heartbeat(self, /) -> Heartbeat:
        """
        Starts refreshing the held lock in the background; see `PyHeartbeat`.
        """
    def holder(self, /) -> Pending: ...
    @property
    def key(self, /) -> str: ...
    def locked(self, /) -> Pending: ...
    @property
    def name(self, /) -> str: ...
    def owned(self, /) -> Pending: ...
    @property
    def owner(self, /) -> str: ...
    def refresh(self, /, ttl: Any | None) -> Pending: ...
    def release(self, /) -> Pending: ...
    def remaining(self, /) -> float | None:
        """
        Seconds this handle's lease still lasts by the local monotonic clock (`None`: no lease).
        """
    @property
    def ttl(self, /) -> int: ...

@final
class Pending:
    """
    A started-on-demand operation: `.wait()` or `await`, once.
    """
    def __await__(self, /) -> Any:
        """
        `await pending`: runs the operation on the runtime without blocking the event loop;
        cancelling the awaiting task cancels the operation.
        """
    def wait(self, /) -> Any:
        """
        Runs the operation to completion, blocking with the GIL released; returns its result.
        """

@final
class Store:
    """
    The native store; `ddblock.Store` and `ddblock.AsyncStore` wrap it.
    """
    def __new__(cls, /, *, table: str | None = None, prefix: str | None = None, layout: str | None = None, endpoint_url: str | None = None, region: str | None = None, key_attribute: str | None = None, value_attribute: str | None = None, expiration_attribute: str | None = None, connect_timeout: SupportsFloat | SupportsIndex | None = None, operation_timeout: SupportsFloat | SupportsIndex | None = None, attempt_timeout: SupportsFloat | SupportsIndex | None = None, max_attempts: SupportsIndex | None = None, backoff: tuple[SupportsFloat | SupportsIndex, SupportsFloat | SupportsIndex, SupportsFloat | SupportsIndex, SupportsFloat | SupportsIndex] | None = None, clock_skew_margin: SupportsFloat | SupportsIndex | None = None, heartbeat_interval: SupportsFloat | SupportsIndex | None = None) -> Store:
        """
        Explicit settings win; Laravel's variables fill what is not given; Laravel's defaults last.
        """
    def __repr__(self, /) -> str: ...
    def add(self, /, key: str, value: Any, ttl: Any) -> Pending: ...
    @property
    def backoff(self, /) -> tuple[float, float, float, float]:
        """
        `(initial, max, multiplier, jitter)` of the lock wait backoff.
        """
    def cache_key(self, /, key: str) -> str: ...
    def create_table(self, /, ttl: bool, wait: SupportsFloat | SupportsIndex) -> Pending:
        """
        Creates the table (idempotent) and enables TTL; `wait` seconds for ACTIVE.
        """
    def decrement(self, /, key: str, by: Any) -> Pending: ...
    def doctor(self, /, scan: bool) -> Pending:
        """
        Checks the table (and, with `scan`, its items).
        """
    @property
    def endpoint_url(self, /) -> str | None: ...
    @property
    def expiration_attribute(self, /) -> str: ...
    def flush(self, /) -> Pending: ...
    def forever(self, /, key: str, value: Any) -> Pending: ...
    def forget(self, /, key: str) -> Pending: ...
    def get(self, /, key: str, consistent: bool) -> Pending: ...
    def increment(self, /, key: str, by: Any) -> Pending: ...
    @property
    def key_attribute(self, /) -> str: ...
    @property
    def layout(self, /) -> str: ...
    def lock(self, /, name: str, ttl: Any, owner: str | None) -> Lock:
        """
        A lock handle (sends nothing); the core checks the name, ttl and owner.
        """
    def lock_key(self, /, name: str) -> str: ...
    def many(self, /, keys: SupportsGetItem[int, str]) -> Pending: ...
    @property
    def prefix(self, /) -> str: ...
    def put(self, /, key: str, value: Any, ttl: Any) -> Pending: ...
    def put_many(self, /, values: "dict[str, Any]", ttl: Any) -> Pending: ...
    @property
    def region(self, /) -> str | None: ...
    @property
    def table(self, /) -> str: ...
    def touch(self, /, key: str, ttl: Any) -> Pending: ...
    @property
    def value_attribute(self, /) -> str: ...

def _default_backoff() -> tuple[float, float, float, float]:
    """
    `(initial, max, multiplier, jitter)` of the core's default lock-wait backoff, in seconds.
    """

def _error_kinds() -> list[tuple[str, str]]:
    """
    `(kind, exception class)` for every error kind of the core.
    """

def _sample_error(kind: str) -> Any:
    """
    The exception a sample core error of `kind` becomes (tests of the mapping).
    """

def _shutdown(timeout: SupportsFloat | SupportsIndex) -> None:
    """
    Stops the binding's runtime (registered with `atexit` by the package; see runtime.rs).
    """

def serialize(value: Any) -> bytes:
    """
    PHP `serialize()` of a Python value (see the value mapping in docs/python.md).
    """

def unserialize(data: Any) -> Any:
    """
    PHP `unserialize()` into a Python value (objects become `PhpObject`, nothing is instantiated).
    """
