"""Statement latency benchmark: dashboard-sized statements through Orrery's Flight SQL, as a key that
is not an admin would send them from ADBC (Python DB-API, one hot connection, and 16 connections at
once), against DuckDB's Python package in-process on the same Parquet files.

1. Ingests --records log records (loadgen.mjs, OTLP/HTTP protobuf, 8 processes) and --points metric
   points over the last hour (OTLP/JSON gauges), then materializes blocks, processes, streams,
   log_entries, measures and log_stats (one partition each, as the admin).
2. In-process: one DuckDB connection (same thread count as the server) with one view per view set
   over the same partition files (from list_partitions()).
3. Warms the server (--server-warmup seconds of untimed statements, V8 still compiling its statement path),
   then times each statement (same text on both sides), hot: --seconds per statement and side with one
   connection, then --seconds with --clients connections at once (threads, each its own connection;
   in-process: a cursor each). p50/p99 per statement; ratio = Flight p50 / in-process p50.
   One connection also times raw pyarrow DoGet (SQL as ticket: one RPC) and a bare GetFlightInfo,
   which split ADBC's time into its RPCs.
4. Checks: every statement answers the same rows on both sides.

Goals (issue 10): SELECT 1 median <= in-process + 1 ms; the others <= 1.5x in-process + 1 ms;
>= 1,000 small statements/s with 16 clients on 2 cores.

Run through run.sh, which starts the server.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import urllib.request

import adbc_driver_flightsql.dbapi as flight_sql
import duckdb
import pyarrow as pa
import pyarrow.flight as flight

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchlib import CpuMeter, Orrery, git_state, ingest, log, machine_state, proc_cpu  # noqa: E402

READER_NAME, READER_KEY = "reader", "reader-key-0123"

STATEMENTS = {
    "select1": "SELECT 1 AS one",
    "groupby100k": "SELECT i % 1000 AS k, count(*) AS n, sum(i) AS s FROM range(100000) t(i) GROUP BY 1 ORDER BY 1",
    "logs_5min": (
        "SELECT time, level, target, msg FROM log_entries WHERE process_id = '{process}' "
        "AND time >= (now() - INTERVAL 5 MINUTE)::TIMESTAMP_NS ORDER BY time DESC LIMIT 100"
    ),
    "log_stats_day": (
        "SELECT time_bucket(INTERVAL 1 MINUTE, time_bin) AS minute, sum(count) AS n FROM log_stats "
        "WHERE time_bin >= (now() - INTERVAL 1 DAY)::TIMESTAMP_NS GROUP BY 1 ORDER BY 1"
    ),
    "measures_p95_hour": (
        "SELECT time_bucket(INTERVAL 1 MINUTE, time) AS minute, quantile_cont(value, 0.95) AS p95 FROM measures "
        "WHERE name = 'cpu' AND time >= (now() - INTERVAL 1 HOUR)::TIMESTAMP_NS GROUP BY 1 ORDER BY 1"
    ),
}
VIEWS = ("blocks", "processes", "streams", "log_entries", "measures", "log_stats")


def quote_lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def post_metrics(http_port: int, points: int) -> None:
    """`points` gauge points named cpu and mem, spread evenly over the last 50 minutes (so an hour's
    window that moves during the run holds them all)."""
    now_ns = time.time_ns()
    step = 3_000_000_000_000 // max(1, points // 2)
    sent = 0
    while sent < points:
        n = min(5000, points - sent)
        data = [
            {"timeUnixNano": str(now_ns - (sent + i) // 2 * step - 1_000_000), "asDouble": ((sent + i) * 7919) % 1000 / 10}
            for i in range(n)
        ]
        body = {"resourceMetrics": [{
            "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "bench-metrics"}}]},
            "scopeMetrics": [{"metrics": [
                {"name": "cpu", "gauge": {"dataPoints": data[0::2]}},
                {"name": "mem", "gauge": {"dataPoints": data[1::2]}},
            ]}],
        }]}
        request = urllib.request.Request(
            f"http://127.0.0.1:{http_port}/v1/metrics", data=json.dumps(body).encode(), method="POST",
            headers={"content-type": "application/json", "authorization": "Bearer admin-key-0123"})
        with urllib.request.urlopen(request) as response:
            if response.status != 200:
                raise SystemExit(f"metrics POST answered {response.status}")
        sent += n


def load_data(http_port: int, flight_port: int, server_pid: int | None, records: int, points: int) -> dict:
    """The data set every statement reads: `records` log records and `points` metric points, then each view set
    materialized as one partition. Returns the ingestion's run, the partitions and the busiest process."""
    run = ingest(http_port, records, 8, server_pid)
    post_metrics(http_port, points)
    admin = Orrery(flight_port)
    begin = dt.datetime.now(dt.timezone.utc) - dt.timedelta(minutes=10)
    end = dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=5)
    for view in VIEWS:
        _, seconds = admin.materialize(view, begin, end)
        log(f"materialized {view} in {seconds:.2f} s")
    parts = admin.query("SELECT view_set_name, file_path FROM list_partitions() WHERE file_path IS NOT NULL").to_pylist()
    process = admin.query("SELECT process_id, count(*) AS n FROM log_entries GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 1").to_pylist()[0]["process_id"]
    admin.close()
    return {"run": run, "parts": parts, "process": process}


