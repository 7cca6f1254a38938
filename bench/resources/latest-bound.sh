#!/usr/bin/env bash
# "One pod, its latest 20" as sent against the same statement bounded by hand by its 20th row's time
# (latest-bound.mjs), on one kept data folder, by the server of each ref in turn, ROUNDS times (base and change
# alternated: A B A B ...), the work tree's build without REFS:
#
#   KEEP_DATA=1 ORRERY_SMALL_QUERY_MS=0 KIND=projection PROJECTION_BY=pod GENERATE=1 ROWS=10000000 DAYS=30 \
#     PER_PARTITION=83334 REPEATS=1 bash bench/resources/run.sh          # prints the folder
#   DATA=<folder>/orrery [REFS="<a> <b>"] [ROUNDS=2] bash bench/resources/latest-bound.sh
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
source "$here/../lib.sh"
: "${DATA:?DATA=<kept folder>/orrery}"
trap orrery_stop EXIT
for round in $(seq "${ROUNDS:-1}"); do
  for ref in ${REFS:-work-tree}; do
    # The work tree: no build of another ref left in ORRERY_ROOT by the one before.
    if [ "$ref" = work-tree ]; then unset ORRERY_REF ORRERY_ROOT ORRERY_REF_SHA; else export ORRERY_REF="$ref"; fi
    bench_ensure_built
    # orrery_start reads the ports from the folder's log: the earlier servers' lines go first.
    : >"$DATA/server.log"
    ORRERY_SMALL_QUERY_MS=0 orrery_start serve "$DATA" || exit 1
    echo "round $round, $ref (${ORRERY_REF_SHA:-work tree}), load $(cut -d' ' -f1-3 /proc/loadavg)"
    node "$here/latest-bound.mjs" --flight-port "$ORRERY_FLIGHT_PORT" --pid "$ORRERY_PID" \
      --rounds "${ROUNDS_PER_SERVER:-4}" --per "${PER:-10}"
    orrery_stop
  done
done
