"""ddblock: Laravel-compatible DynamoDB locks and cache, released with one conditional DeleteItem.

Reads and writes exactly the items of Laravel's ``DynamoDbStore`` and
``DynamoDbLock``, so Python services share locks and cache entries with PHP
(and Rust) apps in one table. See ``docs/python.md``.

>>> import ddblock
>>> store = ddblock.Store(table="cache", prefix="app_", layout="laravel8")
>>> store.lock_key("orders")
'app_:app_:orders'
"""

from ._native import __version__, serialize, unserialize
from ._store import AsyncLock, AsyncStore, Lock, Store
from ._values import Backoff, Holder, PhpObject
from .exceptions import (
    CodecError,
    ConfigError,
    DdblockError,
    InvalidKey,
    InvalidTtl,
    LockLostWarning,
    LockTimeout,
    ServiceError,
    TableNotFound,
    Throttled,
    TransportError,
    UnsupportedError,
)

__all__ = [
    "AsyncLock",
    "AsyncStore",
    "Backoff",
    "CodecError",
    "ConfigError",
    "DdblockError",
    "Holder",
    "InvalidKey",
    "InvalidTtl",
    "Lock",
    "LockLostWarning",
    "LockTimeout",
    "PhpObject",
    "ServiceError",
    "Store",
    "TableNotFound",
    "Throttled",
    "TransportError",
    "UnsupportedError",
    "__version__",
    "serialize",
    "unserialize",
]
