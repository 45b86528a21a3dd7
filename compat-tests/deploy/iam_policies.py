#!/usr/bin/env python3
"""Checks the IAM policies of docs/deploy.md on a moto server that enforces IAM.

    compat-tests/.venv/bin/python compat-tests/deploy/iam_policies.py

Needs target/debug/ddblock (cargo build -p ddblock-cli) and the venv of compat-tests/setup.sh.
Starts its own moto server (this file with --serve PORT: moto_server plus the three additions
docs/deploy.md describes), creates the bucket and one IAM user per `<!-- policy: NAME -->` block of
docs/deploy.md without authentication, switches IAM enforcement on, then runs each use's operations
with the CLI under that user's keys: they must succeed, and requests outside the policy must be
refused with AccessDenied. One line per check, then `N passed, M failed`; exit 1 on a failure.
"""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "deploy.md"
CLI = ROOT / "target" / "debug" / "ddblock"
FILL = {
    "REGION": "us-east-1",
    "ACCOUNT": "123456789012",
    "TABLE": "cache",
    "PREFIX": "app_",
    "BUCKET": "locks",
}
TABLE, BUCKET = FILL["TABLE"], FILL["BUCKET"]
# Every CLI run's environment but the user's keys and the endpoint: no shared AWS configuration.
CLI_ENV = {
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_CONFIG_FILE": "/nonexistent",
    "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent",
    "AWS_EC2_METADATA_DISABLED": "true",
    "DYNAMODB_CACHE_TABLE": TABLE,
    "CACHE_PREFIX": FILL["PREFIX"],
    "DDBLOCK_LAYOUT": "laravel12",
}


def serve(port):
    """moto_server, with DynamoDB requests authorized against their table ARN and LeadingKeys."""
    import moto.server
    from moto.core.exceptions import AccessDeniedError, JsonRESTError
    from moto.dynamodb.responses import DynamoHandler
    from moto.iam import access_control, policy_conditions

    local = threading.local()

    def like(expected, actual):  # IAM's StringLike: `*` any run, `?` one character
        pats = expected if isinstance(expected, list) else [expected]
        rxs = [
            re.compile(
                "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in p) + r"\Z",
                re.S,
            )
            for p in pats
        ]
        vals = actual if isinstance(actual, list) else [actual]
        return all(any(rx.match(v) for rx in rxs) for v in vals)

    policy_conditions.CONDITION_OPERATIONS["ForAllValues:StringLike"] = like
    check_conditions = access_control.IAMPolicyStatement._check_conditions
    access_control.IAMPolicyStatement._check_conditions = lambda self, values: check_conditions(
        self, values or getattr(local, "values", None)
    )

    def resource(self):
        body = json.loads(self.raw_body or b"{}")
        tables = [body["TableName"]] if "TableName" in body else list(body.get("RequestItems", {}))
        items = [body.get("Key"), body.get("Item")]
        for req in body.get("RequestItems", {}).values():
            items += (
                req.get("Keys", [])
                if isinstance(req, dict)
                else [
                    (r.get("PutRequest") or {}).get("Item")
                    or (r.get("DeleteRequest") or {}).get("Key")
                    for r in req
                ]
            )
        keys = [i["key"]["S"] for i in items if i and "S" in i.get("key", {})]
        local.values = {"dynamodb:LeadingKeys": keys} if keys else None
        return f"arn:aws:dynamodb:{self.region}:{self.current_account}:table/{','.join(tables)}"

    authorize = DynamoHandler._authenticate_and_authorize_normal_action

    def authorize_json(self, resource="*"):
        try:
            authorize(self, resource)
        except AccessDeniedError as e:  # DynamoDB's answer: JSON, 400, AccessDeniedException
            raise JsonRESTError(
                "com.amazon.coral.service#AccessDeniedException",
                f"{e.message} on resource: {resource}",
            ) from None
        finally:
            local.values = None

    DynamoHandler._determine_resource = resource
    DynamoHandler._authenticate_and_authorize_normal_action = authorize_json
    moto.server.main(["-H", "127.0.0.1", "-p", str(port)])


def policies():
    text = DOC.read_text(encoding="utf-8")
    found = re.findall(r"^<!-- policy: (\S+) -->\n```json\n(.*?)^```", text, re.M | re.S)
    out = {}
    for name, body in found:
        for k, v in FILL.items():
            body = body.replace(k, v)
        out[name] = json.loads(body)
    return out


