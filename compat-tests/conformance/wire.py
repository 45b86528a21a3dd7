"""The wire model of the conformance vectors (generate.py): the fixed clock, owners and fences,
each Laravel version's key layout, the items Laravel stores and the request builders (`Ctx`)
every case is written with. generate.py states the cases; this module states what they are made of."""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "v2"
VERSION = 2

NOW = 1767225600  # 2026-01-01T00:00:00Z; the clock of every case (servers compare with :now only)
OWNER = "y5lgfdhGNbGy3sTY"  # 16 characters of [A-Za-z0-9], as Laravel's Str::random() makes them
OTHER = "Sm8axS7UsSjMZN8X"
NUMERIC = "12345"
ATTEMPT = "Qm3vT8kZr2LxW9aB"  # this acquire call's attempt id (16 characters of [A-Za-z0-9])
OTHER_ATTEMPT = "h7GpX2nRc5YtK0sE"  # another acquire call's (another handle, process or language)
FENCE_BASE = NOW * 1_000_000 + 250_000  # the client's clock in microseconds, 0.25 s past NOW
RELEASED_AT = NOW - 86400  # the expires_at a keep-fence release writes: the release time minus a day
KEEP_FENCE = "keep-fence"  # input.release_mode of the keep-fence cases (absent: "delete", the default)
MARGIN = 0  # the clock-skew margin, seconds: the default of every implementation (Laravel's own rule)
SKEW_MARGIN = 2  # a margin set on purpose (clock_skew_margin), for the cases that show what it does
TABLE = "cache"
PREFIX = "app_"
NAME = "orders"
FENCE = "ddblock_fence"
ATTEMPT_ATTR = "ddblock_attempt"
SINCE_ATTR = "ddblock_since"  # a waiting acquisition's stamp (docs/format.md); the keep-fence release removes it
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


def holder(owner: str, expires_at: int) -> dict:
    return {"owner": owner, "expires_at": expires_at}


