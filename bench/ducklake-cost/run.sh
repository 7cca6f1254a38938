#!/usr/bin/env bash
# What a DuckLake read costs (issues 10, 14, 17): probe.mjs starts an embedded Postgres with
# pg_stat_statements, `orrery serve` from this tree (and, with BASE_REF=<git ref>, a second one built
# from that commit, on the same Postgres and lake), and times `SELECT count(*)` of an empty and of a
# small series table through Flight SQL against DuckDB in-process, with the Postgres statements each runs.
#
#   bash bench/ducklake-cost/run.sh                        # this tree
#   BASE_REF=origin/main REPEATS=41 bash bench/ducklake-cost/run.sh   # before / after, alternately
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
source "$here/../lib.sh"

bench_base_and_this
node "$here/probe.mjs" --repeats "${REPEATS:-21}" --rows "${ROWS:-1000}" "${BENCH_BASE_ARGS[@]}"
