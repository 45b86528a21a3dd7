#!/usr/bin/env python3
"""Writes the lock conformance vectors, compat-tests/conformance/v1/<layout>/<operation>.json.

    python3 compat-tests/conformance/generate.py          # (re)write v1/
    python3 compat-tests/conformance/generate.py --check  # fail if v1/ differs from this spec

This file is the specification in executable form: every case below states the inputs, the
table before, the exact DynamoDB requests (wire JSON, as the AWS SDKs send them), what the
operation answers and the table after. Neither implementation is consulted: the Rust core
(core/tests/conformance.rs) and the PHP driver (bindings/php/tests/ConformanceTest.php) each run
every case against a real server and compare. The format is described in v1/README.md.

A change here is a change of the wire format: bump the folder (v2/) for anything an older
implementation would get wrong, and say so in docs/format.md.
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "v1"
VERSION = 1

NOW = 1767225600  # 2026-01-01T00:00:00Z; the clock of every case (servers compare with :now only)
OWNER = "y5lgfdhGNbGy3sTY"  # 16 characters of [A-Za-z0-9], as Laravel's Str::random() makes them
OTHER = "Sm8axS7UsSjMZN8X"
NUMERIC = "12345"
TABLE = "cache"
PREFIX = "app_"
NAME = "orders"
DEFAULT_ATTRS = {"key": "key", "value": "value", "expiration": "expires_at"}
CUSTOM_ATTRS = {"key": "k", "value": "v", "expiration": "exp"}

LAYOUTS = {
    "laravel8": "Laravel 8.x-10.x: setPrefix() appends ':' to a non-empty prefix; lock() passes "
    "prefix.name and add() prefixes again, so a lock key carries the prefix twice",
    "laravel11": "Laravel 11.x: the prefix is used as given (laravel/framework PR #47380); the lock "
    "key still carries it twice",
    "laravel12": "Laravel 12.0+: lock() passes the bare name (PR #52986): the lock key carries the "
    "prefix once",
}


def lock_key(layout: str, prefix: str, name: str) -> str:
    p = prefix + ":" if layout == "laravel8" and prefix else prefix
    return f"{p}{p}{name}" if layout in ("laravel8", "laravel11") else f"{p}{name}"


def php_serialize_string(s: str) -> str:
    return f's:{len(s.encode())}:"{s}";'


def stored(owner: str) -> dict:
    """Laravel's type()/serialize(): N for is_numeric owners (only plain digits here), else S."""
    return {"N": owner} if owner.isdigit() else {"S": php_serialize_string(owner)}


def laravel_value(owner: str):
    """What Laravel's store reads back for a stored owner (unserialize(): an int for N)."""
    return int(owner) if owner.isdigit() else owner


class Ctx:
    """One case's inputs: layout, prefix, attribute names."""

    def __init__(self, layout: str, prefix: str = PREFIX, attrs: dict | None = None):
        self.layout = layout
        self.prefix = prefix
        self.attrs = attrs or DEFAULT_ATTRS

    @property
    def key(self) -> str:
        return lock_key(self.layout, self.prefix, NAME)

    def item(self, owner: str, expires_at: int) -> dict:
        a = self.attrs
        return {a["key"]: {"S": self.key}, a["value"]: stored(owner), a["expiration"]: {"N": str(expires_at)}}

    def key_map(self) -> dict:
        return {self.attrs["key"]: {"S": self.key}}

    def table(self) -> dict:
        return {
            "name": TABLE,
            "key_attribute": self.attrs["key"],
            "value_attribute": self.attrs["value"],
            "expiration_attribute": self.attrs["expiration"],
        }

    def input(self, owner: str, ttl: int, **extra) -> dict:
        return {"prefix": self.prefix, "name": NAME, "owner": owner, "ttl": ttl, "now": NOW, **extra}

    # ---- the requests -------------------------------------------------------------------
    def put(self, owner: str, ttl: int) -> dict:
        a = self.attrs
        return {
            "operation": "PutItem",
            "body": {
                "TableName": TABLE,
                "Item": self.item(owner, NOW + (ttl if ttl > 0 else 86400)),
                "ConditionExpression": "attribute_not_exists(#key) OR #expires_at < :now",
                "ExpressionAttributeNames": {"#key": a["key"], "#expires_at": a["expiration"]},
                "ExpressionAttributeValues": {":now": {"N": str(NOW)}},
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            },
        }

    def delete_owned(self, owner: str) -> dict:
        return {
            "operation": "DeleteItem",
            "body": {
                "TableName": TABLE,
                "Key": self.key_map(),
                "ConditionExpression": "#value = :owner",
                "ExpressionAttributeNames": {"#value": self.attrs["value"]},
                "ExpressionAttributeValues": {":owner": stored(owner)},
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            },
        }

    def delete_any(self) -> dict:
        return {"operation": "DeleteItem", "body": {"TableName": TABLE, "Key": self.key_map()}}

    def update(self, owner: str, seconds: int) -> dict:
        a = self.attrs
        return {
            "operation": "UpdateItem",
            "body": {
                "TableName": TABLE,
                "Key": self.key_map(),
                "UpdateExpression": "SET #expires_at = :expires_at",
                "ConditionExpression": "attribute_exists(#key) AND #value = :owner AND #expires_at > :now",
                "ExpressionAttributeNames": {
                    "#key": a["key"],
                    "#value": a["value"],
                    "#expires_at": a["expiration"],
                },
                "ExpressionAttributeValues": {
                    ":owner": stored(owner),
                    ":expires_at": {"N": str(NOW + seconds)},
                    ":now": {"N": str(NOW)},
                },
            },
        }

    def get(self, optional: bool = False) -> dict:
        req = {
            "operation": "GetItem",
            "body": {"TableName": TABLE, "Key": self.key_map(), "ConsistentRead": True},
        }
        if optional:
            req["optional"] = True
        return req


