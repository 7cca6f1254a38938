#!/usr/bin/env bash
# Rollup reads of this tree and, with BASE_REF set, of that commit, alternately in one run on one
# Postgres and lake (bench/rollups/probe.mjs): SELECT 1, a series read that finds no row, the
# materialized rows, the never-stale read with one minute of raw tail, the dashboard; medians and the
# Postgres statements each read runs.
#
#   bash bench/rollups/probe.sh                                          # this tree
#   BASE_REF=origin/main REPEATS=41 bash bench/rollups/probe.sh          # before / after, alternately
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
source "$here/../lib.sh"

bench_base_and_this
node "$here/probe.mjs" --repeats "${REPEATS:-21}" --rows "${ROWS:-2000000}" "${BENCH_BASE_ARGS[@]}"
