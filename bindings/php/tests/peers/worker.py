"""A ddblock lock worker for the PHP driver's mixed-worker tests (bindings/php/tests/Support/Workers.php).

The Rust core through the Python binding (bindings/python, built into bindings/python/.venv),
looping like `compat-tests/php/harness.php worker` and writing the same JSON record per cycle, so
its holds are compared with stock Laravel's and the driver's on the same names:

    DDB_ENDPOINT=http://... DDB_TABLE=t DDB_LAYOUT=laravel8 DDB_PREFIX=app_ \
    W_NAMES=a,b W_CYCLES=40 W_TTL=1 W_WORK_MS=10 W_RECORD=/tmp/rec.jsonl W_SEED=7 \
    W_START_AT=1767225600.5 python worker.py

Each cycle: a fresh lock with a random owner, one acquire attempt, and when it got the lock
W_WORK_MS of work and the release; otherwise a 5-20 ms pause. Record fields: lang, driver
("core"), pid, name, acquired, t_try, t_acq, t_rel, t_rel_end, released[, error] (owners are not
recorded). Exits non-zero only when it cannot run at all.
"""

import fcntl
import json
import os
import random
import time

import ddblock


def main() -> None:
    env = os.environ
    store = ddblock.Store(
        env["DDB_TABLE"],
        prefix=env.get("DDB_PREFIX", ""),
        layout=env.get("DDB_LAYOUT", "laravel8"),
        endpoint_url=env["DDB_ENDPOINT"],
    )
    names = [n for n in env["W_NAMES"].split(",") if n]
    cycles = int(env["W_CYCLES"])
    ttl = int(env.get("W_TTL", "10"))
    work = float(env.get("W_WORK_MS", "0")) / 1000
    rng = random.Random(int(env.get("W_SEED", "0")) + os.getpid())
    store.lock(names[0], ttl).holder()  # the client is built and connected before the start
    time.sleep(max(0.0, float(env.get("W_START_AT", "0")) - time.time()))
    with open(env["W_RECORD"], "a", encoding="utf-8") as record:
        for _ in range(cycles):
            name = rng.choice(names)
            rec = {"lang": "python", "driver": "core", "pid": os.getpid(), "name": name, "acquired": False,
                   "t_try": time.time(), "t_acq": None, "t_rel": None, "t_rel_end": None, "released": False}
            try:
                lock = store.lock(name, ttl)
                rec["acquired"] = lock.acquire(blocking=False)
                if rec["acquired"]:
                    rec["t_acq"] = time.time()
                    time.sleep(work)
                    rec["t_rel"] = time.time()
                    rec["released"] = lock.release()
                    rec["t_rel_end"] = time.time()
            except Exception as e:  # recorded; the PHP test decides
                rec["error"] = f"{type(e).__name__}: {str(e)[:300]}"
            fcntl.flock(record, fcntl.LOCK_EX)
            record.write(json.dumps(rec) + "\n")
            record.flush()
            fcntl.flock(record, fcntl.LOCK_UN)
            if not rec["acquired"]:
                time.sleep(rng.uniform(0.005, 0.02))


main()
