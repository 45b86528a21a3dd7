"""Plain data types crossing the binding: PHP objects, lock holders, once-guard states."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from ._native import _default_backoff, _redact_owner

# The core's defaults (one source): initial, max, multiplier, jitter.
_INITIAL, _MAX, _MULTIPLIER, _JITTER = _default_backoff()

__all__ = ["Backoff", "Holder", "OnceResult", "OnceStatus", "PhpObject"]

_T = TypeVar("_T")


@dataclass
class PhpObject:
    """A PHP object as data: its class name and properties. Nothing is ever instantiated.

    ``serialize()`` has three object forms; exactly one of them is meant:

    - ``O:`` a plain object: ``properties`` (names keep PHP's mangling:
      ``"\\0*\\0name"`` is protected, ``"\\0Class\\0name"`` private);
    - ``E:`` an enum case (PHP 8.1+): ``enum_case`` is the case name;
    - ``C:`` a ``Serializable`` class's own payload: ``payload``.
    """

    class_name: str
    properties: dict[str | int, Any] = field(default_factory=dict)
    enum_case: str | None = None
    payload: bytes | None = None


@dataclass(frozen=True)
class Holder:
    """Who holds a lock, as read from the table."""

    #: The owner token; None when the stored value is not a string or number.
    owner: str | None
    #: Unix time (seconds) the lock expires at; None for an item without expiry.
    expires_at: int | None
    #: The fencing token of the holder's acquisition; None for a lock Laravel wrote.
    fence: int | None = None

    def __repr__(self) -> str:
        # The owner releases the lock: shown as the core shows it everywhere (first four
        # characters and the length), not in full.
        shown = None if self.owner is None else _redact_owner(self.owner)
        return f"Holder(owner={shown}, expires_at={self.expires_at!r}, fence={self.fence!r})"


@dataclass(frozen=True)
class OnceStatus:
    """Where an event stands: ``Once.status()``, or why a claim was skipped."""

    #: ``"free"``, ``"in_progress"``, ``"done"``, ``"given_back"`` or ``"expired"``.
    state: str
    #: The claim counter: how many deliveries tried since the item was created; None when free.
    claims: int | None
    #: When the claim ends (in progress) or the done record is forgotten (done).
    expires_at: int | None
    #: When the handler was marked done (Unix seconds).
    done_at: int | None


@dataclass(frozen=True)
class OnceResult(Generic[_T]):
    """What ``Once.run`` did: ran the work (``value``), or skipped it (``status`` says why)."""

    #: True when this delivery claimed the event, the work succeeded and it is marked done.
    ran: bool
    #: The work's result, when it ran.
    value: _T | None = None
    #: Why it did not run (``in_progress`` or ``done``), when it did not.
    status: OnceStatus | None = None


@dataclass(frozen=True)
class Backoff:
    """How a waiting ``acquire``/``with`` retries: capped exponential backoff with jitter.

    The wait before retry ``n`` is ``min(initial * multiplier**n, max)``, of
    which the fraction ``jitter`` is randomised. The defaults are the core's:
    50 ms doubling up to 1 s, half of each wait random.
    """

    #: First wait, in seconds.
    initial: float = _INITIAL
    #: Longest wait, in seconds.
    max: float = _MAX
    #: Growth per attempt (1.0: a fixed interval).
    multiplier: float = _MULTIPLIER
    #: Fraction of each wait that is random, 0 to 1.
    jitter: float = _JITTER

    @classmethod
    def laravel(cls) -> Backoff:
        """Laravel's fixed 250 ms poll, without jitter."""
        return cls(initial=0.25, max=0.25, multiplier=1.0, jitter=0.0)
