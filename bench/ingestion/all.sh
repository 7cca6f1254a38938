#!/usr/bin/env bash
# Issue 16's comparison in one run (item 5), on this tree and the same generated records: OTLP/HTTP logs
# acknowledged (records/s, request p50/p99) at each CONNECTIONS count for protobuf and JSON bodies, gzip off and
# on (a fresh server per mix, run.sh); bytes on disk per record and peak RSS (the protobuf run, its records
# materialized); time until records are queryable while CONNECTIONS_QUERYABLE senders load an `orrery all`
# (queryable.sh --one); materialization rows/s of RECORDS records as one partition (bench/materialization,
# --server-only). One table at the end, next to micromegas's figures measured on this machine for the issue
# (650-920 k records/s at 4 senders, 4-5 ms median, 149 bytes per record; it is not re-run here).
#
#   bash bench/ingestion/all.sh                         # about 6 minutes on 2 cores
#   CONNECTIONS=4 DURATION=5 RECORDS=500000 bash bench/ingestion/all.sh   # quick check
#
# Environment: CONNECTIONS (default 4,16), DURATION (s per ack run, default 8), CONNECTIONS_QUERYABLE (default 4),
# DURATION_QUERYABLE (s, default 20), DURATION_STORAGE (s of the bytes-per-record run, default 3), RECORDS
# (materialization, default 2000000); ORRERY_REF as in bench/lib.sh.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="$(mktemp -d "${TMPDIR:-/tmp}/orrery-ingestion-all-XXXXXX")"
trap 'rm -rf "$out"' EXIT
last_json() { grep '^{' | tail -1; }

for format in protobuf json; do
  for gzip in 0 1; do
    echo "bench: $format, gzip $gzip (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
    FORMAT="$format" GZIP="$gzip" STORAGE=0 PROFILE=0 CONNECTIONS="${CONNECTIONS:-4,16}" \
      DURATION="${DURATION:-8}" bash "$here/run.sh" | last_json >"$out/ack-$format-$gzip.json"
  done
done
# Bytes per record over a run the maintenance engine materializes as one partition within its default memory
# limit: 4 senders for DURATION_STORAGE s (about 2 M records), kept short for the run's time: DURATION_STORAGE=20
# (~15 M records as one partition, which ran out of the default 384 MiB before 48908af) takes about a minute more.
echo "bench: bytes per record (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
FORMAT=protobuf STORAGE=1 PROFILE=0 CONNECTIONS=4 DURATION="${DURATION_STORAGE:-3}" bash "$here/run.sh" |
  last_json >"$out/storage.json"
echo "bench: time until queryable (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
CONNECTIONS="${CONNECTIONS_QUERYABLE:-4}" DURATION="${DURATION_QUERYABLE:-20}" bash "$here/queryable.sh" --one |
  last_json >"$out/queryable.json"
echo "bench: materialization (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
PROFILE=0 RECORDS="${RECORDS:-2000000}" REPEATS=1 bash "$here/../materialization/run.sh" --server-only |
  last_json >"$out/materialize.json"

python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
load = lambda name: json.load(open(os.path.join(out, name)))  # noqa: E731
print()
print("Orrery OTLP/HTTP logs, 1,000-record requests (micromegas on this machine: 650-920 k records/s at 4 senders, p50 4-5 ms)")
print(f"{'body':<9} {'gzip':>4} {'conns':>5} {'records/s':>11} {'p50 ms':>7} {'p99 ms':>7} {'vs 1 M':>7} {'stored':>6} {'load':>5}")
for mix in ("protobuf-0", "protobuf-1", "json-0", "json-1"):
    d = load(f"ack-{mix}.json")
    stored = "ok" if d["verify"].get("stored_records") == d["verify"]["records_sent"] else "NO"
    for r in d["runs"]:
        rate = r["measured_records_per_s"] or 0
        print(f"{d['format']:<9} {'on' if d['gzip'] else 'off':>4} {r['connections']:>5} {rate:>11,} {r['latency_ms']['p50']:>7.1f} "
              f"{r['latency_ms']['p99']:>7.1f} {rate / 1e6:>6.2f}x {stored:>6} {d['loadavg_1m_at_start']:>5}")
storage = load("storage.json")["storage"]
q, m = load("queryable.json"), load("materialize.json")
orrery = m["results"]["orrery"]
print()
print(f"bytes on disk per record: {storage['bytes_per_record']} over {load('storage.json')['verify']['records_sent']:,} records (micromegas 149: {storage['bytes_per_record'] / 149:.2f}x)")
print(f"peak RSS of the server: {storage['node_peak_rss_ingest_bytes'] / 2**20:,.0f} MiB acknowledging, "
      f"{storage['node_peak_rss_bytes'] / 2**20:,.0f} MiB materializing (goal < 1,024)")
print(f"time until queryable ({q['probes']} probes under {q['records_per_s']:,} records/s): p50 {q['p50_s']} s, p90 {q['p90_s']} s, "
      f"max {q['max_s']} s, never seen {q['never']}")
print(f"materialization of {m['records']:,} records as one partition: {orrery['best_s']} s, {orrery['best_rows_per_s']:,} rows/s "
      f"({orrery['best_rows_per_s'] / 3e6:.2f}x the 3 M rows/s goal), peak RSS {max(m['peak_rss']['materialize_mib'])} MiB")
PY
