"""Where ADBC's extra client time per statement goes (issue 10, PROFILE.md eighteenth pass); run by adbc-gc.sh.

adbc_driver_flightsql's Go library ends the release of every result stream it exported with runtime.GC(): a whole
forced garbage collection of the Go heap per statement (the DB-API releases the previous result first in
execute()), on the caller's thread, with the collector's workers woken on the other cores. This sends one
statement per client, the same two RPCs each way, as:

  pyarrow     pyarrow's Flight client sending what ADBC sends: CreatePreparedStatement once per connection, then
              per statement GetFlightInfo of CommandPreparedStatementQuery and DoGet of its ticket
  adbc        ADBC's DB-API as bench.py times it (cursor.execute + fetch_arrow_table)
  adbc-nogc   the same, in a process where the driver's call to runtime.GC at the end of its stream release is
              overwritten with a no-op (in memory, this process only; the Go runtime still collects as it
              always does when its heap grows): what ADBC would cost without the forced collection
  adbc-p1     ADBC's DB-API with GOMAXPROCS=1 in its environment (one Go scheduler slot: what a user can set);
              not run unless named in ADBC_GC_CLIENTS

Each (client, connections) cell runs in a fresh child process, alternately, ROUNDS times; one connection (p50, p99)
and CLIENTS connections on as many threads (statements/s), with the client process's and the server process's CPU
per statement and the Go collections per statement (GODEBUG=gctrace=1, "forced" ones apart).

    python adbc-gc.py PORT SERVER_PID        (adbc-gc.sh starts the server)
"""

from __future__ import annotations

import ctypes
import json
import mmap
import os
import statistics
import struct
import subprocess
import sys
import threading
import time

READER = ("reader", "reader-key-0123")
SQL = os.environ.get("SQL", "SELECT 1 AS one")
SECONDS = float(os.environ.get("SECONDS_PER_CELL", "4"))
WARMUP = int(os.environ.get("WARMUP", "300"))


def proc_cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def context_switches() -> int:
    """This process's context switches, voluntary and not, summed over its threads (Go's threads live on)."""
    total = 0
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/status") as f:
                total += sum(int(line.split()[1]) for line in f if "ctxt_switches:" in line)
        except OSError:
            pass
    return total


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(number: int, value: bytes) -> bytes:
    """A length-delimited protobuf field."""
    return varint(number << 3 | 2) + varint(len(value)) + value


def packed(name: str, message: bytes) -> bytes:
    """google.protobuf.Any of a Flight SQL message."""
    return field(1, f"type.googleapis.com/arrow.flight.protocol.sql.{name}".encode()) + field(2, message)


def first_bytes_field(message: bytes, number: int) -> bytes:
    i = 0
    while i < len(message):
        key, i = read_varint(message, i)
        if key & 7 != 2:
            raise ValueError("unexpected wire type")
        size, i = read_varint(message, i)
        if key >> 3 == number:
            return message[i:i + size]
        i += size
    raise ValueError(f"no field {number}")


