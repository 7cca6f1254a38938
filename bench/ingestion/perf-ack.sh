#!/usr/bin/env bash
# Where the ack path's CPU goes, per thread (issue 16): `orrery serve --perf-basic-prof`, loadgen.mjs with CONNECTIONS
# senders for WARMUP + PERF_S + 4 s, and in its middle `perf record -g` of the server for PERF_S s and every thread's
# CPU time (utime + stime, /proc) before and after. Prints records/s, the CPU ms per 1,000-record request of the main
# thread and of the other threads (libuv's workers, V8's), then perf-ack.py's shares: the main thread's samples by
# what its deepest JavaScript frame belongs to (HTTP, the Postgres client, the group object's file calls, ingestion's
# own code, ...), the other threads' by what they run (zstd, sha256, the scan, file calls, V8's compiler and GC).
# perf samples on-CPU time, so unlike --cpu-prof's wall time a loaded machine does not charge a wake-up's wait to it.
#
#   ORRERY_REF=HEAD CONNECTIONS=4 bash bench/ingestion/perf-ack.sh
#
# Environment: ORRERY_REF (see bench/lib.sh), CONNECTIONS (default 4), WARMUP (s before perf starts, default 8: the
# JIT's tier-up is done by then on a quiet machine), PERF_S (default 10), PERF_HZ (default 999), KEEP=<dir> keeps
# perf.data and its script there.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
source "$here/../lib.sh"
bench_ensure_built
warmup="${WARMUP:-8}"
perf_s="${PERF_S:-10}"
work="${KEEP:-$(mktemp -d -t orrery-perf-ack-XXXXXX)}"
mkdir -p "$work"
data="$(bench_data_dir perf-ack)"
cleanup() {
  orrery_stop
  bench_cleanup_data "$data"
  [ -n "${KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
threads_cpu() { # tid ticks, one line per thread of the server
  for task in /proc/"$ORRERY_PID"/task/*; do
    awk -v tid="${task##*/}" '{ sub(/^.*\) /, ""); split($0, f, " "); print tid, f[12] + f[13] }' "$task/stat"
  done
}
orrery_start serve "$data" --perf-basic-prof || exit 1
echo "perf-ack: $(git -C "$bench_root" rev-parse --short "${ORRERY_REF:-HEAD}"), ${CONNECTIONS:-4} senders, load $(cut -d' ' -f1-3 /proc/loadavg)"
node "$here/loadgen.mjs" --port "$ORRERY_HTTP_PORT" --connections "${CONNECTIONS:-4}" \
  --duration $((warmup + perf_s + 4)) --warmup "$warmup" >"$work/loadgen.json" 2>/dev/null &
loadgen=$!
sleep "$warmup"
threads_cpu >"$work/cpu0.txt"
perf record -F "${PERF_HZ:-999}" -g -p "$ORRERY_PID" -o "$work/perf.data" -- sleep "$perf_s" 2>/dev/null
threads_cpu >"$work/cpu1.txt"
wait "$loadgen"
perf script -i "$work/perf.data" -F tid,ip,sym,dso 2>/dev/null >"$work/perf.txt"
python3 "$here/perf-ack.py" "$work" "$ORRERY_PID" "$perf_s"
echo "load at the end $(cut -d' ' -f1-3 /proc/loadavg)"
