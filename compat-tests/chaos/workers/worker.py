"""The Python chaos worker: loops wait -> guarded write -> work -> guarded write -> release on
random keys through the ddblock binding, one JSON line per cycle (the same fields as the Rust
worker, see compat-tests/chaos/src/checker.rs `Cycle`). Configured by the CHAOS_* environment.
The guarded writes go through boto3 with the same request as every other worker."""

from __future__ import annotations

import json
import os
import random
import time
from typing import Any

import boto3
import botocore.config
import botocore.exceptions

import ddblock

LEASE_SAFETY = 1.5
UPDATE = "SET #fence = :fence, #owner = :owner, #writes = if_not_exists(#writes, :zero) + :one"
CONDITION = "attribute_not_exists(#fence) OR #fence <= :fence"


def env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise SystemExit(f"{name} is required")
    return value


def main() -> None:
    endpoint = env("CHAOS_ENDPOINT")
    table = env("CHAOS_TABLE")
    keys = env("CHAOS_KEYS").split(",")
    worker = env("CHAOS_WORKER")
    ttl = int(env("CHAOS_TTL"))
    work = int(env("CHAOS_WORK_MS")) / 1000
    wait = int(env("CHAOS_WAIT_MS")) / 1000
    until = time.monotonic() + int(env("CHAOS_DURATION_MS")) / 1000
    target = int(env("CHAOS_ACQUISITIONS"))
    rng = random.Random(int(env("CHAOS_SEED")))
    store = ddblock.Store(
        table,
        endpoint_url=endpoint,
        prefix=env("CHAOS_PREFIX"),
        layout="laravel12",
        clock_skew_margin=float(env("CHAOS_MARGIN")),
    )
    client = boto3.client(
        "dynamodb",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
        config=botocore.config.Config(
            connect_timeout=2, read_timeout=3, retries={"max_attempts": 3, "mode": "standard"}
        ),
    )

    def guarded_write(name: str, owner: str, fence: int) -> str:
        try:
            client.update_item(
                TableName=table,
                Key={"key": {"S": f"res_{name}"}},
                UpdateExpression=UPDATE,
                ConditionExpression=CONDITION,
                ExpressionAttributeNames={"#fence": "fence", "#owner": "owner", "#writes": "writes"},
                ExpressionAttributeValues={
                    ":fence": {"N": str(fence)},
                    ":owner": {"S": owner},
                    ":zero": {"N": "0"},
                    ":one": {"N": "1"},
                },
            )
            return "accepted"
        except client.exceptions.ConditionalCheckFailedException:
            return "refused"

    acquired = 0
    with open(env("CHAOS_OUT"), "a", encoding="utf-8") as out:
        while acquired < target and time.monotonic() < until:
            name = keys[rng.randrange(len(keys))]
            lock = store.lock(name, ttl)
            c: dict[str, Any] = {
                "lang": "python",
                "worker": worker,
                "name": name,
                "owner": lock.owner,
                "writes": [],
                "errors": [],
                "untyped": [],
            }

            def failed(op: str, e: BaseException) -> None:
                if isinstance(e, ddblock.DdblockError):
                    c["errors"].append([op, type(e).__name__])
                elif isinstance(e, (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError)):
                    response = getattr(e, "response", None) or {}
                    code = response.get("Error", {}).get("Code")
                    c["errors"].append([op, code or type(e).__name__])
                else:
                    c["untyped"].append(f"{op}: {type(e).__name__}: {e}")

            try:
                got = lock.acquire(timeout=max(0.0, min(wait, until - time.monotonic())))
                c["acquire"] = "acquired" if got else "held"
            except Exception as e:  # noqa: BLE001 - every error is classified and recorded
                c["acquire"] = "error"
                failed("acquire", e)
                got = False
            if got:
                acquired += 1
                c["fence"] = lock.fence
                for i in range(2):
                    if i == 1:
                        time.sleep(work)
                    remaining = lock.remaining()
                    fence = lock.fence
                    if fence is None or remaining is None or remaining < LEASE_SAFETY:
                        c["writes"].append("skipped")
                        continue
                    try:
                        c["writes"].append(guarded_write(name, lock.owner, fence))
                    except Exception as e:  # noqa: BLE001
                        c["writes"].append("error")
                        failed("guarded_write", e)
                try:
                    c["release"] = "released" if lock.release() else "not_held"
                except Exception as e:  # noqa: BLE001
                    c["release"] = "error"
                    failed("release", e)
            out.write(json.dumps(c) + "\n")
            out.flush()


if __name__ == "__main__":
    main()
