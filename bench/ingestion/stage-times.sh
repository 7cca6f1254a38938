#!/usr/bin/env bash
# Where one OTLP logs request's time goes on the ack path (issue 16): a copy of the built tree with stage timers
# added (stage-times.py: body read, the worker's scan/sha256/brotli, the waits for and the times of the group
# commit's write and commit stages, the whole), `orrery serve` from it, loadgen.mjs with CONNECTIONS senders for
# DURATION s; prints records/s, the client's latency and, per stage, n, mean, p50 and p90 in ms (after WARMUP s).
# Timers cost a few microseconds per request; the figures are wall times, so a loaded machine stretches them all.
#
#   ORRERY_REF=HEAD CONNECTIONS=4 DURATION=10 bash bench/ingestion/stage-times.sh
#
# Environment: ORRERY_REF (see bench/lib.sh), CONNECTIONS (default 4), DURATION (s, default 10), WARMUP (s, default 2).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
source "$here/../lib.sh"
bench_ensure_built
work="$(mktemp -d -t orrery-stage-times-XXXXXX)"
data="$(bench_data_dir stage-times)"
cleanup() {
  orrery_stop
  rm -rf "$work"
  bench_cleanup_data "$data"
}
trap cleanup EXIT
cp -r "$ORRERY_ROOT/dist" "$ORRERY_ROOT/package.json" "$work/"
ln -s "$ORRERY_ROOT/node_modules" "$work/node_modules"
ln -s "$ORRERY_ROOT/proto" "$work/proto"
python3 "$here/stage-times.py" "$work"
export ORRERY_ROOT="$work" STAGE_WARMUP_MS=$((${WARMUP:-2} * 1000))
orrery_start serve "$data" || exit 1
echo "stage-times: $(git -C "$bench_root" rev-parse --short "${ORRERY_REF:-HEAD}"), load $(cut -d' ' -f1-3 /proc/loadavg)"
node "$here/loadgen.mjs" --port "$ORRERY_HTTP_PORT" --connections "${CONNECTIONS:-4}" --duration "${DURATION:-10}" \
  --warmup "${WARMUP:-2}" 2>/dev/null |
  python3 -c 'import json,sys; d=json.load(sys.stdin); print(format(d["measured_records_per_s"], ","), "records/s, client latency ms", d["latency_ms"])'
orrery_stop
sed -n '/^STAGES/,$p' "$ORRERY_LOG"
