#!/usr/bin/env bash
# Where a hot JDBC statement's time goes, RPC by RPC (issue 10 item 2): starts `orrery serve` (fresh data folder)
# with phase-probe.mjs preloaded, sends SQL (default `SELECT 1 AS one`) for SECONDS (default 5) after WARMUP
# (default 2,000) statements through the Arrow Flight SQL JDBC driver (java/LatencyClient.java, one connection, key
# `reader`), then rpc-gaps.py prints each RPC's median time on the server (its HTTP/2 stream seen -> closed, and
# its handler's phases) and the median gaps between one RPC's end and the next one's arrival: the client's time.
#
#   bash bench/latency/jdbc-phases.sh
#   SQL="SELECT range AS i FROM range(1000)" SECONDS=10 bash bench/latency/jdbc-phases.sh
#   ORRERY_REF=<commit> bash bench/latency/jdbc-phases.sh   # another commit's server (bench/lib.sh)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
source "$here/../lib.sh"
bench_ensure_built
python="$(bench_venv)"
cp_file="${TMPDIR:-/tmp}/orrery-bench-latency-jdbc.classpath"
bench_jdbc_classpath "$cp_file"
d="$(bench_data_dir jdbc-phases)"
trap 'orrery_stop; rm -rf "$d"' EXIT
# The probe loads the server's modules before orrery.cjs sizes libuv's pool: size it here as it would.
export UV_THREADPOOL_SIZE="${UV_THREADPOOL_SIZE:-20}" PHASES_ROOT="$ORRERY_ROOT" PHASES_OUT="$d/phases.json"
BENCH_API_KEYS='[{"name":"admin","key":"admin-key-0123"},{"name":"reader","key":"reader-key-0123","audiences":["public"]}]' \
  ORRERY_DUCKDB_THREADS="${THREADS:-2}" orrery_start serve "$d/o" --import "$here/phase-probe.mjs"
echo "bench: load $(cut -d' ' -f1 /proc/loadavg) at start" >&2
# The probe forgets the warm-up at the client's first mark and writes what it recorded after that first
# one-connection phase (LatencyClient then runs its "N connections" phase, here one connection too: ignored).
java --add-opens=java.base/java.nio=ALL-UNNAMED -Duser.timezone=UTC -cp "$(cat "$cp_file")" "$here/java/LatencyClient.java" \
  127.0.0.1 "$ORRERY_FLIGHT_PORT" reader reader-key-0123 "${SECONDS:-5}" 1 "${WARMUP:-2000}" "${SQL:-SELECT 1 AS one}" 2>/dev/null |
  {
    phase=0
    while read -r line; do
      case "$phase:$line" in
        0:*'"mark":"1"'*) kill -USR1 "$ORRERY_PID"; phase=1 ;;
        1:*'"phase":"1"'*) echo "client: $line"; kill -USR2 "$ORRERY_PID"; phase=2 ;;
      esac
    done
  }
for _ in $(seq 1 50); do [ -s "$PHASES_OUT" ] && break; sleep 0.1; done
echo "bench: load $(cut -d' ' -f1 /proc/loadavg) at end" >&2
"$python" "$here/rpc-gaps.py" "$PHASES_OUT"
