"""
The extension module, declared so that its stubs can be generated (`maturin generate-stubs`).
"""

from _typeshed import SupportsGetItem
from ddblock._values import OnceStatus
from typing import Any, Final, SupportsFloat, SupportsIndex, final

__all__ = ["__version__", "Claim", "ConflictRetry", "Heartbeat", "Held", "Lock", "Once", "Pending", "Store", "Versioned", "_default_backoff", "_error_kinds", "_install_logging", "_listen", "_redact_owner", "_refresh_logging", "_sample_error", "_shutdown", "instruments", "serialize", "unserialize"]

__version__: Final[str]

@final
class Claim:
    """
    What a claim found: won (then `done`/`give_back`) or skipped (then `status` says why).
    """
    def __repr__(self, /) -> str: ...
    def done(self, /) -> Pending:
        """
        Marks the event done; `ConflictError` when the claim is not (or no longer) ours.
        """
    @property
    def expires_at(self, /) -> int | None:
        """
        When the claim expires; None when not won.
        """
    def finish(self, /, handler_ok: bool) -> Pending:
        """
        Ends the handler's claim by the core's rule: done when `handler_ok`, else given back
        (raises the give-back's error, for the caller to attach to the handler's).
        """
    def give_back(self, /) -> Pending:
        """
        Gives the claim back; False when it is not (or no longer) ours.
        """
    @property
    def recovered(self, /) -> bool:
        """
        An earlier attempt of this claim landed but its answer was lost.
        """
    @property
    def status(self, /) -> OnceStatus | None:
        """
        Why it was skipped (`in_progress` or `done`); None when won.
        """
    @property
    def won(self, /) -> bool:
        """
        True when this delivery won the claim.
        """

@final
class ConflictRetry:
    """
    The core's bounded retry of a read-modify-write loop.
    """
    def after_conflict(self, /) -> Pending:
        """
        After a conflict: waits the backoff, or raises `ConflictError` after the last attempt.
        """

@final
class Heartbeat:
    """
    A running heartbeat (the core's): refreshes the lock until stopped; `lost` turns true when the
    lease is lost (and stays so after `stop`).
    """
    def finish(self, /) -> Pending:
        """
        Stops refreshing (again: nothing more); raises `LeaseLost` if the lease was lost.
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
        Stops refreshing (again: nothing more); the reason the lease was lost, or `None`.
        """

@final
class Held:
    """
    A lock entered by `with` (the core's `Held`): its heartbeat runs until `finish`, which ends
    the lease by the core's one rule (raises `LeaseLost`, or the release's error).
    """
    def finish(self, /) -> Pending:
        """
        Stops the heartbeat and releases (again: nothing more).
        """
    @property
    def lost(self, /) -> bool:
        """
        Whether the heartbeat has seen the lease lost.
        """

