#!/usr/bin/env bash
# Flight SQL throughput benchmark: starts `orrery serve` on a free port, streams large results
# to a pyarrow client (bench.py) and compares with DuckDB's Python package in-process.
#
#   bash bench/flight-throughput/run.sh                 # 10 M rows, 3 runs each
#   ROWS=1000000 bash bench/flight-throughput/run.sh    # quick check
#   PROFILE=1 bash bench/flight-throughput/run.sh       # also a V8 CPU profile of the server
#   bash bench/flight-throughput/run.sh --cases computed --repeats 5   # extra args go to bench.py
#
# Environment: ROWS (default 10000000), THREADS (DuckDB threads, both sides; default 2),
# SERVER_THREADS (the server's DuckDB threads when they should differ from THREADS),
# CEILING=0 skips the transport-ceiling case (grpc-ceiling.mjs), PROFILE=1 (node --cpu-prof; the profile and its summary land in PROFILE_DIR, default
# bench/flight-throughput/profiles), PYTHON (interpreter for the venv, default python3).
# The venv is bench/.venv, created or refreshed when the pinned versions below change.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"

rows="${ROWS:-10000000}"
threads="${THREADS:-2}"
server_threads="${SERVER_THREADS:-$threads}"
profile="${PROFILE:-0}"
profile_dir="${PROFILE_DIR:-$here/profiles}"

node scripts/ensure-built.mjs

# Python client and in-process baseline. duckdb is pinned to the release the server embeds
# (@duckdb/node-api 1.5.6) so both sides run the same engine.
requirements="pyarrow==26.0.1 duckdb==1.5.6 adbc-driver-flightsql==1.13.0 adbc-driver-manager==1.13.0"
venv="$root/bench/.venv"
stamp="$venv/.requirements"
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null || true)" != "$requirements" ]; then
  echo "bench: creating $venv ($requirements)" >&2
  "${PYTHON:-python3}" -m venv "$venv"
  # shellcheck disable=SC2086
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check $requirements
  echo "$requirements" > "$stamp"
fi

data_dir="$(mktemp -d)"
log="$data_dir/server.log"
node_flags=()
if [ "$profile" = "1" ]; then
  mkdir -p "$profile_dir"
  node_flags=(--cpu-prof --cpu-prof-dir="$profile_dir")
fi
MICROMEGAS_API_KEYS='[{"name":"admin","key":"admin-key-0123"}]' \
MICROMEGAS_ADMINS='["admin"]' \
ORRERY_FLIGHT_SQL_ADDR=127.0.0.1:0 ORRERY_HTTP_ADDR=127.0.0.1:0 ORRERY_DATA_DIR="$data_dir" \
ORRERY_DUCKDB_THREADS="$server_threads" \
  node "${node_flags[@]}" dist/src/cli.js serve >"$log" 2>&1 &
server=$!
# Transport ceiling (grpc-ceiling.mjs): pre-encoded FlightData from a bare grpc-js server.
ceiling_log="$data_dir/ceiling.log"
ceiling=""
if [ "${CEILING:-1}" = "1" ]; then
  node "$here/grpc-ceiling.mjs" >"$ceiling_log" 2>&1 &
  ceiling=$!
fi
stop_server() {
  if kill -0 "$server" 2>/dev/null; then
    kill -INT "$server" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$server" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$server" 2>/dev/null && kill -KILL "$server" 2>/dev/null
    wait "$server" 2>/dev/null || true
  fi
}
cleanup() {
  stop_server
  if [ -n "$ceiling" ] && kill -0 "$ceiling" 2>/dev/null; then kill -INT "$ceiling" 2>/dev/null || true; wait "$ceiling" 2>/dev/null || true; fi
  rm -rf "$data_dir"
}
trap cleanup EXIT

port=""
for _ in $(seq 1 150); do
  port=$(sed -n 's/.*Flight SQL listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$log" | head -1)
  [ -n "$port" ] && break
  kill -0 "$server" 2>/dev/null || break
  sleep 0.2
done
if [ -z "$port" ]; then
  echo "bench: the server did not start:" >&2
  cat "$log" >&2
  exit 1
fi
echo "bench: Orrery (pid $server) on 127.0.0.1:$port, $rows rows" >&2
ceiling_args=()
if [ -n "$ceiling" ]; then
  ceiling_port=""
  for _ in $(seq 1 100); do
    ceiling_port=$(sed -n 's/^ceiling listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$ceiling_log" | head -1)
    [ -n "$ceiling_port" ] && break
    kill -0 "$ceiling" 2>/dev/null || break
    sleep 0.2
  done
  if [ -n "$ceiling_port" ]; then
    echo "bench: $(head -1 "$ceiling_log")" >&2
    ceiling_args=(--ceiling-port "$ceiling_port" --ceiling-pid "$ceiling")
  else
    echo "bench: the ceiling server did not start (skipping that case):" >&2
    cat "$ceiling_log" >&2
  fi
fi

status=0
"$venv/bin/python" "$here/bench.py" --port "$port" --rows "$rows" --threads "$threads" --server-pid "$server" "${ceiling_args[@]}" "$@" || status=$?

stop_server
if [ "$profile" = "1" ]; then
  latest="$(ls -t "$profile_dir"/*.cpuprofile 2>/dev/null | head -1 || true)"
  if [ -n "$latest" ]; then
    echo "bench: CPU profile $latest" >&2
    node "$here/cpuprofile-top.mjs" "$latest" 25 | tee "${latest%.cpuprofile}.top.txt"
  else
    echo "bench: no .cpuprofile was written (did the server exit cleanly?)" >&2
  fi
fi
if [ "$status" -ne 0 ]; then
  echo "bench: bench.py failed ($status); server log:" >&2
  tail -30 "$log" >&2
fi
exit "$status"
