"""A Python peer for the PHP driver's cross-language tests (bindings/php/tests/CrossLanguageTest.php).

Runs the ddblock Python binding (bindings/python, built into bindings/python/.venv) over JSON
lines: one command per stdin line, one answer per stdout line.

    python peer.py '{"table": "t", "prefix": "app_", "layout": "laravel8", "endpoint": "http://..."}'
    {"op": "acquire", "name": "n", "ttl": 30, "owner": "o" or null} -> {"ok": true, "acquired": bool, "owner": str}
    {"op": "release", "name": "n", "owner": "o"}                    -> {"ok": true, "released": bool}
    {"op": "holder", "name": "n"}                                   -> {"ok": true, "holder": {"owner", "expires_at"} | null}
    {"op": "lock_key", "name": "n"}                                 -> {"ok": true, "key": str}
Failures answer {"ok": false, "error": "..."}.
"""

import json
import sys

import ddblock


def main() -> None:
    cfg = json.loads(sys.argv[1])
    store = ddblock.Store(
        cfg["table"], prefix=cfg["prefix"], layout=cfg["layout"], endpoint_url=cfg["endpoint"]
    )
    for line in sys.stdin:
        cmd = json.loads(line)
        try:
            op = cmd["op"]
            if op == "acquire":
                lock = store.lock(cmd["name"], cmd["ttl"], owner=cmd.get("owner"))
                out = {"acquired": lock.acquire(blocking=False), "owner": lock.owner}
            elif op == "release":
                out = {"released": store.restore_lock(cmd["name"], cmd["owner"]).release()}
            elif op == "holder":
                h = store.lock(cmd["name"]).holder()
                out = {"holder": None if h is None else {"owner": h.owner, "expires_at": h.expires_at}}
            elif op == "lock_key":
                out = {"key": store.lock_key(cmd["name"])}
            else:
                raise ValueError(f"unknown op {op!r}")
            answer = {"ok": True, **out}
        except Exception as e:  # the peer reports, the PHP test decides
            answer = {"ok": False, "error": f"{type(e).__name__}: {e}"}
        print(json.dumps(answer), flush=True)


main()
