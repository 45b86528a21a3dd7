"""The loops of the Python peer (peer.py): ``cycles``, the load worker, and ``chaos``, the chaos
worker (docs/reliability.md). Each appends one JSON line per cycle to a file, under an exclusive
``flock`` so that several peers can share it (PROTOCOL.md)."""

from __future__ import annotations

import fcntl
import json
import os
import random
import time
from typing import IO, Any

import ddblock

#: Seconds of lease a chaos worker wants left before a guarded write (as every language's).
LEASE_SAFETY = 1.5
#: The guarded write: the same conditional UpdateItem on ``res_<key>`` in every language.
UPDATE = "SET #fence = :fence, #owner = :owner, #writes = if_not_exists(#writes, :zero) + :one"
CONDITION = "attribute_not_exists(#fence) OR #fence <= :fence"


def append(out: IO[str], record: dict[str, Any]) -> None:
    """One line, under an exclusive lock: lines of peers sharing the file never interleave."""
    fcntl.flock(out, fcntl.LOCK_EX)
    try:
        out.write(json.dumps(record) + "\n")
        out.flush()
    finally:
        fcntl.flock(out, fcntl.LOCK_UN)


def cycles(store: ddblock.Store, r: dict[str, Any]) -> dict[str, Any]:
    """The load worker: per cycle a fresh lock on a name, one acquire (or with ``block`` a wait
    until ``until``), hold ``work_ms``, release; a 5-20 ms pause when not acquired. The same
    record as ``compat-tests/laravel/harness.php``'s."""
    names = [n for n in r["names"] if n]
    ttl = int(r["ttl"])
    work = float(r.get("work_ms", 0)) / 1000
    think = float(r.get("think_ms", 0)) / 1000
    until = float(r["until"]) if r.get("until") is not None else None
    block = bool(r.get("block"))
    pid = os.getpid()
    seed = r.get("seed")
    rng = random.Random(None if seed is None else int(seed) + pid)
    store.lock(names[0], ttl).holder()  # the client is built and connected before the start
    time.sleep(max(0.0, float(r.get("start_at") or 0) - time.time()))
    summary = {"cycles": 0, "acquired": 0, "released": 0, "release_false": 0, "errors": 0}
    with open(r["record"], "a", encoding="utf-8") as out:
        for i in range(int(r["cycles"])):
            if until is not None and time.time() >= until:
                break
            name = rng.choice(names) if seed is not None else names[(pid + i) % len(names)]
            lock = store.lock(name, ttl)
            rec: dict[str, Any] = {
                "lang": "python",
                "driver": "core",
                "pid": pid,
                "name": name,
                "owner": lock.owner,
                "acquired": False,
                "t_try": time.time(),
                "t_acq": None,
                "t_rel": None,
                "t_rel_end": None,
                "released": False,
            }
            try:
                if block:
                    wait = None if until is None else max(0.0, until - time.time())
                    rec["acquired"] = lock.acquire(blocking=True, timeout=wait)
                else:
                    rec["acquired"] = lock.acquire(blocking=False)
                if rec["acquired"]:
                    rec["t_acq"] = time.time()
                    time.sleep(work)
                    rec["t_rel"] = time.time()
                    rec["released"] = lock.release()  # False: stuck until it expires
                    rec["t_rel_end"] = time.time()
            except Exception as e:
                rec["error"] = f"{type(e).__name__}: {str(e)[:300]}"
                summary["errors"] += 1
            summary["cycles"] += 1
            summary["acquired"] += rec["acquired"]
            summary["released"] += rec["released"]
            summary["release_false"] += (
                rec["acquired"] and not rec["released"] and "error" not in rec
            )
            append(out, rec)
            if not rec["acquired"] and not block:
                time.sleep(rng.uniform(0.005, 0.02))
            elif rec["acquired"] and think > 0:
                time.sleep(think)
    return summary


