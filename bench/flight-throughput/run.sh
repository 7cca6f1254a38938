#!/usr/bin/env bash
# Flight SQL throughput benchmark: starts `orrery serve` on free ports with its default settings,
# streams large results to a pyarrow client, ADBC's DB-API and the Arrow Flight SQL JDBC driver
# (bench.py, java/ThroughputClient.java) and compares with DuckDB's Python package producing the
# same Arrow data in-process; also measures the transport ceiling (grpc-ceiling.mjs: pre-encoded
# FlightData from a bare grpc-js server). Exit status 1 on a wrong answer.
#
#   bash bench/flight-throughput/run.sh                 # 10 M rows, 3 runs each
#   ROWS=1000000 bash bench/flight-throughput/run.sh    # quick check
#   PROFILE=1 bash bench/flight-throughput/run.sh --cases stored   # + V8 CPU profile of the server
#   COMPARE_ROOT=/tmp/experiment bash bench/flight-throughput/run.sh   # A/B two builds
#   bash bench/flight-throughput/run.sh --repeats 5 --cases computed  # extra args go to bench.py
#
# Environment:
#   ROWS            rows per result (default 10000000)
#   THREADS         in-process DuckDB threads (default 2, the machine's cores)
#   SERVER_THREADS  the server's DuckDB threads (ORRERY_DUCKDB_THREADS; default: unset, the server's default)
#   JDBC=0          skip the JDBC client (it needs java and mvn, which resolves the driver)
#   DUCKDB_JDBC=0   skip DuckDB's own JDBC driver in-process (JDBC's reference; 15-45 s a run)
#   ORRERY_REF / ORRERY_ROOT   which build serves (see bench/lib.sh; default: the work tree, built if stale)
#   COMPARE_ROOT    a second built tree (B: dist/, proto/, package.json, node_modules reachable); it
#                   is served too and its Flight runs alternate with A's run by run, so load drifting
#                   on a shared machine hits both alike
#   CEILING=0       skip the transport-ceiling case
#   PROFILE=1       node --cpu-prof on server A; profile and summary in PROFILE_DIR
#                   (default bench/flight-throughput/profiles)
#   WAITS=1         the servers preload doget-waits.mjs: per client, how long each large DoGet waited for
#                   its batches (the server's side) and for the client to read (printed at the end)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
source "$here/../lib.sh"

rows="${ROWS:-10000000}"
threads="${THREADS:-2}"
profile_dir="${PROFILE_DIR:-$here/profiles}"
mapfile -t node_flags < <(bench_profile_flags "$profile_dir")

bench_ensure_built
python="$(bench_venv)"
work_dir="$(bench_data_dir flight)"

server_a="" server_b="" ceiling=""
stop_pid() {
  ORRERY_PID="$1"
  orrery_stop
}
cleanup() {
  [ -n "$server_b" ] && stop_pid "$server_b"
  [ -n "$server_a" ] && stop_pid "$server_a"
  [ -n "$ceiling" ] && stop_pid "$ceiling"
  rm -rf "$work_dir"
}
trap cleanup EXIT

if [ -n "${SERVER_THREADS:-}" ]; then export ORRERY_DUCKDB_THREADS="$SERVER_THREADS"; fi
if [ "${WAITS:-0}" = "1" ]; then
  node_flags+=(--import "$here/doget-waits.mjs")
  export WAITS_OUT="$work_dir/waits.jsonl" WAITS_ROOT="$ORRERY_ROOT"
fi
orrery_start serve "$work_dir/a" "${node_flags[@]}" || exit 1
server_a=$ORRERY_PID
echo "bench: Orrery A ($ORRERY_ROOT, pid $server_a) on 127.0.0.1:$ORRERY_FLIGHT_PORT" >&2
args=(--port "$ORRERY_FLIGHT_PORT" --server-pid "$server_a")

