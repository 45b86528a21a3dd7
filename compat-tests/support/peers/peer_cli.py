"""The CLI peer: the ``ddblock`` command over the peer protocol (PROTOCOL.md, beside this file),
one CLI process per call. One JSON request per stdin line, one JSON answer per stdout line, in
order; exits when stdin closes. Standard library only (the request loop: peer_base.py).

    DDB_ENDPOINT=http://127.0.0.1:8000 DDB_TABLE=cache DDB_LAYOUT=laravel12 DDB_PREFIX=app_ \
        python3 compat-tests/support/peers/peer_cli.py

The CLI is DDBLOCK_CLI (default target/debug/ddblock of this repository). The DDB_* variables
become its global flags: DDB_ENDPOINT ``--endpoint``, DDB_TABLE ``--table``, DDB_LAYOUT
``--layout`` (laravel8), DDB_PREFIX ``--prefix`` (empty), DDB_REGION ``--region`` (us-east-1),
DDB_TIMEOUT ``--connect-timeout`` and ``--attempt-timeout`` (10), DDB_RETRIES ``--max-attempts``
(plus one), DDB_MARGIN ``--clock-skew-margin``; DDB_BACKOFF_MS has no flag (the core's default
applies). The rest of the environment passes to the CLI, which reads Laravel's variables for
what no flag sets.

Ops: hello, now, lock.acquire, lock.block, lock.release, lock.refresh, lock.forceRelease,
lock.get, lock.holder, lock.key, once, cas, lock.counter, takeover; the others answer
``unsupported`` (the CLI's cache commands take text, not PHP values; no loops).
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
from pathlib import Path
from typing import Any

from peer_base import Answer, BasePeer, Request, env_required, field

ROOT = Path(__file__).resolve().parents[3]
#: What a command run by ``ddblock once`` prints, so the peer knows it ran.
RAN = "ddblock-peer-ran"
#: ``lock.counter``'s turn, run by ``ddblock run`` (which sets DDBLOCK_FENCE): read the number in
#: file $0, pause 10 ms, write it + 1, append ``cli FENCE START_NS END_NS`` to file $1.
COUNTER_TURN = (
    's=$(date +%s%N); v=$(cat "$0"); sleep 0.01; echo $((v + 1)) >"$0"; '
    'echo "cli $DDBLOCK_FENCE $s $(date +%s%N)" >>"$1"'
)
#: Exit statuses of the CLI: the lock is held elsewhere (once: the event is in progress).
HELD = 75


class CliError(Exception):
    """The CLI failed: its ``--json`` error (kind and message), or an unexpected exit."""

    def __init__(self, message: str, kind: str | None = None) -> None:
        super().__init__(message)
        self.kind = kind


def global_flags() -> list[str]:
    """The CLI's global flags for the DDB_* variables."""
    env = os.environ
    flags = [
        f"--endpoint={env_required('DDB_ENDPOINT')}",
        f"--table={env_required('DDB_TABLE')}",
        f"--layout={env.get('DDB_LAYOUT') or 'laravel8'}",
        f"--prefix={env.get('DDB_PREFIX', '')}",
        f"--region={env.get('DDB_REGION') or 'us-east-1'}",
    ]
    timeout = env.get("DDB_TIMEOUT") or "10"
    flags += [f"--connect-timeout={timeout}", f"--attempt-timeout={timeout}"]
    if env.get("DDB_RETRIES"):
        flags.append(f"--max-attempts={int(env['DDB_RETRIES']) + 1}")
    if env.get("DDB_MARGIN"):
        flags.append(f"--clock-skew-margin={env['DDB_MARGIN']}")
    return flags


def php_string(value: str | None) -> str:
    """base64 of PHP's serialize() of a string or null (an owner, for ``lock.get``)."""
    if value is None:
        return base64.b64encode(b"N;").decode()
    raw = value.encode()
    return base64.b64encode(b's:%d:"%s";' % (len(raw), raw)).decode()


class Cli:
    """Runs the CLI, one process per call."""

    def __init__(self, program: str) -> None:
        self.argv = [program, *global_flags(), "--json"]

    def run(self, *args: str, ok: tuple[int, ...] = (0,)) -> tuple[int, Any, list[str]]:
        """Exit status, the JSON object it printed (None if none), and its other stdout lines.
        A ``--json`` error raises CliError with its kind; so does an exit outside ``ok``."""
        done = subprocess.run(
            [*self.argv, *args], capture_output=True, text=True, stdin=subprocess.DEVNULL
        )
        data: Any = None
        other = []
        for line in done.stdout.splitlines():
            if line.startswith("{"):
                data = json.loads(line)
            else:
                other.append(line)
        if isinstance(data, dict) and isinstance(data.get("error"), dict):
            raise CliError(str(data["error"].get("message")), data["error"].get("kind"))
        if done.returncode not in ok:
            command = " ".join(args[:2])
            raise CliError(f"ddblock {command} exited {done.returncode}: {done.stderr.strip()}")
        return done.returncode, data, other

    def obj(self, *args: str, ok: tuple[int, ...] = (0,)) -> tuple[int, dict[str, Any]]:
        """``run``, for a command that answers one JSON object."""
        rc, data, _ = self.run(*args, ok=ok)
        if not isinstance(data, dict):
            raise CliError(f"ddblock {' '.join(args[:2])} printed no JSON object (exit {rc})")
        return rc, data