class Ctx:
    """One case's inputs: layout, prefix, attribute names."""

    def __init__(self, layout: str, prefix: str = PREFIX, attrs: dict | None = None, margin: int = MARGIN):
        self.layout = layout
        self.prefix = prefix
        self.attrs = attrs or DEFAULT_ATTRS
        self.margin = margin

    @property
    def key(self) -> str:
        return lock_key(self.layout, self.prefix, NAME)

    def item(self, owner: str, expires_at: int, attempt: str | None = None, fence: int | None = None) -> dict:
        """A lock item: Laravel's three attributes, plus ddblock's when a ddblock front wrote it
        (stock Laravel's add() writes the three only, dropping the others)."""
        a = self.attrs
        item = {a["key"]: {"S": self.key}, a["value"]: stored(owner), a["expiration"]: {"N": str(expires_at)}}
        if attempt is not None:
            item[ATTEMPT_ATTR] = {"S": attempt}
        if fence is not None:
            item[FENCE] = {"N": str(fence)}
        return item

    def released(self, fence: int | None) -> dict:
        """A lock item after a keep-fence release: the key, expires_at a day before the release,
        and the fence it had (no value, no attempt id)."""
        a = self.attrs
        item = {a["key"]: {"S": self.key}, a["expiration"]: {"N": str(RELEASED_AT)}}
        if fence is not None:
            item[FENCE] = {"N": str(fence)}
        return item

    def ours(self, owner: str, ttl: int, fence: int) -> dict:
        """The item this case's acquire writes."""
        return self.item(owner, NOW + effective_ttl(ttl), ATTEMPT, fence)

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

    def acquire_input(self, owner: str, ttl: int) -> dict:
        return self.input(owner, ttl, margin=self.margin, attempt=ATTEMPT, fence_base=FENCE_BASE)

    # ---- the requests -------------------------------------------------------------------
    def request(self, operation: str, **body) -> dict:
        """A request on this case's lock item: the table and key first, then BODY in order."""
        return {"operation": operation, "body": {"TableName": TABLE, "Key": self.key_map(), **body}}

    def names(self, *names: str) -> dict:
        """ExpressionAttributeNames: each placeholder (#key, #value, #expires_at, #attempt, #fence,
        #since) with its attribute's name, in the order given."""
        a = self.attrs
        every = {"#key": a["key"], "#value": a["value"], "#expires_at": a["expiration"],
                 "#attempt": ATTEMPT_ATTR, "#fence": FENCE, "#since": SINCE_ATTR}
        return {n: every[n] for n in names}

    def take(self, owner: str, ttl: int) -> dict:
        return self.request(
            "UpdateItem",
            UpdateExpression="SET #value = :owner, #expires_at = :expires_at, #attempt = :attempt, "
            "#fence = if_not_exists(#fence, :fence_base) + :one",
            ConditionExpression="attribute_not_exists(#key) OR #expires_at < :now",
            ExpressionAttributeNames=self.names("#key", "#value", "#expires_at", "#attempt", "#fence"),
            ExpressionAttributeValues={
                ":owner": stored(owner),
                ":expires_at": {"N": str(NOW + effective_ttl(ttl))},
                ":attempt": {"S": ATTEMPT},
                ":fence_base": {"N": str(FENCE_BASE)},
                ":one": {"N": "1"},
                ":now": {"N": str(NOW - self.margin)},
            },
            ReturnValues="UPDATED_NEW",
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )

    def delete_attempt(self, owner: str) -> dict:
        return self.request(
            "DeleteItem",
            ConditionExpression="#value = :owner AND #attempt = :attempt",
            ExpressionAttributeNames=self.names("#value", "#attempt"),
            ExpressionAttributeValues={":owner": stored(owner), ":attempt": {"S": ATTEMPT}},
        )

    def expire(self, condition: str, names: tuple = (), values: dict | None = None, **extra) -> dict:
        """The keep-fence update under CONDITION (its own NAMES first, then the update's; its VALUES
        before :expires_at): expires the item a day back and removes its owner, attempt id and
        waiting stamp, keeping the fence."""
        return self.request(
            "UpdateItem",
            UpdateExpression="SET #expires_at = :expires_at REMOVE #value, #attempt, #since",
            ConditionExpression=condition,
            ExpressionAttributeNames=self.names(*names, "#value", "#expires_at", "#attempt", "#since"),
            ExpressionAttributeValues={**(values or {}), ":expires_at": {"N": str(RELEASED_AT)}},
            **extra,
        )

    def expire_attempt(self, owner: str) -> dict:
        """The keep-fence clean-up: the keep-fence release's update under the clean-up's condition."""
        return self.expire("#value = :owner AND #attempt = :attempt",
                           values={":owner": stored(owner), ":attempt": {"S": ATTEMPT}})

    def delete_owned(self, owner: str) -> dict:
        return self.request(
            "DeleteItem",
            ConditionExpression="#value = :owner",
            ExpressionAttributeNames=self.names("#value"),
            ExpressionAttributeValues={":owner": stored(owner)},
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )

    def expire_owned(self, owner: str) -> dict:
        """The keep-fence release: expire the item and drop owner and attempt id, keeping the fence."""
        return self.expire("#value = :owner", values={":owner": stored(owner)},
                           ReturnValuesOnConditionCheckFailure="ALL_OLD")

    def expire_any(self) -> dict:
        """The keep-fence forceRelease(): the same update whoever holds the lock, only if there is an item."""
        return self.expire("attribute_exists(#key)", names=("#key",))

    def delete_any(self) -> dict:
        """forceRelease(): one unconditional DeleteItem; the old item says whether there was one."""
        return self.request("DeleteItem", ReturnValues="ALL_OLD")

    def update(self, owner: str, seconds: int) -> dict:
        return self.request(
            "UpdateItem",
            UpdateExpression="SET #expires_at = :expires_at",
            ConditionExpression="attribute_exists(#key) AND #value = :owner AND #expires_at > :now",
            ExpressionAttributeNames=self.names("#key", "#value", "#expires_at"),
            ExpressionAttributeValues={
                ":owner": stored(owner),
                ":expires_at": {"N": str(NOW + seconds)},
                ":now": {"N": str(NOW)},
            },
        )

    def get(self, optional: bool = False) -> dict:
        req = self.request("GetItem", ConsistentRead=True)
        if optional:
            req["optional"] = True
        return req


def effective_ttl(ttl: int) -> int:
    return ttl if ttl > 0 else 86400


def case(cid, description, ctx: Ctx, inp, before, requests, outcome, laravel, after, without_all_old=None,
         faults=None):
    c = {
        "id": cid,
        "description": description,
        "table": ctx.table(),
        "input": inp,
        "before": before,
    }
    if faults is not None:
        c["faults"] = faults
    c["requests"] = requests
    if without_all_old is not None:
        c["requests_without_all_old"] = without_all_old
    c["outcome"] = outcome
    c["laravel_result"] = laravel
    c["after"] = after
    return c
