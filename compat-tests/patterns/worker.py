"""A Python process of the mixed-language concurrency test (concurrency.py): the binding's
once-only guard or compare-and-set ``update``, started on a signal.

    python worker.py once EVENT...    claims each event (``with store.once(...)``), done when won
    python worker.py cas KEY N        N increments of KEY through ``store.update``
    python worker.py lock NAME COUNTER LOG N
                                      N times: hold lock NAME (``with store.lock(...)``) and
                                      increment the number in file COUNTER (read, pause, write),
                                      appending ``lang fence start_ns end_ns`` to file LOG
    python worker.py takeover NAME... one attempt at each lock (expired ones): what it won

Configuration from Laravel's variables. Prints ``ready``, waits for a line on stdin, then prints
one JSON line.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

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
    elif mode == "lock":
        name, counter, log, n = args[0], Path(args[1]), Path(args[2]), int(args[3])
        for _ in range(n):
            with store.lock(name, ttl=30, timeout=120) as lock:
                start = time.time_ns()
                value = int(counter.read_text())
                time.sleep(0.01)
                counter.write_text(str(value + 1))
                with log.open("a") as f:
                    f.write(f"python {lock.fence} {start} {time.time_ns()}\n")
        print(json.dumps({"lang": "python", "held": n}), flush=True)
    elif mode == "takeover":
        won = {}
        for name in args:
            lock = store.lock(name, ttl=30)
            if lock.acquire(blocking=False):
                won[name] = lock.fence
        print(json.dumps({"lang": "python", "won": won}), flush=True)
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