def statement(name_or_sql: str, process: str) -> str:
    """One of STATEMENTS by name (for the data set's busiest process), or the SQL given."""
    return STATEMENTS.get(name_or_sql, name_or_sql).format(process=process)


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def summary(times: list[float], elapsed: float) -> dict:
    return {"n": len(times), "p50_ms": round(percentile(times, 50) * 1000, 3),
            "p99_ms": round(percentile(times, 99) * 1000, 3), "per_s": round(len(times) / elapsed, 1)}


def timed_loop(run, seconds: float, warmup: int) -> tuple[list[float], float, object]:
    result = None
    for _ in range(warmup):
        result = run()
    times: list[float] = []
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        t0 = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - t0)
    return times, time.perf_counter() - start, result


def concurrent_loop(make_runner, clients: int, seconds: float, warmup: int, meter: "CpuSplit | None" = None) -> tuple[list[float], float]:
    """`clients` threads, each with its own runner, all timed over the same interval; `meter` reads CPU over that
    interval alone (not the connections' set-up and warm-up)."""
    runners = [make_runner() for _ in range(clients)]
    for run in runners:
        for _ in range(warmup):
            run()
    barrier = threading.Barrier(clients + 1)
    per_thread: list[list[float]] = [[] for _ in range(clients)]
    errors: list[BaseException] = []

    def work(i: int) -> None:
        barrier.wait()
        end = time.perf_counter() + seconds
        try:
            while time.perf_counter() < end:
                t0 = time.perf_counter()
                runners[i]()
                per_thread[i].append(time.perf_counter() - t0)
        except BaseException as error:  # noqa: BLE001 - reported after the join
            errors.append(error)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    if meter:
        meter.__enter__()
    barrier.wait()
    start = time.perf_counter()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    if meter:
        meter.__exit__()
    if errors:
        raise errors[0]
    return [t for ts in per_thread for t in ts], elapsed


