"""ddblock's spans and metrics in OpenTelemetry, when the application uses it.

``instrument()`` makes the core's metrics (``ddblock.lock.acquisitions``, ``...wait.duration``,
... : the names, units and meanings come from the core's table, docs/observability.md) with the
global (or given) meter provider, and wraps every acquire and release in a span
(``ddblock.lock.acquire``, ``ddblock.lock.release``) whose parent is the caller's current span.
``uninstrument()`` stops both. ddblock instruments itself at import when OpenTelemetry is
already imported and a meter or tracer provider is set; ``opentelemetry-instrument`` finds it
by its entry point (``DdblockInstrumentor``). Otherwise nothing is recorded, and nothing calls
into Python per lock operation. ``opentelemetry-api`` is not a dependency.

>>> from ddblock import otel
>>> otel.instrumented()
False
"""

from __future__ import annotations

import sys
from types import TracebackType
from typing import TYPE_CHECKING, Any

from . import _native
from .exceptions import DdblockError, LockTimeout, OutcomeUnknown

if TYPE_CHECKING:
    from ._native import Lock as _NativeLock

__all__ = ["DdblockInstrumentor", "instrument", "instrumented", "uninstrument"]

#: The tracer of ddblock's spans while instrumented (an ``opentelemetry.trace.Tracer``).
_tracer: Any = None


def instrument(*, meter_provider: Any = None, tracer_provider: Any = None) -> None:
    """Records ddblock's metrics and spans with these providers (default: the global ones).

    Needs ``opentelemetry-api``; a second call replaces the first.
    """
    global _tracer
    from opentelemetry import metrics, trace

    from . import __version__

    meter = (meter_provider or metrics.get_meter_provider()).get_meter("ddblock", __version__)
    record: dict[str, Any] = {}
    for name, kind, unit, meaning, boundaries in _native.instruments():
        if kind == "counter":
            record[name] = meter.create_counter(name, unit=unit, description=meaning).add
        else:
            try:
                histogram = meter.create_histogram(
                    name,
                    unit=unit,
                    description=meaning,
                    explicit_bucket_boundaries_advisory=boundaries,
                )
            except TypeError:  # opentelemetry-api before 1.23 takes no advice
                histogram = meter.create_histogram(name, unit=unit, description=meaning)
            record[name] = histogram.record

    def listener(name: str, value: float, attributes: dict[str, str]) -> None:
        record[name](value if name.endswith(".duration") else int(value), attributes)

    _native._listen(listener)
    _tracer = (tracer_provider or trace.get_tracer_provider()).get_tracer("ddblock", __version__)


def uninstrument() -> None:
    """Stops recording ddblock's metrics and spans."""
    global _tracer
    _native._listen(None)
    _tracer = None


def instrumented() -> bool:
    """Whether ddblock records its spans and metrics now."""
    return _tracer is not None


class DdblockInstrumentor:
    """ddblock as ``opentelemetry-instrument`` and OpenTelemetry's instrumentors know it."""

    def instrumentation_dependencies(self) -> tuple[str, ...]:
        """No instrumented library to check for: ddblock is its own."""
        return ()

    def instrument(self, **kwargs: Any) -> None:
        """As :func:`instrument` (``meter_provider``, ``tracer_provider``)."""
        instrument(
            meter_provider=kwargs.get("meter_provider"),
            tracer_provider=kwargs.get("tracer_provider"),
        )

    def uninstrument(self, **kwargs: Any) -> None:
        """As :func:`uninstrument`."""
        uninstrument()


def _configured() -> bool:
    """Whether the application has imported OpenTelemetry and set a provider."""
    if "opentelemetry" not in sys.modules:
        return False
    try:
        from opentelemetry import metrics, trace
    except ImportError:
        return False
    # Before the application sets one, the API hands out its proxy providers.
    meters = type(metrics.get_meter_provider()).__name__
    tracers = type(trace.get_tracer_provider()).__name__
    return meters not in ("_ProxyMeterProvider", "NoOpMeterProvider") or tracers not in (
        "ProxyTracerProvider",
        "NoOpTracerProvider",
    )


class _Span:
    """One acquire or release span: its outcome from the call's result or exception."""

    __slots__ = ("_key", "_scope", "_span", "_waits")

    def __init__(self, operation: str, lock: _NativeLock, waits: bool) -> None:
        acquire = operation == "acquire"
        self._key = "ddblock.lock.outcome" if acquire else "ddblock.lock.release_outcome"
        self._waits = waits
        self._scope = _tracer.start_as_current_span(
            f"ddblock.lock.{operation}",
            attributes=dict(lock._attributes),
            record_exception=False,
            set_status_on_exception=False,
        )
        self._span: Any = None

    def __enter__(self) -> _Span:
        self._span = self._scope.__enter__()
        return self

    def outcome(self, result: bool | str) -> None:
        """The call returned `result`: a release's outcome, or whether an acquire took it."""
        if result is True:
            result = "acquired"
        elif result is False:
            result = "timed_out" if self._waits else "held"
        self._span.set_attribute(self._key, result)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc is not None:
            if isinstance(exc, OutcomeUnknown):
                outcome = "unknown"
            elif isinstance(exc, LockTimeout):
                outcome = "timed_out"
            elif not isinstance(exc, Exception):  # CancelledError, KeyboardInterrupt
                outcome = "cancelled"
            else:
                outcome = "error"
                kind = exc.kind if isinstance(exc, DdblockError) else None
                self._span.set_attribute("error.type", kind or type(exc).__qualname__)
                self._span.record_exception(exc)
                from opentelemetry.trace import StatusCode

                self._span.set_status(StatusCode.ERROR, str(exc))
            self._span.set_attribute(self._key, outcome)
        self._scope.__exit__(exc_type, exc, tb)


class _NoSpan:
    """What a lock operation gets while ddblock is not instrumented: nothing."""

    __slots__ = ()

    def __enter__(self) -> _NoSpan:
        return self

    def outcome(self, result: bool | str) -> None:
        """Nothing to record."""

    def __exit__(self, *exc: object) -> None:
        return None


_NO_SPAN = _NoSpan()


def span(operation: str, lock: _NativeLock, waits: bool = False) -> _Span | _NoSpan:
    """The span of one `operation` (``acquire``, ``release``) of `lock`; `waits`: it may wait."""
    if _tracer is None:
        return _NO_SPAN
    return _Span(operation, lock, waits)
