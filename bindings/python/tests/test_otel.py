"""ddblock's metrics and spans as an application with OpenTelemetry's SDK sees them (its in-memory
metric reader and span exporter), against a real server: every acquire and release counted by
outcome, the waits and holds measured, a lost lease and an unknown outcome (through the fault
proxy) counted, spans named and attributed as docs/observability.md says, children of the
caller's span; nothing once uninstrumented, and instrumented at import only when the application
has set OpenTelemetry up."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import ddblock
from conftest import FaultProxy, Raw
from ddblock import otel

OUTCOME_KEYS = ("ddblock.lock.outcome", "ddblock.lock.release_outcome", "ddblock.lock.cleanup")


@dataclass
class Seen:
    """What the SDK recorded."""

    reader: InMemoryMetricReader
    spans: InMemorySpanExporter
    tracer: Any

    def counts(self, table: str) -> Counter[tuple[str, str]]:
        """(metric, outcome) -> a counter's sum or a histogram's count, of `table` only."""
        out: Counter[tuple[str, str]] = Counter()
        data = self.reader.get_metrics_data()
        for resource in data.resource_metrics if data else []:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    for point in metric.data.data_points:
                        attrs = dict(point.attributes or {})
                        if attrs.get("db.collection.name") != table:
                            continue
                        outcome = ",".join(str(attrs[k]) for k in OUTCOME_KEYS if k in attrs)
                        # A histogram's number of values, or a counter's sum.
                        n = point.count if hasattr(point, "count") else point.value
                        out[(metric.name, outcome)] += int(n)
        return out

    def bounds(self, metric: str) -> list[float]:
        """The bucket boundaries of histogram `metric`'s points."""
        data = self.reader.get_metrics_data()
        for resource in data.resource_metrics if data else []:
            for scope in resource.scope_metrics:
                for m in scope.metrics:
                    point = m.data.data_points[0]
                    if m.name == metric and isinstance(point, HistogramDataPoint):
                        return list(point.explicit_bounds)
        return []

    def finished(self, table: str) -> list[ReadableSpan]:
        spans = self.spans.get_finished_spans()
        return [s for s in spans if (s.attributes or {}).get("db.collection.name") == table]


@pytest.fixture
def seen() -> Iterator[Seen]:
    reader = InMemoryMetricReader()
    exporter = InMemorySpanExporter()
    tracers = TracerProvider()
    tracers.add_span_processor(SimpleSpanProcessor(exporter))
    otel.instrument(meter_provider=MeterProvider(metric_readers=[reader]), tracer_provider=tracers)
    try:
        yield Seen(reader, exporter, tracers.get_tracer("app"))
    finally:
        otel.uninstrument()


def outcome_of(span: ReadableSpan) -> object:
    attrs = span.attributes or {}
    return attrs.get("ddblock.lock.outcome", attrs.get("ddblock.lock.release_outcome"))


def test_acquires_and_releases_are_counted_and_traced(store: ddblock.Store, seen: Seen) -> None:
    a, b = store.lock("counted", 60), store.lock("counted", 60)
    with seen.tracer.start_as_current_span("request") as parent:
        assert a.acquire(blocking=False)
        assert not b.acquire(blocking=False)
        assert not b.acquire(timeout=0.3)
        assert a.release()
        assert not a.release()
        assert b.acquire(blocking=False)
        assert not a.release()
        b.force_release()
    with store.lock("counted", 60, timeout=1):
        pass

    c = seen.counts(store.table)
    acq, rel = "ddblock.lock.acquisitions", "ddblock.lock.releases"
    assert c[(acq, "acquired")] == 3, c
    assert c[(acq, "held")] == 1 and c[(acq, "timed_out")] == 1, c
    assert c[(rel, "released")] == 2, c
    assert c[(rel, "not_held")] == 1 and c[(rel, "other_owner")] == 1, c
    # The waits: the timed-out acquire and the `with` (timeout 1 s); the holds: both releases.
    waits = c[("ddblock.lock.wait.duration", "timed_out")]
    assert waits + c[("ddblock.lock.wait.duration", "acquired")] == 2, c
    assert c[("ddblock.lock.hold.duration", "released")] == 2, c
    # Buckets for seconds, as the core's table advises (not the SDK's default, made for ms).
    advised = next(i[4] for i in ddblock._native.instruments() if i[0].endswith("hold.duration"))
    assert seen.bounds("ddblock.lock.hold.duration") == advised and advised[0] == 0.005, advised

    spans = seen.finished(store.table)
    names = Counter((s.name, outcome_of(s)) for s in spans)
    assert names[("ddblock.lock.acquire", "acquired")] == 3, names
    assert names[("ddblock.lock.acquire", "held")] == 1, names
    assert names[("ddblock.lock.acquire", "timed_out")] == 1, names
    assert names[("ddblock.lock.release", "released")] == 2, names
    assert names[("ddblock.lock.release", "not_held")] == 1, names
    assert names[("ddblock.lock.release", "other_owner")] == 1, names
    first = spans[0]
    assert first.parent is not None and first.parent.span_id == parent.get_span_context().span_id
    attrs = dict(first.attributes or {})
    assert attrs["ddblock.key_layout"] == store.layout, attrs
    assert not any(a.owner in str(v) or b.owner in str(v) for v in attrs.values()), attrs
    assert "counted" not in str(attrs), "no lock name on a span"