def canonical(table: pa.Table) -> list[tuple]:
    """Rows with timestamps as nanosecond integers (Flight sends them zoned, in-process DuckDB without a zone)."""
    columns = [c.cast(pa.timestamp("ns")).cast(pa.int64()) if pa.types.is_timestamp(c.type) else c for c in table.columns]
    return [tuple(row.values()) for row in pa.table(columns, names=table.column_names).to_pylist()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--http-port", type=int, required=True)
    parser.add_argument("--flight-port", type=int, required=True)
    parser.add_argument("--server-pid", type=int, default=None)
    parser.add_argument("--data-dir", required=True, help="the server's ORRERY_DATA_DIR")
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--points", type=int, default=20_000)
    parser.add_argument("--seconds", type=float, default=2.0, help="timed seconds per statement, side and phase")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--server-warmup", type=float, default=30.0,
                        help="seconds of untimed statements (all of them in turn; pyarrow, then ADBC) before any is timed")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--only", default="", help="comma-separated statement names (default: all)")
    parser.add_argument("--go-client", default="", help="the built bench/latency/go program (arrow-go)")
    parser.add_argument("--jdbc-classpath", default="", help="the Flight SQL JDBC driver's classpath, for LatencyClient.java")
    args = parser.parse_args()

    load_at_start = machine_state()["loadavg_1m"]
    lake = os.path.join(args.data_dir, "lake")
    uri = f"grpc://127.0.0.1:{args.flight_port}"
    data = load_data(args.http_port, args.flight_port, args.server_pid, args.records, args.points)
    run, parts, process = data["run"], data["parts"], data["process"]

    con = duckdb.connect()
    con.execute(f"SET threads={args.threads}")
    con.execute("SET TimeZone='UTC'")
    for view in VIEWS:
        files = [os.path.join(lake, p["file_path"]) for p in parts if p["view_set_name"] == view]
        con.execute(f"CREATE VIEW {view} AS SELECT * FROM read_parquet([{', '.join(quote_lit(f) for f in files)}])")

    def adbc_connect():
        return flight_sql.connect(uri, db_kwargs={"username": READER_NAME, "password": READER_KEY}, autocommit=True)

    def adbc_runner(sql: str):
        cursor = adbc_connect().cursor()

        def run():
            cursor.execute(sql)
            return cursor.fetch_arrow_table()
        return run

    def duckdb_runner(sql: str):
        cursor = con.cursor()
        return lambda: cursor.execute(sql).to_arrow_table()

    raw = flight.FlightClient(f"grpc+tcp://127.0.0.1:{args.flight_port}")
    raw_options = flight.FlightCallOptions(headers=[(b"authorization", f"Bearer {READER_KEY}".encode())])

    wanted = [n for n in STATEMENTS if not args.only or n in args.only.split(",")]
    # The server's statement path is still being compiled by V8 over its first ~20,000 statements: without this,
    # the client timed first (ADBC) paid for it, its server CPU per statement up to 1.5x a later client's. Most of
    # them from pyarrow's client, the cheapest on the shared cores (GetFlightInfo + DoGet, as arrow-go sends), the
    # rest through ADBC (a prepared statement's GetFlightInfo).
    def raw_runner(sql: str):
        client = flight.FlightClient(f"grpc+tcp://127.0.0.1:{args.flight_port}")
        descriptor = flight_sql_descriptor(sql)

        def run():
            info = client.get_flight_info(descriptor, raw_options)
            return client.do_get(info.endpoints[0].ticket, raw_options).read_all()
        return run
    warm = 0
    for name in wanted:
        sql = STATEMENTS[name].format(process=process)
        warm += len(concurrent_loop(lambda: raw_runner(sql), 8, args.server_warmup * 0.7 / len(wanted), 1)[0])
        warm += len(concurrent_loop(lambda: adbc_runner(sql), 4, args.server_warmup * 0.3 / len(wanted), 1)[0])
    log(f"server warmed with {warm:,} statements")
    # What the server spends with no statement running (its background work): charged to a client's statements
    # over the timed part alike, so per statement it weighs more on a slower client.
    idle = CpuMeter(args.server_pid)
    time.sleep(3)
    idle_cpu = idle.read()
    idle_ms_per_s = round(idle_cpu["server_node_cpu_s"] * 1000 / 3, 1) if idle_cpu else None
    log(f"server CPU while idle: {idle_ms_per_s} ms/s")
    results: dict[str, dict] = {}
    mismatches: list[str] = []
    server_cpu = CpuMeter(args.server_pid)
    for name in wanted:
        sql = STATEMENTS[name].format(process=process)
        row: dict = {"sql": sql}
        cpu = CpuMeter(args.server_pid)
        times, elapsed, flight_table = timed_loop(adbc_runner(sql), args.seconds, args.warmup)
        row["adbc_1"] = summary(times, elapsed)
        used = cpu.read()
        if used:
            # Warm-up statements ran inside the interval too.
            row["adbc_1"]["server_cpu_ms"] = round(used["server_node_cpu_s"] * 1000 / (len(times) + args.warmup), 2)
        times, elapsed, local_table = timed_loop(duckdb_runner(sql), args.seconds, args.warmup)
        row["duckdb_1"] = summary(times, elapsed)
        times, elapsed, _ = timed_loop(
            lambda: raw.do_get(flight.Ticket(sql.encode()), raw_options).read_all(), args.seconds / 2, args.warmup)
        row["doget_1"] = summary(times, elapsed)
        if name == "select1":
            times, elapsed, _ = timed_loop(lambda: raw.get_flight_info(flight_sql_descriptor(sql), raw_options),
                                           args.seconds / 2, args.warmup)
            row["getflightinfo_1"] = summary(times, elapsed)
        split = CpuSplit(args.server_pid, os.getpid())
        times, elapsed = concurrent_loop(lambda: adbc_runner(sql), args.clients, args.seconds, 1, split)
        row[f"adbc_{args.clients}"] = {**summary(times, elapsed), **split.per_statement(len(times))}
        times, elapsed = concurrent_loop(lambda: duckdb_runner(sql), args.clients, args.seconds, 1)
        row[f"duckdb_{args.clients}"] = summary(times, elapsed)
        row["rows"] = flight_table.num_rows
        same = canonical(flight_table) == canonical(local_table) if name != "logs_5min" else \
            flight_table.num_rows == local_table.num_rows
        if not same or flight_table.num_rows == 0:
            mismatches.append(name)
        for client, command in other_clients(args, sql).items():
            row[client] = run_client(client, command, args.server_pid)
            if row[client]["1"]["rows"] != local_table.num_rows:
                mismatches.append(f"{name} ({client})")
            log(f"  {name}: {client} p50 {row[client]['1']['p50_ms']:.2f} ms; "
                f"{args.clients} clients {row[client][str(args.clients)]['per_s']:.0f}/s")
        row["ratio_p50_1"] = round(row["adbc_1"]["p50_ms"] / row["duckdb_1"]["p50_ms"], 2)
        row[f"ratio_p50_{args.clients}"] = round(row[f"adbc_{args.clients}"]["p50_ms"] / row[f"duckdb_{args.clients}"]["p50_ms"], 2)
        results[name] = row
        log(f"  {name}: ADBC p50 {row['adbc_1']['p50_ms']:.2f} ms, in-process {row['duckdb_1']['p50_ms']:.2f} ms; "
            f"{args.clients} clients {row[f'adbc_{args.clients}']['per_s']:.0f}/s")
    cpu = server_cpu.read()
    raw.close()
    con.close()

    c = args.clients
    print()
    print(f"Orrery statement latency: ADBC (Python DB-API, key '{READER_NAME}', not an admin) vs DuckDB {duckdb.__version__} "
          f"in-process, hot, {args.seconds:g} s per cell; {args.records:,} log records, {args.points:,} metric points; "
          f"DuckDB threads={args.threads}, {os.cpu_count()} CPUs")
    header = (f"{'statement':<18} {'rows':>5} | {'ADBC p50':>8} {'p99':>7} {'in-proc p50':>11} {'p99':>6} {'ratio':>6} | "
              f"{'srv CPU':>7} {'DoGet p50':>9} | {c} clients: {'ADBC p50':>8} {'p99':>7} {'stmt/s':>7} {'in-proc p50':>11} {'stmt/s':>7}")
    print(header)
    print("-" * len(header))
    for name, r in results.items():
        a1, d1, g1, ac, dc = r["adbc_1"], r["duckdb_1"], r["doget_1"], r[f"adbc_{c}"], r[f"duckdb_{c}"]
        print(f"{name:<18} {r['rows']:>5} | {a1['p50_ms']:>8.2f} {a1['p99_ms']:>7.2f} {d1['p50_ms']:>11.2f} {d1['p99_ms']:>6.2f} "
              f"{r['ratio_p50_1']:>6.1f} {a1.get('server_cpu_ms', 0):>7.2f} | {g1['p50_ms']:>9.2f} | {'':>{len(str(c)) + 9}}{ac['p50_ms']:>8.2f} {ac['p99_ms']:>7.2f} "
              f"{ac['per_s']:>7.0f} {dc['p50_ms']:>11.2f} {dc['per_s']:>7.0f}")
    clients = [k for k in ("go", "jdbc") if any(k in r for r in results.values())]
    if clients:
        print()
        print(f"Per client (same statements, key '{READER_NAME}'): p50/p99 with one connection, ratio to in-process p50, "
              f"and with {c} connections at once")
        header = (f"{'statement':<18} {'client':<6} | {'p50':>8} {'p99':>8} {'ratio':>6} {'vs +1ms':>7} | "
                  f"{c} conns: {'p50':>8} {'p99':>8} {'stmt/s':>7} {'srv CPU':>7} {'cli CPU':>7} {'CPU cap':>7} {'main busy':>9}")
        print(header)
        print("-" * len(header))
        for name, r in results.items():
            local = r["duckdb_1"]["p50_ms"]
            cells = [("adbc", r["adbc_1"], r[f"adbc_{c}"])]
            cells += [(k, r[k]["1"], r[k][str(c)]) for k in clients if k in r]
            cells.append(("duckdb", r["duckdb_1"], r[f"duckdb_{c}"]))
            for client, one, many in cells:
                # The goal: within 1 ms of in-process for SELECT 1, within 1.5x + 1 ms for the others.
                bound = local + 1 if name == "select1" else 1.5 * local + 1
                verdict = "" if client == "duckdb" else ("ok" if one["p50_ms"] <= bound else "over")
                print(f"{name:<18} {client:<6} | {one['p50_ms']:>8.2f} {one['p99_ms']:>8.2f} {one['p50_ms'] / local:>6.1f} "
                      f"{verdict:>7} | {'':>{len(str(c)) + 7}}{many['p50_ms']:>8.2f} {many['p99_ms']:>8.2f} {many['per_s']:>7.0f}"
                      f"{cpu_cells(many)}")
    print(f"{c} conns: srv CPU / cli CPU = ms of CPU per statement of the server process and of the client process over "
          f"the timed part; CPU cap = {os.cpu_count()} cores' ms per second / (srv + cli): the rate at which the two would "
          "fill every core between them; main busy = the server's main thread's CPU over the phase's wall time")
    if "select1" in results:
        print(f"bare GetFlightInfo (SELECT 1, pyarrow): p50 {results['select1']['getflightinfo_1']['p50_ms']:.2f} ms")
    print("times in ms; ratio = ADBC p50 / in-process p50 (one connection); srv CPU = server process CPU per ADBC statement "
          "(all its threads); DoGet = raw pyarrow DoGet with the SQL as ticket")
    print(f"server CPU over the timed part: {cpu}")
    print(f"check: same rows on both sides -> {'OK' if not mismatches else 'MISMATCH ' + ', '.join(mismatches)}")
    if load_at_start > 0.7:
        print(f"warning: 1-minute load average was {load_at_start} at start: other work on the machine may have skewed the figures")
    figures = {"bench": "latency", "records": args.records, "points": args.points, "seconds": args.seconds,
               "clients": args.clients, "threads": args.threads, "results": results, "server_cpu": cpu,
               "ok": not mismatches, "loadavg_1m_at_start": load_at_start, **machine_state(),
               "duckdb": duckdb.__version__, "ingest_records_per_s": run["records_per_s"], **git_state()}
    print(json.dumps(figures, separators=(",", ":")))
    return 0 if not mismatches else 1