class Checks:
    def __init__(self, endpoint, keys):
        self.endpoint, self.keys, self.passed, self.failed = endpoint, keys, 0, 0

    def env(self, user):
        ak, sk = self.keys[user]
        keep = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "TMPDIR", "LANG")}
        return {
            **keep,
            **CLI_ENV,
            "AWS_ACCESS_KEY_ID": ak,
            "AWS_SECRET_ACCESS_KEY": sk,
            "DYNAMODB_ENDPOINT": self.endpoint,
        }

    def report(self, ok, user, what, detail=""):
        self.passed += ok
        self.failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'}  {user:8} {what}" + ("" if ok else f"\n      {detail}"))

    def cli(self, user, *args, exit=0, want=None, denied=False, warns=None):
        """Runs `ddblock --json ARGS` as USER. denied: must fail with AccessDenied. A run that
        succeeds must log no warning naming a permission its policy lacks (the lock's
        DescribeTable check), unless `warns` names the text it must log."""
        r = subprocess.run(
            [str(CLI), "--json", *args],
            env=self.env(user),
            capture_output=True,
            text=True,
            timeout=60,
        )
        try:
            out = json.loads(r.stdout.strip().splitlines()[-1]) if r.stdout.strip() else {}
        except ValueError:
            out = {"stdout": r.stdout}
        # Owners are shown as their first four characters (CONTRIBUTING: no full owner tokens).
        shown = " ".join(a[:4] + "…" if p == "--owner" else a for p, a in zip(("", *args), args))
        if denied:
            err = out.get("error", {})
            ok = (
                r.returncode == 1
                and err.get("kind") == "service"
                and "AccessDenied" in err.get("message", "")
            )
            what = f"refused: ddblock {shown}"
        else:
            try:
                ok = r.returncode == exit and (want is None or bool(want(out)))
            except (KeyError, TypeError):
                ok = False
            logged = "dynamodb:DescribeTable" in r.stderr
            ok = ok and (warns in r.stderr if warns else not logged)
            what = f"ddblock {shown}" + (f" (warns: {warns})" if warns else "")
        self.report(ok, user, what, f"exit {r.returncode}: {r.stdout.strip()} {r.stderr.strip()}")
        return out

    def sdk(self, user, what, call, denied=False):
        """One request as the core sends it, with boto3 under USER's keys."""
        import boto3
        from botocore.exceptions import ClientError

        ak, sk = self.keys[user]
        ddb = boto3.client(
            "dynamodb",
            endpoint_url=self.endpoint,
            region_name="us-east-1",
            aws_access_key_id=ak,
            aws_secret_access_key=sk,
        )
        try:
            call(ddb)
            ok, detail = not denied, "succeeded"
        except ClientError as e:
            code = e.response["Error"]["Code"]
            ok, detail = denied and code == "AccessDeniedException", f"{code}: {e}"
        self.report(ok, user, ("refused: " if denied else "") + what + " (boto3)", detail)


