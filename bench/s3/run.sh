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
# shellcheck source=s3-lib.sh
source "$here/s3-lib.sh"

cleanup() {
  orrery_stop
  s3_proxy_stop
  bench_cleanup_data "${data_dir:-}"
}
trap cleanup EXIT
s3_bench_begin s3 || exit 1

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

(
  s3_lake idle
  orrery_start all "$data_dir/idle" || exit 1
  sleep 5 # past start-up's catch-up
  curl -fsS -X POST "$(s3_field s.reset)" >/dev/null
  sleep "${IDLE_SECONDS:-10}"
  curl -fsS "$(s3_field s.counts)" | node -e "const c=JSON.parse(require('fs').readFileSync(0,'utf8'));
    console.log(JSON.stringify(Object.fromEntries(Object.entries(c).map(([k,v])=>[k,+(v/${IDLE_SECONDS:-10}).toFixed(1)]))))" \
    >"$data_dir/idle.json"
  orrery_stop
)
measure file
(
  s3_lake lake
  measure s3 --counts-url "$(s3_field s.counts)" --reset-url "$(s3_field s.reset)"
)
"$python" "$here/bench.py" compare --file "$data_dir/file.json" --s3 "$data_dir/s3.json" --idle "$data_dir/idle.json"
