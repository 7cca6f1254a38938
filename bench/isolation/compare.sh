#!/usr/bin/env bash
# Lanes against one lane (issue 9, item 3), alternately in one run: bench/isolation/run.sh with
# ORRERY_SMALL_QUERY_MS=0 (every statement on the query engine, as before the lanes) and with the
# lanes as configured (default settings unless set), ROUNDS times each (A, B, A, B, ...). Prints each
# run's loaded p50/p99 of the small query and of the OTLP POST with the load average, then the median
# p99 of each side and their ratio (lanes / one lane: below 1 is better).
# COMPARE=nice compares instead the lanes with the heavy lane's threads at the server's priority
# (ORRERY_HEAVY_QUERY_NICE=0) and at their nice value (ORRERY_HEAVY_QUERY_NICE, default 19).
#
#   bash bench/isolation/compare.sh              # 2 rounds, HEAVY=4, IDLE=5, LOADED=20
#   ROUNDS=3 HEAVY=8 bash bench/isolation/compare.sh
#   COMPARE=nice ROUNDS=3 bash bench/isolation/compare.sh
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
rounds="${ROUNDS:-2}"
export IDLE="${IDLE:-5}" LOADED="${LOADED:-20}"
results="$(mktemp)"
trap 'rm -f "$results"' EXIT

if [ "${COMPARE:-lanes}" = nice ]; then
  a=nice-0 b="nice-${ORRERY_HEAVY_QUERY_NICE:-19}"
  a_env=(ORRERY_HEAVY_QUERY_NICE=0) b_env=(ORRERY_HEAVY_QUERY_NICE="${ORRERY_HEAVY_QUERY_NICE:-19}")
else
  a=one-lane b=lanes
  a_env=(ORRERY_SMALL_QUERY_MS=0) b_env=(ORRERY_SMALL_QUERY_MS="${ORRERY_SMALL_QUERY_MS:-1000}")
fi

for round in $(seq 1 "$rounds"); do
  for side in "$a" "$b"; do
    if [ "$side" = "$a" ]; then side_env=("${a_env[@]}"); else side_env=("${b_env[@]}"); fi
    load="$(cut -d' ' -f1 /proc/loadavg)"
    line="$(env "${side_env[@]}" bash "$here/run.sh" 2>/dev/null | grep '^{"bench":"isolation"' || true)"
    [ -n "$line" ] || { echo "compare: run $round ($side) failed" >&2; exit 1; }
    echo "$side $load $line" >>"$results"
    echo "round $round $side (load $load): $(node -e '
      const r = JSON.parse(process.argv[1]).loaded;
      console.log(`small query p50 ${r.query.p50_ms} ms p99 ${r.query.p99_ms} ms (${r.query.timeouts} timed out); OTLP POST p50 ${r.post.p50_ms} ms p99 ${r.post.p99_ms} ms (${r.post.timeouts} timed out); SELECT 1 p99 ${r.one.p99_ms} ms; GET /health p99 ${r.health.p99_ms} ms`);
    ' "$line")"
  done
done

node -e '
  const [, file, a, b] = process.argv;
  const lines = require("fs").readFileSync(file, "utf8").trim().split("\n");
  const sides = { [a]: [], [b]: [] };
  for (const l of lines) {
    const [side, , ...json] = l.split(" ");
    sides[side].push(JSON.parse(json.join(" ")).loaded);
  }
  const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor((s.length - 1) / 2)]; };
  const row = (what, pick) => {
    const x = median(sides[a].map(pick)), y = median(sides[b].map(pick));
    console.log(`${what.padEnd(24)} ${a} ${String(x).padStart(7)} ms   ${b} ${String(y).padStart(7)} ms   ratio ${(y / x).toFixed(2)}`);
  };
  console.log("\nmedian over rounds, loaded phase:");
  row("small query p50", (r) => r.query.p50_ms);
  row("small query p99", (r) => r.query.p99_ms);
  row("OTLP POST p50", (r) => r.post.p50_ms);
  row("OTLP POST p99", (r) => r.post.p99_ms);
' "$results" "$a" "$b"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
