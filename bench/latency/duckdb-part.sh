#!/usr/bin/env bash
# A view set's statement: the DoGet's DuckDB part inside the server against the same work in DuckDB alone,
# round by round at the same moments (issue 10, PROFILE.md fourteenth pass). Starts `orrery serve` (fresh data
# folder, bench.py's data set) with phase-probe.mjs and duckdb-calls.mjs preloaded; duckdb-part.py then
# alternates the server's rounds with run-modes.mjs over the view the server made for the key.
#
#   bash bench/latency/duckdb-part.sh                      # log_stats_day
#   SQL=measures_p95_hour N=400 ROUNDS=4 bash bench/latency/duckdb-part.sh
#   ORRERY_REF=<commit> bash bench/latency/duckdb-part.sh  # another commit's server (bench/lib.sh)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
source "$here/../lib.sh"
bench_ensure_built
python="$(bench_venv)"
d="$(bench_data_dir duckdb-part)"
trap 'orrery_stop; rm -rf "$d"' EXIT
name="${SQL:-log_stats_day}"
case "$name" in
  log_stats_day) view=log_stats ;;
  measures_p95_hour) view=measures ;;
  logs_5min) view=log_entries ;;
  *) echo "duckdb-part.sh: SQL must be log_stats_day, measures_p95_hour or logs_5min" >&2; exit 2 ;;
esac
export UV_THREADPOOL_SIZE="${UV_THREADPOOL_SIZE:-20}" PHASES_ROOT="$ORRERY_ROOT" PHASES_OUT="$d/phases.json" \
  DUCKDB_CALLS_OUT="$d/calls"
BENCH_API_KEYS='[{"name":"admin","key":"admin-key-0123"},{"name":"reader","key":"reader-key-0123","audiences":["public"]}]' \
  ORRERY_DUCKDB_THREADS="${THREADS:-2}" orrery_start serve "$d/o" --import "$here/phase-probe.mjs" \
  --import "$here/duckdb-calls.mjs"
sql="$(cd "$here" && "$python" -c 'import sys, bench
http, flight, pid, records, points, name = sys.argv[1:]
print(bench.statement(name, bench.load_data(int(http), int(flight), int(pid), int(records), int(points))["process"]))' \
  "$ORRERY_HTTP_PORT" "$ORRERY_FLIGHT_PORT" "$ORRERY_PID" "${RECORDS:-200000}" "${POINTS:-20000}" "$name")"
"$python" "$here/duckdb-part.py" "$ORRERY_FLIGHT_PORT" "$ORRERY_PID" "$PHASES_OUT" "$d/calls.$ORRERY_PID.tsv" \
  "$view" "$sql"
