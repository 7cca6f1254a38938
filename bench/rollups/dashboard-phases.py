"""One server's time and CPU per statement, and its phases, for the rollup dashboard (issues 10 and 17).

Run by dashboard-ab.sh against a server with bench/latency/phase-probe.mjs preloaded. Sends each statement (SELECT 1,
the dashboard on the rollup, a series read that finds no row) N times through pyarrow's Flight client (GetFlightInfo +
DoGet, key admin) after N/3 untimed rounds of all three, reads the server process's CPU over each statement's N runs
(/proc/<pid>/stat) and the phases phase-probe.mjs recorded. Prints one JSON line: per statement, p50 ms, server CPU ms
per statement and the median of each phase.
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import sys
import time

import pyarrow.flight as flight

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "latency"))
from bench import flight_sql_descriptor  # noqa: E402

port, pid, out, n = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
since = "time_bucket(INTERVAL 1 HOUR, now()::TIMESTAMP - INTERVAL 7 DAY)"
statements = {
    "select1": "SELECT 1",
    "dashboard": "SELECT bucket, host, cpu_sum / n AS cpu_avg, cpu_max FROM metrics_hourly "
    f"WHERE bucket >= {since} ORDER BY bucket, host",
    "empty_series": "SELECT count(*) FROM metrics WHERE false",
}
client = flight.FlightClient(f"grpc+tcp://127.0.0.1:{port}")
options = flight.FlightCallOptions(headers=[(b"authorization", b"Bearer admin-key-0123")])


def cpu_seconds() -> float:
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def one(descriptor: flight.FlightDescriptor) -> float:
    start = time.perf_counter()
    info = client.get_flight_info(descriptor, options)
    client.do_get(info.endpoints[0].ticket, options).read_all()
    return time.perf_counter() - start


descriptors = {name: flight_sql_descriptor(sql) for name, sql in statements.items()}
for _ in range(max(5, n // 3)):
    for d in descriptors.values():
        one(d)
report = {}
for name, d in descriptors.items():
    os.kill(pid, signal.SIGUSR1)  # phase-probe.mjs: forget the warm-up
    time.sleep(0.2)
    cpu0 = cpu_seconds()
    times = [one(d) for _ in range(n)]
    cpu = (cpu_seconds() - cpu0) / n
    os.kill(pid, signal.SIGUSR2)  # phase-probe.mjs: write what it recorded
    time.sleep(0.5)
    phases: dict[str, list[float]] = {}
    for rpc in json.load(open(out)):
        for phase, start, end in rpc["phases"]:
            phases.setdefault(f"{rpc['path']}: {phase}", []).append((end - start) / 1e6)
    report[name] = {
        "p50_ms": statistics.median(times) * 1000,
        "server_cpu_ms": cpu * 1000,
        "phases": {k: statistics.median(v) for k, v in phases.items()},
    }
print(json.dumps(report))
