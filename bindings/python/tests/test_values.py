"""Python values <-> PHP values, through the table (both directions) and the codec."""

from __future__ import annotations

import math
from typing import Any

import pytest

import ddblock
from conftest import Raw, Server

# (python value, stored attribute exactly as Laravel writes it, value read back)
CASES: list[tuple[Any, dict[str, str], Any]] = [
    (None, {"S": "N;"}, None),
    (True, {"S": "b:1;"}, True),
    (False, {"S": "b:0;"}, False),
    (42, {"N": "42"}, 42),
    (-(2**63), {"N": "-9223372036854775808"}, -(2**63)),
    (1.5, {"N": "1.5"}, 1.5),
    (0.1 + 0.2, {"N": "0.3"}, 0.3),
    (100.0, {"N": "100"}, 100),
    ("hello", {"S": 's:5:"hello";'}, "hello"),
    ("héllo", {"S": 's:6:"héllo";'}, "héllo"),
    ("12345", {"N": "12345"}, 12345),
    ("007", {"N": "007"}, 7.0),  # as moto keeps it; a server that normalises numbers: see below
    (b"bytes", {"S": 's:5:"bytes";'}, "bytes"),
    ([1, "a", None], {"S": 'a:3:{i:0;i:1;i:1;s:1:"a";i:2;N;}'}, [1, "a", None]),
    ((1, 2), {"S": "a:2:{i:0;i:1;i:1;i:2;}"}, [1, 2]),
    ({"a": 1, 5: [True]}, {"S": 'a:2:{s:1:"a";i:1;i:5;a:1:{i:0;b:1;}}'}, {"a": 1, 5: [True]}),
    ({1: "x", 0: "y"}, {"S": 'a:2:{i:1;s:1:"x";i:0;s:1:"y";}'}, {1: "x", 0: "y"}),
    ([], {"S": "a:0:{}"}, []),
    ({}, {"S": "a:0:{}"}, []),
    (
        ddblock.PhpObject("App\\Dto", {"id": 7, "\0*\0secret": "s"}),
        {"S": 'O:7:"App\\Dto":2:{s:2:"id";i:7;s:9:"\0*\0secret";s:1:"s";}'},
        ddblock.PhpObject("App\\Dto", {"id": 7, "\0*\0secret": "s"}),
    ),
    (
        ddblock.PhpObject("Suit", enum_case="Hearts"),
        {"S": 'E:11:"Suit:Hearts";'},
        ddblock.PhpObject("Suit", enum_case="Hearts"),
    ),
    (
        ddblock.PhpObject("ArrayObject", payload=b"x:i:0;a:0:{}"),
        {"S": 'C:11:"ArrayObject":12:{x:i:0;a:0:{}}'},
        ddblock.PhpObject("ArrayObject", payload=b"x:i:0;a:0:{}"),
    ),
]


@pytest.mark.parametrize(("value", "stored", "back"), CASES, ids=[repr(c[0])[:30] for c in CASES])
def test_values_through_the_table(
    server: Server, store: ddblock.Store, raw: Raw, value: Any, stored: dict[str, str], back: Any
) -> None:
    store.put("k", value, ttl=60)
    item = raw.get("k")
    assert item is not None
    if value == "007" and server.normalises_numbers:
        # dynalite and DynamoDB Local, as real DynamoDB, store the N as 7 (moto keeps "007").
        stored, back = {"N": "7"}, 7
    assert item["value"] == stored
    got = store.get("k", consistent=True)
    if back is None:
        assert got is None
    else:
        assert got == back
        assert type(got) is type(back)


def test_values_written_by_others(store: ddblock.Store, raw: Raw) -> None:
    """Items as Laravel writes them, read by Python."""
    exp = "9999999999"
    items = {
        "n-int": {"N": "12"},
        "n-float": {"N": "1.0E+25"},
        "s-str": {"S": 's:2:"hi";'},
        "s-bin": {"S": 's:2:"\u00ff";'},  # 2 bytes of UTF-8: one str character
        "s-arr": {"S": 'a:2:{i:0;s:1:"a";s:1:"k";d:0.5;}'},
        "s-obj": {"S": 'O:8:"stdClass":1:{s:1:"p";a:1:{i:0;i:1;}}'},
        "s-ref": {"S": 'a:2:{i:0;s:1:"x";i:1;R:2;}'},
    }
    for key, value in items.items():
        raw.put({"key": {"S": key}, "value": value, "expires_at": {"N": exp}})
    assert store.get("n-int") == 12
    assert store.get("n-float") == 1e25
    assert store.get("s-str") == "hi"
    assert store.get("s-bin") == "\u00ff"
    assert store.get("s-arr") == {0: "a", "k": 0.5}
    assert store.get("s-obj") == ddblock.PhpObject("stdClass", {"p": [1]})
    assert store.get("s-ref") == ["x", "x"]


