"""The Python peer: the ddblock Python binding over the peer protocol (PROTOCOL.md, beside this
file). One JSON request per stdin line, one JSON answer per stdout line, in order; exits when
stdin closes.

    DDB_ENDPOINT=http://127.0.0.1:8000 DDB_TABLE=cache DDB_LAYOUT=laravel12 DDB_PREFIX=app_ \
        bindings/python/.venv/bin/python compat-tests/support/peers/peer.py

Configuration, read once at start: DDB_ENDPOINT, DDB_TABLE (required), DDB_LAYOUT (laravel8),
DDB_PREFIX (empty), DDB_REGION (us-east-1), DDB_TIMEOUT (10: the connect and attempt timeouts,
s); DDB_RETRIES (max attempts - 1), DDB_MARGIN (clock-skew margin, s) and DDB_BACKOFF_MS
(INITIAL,MAX of the wait backoff, jitter 1.0) are the core's defaults when unset. What none of
them sets comes from Laravel's variables, as for any Store (DDBLOCK_BACKEND, DDBLOCK_S3_BUCKET).

The loops (``cycles``, ``chaos``) are in peer_loops.py; the request loop, shared with the CLI
peer, in peer_base.py.
"""

from __future__ import annotations

import base64
import os
import time
from pathlib import Path
from typing import Any

from peer_base import Answer, BasePeer, Request, env_required, field
from peer_loops import chaos, cycles

import ddblock


def env_number(name: str) -> float | None:
    value = os.environ.get(name)
    return float(value) if value else None


def store_from_env() -> ddblock.Store:
    """The store the DDB_* variables describe."""
    retries = env_number("DDB_RETRIES")
    timeout = env_number("DDB_TIMEOUT") or 10.0
    backoff = None
    if os.environ.get("DDB_BACKOFF_MS"):
        initial, longest = (float(ms) / 1000 for ms in os.environ["DDB_BACKOFF_MS"].split(","))
        backoff = ddblock.Backoff(initial=initial, max=longest, jitter=1.0)
    return ddblock.Store(
        env_required("DDB_TABLE"),
        endpoint_url=env_required("DDB_ENDPOINT"),
        layout=os.environ.get("DDB_LAYOUT") or "laravel8",
        prefix=os.environ.get("DDB_PREFIX", ""),
        region=os.environ.get("DDB_REGION") or "us-east-1",
        connect_timeout=timeout,
        attempt_timeout=timeout,
        max_attempts=None if retries is None else int(retries) + 1,
        clock_skew_margin=env_number("DDB_MARGIN"),
        backoff=backoff,
    )


def php_in(b64: str) -> Any:
    """A request's ``v``: base64 of PHP's serialize()."""
    return ddblock.unserialize(base64.b64decode(b64, validate=True))


def php_out(value: Any) -> str:
    """An answer's ``value``: base64 of PHP's serialize() (``Tjs=`` for null)."""
    return base64.b64encode(ddblock.serialize(value)).decode()