class Peer(BasePeer):
    """The requests, through the CLI."""

    def __init__(self, cli: Cli) -> None:
        self.cli = cli
        super().__init__(
            "cli",
            {
                "lock.acquire": self.lock_acquire,
                "lock.block": self.lock_block,
                "lock.release": self.lock_release,
                "lock.refresh": self.lock_refresh,
                "lock.forceRelease": self.lock_force_release,
                "lock.get": lambda r: {"value": php_string(self.status(r)["owner"])},
                "lock.holder": self.lock_holder,
                "lock.key": lambda r: {"key": self.status(r)["key"]},
                "once": self.once,
                "cas": self.cas,
                "lock.counter": self.lock_counter,
                "takeover": self.takeover,
            },
        )

    def failed(self, e: Exception) -> Answer:
        """ok:false; a ``--json`` error gives its kind, which also names the error."""
        if isinstance(e, CliError) and e.kind:
            return {"ok": False, "error": f"{e.kind}: {e}", "kind": e.kind}
        return super().failed(e)

    # ---- locks ----

    def acquire(self, r: Request, wait: str) -> Answer:
        args = ["acquire", str(field(r, "name")), f"--ttl={field(r, 'ttl')}", f"--wait={wait}"]
        if r.get("owner") is not None:
            args.append(f"--owner={r['owner']}")
        rc, data = self.cli.obj(*args, ok=(0, HELD))
        out: Answer = {"acquired": rc == 0, "owner": data["owner"]}
        if rc == 0:
            out["fence"] = data["fence"]
        return out

    def lock_acquire(self, r: Request) -> Answer:
        return self.acquire(r, "0")

    def lock_block(self, r: Request) -> Answer:
        # sleep_ms is Laravel's fixed pause; ddblock waits with the store's backoff.
        out = self.acquire(r, str(field(r, "seconds")))
        out.pop("fence", None)
        return out

    def lock_release(self, r: Request) -> Answer:
        name, owner = str(field(r, "name")), str(field(r, "owner"))
        _, data = self.cli.obj("release", name, f"--owner={owner}", ok=(0, 1))
        return {"released": bool(data["released"])}

    def lock_refresh(self, r: Request) -> Answer:
        name, owner, ttl = str(field(r, "name")), str(field(r, "owner")), field(r, "ttl")
        _, data = self.cli.obj("refresh", name, f"--owner={owner}", f"--ttl={ttl}", ok=(0, 1))
        return {"refreshed": bool(data["refreshed"])}

    def lock_force_release(self, r: Request) -> Answer:
        # Exit 1 without an error object: no lock of that name (`"reason": "not_found"`), which
        # Laravel's forceRelease() does not report either.
        self.cli.run("force-release", str(field(r, "name")), ok=(0, 1))
        return {}

    def status(self, r: Request) -> dict[str, Any]:
        return self.cli.obj("status", str(field(r, "name")))[1]

    def lock_holder(self, r: Request) -> Answer:
        s = self.status(r)
        return {
            "holder": {"owner": s["owner"], "expires_at": s["expires_at"]} if s["held"] else None
        }

    # ---- patterns ----

    def once(self, r: Request) -> Answer:
        """``ddblock once`` per event (it marks the event done); the command says it ran."""
        won = []
        for event in field(r, "events"):
            ttl = f"--ttl={field(r, 'ttl')}"
            _, _, printed = self.cli.run("once", str(event), ttl, "--", "echo", RAN, ok=(0, HELD))
            if RAN in printed:
                won.append(event)
        return {"won": won}

    def cas(self, r: Request) -> Answer:
        """N increments: ``get --with-version``, ``put --if-version`` (exit 3: read again)."""
        key, n = str(field(r, "key")), int(field(r, "n"))
        conflicts = 0
        for _ in range(n):
            while True:
                _, seen = self.cli.obj("get", key, "--with-version")
                value, version = int(seen["value"]), seen["version"]
                rc, _, _ = self.cli.run(
                    "put", key, str(value + 1), "--ttl=600", f"--if-version={version}", ok=(0, 3)
                )
                if rc == 0:
                    break
                conflicts += 1
        return {"increments": n, "conflicts": conflicts}

    def lock_counter(self, r: Request) -> Answer:
        """N times ``ddblock run NAME``: the command takes its turn (COUNTER_TURN)."""
        name, counter, log, n = (
            field(r, "name"),
            field(r, "counter"),
            field(r, "log"),
            field(r, "n"),
        )
        for _ in range(int(n)):
            turn = ["sh", "-c", COUNTER_TURN, str(counter), str(log)]
            self.cli.run("run", str(name), "--ttl=30", "--wait=120", "--", *turn)
        return {"held": int(n)}

    def takeover(self, r: Request) -> Answer:
        won = {}
        for name in field(r, "names"):
            out = self.acquire({"name": name, "ttl": field(r, "ttl")}, "0")
            if out["acquired"]:
                won[name] = out["fence"]
        return {"won": won}


def main() -> None:
    program = os.environ.get("DDBLOCK_CLI") or str(ROOT / "target/debug/ddblock")
    if not os.access(program, os.X_OK):
        raise SystemExit(f"peer_cli.py: no ddblock CLI at {program} (set DDBLOCK_CLI)")
    Peer(Cli(program)).serve()


if __name__ == "__main__":
    main()
