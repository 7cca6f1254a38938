#!/usr/bin/env bash
# Sketch benchmark (issue 17 items 5 and 8): the cost of percentile_sketch(x) and distinct_sketch(k)
# (Orrery's macros) over the native aggregates and over their SQL definitions (ORRERY_NATIVE=off),
# against DuckDB's approx_quantile and approx_count_distinct on the same ROWS rows (lognormal x,
# Zipf-like k), for 1, 100 and 10,000 groups, runs alternated, in one in-process DuckDB with the
# macros every Orrery engine defines; then the cost of merging 24 hourly sketches per group (native
# and SQL) and of reading one, the stored size per sketch (Parquet, zstd), and the error against
# exact answers (exit status 1 when a stated bound does not hold).
#
#   bash bench/sketches/run.sh                                  # 10 M rows (about a minute idle)
#   ROWS=1000000 SKETCH_GROUPS=1,1000 REPEATS=1 bash bench/sketches/run.sh
#
# Environment: ROWS (default 10000000), SKETCH_GROUPS (default 1,100,10000), REPEATS (median of,
# default 3), THREADS (DuckDB threads, default 2).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
source "$here/../lib.sh"

bench_ensure_built
node "$here/bench.mjs"
