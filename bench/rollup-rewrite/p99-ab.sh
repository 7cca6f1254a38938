#!/usr/bin/env bash
# p99-panel.mjs against this tree's server and a base build's, one at a time on the same data (a folder of
# bench.mjs's table and rollups, kept with KEEP_DATA=1: DuckLake's catalog holds its absolute path, so it is used in
# place, with refresh jobs off), A B A B for ROUNDS rounds; each line gives the load beside its figures.
#   bash bench/rollup-rewrite/p99-ab.sh DATA_DIR BASE_TREE [ROUNDS=2] [REPEATS=15]
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
data="$1" base="$2" rounds="${3:-2}" repeats="${4:-15}"
for round in $(seq 1 "$rounds"); do
  for tree in "$(cd "$here/../.." && pwd)" "$base"; do
    (
      export ORRERY_ROOT="$tree" ORRERY_ROLLUP_REFRESH_JOBS=off
      source "$here/../lib.sh"
      bench_ensure_built || exit 1
      orrery_start serve "$data" >/dev/null || exit 1
      echo "== round $round $tree"
      node "$here/p99-panel.mjs" --flight-port "$ORRERY_FLIGHT_PORT" --pid "$ORRERY_PID" --repeats "$repeats"
      orrery_stop >/dev/null
    )
  done
done
