"""The shared bad-input table (compat-tests/bad-input.json) through Python: each case gets the
same kind as in every other front (the rules are the core's)."""

from __future__ import annotations

import json
from typing import Any

import pytest

import ddblock
from conftest import ROOT, endpoint_of, new_table

CASES: list[dict[str, Any]] = json.loads((ROOT / "compat-tests/bad-input.json").read_text())[
    "cases"
]


def name_of(c: dict[str, Any]) -> str:
    if "name_repeat" in c:
        text, times = c["name_repeat"]
        return str(text) * int(times)
    return str(c.get("name", ""))


def run(c: dict[str, Any], endpoint: str, table: str) -> None:
    if c["op"] == "config":
        ddblock.Store(
            c.get("table", table),
            layout=c.get("layout"),
            endpoint_url=c.get("endpoint", endpoint),
        )
        return
    store = ddblock.Store(
        "ddblock_no_such_table" if c.get("table") == "missing" else table,
        endpoint_url=endpoint,
    )
    if c["op"] == "lock":
        store.lock(name_of(c), c["ttl"])
    elif c["op"] == "get":
        store.get(c["key"])
    elif c["op"] == "put":
        store.put(c["key"], c["value"], ttl=c["ttl"])
    elif c["op"] == "once":
        store.once(name_of(c), ttl=c["ttl"])
    elif c["op"] == "put_if_version":
        store.put_if_version(c["key"], c["value"], ttl=c["ttl"], version=c["version"])
    else:
        raise AssertionError(c["op"])


@pytest.mark.parametrize("case", CASES, ids=[c["case"] for c in CASES])
def test_bad_input_gets_its_kind(case: dict[str, Any]) -> None:
    endpoint = endpoint_of("moto")
    with pytest.raises(ddblock.DdblockError) as info:
        run(case, endpoint, new_table(endpoint))
    assert info.value.kind == case["kind"], str(info.value)
