"""Flight SQL throughput: a large result streamed from Orrery to a pyarrow client,
against DuckDB's own Python package producing the same Arrow data in-process.

Two cases:
  computed  a result DuckDB computes from range(N): BIGINT, DOUBLE, TIMESTAMP_NS, short VARCHAR
  stored    SELECT * FROM an in-memory table holding the same N rows (created on the server by
            the admin key through ADBC; in-process from a Parquet file written here)

Each measurement runs --repeats times (after --warmup untimed runs); the table shows best and
median, the last line of output is one JSON object with every figure.

Flight path: pyarrow.flight DoGet with the SQL text as the ticket, batches read with
read_chunk() and dropped (rows, sum(i) and batch.nbytes counted). The computed case also runs
through what users run: ADBC's DB-API (adbc-driver-flightsql) reading record batches, and the Arrow
Flight SQL JDBC driver (java/ThroughputClient.java, one JVM, warmed up) reading every row with the
typed getters, when --jdbc-classpath is given; each also against the same client on DuckDB's own
driver in-process (adbc_driver_duckdb; DuckDB's JDBC driver with --duckdb-jdbc, whose runs alternate with
a second round of the JDBC reader's: "computed JDBC (own ref)"). In-process path: the same SQL
on a duckdb connection with SET threads=2, read the same way from fetch_record_batch().
ratio = in-process time / Flight time (1.0 = Flight costs nothing over in-process).

Every client's runs (raw DoGet, ADBC, the three Java readers; and the stored scan's DoGet) alternate
run by run with runs of the in-process stream, the order swapped each round: the lines "alternated: ..."
give the ratio of each pair of runs taken next to each other, which a shared machine's drifting load
skews far less than a ratio of two blocks of runs minutes apart (those are printed after, as before).
The Java readers run in one JVM per reader, each run started on request (java/*.java with `-` for
repeats), so their JIT stays warm across the alternation; their client CPU is the JVM's, per run.

Run through run.sh, which starts the server; by hand:
  bench/.venv/bin/python bench/flight-throughput/bench.py --port 50051 --rows 1000000
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.flight as flight

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchlib import git_state  # noqa: E402

# `range * 0.5` would be DECIMAL(21,1) in DuckDB and `TIMESTAMP_NS + INTERVAL` is a microsecond
# TIMESTAMP: cast so the columns are the DOUBLE and nanosecond timestamp intended.
COMPUTED_SQL = (
    "SELECT range AS i, range::DOUBLE * 0.5 AS d, "
    "(TIMESTAMP_NS '2024-01-01' + to_microseconds(range))::TIMESTAMP_NS AS ts, "
    "'str' || (range % 1000) AS s FROM range({n})"
)
STORED_SQL = "SELECT * FROM bench"
LOAD_AT_START = round(os.getloadavg()[0], 2)


@dataclass
class Run:
    seconds: float
    rows: int
    bytes: int
    batches: int
    client_cpu: float
    server_cpu: float | None


@dataclass
class Measurement:
    name: str
    runs: list[Run] = field(default_factory=list)

    def best(self) -> Run:
        return min(self.runs, key=lambda r: r.seconds)

    def median_seconds(self) -> float:
        return statistics.median(r.seconds for r in self.runs)

    def summary(self) -> dict:
        best = self.best()
        med = self.median_seconds()
        out = {
            "rows": best.rows,
            "bytes": best.bytes,
            "batches": best.batches,
            "best_s": round(best.seconds, 4),
            "median_s": round(med, 4),
            "runs_s": [round(r.seconds, 4) for r in self.runs],
            "best_rows_per_s": round(best.rows / best.seconds),
            "median_rows_per_s": round(best.rows / med),
            "best_mb_per_s": round(best.bytes / best.seconds / 1e6, 1),
            "median_mb_per_s": round(best.bytes / med / 1e6, 1),
            "client_cpu_s": round(statistics.median(r.client_cpu for r in self.runs), 3),
        }
        if best.server_cpu is not None:
            out["server_cpu_s"] = round(statistics.median(r.server_cpu for r in self.runs if r.server_cpu is not None), 3)
        return out


class ServerCpu:
    """CPU seconds (user + system, all threads) used so far by the server process and its live
    descendants (the embedded Postgres), from /proc."""

    def __init__(self, pid: int | None):
        self.pid = pid
        self.tick = os.sysconf("SC_CLK_TCK")

    def read(self) -> float | None:
        if not self.pid:
            return None
        stats: dict[int, tuple[int, int]] = {}
        for name in os.listdir("/proc"):
            if name.isdigit():
                try:
                    with open(f"/proc/{name}/stat") as f:
                        rest = f.read().rsplit(")", 1)[1].split()
                    stats[int(name)] = (int(rest[1]), int(rest[11]) + int(rest[12]))
                except OSError:
                    pass
        if self.pid not in stats:
            return None
        keep, changed = {self.pid}, True
        while changed:
            changed = False
            for pid, (ppid, _) in stats.items():
                if ppid in keep and pid not in keep:
                    keep.add(pid)
                    changed = True
        return sum(stats[p][1] for p in keep) / self.tick


def drain(next_batch) -> tuple[int, int, int, int]:
    """Reads batches until the end, keeping none: rows, Arrow bytes, batch count, sum of column 0."""
    rows = nbytes = batches = total = 0
    while True:
        batch = next_batch()
        if batch is None:
            break
        rows += batch.num_rows
        nbytes += batch.nbytes
        batches += 1
        if batch.num_rows:
            total += pc.sum(batch.column(0)).as_py()
    return rows, nbytes, batches, total


def timed(fn, server: ServerCpu, expected_rows: int, expected_sum: int | None, label: str, client_cpu_s=time.process_time) -> Run:
    server_before = server.read()
    cpu_before = client_cpu_s()
    start = time.perf_counter()
    rows, nbytes, batches, total = fn()
    seconds = time.perf_counter() - start
    client_cpu = client_cpu_s() - cpu_before
    server_after = server.read()
    if rows != expected_rows or (expected_sum is not None and total != expected_sum):
        raise SystemExit(f"{label}: wrong answer: {rows} rows, sum(i) = {total}; expected {expected_rows} rows, sum {expected_sum}")
    server_cpu = server_after - server_before if server_before is not None and server_after is not None else None
    return Run(seconds, rows, nbytes, batches, client_cpu, server_cpu)


def flight_fetch(client: flight.FlightClient, options: flight.FlightCallOptions, sql: str, schemas: dict, key: str | None):
    def run():
        reader = client.do_get(flight.Ticket(sql.encode("utf-8")), options)
        if key:
            schemas[key] = reader.schema

        def next_batch():
            try:
                return reader.read_chunk().data
            except StopIteration:
                return None

        return drain(next_batch)

    return run


def adbc_fetch(uri: str, key: str, sql: str, schemas: dict, label: str):
    """What ADBC users run (adbc-driver-flightsql, DB-API): execute, then read the result's record batches."""
    import adbc_driver_flightsql.dbapi as flightsql

    conn = flightsql.connect(uri, db_kwargs={"adbc.flight.sql.authorization_header": f"Bearer {key}"}, autocommit=True)
    return dbapi_reader(conn, sql, schemas, label), conn


