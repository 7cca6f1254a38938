"""Where one hot statement's time goes, client and server, RPC by RPC (issue 10); run by phases.sh.

The server runs with phase-probe.mjs preloaded (its RPCs' timestamps and phases, on CLOCK_MONOTONIC);
this side sends the statement N times through ADBC (DB-API: cursor.execute + fetch_arrow_table, one
connection) and through pyarrow's Flight client (GetFlightInfo + DoGet, one connection), stamping
each statement's start and end on the same clock, and DuckDB in-process for reference. It prints
medians per statement: the gaps between the client's stamps and the server's (what the client, the
loopback and grpc-js's reading of the request took), each RPC's server phases, and CPU per statement of
the client process and the server process.
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import sys
import time

import adbc_driver_flightsql.dbapi as flight_sql
import adbc_driver_manager
import duckdb
import pyarrow
import pyarrow.flight as flight

port, pid, out, sql = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
n, warmup = int(os.environ.get("N", "2000")), int(os.environ.get("WARMUP", "1000"))
rounds = int(os.environ.get("ROUNDS", "2"))
clock = time.monotonic_ns


def process_cpu(p: int) -> float:
    fields = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def adbc_client():
    conn = flight_sql.connect(
        f"grpc://127.0.0.1:{port}", db_kwargs={"username": "reader", "password": "reader-key-0123"}, autocommit=True
    )
    cur = conn.cursor()

    def one() -> tuple[int, int, int, int]:
        t0 = clock()
        # What execute() does first: close the previous statement's result (timed on its own).
        cur._clear()
        cleared = clock()
        cur.execute(sql)
        t1 = clock()
        cur.fetch_arrow_table()
        return t0, t1, clock(), cleared - t0

    return one, lambda: (cur.close(), conn.close())


def adbc_low_level_client():
    """The same driver without the DB-API layer: the ADBC statement's own calls, the stream read by pyarrow."""
    conn = flight_sql.connect(
        f"grpc://127.0.0.1:{port}", db_kwargs={"username": "reader", "password": "reader-key-0123"}, autocommit=True
    )
    statement = adbc_driver_manager.AdbcStatement(conn.adbc_connection)

    def one() -> tuple[int, int, int]:
        t0 = clock()
        statement.set_sql_query(sql)
        stream, _ = statement.execute_query()
        t1 = clock()
        pyarrow.RecordBatchReader._import_from_c(stream.address).read_all()
        return t0, t1, clock()

    return one, lambda: (statement.close(), conn.close())


def pyarrow_client():
    client = flight.FlightClient(f"grpc+tcp://127.0.0.1:{port}")
    options = flight.FlightCallOptions(headers=[(b"authorization", b"Bearer reader-key-0123")])
    # CommandStatementQuery packed in an Any, as ADBC sends it.
    query = sql.encode()
    command = b"\x0a" + varint(len(query)) + query
    url = b"type.googleapis.com/arrow.flight.protocol.sql.CommandStatementQuery"
    packed = b"\x0a" + varint(len(url)) + url + b"\x12" + varint(len(command)) + command
    descriptor = flight.FlightDescriptor.for_command(packed)

    def one() -> tuple[int, int, int]:
        t0 = clock()
        info = client.get_flight_info(descriptor, options)
        t1 = clock()
        client.do_get(info.endpoints[0].ticket, options).read_all()
        return t0, t1, clock()

    return one, client.close


def varint(value: int) -> bytes:
    out = b""
    while True:
        byte, value = value & 0x7F, value >> 7
        out += bytes([byte | (0x80 if value else 0)])
        if not value:
            return out


def measure(name: str, client) -> dict:
    one, close = client
    for _ in range(warmup):
        one()
    os.kill(pid, signal.SIGUSR1)
    time.sleep(0.2)
    stamps = []
    client0, server0 = time.process_time(), process_cpu(pid)
    for _ in range(n):
        stamps.append(one())
    client_cpu, server_cpu = time.process_time() - client0, process_cpu(pid) - server0
    close()
    os.kill(pid, signal.SIGUSR2)
    for _ in range(100):
        time.sleep(0.1)
        if os.path.exists(out):
            break
    time.sleep(0.2)
    rpcs = json.load(open(out))
    os.remove(out)
    return breakdown(name, stamps, rpcs, client_cpu / n * 1e3, server_cpu / n * 1e3)


def ms(ns: float) -> float:
    return ns / 1e6


