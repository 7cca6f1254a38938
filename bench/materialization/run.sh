#!/usr/bin/env bash
# Materialization benchmark: starts `orrery serve` with a fresh data folder, ingests RECORDS log
# records over OTLP/HTTP, times materialize_partitions('log_entries', ...) over the whole insert range
# (one partition) through Flight SQL, and compares with DuckDB in-process (Python duckdb, same
# release) running the same extract with COPY TO Parquet/zstd on the same payload files.
#
#   bash bench/materialization/run.sh                     # 2 M records, 3 runs each
#   RECORDS=300000 REPEATS=2 bash bench/materialization/run.sh   # quick check
#   ORRERY_REF=HEAD bash bench/materialization/run.sh     # measure the last commit (see bench/lib.sh)
#
# Environment: RECORDS (default 2000000), REPEATS (default 3), CONNECTIONS (ingestion, default 8),
# THREADS (in-process DuckDB thread counts, default 1,2), PROFILE=1 (node --cpu-prof of the server;
# profile in PROFILE_DIR, default bench/materialization/profiles), PERF=1 (perf record -g of each materialization
# in PERF_DIR, default bench/materialization/perf; with PERF_CALL_GRAPH=dwarf, DWARF stacks at 99 Hz, which follow
# DuckDB's frames), RSS_TRACE=<dir> (the server's RSS every 20 ms of each materialization, rss-<run>.txt there),
# KEEP_DATA=1 keeps the data folder, GZIP=1 gzips each body sent (Content-Encoding: gzip; the server keeps it as it came).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
source "$here/../lib.sh"

records="${RECORDS:-2000000}"
repeats="${REPEATS:-3}"
profile_dir="${PROFILE_DIR:-$here/profiles}"
mapfile -t node_flags < <(bench_profile_flags "$profile_dir")
perf_args=()
if [ "${PERF:-0}" = "1" ]; then
  # perf record of each server materialization (perf report -i PERF_DIR/perf-<run>.data); JIT frames named through
  # Node's perf map.
  perf_dir="${PERF_DIR:-$here/perf}"
  mkdir -p "$perf_dir"
  node_flags+=(--perf-basic-prof-only-functions)
  perf_args=(--perf "$perf_dir")
fi

gzip_flag=()
[ "${GZIP:-0}" = 1 ] && gzip_flag=(--gzip)

bench_ensure_built
python="$(bench_venv)"
data_dir="$(bench_data_dir materialization)"
cleanup() {
  orrery_stop
  bench_cleanup_data "$data_dir"
}
trap cleanup EXIT

orrery_start serve "$data_dir/orrery" "${node_flags[@]}" || exit 1
echo "bench: orrery serve (pid $ORRERY_PID): HTTP 127.0.0.1:$ORRERY_HTTP_PORT, Flight SQL 127.0.0.1:$ORRERY_FLIGHT_PORT, data $data_dir/orrery" >&2
status=0
"$python" "$here/bench.py" --http-port "$ORRERY_HTTP_PORT" --flight-port "$ORRERY_FLIGHT_PORT" --server-pid "$ORRERY_PID" \
  --data-dir "$data_dir/orrery" --records "$records" --repeats "$repeats" --connections "${CONNECTIONS:-8}" \
  --threads "${THREADS:-1,2}" "${perf_args[@]}" "${gzip_flag[@]}" "$@" || status=$?
orrery_stop
if [ "$status" -ne 0 ]; then
  echo "bench: bench.py failed ($status); server log:" >&2
  tail -30 "$ORRERY_LOG" >&2
fi
if [ "${PROFILE:-0}" = "1" ]; then cpu_profile_top "$profile_dir" 30; fi
exit "$status"
