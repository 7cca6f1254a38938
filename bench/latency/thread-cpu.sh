#!/usr/bin/env bash
# Server CPU per statement, by thread: starts `orrery serve` (fresh data folder), sends N (default 300)
# raw pyarrow DoGets of SQL (default `SELECT 1`) as a key that is not an admin, after WARMUP (default
# 20; V8 is still compiling the hot path for the first thousand or so) warm-up ones,
# and prints each server thread's CPU per statement (from /proc/<pid>/task/*/stat; DuckDB's and
# libuv's threads are all named "node"), then one line with the whole process's CPU per statement
# (/proc/<pid>/stat, which also counts threads that have exited meanwhile), the main thread's and
# the wall time per statement (bench/latency/compare-cpu.sh alternates two commits on it). PERF=1
# also records `perf record -g` of the server into /tmp/latency-perf.data
# (`perf report -i /tmp/latency-perf.data --no-children --sort dso,sym`).
#
#   bash bench/latency/thread-cpu.sh
#   CLIENT=adbc bash bench/latency/thread-cpu.sh     # ADBC statements (GetFlightInfo + DoGet) instead
#   CLIENT=go bash bench/latency/thread-cpu.sh       # arrow-go's client (bench/latency/go), one connection, the
#                                                    # same two RPCs; "wall" is then its median statement
#   CLIENT=go GO_ARGS="-prepared -pause 4ms" ...     # its statements prepared once (ADBC's GetFlightInfo of
#                                                    # CommandPreparedStatementQuery), 4 ms apart (ADBC's pace)
#   SQL="SELECT count(*) FROM log_entries" N=500 bash bench/latency/thread-cpu.sh
#   NODEFLAGS="--cpu-prof --cpu-prof-dir=/tmp/prof" bash bench/latency/thread-cpu.sh
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
source "$here/../lib.sh"
bench_ensure_built
python="$(bench_venv)"
go_bin=""
if [ "${CLIENT:-}" = "go" ]; then go_bin="$(bash "$here/go-client.sh")"; fi
d="$(bench_data_dir thr)"
BENCH_API_KEYS='[{"name":"admin","key":"admin-key-0123"},{"name":"reader","key":"reader-key-0123"}]' ORRERY_DUCKDB_THREADS=2 orrery_start serve "$d/o" ${NODEFLAGS:-}
"$python" - "$ORRERY_FLIGHT_PORT" "$ORRERY_PID" "${SQL:-SELECT 1}" "$go_bin" <<'PY'
import sys, os, time, collections, json, subprocess, pyarrow.flight as fl
port, pid, sql, go_bin = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
def threads():
    out = collections.Counter()
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            name = open(f"/proc/{pid}/task/{t}/comm").read().strip() + ("(main)" if int(t) == pid else "") + "#" + t
            st = open(f"/proc/{pid}/task/{t}/stat").read().rsplit(")",1)[1].split()
            out[name] += int(st[11]) + int(st[12])
        except OSError: pass
    return out
c = fl.FlightClient(f"grpc+tcp://127.0.0.1:{port}")
o = fl.FlightCallOptions(headers=[(b"authorization", b"Bearer reader-key-0123")])
go_p50 = None
if os.environ.get("CLIENT") == "go":
    # The Go program times itself (a statement count is not one of its settings): one connection for
    # SECONDS_TIMED (default 3) per phase, both phases of one client; N is then how many statements it sent.
    seconds = os.environ.get("SECONDS_TIMED", "3")
    go = [go_bin, "-addr", f"127.0.0.1:{port}", "-user", "reader", "-key", "reader-key-0123", "-sql", sql, "-clients", "1"] + os.environ.get("GO_ARGS", "").split()
    subprocess.run(go + ["-seconds", "1", "-warmup", os.environ.get("WARMUP", "20")], check=True, capture_output=True)
    def run_go():
        out = subprocess.run(go + ["-seconds", seconds, "-warmup", "0"], check=True, capture_output=True, text=True).stdout
        phases = [json.loads(l) for l in out.splitlines() if l.startswith("{") and "phase" in l and "mark" not in l]
        return sum(p["n"] for p in phases), phases[0]["p50_ms"]
elif os.environ.get("CLIENT") == "adbc":
    import adbc_driver_flightsql.dbapi as flight_sql
    cur = flight_sql.connect(f"grpc://127.0.0.1:{port}", db_kwargs={"username": "reader", "password": "reader-key-0123"}, autocommit=True).cursor()
    def one():
        cur.execute(sql); cur.fetch_arrow_table()
else:
    def one():
        c.do_get(fl.Ticket(sql.encode()), o).read_all()
if not go_bin:
    for _ in range(int(os.environ.get("WARMUP", "20"))): one()
import subprocess
perf = subprocess.Popen(["perf","record","-g","-F","999","-p",str(pid),"-o","/tmp/latency-perf.data"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) if os.environ.get("PERF") else None
time.sleep(0.5)
def process():
    st = open(f"/proc/{pid}/stat").read().rsplit(")",1)[1].split()
    return int(st[11]) + int(st[12])  # utime + stime: every thread's, exited ones' too
a = threads(); pa = process(); t0 = time.perf_counter(); n = int(os.environ.get("N", "300"))
if go_bin: n, go_p50 = run_go()
else:
    for _ in range(n): one()
el = time.perf_counter() - t0; b = threads(); pb = process()
if perf:
    perf.send_signal(2); perf.wait()
tick = os.sysconf("SC_CLK_TCK")
print(f"{n} statements ({os.environ.get('CLIENT') or 'raw DoGet'}) in {el:.2f}s ({el/n*1000:.2f} ms each)")
main = next((b[k]-a[k] for k in b if "(main)" in k), 0)
wall = go_p50 if go_p50 is not None else el/n*1000
print(f"per statement: process {(pb-pa)/tick*1000/n:.3f} ms CPU, main thread {main/tick*1000/n:.3f} ms, wall {wall:.3f} ms")
for k in sorted(set(a)|set(b), key=lambda k: -(b[k]-a[k])):
    if b[k]-a[k]: print(f"  {k:20s} {(b[k]-a[k])/tick*1000/n:.2f} ms CPU per statement")
PY
orrery_stop
rm -rf "$d"