def case(cid, description, ctx: Ctx, inp, before, requests, outcome, laravel, after, without_all_old=None, **more):
    c = {
        "id": cid,
        "description": description,
        "table": ctx.table(),
        "input": inp,
        "before": before,
        "requests": requests,
    }
    if without_all_old is not None:
        c["requests_without_all_old"] = without_all_old
    c["outcome"] = outcome
    c["laravel_result"] = laravel
    c["after"] = after
    c.update(more)
    return c


# ---- operations ------------------------------------------------------------------------------


def acquire(layout: str) -> dict:
    x = Ctx(layout)
    cases = [
        case("free", "Nobody holds the lock: the put writes Laravel's add() item.", x,
             x.input(OWNER, 10), None, [x.put(OWNER, 10)], "acquired", True, x.item(OWNER, NOW + 10)),
        case("ttl-0", "A ttl of 0 is Laravel's default of 86400 s.", x,
             x.input(OWNER, 0), None, [x.put(OWNER, 0)], "acquired", True, x.item(OWNER, NOW + 86400)),
        case("numeric-owner", "A numeric owner is stored as N, as Laravel's add() stores it.", x,
             x.input(NUMERIC, 10), None, [x.put(NUMERIC, 10)], "acquired", True, x.item(NUMERIC, NOW + 10)),
        case("expired-holder", "Another owner's lock expired (expires_at < now): taken over.", x,
             x.input(OWNER, 10), x.item(OTHER, NOW - 1), [x.put(OWNER, 10)], "acquired", True,
             x.item(OWNER, NOW + 10)),
        case("held", "Another owner holds it: the condition fails; the answer names the holder.", x,
             x.input(OWNER, 10), x.item(OTHER, NOW + 30), [x.put(OWNER, 10)],
             {"held": {"owner": OTHER, "expires_at": NOW + 30}}, False, x.item(OTHER, NOW + 30),
             without_all_old=[x.put(OWNER, 10), x.get()]),
        case("held-until-now", "expires_at == now: the item reads as expired but cannot be taken "
             "over yet (the condition needs expires_at < now).", x,
             x.input(OWNER, 10), x.item(OTHER, NOW), [x.put(OWNER, 10)],
             {"held": {"owner": OTHER, "expires_at": NOW}}, False, x.item(OTHER, NOW),
             without_all_old=[x.put(OWNER, 10), x.get()]),
        case("recovered", "The item already carries our owner: an earlier put of ours landed and "
             "its answer was lost (the SDK retried). Acquired, and the earlier expiry stands. "
             "(Stock Laravel's add() answers false here.)", x,
             x.input(OWNER, 10), x.item(OWNER, NOW + 5), [x.put(OWNER, 10)],
             "recovered", True, x.item(OWNER, NOW + 5),
             without_all_old=[x.put(OWNER, 10), x.get()]),
        case("recovered-numeric", "Recovery compares as DynamoDB does: a numeric owner's N item.", x,
             x.input(NUMERIC, 10), x.item(NUMERIC, NOW + 5), [x.put(NUMERIC, 10)],
             "recovered", True, x.item(NUMERIC, NOW + 5),
             without_all_old=[x.put(NUMERIC, 10), x.get()]),
    ]
    e = Ctx(layout, prefix="")
    cases.append(case("no-prefix", "Without a prefix every layout's lock key is the bare name.", e,
                      e.input(OWNER, 10), None, [e.put(OWNER, 10)], "acquired", True, e.item(OWNER, NOW + 10)))
    c = Ctx(layout, attrs=CUSTOM_ATTRS)
    cases.append(case("custom-attributes", "Attribute names from stores.dynamodb.attributes "
                      "(key, value, expiration).", c, c.input(OWNER, 10), c.item(OTHER, NOW + 30),
                      [c.put(OWNER, 10)], {"held": {"owner": OTHER, "expires_at": NOW + 30}}, False,
                      c.item(OTHER, NOW + 30), without_all_old=[c.put(OWNER, 10), c.get()]))
    return {
        "summary": "Take the lock: Laravel's add() PutItem (same item, same condition) plus "
        "ReturnValuesOnConditionCheckFailure ALL_OLD, so a retry of our own lost write is "
        "recognised without a read.",
        "answers": [
            {"answer": "200", "outcome": "acquired", "meaning": "the lock is ours until now + ttl"},
            {"answer": "ConditionalCheckFailedException with Item carrying our owner (typed as stored)",
             "outcome": "recovered",
             "meaning": "an earlier put of ours committed and its answer was lost; the lock is ours "
             "and the Item's expiry stands"},
            {"answer": "ConditionalCheckFailedException with Item carrying another owner",
             "outcome": "held", "meaning": "another owner holds it until the Item's expires_at; "
             "if that expiry is already < now (our clock moved on), put again (at most 3 puts)"},
            {"answer": "ConditionalCheckFailedException without Item",
             "outcome": "read", "meaning": "the server ignores ALL_OLD (dynalite): one GetItem with "
             "ConsistentRead decides as above; no item means it was freed meanwhile: put again"},
            {"answer": "any other error", "outcome": "error",
             "meaning": "the request failed (throttling past the SDK's retries, missing table, "
             "network); an exception, never false"},
        ],
        "cases": cases,
    }


