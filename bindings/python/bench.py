"""Client CPU per lock cycle (acquire + release): ddblock versus boto3, same server, one run.

    source compat-tests/.run/env        # DDBLOCK_TEST_DYNALITE (compat-tests/servers.sh start)
    bindings/python/.venv/bin/python bindings/python/bench.py [--cycles 2000] [--endpoint URL]

Both clients send two conditional requests per cycle (two round trips each):
  ddblock  UpdateItem SET value = owner, expires_at, the attempt id, fence + 1
             if attribute_not_exists(#key) OR #expires_at < :now - margin
             (ReturnValues=UPDATED_NEW, ReturnValuesOnConditionCheckFailure=ALL_OLD),
           then DeleteItem if #value = :owner (ReturnValuesOnConditionCheckFailure=ALL_OLD)
  boto3    the same cycle written by hand as Laravel does it: PutItem {key, value: owner,
             expires_at} if attribute_not_exists(#key) OR #expires_at < :now, then the same
             DeleteItem (both with ReturnValuesOnConditionCheckFailure=ALL_OLD)
(docs/format.md lists ddblock's requests.)
CPU is user + system time of this process (all threads, including ddblock's tokio runtime) from
getrusage(RUSAGE_SELF); the server runs in its own process and is not counted. Printed, not
asserted. Build the binding in release mode first (maturin develop --release): a debug build says
nothing about ddblock's cost.
"""

from __future__ import annotations

import argparse
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


def measure(label: str, cycles: int, warmup: int, cycle: Callable[[], None]) -> tuple[float, float]:
    for _ in range(warmup):  # connections, caches, and the server's JIT
        cycle()
    c0, w0 = cpu(), time.perf_counter()
    for _ in range(cycles):
        cycle()
    c1, w1 = cpu(), time.perf_counter()
    cpu_us = (c1 - c0) / cycles * 1e6
    wall_us = (w1 - w0) / cycles * 1e6
    print(f"{label:<10} {cpu_us:10.0f} {wall_us:10.0f}")
    return cpu_us, wall_us


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--cycles", type=int, default=2000)
    ap.add_argument("--warmup", type=int, default=500, help="cycles before each measurement")
    ap.add_argument("--endpoint", default=os.environ.get("DDBLOCK_TEST_DYNALITE"))
    args = ap.parse_args()
    if not args.endpoint:
        print("set DDBLOCK_TEST_DYNALITE or pass --endpoint", file=sys.stderr)
        return 2
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "test")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "test")
    os.environ["AWS_EC2_METADATA_DISABLED"] = "true"

    client: Any = boto3.client("dynamodb", endpoint_url=args.endpoint, region_name="us-east-1")
    table = f"bench_{secrets.token_hex(4)}"
    client.create_table(
        TableName=table,
        AttributeDefinitions=[{"AttributeName": "key", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "key", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )
    while client.describe_table(TableName=table)["Table"]["TableStatus"] != "ACTIVE":
        time.sleep(0.01)

    try:
        store = ddblock.Store(table, endpoint_url=args.endpoint, region="us-east-1")
        lock = store.lock("bench", ttl=30)

        def ddblock_cycle() -> None:
            if not lock.acquire(blocking=False) or not lock.release():
                raise AssertionError("ddblock cycle failed")

        owner = secrets.token_urlsafe(12)[:16]
        stored_owner = f's:{len(owner)}:"{owner}";'

        def boto3_cycle() -> None:
            now = int(time.time())
            client.put_item(
                TableName=table,
                Item={
                    "key": {"S": "bench-boto3"},
                    "value": {"S": stored_owner},
                    "expires_at": {"N": str(now + 30)},
                },
                ConditionExpression="attribute_not_exists(#key) OR #expires_at < :now",
                ExpressionAttributeNames={"#key": "key", "#expires_at": "expires_at"},
                ExpressionAttributeValues={":now": {"N": str(now)}},
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
            client.delete_item(
                TableName=table,
                Key={"key": {"S": "bench-boto3"}},
                ConditionExpression="#value = :owner",
                ExpressionAttributeNames={"#value": "value"},
                ExpressionAttributeValues={":owner": {"S": stored_owner}},
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )

        print(f"{args.cycles} lock cycles (acquire + release) against {args.endpoint}")
        versions = f"ddblock {ddblock.__version__}, boto3 {boto3.__version__}"
        print(f"python {sys.version.split()[0]}, {versions}")
        print(f"{'client':<10} {'CPU us':>10} {'wall us':>10}   per cycle")
        # Alternate the two to spread any drift in the server's speed.
        d1, _ = measure("ddblock", args.cycles // 2, args.warmup, ddblock_cycle)
        b1, _ = measure("boto3", args.cycles // 2, args.warmup, boto3_cycle)
        d2, _ = measure("ddblock", args.cycles // 2, args.warmup, ddblock_cycle)
        b2, _ = measure("boto3", args.cycles // 2, args.warmup, boto3_cycle)
        d, b = (d1 + d2) / 2, (b1 + b2) / 2
        print(f"ddblock CPU per cycle is {d / b:.2f} of boto3's ({b / d:.1f}x less); goal <= 0.33")
    finally:
        client.delete_table(TableName=table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
