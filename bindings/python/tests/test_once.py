"""The once-only guard from Python: one winner, Laravel's item, ``with`` and ``run`` (done on
success, given back on failure), asyncio, lost claims, threads, and bad input."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

import ddblock
from conftest import Raw


def test_first_claim_wins_and_laravel_reads_the_counter(store: ddblock.Store, raw: Raw) -> None:
    once = store.once("evt", ttl=30)
    assert (once.event_id, once.key, once.ttl, once.done_ttl) == ("evt", "evt", 30, 86400)
    claim = once.claim()
    assert claim and claim.won and not claim.recovered
    assert claim.status is None
    item = raw.get("evt")
    assert item is not None
    assert item["value"] == {"N": "1"}
    assert len(item["ddblock_claim"]["S"]) == 16
    assert claim.expires_at == int(item["expires_at"]["N"])

    other = store.once("evt", ttl=30).claim()
    assert not other and not other.won and other.expires_at is None
    assert other.status == ddblock.OnceStatus("in_progress", 2, claim.expires_at, None)
    assert store.get("evt", consistent=True) == 2, "Laravel's Cache::get reads the counter"
    assert "won=False" in repr(other) and "in_progress" in repr(other)


def test_with_marks_done_and_skips_redeliveries(store: ddblock.Store) -> None:
    ran = []
    for _ in range(3):
        with store.once("evt", ttl=30, done_ttl=600) as claim:
            if claim:
                ran.append(1)
            else:
                assert claim.status is not None and claim.status.state == "done"
    assert ran == [1]
    status = store.once("evt", ttl=30).status()
    assert status.state == "done" and status.claims == 3 and status.done_at is not None
    assert store.once("other", ttl=30).status() == ddblock.OnceStatus("free", None, None, None)


def test_with_gives_back_when_the_body_raises(store: ddblock.Store, raw: Raw) -> None:
    with pytest.raises(RuntimeError, match="handler failed"), store.once("evt", ttl=30) as claim:
        assert claim
        raise RuntimeError("handler failed")
    assert store.once("evt", ttl=30).status().state == "given_back"
    assert raw.get(
        "evt",
    )["value"] == {"N": "0"}  # type: ignore[index]
    with store.once("evt", ttl=30) as claim:
        assert claim, "the redelivery runs it"
    once = store.once("evt", ttl=30)
    with once:
        pass
    with pytest.raises(RuntimeError, match="one delivery"), once:
        pass


def test_run_a_function(store: ddblock.Store) -> None:
    calls: list[tuple[Any, ...]] = []

    def handler(a: int, *, b: int) -> int:
        calls.append((a, b))
        return a + b

    once = store.once("evt", ttl=30)
    assert once.run(handler, 1, b=2) == ddblock.OnceResult(ran=True, value=3)
    again = store.once("evt", ttl=30).run(handler, 1, b=2)
    assert not again.ran and again.value is None
    assert again.status is not None and again.status.state == "done"
    assert calls == [(1, 2)]

    def failing() -> None:
        raise ValueError("nope")

    with pytest.raises(ValueError, match="nope"):
        store.once("bad", ttl=30).run(failing)
    assert store.once("bad", ttl=30).status().state == "given_back"


def test_a_claim_lost_before_done_raises_conflict(store: ddblock.Store, raw: Raw) -> None:
    claim = store.once("evt", ttl=30).claim()
    assert claim
    # Someone replaced the item (a Laravel put): the claim is gone.
    raw.put({"key": {"S": "evt"}, "value": {"N": "7"}, "expires_at": {"N": "4102444800"}})
    with pytest.raises(ddblock.ConflictError) as info:
        claim.done()
    assert info.value.key == "evt" and info.value.kind == "conflict"
    assert claim.give_back() is False
    # A delivery that did not win cannot mark it done either.
    skipped = store.once("evt", ttl=30).claim()
    with pytest.raises(ddblock.ConflictError, match="did not claim"):
        skipped.done()
    assert skipped.give_back() is False


def test_threads_one_winner_per_event(store: ddblock.Store) -> None:
    wins: list[str] = []
    lock = threading.Lock()

    def deliver(event: str) -> None:
        with store.once(event, ttl=30) as claim:
            if claim:
                with lock:
                    wins.append(event)

    threads = [
        threading.Thread(target=deliver, args=(f"evt-{e}",)) for e in range(4) for _ in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert sorted(wins) == [f"evt-{e}" for e in range(4)]


def test_asyncio(aio: ddblock.AsyncStore) -> None:
    async def main() -> None:
        async with aio.once("evt", ttl=30) as claim:
            assert claim

        async def handler(x: int) -> int:
            await asyncio.sleep(0)
            return x * 2

        once = aio.once("evt2", ttl=30)
        results = await asyncio.gather(
            *(aio.once("evt2", ttl=30).run(handler, 21) for _ in range(6))
        )
        assert [r.value for r in results if r.ran] == [42]
        assert (await once.status()).state == "done"
        claim = await aio.once("evt3", ttl=30).claim()
        assert await claim.give_back()
        assert (await aio.once("evt3", ttl=30).status()).state == "given_back"
        with pytest.raises(KeyError):
            async with aio.once("evt3", ttl=30) as c:
                assert c
                raise KeyError("x")
        assert (await aio.once("evt3", ttl=30).status()).state == "given_back"

    asyncio.run(main())


@pytest.mark.parametrize(
    ("event", "ttl", "done_ttl", "error"),
    [
        ("", 30, None, ddblock.InvalidKey),
        ("e", 0, None, ddblock.InvalidTtl),
        ("e", 1.5, None, ddblock.InvalidTtl),
        ("e", "30", None, ddblock.InvalidTtl),
        ("e", 30, 0, ddblock.InvalidTtl),
    ],
)
def test_bad_input(
    store: ddblock.Store, event: str, ttl: Any, done_ttl: Any, error: type[Exception]
) -> None:
    with pytest.raises(error):
        store.once(event, ttl=ttl, done_ttl=done_ttl)