if [ -n "${COMPARE_ROOT:-}" ]; then
  [ -f "$COMPARE_ROOT/dist/src/cli.js" ] || { echo "bench: no $COMPARE_ROOT/dist/src/cli.js" >&2; exit 1; }
  b_flags=()
  if [ "${WAITS:-0}" = "1" ]; then b_flags=(--import "$here/doget-waits.mjs"); fi
  WAITS_OUT="$work_dir/waits-b.jsonl" WAITS_ROOT="$COMPARE_ROOT" ORRERY_ROOT="$COMPARE_ROOT" orrery_start serve "$work_dir/b" "${b_flags[@]}" || exit 1
  server_b=$ORRERY_PID
  echo "bench: Orrery B ($COMPARE_ROOT, pid $server_b) on 127.0.0.1:$ORRERY_FLIGHT_PORT" >&2
  args+=(--compare-port "$ORRERY_FLIGHT_PORT" --compare-pid "$server_b")
fi

if [ "${CEILING:-1}" = "1" ]; then
  node "$here/grpc-ceiling.mjs" "$ORRERY_ROOT" >"$work_dir/ceiling.log" 2>&1 &
  ceiling=$!
  ceiling_port=""
  for _ in $(seq 1 150); do
    ceiling_port=$(sed -n 's/^ceiling listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$work_dir/ceiling.log" | head -1)
    [ -n "$ceiling_port" ] && break
    kill -0 "$ceiling" 2>/dev/null || break
    sleep 0.2
  done
  if [ -n "$ceiling_port" ]; then
    echo "bench: $(head -1 "$work_dir/ceiling.log")" >&2
    args+=(--ceiling-port "$ceiling_port" --ceiling-pid "$ceiling")
  else
    echo "bench: the ceiling server did not start (skipping that case):" >&2
    cat "$work_dir/ceiling.log" >&2
  fi
fi

if [ "${JDBC:-1}" = "1" ]; then
  if command -v mvn >/dev/null && command -v java >/dev/null; then
    cp_file="${TMPDIR:-/tmp}/orrery-bench-throughput-jdbc.classpath"
    bench_jdbc_classpath "$cp_file" || { echo "bench: cannot resolve the JDBC driver" >&2; exit 1; }
    args+=(--jdbc-classpath "$(cat "$cp_file")")
    # DuckDB's own JDBC driver, the same release as the server's: the in-process reference for JDBC readers.
    duckdb_version="$(node -p "require('$bench_root/node_modules/@duckdb/node-bindings/package.json').version.split('-')[0]")"
    duckdb_jar="$HOME/.m2/repository/org/duckdb/duckdb_jdbc/$duckdb_version.1/duckdb_jdbc-$duckdb_version.1.jar"
    [ -f "$duckdb_jar" ] || mvn -B -q dependency:get -Dartifact="org.duckdb:duckdb_jdbc:$duckdb_version.1" >&2 || true
    if [ "${DUCKDB_JDBC:-1}" = "0" ]; then :
    elif [ -f "$duckdb_jar" ]; then args+=(--duckdb-jdbc "$duckdb_jar"); else echo "bench: no DuckDB JDBC driver $duckdb_version.1: its reference is skipped" >&2; fi
  else echo "bench: no mvn/java: the JDBC client is skipped" >&2; fi
fi

echo "bench: $rows rows" >&2
status=0
"$python" "$here/bench.py" --rows "$rows" --threads "$threads" "${args[@]}" "$@" || status=$?

stop_pid "$server_a"
server_a_log="$work_dir/a/server.log"
server_a=""
if [ "${PROFILE:-0}" = "1" ]; then cpu_profile_top "$profile_dir" 25; fi
if [ "${WAITS:-0}" = "1" ]; then
  for file in "$WAITS_OUT" "$work_dir/waits-b.jsonl"; do
    if [ -s "$file" ]; then echo "server ${file##*/}:"; node "$here/doget-waits.mjs" "$file"; fi
  done
fi
if [ "$status" -ne 0 ]; then
  echo "bench: bench.py failed ($status); server A log:" >&2
  tail -30 "$server_a_log" >&2
fi
exit "$status"
