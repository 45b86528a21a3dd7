"""The Python driver of the peers (PROTOCOL.md, beside this file): starts a peer by name with the
DDB_* environment, writes it requests, reads its answers. Standard library only. Every Python
test that drives peers uses it: selftest.py (beside it), compat-tests/patterns/concurrency.py,
bindings/python/tests/test_interop.py.

    from driver import Peer

    with Peer("php", endpoint=url, table="cache", layout="laravel12", prefix="app_") as php:
        php.hello()                                         # loaded, and the peer it should be
        php.call(op="lock.acquire", name="n", ttl=30)       # an answer that must be ok
        php.ask({"op": "no.such.op"})                       # an answer as it is
        php.send({"op": "once", "events": ["e"], "ttl": 60}, {"op": "now"})  # no waiting...
        php.receive_all()                                   # ...their answers, later

A thread reads each peer's answers, so a peer that hangs fails the test after ``answer_timeout``
instead of hanging it. A peer that answers ok:false where ok was needed, exits or does not answer
raises PeerError, an AssertionError.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import queue
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]

Request = Mapping[str, Any]
Answer = dict[str, Any]

#: Each peer's name, and the ``lang`` and ``driver`` its ``hello`` answers.
PEERS: dict[str, tuple[str, str]] = {
    "python": ("python", "core"),
    "node": ("node", "core"),
    "cli": ("cli", "core"),
    "rust": ("rust", "core"),
    "php": ("php", "laravel"),  # stock Laravel
    "php-ddblock": ("php", "ddblock"),  # the PHP driver
}


def command(name: str) -> list[str]:
    """The command line of a peer (PROTOCOL.md's table); the Python peers run on this Python."""
    return {
        "python": [sys.executable, str(HERE / "peer.py")],
        "node": ["node", str(HERE / "peer.mjs")],
        "cli": [sys.executable, str(HERE / "peer_cli.py")],
        "rust": [str(ROOT / "target/debug/ddblock-peer")],
        "php": ["php", str(ROOT / "compat-tests/laravel/harness.php")],
        "php-ddblock": ["php", str(ROOT / "compat-tests/laravel/harness.php")],
    }[name]


def available(name: str) -> bool:
    """Whether the peer can run here: its program built (rust: target/debug/ddblock-peer; cli:
    DDBLOCK_CLI or target/debug/ddblock) or installed (node, php on PATH)."""
    cli = os.environ.get("DDBLOCK_CLI") or str(ROOT / "target/debug/ddblock")
    return {
        "python": True,
        "node": shutil.which("node") is not None,
        "cli": Path(cli).exists(),
        "rust": (ROOT / "target/debug/ddblock-peer").exists(),
        "php": shutil.which("php") is not None,
        "php-ddblock": shutil.which("php") is not None,
    }[name]


class PeerError(AssertionError):
    """A peer answered ok:false where ok was needed (``answer``), exited, or did not answer."""

    def __init__(self, message: str, answer: Answer | None = None) -> None:
        super().__init__(message)
        self.answer = answer


class Peer:
    """One peer process. The keyword arguments are its DDB_* variables (PROTOCOL.md; None: not
    set), over this process's environment and ``env``; test credentials when none are set, and
    never the EC2 metadata service. ``argv`` replaces the name's command line (a peer built
    elsewhere). Answers come in the order of the requests."""

    def __init__(
        self,
        name: str,
        *,
        endpoint: str | None = None,
        table: str | None = None,
        layout: str | None = None,
        prefix: str | None = None,
        region: str | None = None,
        timeout: float | None = None,
        retries: int | None = None,
        margin: float | None = None,
        backoff_ms: str | None = None,
        env: Mapping[str, str] | None = None,
        argv: Sequence[str] | None = None,
        answer_timeout: float = 600.0,
    ) -> None:
        if name not in PEERS:
            raise ValueError(f"no peer {name!r}; the peers are {', '.join(PEERS)}")
        self.name = name
        self.lang, self.driver = PEERS[name]
        self.answer_timeout = answer_timeout
        ddb = {
            "DDB_ENDPOINT": endpoint,
            "DDB_TABLE": table,
            "DDB_LAYOUT": layout,
            "DDB_PREFIX": prefix,
            "DDB_REGION": region,
            "DDB_TIMEOUT": timeout,
            "DDB_RETRIES": retries,
            "DDB_MARGIN": margin,
            "DDB_BACKOFF_MS": backoff_ms,
            "DDB_DRIVER": self.driver if self.lang == "php" else None,
        }
        self.env: dict[str, str] = {
            "AWS_ACCESS_KEY_ID": "test",
            "AWS_SECRET_ACCESS_KEY": "test",
            **os.environ,
            **(env or {}),
            **{k: str(v) for k, v in ddb.items() if v is not None},
            "AWS_EC2_METADATA_DISABLED": "true",
        }
        self.argv = list(argv) if argv is not None else command(name)
        self.proc = subprocess.Popen(
            self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=self.env, text=True
        )
        #: The requests sent and not answered yet, oldest first.
        self.waiting: collections.deque[Request] = collections.deque()
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, name=f"peer {name}", daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def send(self, *requests: Request) -> None:
        """Writes the requests at once, without waiting; ``receive`` reads their answers."""
        assert self.proc.stdin is not None
        self.proc.stdin.write("".join(json.dumps(dict(r)) + "\n" for r in requests))
        self.proc.stdin.flush()
        self.waiting.extend(requests)

    def receive(self, *, check: bool = True, timeout: float | None = None) -> Answer:
        """The answer to the oldest request not answered yet; with ``check``, it must be ok."""
        if not self.waiting:
            raise ValueError(f"the {self.name} peer has no request to answer")
        request = self.waiting[0]
        wait = max(0.0, self.answer_timeout if timeout is None else timeout)
        try:
            line = self._lines.get(timeout=wait)
        except queue.Empty:
            raise PeerError(f"the {self.name} peer did not answer {request} in {wait} s") from None
        if line is None:
            self._lines.put(None)  # still closed for the next reader
            raise PeerError(f"the {self.name} peer exited ({self.proc.wait()}) on {request}")
        self.waiting.popleft()
        answer: Answer = json.loads(line)
        if check and answer.get("ok") is not True:
            raise PeerError(f"the {self.name} peer answered {answer} to {request}", answer)
        return answer

    def receive_all(self, timeout: float | None = None) -> list[Answer]:
        """The answers to every request not answered yet, each ok, all within ``timeout``."""
        deadline = time.monotonic() + (self.answer_timeout if timeout is None else timeout)
        count = len(self.waiting)
        return [self.receive(timeout=deadline - time.monotonic()) for _ in range(count)]

    def call(self, request: Request | None = None, /, **fields: Any) -> Answer:
        """Sends one request (``request``, or the fields: ``call(op="now")``) and returns its
        answer, which must be ok."""
        self.send({**(request or {}), **fields})
        return self.receive()

    def ask(self, request: Request | None = None, /, **fields: Any) -> Answer:
        """``call``, with the answer as it is, ok or not (to test a peer's failures)."""
        self.send({**(request or {}), **fields})
        return self.receive(check=False)

    def hello(self, timeout: float = 120.0) -> Answer:
        """``hello``: the peer is loaded, and the one its name says (``lang``, ``driver``)."""
        self.send({"op": "hello"})
        answer = self.receive(timeout=timeout)
        if (answer.get("lang"), answer.get("driver")) != (self.lang, self.driver):
            raise PeerError(f"the {self.name} peer says it is {answer}", answer)
        return answer

    def close(self, timeout: float = 30.0) -> None:
        """Closes stdin, which ends the peer; kills it when it has not ended after ``timeout``."""
        if self.proc.stdin and not self.proc.stdin.closed:
            with contextlib.suppress(BrokenPipeError):  # it had exited
                self.proc.stdin.close()
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self) -> Peer:
        return self

    def __exit__(self, *exc: object) -> None:  # closes it however the block ended
        self.close()