def run_checks(c):
    s3 = ("--backend", "s3", "--bucket", BUCKET)
    other = ("--prefix", "other_")
    ttl = ("--ttl", "60")
    held = "acquired"
    # Admin: creates the table (CreateTable, DescribeTable, DescribeTimeToLive, UpdateTimeToLive).
    c.cli("admin", "create-table", want=lambda o: o["created"] and o["ttl"]["status"] == "enabled")
    c.cli("admin", "doctor", want=lambda o: o["healthy"] and o["ttl"]["status"] == "enabled")
    c.cli("admin", "list", want=lambda o: o["count"] == 0)
    c.cli("admin", "get", "k", denied=True)
    c.cli("admin", "acquire", "job", *ttl, denied=True)
    # Locks: GetItem, UpdateItem, DeleteItem under the prefix.
    owner = str(c.cli("locks", "acquire", "job", *ttl, want=lambda o: o[held]).get("owner"))
    c.cli("locks", "status", "job", want=lambda o: o["held"] and o["owner"] == owner)
    c.cli(
        "locks", "refresh", "job", "--owner", owner, "--ttl", "120", want=lambda o: o["refreshed"]
    )
    c.cli("locks", "release", "job", "--owner", owner, want=lambda o: o["outcome"] == "released")
    c.cli(
        "locks",
        "release",
        "job",
        "--owner",
        owner,
        exit=1,  # DeleteItem refused, GetItem
        want=lambda o: o["outcome"] == "not_held",
    )
    c.cli("locks", "run", "job", *ttl, "--heartbeat", "--", "true")
    c.cli("locks", "acquire", "job", *ttl, "--wait", "2", want=lambda o: o[held])
    c.cli("locks", "force-release", "job", want=lambda o: o["force_released"])
    c.cli("locks", "put", "k", "v", *ttl, denied=True)
    # Without dynamodb:DescribeTable (the patterns policy has UpdateItem): the lock is taken and the
    # check's warning names the permission.
    c.cli(
        "patterns",
        "acquire",
        "nodescribe",
        *ttl,
        want=lambda o: o[held],
        warns="dynamodb:DescribeTable",
    )
    c.cli("locks", "create-table", denied=True)
    c.cli("locks", "list", denied=True)
    c.cli("locks", "sweep", denied=True)
    c.cli("locks", *other, "status", "job", denied=True)
    c.cli("locks", *other, "acquire", "job", *ttl, denied=True)
    # Once-only guard and compare-and-set: GetItem, PutItem, UpdateItem under the prefix.
    c.cli("patterns", "once", "once:e1", *ttl, "--", "false", exit=1)  # claimed, given back
    c.cli("patterns", "once", "once:e1", *ttl, "--", "true")  # PutItem over the given-back claim
    c.cli("patterns", "once-status", "once:e1", want=lambda o: o["state"] == "done")
    c.cli("patterns", "put", "v", "a", *ttl, "--if-version", "0")
    ver = c.cli("patterns", "get", "v", "--with-version", want=lambda o: o["value"] == "a")
    c.cli("patterns", "put", "v", "b", *ttl, "--if-version", str(ver.get("version")))
    c.cli("patterns", "force-release", "once:e1", denied=True)
    c.cli("patterns", *other, "once-status", "once:e1", denied=True)
    # Cache: the item requests and the batch requests under the prefix. The CLI has get and put;
    # the other operations send the core's request with boto3.
    c.cli("cache", "put", "k", "hello", *ttl)
    c.cli("cache", "get", "k", want=lambda o: o["value"] == "hello")
    c.cli("cache", "put", "n", "5", *ttl)
    now = int(time.time())

    def item(k, expires_at=now + 60, **more):
        return {"key": {"S": k}, "value": {"N": "1"}, "expires_at": {"N": str(expires_at)}, **more}

    def key(k):
        return {"key": {"S": k}}

    names = {"#k": "key", "#v": "value", "#e": "expires_at"}
    c.sdk(
        "cache",
        "put: PutItem of an expired item, for the sweep",
        lambda d: d.put_item(TableName=TABLE, Item=item("app_old", now - 300)),
    )
    c.sdk(
        "cache",
        "many: BatchGetItem",
        lambda d: d.batch_get_item(RequestItems={TABLE: {"Keys": [key("app_k"), key("app_n")]}}),
    )
    c.sdk(
        "cache",
        "put_many: BatchWriteItem",
        lambda d: d.batch_write_item(
            RequestItems={TABLE: [{"PutRequest": {"Item": item(k)}} for k in ("app_m1", "app_m2")]}
        ),
    )

    def conditional(op, condition, values, **request):
        """A conditional request as the core sends it: `:now` added, only the names it uses."""
        said = condition + request.get("UpdateExpression", "")
        return lambda d: getattr(d, op)(
            TableName=TABLE,
            ConditionExpression=condition,
            ExpressionAttributeNames={n: v for n, v in names.items() if n in said},
            ExpressionAttributeValues={**values, ":now": {"N": str(now)}},
            **request,
        )

    def live_update(k, update, values):  # UpdateItem of an item that has not expired
        live = "attribute_exists(#k) AND #e > :now"
        return conditional("update_item", live, values, Key=key(k), UpdateExpression=update)

    add = conditional("put_item", "attribute_not_exists(#k) OR #e < :now", {}, Item=item("app_a"))
    c.sdk("cache", "add: conditional PutItem", add)
    increment = live_update("app_n", "SET #v = #v + :a", {":a": {"N": "2"}})
    c.sdk("cache", "increment: conditional UpdateItem", increment)
    touch = live_update("app_k", "SET #e = :e", {":e": {"N": str(now + 120)}})
    c.sdk("cache", "touch: conditional UpdateItem", touch)
    c.sdk("cache", "forget: DeleteItem", lambda d: d.delete_item(TableName=TABLE, Key=key("app_a")))
    c.cli("cache", "acquire", "job", *ttl, want=lambda o: o[held])  # locks are included
    c.sdk(
        "cache",
        "many with a key outside the prefix",
        lambda d: d.batch_get_item(RequestItems={TABLE: {"Keys": [key("app_k"), key("other_k")]}}),
        denied=True,
    )
    c.sdk("cache", "Scan", lambda d: d.scan(TableName=TABLE), denied=True)
    c.cli("cache", *other, "put", "k", "v", *ttl, denied=True)
    c.cli("cache", "doctor", denied=True)
    # Admin again: sweep (Scan, conditional DeleteItem) deletes the expired item, only it.
    c.cli("admin", "sweep", "--grace", "0", want=lambda o: o["deleted"] == 1)
    # S3 locks: GetObject, PutObject, DeleteObject under BUCKET/PREFIX.
    owner = str(c.cli("s3", *s3, "acquire", "job", *ttl, want=lambda o: o[held]).get("owner"))
    c.cli("s3", *s3, "status", "job", want=lambda o: o["held"] and o["owner"] == owner)
    c.cli(
        "s3", *s3, "refresh", "job", "--owner", owner, "--ttl", "120", want=lambda o: o["refreshed"]
    )
    c.cli("s3", *s3, "release", "job", "--owner", owner, want=lambda o: o["outcome"] == "released")
    c.cli("s3", *s3, "status", "job", want=lambda o: o["held"] is False)  # a missing object
    c.cli("s3", *s3, "run", "job", *ttl, "--", "true")
    c.cli("s3", *s3, "acquire", "job", *ttl, want=lambda o: o[held])
    c.cli("s3", *s3, "force-release", "job", want=lambda o: o["force_released"])
    c.cli("s3", *s3, *other, "acquire", "job", *ttl, denied=True)
    c.cli("s3", *s3, *other, "status", "job", denied=True)
    c.cli("s3", "status", "job", denied=True)  # the table: no DynamoDB permission


