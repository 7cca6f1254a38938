#!/usr/bin/env bash
# Resources benchmark (issue 13 item 8, small): starts `orrery serve` with a fresh data folder, ingests
# ROWS log entries as DAYS partitions (one day of event time and one service each), times dashboard
# queries before any index exists, publishes a minmax index on time, a set index on exe and a bloom
# filter on msg, and times
# the same SQL again: partitions skipped (orrery.provenance), time with and without, the ratio; every
# answer with the indexes must equal its answer without.
#
#   bash bench/resources/run.sh                      # 200 000 entries over 10 days (quick)
#   ROWS=2000000 DAYS=30 bash bench/resources/run.sh
#   KIND=columns bash bench/resources/run.sh         # a stored column of the pod property (+ bloom filter)
#   KIND=text DAYS=7 bash bench/resources/run.sh     # msg ILIKE '%timeout%' over a week, with a text index on msg
#   KIND=series-text bash bench/resources/run.sh     # msg ILIKE searches on a series table with a text index on msg
#                                                    # against its twin without (series-text.mjs: ROWS lines in FILES INSERTs)
#   KIND=projection bash bench/resources/run.sh      # filters on level and msg, with projections sorted by each
#   KIND=projection PROJECTION_BY=pod bash bench/resources/run.sh
#                                                    # instead, by_pod sorted by a column entry of the pod property
#                                                    # (the spec's example) against the raw query (the JSON property)
#   KIND=projection PROJECTION_BY=pod TIME_MINMAX=1 bash bench/resources/run.sh
#                                                    # and a minmax index on time beside it (a time WHERE skips other days' copies)
#   KIND=dashboard bash bench/resources/run.sh       # the issue's dashboard at once: the pod's stored column with a
#                                                    # bloom filter, by_pod sorted by it and a text index on msg
#                                                    # against the raw queries (the JSON property, no index)
#   KIND=projection PROJECTION_COLUMNS=exe,level bash bench/resources/run.sh
#                                                    # the msg projection storing those columns (and msg) only
#   GENERATE=1 ROWS=100000000 DAYS=30 KIND=text bash bench/resources/run.sh
#                                                    # the entries written by DuckDB into partitions of PER_PARTITION
#                                                    # rows (default 1 000 000) from PROCESSES processes a day (default
#                                                    # 20) and registered in Postgres as the materializer does (generate.mjs)
#
# Environment: ROWS (default 200000), DAYS (default 10), REPEATS (default 5), KIND (indexes | columns | text | projection | dashboard | series-text),
# GENERATE=1, PER_PARTITION, PROCESSES, PROJECTION_COLUMNS, PROJECTION_BY, TIME_MINMAX=1, KEEP_DATA=1. The server's own settings pass through:
# ORRERY_SMALL_QUERY_MS=0 keeps every statement in one lane (a statement near the small lane's 1 s is otherwise
# rerun in the heavy lane at some runs and not at others, which swings its time 2-5x under load).
# Each pair of forms is timed in turn (A B, then B A), and each query's planning alone (explain_resources) too.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
source "$here/../lib.sh"

bench_ensure_built
data_dir="$(bench_data_dir resources)"
cleanup() {
  orrery_stop
  bench_cleanup_data "$data_dir"
}
trap cleanup EXIT

orrery_start serve "$data_dir/orrery" || exit 1
echo "bench: orrery serve (pid $ORRERY_PID): HTTP 127.0.0.1:$ORRERY_HTTP_PORT, Flight SQL 127.0.0.1:$ORRERY_FLIGHT_PORT" >&2
if [ "${KIND:-}" = series-text ]; then
  node "$here/series-text.mjs" --flight-port "$ORRERY_FLIGHT_PORT" --dir "$data_dir/publication" --data-dir "$data_dir/orrery" \
    --rows "${ROWS:-2000000}" --files "${FILES:-40}" --repeats "${REPEATS:-5}"
  exit
fi
node "$here/bench.mjs" --http-port "$ORRERY_HTTP_PORT" --flight-port "$ORRERY_FLIGHT_PORT" --dir "$data_dir/publication" \
  --rows "${ROWS:-200000}" --days "${DAYS:-10}" --repeats "${REPEATS:-5}" --kind "${KIND:-indexes}" \
  --data-dir "$data_dir/orrery" ${GENERATE:+--generate} --per-partition "${PER_PARTITION:-1000000}" --processes "${PROCESSES:-20}" \
  --projection-columns "${PROJECTION_COLUMNS:-}" --projection-by "${PROJECTION_BY:-}" ${TIME_MINMAX:+--time-minmax}
