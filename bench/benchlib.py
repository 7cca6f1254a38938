"""Helpers shared by the bench/*/ Python drivers: a Flight SQL client (pyarrow, raw DoGet with the SQL
text as the ticket, as bench/flight-throughput does), admin procedures, CPU readings from /proc,
load-generator runs and the git state stamped into every JSON line."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import subprocess
import sys
import time

import pyarrow as pa
import pyarrow.flight as flight

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOADGEN = os.path.join(ROOT, "bench", "ingestion", "loadgen.mjs")


def log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class Orrery:
    """A Flight SQL connection to a running Orrery as one key (the bench admin key by default)."""

    def __init__(self, port: int, key: str = "admin-key-0123", host: str = "127.0.0.1"):
        self.client = flight.FlightClient(f"grpc+tcp://{host}:{port}")
        self.options = flight.FlightCallOptions(headers=[(b"authorization", f"Bearer {key}".encode())])

    def query(self, sql: str) -> pa.Table:
        return self.client.do_get(flight.Ticket(sql.encode("utf-8")), self.options).read_all()

    def timed_query(self, sql: str) -> tuple[pa.Table, float]:
        start = time.perf_counter()
        table = self.query(sql)
        return table, time.perf_counter() - start

    def procedure(self, sql: str) -> tuple[list[str], float]:
        """Runs an admin procedure (SELECT * FROM f(...)); returns its progress messages and seconds taken."""
        start = time.perf_counter()
        messages: list[str] = []
        reader = self.client.do_get(flight.Ticket(sql.encode("utf-8")), self.options)
        while True:
            try:
                chunk = reader.read_chunk().data
            except StopIteration:
                break
            if chunk is not None and chunk.num_rows:
                messages.extend(str(m) for m in chunk.column("msg").to_pylist())
        return messages, time.perf_counter() - start

    def materialize(self, view: str, begin: dt.datetime, end: dt.datetime) -> tuple[list[str], float]:
        """materialize_partitions over [begin, end) as one partition (delta = the whole width)."""
        width = int((end - begin).total_seconds())
        sql = f"SELECT * FROM materialize_partitions('{view}', '{rfc3339(begin)}', '{rfc3339(end)}', {width})"
        messages, seconds = self.procedure(sql)
        if not messages or not any(m.endswith(": created") or m.endswith(": up to date") for m in messages):
            raise SystemExit(f"materialize_partitions('{view}') did not create a partition: {messages}")
        return messages, seconds

    def close(self) -> None:
        self.client.close()


def rfc3339(t: dt.datetime) -> str:
    return t.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def insert_range(runs: list[dict], margin_s: int = 2) -> tuple[dt.datetime, dt.datetime]:
    """Whole seconds around the wall-clock interval of load-generator runs (insert_time is the server clock)."""
    start_ms = min(r["wall_start_ms"] for r in runs) - margin_s * 1000
    end_ms = max(r["wall_end_ms"] for r in runs) + margin_s * 1000
    begin = dt.datetime.fromtimestamp(start_ms // 1000, dt.timezone.utc)
    end = dt.datetime.fromtimestamp(-(-end_ms // 1000), dt.timezone.utc)
    if (end - begin).total_seconds() > 3600:
        raise SystemExit(f"the runs span {(end - begin)}: more than the 1 h a single log_entries/blocks partition may cover")
    return begin, end


def proc_cpu(pid: int | None, tree: bool = False) -> float | None:
    """CPU seconds (user + system) of a process, or of it and every live descendant."""
    if not pid:
        return None
    tick = os.sysconf("SC_CLK_TCK")
    stats: dict[int, tuple[int, int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                rest = f.read().rsplit(")", 1)[1].split()
            # own CPU, and own + reaped children's (a Postgres backend that exited is counted in the postmaster's)
            stats[int(name)] = (int(rest[1]), int(rest[11]) + int(rest[12]), int(rest[11]) + int(rest[12]) + int(rest[13]) + int(rest[14]))
        except OSError:
            pass
    if pid not in stats:
        return None
    if not tree:
        return stats[pid][1] / tick
    keep = {pid}
    if tree:
        changed = True
        while changed:
            changed = False
            for p, (ppid, *_) in stats.items():
                if ppid in keep and p not in keep:
                    keep.add(p)
                    changed = True
    # the root's own CPU (its reaped children would be the same processes counted below while they lived)
    return (stats[pid][1] + sum(stats[p][2] for p in keep if p in stats and p != pid)) / tick


def main_thread_cpu(pid: int | None) -> float | None:
    """CPU seconds (user + system) of a process's main thread (its task whose id is the pid: Node's event loop)."""
    if not pid:
        return None
    try:
        with open(f"/proc/{pid}/task/{pid}/stat") as f:
            rest = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(rest[11]) + int(rest[12])) / os.sysconf("SC_CLK_TCK")


class CpuMeter:
    """Server CPU over an interval: the Node process alone, its main thread, and its whole tree (Node + embedded
    Postgres)."""

    def __init__(self, pid: int | None):
        self.pid = pid
        self.node0 = proc_cpu(pid)
        self.tree0 = proc_cpu(pid, tree=True)
        self.main0 = main_thread_cpu(pid)

    def read(self) -> dict:
        node, tree, main = proc_cpu(self.pid), proc_cpu(self.pid, tree=True), main_thread_cpu(self.pid)
        if node is None or self.node0 is None or tree is None or self.tree0 is None:
            return {}
        return {"server_node_cpu_s": round(node - self.node0, 2), "server_postgres_cpu_s": round((tree - self.tree0) - (node - self.node0), 2),
                **({"server_main_thread_cpu_s": round(main - self.main0, 2)} if main is not None and self.main0 is not None else {})}


def run_loadgen(http_port: int, connections: int, duration_s: float, records: int = 0, warmup_s: float = 2, extra: list[str] | None = None) -> dict:
    cmd = ["node", LOADGEN, "--port", str(http_port), "--connections", str(connections), "--duration", str(duration_s),
           "--records", str(records), "--warmup", str(warmup_s), *(extra or [])]
    out = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def ingest(http_port: int, records: int, connections: int = 8, server_pid: int | None = None, gzip: bool = False) -> dict:
    """Sends `records` log records (batches of 1 000; gzipped bodies with gzip) and checks every request was acknowledged."""
    log(f"ingesting {records:,} log records over {connections} connections{' (gzip bodies)' if gzip else ''}")
    cpu = CpuMeter(server_pid)
    run = run_loadgen(http_port, connections, duration_s=3000, records=records, warmup_s=0, extra=["--gzip", "1"] if gzip else None)
    run.update(cpu.read())
    if run["records_sent"] != records or run["requests_failed"]:
        raise SystemExit(f"ingestion: {run['records_sent']:,} of {records:,} records acknowledged, {run['requests_failed']} failed: {run['failures']}")
    log(f"  {records:,} records in {run['elapsed_s']:.1f} s ({run['records_per_s'] / 1000:.1f} k records/s)")
    return run


def peak_rss(pid: int) -> dict:
    """Peak resident memory (VmHWM, bytes) of the process, and the sum over its descendants (the embedded
    Postgres: shared buffers counted once per process, so an upper bound)."""
    def hwm(p: int) -> int:
        try:
            with open(f"/proc/{p}/status") as f:
                return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))
        except (OSError, StopIteration):
            return 0
    parents: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    parents[int(name)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                pass
    tree, changed = {pid}, True
    while changed:
        changed = False
        for p, ppid in parents.items():
            if ppid in tree and p not in tree:
                tree.add(p)
                changed = True
    return {"node_peak_rss_bytes": hwm(pid), "children_peak_rss_bytes": sum(hwm(p) for p in tree if p != pid)}


def reset_peak_rss(pid: int) -> bool:
    """Resets the process's VmHWM to its current resident memory (Linux: 5 into /proc/PID/clear_refs), so that a
    later peak_rss is the peak of what ran in between; False when the kernel refuses."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False



def git_state() -> dict:
    if os.environ.get("ORRERY_REF_SHA"):  # run.sh ran a snapshot of a commit (ORRERY_REF)
        return {"commit": os.environ["ORRERY_REF_SHA"], "src_dirty": False, "src_diff_sha1": None, "snapshot": True}

    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=10).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""

    diff = git("diff", "HEAD", "--", "src")
    untracked = git("ls-files", "--others", "--exclude-standard", "--", "src")
    return {
        "commit": git("rev-parse", "--short", "HEAD"),
        "src_dirty": bool(diff or untracked),
        "src_diff_sha1": hashlib.sha1((diff + untracked).encode()).hexdigest()[:12] if diff or untracked else None,
    }


def machine_state() -> dict:
    return {"cpus": os.cpu_count(), "loadavg_1m": round(os.getloadavg()[0], 2)}