@final
class Lock:
    """
    The native lock; `ddblock.Lock` and `ddblock.AsyncLock` wrap it.
    """
    def __repr__(self, /) -> str: ...
    @property
    def _attributes(self, /) -> list[tuple[str, str]]:
        """
        The attributes of its spans: the table (or bucket) and the key layout.
        """
    def acquire(self, /, wait: SupportsFloat | SupportsIndex) -> Pending:
        """
        Takes the lock, waiting `wait` seconds (0: one attempt; `inf`: no limit); True when ours.
        """
    def block(self, /, wait: SupportsFloat | SupportsIndex) -> Pending:
        """
        Waits `wait` seconds (0: one attempt; `inf`: no limit) or raises `LockTimeout`; the expiry.
        """
    def enter(self, /, wait: SupportsFloat | SupportsIndex) -> Pending:
        """
        Takes the lock as `block` does and starts its heartbeat: the start of `with` (see `Held`).
        """
    @property
    def fence(self, /) -> int | None:
        """
        The fencing token of this handle's current acquisition (`None` when it holds none).
        """
    def force_release(self, /) -> Pending: ...
    def heartbeat(self, /) -> Heartbeat:
        """
        Starts refreshing the held lock in the background (the core's heartbeat); see `Heartbeat`.
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
class Once:
    """
    The once-only guard of one event id; `ddblock.Once` and `ddblock.AsyncOnce` wrap it.
    """
    def __repr__(self, /) -> str: ...
    def claim(self, /) -> Pending:
        """
        Claims the event (one UpdateItem, usually); a `Claim`, won or not.
        """
    @property
    def done_ttl(self, /) -> int: ...
    @property
    def event_id(self, /) -> str: ...
    @property
    def key(self, /) -> str: ...
    def status(self, /) -> Pending:
        """
        Where the event stands (one consistent GetItem).
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
    def __new__(cls, /, settings: dict[str, Any]) -> Store:
        """
        Explicit settings win; Laravel's variables fill what is not given; Laravel's defaults last
        (the core's one rule and settings table: `StoreConfig::from_settings`). `settings` holds
        the ones given, by Python's names.
        """
    def __repr__(self, /) -> str: ...
    def add(self, /, key: str, value: Any, ttl: Any) -> Pending: ...
    @property
    def backoff(self, /) -> tuple[float, float, float, float]:
        """
        `(initial, max, multiplier, jitter)` of the lock wait backoff.
        """
    def cache_key(self, /, key: str) -> str: ...
    def conflict_retry(self, /, key: str, attempts: SupportsIndex | None) -> ConflictRetry:
        """
        The core's bounded retry for an `update` loop on `key` (`None`: the core's attempts).
        """
    def create_table(self, /, ttl: bool, wait: SupportsFloat | SupportsIndex | None) -> Pending:
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
    def get_versioned(self, /, key: str) -> Pending:
        """
        `key`'s value and version (one consistent read): a `Versioned`.
        """
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
    def once(self, /, event_id: str, ttl: Any, done_ttl: Any | None) -> Once:
        """
        The once-only guard of `event_id` (sends nothing); the core checks the id and ttls.
        """
    @property
    def prefix(self, /) -> str: ...
    def put(self, /, key: str, value: Any, ttl: Any) -> Pending: ...
    def put_if_version(self, /, key: str, value: Any, ttl: Any, version: Any) -> Pending:
        """
        Stores `value` if the entry is at `version` (an int), or unchanged since `version` (a
        `Versioned` read); the written `Versioned`, or None on a conflict.
        """
    def put_many(self, /, values: "dict[str, Any]", ttl: Any) -> Pending: ...
    @property
    def region(self, /) -> str | None: ...
    @property
    def table(self, /) -> str: ...
    def touch(self, /, key: str, ttl: Any) -> Pending: ...
    @property
    def value_attribute(self, /) -> str: ...

@final
class Versioned:
    """
    A value read with its version (`value`, `version`); pass it back to `put_if_version` to
    require the entry unchanged (version and value).
    """
    def __repr__(self, /) -> str: ...
    @property
    def value(self, /) -> Any:
        """
        The live value; None when missing or expired.
        """
    @property
    def version(self, /) -> int:
        """
        The version (0: none).
        """

def _default_backoff() -> tuple[float, float, float, float]:
    """
    `(initial, max, multiplier, jitter)` of the core's default lock-wait backoff, in seconds.
    """

def _error_kinds() -> list[tuple[str, str]]:
    """
    `(kind, exception class)` for every error kind of the core.
    """

def _install_logging() -> None:
    """
    Installs the bridge for ddblock's own crates (the package calls it at import; a second call
    changes nothing).
    """

def _listen(listener: Any | None) -> None:
    """
    Calls `listener(name, value, attributes)` for every measurement from now on (`None`: stop).
    It runs on the core's threads holding the GIL: it must be quick and must not raise (what it
    raises is reported as unraisable).
    """

def _redact_owner(owner: str | None, /) -> str:
    """
    How messages and reprs show a lock owner: its first four characters and its length (the
    core's `redact_owner`, one rule for every front), since an owner is what releases a lock.
    """

def _refresh_logging() -> None:
    """
    Forgets the cached Python loggers and levels: call after changing ddblock's log levels.
    """

def _sample_error(kind: str) -> Any:
    """
    The exception a sample core error of `kind` becomes (tests of the mapping).
    """

def _shutdown(timeout: SupportsFloat | SupportsIndex) -> None:
    """
    Stops the binding's runtime (registered with `atexit` by the package; see runtime.rs).
    """

def instruments() -> list[tuple[str, str, str, str, list[float]]]:
    """
    Every metric of the core's table.
    """

def serialize(value: Any) -> bytes:
    """
    PHP `serialize()` of a Python value (see the value mapping in docs/python.md).
    """

def unserialize(data: Any) -> Any:
    """
    PHP `unserialize()` into a Python value (objects become `PhpObject`, nothing is instantiated).
    """
