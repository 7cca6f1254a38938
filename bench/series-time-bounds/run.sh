#!/usr/bin/env bash
# Raw series-table reads bounded by time (issues 14 and 10): starts two `orrery serve`s, one of the
# work tree (after) and one of BEFORE_REF (before; default HEAD~1), loads the same ROWS rows over 30
# days into a series table of each (generated inside the server), then times each way of writing
# a bound to the last day alternately on both servers and on DuckDB in-process over the Parquet files
# of the after server's table, and prints medians, the ratios and files read (EXPLAIN ANALYZE).
#
#   ROWS=20000000 REPEATS=5 bash bench/series-time-bounds/run.sh
#   BEFORE_REF=origin/main ROWS=2000000 bash bench/series-time-bounds/run.sh   # quick check
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
source "$here/../lib.sh"

ORRERY_REF="${BEFORE_REF:-HEAD~1}" bench_ensure_built
before_root="$ORRERY_ROOT"
before_sha="$ORRERY_REF_SHA"
unset ORRERY_REF ORRERY_REF_SHA
export ORRERY_ROOT="$bench_root"
bench_ensure_built
data_dir="$(bench_data_dir series-time-bounds)"
after_pid="" before_pid=""
cleanup() {
  [ -n "$before_pid" ] && { ORRERY_PID="$before_pid"; orrery_stop; }
  [ -n "$after_pid" ] && { ORRERY_PID="$after_pid"; orrery_stop; }
  bench_cleanup_data "$data_dir"
}
trap cleanup EXIT

echo "bench: load average $(cut -d' ' -f1-3 /proc/loadavg) at start" >&2
orrery_start serve "$data_dir/after" || exit 1
after_pid=$ORRERY_PID after_port=$ORRERY_FLIGHT_PORT
ORRERY_ROOT="$before_root" orrery_start serve "$data_dir/before" || exit 1
before_pid=$ORRERY_PID before_port=$ORRERY_FLIGHT_PORT
echo "bench: after (work tree) on $after_port, before ($before_sha) on $before_port" >&2
node "$here/bench.mjs" --after-port "$after_port" --before-port "$before_port" --before "$before_sha" \
  --lake "$data_dir/after/lake" --rows "${ROWS:-2000000}" --repeats "${REPEATS:-5}"
echo "bench: load average $(cut -d' ' -f1-3 /proc/loadavg) at end" >&2