def cpu_cells(phase: dict) -> str:
    """The server's and the client's CPU per statement of a phase, and the rate the cores allow at that cost."""
    if "server_cpu_ms" not in phase or "client_cpu_ms" not in phase:
        return ""
    both = phase["server_cpu_ms"] + phase["client_cpu_ms"]
    cap = (os.cpu_count() or 1) * 1000 / both if both > 0 else 0
    busy = f" {phase['server_main_busy'] * 100:>8.0f}%" if "server_main_busy" in phase else ""
    return f" {phase['server_cpu_ms']:>7.2f} {phase['client_cpu_ms']:>7.2f} {cap:>7.0f}{busy}"


def other_clients(args, sql: str) -> dict[str, list[str]]:
    """The command line of each other client that is set up: arrow-go, and JDBC through java."""
    common = [str(args.seconds), str(args.clients), str(args.warmup)]
    commands = {}
    if args.go_client:
        commands["go"] = [args.go_client, "-addr", f"127.0.0.1:{args.flight_port}", "-user", READER_NAME, "-key", READER_KEY,
                          "-sql", sql, "-seconds", common[0], "-clients", common[1], "-warmup", common[2],
                          *os.environ.get("GO_ARGS", "").split()]
    if args.jdbc_classpath:
        source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "java", "LatencyClient.java")
        commands["jdbc"] = ["java", "--add-opens=java.base/java.nio=ALL-UNNAMED", "-Duser.timezone=UTC", "-cp",
                            args.jdbc_classpath, source, "127.0.0.1", str(args.flight_port), READER_NAME, READER_KEY,
                            *common, sql]
    return commands


