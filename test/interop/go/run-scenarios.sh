#!/usr/bin/env bash
# Runs the Arrow project's Go integration client (arrow-go's
# arrow-flight-integration-client, version pinned by the `tool` line of go.mod) through the
# `flight_sql` and `flight_sql:extension` scenarios against Orrery's Flight SQL server
# in front of the canned scenario backend (test/fixtures/scenario-server.ts).
# The caller runs `npm run build` first. Exits non-zero if any scenario fails.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
client_pkg=github.com/apache/arrow-go/v18/arrow/internal/flight_integration/cmd/arrow-flight-integration-client
client="$here/.bin/arrow-flight-integration-client"
server_js="${SCENARIO_SERVER_JS:-$root/dist/test/fixtures/scenario-server.js}"
scenarios=("flight_sql" "flight_sql:extension")
# The client retries a failed run up to 3 times and reports only the last error, so a
# pass can hide a failed first attempt. Each attempt's first backend call is traced by
# the fixture: more than one of them within a scenario means a retry.
declare -A first_call=(["flight_sql"]="getCatalogs" ["flight_sql:extension"]="sqlInfo")
client_timeout="${SCENARIO_CLIENT_TIMEOUT:-120}"

if [[ ! -f "$server_js" ]]; then
  echo "run-scenarios: $server_js is missing; run 'npm run build' first" >&2
  exit 2
fi

echo "run-scenarios: building $client_pkg"
if ! (cd "$here" && go build -o "$client" "$client_pkg"); then
  echo "run-scenarios: could not build the integration client" >&2
  exit 2
fi

log="$(mktemp -t orrery-scenario-server.XXXXXX.log)"
node "$server_js" >"$log" 2>&1 &
server_pid=$!
stop_server() {
  if kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null
    for _ in $(seq 1 50); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$server_pid" 2>/dev/null
  fi
  wait "$server_pid" 2>/dev/null
}
trap stop_server EXIT

port=""
for _ in $(seq 1 300); do
  port="$(sed -n 's/^Flight SQL listening on 127\.0\.0\.1:\([0-9][0-9]*\).*/\1/p' "$log" | head -n1)"
  [[ -n "$port" ]] && break
  if ! kill -0 "$server_pid" 2>/dev/null; then break; fi
  sleep 0.1
done
if [[ -z "$port" ]]; then
  echo "run-scenarios: the scenario server did not start; its output:" >&2
  cat "$log" >&2
  exit 2
fi
echo "run-scenarios: scenario server pid $server_pid on 127.0.0.1:$port (log $log)"

passed=0
failed=0
for scenario in "${scenarios[@]}"; do
  echo "=== scenario $scenario"
  start_line=$(($(wc -l <"$log") + 1))
  if timeout "$client_timeout" "$client" -host 127.0.0.1 -port "$port" -scenario "$scenario"; then
    attempts=$(tail -n "+$start_line" "$log" | grep -c "^\[scenario\] ${first_call[$scenario]}\b")
    if [[ $attempts -gt 1 ]]; then
      echo "--- FAIL: $scenario passed only after $attempts attempts; server trace for this scenario:"
      tail -n "+$start_line" "$log" | tail -n 200
      failed=$((failed + 1))
    else
      echo "--- PASS: $scenario"
      passed=$((passed + 1))
    fi
  else
    rc=$?
    echo "--- FAIL: $scenario (client exit $rc); server trace for this scenario:"
    tail -n "+$start_line" "$log" | tail -n 200
    failed=$((failed + 1))
  fi
done

echo "scenarios: $passed passed, $failed failed"
if [[ $failed -eq 0 ]]; then
  stop_server
  rm -f "$log"
  exit 0
fi
echo "run-scenarios: server log kept at $log"
exit 1
