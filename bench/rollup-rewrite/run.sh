#!/usr/bin/env bash
# Rollup rewrite benchmark (issue 14, item 7): starts `orrery serve` with a fresh data folder (no
# daemon: the benchmark refreshes itself), then bench.mjs loads ROWS spans over 30 days into a
# series table and times a Grafana-like dashboard of 12 panels without rollups (raw), with the
# declared rollups (rewritten onto them, same SQL), and in DuckDB in-process on the same Parquet files.
#
#   bash bench/rollup-rewrite/run.sh                 # 1 M spans (the issue's size is ROWS=100000000)
#   ROWS=200000 REPEATS=1 PER_RUN=1 bash bench/rollup-rewrite/run.sh   # quick check
# REPEATS runs (default 3) of PER_RUN statements (default 5) per panel and side: medians of the runs; WARMUP
# untimed statements (default 12) before the first panel (bench.mjs says why; WARMUP=0 for none).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
source "$here/../lib.sh"

bench_ensure_built
data_dir="$(bench_data_dir rollup-rewrite)"
cleanup() {
  orrery_stop
  bench_cleanup_data "$data_dir"
}
trap cleanup EXIT

# The benchmark refreshes the rollups itself, once, before the panels: the server's refresh jobs (every role runs
# them, due at once on a fresh server) would refresh them again under the first panels, racing its refresh (a
# DuckLake commit conflict in the server's log) and making a new snapshot those panels' reads and rewrites start over at.
# ORRERY_ROLLUP_REFRESH_JOBS=on runs them as a server does.
export ORRERY_ROLLUP_REFRESH_JOBS="${ORRERY_ROLLUP_REFRESH_JOBS:-off}"
profile_dir="${PROFILE_DIR:-$here/profiles}"
mapfile -t node_flags < <(bench_profile_flags "$profile_dir")
echo "bench: load average $(cut -d' ' -f1-3 /proc/loadavg) at start" >&2
orrery_start serve "$data_dir/main" "${node_flags[@]}" || exit 1
echo "bench: orrery serve (pid $ORRERY_PID): Flight SQL 127.0.0.1:$ORRERY_FLIGHT_PORT" >&2
node "$here/bench.mjs" --flight-port "$ORRERY_FLIGHT_PORT" --lake "$data_dir/main/lake" --server-pid "$ORRERY_PID" \
  --rows "${ROWS:-1000000}" --repeats "${REPEATS:-3}" --per-run "${PER_RUN:-5}" --warmup "${WARMUP:-12}"
echo "bench: load average $(cut -d' ' -f1-3 /proc/loadavg) at end" >&2
orrery_stop
if [ "${PROFILE:-0}" = "1" ]; then cpu_profile_top "$profile_dir" 30; fi
