#!/usr/bin/env python3
"""Writes the lock conformance vectors, compat-tests/conformance/v2/<layout>/<operation>.json.

    python3 compat-tests/conformance/generate.py          # (re)write v2/
    python3 compat-tests/conformance/generate.py --check  # fail if v2/ differs from this spec

This file is the specification in executable form: every case below states the inputs, the
table before, the exact DynamoDB requests (wire JSON, as the AWS SDKs send them), what the
operation answers and the table after. Neither implementation is consulted: the Rust core
(core/tests/conformance.rs) and the PHP driver (bindings/php/tests/ConformanceTest.php) each run
every case against a real server and compare. The format is described in v2/README.md.

Version 2 is the lease protocol (issue 11): acquire is one UpdateItem that also writes the
attempt id and the fencing token, with the clock-skew margin in Laravel's condition; only this
attempt's own write is recovered; a write whose answer never comes is sent again, then cleaned up.
Version 1 (the PutItem acquire) was superseded and removed; git history keeps it.

A change here is a change of the wire format: bump the folder (v3/) for anything an older
implementation would get wrong, and say so in docs/format.md.
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

from wire import (
    ATTEMPT,
    CUSTOM_ATTRS,
    Ctx,
    FENCE_BASE,
    HERE,
    LAYOUTS,
    KEEP_FENCE,
    NOW,
    NUMERIC,
    OTHER,
    OTHER_ATTEMPT,
    OUT,
    OWNER,
    SINCE_ATTR,
    SKEW_MARGIN,
    VERSION,
    case,
    effective_ttl,
    holder,
    laravel_value,
    stored,
)


# ---- operations ------------------------------------------------------------------------------


def acquire(layout: str) -> dict:
    x = Ctx(layout)
    m = Ctx(layout, margin=SKEW_MARGIN)
    first = FENCE_BASE + 1  # the fence of a first acquisition: the item had none

    def acquired(owner, ttl, fence):
        return {"acquired": {"expires_at": NOW + effective_ttl(ttl), "fence": fence}}

    def held(cid, desc, before, who, expires_at, owner=OWNER, ctx=x):
        """The condition fails on a live (or not yet past the margin) holder: one write, and on a
        server that ignores ALL_OLD one consistent read."""
        return case(cid, desc, ctx, ctx.acquire_input(owner, 10), before, [ctx.take(owner, 10)],
                    {"held": holder(who, expires_at)}, False, before,
                    without_all_old=[ctx.take(owner, 10), ctx.get()])

    cases = [
        case("free", "Nobody holds the lock: the UpdateItem writes Laravel's lock item (the "
             "attributes add() writes) plus this attempt's id and the first fence, "
             "fence_base + 1, which comes back in the answer (UPDATED_NEW).", x,
             x.acquire_input(OWNER, 10), None, [x.take(OWNER, 10)], acquired(OWNER, 10, first), True,
             x.ours(OWNER, 10, first)),
        case("ttl-0", "A ttl of 0 is Laravel's default of 86400 s.", x,
             x.acquire_input(OWNER, 0), None, [x.take(OWNER, 0)], acquired(OWNER, 0, first), True,
             x.ours(OWNER, 0, first)),
        case("numeric-owner", "A numeric owner is stored as N, as Laravel's add() stores it.", x,
             x.acquire_input(NUMERIC, 10), None, [x.take(NUMERIC, 10)], acquired(NUMERIC, 10, first), True,
             x.ours(NUMERIC, 10, first)),
        case("expired", "Another owner's lock expired 1 s ago: taken over (with the default margin "
             "of 0, Laravel's own condition expires_at < now); the fence grows by one.", x,
             x.acquire_input(OWNER, 10), x.item(OTHER, NOW - 1, OTHER_ATTEMPT, 41), [x.take(OWNER, 10)],
             acquired(OWNER, 10, 42), True, x.ours(OWNER, 10, 42)),
        case("expired-past-margin", f"With a clock-skew margin of {SKEW_MARGIN} s set: another "
             "owner's lock expired 3 s ago, more than the margin (expires_at < now - margin): taken "
             "over; the fence grows by one.", m,
             m.acquire_input(OWNER, 10), m.item(OTHER, NOW - 3, OTHER_ATTEMPT, 41), [m.take(OWNER, 10)],
             acquired(OWNER, 10, 42), True, m.ours(OWNER, 10, 42)),
        held("expired-within-margin", f"With a clock-skew margin of {SKEW_MARGIN} s set: another "
             "owner's lock expired 1 s ago, within the margin: still held (its holder's clock may be "
             "behind ours). The answer names it; its expires_at is already past.",
             m.item(OTHER, NOW - 1, OTHER_ATTEMPT, 41), OTHER, NOW - 1, ctx=m),
        held("expired-at-margin", f"With a clock-skew margin of {SKEW_MARGIN} s set: expires_at == "
             "now - margin: not yet taken over (the condition needs expires_at < now - margin).",
             m.item(OTHER, NOW - SKEW_MARGIN, OTHER_ATTEMPT, 41), OTHER, NOW - SKEW_MARGIN, ctx=m),
        held("held", "Another owner holds it: the condition fails; the answer names the holder.",
             x.item(OTHER, NOW + 30, OTHER_ATTEMPT, 7), OTHER, NOW + 30),
        held("held-until-now", "expires_at == now: the item reads as expired but cannot be taken "
             "over.", x.item(OTHER, NOW, OTHER_ATTEMPT, 7), OTHER, NOW),
        held("held-by-laravel", "Stock Laravel's add() wrote the lock (no ddblock attributes): held "
             "like any other.", x.item(OTHER, NOW + 30), OTHER, NOW + 30),
        case("recovered", "The item carries this attempt's id: an earlier send of this very call "
             "landed and its answer was lost (the SDK or the implementation sent it again). "
             "Acquired without a read; the earlier expiry and fence stand.", x,
             x.acquire_input(OWNER, 10), x.item(OWNER, NOW + 5, ATTEMPT, 77), [x.take(OWNER, 10)],
             {"recovered": {"expires_at": NOW + 5, "fence": 77}}, True, x.item(OWNER, NOW + 5, ATTEMPT, 77),
             without_all_old=[x.take(OWNER, 10), x.get()]),
        case("recovered-numeric", "Recovery of a numeric owner's write (N item).", x,
             x.acquire_input(NUMERIC, 10), x.item(NUMERIC, NOW + 5, ATTEMPT, 77), [x.take(NUMERIC, 10)],
             {"recovered": {"expires_at": NOW + 5, "fence": 77}}, True, x.item(NUMERIC, NOW + 5, ATTEMPT, 77),
             without_all_old=[x.take(NUMERIC, 10), x.get()]),
        held("same-owner-other-attempt", "Our owner, another attempt's write: another handle or "
             "process with the same owner holds it (restoreLock(name, owner)->get() while held). "
             "Refused, as Laravel refuses it.", x.item(OWNER, NOW + 5, OTHER_ATTEMPT, 77), OWNER, NOW + 5),
        held("same-owner-laravel", "Our owner, written by stock Laravel (no attempt id): refused.",
             x.item(OWNER, NOW + 5), OWNER, NOW + 5),
        case("own-attempt-expired", "This attempt's own write, at its expiry second (expires_at == "
             "now: expired, but not yet past the condition): not a lease. Written again, at most 3 "
             "writes per call; with the clock still, the last holder seen is reported.", x,
             x.acquire_input(OWNER, 10), x.item(OWNER, NOW, ATTEMPT, 77), [x.take(OWNER, 10)] * 3,
             {"held": holder(OWNER, NOW)}, False, x.item(OWNER, NOW, ATTEMPT, 77),
             without_all_old=[x.take(OWNER, 10), x.get()] * 3),
        case("own-attempt-expired-within-margin", f"With a clock-skew margin of {SKEW_MARGIN} s set: "
             "this attempt's own write, expired 1 s ago but not past the margin: written again, at "
             "most 3 writes per call, then the last holder seen is reported.", m,
             m.acquire_input(OWNER, 10), m.item(OWNER, NOW - 1, ATTEMPT, 77), [m.take(OWNER, 10)] * 3,
             {"held": holder(OWNER, NOW - 1)}, False, m.item(OWNER, NOW - 1, ATTEMPT, 77),
             without_all_old=[m.take(OWNER, 10), m.get()] * 3),
        case("fence-after-laravel", "Stock Laravel's add() overwrote the item and dropped the fence; "
             "its lock expired: taken over, the fence starts again from "
             "fence_base + 1 (the client's clock in microseconds, above every earlier fence).", x,
             x.acquire_input(OWNER, 10), x.item(OTHER, NOW - 3), [x.take(OWNER, 10)],
             acquired(OWNER, 10, first), True, x.ours(OWNER, 10, first)),
        case("unknown-outcome-landed", "No answer ever comes to the UpdateItem (the write lands; "
             "faults.answers_lost): it is sent again once with the same attempt id, then cleaned up "
             "with a DeleteItem conditioned on our owner and attempt id, which deletes the write. "
             "The call fails saying the outcome was unknown and the clean-up deleted it.", x,
             x.acquire_input(OWNER, 10), None, [x.take(OWNER, 10), x.take(OWNER, 10), x.delete_attempt(OWNER)],
             {"outcome_unknown": {"cleanup": "deleted"}}, {"throws": "outcome_unknown", "cleanup": "deleted"},
             None, faults={"answers_lost": ["UpdateItem"]}),
        case("unknown-outcome-not-landed", "No answer to the UpdateItem, which found another "
             "owner's lock: the clean-up finds nothing of this attempt's and deletes nothing.", x,
             x.acquire_input(OWNER, 10), x.item(OTHER, NOW + 30, OTHER_ATTEMPT, 7),
             [x.take(OWNER, 10), x.take(OWNER, 10), x.delete_attempt(OWNER)],
             {"outcome_unknown": {"cleanup": "not_found"}}, {"throws": "outcome_unknown", "cleanup": "not_found"},
             x.item(OTHER, NOW + 30, OTHER_ATTEMPT, 7), faults={"answers_lost": ["UpdateItem"]}),
        case("keep-fence-unknown-outcome-landed", "With input.release_mode \"keep-fence\": no "
             "answer ever comes to an UpdateItem (faults.answers_lost; the writes land). The acquire "
             "is sent again once, then cleaned up with the keep-fence release's UpdateItem conditioned "
             "on our owner and attempt id, which expires the write and keeps its fence (a DeleteItem "
             "would drop it, and the next acquirer would restart the fence from its own clock; found "
             "by compat-tests/model). That answer is lost too, so the call reports the clean-up as "
             "failed, but the item shows it landed: released, fence 6 kept.", x,
             {**x.acquire_input(OWNER, 10), "release_mode": KEEP_FENCE}, x.released(5),
             [x.take(OWNER, 10), x.take(OWNER, 10), x.expire_attempt(OWNER)],
             {"outcome_unknown": {"cleanup": "failed"}}, {"throws": "outcome_unknown", "cleanup": "failed"},
             x.released(6), faults={"answers_lost": ["UpdateItem"]}),
        case("keep-fence-unknown-outcome-not-landed", "With input.release_mode \"keep-fence\": no "
             "answer to an UpdateItem; the acquire found another owner's lock, so the keep-fence "
             "clean-up's condition fails and it changes nothing (its answer is lost too: reported "
             "as failed).", x,
             {**x.acquire_input(OWNER, 10), "release_mode": KEEP_FENCE},
             x.item(OTHER, NOW + 30, OTHER_ATTEMPT, 7),
             [x.take(OWNER, 10), x.take(OWNER, 10), x.expire_attempt(OWNER)],
             {"outcome_unknown": {"cleanup": "failed"}}, {"throws": "outcome_unknown", "cleanup": "failed"},
             x.item(OTHER, NOW + 30, OTHER_ATTEMPT, 7), faults={"answers_lost": ["UpdateItem"]}),
        case("unknown-outcome-cleanup-failed", "No answer to the UpdateItem, and the clean-up "
             "DeleteItem never reaches the server (faults.requests_lost): the call fails saying the "
             "clean-up failed too; the write stays until its expiry.", x,
             x.acquire_input(OWNER, 10), None, [x.take(OWNER, 10), x.take(OWNER, 10), x.delete_attempt(OWNER)],
             {"outcome_unknown": {"cleanup": "failed"}}, {"throws": "outcome_unknown", "cleanup": "failed"},
             x.ours(OWNER, 10, first), faults={"answers_lost": ["UpdateItem"], "requests_lost": ["DeleteItem"]}),
        case("throttled-then-free", "The first try is throttled (faults.sequence: answered 400 "
             "ProvisionedThroughputExceededException, not forwarded): refused before it could land. "
             "The acquire write is sent with the SDK's retries off and the implementation retries a "
             "refusal itself, after a jittered backoff (50 ms, doubling, at most 1 s): the second try "
             "takes the lock.", x,
             x.acquire_input(OWNER, 10), None, [x.take(OWNER, 10)] * 2, acquired(OWNER, 10, first), True,
             x.ours(OWNER, 10, first), faults={"sequence": {"UpdateItem": ["throttle"]}}),
        case("throttled-out", "Every try is throttled: a call retries refused tries up to 3 tries "
             "(max_attempts, the default of every implementation), then fails with the throttling: an "
             "error, never false; nothing was written, nothing to clean.", x,
             x.acquire_input(OWNER, 10), None, [x.take(OWNER, 10)] * 3, {"error": "throttled"},
             {"throws": "lock_exception", "code": "ProvisionedThroughputExceededException"}, None,
             faults={"sequence": {"UpdateItem": ["throttle", "throttle", "throttle"]}}),
        case("unknown-then-throttled", "The first try lands and its connection is reset (no answer: "
             "the outcome is unknown), the next two are throttled. The implementation sees every try: "
             "the refusals are retried, and the try after them finds this call's own write: "
             "recovered, with the first write's expiry and fence. (With the SDK retrying the write, "
             "the last throttling alone came back, as if nothing had been written, and the write "
             "held the lock until its expiry.)", x,
             x.acquire_input(OWNER, 10), None, [x.take(OWNER, 10)] * 4,
             {"recovered": {"expires_at": NOW + 10, "fence": first}}, True, x.ours(OWNER, 10, first),
             without_all_old=[x.take(OWNER, 10)] * 4 + [x.get()],
             faults={"sequence": {"UpdateItem": ["reset", "throttle", "throttle"]}}),
        case("unknown-then-throttled-out", "The first try lands and its connection is reset, and "
             "every try after it is throttled until the refused tries are used up (3 tries of the "
             "resend): the write may have landed, so it is cleaned up as for an unknown outcome (the "
             "DeleteItem finds and deletes it) and the call fails saying the outcome was unknown, "
             "never with the throttling alone.", x,
             x.acquire_input(OWNER, 10), None, [x.take(OWNER, 10)] * 4 + [x.delete_attempt(OWNER)],
             {"outcome_unknown": {"cleanup": "deleted"}}, {"throws": "outcome_unknown", "cleanup": "deleted"},
             None, faults={"sequence": {"UpdateItem": ["reset", "throttle", "throttle", "throttle"]}}),
    ]
    e = Ctx(layout, prefix="")
    cases.append(case("no-prefix", "Without a prefix every layout's lock key is the bare name.", e,
                      e.acquire_input(OWNER, 10), None, [e.take(OWNER, 10)], acquired(OWNER, 10, first), True,
                      e.ours(OWNER, 10, first)))
    c = Ctx(layout, attrs=CUSTOM_ATTRS)
    cases.append(case("custom-attributes", "Attribute names from stores.dynamodb.attributes (key, "
                      "value, expiration); ddblock's own attribute names do not change.", c,
                      c.acquire_input(OWNER, 10), c.item(OTHER, NOW - 3, OTHER_ATTEMPT, 41), [c.take(OWNER, 10)],
                      acquired(OWNER, 10, 42), True, c.ours(OWNER, 10, 42)))
    cases.append(held("custom-attributes-held", "Custom attribute names, held by another owner.",
                      c.item(OTHER, NOW + 30, OTHER_ATTEMPT, 7), OTHER, NOW + 30, ctx=c))
    return {
        "summary": "Take the lock: ONE UpdateItem that writes Laravel's lock item (the value and "
        "expires_at add() writes) plus ddblock_attempt (this call's attempt id) and ddblock_fence "
        "(if_not_exists(#fence, :fence_base) + :one), conditioned like add() but with the "
        "clock-skew margin in :now (now - margin); UPDATED_NEW returns the fence, ALL_OLD the "
        "holder of a failed condition.",
        "answers": [
            {"answer": "200 with Attributes", "outcome": "acquired",
             "meaning": "the lock is ours until now + ttl; Attributes.ddblock_fence is this "
             "acquisition's fencing token"},
            {"answer": "ConditionalCheckFailedException with Item carrying this call's attempt id, "
             "expires_at > now", "outcome": "recovered",
             "meaning": "an earlier send of this same call committed and its answer was lost; the lock "
             "is ours, the Item's expiry and fence stand"},
            {"answer": "ConditionalCheckFailedException with Item carrying this call's attempt id, "
             "expires_at <= now", "outcome": "write again",
             "meaning": "our own write, already expired: not a lease; write again (at most 3 writes "
             "per call, then held by the last Item seen)"},
            {"answer": "ConditionalCheckFailedException with any other Item", "outcome": "held",
             "meaning": "someone holds it: another owner, or our owner through another handle, "
             "process or language (another attempt id, or none: stock Laravel). If its expires_at "
             "is already < now - margin by our clock now, write again (at most 3 writes)"},
            {"answer": "ConditionalCheckFailedException without Item", "outcome": "read",
             "meaning": "the server ignores ALL_OLD (dynalite): one GetItem with ConsistentRead "
             "decides as above; no item means it was freed meanwhile: write again"},
            {"answer": "no answer (timeout, connection reset or closed after the request was sent), "
             "or 500 InternalServerError / 503 ServiceUnavailable", "outcome": "outcome_unknown",
             "meaning": "the write may have landed: send the same write (same attempt id) again, "
             "once or while a deadline allows (an answer then decides as above), then delete it "
             "with DeleteItem conditioned on #value = :owner AND #attempt = :attempt and fail "
             "saying the outcome was unknown and what the clean-up found: deleted (the write had "
             "landed), not_found (nothing of this attempt's), failed (the lock may be ours until "
             "its expiry)"},
            {"answer": "throttled (ProvisionedThroughputExceededException, ThrottlingException, "
             "RequestLimitExceeded), or a connection that was never made", "outcome": "refused",
             "meaning": "nothing was written: the write is sent again after a jittered backoff (50 ms, "
             "doubling, at most 1 s), up to 3 tries (max_attempts) counting the refused ones; then "
             "the refusal is the error, or, after a try with no answer, the clean-up and "
             "outcome_unknown. The acquire write goes out with the SDK's retries off, so no try's "
             "outcome is hidden behind a later one"},
            {"answer": "any other error (missing table, validation, credentials)", "outcome": "error",
             "meaning": "nothing was written; an exception, never false"},
        ],
        "cases": cases,
    }


def lost_answer(operation: str) -> dict:
    """The faults of a release whose first answer is lost and whose SDK resends it (2 sends)."""
    return {"sequence": {operation: ["drop"]}, "sdk_attempts": 2}


def release(layout: str) -> dict:
    x = Ctx(layout)

    def not_held(cid, desc, before, after, owner=OWNER):
        return case(cid, desc, x, x.input(owner, 10), before, [x.delete_owned(owner), x.get(optional=True)],
                    "not_held", False, after, without_all_old=[x.delete_owned(owner), x.get(optional=True)])

    cases = [
        case("ours", "Our live lock: deleted by one conditional DeleteItem, no read.", x,
             x.input(OWNER, 10), x.item(OWNER, NOW + 10, ATTEMPT, 5), [x.delete_owned(OWNER)], "released",
             True, None),
        case("ours-other-handle", "Our owner, written by another handle's attempt (a lock restored in "
             "another process): the owner releases it; attempt ids play no part in a release.", x,
             x.input(OWNER, 10), x.item(OWNER, NOW + 10, OTHER_ATTEMPT, 5), [x.delete_owned(OWNER)],
             "released", True, None),
        case("ours-laravel", "Our owner, written by stock Laravel (no ddblock attributes): released.", x,
             x.input(OWNER, 10), x.item(OWNER, NOW + 10), [x.delete_owned(OWNER)], "released", True, None),
        case("ours-expired", "Our lock expired but is still in the table: still ours, deleted. "
             "(Stock Laravel reads it as gone and leaves it.)", x,
             x.input(OWNER, 10), x.item(OWNER, NOW - 1, ATTEMPT, 5), [x.delete_owned(OWNER)], "released",
             True, None),
        case("numeric-owner", "A numeric owner (N) is released. (Stock Laravel compares the int it "
             "reads back with the string owner using === and never releases it.)", x,
             x.input(NUMERIC, 10), x.item(NUMERIC, NOW + 10, ATTEMPT, 5), [x.delete_owned(NUMERIC)], "released",
             True, None),
        case("held-by-other", "Another owner holds it (ours expired and was taken over): nothing "
             "is deleted; the answer names the holder.", x,
             x.input(OWNER, 10), x.item(OTHER, NOW + 30, OTHER_ATTEMPT, 6), [x.delete_owned(OWNER)],
             {"held_by_other": holder(OTHER, NOW + 30)}, False, x.item(OTHER, NOW + 30, OTHER_ATTEMPT, 6),
             without_all_old=[x.delete_owned(OWNER), x.get(optional=True)]),
        not_held("expired-other", "Another owner's lock, already expired (now >= expires_at): "
                 "nothing is deleted and nobody is named (nobody holds it).",
                 x.item(OTHER, NOW - 1, OTHER_ATTEMPT, 6), x.item(OTHER, NOW - 1, OTHER_ATTEMPT, 6)),
        not_held("expired-other-at-now", "Another owner's lock at its expiry second (expires_at == now) "
                 "reads as expired: not held.", x.item(OTHER, NOW), x.item(OTHER, NOW)),
        not_held("missing", "No lock item (released already, force-released or swept).", None, None),
        case("after-lost-answer", "The release's DeleteItem lands and its answer is lost "
             "(faults.sequence: drop); the SDK's resend (faults.sdk_attempts: its retries are on) "
             "finds no item: not_held, as any release that finds the lock gone. Not a lost lease: "
             "only a FIRST send finding the lock gone or another owner's is one.", x,
             x.input(OWNER, 10), x.item(OWNER, NOW + 10, ATTEMPT, 5),
             [x.delete_owned(OWNER)] * 2 + [x.get(optional=True)], "not_held", False, None,
             without_all_old=[x.delete_owned(OWNER)] * 2 + [x.get(optional=True)],
             faults=lost_answer("DeleteItem")),
    ]
    c = Ctx(layout, attrs=CUSTOM_ATTRS)
    cases.append(case("custom-attributes", "Attribute names from stores.dynamodb.attributes.", c,
                      c.input(OWNER, 10), c.item(OWNER, NOW + 10, ATTEMPT, 5), [c.delete_owned(OWNER)],
                      "released", True, None))
    cases += release_keep_fence(layout)
    return {
        "summary": "Release the lock: ONE DeleteItem conditioned on #value = :owner, the owner typed "
        "as stored (N for numeric owners). No read before it. With input.release_mode "
        "\"keep-fence\": ONE UpdateItem with the same condition that expires the item (expires_at = "
        "now - 86400), removes its value and attempt id and keeps ddblock_fence.",
        "answers": [
            {"answer": "200", "outcome": "released", "meaning": "our lock was deleted (keep-fence: "
             "expired, with no owner, its fence kept)"},
            {"answer": "ConditionalCheckFailedException with Item, now < expires_at",
             "outcome": "held_by_other", "meaning": "another owner holds it (named by the Item); "
             "nothing was deleted"},
            {"answer": "ConditionalCheckFailedException with Item, now >= expires_at",
             "outcome": "not_held", "meaning": "only an expired lock of another owner is there: "
             "nobody holds it, nobody is named; nothing was deleted"},
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


def release_keep_fence(layout: str) -> list:
    """The release cases with input.release_mode "keep-fence" (DDBLOCK_RELEASE_MODE)."""
    x = Ctx(layout)

    def inp(owner=OWNER):
        return x.input(owner, 10, release_mode=KEEP_FENCE)

    def not_held(cid, desc, before, after):
        return case(cid, desc, x, inp(), before, [x.expire_owned(OWNER), x.get(optional=True)], "not_held",
                    False, after, without_all_old=[x.expire_owned(OWNER), x.get(optional=True)])

    c = Ctx(layout, attrs=CUSTOM_ATTRS)
    return [
        case("keep-fence-ours", "Keep-fence release of our live lock: one conditional UpdateItem expires "
             "it (a day before now), removes owner and attempt id and keeps the fence, which the next "
             "acquisition continues.", x, inp(), x.item(OWNER, NOW + 10, ATTEMPT, 5),
             [x.expire_owned(OWNER)], "released", True, x.released(5)),
        case("keep-fence-ours-stamped", "Keep-fence release of our lock taken by a waiting acquisition, "
             "which stamped ddblock_since (when its wait began, Unix ms): the stamp goes with the owner, so "
             "the next holder's waiters are not misled by it; the fence stays.", x, inp(),
             {**x.item(OWNER, NOW + 10, ATTEMPT, 5), SINCE_ATTR: {"N": str(NOW * 1000 - 700)}},
             [x.expire_owned(OWNER)], "released", True, x.released(5)),
        case("keep-fence-ours-laravel", "Keep-fence release of our lock written by stock Laravel (no "
             "fence): expired, owner removed; no fence to keep.", x, inp(), x.item(OWNER, NOW + 10),
             [x.expire_owned(OWNER)], "released", True, x.released(None)),
        case("keep-fence-ours-expired", "Keep-fence release of our lock, expired but still in the table: "
             "still ours, released.", x, inp(), x.item(OWNER, NOW - 1, ATTEMPT, 5),
             [x.expire_owned(OWNER)], "released", True, x.released(5)),
        case("keep-fence-numeric-owner", "Keep-fence release of a numeric owner (N).", x, inp(NUMERIC),
             x.item(NUMERIC, NOW + 10, ATTEMPT, 5), [x.expire_owned(NUMERIC)], "released", True,
             x.released(5)),
        not_held("keep-fence-after-lost-answer", "The resend of a keep-fence release whose answer was "
                 "lost (or a second release): the item is already released, without an owner; the "
                 "condition fails, nothing changes, not held.", x.released(5), x.released(5)),
        case("keep-fence-lost-answer", "The keep-fence release's UpdateItem lands and its answer is "
             "lost (faults.sequence: drop); the SDK's resend (faults.sdk_attempts) finds the item "
             "released, without an owner: not_held, the answer the delete release gives when its "
             "resend finds the item gone (case after-lost-answer), in every implementation.", x,
             inp(), x.item(OWNER, NOW + 10, ATTEMPT, 5),
             [x.expire_owned(OWNER)] * 2 + [x.get(optional=True)], "not_held", False, x.released(5),
             without_all_old=[x.expire_owned(OWNER)] * 2 + [x.get(optional=True)],
             faults=lost_answer("UpdateItem")),
        case("keep-fence-held-by-other", "Keep-fence release when another owner holds the lock: "
             "nothing changes; the answer names the holder.", x, inp(),
             x.item(OTHER, NOW + 30, OTHER_ATTEMPT, 6), [x.expire_owned(OWNER)],
             {"held_by_other": holder(OTHER, NOW + 30)}, False, x.item(OTHER, NOW + 30, OTHER_ATTEMPT, 6),
             without_all_old=[x.expire_owned(OWNER), x.get(optional=True)]),
        not_held("keep-fence-expired-other", "Keep-fence release finding another owner's expired "
                 "lock: nothing changes, nobody is named.", x.item(OTHER, NOW - 1, OTHER_ATTEMPT, 6),
                 x.item(OTHER, NOW - 1, OTHER_ATTEMPT, 6)),
        not_held("keep-fence-missing", "Keep-fence release with no lock item: the condition fails, no "
                 "item is created.", None, None),
        case("keep-fence-custom-attributes", "Keep-fence release with attribute names from "
             "stores.dynamodb.attributes.", c, c.input(OWNER, 10, release_mode=KEEP_FENCE),
             c.item(OWNER, NOW + 10, ATTEMPT, 5), [c.expire_owned(OWNER)], "released", True, c.released(5)),
    ]


def force_release(layout: str) -> dict:
    x = Ctx(layout)

    def kept(cid, desc, before, after, outcome="expired"):
        return case(cid, desc, x, x.input(OWNER, 10, release_mode=KEEP_FENCE), before, [x.expire_any()],
                    outcome, None, after)

    return {
        "summary": "Delete the lock whoever holds it (Laravel's forceRelease()): one unconditional "
        "DeleteItem with ReturnValues ALL_OLD, whose old item says whether there was a lock item "
        "(ddblock's force_release() returns it; Laravel's forceRelease() returns nothing). With "
        "input.release_mode \"keep-fence\": one UpdateItem conditioned on attribute_exists(#key) that "
        "expires the item and keeps its fence, as a keep-fence release.",
        "answers": [
            {"answer": "200 with Attributes", "outcome": "deleted", "meaning": "there was a lock item; "
             "there is none now"},
            {"answer": "200 (keep-fence)", "outcome": "expired", "meaning": "there was a lock item; it "
             "is released with its fence kept"},
            {"answer": "200 without Attributes, or ConditionalCheckFailedException (keep-fence)",
             "outcome": "not_found", "meaning": "there was no item; none is created, and it is not an "
             "error (ddblock's force_release() returns false)"},
            {"answer": "any other error", "outcome": "error", "meaning": "an exception"},
        ],
        "cases": [
            case("held-by-other", "Deletes another owner's live lock.", x, x.input(OWNER, 10),
                 x.item(OTHER, NOW + 30, OTHER_ATTEMPT, 6), [x.delete_any()], "deleted", None, None),
            case("held-by-laravel", "Deletes a lock stock Laravel wrote.", x, x.input(OWNER, 10),
                 x.item(OTHER, NOW + 30), [x.delete_any()], "deleted", None, None),
            case("missing", "Nothing to delete is not an error; no old item comes back.", x,
                 x.input(OWNER, 10), None, [x.delete_any()], "not_found", None, None),
            kept("keep-fence-held-by-other", "Keep-fence: another owner's live lock is expired, its "
                 "fence kept.", x.item(OTHER, NOW + 30, OTHER_ATTEMPT, 6), x.released(6)),
            kept("keep-fence-held-by-laravel", "Keep-fence: a lock stock Laravel wrote is expired (it "
                 "has no fence).", x.item(OTHER, NOW + 30), x.released(None)),
            kept("keep-fence-missing", "Keep-fence: no item, none created, not an error.", None, None,
                 "not_found"),
        ],
    }


def refresh(layout: str) -> dict:
    x = Ctx(layout)

    def r(cid, desc, owner, seconds, before, effective, outcome, after, ctx=x):
        return case(cid, desc, ctx, ctx.input(owner, 10, seconds=seconds), before,
                    [ctx.update(owner, effective)], outcome, outcome == "refreshed", after)

    c = Ctx(layout, attrs=CUSTOM_ATTRS)
    return {
        "summary": "Extend our live lock: the UpdateItem of Laravel 12.63+'s refresh(), condition "
        "attribute_exists(#key) AND #value = :owner AND #expires_at > :now. seconds null means "
        "the lock's ttl; 0 or less means 86400. The attempt id and fence stay as they are.",
        "answers": [
            {"answer": "200", "outcome": "refreshed", "meaning": "our lock now expires at now + seconds"},
            {"answer": "ConditionalCheckFailedException", "outcome": "not_refreshed",
             "meaning": "not ours, expired (expires_at <= now) or gone; nothing was written"},
            {"answer": "any other error", "outcome": "error", "meaning": "an exception"},
        ],
        "cases": [
            r("ours", "Our live lock, 30 s more; the attempt id and fence are kept.", OWNER, 30,
              x.item(OWNER, NOW + 5, ATTEMPT, 42), 30, "refreshed", x.item(OWNER, NOW + 30, ATTEMPT, 42)),
            r("ours-laravel", "Our owner's lock written by stock Laravel (no ddblock attributes).", OWNER, 30,
              x.item(OWNER, NOW + 5), 30, "refreshed", x.item(OWNER, NOW + 30)),
            r("lock-ttl", "seconds null: the lock's own ttl (10).", OWNER, None, x.item(OWNER, NOW + 5, ATTEMPT, 42),
              10, "refreshed", x.item(OWNER, NOW + 10, ATTEMPT, 42)),
            r("zero", "seconds 0: 86400, as Laravel's refresh().", OWNER, 0, x.item(OWNER, NOW + 5, ATTEMPT, 42),
              86400, "refreshed", x.item(OWNER, NOW + 86400, ATTEMPT, 42)),
            r("numeric-owner", "A numeric owner (N) refreshes its lock.", NUMERIC, 30,
              x.item(NUMERIC, NOW + 5, ATTEMPT, 42), 30, "refreshed", x.item(NUMERIC, NOW + 30, ATTEMPT, 42)),
            r("held-by-other", "Another owner's lock is left alone.", OWNER, 30,
              x.item(OTHER, NOW + 30, OTHER_ATTEMPT, 6), 30, "not_refreshed", x.item(OTHER, NOW + 30, OTHER_ATTEMPT, 6)),
            r("expired", "Our lock at its expiry second (expires_at == now) is not refreshed.", OWNER, 30,
              x.item(OWNER, NOW, ATTEMPT, 42), 30, "not_refreshed", x.item(OWNER, NOW, ATTEMPT, 42)),
            r("missing", "No lock item.", OWNER, 30, None, 30, "not_refreshed", None),
            r("custom-attributes", "Attribute names from stores.dynamodb.attributes.", OWNER, 30,
              c.item(OWNER, NOW + 5, ATTEMPT, 42), 30, "refreshed", c.item(OWNER, NOW + 30, ATTEMPT, 42), ctx=c),
        ],
    }


def current_owner(layout: str) -> dict:
    x = Ctx(layout)

    def o(cid, desc, before, who, laravel):
        return case(cid, desc, x, x.input(OWNER, 10), before, [x.get()],
                    {"holder": who}, laravel, before)

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
            o("held", "Held by a string owner (a ddblock front's item).", x.item(OTHER, NOW + 30, OTHER_ATTEMPT, 6),
              holder(OTHER, NOW + 30), laravel_value(OTHER)),
            o("held-by-laravel", "Held by a string owner (stock Laravel's item).", x.item(OTHER, NOW + 30),
              holder(OTHER, NOW + 30), laravel_value(OTHER)),
            o("numeric-owner", "Held by a numeric owner: Laravel's value is the int.",
              x.item(NUMERIC, NOW + 30, OTHER_ATTEMPT, 6), holder(NUMERIC, NOW + 30), laravel_value(NUMERIC)),
            o("expired", "expires_at == now reads as expired (free).", x.item(OTHER, NOW, OTHER_ATTEMPT, 6), None, None),
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
        "would (same type; N by numeric value). Attempt ids play no part.",
        "answers": [
            {"answer": "Item carrying the owner, now < expires_at", "outcome": True, "meaning": "owned"},
            {"answer": "owner null (nobody): no Item, or now >= expires_at", "outcome": True,
             "meaning": "free: nobody owns it, as Laravel's getCurrentOwner() === null answers"},
            {"answer": "anything else", "outcome": False, "meaning": "not owned (free, expired, or another owner)"},
            {"answer": "any other error", "outcome": "error", "meaning": "an exception"},
        ],
        "cases": [
            o("ours", "Our live lock.", OWNER, x.item(OWNER, NOW + 30, ATTEMPT, 6), True),
            o("ours-other-handle", "Our owner, another attempt's write: owned (by the owner, "
              "whichever handle took it).", OWNER, x.item(OWNER, NOW + 30, OTHER_ATTEMPT, 6), True),
            o("other", "Another owner's lock.", OWNER, x.item(OTHER, NOW + 30, OTHER_ATTEMPT, 6), False),
            o("numeric-owner", "A numeric owner owns its N item. (Stock Laravel's isOwnedBy() compares "
              "the int it reads back with === and answers false.)", NUMERIC, x.item(NUMERIC, NOW + 30), True),
            o("expired", "Our lock at its expiry second is not owned any more.", OWNER,
              x.item(OWNER, NOW, ATTEMPT, 6), False),
            o("missing", "No item.", OWNER, None, False),
            o("nobody-free", "isOwnedBy(null) on a free lock: true. No owner is the owner of a free "
              "lock: Laravel's isOwnedBy() answers getCurrentOwner() === $owner, and the current "
              "owner of a free lock is null (Laravel 11+'s lock tests rely on it; 8.x answers the "
              "same through isOwnedByCurrentProcess()).", None, None, True),
            o("nobody-expired", "isOwnedBy(null) on an expired lock: true (an expired lock has no "
              "current owner).", None, x.item(OTHER, NOW, OTHER_ATTEMPT, 6), True),
            o("nobody-held", "isOwnedBy(null) on a held lock: false.", None,
              x.item(OTHER, NOW + 30, OTHER_ATTEMPT, 6), False),
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
    cases = sum(len(json.loads(t)["cases"]) for t in docs.values())
    if check:
        wrong += extra
        for p in wrong:
            print(f"conformance: {p.relative_to(HERE)} differs from generate.py", file=sys.stderr)
        if wrong:
            print("conformance: run python3 compat-tests/conformance/generate.py and review the diff",
                  file=sys.stderr)
            return 1
        print(f"conformance: {len(docs)} vector files ({cases} cases) match generate.py")
    else:
        for p in extra:
            p.unlink()
        print(f"conformance: wrote {len(docs)} files ({cases} cases) under {OUT.relative_to(HERE.parent.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