def run_client(client: str, command: list[str], server_pid: int | None) -> dict:
    """Runs a client program; its JSON lines by phase ("1" and the number of clients), each with the server's
    and the client's CPU per statement over its timed part (from the program's mark line to its report)."""
    phases: dict[str, dict] = {}
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as program:
        split = None
        for line in program.stdout:
            if not line.startswith("{"):
                continue
            record = json.loads(line)
            if "mark" in record:
                split = CpuSplit(server_pid, program.pid).__enter__()
            elif split is not None:
                split.__exit__(None, None, None)
                phases[record["phase"]] = {**record, **split.per_statement(record["n"])}
                split = None
        stderr = program.stderr.read()
        program.wait(timeout=600)
    if program.returncode != 0 or len(phases) != 2:
        raise SystemExit(f"{client} client failed ({program.returncode}): {stderr.strip()[-2000:]}")
    return phases


class CpuSplit:
    """CPU of the server and of a client process over an interval: with 16 clients on 2 cores, the clients'
    own CPU is part of why a rate stops where it does; and how busy the server's main thread (the event loop
    gRPC runs on) was over it."""

    def __init__(self, server_pid: int | None, client_pid: int):
        self.pids = (server_pid, client_pid)

    def read(self) -> tuple:
        return (time.perf_counter(), thread_cpu(self.pids[0]), *(proc_cpu(p) if p else None for p in self.pids))

    def __enter__(self) -> "CpuSplit":
        self.start = self.read()
        return self

    def __exit__(self, *_: object) -> None:
        self.end = self.read()

    def per_statement(self, n: int) -> dict:
        """ms of CPU per statement: server_cpu_ms (the Node process, every thread) and client_cpu_ms; and
        server_main_busy, the main thread's CPU over the interval's wall time."""
        out = {}
        for name, a, b in zip(("server_cpu_ms", "client_cpu_ms"), self.start[2:], self.end[2:]):
            if a is not None and b is not None and n > 0:
                out[name] = round((b - a) * 1000 / n, 3)
        if self.start[1] is not None and self.end[1] is not None:
            out["server_main_busy"] = round((self.end[1] - self.start[1]) / (self.end[0] - self.start[0]), 3)
        return out


def thread_cpu(pid: int | None) -> float | None:
    """CPU seconds of a process's main thread."""
    try:
        with open(f"/proc/{pid}/task/{pid}/stat") as f:
            rest = f.read().rsplit(")", 1)[1].split()
        return (int(rest[11]) + int(rest[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, TypeError):
        return None


def flight_sql_descriptor(sql: str) -> flight.FlightDescriptor:
    """A CommandStatementQuery descriptor (google.protobuf.Any), as ADBC sends for a statement."""
    query = sql.encode()
    inner = b"\x0a" + varint(len(query)) + query
    type_url = b"type.googleapis.com/arrow.flight.protocol.sql.CommandStatementQuery"
    any_bytes = b"\x0a" + varint(len(type_url)) + type_url + b"\x12" + varint(len(inner)) + inner
    return flight.FlightDescriptor.for_command(any_bytes)


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


if __name__ == "__main__":
    sys.exit(main())
