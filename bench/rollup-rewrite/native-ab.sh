#!/usr/bin/env bash
# The dashboard of bench.mjs with the native sketch aggregates and with their SQL definitions
# (ORRERY_NATIVE=on / off, issues 14 and 17): loads ROWS spans and the rollups once (KEEP_DATA), then
# ROUNDS times starts `orrery serve` on that folder with ORRERY_NATIVE=on, then =off, and runs
# twins.mjs against each (every panel and its raw twin alternately, REPEATS times). Prints per panel
# the median over rounds of each mode's rollup and raw time, and off/on.
#
#   ROWS=200000 ROUNDS=2 REPEATS=5 bash bench/rollup-rewrite/native-ab.sh
#
# With BEFORE=<git ref>, the two servers compared are that commit's (built under $TMPDIR, as
# ORRERY_REF builds it) and the work tree's, both with the addon: a change's A/B on the same data.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
source "$here/../lib.sh"

bench_ensure_built
data_dir="$(bench_data_dir rollup-native)"
results="$data_dir/twins.jsonl"
cleanup() {
  orrery_stop
  bench_cleanup_data "$data_dir"
}
trap cleanup EXIT

echo "bench: load average $(cut -d' ' -f1-3 /proc/loadavg) at start" >&2
orrery_start serve "$data_dir/main" || exit 1
node "$here/bench.mjs" --flight-port "$ORRERY_FLIGHT_PORT" --lake "$data_dir/main/lake" \
  --rows "${ROWS:-200000}" --repeats 1 >"$data_dir/load.txt"
orrery_stop
modes=(on off)
after_root="$ORRERY_ROOT"
if [ -n "${BEFORE:-}" ]; then
  modes=(before after)
  before_root="$(ORRERY_REF="$BEFORE" bash -c "source '$here/../lib.sh' && bench_ensure_built >&2 && echo \"\$ORRERY_ROOT\"")"
fi
for round in $(seq 1 "${ROUNDS:-2}"); do
  for mode in "${modes[@]}"; do
    rm -f "$data_dir/main/server.log" # orrery_start reads the ports from the first lines of a fresh log
    native=$mode
    export ORRERY_ROOT="$after_root"
    case $mode in before) native=on ORRERY_ROOT="$before_root" ;; after) native=on ;; esac
    ORRERY_NATIVE=$native orrery_start serve "$data_dir/main" || exit 1
    echo "bench: round $round, $mode, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
    BENCH_MODE=$mode node "$here/twins.mjs" --flight-port "$ORRERY_FLIGHT_PORT" --repeats "${REPEATS:-5}" |
      grep '^{' >>"$results"
    orrery_stop
  done
done
echo "bench: load average $(cut -d' ' -f1-3 /proc/loadavg) at end" >&2
node - "$results" "${modes[@]}" <<'JS'
const { readFileSync } = require('node:fs');
const [file, on, off] = process.argv.slice(2);
const runs = readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const of = (mode, panel, key) =>
  median(runs.filter((r) => r.mode === mode).map((r) => r.results.find((p) => p.panel === panel)[key]));
console.log(`panel | read | rollup ms ${on} | ${off} | ${off}/${on} | raw ms ${on} | ${off} | ${off}/${on}`);
for (const { panel, read } of runs[0].results) {
  const [a, b, c, d] = [of(on, panel, 'rollup_ms'), of(off, panel, 'rollup_ms'), of(on, panel, 'raw_ms'), of(off, panel, 'raw_ms')];
  const f = (x) => x.toFixed(1);
  console.log(`${panel} | ${read} | ${f(a)} | ${f(b)} | ${(b / a).toFixed(2)}x | ${f(c)} | ${f(d)} | ${(d / c).toFixed(2)}x`);
}
JS
