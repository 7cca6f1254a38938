#!/usr/bin/env bash
# Isolation benchmark (issue 9): how long another team's small query and OTLP POST take while one
# key runs N heavy queries. Starts `orrery serve` (fresh data folder, keys: admin, `heavy` of
# audience team_a, `small` of audience team_b), measures p50/p99/max of a small Flight SQL query
# (SELECT over log_entries as `small`) and of an OTLP/HTTP POST (100 log records as `small`) on
# the idle server, then again while `heavy` keeps N cross joins running, and prints both side by
# side with their ratio. Goal: p99 under 100 ms with 4 heavy queries on 2 cores.
#
#   bash bench/isolation/run.sh                    # N=4, 10 s idle, 20 s loaded
#   HEAVY=8 LOADED=30 bash bench/isolation/run.sh
#   ORRERY_REF=HEAVY... see bench/lib.sh: ORRERY_REF=<git ref> measures a commit
#
# Environment: HEAVY (heavy queries kept running, default 4), HEAVY_KEYS (keys they are spread
# over, default 1), IDLE and LOADED (seconds of each phase, default 10 and 20), THREADS
# (ORRERY_DUCKDB_THREADS, default: DuckDB's), KEEP_DATA=1.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
source "$here/../lib.sh"

heavy_keys="${HEAVY_KEYS:-1}"
keys='[{"name":"admin","key":"admin-key-0123"},{"name":"small","key":"small-key-0123","audiences":["team_b"]}'
for i in $(seq 1 "$heavy_keys"); do keys+=",{\"name\":\"heavy$i\",\"key\":\"heavy-key-$i\",\"audiences\":[\"team_a\"]}"; done
keys+=']'

bench_ensure_built
data_dir="$(bench_data_dir isolation)"
cleanup() {
  orrery_stop
  bench_cleanup_data "$data_dir"
}
trap cleanup EXIT

[ -n "${THREADS:-}" ] && export ORRERY_DUCKDB_THREADS="$THREADS"
BENCH_API_KEYS="$keys" orrery_start serve "$data_dir/orrery" || exit 1
echo "bench: orrery serve (pid $ORRERY_PID): HTTP 127.0.0.1:$ORRERY_HTTP_PORT, Flight SQL 127.0.0.1:$ORRERY_FLIGHT_PORT" >&2
status=0
node "$here/bench.mjs" --http-port "$ORRERY_HTTP_PORT" --flight-port "$ORRERY_FLIGHT_PORT" --server-pid "$ORRERY_PID" \
  --heavy "${HEAVY:-4}" --heavy-keys "$heavy_keys" --idle "${IDLE:-10}" --loaded "${LOADED:-20}" || status=$?
orrery_stop
if [ "$status" -ne 0 ]; then
  echo "bench: bench.mjs failed ($status); server log:" >&2
  tail -30 "$ORRERY_LOG" >&2
fi
exit "$status"
