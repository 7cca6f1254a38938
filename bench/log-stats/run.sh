#!/usr/bin/env bash
# log_stats query benchmark: starts `orrery serve` with a fresh data folder, ingests RECORDS log
# records over OTLP/HTTP, materializes blocks, log_entries and log_stats (one partition each), then
# times SELECT level, count(*) FROM log_entries GROUP BY level and
# SELECT time_bin, sum(count) FROM log_stats GROUP BY 1 ORDER BY 1 through Flight SQL (pyarrow)
# against DuckDB in-process on the same Parquet files, and checks both answers against what was sent.
#
#   bash bench/log-stats/run.sh                       # 1 M records (quick)
#   RECORDS=10000000 bash bench/log-stats/run.sh      # the issue's size (about 2-4 min of ingestion)
#   ORRERY_REF=HEAD bash bench/log-stats/run.sh       # measure the last commit (see bench/lib.sh)
#
# Environment: RECORDS (default 1000000), REPEATS (default 5), WARMUP (default 1), THREADS (DuckDB
# threads, server and in-process, default 2), CONNECTIONS (ingestion, default 8), PROFILE=1
# (node --cpu-prof of the server; PROFILE_DIR, default bench/log-stats/profiles), KEEP_DATA=1.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
source "$here/../lib.sh"

threads="${THREADS:-2}"
profile_dir="${PROFILE_DIR:-$here/profiles}"
mapfile -t node_flags < <(bench_profile_flags "$profile_dir")

bench_ensure_built
python="$(bench_venv)"
data_dir="$(bench_data_dir log-stats)"
cleanup() {
  orrery_stop
  bench_cleanup_data "$data_dir"
}
trap cleanup EXIT

ORRERY_DUCKDB_THREADS="$threads" orrery_start serve "$data_dir/orrery" "${node_flags[@]}" || exit 1
echo "bench: orrery serve (pid $ORRERY_PID): HTTP 127.0.0.1:$ORRERY_HTTP_PORT, Flight SQL 127.0.0.1:$ORRERY_FLIGHT_PORT, data $data_dir/orrery" >&2
status=0
"$python" "$here/bench.py" --http-port "$ORRERY_HTTP_PORT" --flight-port "$ORRERY_FLIGHT_PORT" --server-pid "$ORRERY_PID" \
  --data-dir "$data_dir/orrery" --records "${RECORDS:-1000000}" --repeats "${REPEATS:-5}" --warmup "${WARMUP:-1}" \
  --threads "$threads" --connections "${CONNECTIONS:-8}" "$@" || status=$?
orrery_stop
if [ "$status" -ne 0 ]; then
  echo "bench: bench.py failed ($status); server log:" >&2
  tail -30 "$ORRERY_LOG" >&2
fi
if [ "${PROFILE:-0}" = "1" ]; then cpu_profile_top "$profile_dir" 30; fi
exit "$status"
