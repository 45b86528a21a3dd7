"""The core's events reach Python's ``logging`` (logger ``ddblock`` and its children): a host whose
clock is 5 s ahead of DynamoDB's (libfaketime, as the CLI's clock test) is told so by a WARNING
on its first lock request; a host in sync is told nothing. Each runs as its own process, since
libfaketime must be preloaded into the interpreter from its start."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import ddblock

# The wall clock OFFSET off for one command (libfaketime, preloaded: compat-tests/support/skew).
SKEW = Path(__file__).resolve().parents[3] / "compat-tests/support/skew"

SCRIPT = textwrap.dedent(
    """
    import json, logging, sys
    import ddblock

    records = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append([record.name, record.levelname, record.getMessage()])

    logging.getLogger("ddblock").addHandler(Keep())
    logging.getLogger("ddblock").setLevel(logging.DEBUG)
    store = ddblock.Store(sys.argv[2], endpoint_url=sys.argv[1], log_names=sys.argv[3])
    lock = store.lock("clock-check", 10)
    assert lock.acquire()
    assert lock.release()
    print(json.dumps(records))
    """
)


def _records(endpoint: str, table: str, skew: str | None, names: str = "show") -> list[list[str]]:
    command = [sys.executable, "-c", SCRIPT, endpoint, table, names]
    if skew is not None:
        # The wall clock only: tokio's timers keep the real monotonic clock (as in the CLI tests).
        command = [str(SKEW), skew, *command]
    out = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 0, out.stderr
    records: list[list[str]] = json.loads(out.stdout)
    return records


def test_a_clock_5s_ahead_is_a_warning_in_logging(endpoint: str, table: str) -> None:
    records = _records(endpoint, table, "+5s")
    warnings = [r for r in records if r[1] == "WARNING"]
    assert len(warnings) == 1, records
    name, _, message = warnings[0]
    assert name.startswith("ddblock."), name
    assert "this host's clock is between +" in message, message
    assert "Sync the clock (NTP)" in message, message


def test_a_clock_in_sync_logs_no_warning_and_the_debug_events_flow(
    endpoint: str, table: str
) -> None:
    records = _records(endpoint, table, None)
    assert [r for r in records if r[1] == "WARNING"] == [], records
    # The lock's own debug events: what was done, never the owner token.
    messages = [r[2] for r in records if r[1] == "DEBUG"]
    assert any(m.startswith("acquired") for m in messages), records
    assert any(m.startswith("released") for m in messages), records


def test_lock_names_can_be_kept_out_of_the_logs(endpoint: str, table: str) -> None:
    shown = _records(endpoint, table, None)
    assert any("clock-check" in r[2] for r in shown), shown
    hidden = _records(endpoint, table, None, names="hide")
    assert hidden and not any("clock-check" in r[2] for r in hidden), hidden
    assert any("<hidden>" in r[2] for r in hidden), hidden


def test_refresh_logging_is_callable() -> None:
    ddblock.refresh_logging()
