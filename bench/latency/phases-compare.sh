#!/usr/bin/env bash
# Two servers' phases alternately (issue 10): runs phases.sh for ref A and ref B (A B, B A, ...), ROUNDS times (default 4;
# each a fresh server, N statements per client after WARMUP), and prints per client the medians over the
# rounds of p50, the GetFlightInfo and DoGet handlers' time and the server's and the client's CPU per
# statement, for A and B, and B / A. A ref is a commit (built as bench/lib.sh's ORRERY_REF does) or `.`,
# the work tree as it is.
#
#   bash bench/latency/phases-compare.sh origin/main .
#   CLIENTS="adbc pyarrow" ROUNDS=4 N=1500 bash bench/latency/phases-compare.sh <A> <B>
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
a="${1:?ref A}" b="${2:?ref B}"
out="$(mktemp -t orrery-phases-compare-XXXXXX)"
trap 'rm -f "$out"' EXIT
for round in $(seq 1 "${ROUNDS:-4}"); do
  # A B, then B A: a load that rises or falls over the run weighs on both sides alike.
  order="A B"; [ $((round % 2)) = 0 ] && order="B A"
  for side in $order; do
    ref="$a"; [ "$side" = B ] && ref="$b"
    echo "bench: round $round, $side ($ref), load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
    if [ "$ref" = . ]; then
      (unset ORRERY_REF ORRERY_ROOT; ROUNDS=1 IN_PROCESS=0 bash "$here/phases.sh")
    else
      (unset ORRERY_ROOT; ORRERY_REF="$ref" ROUNDS=1 IN_PROCESS=0 bash "$here/phases.sh")
    fi 2>/dev/null | sed -n "s/^PHASES /$side /p" >>"$out"
  done
done
python3 - "$out" "$a" "$b" <<'PY'
import json, statistics, sys
rows = [(line.split(" ", 1)[0], json.loads(line.split(" ", 1)[1])) for line in open(sys.argv[1])]
metrics = ["p50_ms", "getflightinfo_handler_ms", "doget_handler_ms", "server_cpu_ms", "client_cpu_ms"]
print(f"A = {sys.argv[2]}, B = {sys.argv[3]}; medians over the rounds, ms per statement")
print(f"{'client':22s} {'metric':26s} {'A':>8s} {'B':>8s} {'B / A':>7s}   rounds")
for client in dict.fromkeys(r["client"] for _, r in rows):
    for metric in metrics:
        side = {s: [r[metric] for t, r in rows if t == s and r["client"] == client and r[metric] is not None] for s in "AB"}
        if not side["A"] or not side["B"]:
            continue
        ma, mb = statistics.median(side["A"]), statistics.median(side["B"])
        print(f"{client:22s} {metric:26s} {ma:8.3f} {mb:8.3f} {mb / ma:7.2f}   A {side['A']} B {side['B']}")
loads = [r["load"] for _, r in rows]
print(f"1-minute load average during the runs: {min(loads):.1f}-{max(loads):.1f}")
PY