def read_varint(data: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, i


def pyarrow_runner(port: int):
    import pyarrow.flight as flight

    client = flight.FlightClient(f"grpc+tcp://127.0.0.1:{port}")
    options = flight.FlightCallOptions(headers=[(b"authorization", f"Bearer {READER[1]}".encode())])
    request = packed("ActionCreatePreparedStatementRequest", field(1, SQL.encode()))
    result = next(iter(client.do_action(flight.Action("CreatePreparedStatement", request), options)))
    handle = first_bytes_field(first_bytes_field(result.body.to_pybytes(), 2), 1)
    descriptor = flight.FlightDescriptor.for_command(packed("CommandPreparedStatementQuery", field(1, handle)))

    def run():
        info = client.get_flight_info(descriptor, options)
        return client.do_get(info.endpoints[0].ticket, options).read_all()
    return run


def adbc_runner(port: int):
    import adbc_driver_flightsql.dbapi as flight_sql

    connection = flight_sql.connect(f"grpc://127.0.0.1:{port}", db_kwargs={"username": READER[0], "password": READER[1]},
                                    autocommit=True)
    cursor = connection.cursor()

    def run():
        cursor.execute(SQL)
        return cursor.fetch_arrow_table()
    return run


def skip_forced_gc() -> None:
    """Overwrites, in this process, the driver's `call runtime.GC` at the end of its exported stream release with a
    five-byte no-op. Found by symbol (the library keeps its symbol table) and checked: exactly one call to
    runtime.GC in that function, or nothing is changed."""
    import adbc_driver_flightsql

    library = os.path.join(os.path.dirname(adbc_driver_flightsql.__file__), "libadbc_driver_flightsql.so")
    symbols = {}
    for line in subprocess.run(["nm", library], capture_output=True, text=True, check=True).stdout.splitlines():
        parts = line.split()
        if len(parts) == 3:
            symbols[parts[2]] = int(parts[0], 16)
    release, collect = symbols["main.FlightSQLArrayStreamRelease"], symbols["runtime.GC"]
    base = None
    with open("/proc/self/maps") as maps:
        for line in maps:
            parts = line.split()
            if len(parts) >= 6 and os.path.realpath(parts[5]) == os.path.realpath(library) and int(parts[2], 16) == 0:
                base = int(parts[0].split("-")[0], 16)
                break
    if base is None:
        raise RuntimeError("the driver's library is not loaded")
    code = ctypes.string_at(base + release, 0x200)
    calls = [i for i in range(len(code) - 5)
             if code[i] == 0xE8 and release + i + 5 + struct.unpack("<i", code[i + 1:i + 5])[0] == collect]
    if len(calls) != 1:
        raise RuntimeError(f"expected one call to runtime.GC in the stream release, found {len(calls)}")
    address = base + release + calls[0]
    libc = ctypes.CDLL(None)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    page = address & ~(mmap.PAGESIZE - 1)
    if libc.mprotect(page, 2 * mmap.PAGESIZE, 7) != 0:
        raise OSError(ctypes.get_errno(), "mprotect")
    ctypes.memmove(address, b"\x0f\x1f\x44\x00\x00", 5)
    libc.mprotect(page, 2 * mmap.PAGESIZE, 5)


def cell(port: int, server_pid: int, client: str, connections: int) -> dict:
    """One measurement, in this (child) process."""
    if client == "adbc-nogc":
        adbc_runner(port)  # loads the driver's library
        skip_forced_gc()
    make = pyarrow_runner if client == "pyarrow" else adbc_runner
    runners = [make(port) for _ in range(connections)]
    for run in runners:
        for _ in range(WARMUP // connections + 1):
            run()
    times: list[list[float]] = [[] for _ in runners]
    barrier = threading.Barrier(connections + 1)

    def work(i: int) -> None:
        barrier.wait()
        end = time.perf_counter() + SECONDS
        while time.perf_counter() < end:
            t0 = time.perf_counter()
            runners[i]()
            times[i].append(time.perf_counter() - t0)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(connections)]
    for t in threads:
        t.start()
    print("TIMED", flush=True)  # the parent counts the Go collections from here
    client0, server0, switches0 = proc_cpu(os.getpid()), proc_cpu(server_pid), context_switches()
    barrier.wait()
    start = time.perf_counter()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    client_cpu, server_cpu = proc_cpu(os.getpid()) - client0, proc_cpu(server_pid) - server0
    switches = context_switches() - switches0
    every = sorted(t for ts in times for t in ts)
    n = len(every)
    return {"n": n, "p50_ms": every[n // 2] * 1e3, "p99_ms": every[min(n - 1, n * 99 // 100)] * 1e3,
            "per_s": n / elapsed, "client_cpu_ms": client_cpu * 1e3 / n, "server_cpu_ms": server_cpu * 1e3 / n,
            "client_switches": switches / n}


def run_cell(port: int, server_pid: int, client: str, connections: int) -> dict:
    child = subprocess.Popen([sys.executable, __file__, str(port), str(server_pid), client, str(connections)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "GODEBUG": "gctrace=1", **({"GOMAXPROCS": "1"} if client == "adbc-p1" else {})})
    out, err = child.communicate()
    if child.returncode != 0:
        raise RuntimeError(f"{client} x{connections} failed:\n{err[-2000:]}")
    result = json.loads(out.strip().splitlines()[-1])
    # gctrace lines go to stderr as they happen; those after the child printed TIMED are roughly the timed part's
    # (stderr and stdout are not ordered between them, so count per statement over the whole run instead).
    collections = [line for line in err.splitlines() if line.startswith("gc ")]
    total = result["n"] + WARMUP + connections
    result["go_gc_per_stmt"] = len(collections) / total
    result["forced_gc_per_stmt"] = sum("(forced)" in line for line in collections) / total
    return result


def main() -> None:
    if len(sys.argv) == 5:
        print(json.dumps(cell(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4]))))
        return
    port, server_pid = int(sys.argv[1]), int(sys.argv[2])
    rounds = int(os.environ.get("ROUNDS", "2"))
    many = int(os.environ.get("CLIENTS", "16"))
    clients = os.environ.get("ADBC_GC_CLIENTS", "pyarrow adbc adbc-nogc").split()
    load = [os.getloadavg()[0]]
    results: dict[tuple[str, int], list[dict]] = {}
    for r in range(rounds):
        for connections in (1, many):
            order = clients if r % 2 == 0 else list(reversed(clients))
            for client in order:
                results.setdefault((client, connections), []).append(run_cell(port, server_pid, client, connections))
        load.append(os.getloadavg()[0])

    def med(client: str, connections: int, key: str) -> float:
        return statistics.median(x[key] for x in results[(client, connections)])

    print(f"\nADBC's client per statement: {SQL!r}, key 'reader', {rounds} round(s) alternated, {SECONDS:g} s per cell; "
          f"medians of the rounds; 1-minute load {', '.join(f'{x:.1f}' for x in load)}")
    print(f"{'client':<10} {'p50 ms':>7} {'p99 ms':>7} {'cli CPU':>7} {'srv CPU':>7} {'Go GCs':>6} {'forced':>6} | "
          f"{'switches':>8} | {many} conns: {'stmt/s':>7} {'cli CPU':>7} {'srv CPU':>7} {'Go GCs':>6}")
    for client in clients:
        print(f"{client:<10} {med(client, 1, 'p50_ms'):7.3f} {med(client, 1, 'p99_ms'):7.3f} "
              f"{med(client, 1, 'client_cpu_ms'):7.3f} {med(client, 1, 'server_cpu_ms'):7.3f} "
              f"{med(client, 1, 'go_gc_per_stmt'):6.3f} {med(client, 1, 'forced_gc_per_stmt'):6.3f} "
              f"{med(client, 1, 'client_switches'):8.1f} | "
              f"{'':10}{med(client, many, 'per_s'):7.0f} {med(client, many, 'client_cpu_ms'):7.3f} "
              f"{med(client, many, 'server_cpu_ms'):7.3f} {med(client, many, 'go_gc_per_stmt'):6.3f}")
    if {"adbc", "adbc-nogc", "pyarrow"} <= set(clients):
        for other in ("adbc-nogc", "pyarrow"):
            print(f"adbc / {other}: p50 {med('adbc', 1, 'p50_ms') / med(other, 1, 'p50_ms'):.2f}x, client CPU "
                  f"{med('adbc', 1, 'client_cpu_ms') / med(other, 1, 'client_cpu_ms'):.2f}x, server CPU "
                  f"{med('adbc', 1, 'server_cpu_ms') / med(other, 1, 'server_cpu_ms'):.2f}x; {many} conns rate "
                  f"{med('adbc', many, 'per_s') / med(other, many, 'per_s'):.2f}x")
    print("times in ms; CPU = ms of the client process's / the server process's CPU per statement (all threads); "
          "Go GCs = the driver's Go collections per statement (forced: runtime.GC() calls); switches = the client "
          "process's context switches per statement")
    print("ADBC_GC " + json.dumps({f"{c}_{k}": {key: round(med(c, k, key), 4) for key in results[(c, k)][0]}
                                   for c, k in results} | {"load": load}))


if __name__ == "__main__":
    main()
