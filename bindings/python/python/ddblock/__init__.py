"""ddblock: Laravel-compatible DynamoDB locks and cache, released with one conditional DeleteItem.

Reads and writes exactly the items of Laravel's ``DynamoDbStore`` and
``DynamoDbLock``, so Python services share locks and cache entries with PHP
(and Rust) apps in one table. See ``docs/python.md``.

>>> import ddblock
>>> store = ddblock.Store("cache", prefix="app_", layout="laravel8")
>>> store.lock_key("orders")
'app_:app_:orders'
"""

from __future__ import annotations

import atexit as _atexit

from . import _aio, _native, _sync, otel
from ._aio import AsyncClaim, AsyncHeartbeat, AsyncLock, AsyncOnce
from ._native import Versioned, __version__, serialize, unserialize
from ._native import _refresh_logging as refresh_logging
from ._sync import Claim, Heartbeat, Lock, Once
from ._values import Backoff, Holder, OnceResult, OnceStatus, PhpObject
from .exceptions import (
    CodecError,
    ConfigError,
    ConflictError,
    CredentialsError,
    DdblockError,
    InvalidKey,
    InvalidTtl,
    LeaseLost,
    LockTimeout,
    OutcomeUnknown,
    ServiceError,
    TableNotFound,
    Throttled,
    TransportError,
    UnsupportedError,
)

__all__ = [
    "AsyncClaim",
    "AsyncHeartbeat",
    "AsyncLock",
    "AsyncOnce",
    "AsyncStore",
    "Backoff",
    "Claim",
    "CodecError",
    "ConfigError",
    "ConflictError",
    "CredentialsError",
    "DdblockError",
    "Heartbeat",
    "Holder",
    "InvalidKey",
    "InvalidTtl",
    "LeaseLost",
    "Lock",
    "LockTimeout",
    "Once",
    "OnceResult",
    "OnceStatus",
    "OutcomeUnknown",
    "PhpObject",
    "ServiceError",
    "Store",
    "TableNotFound",
    "Throttled",
    "TransportError",
    "UnsupportedError",
    "Versioned",
    "__version__",
    "refresh_logging",
    "serialize",
    "unserialize",
]


# The two flavours of a store, joined here so that neither module imports the other.
class Store(_sync.Store):
    __doc__ = _sync.Store.__doc__
    __slots__ = ()

    @property
    def aio(self) -> AsyncStore:
        """The same store (same client) with coroutine methods."""
        return AsyncStore._over(self._native)


class AsyncStore(_aio.AsyncStore):
    __doc__ = _aio.AsyncStore.__doc__
    __slots__ = ()

    @property
    def sync(self) -> Store:
        """The same store (same client) with blocking methods."""
        return Store._over(self._native)


# The core's events go to `logging` (logger "ddblock" and its children; docs/observability.md).
_native._install_logging()

# Spans and metrics in OpenTelemetry when the application has set it up before importing ddblock
# (otherwise `ddblock.otel.instrument()`, or `opentelemetry-instrument` by the entry point).
if otel._configured():
    otel.instrument()

# The runtime's worker threads must be stopped while the interpreter is still alive: a thread
# finishing a task at exit (dropping an asyncio future's objects) would take the GIL during
# finalization and crash the process. atexit handlers run before finalization.
_atexit.register(_native._shutdown, 5.0)
