"""The exceptions of ddblock: one base class, one subclass per kind of core error.

Every ``ddblock::ErrorKind`` of the Rust core maps to exactly one class here
(``bindings/python/src/errors.rs``). A failed lock condition is never an
exception: ``acquire`` returns False, ``release`` returns False.

Each exception carries ``kind`` (the core's kind name, e.g. ``"transport"``, the same name the
CLI's ``--json`` errors and, upper-cased, the Node binding's ``code`` use)
and, where the core reports them, details as attributes (``code``,
``operation``, ``endpoint``, ``table``, ``key``, ``name``, ``waited``,
``holder``, ``offset``, ``ttl``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._values import Holder

__all__ = [
    "CodecError",
    "ConfigError",
    "ConflictError",
    "CredentialsError",
    "DdblockError",
    "InvalidKey",
    "InvalidTtl",
    "LeaseLost",
    "LockTimeout",
    "OutcomeUnknown",
    "ServiceError",
    "TableNotFound",
    "Throttled",
    "TransportError",
    "UnsupportedError",
]


class DdblockError(Exception):
    """Base class of every ddblock error."""

    #: The core's kind name (``"invalid_key"``, ``"transport"``, ...).
    kind: str | None = None
    #: The DynamoDB operation that failed (``"PutItem"``, ...), when one did.
    operation: str | None = None


class InvalidKey(DdblockError, ValueError):
    """A key or lock name is empty, or longer than 2048 bytes once prefixed."""

    #: The key as given (truncated when very long).
    key: str | None = None


class InvalidTtl(DdblockError, ValueError):
    """A ttl that cannot be used: not whole seconds, negative for a lock, or overflowing."""

    ttl: int | None = None


class TableNotFound(DdblockError):
    """The table does not exist at the configured endpoint and region."""

    table: str | None = None
    endpoint: str | None = None


class Throttled(DdblockError):
    """DynamoDB kept throttling after the SDK's retries; nothing was written."""

    #: The service's error code, e.g. ``"ProvisionedThroughputExceededException"``.
    code: str | None = None


class LockTimeout(DdblockError, TimeoutError):
    """Waiting for a lock held by someone else timed out."""

    #: The lock name.
    name: str | None = None
    #: Seconds waited.
    waited: float | None = None
    #: Who held the lock at the last attempt, when known.
    holder: Holder | None = None


class OutcomeUnknown(DdblockError):
    """A lock acquire's write got no answer after every retry, so whether it took effect is
    unknown; its own write was deleted again if it had landed (the message says what the
    clean-up found). Retrying is safe."""

    #: The lock name.
    name: str | None = None


class LeaseLost(DdblockError):
    """A held lock's lease ended before the work did: a refresh found it gone or another owner's,
    or no refresh succeeded before the local lease deadline. Whatever the work did after that
    point was not protected; compare fencing tokens to reject it at the resource."""

    #: The lock name.
    name: str | None = None


class CodecError(DdblockError, ValueError):
    """A value cannot be encoded to, or decoded from, PHP's serialize format."""

    #: Byte offset of the problem, when known.
    offset: int | None = None


class ServiceError(DdblockError):
    """DynamoDB answered with an error ddblock has no specific class for."""

    #: The service's error code, e.g. ``"ValidationException"``.
    code: str | None = None


class TransportError(DdblockError, ConnectionError):
    """No answer: wrong endpoint, network down, or a timeout."""

    endpoint: str | None = None


class CredentialsError(DdblockError):
    """No AWS credentials were found; nothing was sent. Set ``AWS_ACCESS_KEY_ID`` and
    ``AWS_SECRET_ACCESS_KEY`` (any values for a local server), a profile, or a role."""

    endpoint: str | None = None


class ConfigError(DdblockError, ValueError):
    """The store configuration is incomplete or contradictory (bad layout, table name, ...)."""


class UnsupportedError(DdblockError):
    """The operation does not exist for a DynamoDB store (``flush``, as in Laravel)."""


class ConflictError(DdblockError):
    """Another writer won where the call cannot go on: ``update()`` still found the entry changed
    after its last attempt, or a once-claim was no longer ours when marked done (it expired and
    another delivery claimed the event)."""

    #: The cache key or event id as given.
    key: str | None = None
