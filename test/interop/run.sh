#!/usr/bin/env bash
# Interop: the real clients users run (pyarrow, ADBC, the JDBC driver, arrow-go as used by
# Grafana, and the Arrow project's own integration scenarios) against a started Orrery over
# a socket. Builds first; installs each client from its registry on first use.
# Exits non-zero when any suite fails.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"
node scripts/ensure-built.mjs || exit 1

data_dir="$(mktemp -d)"
log="$data_dir/server.log"
export ORRERY_ADMIN_USER=admin ORRERY_ADMIN_KEY=admin-key-0123
export ORRERY_READER_USER=reader ORRERY_READER_KEY=reader-key-0123
MICROMEGAS_API_KEYS="[{\"name\":\"$ORRERY_ADMIN_USER\",\"key\":\"$ORRERY_ADMIN_KEY\"},{\"name\":\"$ORRERY_READER_USER\",\"key\":\"$ORRERY_READER_KEY\",\"audiences\":[\"public\"]}]" \
MICROMEGAS_ADMINS="[\"$ORRERY_ADMIN_USER\"]" \
ORRERY_FLIGHT_SQL_ADDR=127.0.0.1:0 ORRERY_HTTP_ADDR=127.0.0.1:0 ORRERY_DATA_DIR="$data_dir" \
  node dist/src/cli.js serve >"$log" 2>&1 &
server=$!
cleanup() {
  kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
  rm -rf "$data_dir"
}
trap cleanup EXIT

port=""
http_port=""
# A fresh data folder creates its Postgres cluster first (initdb: 10-30 s on a loaded machine): wait while the
# server lives, up to two minutes.
for _ in $(seq 1 600); do
  port=$(sed -n 's/.*Flight SQL listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$log" | head -1)
  http_port=$(sed -n 's/.*HTTP (OTLP.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$log" | head -1)
  [ -n "$port" ] && [ -n "$http_port" ] && break
  kill -0 "$server" 2>/dev/null || break
  sleep 0.2
done
if [ -z "$port" ] || [ -z "$http_port" ]; then
  echo "interop: the server did not start:" >&2
  cat "$log" >&2
  exit 1
fi
export ORRERY_FLIGHT_HOST=127.0.0.1 ORRERY_FLIGHT_PORT="$port" ORRERY_HTTP_PORT="$http_port"
echo "interop: Orrery on 127.0.0.1:$port (OTLP/HTTP on $http_port)"

suites=("python:test/interop/python/run.sh" "micromegas:test/interop/python/micromegas/run.sh" "java:test/interop/java/run.sh" "go:test/interop/go/run.sh" "scenarios:test/interop/go/run-scenarios.sh")
failed=()
passed=0
for entry in "${suites[@]}"; do
  name="${entry%%:*}"
  script="${entry#*:}"
  echo "== interop: $name"
  if bash "$script"; then
    passed=$((passed + 1))
  else
    failed+=("$name")
  fi
done

if ! kill -0 "$server" 2>/dev/null; then
  echo "interop: the server died during the run:" >&2
  tail -50 "$log" >&2
  failed+=("server")
fi
echo "interop suites: $passed passed, ${#failed[@]} failed${failed:+ (${failed[*]})}"
[ ${#failed[@]} -eq 0 ]
