"""A view set's statement through the server against DuckDB alone, at the same moments (issue 10).

Run by duckdb-part.sh.

Each round sends the statement N times through pyarrow's Flight client (GetFlightInfo + DoGet, key `reader`) to a
server with phase-probe.mjs preloaded and takes the median of the DoGet's DuckDB part (the native exporter's run to the
first batch), then runs the same statement in DuckDB alone over the view the server made for the key, as the server
runs it (run-modes.mjs: a kept prepared statement streamed by the native exporter, also as DuckDB's Python package
runs it). Prints both, and their ratio, per round: DuckDB's part inside the server against the same work alone.
"""

from __future__ import annotations

import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time

import pyarrow.flight as flight

port, pid, out, calls, view, sql = int(sys.argv[1]), int(sys.argv[2]), *sys.argv[3:7]
n, rounds = int(os.environ.get("N", "400")), int(os.environ.get("ROUNDS", "4"))
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
from bench import flight_sql_descriptor  # noqa: E402

client = flight.FlightClient(f"grpc+tcp://127.0.0.1:{port}")
options = flight.FlightCallOptions(headers=[(b"authorization", b"Bearer reader-key-0123")])
descriptor = flight_sql_descriptor(sql)


def one() -> float:
    start = time.perf_counter()
    info = client.get_flight_info(descriptor, options)
    client.do_get(info.endpoints[0].ticket, options).read_all()
    return time.perf_counter() - start


def server_round() -> tuple[float, float]:
    """The statement's p50 and the median of the DoGet's DuckDB part, ms."""
    for _ in range(n // 4):
        one()
    os.kill(pid, signal.SIGUSR1)
    times = [one() for _ in range(n)]
    os.kill(pid, signal.SIGUSR2)  # the probe writes what it recorded to `out`
    waited = 0.0
    while not os.path.exists(out) and waited < 10:
        time.sleep(0.05)
        waited += 0.05
    time.sleep(0.2)
    with open(out) as recorded:
        rpcs = json.load(recorded)
    os.remove(out)
    part = [(e - s) / 1e6 for r in rpcs if r["path"] == "DoGet" for name, s, e in r["phases"]
            if name == "DuckDB run + Arrow export: first batch"]
    return statistics.median(times) * 1e3, statistics.median(part)


def alone_round() -> dict[str, float]:
    text = subprocess.run(["node", os.path.join(here, "run-modes.mjs"), calls, view, sql, str(n)],
                          capture_output=True, text=True, check=True).stdout
    return {m.group(1).strip(): float(m.group(2)) for m in re.finditer(r"^(.*?)\s+p50 ([\d.]+) ms$", text, re.M)}


print(f"{sql}\n{n} statements a round; load average at start {os.getloadavg()[0]:.1f}")
print(f"{'round':>5} {'server p50':>11} {'DoGet DuckDB part':>18} {'alone (exporter)':>17} "
      f"{'alone (as Python)':>18} {'part / alone':>13}")
ratios = []
for r in range(rounds):
    p50, part = server_round()
    alone = alone_round()
    exporter = alone["kept prepared, native exporter (server)"]
    ratios.append(part / exporter)
    print(f"{r + 1:>5} {p50:>9.3f} ms {part:>15.3f} ms {exporter:>14.3f} ms "
          f"{alone['text each time, read whole (as Python)']:>15.3f} ms {part / exporter:>12.2f}x")
print(f"median part / alone {statistics.median(ratios):.2f}x; load average at end {os.getloadavg()[0]:.1f}")
