#!/usr/bin/env bash
# bench/s3 partitions: a query over 1,000 view-set partitions on an s3:// lake (versitygw behind the
# counting proxy) vs a file:// lake, with the ratio and the S3 requests per query (partitions.py says how).
# Both servers run at once and are queried alternately, so both figures see the same load. The ingestion
# takes PARTITIONS seconds (one insert second per partition).
#
#   bash bench/s3/partitions.sh                       # 1,000 partitions of 1,000 records (about 17 minutes)
#   PARTITIONS=100 bash bench/s3/partitions.sh        # quicker
#
# Environment: PARTITIONS (default 1000), RECORDS_PER_SECOND (default 1000), REPEATS (default 5), KEEP_DATA=1.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=s3-lib.sh
source "$here/s3-lib.sh"

file_pid="" s3_server_pid=""
cleanup() {
  for pid in "$file_pid" "$s3_server_pid"; do
    ORRERY_PID="$pid" orrery_stop
  done
  s3_proxy_stop
  bench_cleanup_data "${data_dir:-}"
}
trap cleanup EXIT
s3_bench_begin s3-partitions || exit 1

orrery_start serve "$data_dir/file" || exit 1
file_pid=$ORRERY_PID file_http=$ORRERY_HTTP_PORT file_flight=$ORRERY_FLIGHT_PORT
(
  s3_lake lake
  orrery_start serve "$data_dir/s3" || exit 1
  echo "$ORRERY_PID $ORRERY_HTTP_PORT $ORRERY_FLIGHT_PORT" >"$data_dir/s3-server"
)
read -r s3_server_pid s3_http s3_flight <"$data_dir/s3-server"
echo "bench: orrery serve on file:// (pid $file_pid) and s3:// (pid $s3_server_pid)" >&2
"$python" "$here/partitions.py" --file-http "$file_http" --file-flight "$file_flight" \
  --s3-http "$s3_http" --s3-flight "$s3_flight" --counts-url "$(s3_field s.counts)" --reset-url "$(s3_field s.reset)" \
  --partitions "${PARTITIONS:-1000}" --records-per-second "${RECORDS_PER_SECOND:-1000}" --repeats "${REPEATS:-5}"
