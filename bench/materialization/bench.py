"""Materialization throughput: log_entries partitions written by Orrery against DuckDB in-process
writing the same extract with COPY.

1. Ingests --records log records into `orrery serve` (loadgen.mjs, batches of 1 000).
2. Materializes `blocks` over the ingestion's insert range (for the check and for the block metadata
   the in-process side joins), then times materialize_partitions('log_entries', begin, end, width)
   over the whole range, one partition, end to end through Flight SQL (Postgres look-up of the blocks,
   DuckDB's read_json + join + sort + COPY TO Parquet/zstd, statistics, registration); --repeats - 1
   more runs use regenerate_partitions (same work, forced).
3. In-process: the Python duckdb package (same release as the server's) runs the same statement on
   the same payload files (<data>/lake/blobs/**.jsonl): the view's extract query taken from the built
   server (view-sql.mjs), wrapped in the same casts, COPY ... (FORMAT parquet, COMPRESSION zstd,
   ROW_GROUP_SIZE 131072), with threads=1 (what the server's maintenance engine uses) and threads=2
   (the machine); plus a plain read_json -> COPY with no join and no sort, for reference.
4. Checks: blocks sum(nb_objects) = records sent, and the server's partition and the in-process file
   hold the same rows (count, sum(level), min/max(time), sum(hash(msg)), distinct blocks).

ratio = server rows/s / in-process rows/s (best runs); goal >= 0.8 against threads=2.

Run through run.sh, which starts the server.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

import duckdb

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchlib import ROOT, CpuMeter, Orrery, git_state, ingest, insert_range, log, machine_state, peak_rss, reset_peak_rss  # noqa: E402

COPY_OPTIONS = "(FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 131072)"


def metadata_url(data_dir: str) -> str:
    """The embedded Postgres of the server started on data_dir: its port from the server's log, its password from the cluster."""
    with open(os.path.join(data_dir, "server.log"), encoding="utf8") as f:
        found = re.search(r"embedded Postgres ready on 127\.0\.0\.1:(\d+) \(cluster (.+?), \d+ ms\)", f.read())
    if not found:
        raise SystemExit("the server's log does not say where its embedded Postgres listens")
    with open(os.path.join(found.group(2), "orrery-password"), encoding="utf8") as f:
        password = urllib.parse.quote(f.read().strip(), safe="")
    return f"postgres://postgres:{password}@127.0.0.1:{found.group(1)}/orrery"
FINGERPRINT = ("count(*)::BIGINT AS n, sum(level)::BIGINT AS levels, epoch_ns(min(time)) AS tmin, epoch_ns(max(time)) AS tmax, "
               "sum(hash(msg) % 1000003)::BIGINT AS msgs, count(DISTINCT block_id)::BIGINT AS blocks")


