#!/usr/bin/env bash
# The rollup dashboard (bench.mjs's per host per hour over 7 days, on the rollup) through two trees' servers in turn
# on one kept data folder (issues 10 and 17): rounds A B B A ..., each a fresh server on DATA_DIR/main with
# bench/latency/phase-probe.mjs preloaded, dashboard-phases.py timing SELECT 1, the dashboard and an empty series read.
# Prints each round, then per side the medians of p50, server CPU per statement and the dashboard's phases, and B / A.
# The data folder is the one `DATA_DIR=<folder> ROWS=100000000 bash bench/rollups/run.sh` generated (reused, not changed
# beyond what a server start does).
#
#   DATA_DIR=/work/wt/data100m BASE=/tmp/orrery-bench-build-<sha> bash bench/rollups/dashboard-ab.sh
#   DATA_DIR=... BASE=... ROUNDS=4 N=80 bash bench/rollups/dashboard-ab.sh   # ROUNDS pairs, N statements each
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
source "$here/../lib.sh"
: "${DATA_DIR:?DATA_DIR: a folder bench/rollups/run.sh generated}" "${BASE:?BASE: a tree with dist/ built}"
bench_ensure_built
python="$(bench_venv)"
this="$(cd "$here/../.." && pwd)"
out="$(mktemp -d)"
trap 'orrery_stop; rm -rf "$out"' EXIT
export UV_THREADPOOL_SIZE="${UV_THREADPOOL_SIZE:-20}" PHASES_OUT="$out/phases.json"
sides=()
for ((r = 0; r < ${ROUNDS:-3}; r++)); do
  if ((r % 2 == 0)); then sides+=(A B); else sides+=(B A); fi
done
for side in "${sides[@]}"; do
  root="$this"
  [ "$side" = A ] && root="$BASE"
  ORRERY_ROOT="$root" PHASES_ROOT="$root" orrery_start serve "$DATA_DIR/main" --import "$this/bench/latency/phase-probe.mjs"
  echo "$side $(cut -d' ' -f1-3 /proc/loadavg) $("$python" "$here/dashboard-phases.py" "$ORRERY_FLIGHT_PORT" "$ORRERY_PID" "$PHASES_OUT" "${N:-80}")" |
    tee -a "$out/rounds"
  orrery_stop
done
"$python" - "$out/rounds" "$BASE" "$this" <<'PY'
import json, statistics, sys
rounds = [line.split(" ", 4) for line in open(sys.argv[1])]
sides = {s: [json.loads(r[4]) for r in rounds if r[0] == s] for s in "AB"}
print(f"A = {sys.argv[2]}, B = {sys.argv[3]}; {len(sides['A'])} rounds each; load {rounds[0][1]} -> {rounds[-1][1]}")
med = lambda side, f: statistics.median(f(r) for r in sides[side])
print(f"{'':58s} {'A':>9s} {'B':>9s} {'B / A':>6s}")
for name in ("select1", "dashboard", "empty_series"):
    for key in ("p50_ms", "server_cpu_ms"):
        a, b = med("A", lambda r: r[name][key]), med("B", lambda r: r[name][key])
        print(f"{name + ' ' + key:58s} {a:9.3f} {b:9.3f} {b / a:6.2f}")
phases = sorted(sides["A"][0]["dashboard"]["phases"], key=lambda k: -sides["A"][0]["dashboard"]["phases"][k])
for phase in phases:
    if all(phase in r["dashboard"]["phases"] for s in "AB" for r in sides[s]):
        a, b = med("A", lambda r: r["dashboard"]["phases"][phase]), med("B", lambda r: r["dashboard"]["phases"][phase])
        if a >= 0.05:
            print(f"dashboard, {phase[:48]:48s} {a:9.3f} {b:9.3f} {b / a:6.2f}")
PY