def breakdown(name: str, stamps, rpcs, client_cpu: float, server_cpu: float) -> dict:
    """Per statement: each RPC of the server that started between the client's stamps, in order."""
    rows: dict[str, list[float]] = {}
    extra: dict[str, int] = {}

    def add(label: str, value: float) -> None:
        rows.setdefault(label, []).append(value)

    i = 0
    for t0, t1, t2, *cleared in stamps:
        mine = []
        while i < len(rpcs) and rpcs[i]["stream"] < t2:
            if rpcs[i]["stream"] >= t0:
                mine.append(rpcs[i])
            i += 1
        info = next((r for r in mine if r["path"] == "GetFlightInfo"), None)
        get = next((r for r in mine if r["path"] == "DoGet"), None)
        for r in mine:
            if r is not info and r is not get:
                extra[r["path"]] = extra.get(r["path"], 0) + 1
        add("whole statement (client's view)", ms(t2 - t0))
        add("  of it, until execute() / get_flight_info() returned", ms(t1 - t0))
        if cleared:
            add("  of it, closing the previous result (the DB-API's _clear, first in execute())", ms(cleared[0]))
        if not info or not get or "closed" not in info or "closed" not in get:
            continue
        add("client: call made, request on the wire, HTTP/2 stream at the server", ms(info["stream"] - t0))
        for label, r in (("GetFlightInfo", info), ("DoGet", get)):
            add(f"{label}: grpc-js reads and decodes the request, to the handler", ms(r["handler"] - r["stream"]))
            add(f"{label}: handler (server work, below)", ms(r["answered"] - r["handler"]))
            seen = set()
            for phase, start, end in r["phases"]:
                key = f"{label}:   {phase}"
                if key in seen:  # a phase run twice in one RPC counts once, summed
                    rows[key][-1] += ms(end - start)
                else:
                    add(key, ms(end - start))
                seen.add(key)
            add(f"{label}: answer given to grpc-js -> stream closed (response written)", ms(r["closed"] - r["answered"]))
        add("client: FlightInfo in -> DoGet stream at the server", ms(get["stream"] - info["closed"]))
        add("client: DoGet stream closed -> result in the client's hands (< 0: rows in hand first)", ms(t2 - get["closed"]))
    print(f"\n{name}: {len(stamps)} statements after {warmup} warm-up ({sql!r}); medians per statement, ms")
    for label, values in rows.items():
        print(f"  {label:92s} {statistics.median(values):8.3f}")
    print(f"  {'client process CPU per statement (all its threads)':92s} {client_cpu:8.3f}")
    print(f"  {'server process CPU per statement (all its threads)':92s} {server_cpu:8.3f}")
    if extra:
        print(f"  other RPCs during the statements: {extra}")
    def median(label: str) -> float | None:
        return round(statistics.median(rows[label]), 4) if label in rows else None

    summary = {
        "client": name.split(" (round")[0],
        "p50_ms": median("whole statement (client's view)"),
        "getflightinfo_handler_ms": median("GetFlightInfo: handler (server work, below)"),
        "doget_handler_ms": median("DoGet: handler (server work, below)"),
        "server_cpu_ms": round(server_cpu, 4),
        "client_cpu_ms": round(client_cpu, 4),
        "load": os.getloadavg()[0],
    }
    print("PHASES " + json.dumps(summary))
    return {"name": name, "p50": summary["p50_ms"]}


def in_process() -> float:
    con = duckdb.connect()
    con.execute("SET threads=2")
    times = []
    for i in range(warmup + n):
        t0 = clock()
        con.execute(sql).fetch_arrow_table()
        if i >= warmup:
            times.append(clock() - t0)
    return ms(statistics.median(times))


clients = {"adbc": adbc_client, "adbc-statement": adbc_low_level_client, "pyarrow": pyarrow_client}
labels = {"adbc": "ADBC", "adbc-statement": "ADBC without DB-API", "pyarrow": "pyarrow GetFlightInfo + DoGet"}
print(f"load average at start: {os.getloadavg()}")
results = []
for r in range(rounds):
    for client in os.environ.get("CLIENTS", "adbc adbc-statement pyarrow").split():
        results.append(measure(f"{labels[client]} (round {r + 1})", clients[client]()))
local = in_process() if sql.strip().upper().startswith("SELECT 1") and os.environ.get("IN_PROCESS", "1") == "1" else None
print()
for result in results:
    print(f"{result['name']:44s} p50 {result['p50']:.3f} ms")
if local is not None:
    print(f"{'DuckDB in-process (Python)':44s} p50 {local:.3f} ms")
print(f"load average at end: {os.getloadavg()}")
