"""Writes the blocking API (ddblock/_sync.py) from the asyncio API (ddblock/_aio.py).

The two APIs are one source: every native operation returns a ``Pending`` that is either
awaited (``await p``) or waited for (``p.wait()``). This script rewrites the async source
token by token:

- ``async def`` -> ``def``, ``async with`` -> ``with``;
- ``await EXPR`` -> ``EXPR.wait()``, where EXPR is the dotted call right after ``await``;
- ``await work(...)`` -> ``work(...)``: ``work`` is the caller's own function (a coroutine
  function in the asyncio API, a plain one in the blocking API), not a native call;
- ``__aenter__``/``__aexit__`` -> ``__enter__``/``__exit__``;
- ``AsyncStore``/``AsyncLock`` -> ``Store``/``Lock``; a few docstring phrases.

    python tools/unasync.py           # write ddblock/_sync.py
    python tools/unasync.py --check   # exit 1 if ddblock/_sync.py is not what it would write
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE.parent / "python" / "ddblock" / "_aio.py"
TARGET = HERE.parent / "python" / "ddblock" / "_sync.py"

#: A call of the caller's own function: awaited in the asyncio API, called in the blocking one.
USER_CALL = "work("

HEADER = '''"""Store and Lock: the blocking API of ddblock.

GENERATED from _aio.py by tools/unasync.py: do not edit; edit _aio.py and rerun it.
Every call blocks with the GIL released, so other Python threads run meanwhile.
"""
'''

WORDS = [
    ("AsyncStore", "Store"),
    ("AsyncLock", "Lock"),
    ("AsyncOnce", "Once"),
    ("AsyncClaim", "Claim"),
    ("_Work = Callable[..., Awaitable[_T]]", "_Work = Callable[..., _T]"),
    ("from collections.abc import Awaitable, Callable,", "from collections.abc import Callable,"),
    ("async with store.once(", "with store.once("),
    (
        "``await once.run(handler)`` does the same around a coroutine function.",
        "``once.run(handler)`` does the same around a function.",
    ),
    ("__aenter__", "__enter__"),
    ("__aexit__", "__exit__"),
    ("(``await`` each call)", "(blocking calls)"),
    (
        "Calls run on the binding's runtime: the event loop is never blocked, and cancelling the\n"
        "    awaiting task cancels the call.",
        "Share one store between threads: each call releases the GIL while it waits on DynamoDB,\n"
        "    and Ctrl-C interrupts a wait for a lock.",
    ),
]


def _call_end(text: str, start: int) -> int:
    """The end of the dotted call expression starting at ``start`` (names, dots, balanced ())."""
    i = start
    depth = 0
    while i < len(text):
        c = text[i]
        if c == "(":
            depth += 1
        elif c == ")":
            if depth == 0:
                break
            depth -= 1
        elif depth == 0 and not (c.isalnum() or c in "._"):
            break
        i += 1
    if depth != 0:
        raise SystemExit(f"unasync: unbalanced parentheses after `await` at offset {start}")
    return i


def convert(src: str) -> str:
    """The blocking module for the async module ``src``."""
    body = src[src.index('"""', 3) + 3 :]  # drop the source's module docstring
    out = []
    i = 0
    for m in re.finditer(r"\bawait ", body):
        out.append(body[i : m.start()])
        end = _call_end(body, m.end())
        expr = body[m.end() : end]
        if not expr.endswith(")"):
            raise SystemExit(f"unasync: `await {expr}` is not a call; await only native calls")
        out.append(expr if expr.startswith(USER_CALL) else expr + ".wait()")
        i = end
    out.append(body[i:])
    text = "".join(out)
    text = re.sub(r"\basync def ", "def ", text)
    text = re.sub(r"\basync with ", "with ", text)
    for a, b in WORDS:
        text = text.replace(a, b)
    if re.search(r"\b(async|await)\b", text):
        raise SystemExit("unasync: `async`/`await` left in the output; keep the source simple")
    return HEADER + "\n" + text.lstrip("\n")


def main() -> int:
    want = convert(SOURCE.read_text(encoding="utf-8"))
    if "--check" in sys.argv[1:]:
        have = TARGET.read_text(encoding="utf-8") if TARGET.exists() else ""
        if have != want:
            print(f"{TARGET} is out of date: run python tools/unasync.py", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(want, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