def dbapi_reader(conn, sql: str, schemas: dict | None = None, label: str | None = None):
    """A run of the DB-API reader on an ADBC connection: execute, then read the result's record batches."""
    def run():
        with conn.cursor() as cur:
            cur.execute(sql)
            reader = cur.fetch_record_batch()
            if schemas is not None:
                schemas[label] = reader.schema

            def next_batch():
                try:
                    return reader.read_next_batch()
                except StopIteration:
                    return None

            return drain(next_batch)

    return run


def duckdb_adbc_fetch(threads: int, sql: str):
    """The same DB-API reader on DuckDB's own ADBC driver (adbc_driver_duckdb, shipped in the duckdb
    package), in-process: ADBC's own reference, as DuckDB's JDBC driver is JDBC's."""
    import adbc_driver_duckdb.dbapi as duckdb_adbc
    conn = duckdb_adbc.connect()
    with conn.cursor() as cur:
        cur.execute(f"SET threads={threads}")
    return dbapi_reader(conn, sql), conn


class JvmReader:
    """A Java reader of java/ (ThroughputClient.java: a JDBC driver; FlightSqlThroughputClient.java: the Java
    Flight SQL client) in one JVM kept up between runs, so that its JIT stays warm, each run started on
    request (`-` for its repeats): its runs then alternate with other readers' like any Python reader's.
    `url` is what the program connects to, `extra` its further arguments."""

    def __init__(self, classpath: str, program: str, url: str, sql: str, extra: tuple[str, ...], nbytes: int):
        source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "java", program)
        command = ["java", "--add-opens=java.base/java.nio=ALL-UNNAMED", "-Duser.timezone=UTC", "-cp", classpath, source,
                   url, "0", "-", sql, *extra]
        self.errors = tempfile.TemporaryFile(mode="w+")
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.errors, text=True)
        self.nbytes = nbytes
        self.tick = os.sysconf("SC_CLK_TCK")

    def cpu_s(self) -> float:
        """The JVM's CPU seconds so far (every thread of it: the reader, gRPC's, the JIT's, the collector's)."""
        with open(f"/proc/{self.process.pid}/stat") as f:
            rest = f.read().rsplit(")", 1)[1].split()
        return (int(rest[11]) + int(rest[12])) / self.tick

    def run(self) -> tuple[int, int, int, int]:
        assert self.process.stdin is not None and self.process.stdout is not None
        try:
            self.process.stdin.write("\n")
            self.process.stdin.flush()
            line = self.process.stdout.readline()
            while line and not line.startswith("{"):
                line = self.process.stdout.readline()
        except BrokenPipeError:
            line = ""
        if not line:
            self.errors.seek(0)
            raise SystemExit(f"the Java reader failed ({self.process.poll()}):\n{self.errors.read()[-2000:]}")
        done = json.loads(line)
        return done["rows"], self.nbytes, 0, done["sum"]

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.errors.close()