def release(layout: str) -> dict:
    x = Ctx(layout)
    cases = [
        case("ours", "Our live lock: deleted by one conditional DeleteItem, no read.", x,
             x.input(OWNER, 10), x.item(OWNER, NOW + 10), [x.delete_owned(OWNER)], "released", True, None),
        case("ours-expired", "Our lock expired but is still in the table: still ours, deleted. "
             "(Stock Laravel reads it as gone and leaves it.)", x,
             x.input(OWNER, 10), x.item(OWNER, NOW - 1), [x.delete_owned(OWNER)], "released", True, None),
        case("numeric-owner", "A numeric owner (N) is released. (Stock Laravel compares the int it "
             "reads back with the string owner using === and never releases it.)", x,
             x.input(NUMERIC, 10), x.item(NUMERIC, NOW + 10), [x.delete_owned(NUMERIC)], "released", True, None),
        case("held-by-other", "Another owner holds it (ours expired and was taken over): nothing "
             "is deleted; the answer names the holder.", x,
             x.input(OWNER, 10), x.item(OTHER, NOW + 30), [x.delete_owned(OWNER)],
             {"held_by_other": {"owner": OTHER, "expires_at": NOW + 30}}, False, x.item(OTHER, NOW + 30),
             without_all_old=[x.delete_owned(OWNER), x.get(optional=True)]),
        case("missing", "No lock item (released already, force-released or swept).", x,
             x.input(OWNER, 10), None, [x.delete_owned(OWNER), x.get(optional=True)], "not_held", False, None,
             without_all_old=[x.delete_owned(OWNER), x.get(optional=True)]),
    ]
    c = Ctx(layout, attrs=CUSTOM_ATTRS)
    cases.append(case("custom-attributes", "Attribute names from stores.dynamodb.attributes.", c,
                      c.input(OWNER, 10), c.item(OWNER, NOW + 10), [c.delete_owned(OWNER)], "released", True, None))
    return {
        "summary": "Release the lock: ONE DeleteItem conditioned on #value = :owner, the owner typed "
        "as stored (N for numeric owners). No read before it.",
        "answers": [
            {"answer": "200", "outcome": "released", "meaning": "our lock was deleted"},
            {"answer": "ConditionalCheckFailedException with Item", "outcome": "held_by_other",
             "meaning": "another owner holds it (named by the Item); nothing was deleted"},
            {"answer": "ConditionalCheckFailedException without Item", "outcome": "not_held",
             "meaning": "no lock item (on a server that ignores ALL_OLD, an implementation that "
             "reports the holder tells the two apart with one consistent GetItem; one that answers "
             "only released or not, like Laravel's release(): bool, needs no read)"},
            {"answer": "any other error", "outcome": "error",
             "meaning": "the request failed; an exception. A retry after a lost answer finds the "
             "lock gone and answers not_held: our hold ended either way"},
        ],
        "cases": cases,
    }


