#!/usr/bin/env bash
# Time until queryable under ingestion load (issue 16, item 5), two commits alternately (A B A B): per round and
# commit, a fresh `orrery all` (server and maintenance daemon), loadgen.mjs with CONNECTIONS senders for DURATION s
# and queryable.mjs's probes meanwhile (one 10-record request a second; the time from each 200 to its records in
# log_entries); prints each run's records/s and probe seconds (p50, p90, max, never seen), the medians and B/A.
#
#   BEFORE=<ref> AFTER=<ref> ROUNDS=2 CONNECTIONS=2 DURATION=20 bash bench/ingestion/queryable.sh
#
# Environment: BEFORE, AFTER (default origin/main, HEAD), ROUNDS (2), CONNECTIONS (2), DURATION (s, 20), WAIT (s a
# probe may take after the load stops before it counts as never seen, 180).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
source "$here/../lib.sh"
if [ "${1:-}" = --one ]; then
  bench_ensure_built
  data="$(bench_data_dir queryable)"
  trap 'orrery_stop; bench_cleanup_data "$data"' EXIT
  orrery_start all "$data" >&2 || exit 1
  load="$(cut -d' ' -f1 /proc/loadavg)"
  node "$here/loadgen.mjs" --port "$ORRERY_HTTP_PORT" --connections "${CONNECTIONS:-2}" --duration "${DURATION:-20}" \
    --warmup 0 >"$data/loadgen.json" 2>/dev/null &
  loadgen=$!
  node "$here/queryable.mjs" --http "$ORRERY_HTTP_PORT" --flight "$ORRERY_FLIGHT_PORT" --seconds "${DURATION:-20}" \
    --wait "${WAIT:-180}" --root "$ORRERY_ROOT" >"$data/probes.json"
  wait "$loadgen"
  python3 - "$data/loadgen.json" "$data/probes.json" "$load" "${ORRERY_REF_SHA:-}" <<'PY'
import json, sys
loadgen, probes = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
print(json.dumps({**probes, "records_per_s": loadgen["measured_records_per_s"], "load": float(sys.argv[3]), "commit": sys.argv[4]}))
PY
  exit 0
fi
out="$(mktemp -d "${TMPDIR:-/tmp}/orrery-queryable-XXXXXX")"
trap 'rm -rf "$out"' EXIT
bench_alternate "$out" "${BEFORE:-origin/main}" "${AFTER:-HEAD}" "${ROUNDS:-2}" bash "$here/queryable.sh" --one
PYTHONPATH="$here/.." python3 - "$out" "${BEFORE:-origin/main}" "${AFTER:-HEAD}" <<'PY'
from statistics import median
from alternated import alternated_runs, compared
runs = list(alternated_runs(compared()[0]))
print(f"{'round':>5} {'side':>4} {'commit':>9} {'load':>5} {'records/s':>10} {'probes':>6} {'never':>5} {'p50 s':>6} {'p90 s':>6} {'max s':>6}")
for round_, side, d in runs:
    print(f"{round_:>5} {side:>4} {d['commit'][:9]:>9} {d['load']:>5} {d['records_per_s'] or 0:>10,} {d['probes']:>6} {d['never']:>5} "
          f"{d['p50_s'] or 0:>6} {d['p90_s'] or 0:>6} {d['max_s'] or 0:>6}")
for key in ("p50_s", "p90_s", "max_s"):
    a, b = (median(d[key] or 0 for _, s, d in runs if s == side) for side in "AB")
    print(f"median {key}: A {a:.2f} B {b:.2f} B/A {b / a if a else 0:.2f}")
PY
