"""bench/s3 partitions: a query over --partitions view-set partitions of log_entries on an s3:// lake (a
real S3-compatible server behind the counting proxy) and on a file:// lake, side by side, with the S3
requests each query makes. partitions.sh starts one `orrery serve` per store, both at once, and calls this.

1. For --partitions seconds, once a second, the same --records-per-second log records go to both servers
   (OTLP/JSON): insert times a second apart, so materialize_partitions(..., 1) makes one partition per second.
2. Each server materializes log_entries by the second: rows/s, and on S3 the requests it took.
3. Each query runs once cold (the S3 requests counted: a first read of every file), then --repeats times
   hot, alternating file://, s3://, file://, s3:// (both under the same load); best and median, the ratio,
   and the requests of one more hot run on S3.
4. The answers are checked: equal on both stores and to what was sent.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchlib import Orrery, log, machine_state, rfc3339  # noqa: E402

KEY = "admin-key-0123"
LEVELS = [9, 13, 17, 21]  # OTLP severities: info, warn, error, fatal
QUERIES = {
    "Q1 level counts": "SELECT level, count(*) AS n FROM log_entries GROUP BY level ORDER BY level",
    "Q2 msg bytes": "SELECT count(*) AS n, sum(length(msg)) AS bytes FROM log_entries",
    "Q3 one second's rows": "SELECT count(*) AS n FROM log_entries WHERE msg LIKE 'second {middle} %'",
}


def body(second: int, records: int) -> bytes:
    now = time.time_ns()
    logs = [
        {
            "timeUnixNano": str(now + i),
            "severityNumber": LEVELS[i % len(LEVELS)],
            "body": {"stringValue": f"second {second} record {i} " + "x" * (i % 50)},
        }
        for i in range(records)
    ]
    resource = {"attributes": [{"key": "service.name", "value": {"stringValue": "bench-partitions"}}]}
    return json.dumps({"resourceLogs": [{"resource": resource, "scopeLogs": [{"logRecords": logs}]}]}).encode()


def post(port: int, payload: bytes) -> None:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/logs",
        data=payload,
        method="POST",
        headers={"content-type": "application/json", "authorization": f"Bearer {KEY}"},
    )
    with urllib.request.urlopen(request) as answer:
        if answer.status != 200:
            raise SystemExit(f"OTLP POST answered {answer.status}")


def requests(url: str, reset: bool = False) -> dict:
    with urllib.request.urlopen(urllib.request.Request(url, method="POST" if reset else "GET")) as answer:
        return json.loads(answer.read())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--file-http", type=int, required=True)
    parser.add_argument("--file-flight", type=int, required=True)
    parser.add_argument("--s3-http", type=int, required=True)
    parser.add_argument("--s3-flight", type=int, required=True)
    parser.add_argument("--counts-url", required=True)
    parser.add_argument("--reset-url", required=True)
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--records-per-second", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    loads = [os.getloadavg()[0]]
    begin = dt.datetime.fromtimestamp(int(time.time()) - 1, dt.timezone.utc)
    log(f"partitions: {args.partitions} seconds of {args.records_per_second} records to both servers")
    for second in range(args.partitions):
        payload = body(second, args.records_per_second)
        post(args.file_http, payload)
        post(args.s3_http, payload)
        if second % 100 == 0:
            log(f"partitions: second {second}")
        time.sleep(1 - time.time() % 1 + 0.05)  # into the next second: one insert second per batch
    end = dt.datetime.fromtimestamp(int(time.time()) + 2, dt.timezone.utc)
    loads.append(os.getloadavg()[0])

    stores = {"file": Orrery(args.file_flight), "s3": Orrery(args.s3_flight)}
    figures: dict = {"partitions_asked": args.partitions, "records": args.partitions * args.records_per_second}
    try:
        for name, orrery in stores.items():
            if name == "s3":
                requests(args.reset_url, reset=True)
            width = int((end - begin).total_seconds())
            _, seconds = orrery.procedure(
                f"SELECT * FROM materialize_partitions('log_entries', '{rfc3339(begin)}', '{rfc3339(end)}', 1)"
            )
            files = orrery.query(
                "SELECT count(*) AS n FROM list_partitions() WHERE view_set_name = 'log_entries' AND file_path IS NOT NULL"
            ).to_pylist()[0]["n"]
            figures[name] = {
                "materialize_s": round(seconds, 1),
                "materialize_rows_per_s": round(figures["records"] / seconds),
                "seconds_materialized": width,
                "partition_files": files,
            }
            if name == "s3":
                figures[name]["materialize_requests"] = requests(args.counts_url)
            log(f"partitions: {name}: {files} partition files materialized in {seconds:.1f} s")
        loads.append(os.getloadavg()[0])

        answers: dict = {name: {} for name in stores}
        for label, text in QUERIES.items():
            sql = text.format(middle=args.partitions // 2)
            requests(args.reset_url, reset=True)
            cold = {}
            for name, orrery in stores.items():
                table, seconds = orrery.timed_query(sql)
                cold[name] = seconds
                answers[name][label] = table.to_pylist()
            cold_requests = requests(args.counts_url)
            times: dict = {name: [] for name in stores}
            for _ in range(args.repeats):
                for name, orrery in stores.items():
                    times[name].append(orrery.timed_query(sql)[1])
            requests(args.reset_url, reset=True)
            stores["s3"].query(sql)
            hot_requests = requests(args.counts_url)
            figures[label] = {
                name: {"cold_s": round(cold[name], 4), "best_s": round(min(t), 4), "median_s": round(statistics.median(t), 4)}
                for name, t in times.items()
            }
            figures[label]["s3_requests_cold"] = cold_requests
            figures[label]["s3_requests_hot"] = hot_requests
            log(f"partitions: {label}: file {min(times['file']) * 1000:.1f} ms, s3 {min(times['s3']) * 1000:.1f} ms")
        loads.append(os.getloadavg()[0])
    finally:
        for orrery in stores.values():
            orrery.close()

    sent = args.partitions * args.records_per_second
    q1 = answers["file"]["Q1 level counts"]
    figures["ok"] = (
        answers["file"] == answers["s3"]
        and sum(row["n"] for row in q1) == sent
        and answers["file"]["Q2 msg bytes"][0]["n"] == sent
        and answers["file"]["Q3 one second's rows"][0]["n"] == args.records_per_second
        and len(q1) == len(LEVELS)
    )
    if not figures["ok"]:
        log(f"partitions: WRONG ANSWER: file {answers['file']}; s3 {answers['s3']}; sent {sent}")
    figures["loadavg_1m"] = [round(load, 1) for load in loads]
    figures["machine"] = machine_state()

    print()
    print(
        f"bench/s3 partitions: {sent:,} log records in {figures['file']['partition_files']} (file://) and "
        f"{figures['s3']['partition_files']} (s3://) partition files of log_entries; versitygw on loopback; "
        f"{os.cpu_count()} CPUs; load average {', '.join(str(x) for x in figures['loadavg_1m'])}"
    )
    print(f"{'figure':<40} {'file://':>10} {'s3://':>10} {'s3/file':>8}  S3 requests")
    m_file, m_s3 = figures["file"]["materialize_rows_per_s"], figures["s3"]["materialize_rows_per_s"]
    print(
        f"{'materialize by the second, rows/s':<40} {m_file:>10,} {m_s3:>10,} {m_s3 / m_file:>8.2f}  "
        f"{json.dumps(figures['s3']['materialize_requests'])}"
    )
    for label in QUERIES:
        f, s = figures[label]["file"], figures[label]["s3"]
        print(
            f"{label + ', cold ms':<40} {f['cold_s'] * 1000:>10.1f} {s['cold_s'] * 1000:>10.1f} "
            f"{s['cold_s'] / f['cold_s']:>8.2f}  {json.dumps(figures[label]['s3_requests_cold'])}"
        )
        print(
            f"{label + ', hot best (median) ms':<40} {f['best_s'] * 1000:>10.1f} {s['best_s'] * 1000:>10.1f} "
            f"{s['best_s'] / f['best_s']:>8.2f}  {json.dumps(figures[label]['s3_requests_hot'])} "
            f"(medians {f['median_s'] * 1000:.1f} / {s['median_s'] * 1000:.1f})"
        )
    print(f"answers: {'checked, equal on both stores and to what was sent' if figures['ok'] else 'WRONG'}")
    print(json.dumps({"bench": "s3-partitions", **figures}))
    return 0 if figures["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