def force_release(layout: str) -> dict:
    x = Ctx(layout)
    return {
        "summary": "Delete the lock whoever holds it (Laravel's forceRelease()): one unconditional "
        "DeleteItem.",
        "answers": [
            {"answer": "200", "outcome": "deleted", "meaning": "there is no lock item now"},
            {"answer": "any other error", "outcome": "error", "meaning": "an exception"},
        ],
        "cases": [
            case("held-by-other", "Deletes another owner's live lock.", x, x.input(OWNER, 10),
                 x.item(OTHER, NOW + 30), [x.delete_any()], "deleted", None, None),
            case("missing", "Nothing to delete is not an error.", x, x.input(OWNER, 10),
                 None, [x.delete_any()], "deleted", None, None),
        ],
    }


def refresh(layout: str) -> dict:
    x = Ctx(layout)

    def r(cid, desc, owner, seconds, before, effective, outcome, after, ctx=x):
        return case(cid, desc, ctx, ctx.input(owner, 10, seconds=seconds), before,
                    [ctx.update(owner, effective)], outcome, outcome == "refreshed", after)

    return {
        "summary": "Extend our live lock: the UpdateItem of Laravel 12.63+'s refresh(), condition "
        "attribute_exists(#key) AND #value = :owner AND #expires_at > :now. seconds null means "
        "the lock's ttl; 0 or less means 86400.",
        "answers": [
            {"answer": "200", "outcome": "refreshed", "meaning": "our lock now expires at now + seconds"},
            {"answer": "ConditionalCheckFailedException", "outcome": "not_refreshed",
             "meaning": "not ours, expired (expires_at <= now) or gone; nothing was written"},
            {"answer": "any other error", "outcome": "error", "meaning": "an exception"},
        ],
        "cases": [
            r("ours", "Our live lock, 30 s more.", OWNER, 30, x.item(OWNER, NOW + 5), 30, "refreshed",
              x.item(OWNER, NOW + 30)),
            r("lock-ttl", "seconds null: the lock's own ttl (10).", OWNER, None, x.item(OWNER, NOW + 5), 10,
              "refreshed", x.item(OWNER, NOW + 10)),
            r("zero", "seconds 0: 86400, as Laravel's refresh().", OWNER, 0, x.item(OWNER, NOW + 5), 86400,
              "refreshed", x.item(OWNER, NOW + 86400)),
            r("numeric-owner", "A numeric owner (N) refreshes its lock.", NUMERIC, 30,
              x.item(NUMERIC, NOW + 5), 30, "refreshed", x.item(NUMERIC, NOW + 30)),
            r("held-by-other", "Another owner's lock is left alone.", OWNER, 30, x.item(OTHER, NOW + 30), 30,
              "not_refreshed", x.item(OTHER, NOW + 30)),
            r("expired", "Our lock at its expiry second (expires_at == now) is not refreshed.", OWNER, 30,
              x.item(OWNER, NOW), 30, "not_refreshed", x.item(OWNER, NOW)),
            r("missing", "No lock item.", OWNER, 30, None, 30, "not_refreshed", None),
            r("custom-attributes", "Attribute names from stores.dynamodb.attributes.", OWNER, 30,
              Ctx(layout, attrs=CUSTOM_ATTRS).item(OWNER, NOW + 5), 30, "refreshed",
              Ctx(layout, attrs=CUSTOM_ATTRS).item(OWNER, NOW + 30), ctx=Ctx(layout, attrs=CUSTOM_ATTRS)),
        ],
    }


