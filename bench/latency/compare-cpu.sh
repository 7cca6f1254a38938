#!/usr/bin/env bash
# Server CPU per statement of two commits, alternated in one run (A, B, A, B, ...) so that both
# see the same machine load: thread-cpu.sh's "per statement" line for each, then the medians and
# their ratio B / A. Each round is a fresh server on a fresh data folder.
#
#   bash bench/latency/compare-cpu.sh <ref A> <ref B>             # e.g. origin/main HEAD
#   ROUNDS=5 CLIENT=adbc N=1000 WARMUP=500 SQL="SELECT 1" bash bench/latency/compare-cpu.sh origin/main HEAD
# ROUNDS (default 4) pairs; CLIENT (adbc, go, or "" for raw DoGets), N, WARMUP and SQL are passed to thread-cpu.sh (default: ADBC, 1500,
# 1000, SELECT 1): the warm-up lets V8 finish compiling the hot path, whose compiler threads otherwise
# count in the figure.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
[ $# -eq 2 ] || { echo "usage: compare-cpu.sh <ref A> <ref B>" >&2; exit 2; }
refs=("$1" "$2")
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
for ((round = 1; round <= ${ROUNDS:-4}; round++)); do
  for side in 0 1; do
    if ! CLIENT="${CLIENT-adbc}" N="${N:-1500}" WARMUP="${WARMUP:-1000}" ORRERY_REF="${refs[$side]}" \
      bash "$here/thread-cpu.sh" >"$out/run" 2>&1 || ! line="$(grep '^per statement:' "$out/run")"; then
      echo "round $round ${refs[$side]}: the run failed, left out; its last lines:"
      tail -n 3 "$out/run" | sed 's/^/    /'
      continue
    fi
    echo "round $round ${refs[$side]}: $line (load $(cut -d' ' -f1 /proc/loadavg))"
    echo "$line" >>"$out/$side"
  done
done
python3 - "$out/0" "$out/1" "${refs[@]}" <<'PY'
import re, statistics, sys
def figures(path):
    rows = [list(map(float, re.findall(r"([\d.]+) ms", line))) for line in open(path)]
    return [statistics.median(column) for column in zip(*rows)]
a, b = figures(sys.argv[1]), figures(sys.argv[2])
print(f"median per statement     {'process CPU':>12} {'main thread':>12} {'wall':>8}")
for name, row in ((sys.argv[3], a), (sys.argv[4], b)):
    print(f"  {name[:22]:22} {row[0]:9.3f} ms {row[1]:9.3f} ms {row[2]:5.3f} ms")
print(f"  ratio B / A            {b[0]/a[0]:12.2f} {b[1]/a[1]:12.2f} {b[2]/a[2]:8.2f}")
PY
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
