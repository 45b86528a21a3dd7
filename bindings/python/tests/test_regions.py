"""Tables that span Regions (docs/semantics.md "Multi-Region"), through the fault proxy, which gives
DescribeTable a global table's fields, denies it, or answers a write with MRSC's
ReplicatedWriteConflictException (no local server has global tables): the table is described once
per process, whatever the number of stores and locks; a denied DescribeTable is one warning in
``logging`` and the locks go on; a global table with eventual consistency (MREC) is a ConfigError;
a replicated write conflict is retried. The per-process ones run in a process of their own."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

import pytest

import ddblock
from conftest import FaultProxy

REPLICAS = [{"RegionName": "us-east-1"}, {"RegionName": "eu-west-1"}]

#: One process: 3 stores on the table, 3 locks each, each taken and released; prints what
#: ``logging`` heard from ddblock.
SCRIPT = textwrap.dedent(
    """
    import json, logging, sys
    import ddblock

    records = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append([record.name, record.levelname, record.getMessage()])

    logging.getLogger("ddblock").addHandler(Keep())
    logging.getLogger("ddblock").setLevel(logging.WARNING)
    for s in range(3):
        store = ddblock.Store(sys.argv[2], endpoint_url=sys.argv[1], region="us-east-1")
        for i in range(3):
            lock = store.lock(f"regions-{s}-{i}", 10)
            assert lock.acquire()
            assert lock.release()
    print(json.dumps(records))
    """
)


def _one_process(proxy: FaultProxy, table: str) -> list[list[str]]:
    command = [sys.executable, "-c", SCRIPT, proxy.url, table]
    out = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 0, out.stderr
    records: list[list[str]] = json.loads(out.stdout)
    return records


def _warnings(records: list[list[str]]) -> list[list[str]]:
    return [r for r in records if r[1] == "WARNING"]


def test_one_describe_table_per_process_for_many_stores_and_locks(
    proxy: FaultProxy, table: str
) -> None:
    proxy.faults(describe_table={"Replicas": REPLICAS, "MultiRegionConsistency": "STRONG"})
    records = _one_process(proxy, table)
    stats = proxy.stats()
    assert stats["DescribeTable"] == {"forwarded_ok": 1}, stats
    # Every lock cycle after the check: its acquire and its release, nothing else.
    assert stats["UpdateItem"] == {"forwarded_ok": 9}, stats
    assert stats["DeleteItem"] == {"forwarded_ok": 9}, stats
    assert _warnings(records) == [], records


def test_a_denied_describe_table_warns_once_and_the_locks_go_on(
    proxy: FaultProxy, table: str
) -> None:
    proxy.faults(deny_ops=["DescribeTable"])
    records = _one_process(proxy, table)
    stats = proxy.stats()
    assert stats["DescribeTable"] == {"access_denied": 1}, stats
    assert stats["UpdateItem"] == {"forwarded_ok": 9}, stats
    warnings = _warnings(records)
    assert len(warnings) == 1, records
    name, _, message = warnings[0]
    assert name.startswith("ddblock."), name
    assert "dynamodb:DescribeTable" in message, message
    assert table in message, message


def _store(proxy: FaultProxy, table: str, **settings: Any) -> ddblock.Store:
    return ddblock.Store(table, endpoint_url=proxy.url, region="us-east-1", **settings)


@pytest.mark.parametrize("consistency", [None, "EVENTUAL"])
def test_an_eventual_global_table_is_a_config_error(
    proxy: FaultProxy, table: str, consistency: str | None
) -> None:
    described: dict[str, Any] = {"Replicas": REPLICAS}
    if consistency is not None:
        described["MultiRegionConsistency"] = consistency
    proxy.faults(describe_table=described)
    lock = _store(proxy, table).lock("mrec", 10)
    with pytest.raises(ddblock.ConfigError) as refused:
        lock.acquire()
    assert refused.value.kind == "config"
    message = str(refused.value)
    assert "multi-Region eventual consistency (MREC" in message, message
    assert "DDBLOCK_ALLOW_EVENTUAL_GLOBAL_TABLE=true" in message, message
    with pytest.raises(ddblock.ConfigError):
        lock.release()
    assert "UpdateItem" not in proxy.stats()
    # The setting lets someone who pins every writer to one Region go on.
    allowed = _store(proxy, table, allow_eventual_global_table="true").lock("mrec", 10)
    assert allowed.acquire()
    assert allowed.release()


def test_a_replicated_write_conflict_is_retried_by_a_try_once_acquire(
    proxy: FaultProxy, table: str
) -> None:
    conflict = "replicated_conflict"
    proxy.faults(
        describe_table={"Replicas": REPLICAS, "MultiRegionConsistency": "STRONG"},
        sequence={"UpdateItem": [conflict, conflict]},
    )
    lock = _store(proxy, table).lock("mrsc", 10)
    assert lock.acquire()
    assert proxy.stats()["UpdateItem"] == {conflict: 2, "forwarded_ok": 1}
    assert lock.release()
