"""Lock cycles (acquire + release) of the Python binding: CPU against boto3, requests, scaling.

    compat-tests/servers/servers.sh start && source compat-tests/.run/env   # DDBLOCK_TEST_DYNALITE
    bindings/python/.venv/bin/python bindings/python/bench.py [--cycles 2000] [--endpoint URL]

Modes (compat-tests/bench/run.sh runs all of them with --json, which prints one JSON line):
  cpu      ddblock versus boto3 sending the same two requests per cycle, alternately (the default)
  cycles   N plain cycles with the binding (the bench counts their requests through a proxy)
  scaling  --locks N asyncio tasks, each cycling its own lock for --secs seconds

The two requests of a cycle, as ddblock sends them:
  UpdateItem SET value, expires_at, ddblock_attempt, ddblock_fence
             if attribute_not_exists(#key) OR #expires_at < :now - margin
             (ReturnValues=UPDATED_NEW, ReturnValuesOnConditionCheckFailure=ALL_OLD)
  DeleteItem if #value = :owner  (ReturnValuesOnConditionCheckFailure=ALL_OLD)
CPU is user + system time of this process (all threads, including ddblock's tokio runtime) from
getrusage(RUSAGE_SELF); the server runs in its own process and is not counted. Printed, not
asserted. Build the binding in release mode first (maturin develop --release): a debug build says
nothing about ddblock's cost.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import secrets
import sys
import time
from typing import Any, Callable

import boto3

import ddblock


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def measure(cycles: int, warmup: int, cycle: Callable[[], None]) -> tuple[float, float]:
    """CPU and wall microseconds per cycle, after `warmup` cycles."""
    for _ in range(warmup):  # connections, caches, and the server's JIT
        cycle()
    c0, w0 = cpu(), time.perf_counter()
    for _ in range(cycles):
        cycle()
    c1, w1 = cpu(), time.perf_counter()
    return (c1 - c0) / cycles * 1e6, (w1 - w0) / cycles * 1e6


def boto3_cycle_fn(client: Any, table: str) -> Callable[[], None]:
    """The same two requests as ddblock's cycle, sent with boto3."""
    owner = secrets.token_urlsafe(12)[:16]
    stored_owner = {"S": f's:{len(owner)}:"{owner}";'}
    key = {"key": {"S": "bench-boto3"}}

    def cycle() -> None:
        now = int(time.time())
        client.update_item(
            TableName=table,
            Key=key,
            UpdateExpression="SET #value = :owner, #expires_at = :expires_at, "
            "#attempt = :attempt, #fence = if_not_exists(#fence, :fence_base) + :one",
            ConditionExpression="attribute_not_exists(#key) OR #expires_at < :now",
            ExpressionAttributeNames={
                "#key": "key",
                "#value": "value",
                "#expires_at": "expires_at",
                "#attempt": "ddblock_attempt",
                "#fence": "ddblock_fence",
            },
            ExpressionAttributeValues={
                ":owner": stored_owner,
                ":expires_at": {"N": str(now + 30)},
                ":attempt": {"S": secrets.token_urlsafe(12)[:16]},
                ":fence_base": {"N": str(time.time_ns() // 1000)},
                ":one": {"N": "1"},
                ":now": {"N": str(now - 2)},
            },
            ReturnValues="UPDATED_NEW",
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
        client.delete_item(
            TableName=table,
            Key=key,
            ConditionExpression="#value = :owner",
            ExpressionAttributeNames={"#value": "value"},
            ExpressionAttributeValues={":owner": stored_owner},
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )

    return cycle


async def scaling(store: ddblock.AsyncStore, locks: int, secs: float) -> dict[str, float]:
    """`locks` tasks, each cycling its own lock until `secs` have passed."""
    stop = time.perf_counter() + secs
    done = 0

    async def task(i: int) -> None:
        nonlocal done
        lock = store.lock(f"py{i}", ttl=10)
        while time.perf_counter() < stop:
            if not await lock.acquire(blocking=False) or not await lock.release():
                raise AssertionError("ddblock cycle failed")
            done += 1

    c0, w0 = cpu(), time.perf_counter()
    await asyncio.gather(*(task(i) for i in range(locks)))
    c1, w1 = cpu(), time.perf_counter()
    n = max(done, 1)
    return {"cycles": done, "cycles_per_sec": n / (w1 - w0), "cpu_us": (c1 - c0) / n * 1e6}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--mode", choices=["cpu", "cycles", "scaling"], default="cpu")
    ap.add_argument("--cycles", type=int, default=2000)
    ap.add_argument("--warmup", type=int, default=500, help="cycles before each measurement")
    ap.add_argument("--endpoint", default=os.environ.get("DDBLOCK_TEST_DYNALITE"))
    ap.add_argument("--table", help="an existing table (default: a fresh one, deleted after)")
    ap.add_argument("--locks", type=int, default=1, help="scaling: concurrent locks")
    ap.add_argument("--secs", type=float, default=3.0, help="scaling: seconds")
    ap.add_argument("--json", action="store_true", help="print one JSON line")
    args = ap.parse_args()
    if not args.endpoint:
        print("set DDBLOCK_TEST_DYNALITE or pass --endpoint", file=sys.stderr)
        return 2
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "test")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "test")
    os.environ["AWS_EC2_METADATA_DISABLED"] = "true"

    client: Any = boto3.client("dynamodb", endpoint_url=args.endpoint, region_name="us-east-1")
    opts: dict[str, Any] = {"endpoint_url": args.endpoint, "region": "us-east-1", "prefix": ""}
    table = args.table
    if table is None:  # Laravel's table, as ddblock creates it (ACTIVE when this returns)
        table = f"bench_{secrets.token_hex(4)}"
        ddblock.Store(table, **opts).create_table(ttl=False)

    result: dict[str, Any] = {
        "python": sys.version.split()[0],
        "ddblock": ddblock.__version__,
        "boto3": boto3.__version__,
    }
    try:
        if args.mode == "scaling":
            result |= asyncio.run(scaling(ddblock.AsyncStore(table, **opts), args.locks, args.secs))
        else:
            lock = ddblock.Store(table, **opts).lock("py-bench", ttl=30)

            def ddblock_cycle() -> None:
                if not lock.acquire(blocking=False) or not lock.release():
                    raise AssertionError("ddblock cycle failed")

            if args.mode == "cycles":
                for _ in range(args.cycles):
                    ddblock_cycle()
                result["cycles"] = args.cycles
            else:
                boto3_cycle = boto3_cycle_fn(client, table)
                half = max(args.cycles // 2, 1)
                # Alternate the two to spread any drift in the server's speed.
                d1 = measure(half, args.warmup, ddblock_cycle)
                b1 = measure(half, args.warmup, boto3_cycle)
                d2 = measure(half, args.warmup, ddblock_cycle)
                b2 = measure(half, args.warmup, boto3_cycle)
                result |= {
                    "cycles": 2 * half,
                    "ddblock_cpu_us": (d1[0] + d2[0]) / 2,
                    "ddblock_wall_us": (d1[1] + d2[1]) / 2,
                    "boto3_cpu_us": (b1[0] + b2[0]) / 2,
                    "boto3_wall_us": (b1[1] + b2[1]) / 2,
                }
    finally:
        if args.table is None:
            client.delete_table(TableName=table)

    if args.json:
        print(json.dumps(result))
    elif args.mode == "cpu":
        print(f"{result['cycles']} lock cycles (acquire + release) against {args.endpoint}")
        print(f"python {result['python']}, ddblock {result['ddblock']}, boto3 {result['boto3']}")
        print(f"{'client':<10} {'CPU us':>10} {'wall us':>10}   per cycle")
        for who in ("ddblock", "boto3"):
            print(f"{who:<10} {result[who + '_cpu_us']:10.0f} {result[who + '_wall_us']:10.0f}")
        ratio = result["ddblock_cpu_us"] / result["boto3_cpu_us"]
        print(f"ddblock CPU per cycle is {ratio:.2f} of boto3's ({1 / ratio:.1f}x less)")
    else:
        print(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
