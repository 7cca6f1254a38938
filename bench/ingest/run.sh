#!/usr/bin/env bash
# Bulk ingest benchmark (issue 12): starts `orrery serve` with a fresh data folder, then bench.py
# ingests ROWS rows with ADBC's adbc_ingest into a series table and the same Arrow table with DuckDB's
# Python package into a DuckLake table in-process (catalog in a DuckDB file there, not Postgres).
#
#   bash bench/ingest/run.sh               # 10 M rows
#   ROWS=1000000 bash bench/ingest/run.sh  # quick check
#   PROFILE=1 ...                          # node --cpu-prof of the server; summary from PROFILE_DIR
#                                          # (default bench/ingest/profiles)
#
# Its own venv (bench/.venv-ingest): DuckDB's Python package must be 1.5.5, the version of the
# DuckLake extension Orrery's install step fetched (the other benches use a newer one).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
source "$here/../lib.sh"

bench_ensure_built
BENCH_REQUIREMENTS="pyarrow==26.0.1 duckdb==1.5.5 adbc-driver-flightsql==1.13.0 adbc-driver-manager==1.13.0"
venv="$bench_root/bench/.venv-ingest"
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$venv/.requirements" 2>/dev/null || true)" != "$BENCH_REQUIREMENTS" ]; then
  "${PYTHON:-python3}" -m venv "$venv" >&2
  # shellcheck disable=SC2086
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check $BENCH_REQUIREMENTS >&2
  echo "$BENCH_REQUIREMENTS" > "$venv/.requirements"
fi
extension_dir="$(cd "$bench_root" && node -e "import('./dist/src/engine/index.js').then(async (e) => console.log(e.extensionCacheFolder(await e.duckdbBuild())))")"
data_dir="$(bench_data_dir ingest)"
cleanup() {
  orrery_stop
  bench_cleanup_data "$data_dir"
}
trap cleanup EXIT

profile_dir="${PROFILE_DIR:-$here/profiles}"
mapfile -t node_flags < <(bench_profile_flags "$profile_dir")
orrery_start serve "$data_dir/main" "${node_flags[@]}" || exit 1
echo "bench: orrery serve (pid $ORRERY_PID): Flight SQL 127.0.0.1:$ORRERY_FLIGHT_PORT" >&2
PYTHONPATH="$bench_root/bench" "$venv/bin/python" "$here/bench.py" --flight-port "$ORRERY_FLIGHT_PORT" --server-pid "$ORRERY_PID" --rows "${ROWS:-10000000}" --extension-dir "$extension_dir"
orrery_stop
if [ "${PROFILE:-0}" = "1" ]; then cpu_profile_top "$profile_dir" 30; fi
