"""Counts the S3 requests of each lock operation on the s3 backend, from moto's request log
(compat-tests/.run/moto.log, or $DDBLOCK_RUN_DIR/moto.log): every request names its operation
(``?x-id=PutObject``) and answer status. Prints a Markdown table (docs/s3.md's).

    source compat-tests/.run/env
    bindings/python/.venv/bin/python compat-tests/patterns/s3_requests.py
"""

from __future__ import annotations

import os
import re
import secrets
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3

import ddblock

ROOT = Path(__file__).resolve().parents[2]
LOG = Path(os.environ.get("DDBLOCK_RUN_DIR", ROOT / "compat-tests/.run")) / "moto.log"
LINE = re.compile(r'"(?:\x1b\[[0-9;]*m)*(\w+) /([^/]+)/\S*\?x-id=(\w+) HTTP[^"]*" (\d+)')


def main() -> None:
    endpoint = os.environ["DDBLOCK_TEST_MOTO"]
    bucket = f"requests-{secrets.token_hex(4)}"
    boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(Bucket=bucket)

    def store(release: str = "delete") -> ddblock.Store:
        os.environ["DDBLOCK_S3_RELEASE"] = release
        return ddblock.Store(
            endpoint_url=endpoint, prefix="", backend="s3", bucket=bucket, clock_skew_margin=0
        )

    def count(what: str, op: Callable[[], Any]) -> None:
        start = LOG.stat().st_size
        op()
        time.sleep(0.3)  # moto logs a request after answering it
        with LOG.open("rb") as f:
            f.seek(start)
            new = f.read().decode(errors="replace")
        seen: Counter[str] = Counter()
        for m in LINE.finditer(new):
            if m.group(2) == bucket:
                status = "" if m.group(4).startswith("2") else f" ({m.group(4)})"
                seen[f"{m.group(3)}{status}"] += 1
        print(f"| {what} | {' + '.join(f'{n} {k}' for k, n in seen.items())} |")

    s = store()
    print("| operation | requests |\n| --- | --- |")
    a = s.lock("free", ttl=30)
    count("acquire, free", lambda: a.acquire(blocking=False))
    b = s.lock("free", ttl=30)
    count("acquire, held by another", lambda: b.acquire(blocking=False))
    count("refresh (ours)", lambda: a.refresh(60))
    count("refresh (not ours)", lambda: b.refresh(60))
    count("holder / locked / owned", lambda: a.holder())
    count("release (not ours)", lambda: b.release())
    count("release (ours), conditional delete", lambda: a.release())
    count("acquire after a delete release (no object)", lambda: b.acquire(blocking=False))
    count("force release", lambda: b.force_release())
    old = s.lock("expired", ttl=1)
    old.acquire(blocking=False)
    while s.lock("expired").locked():  # until now >= expires_at; a takeover needs now > it
        time.sleep(0.2)
    time.sleep(1.1)
    c = s.lock("expired", ttl=30)
    count("acquire, expired: takeover", lambda: c.acquire(blocking=False))
    o = store("overwrite")
    d = o.restore_lock("expired", c.owner)
    count("release (ours), conditional overwrite", lambda: d.release())
    e = o.lock("expired", ttl=30)
    count("acquire over a released (overwritten) object", lambda: e.acquire(blocking=False))


if __name__ == "__main__":
    main()
