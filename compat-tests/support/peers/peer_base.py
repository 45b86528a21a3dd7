"""What the Python peers (peer.py, peer_cli.py) share: the request loop of the peer protocol
(PROTOCOL.md, beside this file), a request's fields and the required variables. Standard library
only (the CLI peer runs on a bare python3)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable

Request = dict[str, Any]
Answer = dict[str, Any]


def env_required(name: str) -> str:
    """A DDB_* variable without a default; a peer started without it exits."""
    value = os.environ.get(name)
    if not value:
        program = Path(sys.argv[0]).name
        raise SystemExit(
            f"{program}: {name} is required (see compat-tests/support/peers/PROTOCOL.md)"
        )
    return value


def field(req: Request, name: str) -> Any:
    """A request's required field."""
    if name not in req:
        raise ValueError(f"field {name!r} is required")
    return req[name]


class BasePeer:
    """A peer over the core, ``lang`` in its ``hello``: ``ops`` maps each op it supports to its
    handler (a request in, the answer's fields out), ``hello`` and ``now`` included; ``serve``
    answers stdin's requests on stdout, one line each, until stdin closes."""

    def __init__(self, lang: str, ops: dict[str, Callable[[Request], Answer]]) -> None:
        self.ops: dict[str, Callable[[Request], Answer]] = {
            "hello": lambda _: {"lang": lang, "driver": "core", "now": time.time()},
            "now": lambda _: {"now": int(time.time())},
            **ops,
        }

    def failed(self, e: Exception) -> Answer:
        """The ok:false answer to a request that raised ``e`` (a peer adds the error's kind)."""
        return {"ok": False, "error": f"{type(e).__name__}: {e}"}

    def answer(self, line: str) -> Answer:
        """The answer to one request line; a failure answers ok:false, the peer goes on."""
        try:
            req = json.loads(line)
            if not isinstance(req, dict):
                raise ValueError("each line must be a JSON object")
            op = req.get("op")
            handler = self.ops.get(op) if isinstance(op, str) else None
            if handler is None:
                return {"ok": False, "error": f"unsupported: {op}"}
            return {"ok": True, **handler(req)}
        except Exception as e:
            return self.failed(e)

    def serve(self) -> None:
        for line in sys.stdin:
            if line.strip():
                print(json.dumps(self.answer(line)), flush=True)