def test_async_waits_cancelled_and_spans(aio: ddblock.AsyncStore, seen: Seen) -> None:
    async def main() -> None:
        holder = aio.lock("a", 60)
        assert await holder.acquire(blocking=False)
        waiter = aio.lock("a", 60)
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(waiter.acquire(), 0.3)
        assert await holder.release()
        async with aio.lock("a", 60, timeout=1):
            pass

    asyncio.run(main())
    c = seen.counts(aio.table)
    assert c[("ddblock.lock.acquisitions", "cancelled")] == 1, c
    assert c[("ddblock.lock.acquisitions", "acquired")] == 2, c
    names = Counter((s.name, outcome_of(s)) for s in seen.finished(aio.table))
    assert names[("ddblock.lock.acquire", "cancelled")] == 1, names
    assert names[("ddblock.lock.release", "released")] == 2, names


def test_a_lost_lease_and_an_unknown_outcome_are_counted(
    store: ddblock.Store, endpoint: str, proxy: FaultProxy, raw: Raw, seen: Seen
) -> None:
    beating = ddblock.Store(store.table, endpoint_url=endpoint, heartbeat_interval=0.2)
    lock = beating.lock("job", 30, timeout=5)
    with pytest.raises(ddblock.LeaseLost), lock:
        store.lock("job").force_release()
        deadline = time.monotonic() + 3
        while not lock.lease_lost and time.monotonic() < deadline:
            time.sleep(0.05)

    proxy.faults(drop_response_rate=1.0, drop_ops=["UpdateItem"])
    lost = ddblock.Store(store.table, endpoint_url=proxy.url, max_attempts=2, attempt_timeout=0.4)
    with pytest.raises(ddblock.OutcomeUnknown):
        lost.lock("orders", 3600).acquire(blocking=False)
    assert raw.get("orders") is None

    c = seen.counts(store.table)
    assert c[("ddblock.lock.lease_lost", "")] == 1, c
    assert c[("ddblock.lock.unknown_outcomes", "clean")] == 1, c
    assert c[("ddblock.lock.acquisitions", "unknown")] == 1, c
    spans = seen.finished(store.table)
    unknown = [s for s in spans if outcome_of(s) == "unknown"]
    assert len(unknown) == 1, [(s.name, s.attributes) for s in spans]
    # The `with` whose lease was lost: its release span is an error of kind lease_lost.
    lost_release = [s for s in spans if (s.attributes or {}).get("error.type") == "lease_lost"]
    assert [s.name for s in lost_release] == ["ddblock.lock.release"], spans


def test_nothing_is_recorded_once_uninstrumented(store: ddblock.Store, seen: Seen) -> None:
    otel.uninstrument()
    assert not otel.instrumented()
    lock = store.lock("quiet", 60)
    assert lock.acquire(blocking=False) and lock.release()
    assert seen.counts(store.table) == Counter()
    assert seen.finished(store.table) == []


SCRIPT = textwrap.dedent(
    """
    import sys
    if sys.argv[1] == "configured":
        from opentelemetry import metrics
        from opentelemetry.sdk.metrics import MeterProvider
        metrics.set_meter_provider(MeterProvider())
    elif sys.argv[1] == "imported":
        import opentelemetry.metrics
    import ddblock
    print(ddblock.otel.instrumented())
    """
)


@pytest.mark.parametrize(
    ("setup", "expected"), [("configured", "True"), ("imported", "False"), ("none", "False")]
)
def test_instrumented_at_import_only_when_set_up(setup: str, expected: str) -> None:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, setup],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env=dict(os.environ),
    )
    assert out.stdout.strip() == expected, out.stderr
