"""Store and Lock: the blocking API of ddblock.

GENERATED from _aio.py by tools/unasync.py: do not edit; edit _aio.py and rerun it.
Every call blocks with the GIL released, so other Python threads run meanwhile.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from types import TracebackType
from typing import Any, TypeVar

from . import otel
from ._base import (
    ClaimBase,
    HeartbeatBase,
    LockBase,
    OnceBase,
    StoreBase,
    after_error,
    keys_list,
    wait_seconds,
)
from ._native import Versioned
from ._values import Holder, OnceResult, OnceStatus
from .exceptions import DdblockError

__all__ = ["Claim", "Heartbeat", "Lock", "Once", "Store"]

_T = TypeVar("_T")
#: The caller's handler for ``Once.run``.
_Work = Callable[..., _T]


class Store(StoreBase):
    """A Laravel DynamoDB cache table: locks and cache entries (blocking calls).

    Creating a store sends nothing; the client connects on first use (and again in a child
    process after ``os.fork()``).

    Share one store between threads: each call releases the GIL while it waits on DynamoDB,
    and Ctrl-C interrupts a wait for a lock.
    """

    __slots__ = ()

    # ---- locks ----

    def lock(
        self,
        name: str,
        ttl: int = 0,
        *,
        owner: str | None = None,
        timeout: float | None = None,
    ) -> Lock:
        """A lock handle; sends nothing. See :class:`Lock`.

        ``ttl`` is the lease in seconds (0: Laravel's default, 86400). ``owner`` defaults to a
        fresh random 16-character token. ``timeout`` is how long ``with`` waits for the lock
        (None: no limit).
        """
        return Lock(self._native.lock(name, ttl, owner), timeout)

    def restore_lock(self, name: str, owner: str, *, timeout: float | None = None) -> Lock:
        """A handle on a lock someone holds as ``owner`` (Laravel's ``restoreLock``)."""
        return Lock(self._native.lock(name, 0, owner), timeout)

    # ---- cache ----

    def get(self, key: str, default: Any = None, *, consistent: bool = False) -> Any:
        """The value of ``key``, or ``default`` when missing, expired or null.

        An eventually consistent read, as Laravel's; ``consistent=True`` reads strongly.
        """
        value = self._native.get(key, consistent).wait()
        return default if value is None else value

    def many(self, keys: Iterable[str]) -> dict[str, Any]:
        """Values of many keys in one dict, in input order; None for missing ones.

        A key whose item is not a Laravel value gets a :class:`~ddblock.CodecError` instance
        as its value (the others are still returned).
        """
        return self._native.many(keys_list(keys)).wait()

    def put(self, key: str, value: Any, *, ttl: int) -> None:
        """Stores ``value`` for ``ttl`` seconds (ttl <= 0 writes an already-expired item)."""
        self._native.put(key, value, ttl).wait()

    def put_many(self, values: Mapping[str, Any], *, ttl: int) -> None:
        """Stores many values with one expiry (BatchWriteItem, 25 per request)."""
        self._native.put_many(dict(values), ttl).wait()

    def add(self, key: str, value: Any, *, ttl: int) -> bool:
        """Stores ``value`` only if ``key`` is missing or expired; True when stored."""
        return self._native.add(key, value, ttl).wait()

    def increment(self, key: str, by: float = 1) -> int | None:
        """Adds ``by`` (int or float, as Laravel) to a live number; the new value cast to int as
        Laravel does, or None when missing or expired."""
        return self._native.increment(key, by).wait()

    def decrement(self, key: str, by: float = 1) -> int | None:
        """Subtracts ``by`` from a live number; the new value, or None when missing or expired."""
        return self._native.decrement(key, by).wait()

    def forever(self, key: str, value: Any) -> None:
        """Stores ``value`` for 5 years (what Laravel's ``forever()`` means)."""
        self._native.forever(key, value).wait()

    def forget(self, key: str) -> None:
        """Deletes ``key``."""
        self._native.forget(key).wait()

    def touch(self, key: str, *, ttl: int) -> bool:
        """Sets a live entry's expiry to now + ``ttl``; False when missing or expired."""
        return self._native.touch(key, ttl).wait()

    def flush(self) -> None:
        """Always raises UnsupportedError: a DynamoDB table cannot be flushed (as in Laravel)."""
        self._native.flush().wait()

    # ---- once-only guard ----

    def once(self, event_id: str, *, ttl: int, done_ttl: int | None = None) -> Once:
        """The once-only guard of ``event_id`` (a cache key, e.g. ``"once:" + message_id``);
        sends nothing. See :class:`Once`.

        ``ttl``: how long a claim lasts, longer than the handler runs (afterwards another
        delivery takes over). ``done_ttl``: how long a done event is remembered, so that
        redeliveries are skipped (default one day).
        """
        return Once(self._native.once(event_id, ttl, done_ttl))

    # ---- compare-and-set ----

    def get_versioned(self, key: str) -> Versioned:
        """``key``'s value and version (``.value``, ``.version``): one strongly consistent read.

        Version 0 means the entry has none: it is missing, or Laravel wrote it.
        """
        return self._native.get_versioned(key).wait()

    def put_if_version(
        self, key: str, value: Any, *, ttl: int, version: int | Versioned
    ) -> int | None:
        """Stores ``value`` for ``ttl`` seconds only if the entry is still at ``version``: the new
        version, or None when someone else wrote it meanwhile (nothing stored).

        ``version`` is an int (the version only), or the :class:`Versioned` read itself: then
        the value must be unchanged too (a Laravel ``increment`` keeps the version).
        """
        written = self._native.put_if_version(key, value, ttl, version).wait()
        return None if written is None else written.version

    def update(
        self, key: str, fn: Callable[[Any], Any], *, ttl: int, attempts: int | None = None
    ) -> Versioned:
        """Read-modify-write until it sticks: stores ``fn(value)`` (value None when missing) if
        the entry did not change meanwhile, else waits the store's backoff and tries again;
        :class:`~ddblock.ConflictError` after ``attempts`` rounds (default 10). ``fn`` may run
        several times: keep it free of side effects. Returns the written value and version.
        """
        retry = self._native.conflict_retry(key, attempts)
        while True:
            current = self._native.get_versioned(key).wait()
            written = self._native.put_if_version(key, fn(current.value), ttl, current).wait()
            if written is not None:
                return written
            retry.after_conflict().wait()

    # ---- the table ----

    def create_table(self, *, ttl: bool = True, wait: float | None = None) -> dict[str, Any]:
        """Creates the table Laravel's cache store needs (idempotent), waits up to ``wait``
        seconds (default 120, the core's) for it to be ACTIVE and enables TTL on the expiry
        attribute (``ttl=False``: leave TTL alone). Returns ``created``, ``ready``, ``status``,
        ``ttl``, ..."""
        return self._native.create_table(ttl, wait).wait()

    def doctor(self, *, scan: bool = True) -> dict[str, Any]:
        """Checks the table (exists, key schema, TTL) and, with ``scan``, its items (expired,
        ttl-0 locks, not Laravel's); with ``backend="s3"`` also probes the bucket's conditional
        requests on a scratch object (the ``s3_*`` checks, ``s3``: the bucket and the object's
        key); ``healthy`` is False when a check failed."""
        return self._native.doctor(scan).wait()


class Lock(LockBase):
    """A named lock with an owner, in Laravel's ``DynamoDbLock`` format (blocking calls).

    ``with store.lock("orders:42", ttl=30, timeout=5): ...`` waits up to ``timeout`` (raising
    :class:`~ddblock.LockTimeout`), runs the body while a heartbeat refreshes the lease, and
    releases with one owner-conditioned DeleteItem. A lease lost during the body raises
    :class:`~ddblock.LeaseLost` at the end (``lease_lost`` turns true as soon as it is seen). The
    body's exceptions always propagate.
    """

    __slots__ = ()

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        """Takes the lock; True when it is ours.

        ``blocking=False``: one attempt (one conditional UpdateItem). ``blocking=True``: retries
        with backoff for up to ``timeout`` seconds (None: no limit), then returns False.
        """
        wait = wait_seconds(blocking, timeout)
        with otel.span("acquire", self._native, wait > 0) as span:
            taken: bool = self._native.acquire(wait).wait()
            span.outcome(taken)
        return taken

    def release(self) -> bool:
        """Releases the lock if it is ours (one conditional DeleteItem); False if it was not.

        Raises ``LeaseLost`` when this handle acquired the lock, its lease has not run out, and
        the first send finds it gone or another owner's: it was removed under its holder
        (docs/semantics.md, "Releasing").
        """
        with otel.span("release", self._native) as span:
            outcome: str = self._native.release().wait()
            span.outcome(outcome)
        return outcome == "released"

    def force_release(self) -> bool:
        """Deletes the lock whoever holds it (Laravel's ``forceRelease``).

        True when a lock item was there; False when there was nothing to release (names are
        exact: a name that lost its backslashes in a shell finds nothing).
        """
        return self._native.force_release().wait()

    def refresh(self, ttl: int | None = None) -> bool:
        """Extends our live lock to now + ``ttl`` (default: the lock's ttl); False if not ours."""
        return self._native.refresh(ttl).wait()

    def locked(self) -> bool:
        """Whether anyone holds the lock now (consistent read)."""
        return self._native.locked().wait()

    def owned(self) -> bool:
        """Whether this lock's owner holds it now (consistent read)."""
        return self._native.owned().wait()

    def holder(self) -> Holder | None:
        """Who holds the lock now and until when; None when it is free (consistent read)."""
        return self._native.holder().wait()

    def heartbeat(self) -> Heartbeat:
        """Starts refreshing the lock this handle holds, in the background, every
        ``heartbeat_interval`` (default: a third of the ttl); see :class:`Heartbeat`.

        For a lock acquired with ``acquire()`` (``with`` runs its own). A handle that holds no
        lease reports it lost at once.
        """
        return Heartbeat(self._native.heartbeat(), self.name)

    def __enter__(self) -> Lock:
        wait = math.inf if self._timeout is None else self._timeout
        with otel.span("acquire", self._native, wait > 0) as span:
            self._held = self._native.enter(wait).wait()
            span.outcome(True)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        held, self._held = self._held, None
        if held is None:
            return
        try:
            # The core ends the lease: LeaseLost if it was lost during the body, the release's
            # error if that failed; a release is a release.
            with otel.span("release", self._native) as span:
                held.finish().wait()
                span.outcome("released")
        except DdblockError as err:
            if exc is None:
                raise
            after_error(exc, f"releasing lock {self.name!r}", err)


class Once(OnceBase):
    """The once-only guard of one event id: exactly one delivery, across processes and
    languages, runs the handler (blocking calls).

    ``with store.once(event_id, ttl=300) as claim:`` claims the event (one UpdateItem);
    ``claim`` is truthy when this delivery won. When the body ends, a won claim is marked done
    (later deliveries are skipped), or given back if the body raised (the next delivery runs
    it). ``once.run(handler).wait()`` does the same around a coroutine function.

    A handle is for one delivery: enter it once.
    """

    __slots__ = ()

    def claim(self) -> Claim:
        """Claims the event; the claim is truthy when won (then ``done()`` or ``give_back()``)."""
        return Claim(self._native.claim().wait())

    def status(self) -> OnceStatus:
        """Where the event stands (one consistent read)."""
        return self._native.status().wait()

    def run(self, work: _Work[_T], /, *args: Any, **kwargs: Any) -> OnceResult[_T]:
        """Runs ``work(*args, **kwargs)`` if this delivery claims the event: marks it done on
        success (:class:`~ddblock.ConflictError` if the claim expired and was taken over
        meanwhile), gives the claim back and re-raises on failure. When another delivery has it,
        returns without running, ``ran=False`` and the ``status`` found."""
        claim = self._native.claim().wait()
        if not claim.won:
            return OnceResult(ran=False, status=claim.status)
        try:
            value = work(*args, **kwargs)
        except BaseException as exc:
            try:
                # The core's rule: a failed handler gives the claim back.
                claim.finish(False).wait()
            except DdblockError as err:
                after_error(exc, f"giving back the claim on event {self.event_id!r}", err)
            raise
        claim.finish(True).wait()
        return OnceResult(ran=True, value=value)

    def __enter__(self) -> Claim:
        if self._entered is not None:
            raise RuntimeError("a once handle is for one delivery: make a new one per message")
        self._entered = self._native.claim().wait()
        return Claim(self._entered)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        claim = self._entered
        if claim is None or not claim.won:
            return
        try:
            # The core's rule: done after the body, given back after its exception.
            claim.finish(exc is None).wait()
        except DdblockError as err:
            if exc is None:
                raise
            after_error(exc, f"giving back the claim on event {self.event_id!r}", err)


class Claim(ClaimBase):
    """What a claim found (blocking calls): truthy when this delivery won the event."""

    __slots__ = ()

    def done(self) -> None:
        """Marks the event done, so later deliveries are skipped; :class:`~ddblock.ConflictError`
        when the claim is not ours (not won, given back, or expired and taken over)."""
        self._native.done().wait()

    def give_back(self) -> bool:
        """Gives the claim back so the next delivery runs the handler; False when not ours."""
        return self._native.give_back().wait()


class Heartbeat(HeartbeatBase):
    """The heartbeat of a held lock (``lock.heartbeat()``): refreshes it until stopped, and says
    when the lease is lost (``lost``, ``reason``), the same heartbeat ``with`` runs.

    ``with lock.heartbeat() as hb: ...`` stops it at the end of the block and raises
    :class:`~ddblock.LeaseLost` there if the lease was lost (a note on the body's exception, if
    it raised one). The lock is not released: that is still ``release()``'s job.
    """

    __slots__ = ()

    def stop(self) -> str | None:
        """Stops refreshing; the reason the lease was lost, or None. Stopping again is fine."""
        return self._native.stop().wait()

    def __enter__(self) -> Heartbeat:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            self._native.finish().wait()
        except DdblockError as err:
            if exc is None:
                raise
            after_error(exc, f"keeping the lease on lock {self._name!r}", err)
