#!/usr/bin/env bash
# by_pod's time-windowed queries, server and Postgres CPU per statement (day-cpu.mjs), on one kept data folder, by
# the server of each ref in turn (the work tree's build without REFS):
#
#   KEEP_DATA=1 ORRERY_SMALL_QUERY_MS=0 KIND=projection PROJECTION_BY=pod GENERATE=1 ROWS=10000000 DAYS=30 \
#     PER_PARTITION=83334 REPEATS=1 bash bench/resources/run.sh          # prints the folder
#   DATA=<folder>/orrery LAST_DAY='2026-01-30 00:00:00' [REFS="<a> <b>"] [PLAN=1] bash bench/resources/day-cpu.sh
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
source "$here/../lib.sh"
: "${DATA:?DATA=<kept folder>/orrery}" "${LAST_DAY:?LAST_DAY=<the last day, as bench.mjs prints it>}"
trap orrery_stop EXIT
for ref in ${REFS:-work-tree}; do
  if [ "$ref" = work-tree ]; then unset ORRERY_REF; else export ORRERY_REF="$ref"; fi
  bench_ensure_built
  # orrery_start reads the ports from the folder's log: the earlier servers' lines go first.
  : >"$DATA/server.log"
  ORRERY_SMALL_QUERY_MS=0 orrery_start serve "$DATA" || exit 1
  echo "$ref (${ORRERY_REF_SHA:-work tree}), load $(cut -d' ' -f1-3 /proc/loadavg)"
  node "$here/day-cpu.mjs" --flight-port "$ORRERY_FLIGHT_PORT" --pid "$ORRERY_PID" --last-day "$LAST_DAY" \
    --rounds "${ROUNDS:-4}" --per "${PER:-10}" ${PLAN:+--plan}
  orrery_stop
done