def current_owner(layout: str) -> dict:
    x = Ctx(layout)

    def o(cid, desc, before, holder, laravel):
        return case(cid, desc, x, x.input(OWNER, 10), before, [x.get()],
                    {"holder": holder}, laravel, before)

    return {
        "summary": "Who holds the lock (Laravel's getCurrentOwner(), isLocked()): one GetItem with "
        "ConsistentRead true, never a stale read. Free when there is no item or now >= expires_at.",
        "answers": [
            {"answer": "Item, now < expires_at", "outcome": "holder",
             "meaning": "held by the stored owner (Laravel reads it back as unserialize() does: an "
             "int for an N owner)"},
            {"answer": "no Item, or now >= expires_at", "outcome": "free", "meaning": "nobody holds it"},
            {"answer": "any other error", "outcome": "error", "meaning": "an exception"},
        ],
        "cases": [
            o("held", "Held by a string owner.", x.item(OTHER, NOW + 30),
              {"owner": OTHER, "expires_at": NOW + 30}, laravel_value(OTHER)),
            o("numeric-owner", "Held by a numeric owner: Laravel's value is the int.", x.item(NUMERIC, NOW + 30),
              {"owner": NUMERIC, "expires_at": NOW + 30}, laravel_value(NUMERIC)),
            o("expired", "expires_at == now reads as expired (free).", x.item(OTHER, NOW), None, None),
            o("missing", "No item.", None, None, None),
        ],
    }


def is_owned_by(layout: str) -> dict:
    x = Ctx(layout)

    def o(cid, desc, asked, before, result):
        return case(cid, desc, x, x.input(asked, 10), before, [x.get()], result, result, before)

    return {
        "summary": "Whether an owner holds the lock (isOwnedBy(), isOwnedByCurrentProcess()): one "
        "GetItem with ConsistentRead true; the stored value compared as DynamoDB's #value = :owner "
        "would (same type; N by numeric value).",
        "answers": [
            {"answer": "Item carrying the owner, now < expires_at", "outcome": True, "meaning": "owned"},
            {"answer": "anything else", "outcome": False, "meaning": "not owned (free, expired, or another owner)"},
            {"answer": "any other error", "outcome": "error", "meaning": "an exception"},
        ],
        "cases": [
            o("ours", "Our live lock.", OWNER, x.item(OWNER, NOW + 30), True),
            o("other", "Another owner's lock.", OWNER, x.item(OTHER, NOW + 30), False),
            o("numeric-owner", "A numeric owner owns its N item. (Stock Laravel's isOwnedBy() compares "
              "the int it reads back with === and answers false.)", NUMERIC, x.item(NUMERIC, NOW + 30), True),
            o("expired", "Our lock at its expiry second is not owned any more.", OWNER, x.item(OWNER, NOW), False),
            o("missing", "No item.", OWNER, None, False),
        ],
    }


OPERATIONS = {
    "acquire": acquire,
    "release": release,
    "force_release": force_release,
    "refresh": refresh,
    "current_owner": current_owner,
    "is_owned_by": is_owned_by,
}


def documents() -> dict[Path, str]:
    docs = {}
    for layout, layout_note in LAYOUTS.items():
        for op, build in OPERATIONS.items():
            body = build(layout)
            doc = {
                "spec": "ddblock lock requests on Laravel's DynamoDB cache table",
                "version": VERSION,
                "layout": layout,
                "layout_note": layout_note,
                "operation": op,
                **copy.deepcopy(body),
            }
            docs[OUT / layout / f"{op}.json"] = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    return docs


def main() -> int:
    check = "--check" in sys.argv[1:]
    wrong = []
    docs = documents()
    for path, text in docs.items():
        if check:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                wrong.append(path)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    extra = [p for p in OUT.rglob("*.json") if p not in docs]
    if check:
        wrong += extra
        for p in wrong:
            print(f"conformance: {p.relative_to(HERE)} differs from generate.py", file=sys.stderr)
        if wrong:
            print("conformance: run python3 compat-tests/conformance/generate.py and review the diff",
                  file=sys.stderr)
            return 1
        print(f"conformance: {len(docs)} vector files match generate.py")
    else:
        for p in extra:
            p.unlink()
        print(f"conformance: wrote {len(docs)} files under {OUT.relative_to(HERE.parent.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
