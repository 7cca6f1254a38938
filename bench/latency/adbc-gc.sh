#!/usr/bin/env bash
# What ADBC's Python client costs per statement beyond the two RPCs (issue 10, PROFILE.md eighteenth pass): starts
# `orrery serve` (fresh data folder), then adbc-gc.py sends SQL (default `SELECT 1 AS one`) as the key `reader` with
# one connection and with CLIENTS (default 16) at once through pyarrow's Flight client sending ADBC's RPCs, ADBC's
# DB-API, and ADBC's DB-API with its driver's forced Go garbage collection per result skipped, alternately (ROUNDS,
# default 2; SECONDS_PER_CELL, default 4), and prints p50/p99, statements/s, the client's and the server's CPU per
# statement, the Go collections and the client's context switches per statement, with the ratios.
# ADBC_GC_CLIENTS="adbc adbc-p1 adbc-nogc" adds ADBC with GOMAXPROCS=1 in its environment.
#
#   bash bench/latency/adbc-gc.sh
#   ROUNDS=3 SECONDS_PER_CELL=5 bash bench/latency/adbc-gc.sh
#   ORRERY_REF=<commit> bash bench/latency/adbc-gc.sh   # another commit's server (bench/lib.sh)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
source "$here/../lib.sh"
bench_ensure_built
python="$(bench_venv)"
d="$(bench_data_dir adbcgc)"
trap 'orrery_stop; rm -rf "$d"' EXIT
BENCH_API_KEYS='[{"name":"admin","key":"admin-key-0123"},{"name":"reader","key":"reader-key-0123","audiences":["public"]}]' \
  ORRERY_DUCKDB_THREADS="${THREADS:-2}" orrery_start serve "$d/o"
"$python" "$here/adbc-gc.py" "$ORRERY_FLIGHT_PORT" "$ORRERY_PID"
