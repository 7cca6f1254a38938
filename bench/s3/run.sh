#!/usr/bin/env bash
# bench/s3: ingestion, materialization, series-table writes and scans on an s3:// lake (versitygw, the
# test suite's S3 server, behind a proxy that counts requests) vs a file:// lake, in one run, with the
# ratio and the S3 requests per query. One `orrery serve` per store, each on a fresh data folder (no daemon:
# the bench materializes what it reads); first, an idle `orrery all` on S3 for IDLE_SECONDS (default 10)
# shows what the daemon's passes cost the store with nothing arriving.
#
#   bash bench/s3/run.sh                          # 1 M records, 300 series files (quick)
#   RECORDS=10000000 bash bench/s3/run.sh         # the issue's 10 M-row scan
#
# Environment: RECORDS (default 1000000), FILES (default 300), REPEATS (default 5), CONNECTIONS
# (ingestion, default 8), KEEP_DATA=1.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
source "$here/../lib.sh"

bench_ensure_built
python="$(bench_venv)"
data_dir="$(bench_data_dir s3)"
s3_info="$data_dir/s3.json"
node "$here/s3-proxy.mjs" >"$s3_info" 2>"$data_dir/s3.log" &
s3_pid=$!
cleanup() {
  orrery_stop
  kill "$s3_pid" 2>/dev/null || true
  wait "$s3_pid" 2>/dev/null || true
  bench_cleanup_data "$data_dir"
}
trap cleanup EXIT
for _ in $(seq 1 600); do [ -s "$s3_info" ] && break; sleep 0.1; done
[ -s "$s3_info" ] || { echo "bench: the S3 server did not start: $(cat "$data_dir/s3.log")" >&2; exit 1; }
field() { node -e "const s=JSON.parse(require('fs').readFileSync('$s3_info','utf8')); console.log($1)"; }

measure() {
  local store="$1"
  shift
  orrery_start serve "$data_dir/$store" || exit 1
  echo "bench: orrery serve on $store (pid $ORRERY_PID)" >&2
  "$python" "$here/bench.py" measure --store "$store" --http-port "$ORRERY_HTTP_PORT" --flight-port "$ORRERY_FLIGHT_PORT" \
    --server-pid "$ORRERY_PID" --records "${RECORDS:-1000000}" --files "${FILES:-300}" --repeats "${REPEATS:-5}" \
    --connections "${CONNECTIONS:-8}" --out "$data_dir/$store.json" "$@" || { tail -30 "$ORRERY_LOG" >&2; exit 1; }
  orrery_stop
}

on_s3() {
  export MICROMEGAS_OBJECT_STORE_URI="s3://$(field s.bucket)/$1"
  eval "$(field "Object.entries(s.env).map(([k,v])=>'export '+k+'='+JSON.stringify(v)).join('\n')")"
}
(
  on_s3 idle
  orrery_start all "$data_dir/idle" || exit 1
  sleep 5 # past start-up's catch-up
  curl -fsS -X POST "$(field s.reset)" >/dev/null
  sleep "${IDLE_SECONDS:-10}"
  curl -fsS "$(field s.counts)" | node -e "const c=JSON.parse(require('fs').readFileSync(0,'utf8'));
    console.log(JSON.stringify(Object.fromEntries(Object.entries(c).map(([k,v])=>[k,+(v/${IDLE_SECONDS:-10}).toFixed(1)]))))" \
    >"$data_dir/idle.json"
  orrery_stop
)
measure file
(
  on_s3 lake
  measure s3 --counts-url "$(field s.counts)" --reset-url "$(field s.reset)"
)
"$python" "$here/bench.py" compare --file "$data_dir/file.json" --s3 "$data_dir/s3.json" --idle "$data_dir/idle.json"
