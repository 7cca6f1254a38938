"""What a view set's definition costs a statement in DuckDB alone (issue 10, log_stats_day): the same statement
in-process over the bench's plain view (read_parquet of the partition files, as bench.py's in-process side reads
them) and over the temporary view the server made for the key (its audience filter and the set's merge query),
alternately, on one DuckDB connection each. The server's view comes from a duckdb-calls.mjs file of a run.sh
server (KEEP_DATA=1 keeps the partition files it names):

    NODE_OPTIONS="--import $PWD/bench/latency/duckdb-calls.mjs" DUCKDB_CALLS_OUT=/tmp/calls KEEP_DATA=1 \\
      ONLY=log_stats_day OTHER_CLIENTS="" bash bench/latency/run.sh
    bench/.venv/bin/python bench/latency/view-cost.py /tmp/calls.*.tsv [--view log_stats] [--repeats 400]

Prints each side's p50, their ratio and the load average.
"""

from __future__ import annotations

import argparse
import re
import statistics
import time

import duckdb

LOG_STATS_DAY = (
    "SELECT time_bucket(INTERVAL 1 MINUTE, time_bin) AS minute, sum(count) AS n FROM log_stats "
    "WHERE time_bin >= (now() - INTERVAL 1 DAY)::TIMESTAMP_NS GROUP BY 1 ORDER BY 1"
)


def server_view(files: list[str], name: str) -> str:
    """The last CREATE OR REPLACE TEMP VIEW of `name` the server ran."""
    found = None
    for path in files:
        with open(path, encoding="utf-8") as f:
            for line in f:
                sql = line.rstrip("\n").split("\t", 2)[2]
                if sql.startswith(f'CREATE OR REPLACE TEMP VIEW "{name}" AS '):
                    found = sql
    if not found:
        raise SystemExit(f"no temporary view {name} in {files}")
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("calls", nargs="+", help="duckdb-calls.mjs files of the server")
    parser.add_argument("--view", default="log_stats")
    parser.add_argument("--sql", default=LOG_STATS_DAY)
    parser.add_argument("--repeats", type=int, default=400)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    view = server_view(args.calls, args.view)
    lists = re.findall(r"read_parquet\(\[(.*?)\]\)", view)
    if len(lists) != 1:
        raise SystemExit(f"expected one file list in the view, found {len(lists)}")
    sides = {}
    for side, definition in (
        ("plain view (bench.py's in-process side)", f"CREATE VIEW {args.view} AS SELECT * FROM read_parquet([{lists[0]}])"),
        ("the server's view for the key", view.replace("CREATE OR REPLACE TEMP VIEW", "CREATE VIEW", 1)),
    ):
        con = duckdb.connect(config={"threads": args.threads})
        con.execute(definition)
        sides[side] = (con, [])
    answers = {side: con.execute(args.sql).fetchall() for side, (con, _) in sides.items()}
    load = open("/proc/loadavg").read().split()[:3]
    for i in range(args.repeats + 50):
        for con, times in sides.values():
            start = time.perf_counter()
            con.execute(args.sql).to_arrow_table()
            if i >= 50:
                times.append((time.perf_counter() - start) * 1000)
    p50 = {side: statistics.median(times) for side, (_, times) in sides.items()}
    for side, value in p50.items():
        print(f"{side:42} p50 {value:7.3f} ms")
    first, second = p50.values()
    rows = sides[next(iter(sides))][0].execute(f"SELECT count(*) FROM read_parquet([{lists[0]}])").fetchone()[0]
    print(f"ratio {second / first:.2f}; {rows} rows in {lists[0].count(',') + 1} file(s); same answer: "
          f"{len(set(map(repr, answers.values()))) == 1}; load {' '.join(load)} -> {' '.join(open('/proc/loadavg').read().split()[:3])}")


if __name__ == "__main__":
    main()
