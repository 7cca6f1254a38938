"""What a parallel Parquet write would gain on log_entries' rows (issue 16): a partition's rows (in time order) as
an Arrow table, copied to zstd Parquet by DuckDB in-process three ways, alternately: through a row_number() window
on two threads (one stream, as the server copied the ordered read until 62a6465), on one thread without it, and on
two threads from the Arrow scan, whose batch indexes let DuckDB prepare row groups on both (PhysicalBatchCopyToFile).

    KEEP_DATA=1 RECORDS=2000000 REPEATS=1 bash bench/materialization/run.sh --server-only   # prints the data folder
    bench/.venv/bin/python bench/materialization/parallel-write.py <data>/orrery/lake/views/log_entries/global/*/*.parquet

Environment: ROUNDS (default 2), BATCH (the Arrow batches' rows, default 2048).
"""

import os
import resource
import sys
import time

import duckdb
import pyarrow as pa


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> int:
    con = duckdb.connect()
    rows = con.sql(f"SELECT * FROM read_parquet('{sys.argv[1]}')").arrow()
    rows = rows.read_all() if hasattr(rows, "read_all") else rows
    rows = pa.Table.from_batches(rows.combine_chunks().to_batches(max_chunksize=int(os.environ.get("BATCH", "2048"))))
    con.register("rows", rows)
    cases = [
        ("window, 2 threads", 2, "SELECT * EXCLUDE (r) FROM (SELECT row_number() OVER () AS r, * FROM rows)"),
        ("plain, 1 thread", 1, "SELECT * FROM rows"),
        ("batch copy, 2 threads", 2, "SELECT * FROM rows"),
    ]
    out = os.path.join(os.path.dirname(os.path.abspath(sys.argv[1])), "parallel-write.parquet")
    for _ in range(int(os.environ.get("ROUNDS", "2"))):
        for name, threads, sql in cases:
            con.execute(f"SET threads = {threads}")
            started, used = time.time(), cpu()
            con.execute(f"COPY ({sql}) TO '{out}' (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 131072)")
            print(f"{name:22s} {time.time() - started:6.2f} s {cpu() - used:6.2f} CPU-s  load {os.getloadavg()[0]:.1f}", flush=True)
    os.remove(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
