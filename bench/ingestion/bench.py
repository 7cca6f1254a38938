"""OTLP/HTTP log ingestion throughput: loadgen.mjs drives `orrery serve` with protobuf requests of
1 000 log records over N concurrent connections for a fixed time, for each N asked; then the stored
count is checked through the lakehouse (materialize_partitions('blocks', ...) over the runs' insert
range as the admin, then SELECT sum(nb_objects), count(*) FROM blocks = records and requests sent).
With --data-dir, log_entries is then materialized over the same range as one partition (what the daemon's
merges end with) and the bytes kept per record sent are printed next to micromegas's 149 (357 MB for
2.4 M records, issue 16): payload objects + partition files + the metadata database (storage.mjs); with
the server's pid, also its peak resident memory (VmHWM of the Node process; its embedded Postgres apart).

Run through run.sh, which starts the server; by hand:
  bench/.venv/bin/python bench/ingestion/bench.py --http-port 4318 --flight-port 50051 --connections 4,8
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchlib import ROOT, CpuMeter, Orrery, git_state, insert_range, log, machine_state, peak_rss, run_loadgen  # noqa: E402

MICROMEGAS_BYTES_PER_RECORD = 149  # 357 MB on disk for 2.4 M records (issue 16)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--http-port", type=int, required=True)
    parser.add_argument("--flight-port", type=int, required=True)
    parser.add_argument("--server-pid", type=int, default=None)
    parser.add_argument("--connections", default="4,8,16", help="comma-separated connection counts, one run each")
    parser.add_argument("--duration", type=float, default=20)
    parser.add_argument("--warmup", type=float, default=2, help="seconds at the start of each run left out of rate and latency")
    parser.add_argument("--target", type=float, default=100_000, help="goal, log records/s")
    parser.add_argument("--skip-verify", action="store_true")
    parser.add_argument("--gzip", action="store_true", help="the load generator gzips each body (Content-Encoding: gzip)")
    parser.add_argument("--format", default="protobuf", choices=["protobuf", "json"], help="OTLP/HTTP body encoding")
    parser.add_argument("--data-dir", default=None, help="the server's ORRERY_DATA_DIR: measure bytes stored per record")
    args = parser.parse_args()

    load_at_start = machine_state()["loadavg_1m"]
    runs = []
    for n in [int(c) for c in args.connections.split(",") if c.strip()]:
        log(f"run: {n} connections, {args.duration:g} s")
        cpu = CpuMeter(args.server_pid)
        run = run_loadgen(args.http_port, n, args.duration, warmup_s=args.warmup, extra=["--format", args.format, "--gzip", "1" if args.gzip else "0"])
        run.update(cpu.read())
        runs.append(run)
        log(f"  {run['measured_records_per_s'] or 0:,} records/s, p50 {run['latency_ms']['p50']} ms, p99 {run['latency_ms']['p99']} ms, "
            f"{run['requests_failed']} failed")

    # Before any materialization: what acknowledging the requests alone took.
    ingest_rss = peak_rss(args.server_pid)["node_peak_rss_bytes"] if args.server_pid else 0
    sent = sum(r["records_sent"] for r in runs)
    requests = sum(r["requests_ok"] for r in runs)
    verify: dict = {"records_sent": sent, "requests_ok": requests}
    ok = all(r["requests_failed"] == 0 for r in runs)
    if not args.skip_verify:
        begin, end = insert_range(runs)
        orrery = Orrery(args.flight_port)
        try:
            messages, seconds = orrery.materialize("blocks", begin, end)
            table = orrery.query("SELECT sum(nb_objects)::BIGINT AS records, count(*)::BIGINT AS blocks FROM blocks")
        finally:
            orrery.close()
        stored, blocks = table.column("records")[0].as_py(), table.column("blocks")[0].as_py()
        verify.update({"stored_records": stored, "stored_blocks": blocks, "materialize_blocks_s": round(seconds, 3), "materialize_msgs": messages})
        ok = ok and stored == sent and blocks == requests
        verify["ok"] = ok

    storage: dict = {}
    if args.data_dir and not args.skip_verify:
        orrery = Orrery(args.flight_port)
        try:
            _, storage["materialize_log_entries_s"] = orrery.materialize("log_entries", begin, end)
        finally:
            orrery.close()
        storage.update(json.loads(subprocess.run(["node", os.path.join(ROOT, "bench", "ingestion", "storage.mjs"), args.data_dir],
                                                 stdout=subprocess.PIPE, text=True, check=True).stdout.strip().splitlines()[-1]))
        total = storage["payloads"]["bytes"] + storage["partitions"]["bytes"] + storage["postgres"]["database"]
        storage["bytes_per_record"] = round(total / sent, 1) if sent else None
    if args.server_pid:
        storage.update(peak_rss(args.server_pid), node_peak_rss_ingest_bytes=ingest_rss)

    best = max(runs, key=lambda r: r["measured_records_per_s"] or 0)
    # Records per CPU-second of the Node process over the whole run: less sensitive than records/s to
    # other work on the machine; with one busy main thread, about the ceiling of records/s.
    per_cpu = lambda r: round(r["records_sent"] / r["server_node_cpu_s"]) if r.get("server_node_cpu_s") else 0  # noqa: E731
    for r in runs:
        r["records_per_node_cpu_s"] = per_cpu(r)
    print()
    print(f"Orrery OTLP/HTTP log ingestion: protobuf requests{' (gzip)' if args.gzip else ''} of {runs[0]['batch']} records "
          f"(~{runs[0]['body_bytes_avg'] / 1024:.0f} KiB), {args.duration:g} s per run ({args.warmup:g} s warm-up left out), "
          f"{os.cpu_count()} CPUs")
    header = f"{'conns':>5} {'records/s':>10} {'req/s':>7} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8} {'max ms':>8} {'failed':>6} {'node cpu':>9} {'pg cpu':>7} {'gen cpu':>8} {'rec/node-cpu-s':>14}"
    print(header)
    print("-" * len(header))
    for r in runs:
        lat = r["latency_ms"]
        rate = r["measured_records_per_s"] or 0
        print(f"{r['connections']:>5} {rate:>10,} {rate / r['batch']:>7.1f} {lat['p50']:>8.1f} {lat['p90']:>8.1f} {lat['p99']:>8.1f} {lat['max']:>8.1f} "
              f"{r['requests_failed']:>6} {r.get('server_node_cpu_s', 0):>9.1f} {r.get('server_postgres_cpu_s', 0):>7.1f} {r['loadgen_cpu_s']:>8.1f} {per_cpu(r):>14,}")
    print()
    print(f"best: {best['measured_records_per_s']:,} log records/s with {best['connections']} connections   goal >= {args.target:,.0f}"
          f"  -> {'met' if (best['measured_records_per_s'] or 0) >= args.target else 'NOT met'}")
    if not args.skip_verify:
        print(f"check: {verify['stored_records']:,} records in {verify['stored_blocks']:,} blocks stored (SELECT sum(nb_objects), count(*) FROM blocks "
              f"after materialize_partitions('blocks', ...) in {verify['materialize_blocks_s']:.2f} s); sent {sent:,} in {requests:,} requests "
              f"-> {'OK' if ok else 'MISMATCH'}")
    if storage.get("bytes_per_record") is not None:
        per = lambda n: n / sent  # noqa: E731
        print(f"storage: {storage['bytes_per_record']:.1f} bytes per record sent (micromegas {MICROMEGAS_BYTES_PER_RECORD}; "
              f"ratio {storage['bytes_per_record'] / MICROMEGAS_BYTES_PER_RECORD:.2f}): payloads {per(storage['payloads']['bytes']):.1f} "
              f"({storage['payloads']['files']} objects), partitions {per(storage['partitions']['bytes']):.1f} ({storage['partitions']['files']} files), "
              f"Postgres {per(storage['postgres']['database']):.1f} (database; its tables {per(storage['postgres']['tables']):.1f}) "
              f"over {sent:,} records; log_entries materialized in {storage['materialize_log_entries_s']:.2f} s")
    if storage.get("node_peak_rss_bytes"):
        print(f"peak RSS: Node {storage['node_peak_rss_ingest_bytes'] / 2**20:,.0f} MiB while ingesting, "
              f"{storage['node_peak_rss_bytes'] / 2**20:,.0f} MiB after materializing (goal < 1 GiB), embedded Postgres processes "
              f"{storage['children_peak_rss_bytes'] / 2**20:,.0f} MiB summed (shared buffers counted per process)")
    figures = {
        "bench": "ingestion",
        "batch": runs[0]["batch"],
        "duration_s": args.duration,
        "warmup_s": args.warmup,
        "target_records_per_s": args.target,
        "best_records_per_s": best["measured_records_per_s"],
        "best_connections": best["connections"],
        "met": (best["measured_records_per_s"] or 0) >= args.target,
        "loadavg_1m_at_start": load_at_start,
        **machine_state(),
        **git_state(),
        "gzip": args.gzip,
        "format": args.format,
        "runs": [{k: v for k, v in r.items() if k not in ("per_minute", "per_level")} for r in runs],
        "verify": verify,
        "storage": storage,
    }
    if load_at_start > 0.7:
        print(f"warning: 1-minute load average was {load_at_start} at start: other work on the machine may have skewed the figures")
    print(json.dumps(figures, separators=(",", ":")))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