class RssTrace:
    """Samples a process's RSS every 20 ms on a thread of its own, until stop() writes the samples to `path`."""

    def __init__(self, pid: int, path: str) -> None:
        self.pid, self.path, self.rows, self.done = pid, path, [], threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        start = time.perf_counter()
        ticks = os.sysconf("SC_CLK_TCK")
        while not self.done.is_set():
            status = open(f"/proc/{self.pid}/status").read()
            mib = [int(re.search(rf"^{k}:\s+(\d+)", status, re.M).group(1)) // 1024 for k in ("VmRSS", "RssAnon", "RssFile")]
            fields = open(f"/proc/{self.pid}/stat").read().rsplit(")", 1)[1].split()
            self.rows.append((time.perf_counter() - start, *mib, (int(fields[11]) + int(fields[12])) / ticks))
            time.sleep(0.02)

    def stop(self) -> None:
        self.done.set()
        self.thread.join()
        with open(self.path, "w") as out:
            out.writelines(f"{t:.3f} {rss} {anon} {file} {cpu:.2f}\n" for t, rss, anon, file, cpu in self.rows)


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def quote_lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def typed(columns: list[dict], sql: str) -> str:
    """The materializer's cast wrapper (src/maintenance/materializer.ts): the set's columns, in order, with its types."""
    casts = ", ".join(f"CAST({quote_ident(c['name'])} AS {c['type']}) AS {quote_ident(c['name'])}" for c in columns)
    return f"SELECT {casts} FROM ({sql})"


def load_blocks(con: duckdb.DuckDBPyConnection, blocks, lake: str) -> None:
    """The server's __blocks (block metadata and each payload's NDJSON path) in `con`, from the blocks view set's rows."""
    con.register("blocks_arrow", blocks)
    con.execute(f"""CREATE TEMP TABLE __blocks AS
        SELECT block_id, stream_id, process_id, insert_time::TIMESTAMP_NS AS insert_time, exe, username, computer,
               process_properties::JSON AS process_properties, audience,
               {quote_lit(lake + '/blobs/')} || process_id || '/' || stream_id || '/' || block_id || '.jsonl' AS path
          FROM blocks_arrow""")


def timed_copies(con: duckdb.DuckDBPyConnection, sql: str, out: str, label: str, repeats: int, records: int) -> list[tuple[float, dict]]:
    """Runs COPY (sql) TO out `repeats` times: each run's seconds and process CPU-seconds; checks the rows written."""
    runs = []
    for _ in range(repeats):
        if os.path.exists(out):
            os.remove(out)
        cpu0 = time.process_time()
        start = time.perf_counter()
        rows = con.execute(f"COPY ({sql}) TO {quote_lit(out)} {COPY_OPTIONS}").fetchone()[0]
        seconds = time.perf_counter() - start
        runs.append((seconds, {"cpu_s": time.process_time() - cpu0}))
        if rows != records:
            raise SystemExit(f"{label}: COPY wrote {rows:,} rows, expected {records:,}")
        log(f"  {label}: {seconds:.2f} s  {rows / seconds / 1000:.0f} k rows/s")
    return runs


def summarize(name: str, runs: list[tuple[float, dict]], rows: int) -> dict:
    times = [t for t, _ in runs]
    best = min(times)
    out = {"name": name, "rows": rows, "runs_s": [round(t, 3) for t in times], "best_s": round(best, 3),
           "median_s": round(statistics.median(times), 3), "best_rows_per_s": round(rows / best)}
    cpus = [c for _, c in runs if c]
    if cpus:
        out.update({k: round(statistics.median(c[k] for c in cpus), 2) for k in cpus[0]})
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--http-port", type=int, required=True)
    parser.add_argument("--flight-port", type=int, required=True)
    parser.add_argument("--server-pid", type=int, default=None)
    parser.add_argument("--data-dir", required=True, help="the server's ORRERY_DATA_DIR")
    parser.add_argument("--root", default=os.environ.get("ORRERY_ROOT", ROOT), help="the tree whose dist/ the server runs")
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", default="1,2", help="in-process DuckDB thread counts")
    parser.add_argument("--target", type=float, default=0.8)
    parser.add_argument("--rss-trace", default=os.environ.get("RSS_TRACE") or None,
                        help="a folder: the server's RSS (anonymous, file-backed) every 20 ms of each materialization, "
                             "to rss-<run>.txt there (seconds, RSS, RssAnon, RssFile in MiB, the process's CPU-s)")
    parser.add_argument("--perf", default=None,
                        help="a folder: each server materialization is recorded by `perf record -g` there (perf-<run>.data)")
    parser.add_argument("--gzip", action="store_true",
                        help="the load generator gzips each body (Content-Encoding: gzip, as OTel exporters do by default): "
                             "the server keeps such a body as it came")
    parser.add_argument("--server-only", action="store_true",
                        help="no in-process DuckDB runs: only the server's (the check is then its row count and blocks)")
    args = parser.parse_args()

    load_at_start = machine_state()["loadavg_1m"]
    lake = os.path.join(args.data_dir, "lake")
    view = json.loads(subprocess.run(["node", os.path.join(ROOT, "bench", "materialization", "view-sql.mjs"), args.root, "log_entries"],
                                     stdout=subprocess.PIPE, text=True, check=True).stdout)
    run = ingest(args.http_port, args.records, args.connections, args.server_pid, args.gzip)
    # Peak resident memory of the server's Node process (VmHWM) while ingesting, then over each materialization
    # alone (the peak is reset before each; MiB).
    rss: dict[str, object] = {}
    if args.server_pid:
        rss["ingest_mib"] = round(peak_rss(args.server_pid)["node_peak_rss_bytes"] / 2**20)
        rss["reset"] = reset_peak_rss(args.server_pid)
        rss["materialize_mib"] = []
    begin, end = insert_range([run])
    orrery = Orrery(args.flight_port)
    results: dict[str, dict] = {}
    checks: dict[str, object] = {}
    tmp = tempfile.mkdtemp(prefix="orrery-bench-mat-")
    try:
        _, blocks_s = orrery.materialize("blocks", begin, end)
        blocks = orrery.query("SELECT block_id, stream_id, process_id, insert_time, exe, username, computer, process_properties, audience, "
                              "nb_objects FROM blocks ORDER BY insert_time, block_id")
        checks["blocks_sum_nb_objects"] = sum(blocks.column("nb_objects").to_pylist())
        log(f"blocks: {blocks.num_rows:,} blocks, {checks['blocks_sum_nb_objects']:,} records (materialized in {blocks_s:.2f} s)")
        if checks["blocks_sum_nb_objects"] != args.records:
            raise SystemExit(f"blocks hold {checks['blocks_sum_nb_objects']:,} records, {args.records:,} were sent")

        # Orrery: materialize_partitions, then regenerate_partitions for the repeats.
        width = int((end - begin).total_seconds())
        server_runs = []
        for i in range(args.repeats):
            fn = "materialize_partitions" if i == 0 else "regenerate_partitions"
            recorder = None
            if args.perf and args.server_pid:
                with open(os.path.join(args.perf, f"perf-{i}.log"), "w") as perf_log:
                    # PERF_CALL_GRAPH=dwarf: stacks through DuckDB's frames (built without frame pointers), at 99 Hz.
                    graph = ["-F", "99", "--call-graph", "dwarf,32768"] if os.environ.get("PERF_CALL_GRAPH") == "dwarf" else ["-F", "499", "-g"]
                    recorder = subprocess.Popen(["perf", "record", *graph, "-p", str(args.server_pid),
                                                 "-o", os.path.join(args.perf, f"perf-{i}.data")],
                                                stdout=perf_log, stderr=subprocess.STDOUT)
                time.sleep(0.5)  # perf attached before the statement starts
            cpu = CpuMeter(args.server_pid)
            tracer = RssTrace(args.server_pid, os.path.join(args.rss_trace, f"rss-{i}.txt")) if args.rss_trace else None
            messages, seconds = orrery.procedure(
                f"SELECT * FROM {fn}('log_entries', '{begin:%Y-%m-%dT%H:%M:%SZ}', '{end:%Y-%m-%dT%H:%M:%SZ}', {width})")
            if tracer:
                tracer.stop()
            if recorder:
                recorder.send_signal(2)
                recorder.wait()
            if not messages or not messages[-1].endswith(": created"):
                raise SystemExit(f"{fn}('log_entries') did not create a partition: {messages}")
            server_runs.append((seconds, cpu.read()))
            peak = ""
            if args.server_pid:
                rss["materialize_mib"].append(round(peak_rss(args.server_pid)["node_peak_rss_bytes"] / 2**20))
                reset_peak_rss(args.server_pid)
                peak = f", peak RSS {rss['materialize_mib'][-1]:,} MiB"
            log(f"  orrery {fn}: {seconds:.2f} s  {args.records / seconds / 1000:.0f} k rows/s{peak}")
        results["orrery"] = summarize("orrery materialize_partitions", server_runs, args.records)
        server_fp = orrery.query(f"SELECT {FINGERPRINT} FROM log_entries").to_pylist()[0]
        parts = orrery.query("SELECT * FROM list_partitions() WHERE view_set_name = 'log_entries'")
        checks["partitions"] = parts.num_rows

        if not args.server_only:
            # In-process: the same statement on the same records. Payloads stored as received (protobuf) are
            # first rewritten as the NDJSON lines the server decodes them to; that decode is timed apart.
            decoded = json.loads(subprocess.run(
                ["node", os.path.join(os.path.dirname(os.path.abspath(__file__)), "decode-payloads.mjs"), lake],
                check=True, capture_output=True, text=True,
                env={**os.environ, "ORRERY_METADATA_URL": metadata_url(args.data_dir)}).stdout.strip().splitlines()[-1])
            checks["payload_decode"] = decoded
            if decoded["rewritten"]:
                log(f"  payload decode (node, payloadLines): {decoded['rewritten']} payloads, {decoded['records']:,} records"
                    f" in {decoded['decode_s']:.2f} s ({decoded['records'] / max(decoded['decode_s'], 1e-9) / 1000:.0f} k rows/s)")
            con = duckdb.connect()
            load_blocks(con, blocks, lake)
            paths = [r[0] for r in con.execute("SELECT path FROM __blocks").fetchall()]
            missing = [p for p in paths if not os.path.exists(p)]
            if missing:
                raise SystemExit(f"{len(missing)} payload files missing, e.g. {missing[0]}")
            payloads = "[" + ", ".join(quote_lit(p) for p in paths) + "]"
            extract = typed(view["columns"], view["extract"].replace("{payloads}", payloads))
            log_cols = "{time: 'BIGINT', target: 'VARCHAR', level: 'INTEGER', msg: 'VARCHAR', properties: 'JSON', trace_id: 'VARCHAR', span_id: 'VARCHAR'}"
            plain = f"SELECT * FROM read_json({payloads}, format = 'newline_delimited', columns = {log_cols})"
            out = os.path.join(tmp, "inprocess.parquet")
            for threads in [int(t) for t in args.threads.split(",") if t.strip()]:
                con.execute(f"SET threads={threads}")
                for label, sql in ((f"duckdb same extract t={threads}", extract), (f"duckdb plain read_json t={threads}", plain)):
                    runs = timed_copies(con, sql, out, label, args.repeats, args.records)
                    key = label.replace("duckdb ", "").replace(" ", "_")
                    results[key] = summarize(label, runs, args.records)
                    results[key]["parquet_mb"] = round(os.path.getsize(out) / 1e6, 1)
                    if sql is extract:
                        checks["inprocess_fp"] = con.execute(f"SELECT {FINGERPRINT} FROM read_parquet({quote_lit(out)})").fetchone()
            # The server's engine settings (src/engine/duckdb-engine.ts DuckDBEngine.create): a sandbox with the
            # lake as the only readable folder, one thread as the maintenance engine has; output in the lake.
            sandboxed = duckdb.connect(config={"threads": 1})
            sandboxed.execute("ATTACH ':memory:' AS orrery")
            sandboxed.execute("SET GLOBAL TimeZone = 'UTC'")
            sandboxed.execute("USE orrery")
            load_blocks(sandboxed, blocks, lake)
            sandboxed.execute(f"SET allowed_directories = [{quote_lit(lake)}]")
            sandboxed.execute("SET enable_external_access = false")
            sandboxed.execute("SET lock_configuration = true")
            out_lake = os.path.join(lake, "bench-inprocess.parquet")
            runs = timed_copies(sandboxed, extract, out_lake, "duckdb same extract, server settings t=1", args.repeats, args.records)
            results["same_extract_server_settings_t=1"] = summarize("duckdb same, server settings t=1", runs, args.records)
            results["same_extract_server_settings_t=1"]["parquet_mb"] = round(os.path.getsize(out_lake) / 1e6, 1)
            os.remove(out_lake)
            sandboxed.close()
            con.close()
        newest = max(glob.glob(os.path.join(lake, "views", "log_entries", "**", "*.parquet"), recursive=True), key=os.path.getmtime)
        results["orrery"]["parquet_mb"] = round(os.path.getsize(newest) / 1e6, 1)
    finally:
        orrery.close()
        for f in glob.glob(os.path.join(tmp, "*")):
            os.remove(f)
        os.rmdir(tmp)

    server_tuple = tuple(server_fp[k] for k in ("n", "levels", "tmin", "tmax", "msgs", "blocks"))
    inproc_tuple = tuple(checks.pop("inprocess_fp", server_tuple))
    ok = server_tuple == inproc_tuple and server_tuple[0] == args.records and server_tuple[5] == blocks.num_rows
    checks.update({"server_fingerprint": list(server_tuple), "inprocess_fingerprint": list(inproc_tuple), "ok": ok})

    o = results["orrery"]
    print()
    print(f"Orrery materialization of log_entries: {args.records:,} log records in {blocks.num_rows:,} blocks, one partition, "
          f"{args.repeats} runs each (best / median), {os.cpu_count()} CPUs")
    header = f"{'measurement':<32} {'best s':>7} {'median s':>9} {'k rows/s':>9} {'parquet MB':>10} {'cpu s':>7}"
    print(header)
    print("-" * len(header))
    for key, r in results.items():
        cpu = r.get("server_node_cpu_s", r.get("cpu_s", 0))
        print(f"{r['name']:<32} {r['best_s']:>7.2f} {r['median_s']:>9.2f} {r['best_rows_per_s'] / 1000:>9.0f} {r.get('parquet_mb', 0):>10.1f} {cpu:>7.2f}")
    print()
    ratios = {}
    for key, r in results.items():
        if key.startswith("same_extract"):
            ratios[key] = round(o["best_rows_per_s"] / r["best_rows_per_s"], 3)
            t = key.rsplit("=", 1)[1]
            goal = f"   goal >= {args.target}" if key == "same_extract_t=2" else ""
            what = "same extract, the server's sandbox settings" if "server_settings" in key else "same extract"
            print(f"ratio orrery / in-process DuckDB ({what}, threads={t}): {ratios[key]:.2f}{goal}")
    print(f"check: blocks sum(nb_objects) {checks['blocks_sum_nb_objects']:,} = sent {args.records:,}; server partition and in-process file "
          f"fingerprints (rows, sum(level), min/max(time), sum(hash(msg)), blocks) {'equal' if ok else 'DIFFER'}: {list(server_tuple)}"
          f"{'' if ok else ' vs ' + str(list(inproc_tuple))}")
    if rss:
        print(f"peak RSS of the server's Node process: {rss['ingest_mib']:,} MiB while ingesting, "
              f"{', '.join(f'{m:,}' for m in rss['materialize_mib'])} MiB over each materialization"
              f"{'' if rss['reset'] else ' (the peak could not be reset: each figure includes the ingestion)'} (goal < 1024)")
    if load_at_start > 0.7:
        print(f"warning: 1-minute load average was {load_at_start} at start: other work on the machine may have skewed the figures")
    figures = {
        "bench": "materialization",
        "records": args.records,
        "gzip": args.gzip,
        "blocks": blocks.num_rows,
        "repeats": args.repeats,
        "ingest_records_per_s": run["records_per_s"],
        "materialize_blocks_s": round(blocks_s, 3),
        "results": results,
        "ratios": ratios,
        "target": args.target,
        "met": ratios.get("same_extract_t=2", 0) >= args.target,
        "checks": checks,
        "peak_rss": rss,
        "loadavg_1m_at_start": load_at_start,
        **machine_state(),
        "duckdb": duckdb.__version__,
        **git_state(),
    }
    print(json.dumps(figures, separators=(",", ":"), default=str))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