def test_expired_and_missing_values(store: ddblock.Store, raw: Raw) -> None:
    raw.put({"key": {"S": "old"}, "value": {"S": 's:1:"v";'}, "expires_at": {"N": "100"}})
    assert store.get("old") is None
    assert store.get("old", "default") == "default"
    assert store.get("never-written", 5) == 5
    store.put("null", None, ttl=60)
    assert store.get("null", "default") == "default"  # null reads as missing, as in Laravel


def test_cache_operations(store: ddblock.Store, raw: Raw) -> None:
    store.put_many({"a": 1, "b": [1, 2], "c": "three"}, ttl=60)
    assert store.many(["c", "a", "zz", "b"]) == {"c": "three", "a": 1, "zz": None, "b": [1, 2]}
    assert list(store.many(iter(["b", "a"]))) == ["b", "a"]
    assert store.many([]) == {}
    with pytest.raises(TypeError):
        store.many("abc")
    assert not store.add("a", 2, ttl=60)
    assert store.add("d", 2, ttl=60)
    assert store.increment("d") == 3
    assert store.increment("d", 10) == 13
    assert store.decrement("d", 4) == 9
    assert store.get("d", consistent=True) == 9
    assert store.increment("missing") is None
    assert store.touch("d", ttl=1000)
    assert not store.touch("missing", ttl=1000)
    store.forever("f", {"x": 1})
    item = raw.get("f")
    assert item is not None
    assert int(item["expires_at"]["N"]) > 4 * 365 * 86400 + 1_700_000_000
    store.forget("f")
    assert store.get("f") is None
    store.put("gone", 1, ttl=0)  # ttl <= 0: already expired, as Laravel's store
    assert store.get("gone") is None


def test_values_php_cannot_hold(store: ddblock.Store) -> None:
    with pytest.raises(ddblock.CodecError, match="64-bit") as info:
        store.put("k", 2**63, ttl=60)
    assert isinstance(info.value, ValueError)
    with pytest.raises(ddblock.CodecError, match="64-bit"):
        store.put("k", [-(2**64)], ttl=60)
    with pytest.raises(ddblock.CodecError, match="64-bit"):
        store.put("k", {2**70: 1}, ttl=60)
    with pytest.raises(ddblock.CodecError, match="UTF-8"):
        store.put("k", b"\xff\x00", ttl=60)  # DynamoDB S attributes are UTF-8; Laravel fails too
    with pytest.raises(ddblock.CodecError, match="NAN"):
        store.put("k", math.nan, ttl=60)
    with pytest.raises(ddblock.CodecError):
        store.put("k", " 12", ttl=60)  # numeric with whitespace: DynamoDB rejects the N
    with pytest.raises(TypeError, match="set"):
        store.put("k", {1, 2}, ttl=60)
    with pytest.raises(TypeError, match="key of type"):
        store.put("k", {(1, 2): "tuple key"}, ttl=60)
    nested: list[Any] = []
    cur = nested
    for _ in range(100):
        cur.append([])
        cur = cur[0]
    with pytest.raises(ddblock.CodecError, match="deeper"):
        store.put("k", nested, ttl=60)
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    with pytest.raises(ddblock.CodecError, match="deeper"):
        store.put("k", cyclic, ttl=60)
    assert store.get("k") is None  # nothing was written


def test_serialize_and_unserialize() -> None:
    assert ddblock.serialize({"a": [1, 2.5, None, True, "x"]}) == (
        b'a:1:{s:1:"a";a:5:{i:0;i:1;i:1;d:2.5;i:2;N;i:3;b:1;i:4;s:1:"x";}}'
    )
    assert ddblock.serialize(b"\xff") == b's:1:"\xff";'
    assert ddblock.unserialize(b's:1:"\xff";') == b"\xff"  # not UTF-8: bytes
    assert ddblock.unserialize('s:2:"hi";') == "hi"
    assert ddblock.unserialize(b"d:0.1;") == 0.1
    obj = ddblock.unserialize(b'O:3:"Foo":1:{s:6:"\0Foo\0p";i:1;}')
    assert obj == ddblock.PhpObject("Foo", {"\0Foo\0p": 1})
    for value, back in [
        (0, 0),
        (-1, -1),
        (2**63 - 1, 2**63 - 1),
        (1e300, 1e300),
        ("x" * 1000, "x" * 1000),
        ([[[]]], [[[]]]),
        ({"k": {"k": {}}}, {"k": {"k": []}}),  # an empty PHP array reads back as a list
        (True, True),
    ]:
        assert ddblock.unserialize(ddblock.serialize(value)) == back
    with pytest.raises(ddblock.CodecError, match="at byte") as info:
        ddblock.unserialize(b"a:1:{")
    assert info.value.offset is not None