def chaos(store: ddblock.Store, r: dict[str, Any]) -> dict[str, Any]:
    """The chaos worker: wait -> guarded write -> work -> guarded write -> release on random
    keys until ``acquisitions`` or ``duration_ms``; one record per cycle with the fields of
    ``compat-tests/chaos/src/checker.rs`` ``Cycle``. The guarded writes go through boto3
    (imported here: it takes a quarter of a second, which the other requests need not wait)."""
    import boto3
    import botocore.config
    import botocore.exceptions

    keys = list(r["keys"])
    ttl = int(r["ttl"])
    work = int(r["work_ms"]) / 1000
    wait = int(r["wait_ms"]) / 1000
    until = time.monotonic() + int(r["duration_ms"]) / 1000
    target = int(r["acquisitions"])
    worker = str(r["worker"])
    rng = random.Random(int(r["seed"]))
    table = os.environ["DDB_TABLE"]
    client = boto3.client(
        "dynamodb",
        endpoint_url=os.environ["DDB_ENDPOINT"],
        region_name=os.environ.get("DDB_REGION") or "us-east-1",
        aws_access_key_id=os.environ.get("AWS_ACCESS_KEY_ID", "test"),
        aws_secret_access_key=os.environ.get("AWS_SECRET_ACCESS_KEY", "test"),
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
                ExpressionAttributeNames={
                    "#fence": "fence",
                    "#owner": "owner",
                    "#writes": "writes",
                },
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

    # The counter's client, straight to the server (no fault proxy): an unguarded
    # read-modify-write in each critical section (compat-tests/chaos, "counter").
    counter_endpoint = os.environ.get("DDB_COUNTER_ENDPOINT")
    direct = (
        boto3.client(
            "dynamodb",
            endpoint_url=counter_endpoint,
            region_name=os.environ.get("DDB_REGION") or "us-east-1",
            aws_access_key_id=os.environ.get("AWS_ACCESS_KEY_ID", "test"),
            aws_secret_access_key=os.environ.get("AWS_SECRET_ACCESS_KEY", "test"),
        )
        if counter_endpoint
        else None
    )

    def count(name: str) -> None:
        assert direct is not None
        key = {"key": {"S": f"cnt_{name}"}}
        item = direct.get_item(TableName=table, Key=key, ConsistentRead=True).get("Item")
        n = int(item["n"]["N"]) if item else 0
        time.sleep(work)
        direct.put_item(TableName=table, Item={**key, "n": {"N": str(n + 1)}})

    cycles, acquired = 0, 0
    with open(r["out"], "a", encoding="utf-8") as out:
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

            def failed(op: str, e: BaseException, c: dict[str, Any] = c) -> None:
                if isinstance(e, ddblock.DdblockError):
                    c["errors"].append([op, type(e).__name__])
                elif isinstance(
                    e, (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError)
                ):
                    response = getattr(e, "response", None) or {}
                    code = response.get("Error", {}).get("Code")
                    c["errors"].append([op, code or type(e).__name__])
                else:
                    c["untyped"].append(f"{op}: {type(e).__name__}: {e}")

            try:
                got = lock.acquire(timeout=max(0.0, min(wait, until - time.monotonic())))
                c["acquire"] = "acquired" if got else "held"
            except Exception as e:
                c["acquire"] = "error"
                failed("acquire", e)
                got = False
            if got:
                acquired += 1
                c["fence"] = lock.fence
                for i in range(2):
                    if i == 1:
                        left = lock.remaining()
                        if direct is not None and left is not None and left >= LEASE_SAFETY:
                            try:
                                count(name)
                                c["counter"] = "counted"
                            except Exception as e:
                                c["counter"] = "error"
                                failed("counter", e)
                        else:
                            time.sleep(work)
                    remaining = lock.remaining()
                    fence = lock.fence
                    if fence is None or remaining is None or remaining < LEASE_SAFETY:
                        c["writes"].append("skipped")
                        continue
                    try:
                        c["writes"].append(guarded_write(name, lock.owner, fence))
                    except Exception as e:
                        c["writes"].append("error")
                        failed("guarded_write", e)
                try:
                    c["release"] = "released" if lock.release() else "not_held"
                except Exception as e:
                    c["release"] = "error"
                    failed("release", e)
            cycles += 1
            append(out, c)
    return {"cycles": cycles, "acquired": acquired}