def inprocess_stream(con: duckdb.DuckDBPyConnection, sql: str, schemas: dict, key: str):
    def run():
        relation = con.sql(sql)
        # to_arrow_reader is fetch_record_batch's newer name (the old one warns in duckdb 1.5).
        reader = relation.to_arrow_reader() if hasattr(relation, "to_arrow_reader") else relation.fetch_record_batch()
        schemas[key] = reader.schema

        def next_batch():
            try:
                return reader.read_next_batch()
            except StopIteration:
                return None

        return drain(next_batch)

    return run


def inprocess_table(con: duckdb.DuckDBPyConnection, sql: str):
    def run():
        table = con.sql(sql).to_arrow_table()
        batches = iter(table.to_batches())
        out = drain(lambda: next(batches, None))
        del table
        return out

    return run


def measure(name: str, fn, repeats: int, warmup: int, server: ServerCpu, n: int, expected_sum: int | None, log) -> Measurement:
    if "in-process" in name:
        server = ServerCpu(None)  # the server idles during in-process runs
    m = Measurement(name)
    for i in range(warmup):
        timed(fn, server, n, expected_sum, name)
    for i in range(repeats):
        run = timed(fn, server, n, expected_sum, name)
        m.runs.append(run)
        log(f"  {name:<28} run {i + 1}: {run.seconds:7.3f} s  {run.rows / run.seconds / 1e6:6.2f} M rows/s  {run.bytes / run.seconds / 1e6:7.1f} MB/s")
    return m