def main():
    if not CLI.exists():
        sys.exit(f"{CLI} is missing: run `cargo build -p ddblock-cli`")
    import boto3
    import requests

    pols = policies()
    if sorted(pols) != ["admin", "cache", "locks", "patterns", "s3"]:
        sys.exit(f"docs/deploy.md: want policies admin, cache, locks, patterns, s3: {sorted(pols)}")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    endpoint = f"http://127.0.0.1:{port}"
    started = time.monotonic()
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve", str(port)],
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        while True:
            try:
                requests.get(f"{endpoint}/moto-api/", timeout=1)
                break
            except requests.ConnectionError:
                if server.poll() is not None or time.monotonic() - started > 30:
                    sys.exit("moto server did not start")
                time.sleep(0.2)
        kw = dict(
            endpoint_url=endpoint,
            region_name="us-east-1",
            aws_access_key_id="setup",
            aws_secret_access_key="setup",
        )
        boto3.client("s3", **kw).create_bucket(Bucket=BUCKET)
        iam = boto3.client("iam", **kw)
        keys = {}
        for name, doc in pols.items():
            iam.create_user(UserName=f"ddblock-{name}")
            pol = iam.create_policy(PolicyName=f"ddblock-{name}", PolicyDocument=json.dumps(doc))
            arn = pol["Policy"]["Arn"]
            iam.attach_user_policy(UserName=f"ddblock-{name}", PolicyArn=arn)
            k = iam.create_access_key(UserName=f"ddblock-{name}")["AccessKey"]
            keys[name] = (k["AccessKeyId"], k["SecretAccessKey"])
        # From here on every request is signed by a user's key and checked against its policy.
        requests.post(f"{endpoint}/moto-api/reset-auth", data=b"0", timeout=5).raise_for_status()
        c = Checks(endpoint, keys)
        run_checks(c)
    finally:
        os.killpg(server.pid, signal.SIGTERM)  # the server's own session
        server.wait(10)
    print(f"took {time.monotonic() - started:.1f} s")
    print(f"{c.passed} passed, {c.failed} failed")
    sys.exit(1 if c.failed else 0)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        serve(int(sys.argv[2]))
    else:
        main()
