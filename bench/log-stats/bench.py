"""log_stats query benchmark: queries over N ingested log entries through Orrery's Flight SQL
(pyarrow, DoGet with the SQL as ticket, as the admin key) against DuckDB in-process (Python
duckdb, same release) reading the same Parquet partition files.

1. Ingests --records log records (loadgen.mjs, OTLP/HTTP protobuf, batches of 1 000); the
   generator tallies what it sent per level and per event-time minute.
2. Materializes blocks, log_entries and log_stats over the ingestion's insert range, one partition
   each (materialize_partitions as the admin; times printed).
3. Times, --repeats runs after --warmup untimed ones:
     Q1  SELECT level, count(*) FROM log_entries GROUP BY level
     Q2  SELECT time_bin, sum(count) FROM log_stats GROUP BY 1 ORDER BY 1
   through Flight SQL, and in-process over read_parquet(<the partitions' files, from list_partitions()>)
   with the same thread count as the server's query engine (--threads, default 2). Q0 (SELECT 1) shows
   the fixed cost of one Flight SQL query.
4. Checks: Q1 = the generator's per-level counts on both sides; Q2 = the generator's per-minute
   counts on both sides (sum = N).

ratio = in-process time / Flight time (1.0: Flight costs nothing over in-process).

Run through run.sh, which starts the server.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import sys
import time

import duckdb

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchlib import CpuMeter, Orrery, git_state, ingest, insert_range, log, machine_state  # noqa: E402

Q0 = "SELECT 1 AS k, 1 AS n"
Q1 = "SELECT level, count(*) AS n FROM {log_entries} GROUP BY level"
Q2 = "SELECT time_bin, sum(count) AS n FROM {log_stats} GROUP BY 1 ORDER BY 1"


def quote_lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def as_map(rows: list[tuple]) -> dict:
    out = {}
    for k, v in rows:
        if isinstance(k, dt.datetime):
            k = int(k.replace(tzinfo=dt.timezone.utc).timestamp()) if k.tzinfo is None else int(k.timestamp())
        elif hasattr(k, "value"):  # pandas-like timestamps
            k = int(k.value // 1_000_000_000)
        out[int(k)] = int(v)
    return out


def measure(fn, repeats: int, warmup: int, cpu_pid: int | None = None) -> tuple[list[float], object, list[dict]]:
    result = None
    for _ in range(warmup):
        result = fn()
    times, cpus = [], []
    for _ in range(repeats):
        cpu = CpuMeter(cpu_pid) if cpu_pid else None
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
        if cpu:
            cpus.append(cpu.read())
    return times, result, cpus


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--http-port", type=int, required=True)
    parser.add_argument("--flight-port", type=int, required=True)
    parser.add_argument("--server-pid", type=int, default=None)
    parser.add_argument("--data-dir", required=True, help="the server's ORRERY_DATA_DIR")
    parser.add_argument("--records", type=int, default=10_000_000)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2, help="in-process DuckDB threads (match the server's ORRERY_DUCKDB_THREADS)")
    args = parser.parse_args()

    load_at_start = machine_state()["loadavg_1m"]
    lake = os.path.join(args.data_dir, "lake")
    run = ingest(args.http_port, args.records, args.connections, args.server_pid)
    begin, end = insert_range([run])
    orrery = Orrery(args.flight_port)
    materialized: dict[str, float] = {}
    results: dict[str, dict] = {}
    answers: dict[str, dict] = {}
    try:
        for view in ("blocks", "log_entries", "log_stats"):
            cpu = CpuMeter(args.server_pid)
            _, seconds = orrery.materialize(view, begin, end)
            materialized[view] = round(seconds, 2)
            log(f"materialized {view} in {seconds:.2f} s {cpu.read()}")
        parts = orrery.query("SELECT view_set_name, file_path, num_rows FROM list_partitions() WHERE file_path IS NOT NULL").to_pylist()
        files = {v: [os.path.join(lake, p["file_path"]) for p in parts if p["view_set_name"] == v] for v in ("log_entries", "log_stats")}
        rows = {v: sum(p["num_rows"] for p in parts if p["view_set_name"] == v) for v in ("log_entries", "log_stats")}
        log(f"partitions: log_entries {len(files['log_entries'])} file(s), {rows['log_entries']:,} rows; "
            f"log_stats {len(files['log_stats'])} file(s), {rows['log_stats']:,} rows")

        con = duckdb.connect()
        con.execute(f"SET threads={args.threads}")
        relation = {v: "read_parquet([" + ", ".join(quote_lit(f) for f in fs) + "])" for v, fs in files.items()}
        for name, template in (("Q0 SELECT 1 (fixed cost)", Q0), ("Q1 log_entries level counts", Q1), ("Q2 log_stats per minute", Q2)):
            flight_sql = template.format(log_entries="log_entries", log_stats="log_stats")
            local_sql = template.format(log_entries=relation["log_entries"], log_stats=relation["log_stats"])
            ft, ftable, fcpu = measure(lambda: orrery.query(flight_sql), args.repeats, args.warmup, args.server_pid)
            lt, ltable, _ = measure(lambda: con.sql(local_sql).to_arrow_table(), args.repeats, args.warmup)
            answers[name] = {"flight": as_map([tuple(r.values()) for r in ftable.to_pylist()]),
                             "duckdb": as_map([tuple(r.values()) for r in ltable.to_pylist()])}
            results[name] = {
                "sql": flight_sql,
                "flight_best_s": round(min(ft), 4), "flight_median_s": round(statistics.median(ft), 4),
                "duckdb_best_s": round(min(lt), 4), "duckdb_median_s": round(statistics.median(lt), 4),
                "flight_runs_s": [round(t, 4) for t in ft], "duckdb_runs_s": [round(t, 4) for t in lt],
                "ratio_best": round(min(lt) / min(ft), 3), "ratio_median": round(statistics.median(lt) / statistics.median(ft), 3),
                "result_rows": ftable.num_rows,
            }
            if fcpu and fcpu[0]:
                results[name]["server_node_cpu_s_median"] = round(statistics.median(c["server_node_cpu_s"] for c in fcpu), 3)
            log(f"  {name}: Flight {min(ft) * 1000:.1f} ms, in-process {min(lt) * 1000:.1f} ms (best of {args.repeats})")
        con.close()
    finally:
        orrery.close()

    sent_levels = {int(k): v for k, v in run["per_level"].items()}
    sent_minutes = {int(k): v for k, v in run["per_minute"].items()}
    q1, q2 = answers["Q1 log_entries level counts"], answers["Q2 log_stats per minute"]
    checks = {
        "q1_flight_eq_sent": q1["flight"] == sent_levels,
        "q1_duckdb_eq_sent": q1["duckdb"] == sent_levels,
        "q2_flight_eq_sent": q2["flight"] == sent_minutes,
        "q2_duckdb_eq_sent": q2["duckdb"] == sent_minutes,
        "log_entries_rows": rows["log_entries"],
    }
    checks["q0_ok"] = answers["Q0 SELECT 1 (fixed cost)"]["flight"] == {1: 1} == answers["Q0 SELECT 1 (fixed cost)"]["duckdb"]
    ok = all(v for k, v in checks.items() if k.startswith("q")) and rows["log_entries"] == args.records
    checks["ok"] = ok

    print()
    print(f"Orrery log_stats queries: {args.records:,} log entries ({rows['log_stats']:,} log_stats rows), best / median of {args.repeats} "
          f"after {args.warmup} warm-up, DuckDB threads={args.threads}, {os.cpu_count()} CPUs")
    print(f"materialization (one partition each): " + ", ".join(f"{v} {s:.2f} s" for v, s in materialized.items())
          + f"; ingestion {run['records_per_s'] / 1000:.1f} k records/s")
    header = f"{'query':<30} {'Flight best ms':>14} {'median':>8} {'in-proc best ms':>15} {'median':>8} {'ratio best':>10} {'median':>7} {'rows':>6}"
    print(header)
    print("-" * len(header))
    for name, r in results.items():
        print(f"{name:<30} {r['flight_best_s'] * 1000:>14.1f} {r['flight_median_s'] * 1000:>8.1f} {r['duckdb_best_s'] * 1000:>15.1f} "
              f"{r['duckdb_median_s'] * 1000:>8.1f} {r['ratio_best']:>10.2f} {r['ratio_median']:>7.2f} {r['result_rows']:>6}")
    print("ratio = in-process time / Flight time")
    print(f"check: Q1 per-level counts = sent ({sent_levels}) on Flight {checks['q1_flight_eq_sent']}, in-process {checks['q1_duckdb_eq_sent']}; "
          f"Q2 per-minute sums = sent ({len(sent_minutes)} minutes, total {sum(sent_minutes.values()):,}) on Flight {checks['q2_flight_eq_sent']}, "
          f"in-process {checks['q2_duckdb_eq_sent']} -> {'OK' if ok else 'MISMATCH'}")
    if not ok:
        print(f"  Q1 flight {q1['flight']} duckdb {q1['duckdb']}\n  Q2 flight {q2['flight']}\n  Q2 duckdb {q2['duckdb']}\n  sent minutes {sent_minutes}")
    if load_at_start > 0.7:
        print(f"warning: 1-minute load average was {load_at_start} at start: other work on the machine may have skewed the figures")
    figures = {
        "bench": "log-stats",
        "records": args.records,
        "log_stats_rows": rows["log_stats"],
        "repeats": args.repeats,
        "warmup": args.warmup,
        "threads": args.threads,
        "ingest_records_per_s": run["records_per_s"],
        "materialize_s": materialized,
        "results": results,
        "checks": checks,
        "loadavg_1m_at_start": load_at_start,
        **machine_state(),
        "duckdb": duckdb.__version__,
        **git_state(),
    }
    print(json.dumps(figures, separators=(",", ":")))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
