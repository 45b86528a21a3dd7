"""The s3 lock backend from Python: ``Store(..., backend="s3", bucket=...)`` on moto's S3 (dynalite
has no S3). The constructor only converts; the lock rules are the core's (core/tests/s3_lock.rs)."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
from typing import Any

import boto3
import pytest

import ddblock
from conftest import FAST, endpoint_of


def s3_client(endpoint: str) -> Any:
    return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")


@pytest.fixture
def moto() -> str:
    return endpoint_of("moto")


@pytest.fixture
def bucket(moto: str) -> str:
    name = f"py-locks-{os.getpid()}-{secrets.token_hex(4)}"
    s3_client(moto).create_bucket(Bucket=name)
    return name


def lock_object(endpoint: str, bucket: str, key: str) -> dict[str, Any] | None:
    try:
        body = s3_client(endpoint).get_object(Bucket=bucket, Key=key)["Body"].read()
    except s3_client(endpoint).exceptions.NoSuchKey:
        return None
    obj: dict[str, Any] = json.loads(body)
    return obj


def test_locks_in_a_bucket(moto: str, bucket: str) -> None:
    # No table: the locks never touch it.
    store = ddblock.Store(
        "no-such-table", endpoint_url=moto, prefix="app_", backend="s3", bucket=bucket, backoff=FAST
    )
    a = store.lock("orders", ttl=30)
    assert a.acquire(blocking=False)
    obj = lock_object(moto, bucket, "app_orders")
    assert obj is not None
    assert obj["owner"] == {"S": f's:16:"{a.owner}";'}
    fence = a.fence
    assert fence is not None and obj["fence"] == fence
    b = store.lock("orders", ttl=30)
    assert not b.acquire(blocking=False)
    holder = b.holder()
    assert holder is not None and holder.owner == a.owner
    assert not b.acquire(timeout=0.1)
    assert not b.release()
    assert a.refresh(60)
    assert a.release()
    assert lock_object(moto, bucket, "app_orders") is None
    with store.lock("orders", ttl=30) as held:
        assert held.owned()
        assert held.fence is not None and held.fence > fence
    assert not store.lock("orders", ttl=30).locked()


def test_async_store_and_environment(
    moto: str, bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DDBLOCK_BACKEND", "s3")
    monkeypatch.setenv("DDBLOCK_S3_BUCKET", bucket)
    store = ddblock.Store("no-such-table", endpoint_url=moto, prefix="env_")

    async def main() -> None:
        lock = store.aio.lock("job", ttl=10)
        assert await lock.acquire(blocking=False)
        assert lock_object(moto, bucket, "env_job") is not None
        assert await lock.release()

    asyncio.run(main())
    # An explicit backend wins over DDBLOCK_BACKEND: this one uses the (missing) table.
    with pytest.raises(ddblock.TableNotFound):
        ddblock.Store("no-such-table", endpoint_url=moto, backend="dynamodb").lock(
            "job", ttl=10
        ).acquire(blocking=False)


def test_configuration_errors(moto: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DDBLOCK_S3_BUCKET", raising=False)
    with pytest.raises(ddblock.ConfigError, match="needs a bucket"):
        ddblock.Store(endpoint_url=moto, backend="s3")
    with pytest.raises(ddblock.ConfigError, match="unknown lock backend"):
        ddblock.Store(endpoint_url=moto, backend="s4")
    store = ddblock.Store(endpoint_url=moto, backend="s3", bucket="no-such-bucket-py")
    with pytest.raises(ddblock.ConfigError, match="does not exist"):
        store.lock("x", ttl=5).acquire(blocking=False)


S3_CHECKS = [
    "s3_create_if_absent",
    "s3_etag_changes",
    "s3_if_match_put",
    "s3_if_match_delete",
    "s3_versioning",
    "s3_cleanup",
]


def test_doctor_probes_the_bucket(moto: str, bucket: str) -> None:
    # The probe's rules and its failures through a proxy are the core's (admin/tests/s3_probe.rs):
    # here, that every result reaches Python.
    store = ddblock.Store(
        "no-such-table", endpoint_url=moto, prefix="app_", backend="s3", bucket=bucket
    )
    report = store.doctor(scan=False)
    assert report["healthy"], report
    checks = {c["id"]: c for c in report["checks"]}
    assert [c["id"] for c in report["checks"]][-6:] == S3_CHECKS
    for id in S3_CHECKS:
        assert checks[id]["status"] == "ok", checks[id]
        assert checks[id]["detail"]
    assert checks["table"]["status"] == "warn", "no table: the locks do not need one"
    s3 = report["s3"]
    assert s3["bucket"] == bucket and s3["cleaned_up"] is True
    assert s3["scratch_key"].startswith("app_ddblock-doctor-probe-")
    assert "Contents" not in s3_client(moto).list_objects_v2(Bucket=bucket), "removed"

    async def main() -> dict[str, Any]:
        return await store.aio.doctor(scan=False)

    checks_async = [c["id"] for c in asyncio.run(main())["checks"]]
    assert checks_async[-6:] == S3_CHECKS
    # Locks in the table: no probe.
    assert ddblock.Store("no-such-table", endpoint_url=moto).doctor(scan=False)["s3"] is None
