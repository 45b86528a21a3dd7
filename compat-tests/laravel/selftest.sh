#!/usr/bin/env bash
# Self-test of the Laravel harness (harness.php, real AWS SDK for PHP): runs
# selftest.php for every key layout (laravel8, laravel11, laravel12, prefix
# 'app_') against moto, dynalite and DynamoDB Local. Each run uses its own
# table, deleted at the end.
#
#   compat-tests/laravel/selftest.sh
#
# Servers: uses DDBLOCK_TEST_MOTO / DDBLOCK_TEST_DYNALITE / DDBLOCK_TEST_DDBLOCAL
# if all are set, else the servers in compat-tests/.run/env if they answer, else
# starts them with compat-tests/servers/servers.sh (and stops them again on exit).
# Needs what compat-tests/setup.sh installs: php (8.x, curl), Debian's Laravel and Guzzle, and
# the AWS SDK for PHP it finds (see compat-tests/laravel/support.php).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SERVERS="$HERE/../servers/servers.sh"
ENV_FILE="$HERE/../.run/env"

# answers URL: does a DynamoDB endpoint answer ListTables (through the harness)?
answers() {
    echo '{"op":"raw","call":"ListTables","params":{}}' |
        DDB_ENDPOINT="$1" DDB_TABLE=unused DDB_TIMEOUT=3 php "$HERE/harness.php" 2>/dev/null |
        grep -q '"ok":true'
}

# The servers (compat-tests/servers/servers.sh); each one's endpoint is in DDBLOCK_TEST_<NAME>.
SERVER_NAMES=(moto dynalite ddblocal)

# all_set: is every server's variable set?  all_answer: does every server answer?
all_set() {
    local server var
    for server in "${SERVER_NAMES[@]}"; do
        var="DDBLOCK_TEST_${server^^}"
        [[ -n ${!var:-} ]] || return 1
    done
}
all_answer() {
    local server var
    for server in "${SERVER_NAMES[@]}"; do
        var="DDBLOCK_TEST_${server^^}"
        if [[ -z ${!var:-} ]] || ! answers "${!var}"; then
            return 1
        fi
    done
}

if ! all_set; then
    if [[ -f $ENV_FILE ]]; then
        # shellcheck disable=SC1090
        source "$ENV_FILE"
    fi
    if ! all_answer; then
        echo "[selftest] starting moto, dynalite and DynamoDB Local (compat-tests/servers/servers.sh)" >&2
        trap '"$SERVERS" stop' EXIT
        "$SERVERS" start --owner $$
        # shellcheck disable=SC1090
        source "$ENV_FILE"
    fi
fi

failed=()
for server in "${SERVER_NAMES[@]}"; do
    var="DDBLOCK_TEST_${server^^}"
    url="${!var}"
    for layout in laravel8 laravel11 laravel12; do
        echo "== $server ($url), $layout"
        if ! php "$HERE/selftest.php" "$url" "$layout"; then
            failed+=("$server/$layout")
        fi
    done
done

if ((${#failed[@]})); then
    echo "[selftest] FAILED: ${failed[*]}"
    exit 1
fi
echo "[selftest] all passed (${SERVER_NAMES[*]} x laravel8, laravel11, laravel12)"
