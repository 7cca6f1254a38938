#!/usr/bin/env bash
# A text search's planning CPU (plan-cpu.mjs) on one kept data folder, by the server of each ref in turn, ROUNDS
# times: an A/B on the same data and load. The folder is kept from a text run of run.sh:
#
#   KEEP_DATA=1 KIND=text GENERATE=1 ROWS=10000000 DAYS=30 REPEATS=1 bash bench/resources/run.sh   # prints the folder
#   DATA=<folder>/orrery REFS="<before> <after>" ROUNDS=2 bash bench/resources/plan-cpu.sh
#   EXECUTE=1 SEARCH=4 BLOCKS=6 PER=2 DATA=... REFS=... bash bench/resources/plan-cpu.sh
#                                  # the statements run, not planned (wall time too); SEARCH=4: the word every day holds
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
source "$here/../lib.sh"
: "${DATA:?DATA=<kept folder>/orrery}" "${REFS:?REFS=\"<before ref> <after ref>\"}"
trap orrery_stop EXIT
for round in $(seq 1 "${ROUNDS:-2}"); do
  for ref in $REFS; do
    ORRERY_REF="$ref" bench_ensure_built
    # orrery_start reads the ports from the folder's log: the earlier servers' lines go first.
    : >"$DATA/server.log"
    orrery_start serve "$DATA" || exit 1
    echo "round $round, $ref ($ORRERY_REF_SHA), load $(cut -d' ' -f1-3 /proc/loadavg)"
    node "$here/plan-cpu.mjs" --flight-port "$ORRERY_FLIGHT_PORT" --pid "$ORRERY_PID" --rounds "${BLOCKS:-8}" --per "${PER:-15}" \
      ${EXECUTE:+--execute} ${SEARCH:+--search "$SEARCH"}
    orrery_stop
  done
done
