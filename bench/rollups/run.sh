#!/usr/bin/env bash
# Rollups benchmark (issue 17): starts `orrery serve` with a fresh data folder (no daemon: the
# benchmark runs every refresh itself), then bench.mjs loads ROWS rows over 30 days into a series
# table and measures the rollup against the raw table.
#
#   bash bench/rollups/run.sh                  # 2 M rows (the issue's size is ROWS=100000000)
#   ROWS=200000 bash bench/rollups/run.sh      # quick check
#   INTEGER=1 bash bench/rollups/run.sh        # integer time (bucket_width): integer.mjs, the spec's blocks_per_10k
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
source "$here/../lib.sh"

bench_ensure_built
data_dir="$(bench_data_dir rollups)"
cleanup() {
  orrery_stop
  bench_cleanup_data "$data_dir"
}
trap cleanup EXIT

orrery_start serve "$data_dir/main" || exit 1
echo "bench: orrery serve (pid $ORRERY_PID): Flight SQL 127.0.0.1:$ORRERY_FLIGHT_PORT" >&2
node "$here/$([ -n "${INTEGER:-}" ] && echo integer.mjs || echo bench.mjs)" --flight-port "$ORRERY_FLIGHT_PORT" --rows "${ROWS:-2000000}" --hosts "${HOSTS:-50}" --repeats "${REPEATS:-5}"