@dataclass
class Reader:
    name: str
    fn: object
    server: ServerCpu
    client_cpu_s: object = time.process_time


def measure_rotated(readers: list[Reader], repeats: int, warmup: int, n: int, expected_sum: int | None, log) -> list[Measurement]:
    """Readers measured run by run in turn, the order rotated each round, so that load drifting on a shared
    machine hits all alike: two builds' servers, or a client and the in-process reference it is compared with."""
    measurements = [Measurement(r.name) for r in readers]
    for _ in range(warmup):
        for r in readers:
            timed(r.fn, r.server, n, expected_sum, r.name, r.client_cpu_s)
    for i in range(repeats):
        turn = i % len(readers)
        for m, r in list(zip(measurements, readers))[turn:] + list(zip(measurements, readers))[:turn]:
            run = timed(r.fn, r.server, n, expected_sum, r.name, r.client_cpu_s)
            m.runs.append(run)
            log(f"  {m.name:<28} run {i + 1}: {run.seconds:7.3f} s  {run.rows / run.seconds / 1e6:6.2f} M rows/s  {run.bytes / run.seconds / 1e6:7.1f} MB/s")
    return measurements


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1, help="untimed runs before each measurement")
    parser.add_argument("--key", default="admin-key-0123")
    parser.add_argument("--threads", type=int, default=2, help="DuckDB threads in-process (match the server)")
    parser.add_argument("--server-pid", type=int, default=None, help="read the server's CPU time from /proc")
    parser.add_argument("--cases", default="computed,stored,ceiling", help="comma-separated: computed, stored, ceiling")
    parser.add_argument("--ceiling-port", type=int, default=None, help="port of grpc-ceiling.mjs (pre-encoded FlightData, no DuckDB)")
    parser.add_argument("--ceiling-pid", type=int, default=None)
    parser.add_argument("--compare-port", type=int, default=None, help="a second server (build B) measured in alternation with the first")
    parser.add_argument("--compare-pid", type=int, default=None)
    parser.add_argument("--compare-label", default="B")
    parser.add_argument("--jdbc-classpath", default="", help="the Flight SQL JDBC driver's classpath: also time the computed result through JDBC")
    parser.add_argument("--duckdb-jdbc", default="", help="DuckDB's JDBC driver (a jar): the same JDBC reader in-process, JDBC's own reference")
    args = parser.parse_args()

    log = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    n = args.rows
    expected_sum = n * (n - 1) // 2
    computed_sql = COMPUTED_SQL.format(n=n)
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    server = ServerCpu(args.server_pid)
    schemas: dict[str, pa.Schema] = {}

    uri = f"grpc+tcp://{args.host}:{args.port}"
    client = flight.FlightClient(uri)
    options = flight.FlightCallOptions(headers=[(b"authorization", f"Bearer {args.key}".encode())])
    con = duckdb.connect()
    con.execute(f"SET threads={args.threads}")
    client_b = flight.FlightClient(f"grpc+tcp://{args.host}:{args.compare_port}") if args.compare_port else None
    server_b = ServerCpu(args.compare_pid)

    ref_labels: dict[str, str] = {}

    def alternate(key: str, readers: list[Reader], reference, expected: int | None = expected_sum,
                  ref_label: str = "in-process stream", ref_cpu=time.process_time) -> None:
        """Measures readers[0] (build A's server), readers[1] if any (build B's) and, with `reference`, the
        in-process reader of the same result (`ref_label`; its CPU read by `ref_cpu`), run by run in turn:
        results[key], [key_b] and [key.ref]; the ratio printed for the client is then made of runs taken next
        to each other."""
        ref_labels[key] = ref_label
        refs = [Reader(f" {ref_label} alongside", reference, ServerCpu(None), ref_cpu)] if reference else []
        measured = measure_rotated(readers + refs, args.repeats, args.warmup, n, expected, log)
        results[key] = measured[0]
        if len(readers) > 1:
            results[f"{key}_b"] = measured[1]
        if reference:
            results[f"{key}.ref"] = measured[-1]

    def flight_measure(key: str, label: str, sql: str, reference, expected: int | None = expected_sum) -> None:
        readers = [Reader(label, flight_fetch(client, options, sql, schemas, key), server)]
        if client_b is not None:
            readers.append(Reader(f"{label} [B]", flight_fetch(client_b, options, sql, schemas, f"{key}.b"), server_b))
        alternate(key, readers, reference, expected)

    def java_measure(key: str, label: str, classpath: str, program: str, url: str, extra: tuple[str, ...], reference,
                     *ref: object) -> None:
        nbytes = results["computed.flight"].best().bytes
        jvms = [JvmReader(classpath, program, url, computed_sql, extra, nbytes)]
        readers = [Reader(label, jvms[0].run, server if reference else ServerCpu(None), jvms[0].cpu_s)]
        if client_b is not None and reference:
            # Build B's server through a JVM of its own, alternated with A's like every other client.
            jvms.append(JvmReader(classpath, program, url.replace(f":{args.port}", f":{args.compare_port}"), computed_sql, extra, nbytes))
            readers.append(Reader(f"{label} [B]", jvms[1].run, server_b, jvms[1].cpu_s))
        try:
            alternate(key, readers, reference, expected_sum, *ref)
        finally:
            for jvm in jvms:
                jvm.close()

    results: dict[str, Measurement] = {}
    tmp = tempfile.mkdtemp(prefix="orrery-bench-")
    try:
        if "computed" in cases:
            log(f"computed result, {n:,} rows: {computed_sql}")
            # Every client's runs alternate with the in-process stream's (DuckDB's Python package, the same
            # query): the ratio against it is made of runs that saw the same load.
            stream = inprocess_stream(con, computed_sql, schemas, "computed.duckdb")
            flight_measure("computed.flight", "computed flight", computed_sql, stream)
            adbc_run, adbc_conn = adbc_fetch(f"grpc://{args.host}:{args.port}", args.key, computed_sql, schemas, "computed.adbc")
            adbc_b = adbc_fetch(f"grpc://{args.host}:{args.compare_port}", args.key, computed_sql, schemas, "computed.adbc.b") if client_b else None
            try:
                # ADBC's driver pays per batch on the client: a change of batches is compared through it too.
                readers = [Reader("computed ADBC (Python)", adbc_run, server)]
                if adbc_b is not None:
                    readers.append(Reader("computed ADBC (Python) [B]", adbc_b[0], server_b))
                alternate("computed.adbc", readers, stream)
            finally:
                adbc_conn.close()
                if adbc_b is not None:
                    adbc_b[1].close()
            duckdb_adbc_run, duckdb_adbc_conn = duckdb_adbc_fetch(args.threads, computed_sql)
            try:
                results["computed.duckdb_adbc"] = measure("computed in-process ADBC", duckdb_adbc_run, args.repeats, args.warmup, server, n, expected_sum, log)
            finally:
                duckdb_adbc_conn.close()
            if args.jdbc_classpath:
                url = f"jdbc:arrow-flight-sql://{args.host}:{args.port}?useEncryption=false&user=admin&password={args.key}"
                java_measure("computed.jdbc", "computed JDBC (typed getters)", args.jdbc_classpath, "ThroughputClient.java", url, (), stream)
                # Where JDBC's time goes: the driver's cursor reading column 1 alone, and the Java Flight SQL
                # client the driver runs on (no JDBC), on the same server.
                java_measure("computed.jdbc_rows", "computed JDBC (next, getLong)", args.jdbc_classpath, "ThroughputClient.java", url, ("rows",), stream)
                java_measure("computed.java_flight", "computed Java Flight SQL", args.jdbc_classpath, "FlightSqlThroughputClient.java",
                             f"{args.host}:{args.port}", (args.key,), stream)
                if args.duckdb_jdbc:
                    # JDBC against its own in-process reference, DuckDB's JDBC driver running the same reader in a JVM
                    # of its own, run by run in turn (as ADBC has DuckDB's ADBC driver): the ratio JDBC's goal is held to.
                    own = JvmReader(args.duckdb_jdbc, "ThroughputClient.java", "jdbc:duckdb:", computed_sql, (), results["computed.flight"].best().bytes)
                    try:
                        java_measure("computed.jdbc_own", "computed JDBC (own ref)", args.jdbc_classpath, "ThroughputClient.java", url, (), own.run,
                                     "in-process JDBC", own.cpu_s)
                    finally:
                        own.close()
            results["computed.duckdb_stream"] = measure("computed in-process stream", stream, args.repeats, args.warmup, server, n, expected_sum, log)
            results["computed.duckdb_table"] = measure("computed in-process table", inprocess_table(con, computed_sql), args.repeats, args.warmup, server, n, expected_sum, log)

        if "stored" in cases:
            log(f"stored table, {n:,} rows")
            parquet = os.path.join(tmp, "bench.parquet")
            start = time.perf_counter()
            con.execute(f"COPY ({computed_sql}) TO '{parquet}' (FORMAT parquet)")
            con.execute(f"CREATE OR REPLACE TABLE bench AS SELECT * FROM read_parquet('{parquet}')")
            log(f"  in-process: wrote {os.path.getsize(parquet) / 1e6:.1f} MB of Parquet and loaded it into table bench in {time.perf_counter() - start:.2f} s")
            # The server's DuckDB is sandboxed (no reading arbitrary files): the admin builds the
            # same table there with a statement.
            import adbc_driver_flightsql.dbapi as flightsql

            ports = [args.port] + ([args.compare_port] if args.compare_port else [])
            for port in ports:
                start = time.perf_counter()
                with flightsql.connect(f"grpc://{args.host}:{port}", db_kwargs={"adbc.flight.sql.authorization_header": f"Bearer {args.key}"}, autocommit=True) as adbc:
                    with adbc.cursor() as cur:
                        cur.execute(f"CREATE OR REPLACE TABLE bench AS {computed_sql}")
                log(f"  server on port {port}: CREATE TABLE bench through ADBC in {time.perf_counter() - start:.2f} s")
            flight_measure("stored.flight", "stored flight", STORED_SQL, inprocess_stream(con, STORED_SQL, schemas, "stored.duckdb"))
            results["stored.duckdb_stream"] = measure("stored in-process stream", inprocess_stream(con, STORED_SQL, schemas, "stored.duckdb"), args.repeats, args.warmup, server, n, expected_sum, log)
            results["stored.duckdb_table"] = measure("stored in-process table", inprocess_table(con, STORED_SQL), args.repeats, args.warmup, server, n, expected_sum, log)
            results["parquet.duckdb_stream"] = measure("parquet in-process stream", inprocess_stream(con, f"SELECT * FROM read_parquet('{parquet}')", schemas, "parquet.duckdb"), args.repeats, args.warmup, server, n, expected_sum, log)
            for port in ports:
                with flightsql.connect(f"grpc://{args.host}:{port}", db_kwargs={"adbc.flight.sql.authorization_header": f"Bearer {args.key}"}, autocommit=True) as adbc:
                    with adbc.cursor() as cur:
                        cur.execute("DROP TABLE IF EXISTS bench")
        if "ceiling" in cases and args.ceiling_port:
            log(f"transport ceiling: the same columns as pre-encoded FlightData from a bare grpc-js server, {n:,} rows")
            ceiling = flight.FlightClient(f"grpc+tcp://{args.host}:{args.ceiling_port}")
            try:
                results["ceiling.flight"] = measure("ceiling grpc-js (no DuckDB)", flight_fetch(ceiling, flight.FlightCallOptions(), str(n), schemas, None), args.repeats, args.warmup, ServerCpu(args.ceiling_pid), n, None, log)
            finally:
                ceiling.close()
    finally:
        client.close()
        if client_b is not None:
            client_b.close()
        con.close()
        shutil.rmtree(tmp, ignore_errors=True)

    # Same columns both ways (names and types; Flight adds field metadata).
    for case in ("computed", "stored"):
        a, b = schemas.get(f"{case}.flight"), schemas.get(f"{case}.duckdb")
        if a is not None and b is not None and not a.remove_metadata().equals(b.remove_metadata(), check_metadata=False):
            stripped = pa.schema([pa.field(f.name, f.type, f.nullable) for f in a])
            if not stripped.equals(pa.schema([pa.field(f.name, f.type, f.nullable) for f in b])):
                log(f"note: {case} schemas differ:\n  flight: {a.types}\n  duckdb: {b.types}")

    # Report.
    summary = {name: m.summary() for name, m in results.items()}
    figures: dict = {
        "bench": "flight-throughput",
        "rows": n,
        "repeats": args.repeats,
        "warmup": args.warmup,
        "threads": args.threads,
        "cpus": os.cpu_count(),
        "loadavg_1m_at_start": LOAD_AT_START,
        "loadavg_1m_at_end": round(os.getloadavg()[0], 2),
        "pyarrow": pa.__version__,
        "duckdb": duckdb.__version__,
        **git_state(),
        "compare": {"label": args.compare_label} if args.compare_port else None,
        "results": summary,
        "ratios": {},
    }
    print()
    print(f"Orrery Flight SQL throughput, {n:,} rows, {args.repeats} runs each (best / median), DuckDB threads={args.threads}, {os.cpu_count()} CPUs")
    header = f"{'measurement':<28} {'best s':>8} {'median s':>9} {'M rows/s':>9} {'MB/s':>8} {'Arrow MB':>9} {'batches':>8} {'srv cpu s':>9} {'cli cpu s':>9}"
    print(header)
    print("-" * len(header))
    for name, m in results.items():
        s = summary[name]
        srv = f"{s['server_cpu_s']:9.2f}" if "server_cpu_s" in s else f"{'':>9}"
        print(
            f"{m.name:<28} {s['best_s']:8.3f} {s['median_s']:9.3f} {s['best_rows_per_s'] / 1e6:9.2f} {s['best_mb_per_s']:8.1f} "
            f"{s['bytes'] / 1e6:9.1f} {s['batches']:8d} {srv} {s['client_cpu_s']:9.2f}"
        )
    print()
    # The figures to quote: each client against the in-process stream run by run in turn with it.
    figures["ratios_alternated"] = {}
    for key, m in results.items():
        # Build B's runs alternated with the same in-process runs as A's.
        ref = results.get(f"{key[:-2]}.ref" if key.endswith("_b") else f"{key}.ref")
        if ref is None:
            continue
        pairs = [r.seconds / c.seconds for c, r in zip(m.runs, ref.runs)]
        best = ref.best().seconds / m.best().seconds
        med = statistics.median(pairs)
        figures["ratios_alternated"][key] = {"pairs": [round(p, 3) for p in pairs], "median": round(med, 3), "best": round(best, 3)}
        print(f"alternated: {ref_labels[key[:-2] if key.endswith('_b') else key]} time / {m.name} time = {med:.2f} (median of {len(pairs)} pairs, "
              f"{min(pairs):.2f}-{max(pairs):.2f}), {best:.2f} (best / best)   goal >= 0.9")
    print()
    client_names = {"flight": "Flight", "adbc": "ADBC", "jdbc": "JDBC"}
    for case, suffix in (("computed", ""), ("computed.adbc", ""), ("computed.jdbc", ""), ("stored", ""), ("computed", "_b"),
                         ("computed.adbc", "_b"), ("computed.jdbc", "_b"), ("stored", "_b")):
        case, _, client_kind = case.partition(".")
        client_kind = client_kind or "flight"
        fl = results.get(f"{case}.{client_kind}{suffix}")
        if not fl:
            continue
        if suffix:
            a = results[f"{case}.{client_kind}"]
            speedup = a.median_seconds() / fl.median_seconds()
            name = case if client_kind == "flight" else f"{case}.{client_kind}"
            figures["ratios"][f"{name}.b_vs_a"] = round(speedup, 3)
            print(f"{name}: {args.compare_label} is {speedup:.2f}x as fast as A (median time A / median time {args.compare_label}); runs alternated")
        own = {"adbc": ("duckdb_adbc",)}.get(client_kind, ())
        for base in ("duckdb_stream", "duckdb_table") + own:
            ref = results.get(f"{case}.{base}")
            if not ref:
                continue
            best = ref.best().seconds / fl.best().seconds
            med = ref.median_seconds() / fl.median_seconds()
            name = case if client_kind == "flight" else f"{case}.{client_kind}"
            figures["ratios"][f"{name}{suffix}.{base}"] = {"best": round(best, 3), "median": round(med, 3)}
            tag = f" [{args.compare_label}]" if suffix else ""
            client_name = client_names[client_kind]
            reference = {"duckdb_stream": "stream", "duckdb_table": "table", "duckdb_adbc": "ADBC"}[base]
            print(f"ratio {case}{tag}: in-process {reference:<6} time / {client_name} time = {best:.2f} (best), {med:.2f} (median)   goal >= 0.9")
    if "computed.jdbc" in results and "computed.java_flight" in results:
        parts = {k: results[f"computed.{k}"].median_seconds() for k in ("java_flight", "jdbc_rows", "jdbc")}
        figures["jdbc_breakdown_median_s"] = {k: round(v, 3) for k, v in parts.items()}
        print(f"JDBC's time (median): Java Flight SQL client {parts['java_flight']:.3f} s, + the driver's cursor (next, getLong) "
              f"{parts['jdbc_rows'] - parts['java_flight']:+.3f} s, + getDouble/getTimestamp/getString {parts['jdbc'] - parts['jdbc_rows']:+.3f} s "
              f"= {parts['jdbc']:.3f} s (client CPU per run {summary['computed.jdbc']['client_cpu_s']:.2f} s)")
    if "ceiling.flight" in results:
        c = summary["ceiling.flight"]
        figures["ceiling_gb_per_s"] = {"best": round(c["best_mb_per_s"] / 1000, 3), "median": round(c["median_mb_per_s"] / 1000, 3)}
        print(f"transport ceiling (pre-encoded FlightData, bare grpc-js): {c['best_mb_per_s'] / 1000:.3f} GB/s (best), {c['median_mb_per_s'] / 1000:.3f} (median)")
    for suffix in ("", "_b"):
        if f"stored.flight{suffix}" not in results:
            continue
        s = summary[f"stored.flight{suffix}"]
        gbps = s["best_mb_per_s"] / 1000
        figures[f"stored_flight{suffix}_gb_per_s"] = {"best": round(gbps, 3), "median": round(s["median_mb_per_s"] / 1000, 3)}
        tag = f" [{args.compare_label}]" if suffix else ""
        print(f"stored scan over Flight{tag}: {gbps:.3f} GB/s of Arrow bytes received (best), {s['median_mb_per_s'] / 1000:.3f} (median)   goal >= 0.6")
    # The benchmark alone brings the 1-minute average to about 1.5 on 2 cores by its end.
    if figures["loadavg_1m_at_start"] > 0.7 or figures["loadavg_1m_at_end"] > 2.5:
        print(
            f"warning: 1-minute load average was {figures['loadavg_1m_at_start']} at start, {figures['loadavg_1m_at_end']} at end "
            "(this benchmark itself adds about 1): other work on the machine may have skewed the figures"
        )
    print(json.dumps(figures, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
