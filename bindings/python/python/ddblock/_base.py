"""What Store and AsyncStore (and Lock and AsyncLock) share: configuration, properties, and the
small rules of the ``with`` blocks. The operations are in ``_aio.py`` (and the generated
``_sync.py``)."""

from __future__ import annotations

import dataclasses
import math
import sys
import warnings
from collections.abc import Iterable
from typing import TypeVar

from ._native import Claim as _NativeClaim
from ._native import Heartbeat as _NativeHeartbeat
from ._native import Held as _NativeHeld
from ._native import Lock as _NativeLock
from ._native import Once as _NativeOnce
from ._native import Store as _NativeStore
from ._values import Backoff, OnceStatus
from .exceptions import DdblockError

__all__ = [
    "ClaimBase",
    "HeartbeatBase",
    "LockBase",
    "OnceBase",
    "StoreBase",
    "after_error",
    "keys_list",
    "wait_seconds",
]

_S = TypeVar("_S", bound="StoreBase")


class StoreBase:
    """Configuration and key helpers of a store; creating one sends nothing."""

    __slots__ = ("_native",)

    _native: _NativeStore

    def __init__(
        self,
        # settings: generated from core/src/config/settings.rs by core/tests/settings_doc.rs
        table: str | None = None,
        *,
        prefix: str | None = None,
        layout: str | None = None,
        endpoint_url: str | None = None,
        region: str | None = None,
        key_attribute: str | None = None,
        value_attribute: str | None = None,
        expiration_attribute: str | None = None,
        connect_timeout: float | None = None,
        operation_timeout: float | None = None,
        attempt_timeout: float | None = None,
        max_attempts: int | None = None,
        backoff: Backoff | None = None,
        clock_skew_margin: float | None = None,
        heartbeat_interval: float | None = None,
        backend: str | None = None,
        bucket: str | None = None,
        release_mode: str | None = None,
        log_names: str | None = None,
        allow_eventual_global_table: str | None = None,
        # settings: end
    ) -> None:
        """A store over the settings given (docs/configuration.md has each one's meaning, unit and
        default); what is not given comes from Laravel's variables, then Laravel's defaults."""
        given = {k: v for k, v in locals().items() if v is not None and k != "self"}
        if backoff is not None:
            given["backoff"] = dataclasses.astuple(backoff)
        # The core reads them by its settings table (names, units, rules, defaults).
        self._native = _NativeStore(given)

    @classmethod
    def from_env(cls: type[_S]) -> _S:
        """The same as ``cls()``: every setting from Laravel's variables, else the defaults."""
        return cls()

    @classmethod
    def _over(cls: type[_S], native: _NativeStore) -> _S:
        self = cls.__new__(cls)
        self._native = native
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


class LockBase:
    """A lock handle's identity (name, key, owner, ttl, how long ``with`` waits) and its lease."""

    __slots__ = ("_held", "_native", "_timeout")

    def __init__(self, native: _NativeLock, timeout: float | None) -> None:
        self._native = native
        self._timeout = timeout
        self._held: _NativeHeld | None = None

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

    @property
    def fence(self) -> int | None:
        """The fencing token of this handle's acquisition (None when it holds none): send it
        with every write to the protected resource, which refuses tokens below the highest it
        has seen (docs/semantics.md)."""
        return self._native.fence

    def remaining(self) -> float | None:
        """Seconds this handle's lease still lasts by the local monotonic clock (refreshed by the
        ``with`` block's heartbeat); None when it holds no lease, 0 once it ran out."""
        return self._native.remaining()

    @property
    def lease_lost(self) -> bool:
        """Inside ``with``: whether the heartbeat has seen the lease lost (stop touching the
        protected resource). False outside ``with``."""
        return self._held is not None and self._held.lost

    def __repr__(self) -> str:
        return type(self).__name__ + repr(self._native)[len("Lock") :]


class HeartbeatBase:
    """A running heartbeat's state: whether the lease was lost, and why."""

    __slots__ = ("_name", "_native")

    def __init__(self, native: _NativeHeartbeat, name: str) -> None:
        self._native = native
        self._name = name

    @property
    def lost(self) -> bool:
        """Whether the lease has been lost (stop touching what the lock protects); it stays
        true after ``stop()``."""
        return self._native.lost

    @property
    def reason(self) -> str | None:
        """Why the lease was lost (a refresh found the lock no longer ours, or no refresh
        succeeded before the lease ran out); None while it is kept."""
        return self._native.reason

    def __repr__(self) -> str:
        state = "lost" if self.lost else "kept"
        return f"{type(self).__name__}(lock={self._name!r}, lease={state})"


class OnceBase:
    """A once-only guard's identity: event id, key, claim and done ttls."""

    __slots__ = ("_entered", "_native")

    def __init__(self, native: _NativeOnce) -> None:
        self._native = native
        self._entered: _NativeClaim | None = None

    @property
    def event_id(self) -> str:
        """The event id as given (a cache key)."""
        return self._native.event_id

    @property
    def key(self) -> str:
        """The table key (prefix and layout applied)."""
        return self._native.key

    @property
    def ttl(self) -> int:
        """How long a claim lasts, in seconds."""
        return self._native.ttl

    @property
    def done_ttl(self) -> int:
        """How long a done event is remembered, in seconds."""
        return self._native.done_ttl

    def __repr__(self) -> str:
        return type(self).__name__ + repr(self._native)[len("Once") :]


class ClaimBase:
    """What a claim found: truthy when this delivery won it."""

    __slots__ = ("_native",)

    def __init__(self, native: _NativeClaim) -> None:
        self._native = native

    @property
    def won(self) -> bool:
        """True when this delivery claimed the event: run the handler, then it is marked done."""
        return self._native.won

    @property
    def status(self) -> OnceStatus | None:
        """Why it was skipped (``in_progress`` or ``done``); None when won."""
        return self._native.status

    @property
    def expires_at(self) -> int | None:
        """When the claim expires (finish before it); None when not won."""
        return self._native.expires_at

    @property
    def recovered(self) -> bool:
        """An earlier attempt of this claim landed but its answer was lost (still ours)."""
        return self._native.recovered

    def __bool__(self) -> bool:
        return self._native.won

    def __repr__(self) -> str:
        return type(self).__name__ + repr(self._native)[len("Claim") :]


def keys_list(keys: Iterable[str]) -> list[str]:
    """``many()``'s keys as a list; a lone str is refused (it would be read as its characters)."""
    if isinstance(keys, (str, bytes)):
        raise TypeError("many() takes an iterable of keys, not a single str")
    return list(keys)


def wait_seconds(blocking: bool, timeout: float | None) -> float:
    """``acquire(blocking, timeout)`` as the core's wait in seconds: 0 for one attempt, inf for
    no limit (the core refuses negative and NaN waits)."""
    if not blocking:
        if timeout is not None:
            # As threading.Lock.acquire.
            raise ValueError("can't specify a timeout for a non-blocking call")
        return 0.0
    return math.inf if timeout is None else timeout


def after_error(body_error: BaseException, what: str, err: DdblockError) -> None:
    """The core's error from ending a lock or a claim after the body raised: the body's exception
    stays the one raised and carries it as a note (a warning before Python 3.11)."""
    message = f"ddblock: {what} after this error failed too ({err.kind}): {err}"
    if sys.version_info >= (3, 11):
        body_error.add_note(message)
    else:
        warnings.warn(message, RuntimeWarning, stacklevel=3)
