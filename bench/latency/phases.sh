#!/usr/bin/env bash
# Where one hot statement's time goes (issue 10), client and server, RPC by RPC and phase by phase:
# starts `orrery serve` (fresh data folder) with phase-probe.mjs preloaded, then phases.py sends SQL
# (default `SELECT 1 AS one`) N times (default 2,000, after WARMUP 1,000) as the key `reader` (not an
# admin) through ADBC and through pyarrow's Flight client, ROUNDS times each (default 2), alternately,
# and prints the medians of each gap and phase, and the client's and the server's CPU per statement.
#
#   bash bench/latency/phases.sh
#   SQL="SELECT 1 AS one" N=3000 bash bench/latency/phases.sh
#   ORRERY_REF=<commit> bash bench/latency/phases.sh   # another commit's server (bench/lib.sh)
#   DATA=1 SQL=measures_p95_hour bash bench/latency/phases.sh   # bench.py's data set (RECORDS, POINTS) and statements
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
source "$here/../lib.sh"
bench_ensure_built
python="$(bench_venv)"
d="$(bench_data_dir phases)"
trap 'orrery_stop; rm -rf "$d"' EXIT
# The probe loads the server's modules before orrery.cjs sizes libuv's pool: size it here as it would.
export UV_THREADPOOL_SIZE="${UV_THREADPOOL_SIZE:-20}" PHASES_ROOT="$ORRERY_ROOT" PHASES_OUT="$d/phases.json"
BENCH_API_KEYS='[{"name":"admin","key":"admin-key-0123"},{"name":"reader","key":"reader-key-0123","audiences":["public"]}]' \
  ORRERY_DUCKDB_THREADS="${THREADS:-2}" orrery_start serve "$d/o" --import "$here/phase-probe.mjs"
sql="${SQL:-SELECT 1 AS one}"
if [ "${DATA:-0}" = 1 ]; then
  sql="$(cd "$here" && "$python" -c 'import sys, bench
http, flight, pid, records, points, sql = sys.argv[1:]
print(bench.statement(sql, bench.load_data(int(http), int(flight), int(pid), int(records), int(points))["process"]))' \
    "$ORRERY_HTTP_PORT" "$ORRERY_FLIGHT_PORT" "$ORRERY_PID" "${RECORDS:-200000}" "${POINTS:-20000}" "$sql")"
fi
"$python" "$here/phases.py" "$ORRERY_FLIGHT_PORT" "$ORRERY_PID" "$PHASES_OUT" "$sql"
