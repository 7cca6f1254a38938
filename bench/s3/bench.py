"""bench/s3: the same ingestion and queries on an s3:// lake (a real S3-compatible server behind a
counting proxy, s3-proxy.mjs) and on a file:// lake, side by side with the ratio, plus the number of
S3 requests each query makes and those of an idle daemon (run.sh counts them). run.sh starts one Orrery per store and calls this once per store
(`measure`), then once to print the comparison (`compare`).

measure (as the admin key):
  1. ingests --records log records over OTLP/HTTP (loadgen.mjs, batches of 1 000): records/s;
  2. materializes log_entries over the ingestion's range as one partition: seconds, rows/s;
  3. writes a series table in --files INSERT statements of 1 000 rows (one DuckLake data file each);
  4. times, best and median of --repeats after one warm-up:
       Q1  SELECT level, count(*) FROM log_entries GROUP BY level         (one column of --records rows)
       Q2  SELECT count(*), sum(length(msg)) FROM log_entries             (the widest column)
       Q3  SELECT k, count(*), sum(v) FROM bench_files GROUP BY k         (--files data files)
     and, on S3, the requests one more run of each makes (by kind: GET, HEAD, LIST, PUT...);
  5. checks the answers (Q1/Q2 against what was sent, Q3 against the rows written).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchlib import Orrery, ingest, insert_range, log, machine_state  # noqa: E402

QUERIES = {
    "Q1 log_entries level counts": "SELECT level, count(*) AS n FROM log_entries GROUP BY level ORDER BY level",
    "Q2 log_entries msg bytes": "SELECT count(*) AS n, sum(length(msg)) AS bytes FROM log_entries",
    "Q3 series table over its files": "SELECT k, count(*) AS n, sum(v) AS v FROM bench_files GROUP BY k ORDER BY k",
}


def requests(url: str | None, reset: bool = False) -> dict:
    if not url:
        return {}
    with urllib.request.urlopen(urllib.request.Request(url, method="POST" if reset else "GET")) as answer:
        return json.loads(answer.read())


def measure(args: argparse.Namespace) -> int:
    load = machine_state()["loadavg_1m"]
    figures: dict = {"store": args.store, "records": args.records, "files": args.files, "loadavg_1m_at_start": load}
    run = ingest(args.http_port, args.records, args.connections, args.server_pid)
    begin, end = insert_range([run])
    orrery = Orrery(args.flight_port)
    figures["ingest_records_per_s"] = round(run["records_per_s"])
    try:
        requests(args.reset_url, reset=True)
        _, seconds = orrery.materialize("log_entries", begin, end)
        figures["materialize_s"] = round(seconds, 2)
        figures["materialize_rows_per_s"] = round(args.records / seconds)
        figures["materialize_requests"] = requests(args.counts_url)
        log(f"{args.store}: materialized log_entries in {seconds:.2f} s")
        parts = orrery.query(
            "SELECT count(*) AS files, sum(file_size) AS bytes FROM list_partitions() "
            "WHERE view_set_name = 'log_entries' AND file_path IS NOT NULL"
        ).to_pylist()[0]
        figures["log_entries_bytes_per_record"] = round(float(parts["bytes"]) / args.records, 1)

        orrery.query("CREATE TABLE bench_files (time TIMESTAMP, k VARCHAR, v DOUBLE)")
        requests(args.reset_url, reset=True)
        start = time.perf_counter()
        for i in range(args.files):
            orrery.query(
                f"INSERT INTO bench_files SELECT TIMESTAMP '2026-01-01' + (j + {i * 1000}) * INTERVAL 1 SECOND, "
                f"'k' || (j % 10), j::DOUBLE FROM range(1000) t(j)"
            )
        seconds = time.perf_counter() - start
        figures["series_inserts_per_s"] = round(args.files / seconds, 1)
        figures["series_insert_requests_each"] = {k: round(v / args.files, 1) for k, v in requests(args.counts_url).items()}
        log(f"{args.store}: {args.files} INSERT statements in {seconds:.1f} s")

        answers = {}
        for name, sql in QUERIES.items():
            orrery.query(sql)  # warm-up
            times = []
            for _ in range(args.repeats):
                table, seconds = orrery.timed_query(sql)
                times.append(seconds)
            requests(args.reset_url, reset=True)
            answers[name] = orrery.query(sql).to_pylist()
            figures[name] = {
                "best_s": round(min(times), 4),
                "median_s": round(statistics.median(times), 4),
                "requests": requests(args.counts_url),
            }
            log(f"{args.store}: {name}: best {min(times) * 1000:.1f} ms, median {statistics.median(times) * 1000:.1f} ms")
    finally:
        orrery.close()

    sent_levels = {int(k): v for k, v in run["per_level"].items()}
    q1 = {row["level"]: row["n"] for row in answers["Q1 log_entries level counts"]}
    q2 = answers["Q2 log_entries msg bytes"][0]
    q3 = answers["Q3 series table over its files"]
    figures["ok"] = (
        q1 == sent_levels
        and q2["n"] == args.records
        and len(q3) == 10
        and sum(row["n"] for row in q3) == args.files * 1000
        and sum(row["v"] for row in q3) == args.files * sum(range(1000))
    )
    if not figures["ok"]:
        log(f"{args.store}: WRONG ANSWER: Q1 {q1} vs sent {sent_levels}; Q2 {q2}; Q3 {q3}")
    with open(args.out, "w") as out:
        json.dump(figures, out)
    return 0 if figures["ok"] else 1


def compare(args: argparse.Namespace) -> int:
    file_run, s3_run = (json.load(open(path)) for path in (args.file, args.s3))
    total = lambda counts: sum(counts.values()) if counts else 0  # noqa: E731
    print()
    print(f"bench/s3: {file_run['records']:,} log records, a series table of {file_run['files']} files; "
          f"file:// vs s3:// (versitygw on loopback), {os.cpu_count()} CPUs, load at start "
          f"{file_run['loadavg_1m_at_start']:.1f} / {s3_run['loadavg_1m_at_start']:.1f}")
    print(f"{'figure':<42} {'file://':>12} {'s3://':>12} {'s3/file':>8} {'S3 requests':>30}")
    rows = [
        ("OTLP ingest, records/s", "ingest_records_per_s", None),
        ("materialize log_entries, rows/s", "materialize_rows_per_s", "materialize_requests"),
        ("series INSERT statements/s", "series_inserts_per_s", "series_insert_requests_each"),
        ("log_entries Parquet bytes/record", "log_entries_bytes_per_record", None),
    ]
    for label, key, requests_key in rows:
        a, b = file_run[key], s3_run[key]
        counts = s3_run.get(requests_key, {}) if requests_key else {}
        print(f"{label:<42} {a:>12,} {b:>12,} {b / a:>8.2f} {json.dumps(counts) if requests_key else '':>30}")
    idle = json.load(open(args.idle))
    print(f"{'idle daemon (orrery all), S3 requests/s':<42} {'':>12} {'':>12} {'':>8} {json.dumps(idle):>30}")
    for name in QUERIES:
        a, b = file_run[name]["best_s"], s3_run[name]["best_s"]
        counts = s3_run[name]["requests"]
        print(f"{name + ', best ms':<42} {a * 1000:>12.1f} {b * 1000:>12.1f} {b / a:>8.2f} "
              f"{str(total(counts)) + ' ' + json.dumps(counts):>30}")
    ok = file_run["ok"] and s3_run["ok"]
    print(f"answers: {'checked, equal to what was sent' if ok else 'WRONG'}")
    print(json.dumps({"bench": "s3", "file": file_run, "s3": s3_run, "idle_s3_requests_per_s": idle, "ok": ok}))
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="mode", required=True)
    m = sub.add_parser("measure")
    m.add_argument("--store", required=True)
    m.add_argument("--http-port", type=int, required=True)
    m.add_argument("--flight-port", type=int, required=True)
    m.add_argument("--server-pid", type=int, default=None)
    m.add_argument("--records", type=int, default=1_000_000)
    m.add_argument("--files", type=int, default=300)
    m.add_argument("--connections", type=int, default=8)
    m.add_argument("--repeats", type=int, default=5)
    m.add_argument("--counts-url")
    m.add_argument("--reset-url")
    m.add_argument("--out", required=True)
    c = sub.add_parser("compare")
    c.add_argument("--file", required=True)
    c.add_argument("--s3", required=True)
    c.add_argument("--idle", required=True, help="S3 requests per second of an idle orrery all, by kind")
    args = parser.parse_args()
    return measure(args) if args.mode == "measure" else compare(args)


if __name__ == "__main__":
    sys.exit(main())
