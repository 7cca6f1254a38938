#!/usr/bin/env bash
# Statement latency benchmark (issue 10): starts `orrery serve` (fresh data folder; keys: admin, and
# `reader` of audience public, which the statements run as), ingests a small data set, and times
# dashboard-sized statements through ADBC (Python) with one connection and CLIENTS connections at
# once against DuckDB's Python package in-process on the same Parquet files: p50/p99, ratio,
# statements/s; then the same through arrow-go's client and the Flight SQL JDBC driver (OTHER_CLIENTS).
# About two and a half minutes with the defaults.
#
#   bash bench/latency/run.sh
#   SECONDS_PER_CELL=5 CLIENTS=16 bash bench/latency/run.sh
#   ONLY=select1 PROFILE=1 bash bench/latency/run.sh     # node --cpu-prof of the server, summarised
#   RPCS=1 ONLY=select1 bash bench/latency/run.sh        # also counts the RPCs the server received
#   ORRERY_REF=HEAD bash bench/latency/run.sh            # measure the last commit (see bench/lib.sh)
#
# Environment: RECORDS (log records, default 200000), POINTS (metric points, default 20000),
# SECONDS_PER_CELL (default 2), CLIENTS (default 16), WARMUP (default 5), THREADS (DuckDB threads,
# server and in-process, default 2), ONLY (comma-separated statement names), PROFILE=1, RPCS=1,
# KEEP_DATA=1, OTHER_CLIENTS (default "go jdbc"; "" for ADBC alone), GO_ARGS (more flags for the arrow-go client:
# -prepared sends each statement as ADBC does, a prepared statement's GetFlightInfo; -pause 20ms paces each client).
# Before anything is timed the server is warmed (bench.py --server-warmup, 30 s; pass --server-warmup 0 to skip).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
source "$here/../lib.sh"

threads="${THREADS:-2}"
profile_dir="${PROFILE_DIR:-$here/profiles}"
mapfile -t node_flags < <(bench_profile_flags "$profile_dir")

bench_ensure_built
python="$(bench_venv)"
# The other clients: arrow-go (bench/latency/go, built once per source change) and the JDBC driver
# (LatencyClient.java run by java, on the classpath Maven resolves for test/interop/java).
# OTHER_CLIENTS="" leaves them out; a client whose toolchain is missing is skipped with a warning.
client_args=()
for client in ${OTHER_CLIENTS-go jdbc}; do
  case "$client" in
    go)
      if command -v go >/dev/null; then
        go_bin="$(bash "$here/go-client.sh")" || exit 1
        client_args+=(--go-client "$go_bin")
      else echo "bench: no go: the arrow-go client is skipped" >&2; fi ;;
    jdbc)
      if command -v mvn >/dev/null && command -v java >/dev/null; then
        cp_file="${TMPDIR:-/tmp}/orrery-bench-latency-jdbc.classpath"
        bench_jdbc_classpath "$cp_file" || { echo "bench: cannot resolve the JDBC driver" >&2; exit 1; }
        client_args+=(--jdbc-classpath "$(cat "$cp_file")")
      else echo "bench: no mvn/java: the JDBC client is skipped" >&2; fi ;;
    *) echo "bench: unknown client $client (go, jdbc)" >&2; exit 2 ;;
  esac
done
data_dir="$(bench_data_dir latency)"
cleanup() {
  orrery_stop
  bench_cleanup_data "$data_dir"
}
trap cleanup EXIT

keys='[{"name":"admin","key":"admin-key-0123"},{"name":"reader","key":"reader-key-0123","audiences":["public"]}]'
if [ "${RPCS:-0}" = "1" ]; then export GRPC_TRACE=server_call GRPC_VERBOSITY=DEBUG; fi
BENCH_API_KEYS="$keys" ORRERY_DUCKDB_THREADS="$threads" orrery_start serve "$data_dir/orrery" "${node_flags[@]}" || exit 1
unset GRPC_TRACE GRPC_VERBOSITY
echo "bench: orrery serve (pid $ORRERY_PID): HTTP 127.0.0.1:$ORRERY_HTTP_PORT, Flight SQL 127.0.0.1:$ORRERY_FLIGHT_PORT" >&2
status=0
"$python" "$here/bench.py" --http-port "$ORRERY_HTTP_PORT" --flight-port "$ORRERY_FLIGHT_PORT" --server-pid "$ORRERY_PID" \
  --data-dir "$data_dir/orrery" --records "${RECORDS:-200000}" --points "${POINTS:-20000}" \
  --seconds "${SECONDS_PER_CELL:-2}" --clients "${CLIENTS:-16}" --warmup "${WARMUP:-5}" --threads "$threads" \
  --only "${ONLY:-}" "${client_args[@]}" "$@" || status=$?
orrery_stop
if [ "${RPCS:-0}" = "1" ]; then
  echo "RPCs the server received (whole run, setup included):"
  sed -n 's#.*Received call to method /arrow.flight.protocol.FlightService/\([A-Za-z]*\).*#\1#p' "$ORRERY_LOG" | sort | uniq -c | sort -rn
fi
if [ "$status" -ne 0 ]; then
  echo "bench: bench.py failed ($status); server log:" >&2
  tail -30 "$ORRERY_LOG" >&2
fi
if [ "${PROFILE:-0}" = "1" ]; then cpu_profile_top "$profile_dir" 30; fi
exit "$status"
