#!/usr/bin/env bash
# OTLP/HTTP log ingestion benchmark: starts `orrery serve` on free ports with a fresh data folder,
# drives it with loadgen.mjs (protobuf requests of 1 000 log records, N concurrent connections, each
# request different), prints log records/s and request latency per N, then checks the stored count
# (materialize_partitions('blocks', ...) + SELECT sum(nb_objects) FROM blocks = records sent), then
# materializes log_entries and prints the bytes kept per record (payloads + partitions + Postgres, against
# micromegas's 149) and the server's peak RSS. The same 2.4 M records as issue 16's micromegas run:
#   PROFILE=0 CONNECTIONS=4 DURATION=<s> bash bench/ingestion/run.sh   (records sent = rate x DURATION)
#
#   bash bench/ingestion/run.sh                          # 4, 8, 16 connections, 20 s each
#   CONNECTIONS=8 DURATION=5 bash bench/ingestion/run.sh # quick check
#   PROFILE=1 bash bench/ingestion/run.sh                # always profile (default: only below target)
#
# Environment: CONNECTIONS (comma-separated, default 4,8,16), DURATION (s per run, default 20),
# WARMUP (s left out of each run's figures, default 2), TARGET (records/s, default 100000),
# GZIP=1 (each body sent gzipped, Content-Encoding: gzip, as OTel exporters may; the load generator
# compresses before timing), FORMAT=json (OTLP/JSON bodies instead of protobuf), PROFILE (auto: when the best run is below TARGET, a second server runs under
# node --cpu-prof with the best connection count for DURATION s and its top self-time functions are
# printed; 1: always; 0: never), PROFILE_DIR (default bench/ingestion/profiles), KEEP_DATA=1 keeps the data folder,
# STORAGE=0 (no log_entries materialization nor bytes per record after the runs: a quicker A/B of the ack path).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
source "$here/../lib.sh"

connections="${CONNECTIONS:-4,8,16}"
duration="${DURATION:-20}"
warmup="${WARMUP:-2}"
target="${TARGET:-100000}"
profile="${PROFILE:-auto}"
profile_dir="${PROFILE_DIR:-$here/profiles}"
gzip_flag=()
[ "${GZIP:-0}" = 1 ] && gzip_flag=(--gzip)
gzip_flag+=(--format "${FORMAT:-protobuf}")

bench_ensure_built
python="$(bench_venv)"
data_dir="$(bench_data_dir ingestion)"
storage_flag=(--data-dir "$data_dir/main")
[ "${STORAGE:-1}" = 0 ] && storage_flag=()
cleanup() {
  orrery_stop
  bench_cleanup_data "$data_dir"
}
trap cleanup EXIT

orrery_start serve "$data_dir/main" || exit 1
echo "bench: orrery serve (pid $ORRERY_PID): HTTP 127.0.0.1:$ORRERY_HTTP_PORT, Flight SQL 127.0.0.1:$ORRERY_FLIGHT_PORT" >&2
out="$data_dir/bench.out"
status=0
"$python" "$here/bench.py" --http-port "$ORRERY_HTTP_PORT" --flight-port "$ORRERY_FLIGHT_PORT" --server-pid "$ORRERY_PID" \
  "${storage_flag[@]}" "${gzip_flag[@]}" \
  --connections "$connections" --duration "$duration" --warmup "$warmup" --target "$target" "$@" | tee "$out" || status=$?
orrery_stop
if [ "$status" -ne 0 ]; then
  echo "bench: bench.py failed ($status); server log:" >&2
  tail -30 "$ORRERY_LOG" >&2
fi

summary="$(tail -1 "$out" | "$python" -c 'import json,sys; d=json.loads(sys.stdin.read()); print(d["best_connections"], int(d["met"]))' 2>/dev/null || echo "8 0")"
best_conns="${summary% *}"
met="${summary#* }"
if [ "$profile" = "1" ] || { [ "$profile" = "auto" ] && [ "$met" = "0" ]; }; then
  mkdir -p "$profile_dir"
  rm -f "$profile_dir"/*.cpuprofile "$profile_dir"/*.top.txt
  echo >&2
  echo "bench: profiling: a fresh server under node --cpu-prof, $best_conns connections for $duration s" >&2
  orrery_start serve "$data_dir/profile" --cpu-prof --cpu-prof-dir="$profile_dir" || exit 1
  node "$here/loadgen.mjs" --port "$ORRERY_HTTP_PORT" --connections "$best_conns" --duration "$duration" --warmup "$warmup" \
    --gzip "${GZIP:-0}" --format "${FORMAT:-protobuf}" >"$data_dir/profile-run.json"
  "$python" - "$data_dir/profile-run.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
print(f"profiled run: {d['measured_records_per_s'] or 0:,} records/s, p50 {d['latency_ms']['p50']} ms (the profiler itself costs some throughput)")
EOF
  orrery_stop
  cpu_profile_top "$profile_dir" 30
fi
exit "$status"
