"""A Python process of the mixed-language concurrency test (concurrency.py): the binding's
once-only guard or compare-and-set ``update``, started on a signal.

    python worker.py once EVENT...    claims each event (``with store.once(...)``), done when won
    python worker.py cas KEY N        N increments of KEY through ``store.update``

Configuration from Laravel's variables. Prints ``ready``, waits for a line on stdin, then prints
one JSON line.
"""

from __future__ import annotations

import json
import sys

import ddblock


def main() -> None:
    mode, args = sys.argv[1], sys.argv[2:]
    store = ddblock.Store(backoff=ddblock.Backoff(initial=0.002, max=0.05, jitter=1.0))
    print("ready", flush=True)
    sys.stdin.readline()
    if mode == "once":
        won = []
        for event in args:
            with store.once(event, ttl=60) as claim:
                if claim:
                    won.append(event)
        print(json.dumps({"lang": "python", "won": won}), flush=True)
    elif mode == "cas":
        key, n = args[0], int(args[1])
        rounds = 0

        def bump(v: int) -> int:
            nonlocal rounds
            rounds += 1
            return v + 1

        for _ in range(n):
            store.update(key, bump, ttl=600, attempts=10_000)
        print(json.dumps({"lang": "python", "increments": n, "conflicts": rounds - n}), flush=True)
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