class Peer(BasePeer):
    """The requests, over one store."""

    def __init__(self, store: ddblock.Store) -> None:
        self.store = store
        super().__init__(
            "python",
            {
                "lock.acquire": self.lock_acquire,
                "lock.block": self.lock_block,
                "lock.release": self.lock_release,
                "lock.refresh": self.lock_refresh,
                "lock.forceRelease": self.lock_force_release,
                "lock.get": self.lock_get,
                "lock.holder": self.lock_holder,
                "lock.key": lambda r: {"key": self.store.lock_key(field(r, "name"))},
                "get": lambda r: {"value": php_out(self.store.get(field(r, "key")))},
                "put": self.put,
                "add": self.add,
                "forget": self.forget,
                "increment": self.increment,
                "decrement": self.increment,
                "once": self.once,
                "cas": self.cas,
                "lock.counter": self.lock_counter,
                "takeover": self.takeover,
                "cycles": lambda r: cycles(self.store, r),
                "chaos": lambda r: chaos(self.store, r),
            },
        )

    def failed(self, e: Exception) -> Answer:
        """ok:false; a ddblock error also gives its kind."""
        out = super().failed(e)
        if isinstance(e, ddblock.DdblockError) and e.kind:
            out["kind"] = e.kind
        return out

    # ---- locks ----

    def lock_acquire(self, r: Request) -> Answer:
        lock = self.store.lock(field(r, "name"), field(r, "ttl"), owner=r.get("owner"))
        acquired = lock.acquire(blocking=False)
        out: Answer = {"acquired": acquired, "owner": lock.owner}
        if acquired:
            out["fence"] = lock.fence
        return out

    def lock_block(self, r: Request) -> Answer:
        # sleep_ms is Laravel's fixed pause; ddblock waits with the store's backoff.
        lock = self.store.lock(field(r, "name"), field(r, "ttl"), owner=r.get("owner"))
        acquired = lock.acquire(blocking=True, timeout=float(field(r, "seconds")))
        return {"acquired": acquired, "owner": lock.owner}

    def lock_release(self, r: Request) -> Answer:
        lock = self.store.restore_lock(field(r, "name"), field(r, "owner"))
        return {"released": lock.release()}

    def lock_refresh(self, r: Request) -> Answer:
        lock = self.store.restore_lock(field(r, "name"), field(r, "owner"))
        return {"refreshed": lock.refresh(field(r, "ttl"))}

    def lock_force_release(self, r: Request) -> Answer:
        self.store.lock(field(r, "name")).force_release()
        return {}

    def lock_get(self, r: Request) -> Answer:
        holder = self.store.lock(field(r, "name")).holder()
        return {"value": php_out(None if holder is None else holder.owner)}

    def lock_holder(self, r: Request) -> Answer:
        h = self.store.lock(field(r, "name")).holder()
        return {"holder": None if h is None else {"owner": h.owner, "expires_at": h.expires_at}}

    # ---- cache ----

    def put(self, r: Request) -> Answer:
        self.store.put(field(r, "key"), php_in(field(r, "v")), ttl=field(r, "ttl"))
        return {"result": True}

    def add(self, r: Request) -> Answer:
        return {
            "result": self.store.add(field(r, "key"), php_in(field(r, "v")), ttl=field(r, "ttl"))
        }

    def forget(self, r: Request) -> Answer:
        self.store.forget(field(r, "key"))
        return {"result": True}

    def increment(self, r: Request) -> Answer:
        key, by = field(r, "key"), r.get("by", 1)
        if r["op"] == "increment":
            result = self.store.increment(key, by)
        else:
            result = self.store.decrement(key, by)
        return {"result": False if result is None else result}

    # ---- patterns ----

    def once(self, r: Request) -> Answer:
        won = []
        for event in field(r, "events"):
            with self.store.once(event, ttl=field(r, "ttl")) as claim:
                if claim:
                    won.append(event)
        return {"won": won}

    def cas(self, r: Request) -> Answer:
        key, n = field(r, "key"), int(field(r, "n"))
        rounds = 0

        def bump(v: int) -> int:
            nonlocal rounds
            rounds += 1
            return v + 1

        for _ in range(n):
            self.store.update(key, bump, ttl=600, attempts=10_000)
        return {"increments": n, "conflicts": rounds - n}

    def lock_counter(self, r: Request) -> Answer:
        name, n = field(r, "name"), int(field(r, "n"))
        counter, log = Path(field(r, "counter")), Path(field(r, "log"))
        for _ in range(n):
            with self.store.lock(name, ttl=30, timeout=120) as lock:
                start = time.time_ns()
                value = int(counter.read_text())
                time.sleep(0.01)
                counter.write_text(str(value + 1))
                with log.open("a") as f:
                    f.write(f"python {lock.fence} {start} {time.time_ns()}\n")
        return {"held": n}

    def takeover(self, r: Request) -> Answer:
        won = {}
        for name in field(r, "names"):
            lock = self.store.lock(name, field(r, "ttl"))
            if lock.acquire(blocking=False):
                won[name] = lock.fence
        return {"won": won}


def main() -> None:
    Peer(store_from_env()).serve()


if __name__ == "__main__":
    main()
