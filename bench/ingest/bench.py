"""Bulk ingest into a series table (issue 12, item 8): ADBC adbc_ingest of N rows (timestamp, 2 strings,
3 doubles) into Orrery, against DuckDB's Python package inserting the same Arrow table into a DuckLake
table in-process. Prints rows/s, MB/s (Arrow bytes), the ratio and the server's peak RSS as one JSON line."""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import threading
import time

import adbc_driver_flightsql.dbapi as flight_sql
import duckdb
import pyarrow as pa

from benchlib import git_state, log, machine_state


def make_table(rows: int) -> pa.Table:
    import pyarrow.compute as pc

    index = pa.array(range(rows), pa.int64())
    return pa.table(
        {
            "ts": pc.add(pa.scalar(1_714_557_600_000_000_000, pa.int64()), pc.multiply(index, 1_000_000)).cast(pa.timestamp("ns", "UTC")),
            "host": pc.binary_join_element_wise("host-", pc.cast(pc.bit_wise_and(index, 255), pa.string()), "").cast(pa.string()),
            "region": pc.if_else(pc.equal(pc.bit_wise_and(index, 1), 0), "eu-west", "us-east"),
            "cpu": pc.divide(pc.cast(pc.bit_wise_and(index, 1023), pa.float64()), 1024.0),
            "mem": pc.multiply(pc.cast(index, pa.float64()), 0.5),
            "disk": pc.sqrt(pc.cast(index, pa.float64())),
        }
    )


class RssSampler(threading.Thread):
    """The server's resident set size every 50 ms; `peak` in MiB."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid, self.peak, self.done = pid, 0.0, False

    def run(self) -> None:
        while not self.done:
            try:
                with open(f"/proc/{self.pid}/status") as f:
                    for line in f:
                        if line.startswith("VmRSS:"):
                            self.peak = max(self.peak, int(line.split()[1]) / 1024)
            except OSError:
                return
            time.sleep(0.05)


def orrery_ingest(port: int, key: str, table: pa.Table, batch_rows: int, pid: int) -> dict:
    conn = flight_sql.connect(f"grpc://127.0.0.1:{port}", db_kwargs={"username": "admin", "password": key}, autocommit=True)
    with conn.cursor() as cur:
        cur.execute("DROP TABLE IF EXISTS bench_ingest")
        cur.execute("CREATE TABLE bench_ingest (ts TIMESTAMPTZ, host VARCHAR, region VARCHAR, cpu DOUBLE, mem DOUBLE, disk DOUBLE)")
        sampler = RssSampler(pid)
        sampler.start()
        start = time.perf_counter()
        reader = pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=batch_rows))
        written = cur.adbc_ingest("bench_ingest", reader, mode="append")
        seconds = time.perf_counter() - start
        sampler.done = True
        sampler.join()
        cur.execute("SELECT count(*) FROM bench_ingest")
        (stored,) = cur.fetchone()
    conn.close()
    assert written == table.num_rows == stored, (written, stored)
    return {"seconds": round(seconds, 3), "peak_rss_mib": round(sampler.peak, 1)}


def duckdb_ingest(table: pa.Table, extension_dir: str) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        con = duckdb.connect()
        con.execute(f"LOAD '{os.path.join(extension_dir, 'ducklake.duckdb_extension')}'")
        con.execute(f"ATTACH 'ducklake:{folder}/catalog.ducklake' AS lake (DATA_PATH '{folder}/data/')")
        con.execute("CREATE TABLE lake.bench_ingest (ts TIMESTAMPTZ, host VARCHAR, region VARCHAR, cpu DOUBLE, mem DOUBLE, disk DOUBLE, audience VARCHAR)")
        arrow_table = table.append_column("audience", pa.array(["public"] * table.num_rows, pa.string()))
        start = time.perf_counter()
        con.execute("INSERT INTO lake.bench_ingest SELECT * FROM arrow_table")
        seconds = time.perf_counter() - start
        (stored,) = con.execute("SELECT count(*) FROM lake.bench_ingest").fetchone()
        con.close()
    assert stored == table.num_rows
    return {"seconds": round(seconds, 3)}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--flight-port", type=int, required=True)
    p.add_argument("--server-pid", type=int, required=True)
    p.add_argument("--key", default="admin-key-0123")
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--batch-rows", type=int, default=65_536)
    p.add_argument("--extension-dir", required=True)
    args = p.parse_args()

    table = make_table(args.rows)
    mb = table.nbytes / 1e6
    log(f"bench: {args.rows:,} rows, {mb:,.0f} MB of Arrow data, batches of {args.batch_rows:,}")
    orrery = orrery_ingest(args.flight_port, args.key, table, args.batch_rows, args.server_pid)
    log(f"orrery adbc_ingest: {orrery['seconds']} s, {args.rows / orrery['seconds']:,.0f} rows/s, {mb / orrery['seconds']:,.1f} MB/s, peak server RSS {orrery['peak_rss_mib']} MiB")
    local = duckdb_ingest(table, args.extension_dir)
    log(f"duckdb in-process INSERT into DuckLake: {local['seconds']} s, {args.rows / local['seconds']:,.0f} rows/s")
    ratio = local["seconds"] / orrery["seconds"]
    log(f"ratio (orrery / duckdb in-process throughput): {ratio:.2f} (goal >= 0.8); peak RSS goal < 512 MiB")
    print(json.dumps({
        "bench": "ingest", "rows": args.rows, "arrow_mb": round(mb, 1), "batch_rows": args.batch_rows,
        "orrery_s": orrery["seconds"], "orrery_rows_per_s": round(args.rows / orrery["seconds"]), "orrery_mb_per_s": round(mb / orrery["seconds"], 1),
        "duckdb_s": local["seconds"], "ratio": round(ratio, 3), "server_peak_rss_mib": orrery["peak_rss_mib"],
        **git_state(), **machine_state(),
    }))


if __name__ == "__main__":
    main()
