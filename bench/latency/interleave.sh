#!/usr/bin/env bash
# Two commits' servers side by side, one statement to each in turn (A, B, B, A, A, B, ...), so both see the
# machine's load at the same moments: on a shared, loaded machine this resolves differences in latency that
# alternating whole runs (compare-cpu.sh) cannot. Each statement is sent as ADBC and arrow-go send it
# (GetFlightInfo, then DoGet of its ticket) by pyarrow's Flight client, as a key that is not an admin.
# Prints per side the p50 and p99 of a statement, the server process's CPU per statement, and B / A.
#
#   bash bench/latency/interleave.sh <ref A> <ref B>
#   bash bench/latency/interleave.sh /tmp/base .          # a tree with dist/ built runs as it is (the work tree: .)
#   N=4000 SQL="SELECT i % 1000 AS k, count(*) AS n FROM range(100000) t(i) GROUP BY 1" bash bench/latency/interleave.sh origin/main HEAD
#   NODEFLAGS_B="--max-semi-space-size=64" bash bench/latency/interleave.sh HEAD HEAD   # node flags of one side
#   bash bench/latency/interleave.sh grpc-floor HEAD      # against grpc-floor.mjs: two grpc-js calls and nothing else
#   bash bench/latency/interleave.sh engine-floor HEAD    # the same calls through Orrery's DuckDB engine alone
#   bash bench/latency/interleave.sh engine-floor:1 engine-floor   # that engine with 1 DuckDB thread against 2
#   DUCKDB_THREADS_A=1 bash bench/latency/interleave.sh HEAD HEAD  # ORRERY_DUCKDB_THREADS of a side (default 2)
#   ENV_B="MALLOC_ARENA_MAX=2" bash bench/latency/interleave.sh . .  # NAME=value words in one side's environment
#   DATA=1 SQL=log_stats_day bash bench/latency/interleave.sh origin/main .   # bench.py's data set and statements
#   CLIENT=jdbc bash bench/latency/interleave.sh origin/main .   # through the Flight SQL JDBC driver instead
#                                                  # (java/InterleaveClient.java: executeQuery, WARMUP default 3000)
#
# DATA=1 ingests bench.py's data set into each server first (RECORDS log records, default 200000, and POINTS
# metric points, default 20000, materialized as bench.py does); SQL may then name one of bench.py's statements
# (select1, groupby100k, logs_5min, log_stats_day, measures_p95_hour).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
source "$here/../lib.sh"
[ $# -eq 2 ] || { echo "usage: interleave.sh <ref A> <ref B>" >&2; exit 2; }
python="$(bench_venv)"
pids=() ports=() http_ports=() dirs=()
cleanup() {
  for pid in "${pids[@]}"; do ORRERY_PID="$pid" orrery_stop; done
  for d in "${dirs[@]}"; do rm -rf "$d"; done
}
trap cleanup EXIT
# orrery_start with the NAME=value words of $1 in the environment of that server alone.
env_orrery_start() {
  local words="$1" w name before=()
  shift
  for w in $words; do
    name="${w%%=*}"
    [ -n "${!name+x}" ] && before+=("$name=${!name}")
    export "${w?}"
  done
  orrery_start "$@"
  for w in $words; do unset "${w%%=*}"; done
  for w in "${before[@]}"; do export "${w?}"; done
}
flags=("${NODEFLAGS_A:-}" "${NODEFLAGS_B:-}")
envs=("${ENV_A:-}" "${ENV_B:-}")
duckdb_threads=("${DUCKDB_THREADS_A:-2}" "${DUCKDB_THREADS_B:-2}")
for side in 0 1; do
  ref="${*:side+1:1}"
  d="$(bench_data_dir inter)"
  dirs+=("$d")
  if [[ "$ref" == grpc-floor || "$ref" == engine-floor* ]]; then
    bench_ensure_built
    # engine-floor:<n> runs its DuckDB with n threads (default 2, as the benches run the server).
    threads=2
    [[ "$ref" == *:* ]] && threads="${ref#*:}"
    # shellcheck disable=SC2086
    UV_THREADPOOL_SIZE=20 node ${flags[$side]} "$here/grpc-floor.mjs" "$ORRERY_ROOT" "${ref%%-floor*}" "$threads" \
      >"$d/floor.log" 2>&1 &
    pids+=("$!")
    for _ in $(seq 1 100); do grep -q listening "$d/floor.log" && break; sleep 0.1; done
    ports+=("$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$d/floor.log")") http_ports+=(0)
    continue
  fi
  # A directory (a tree with dist/ built) runs as it is; anything else is a git ref, built first.
  if [ -d "$ref" ]; then ORRERY_ROOT="$(cd "$ref" && pwd)" bench_ensure_built; else ORRERY_REF="$ref" bench_ensure_built; fi
  # shellcheck disable=SC2086
  BENCH_API_KEYS='[{"name":"admin","key":"admin-key-0123"},{"name":"reader","key":"reader-key-0123"}]' ORRERY_DUCKDB_THREADS="${duckdb_threads[$side]}" \
    env_orrery_start "${envs[$side]}" serve "$d/o" ${flags[$side]}
  pids+=("$ORRERY_PID") ports+=("$ORRERY_FLIGHT_PORT") http_ports+=("$ORRERY_HTTP_PORT")
  unset ORRERY_ROOT ORRERY_REF_SHA
done
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ "${CLIENT:-}" = jdbc ]; then
  [ "${DATA:-0}" = 1 ] && { echo "interleave.sh: CLIENT=jdbc sends SQL as given (no DATA=1)" >&2; exit 2; }
  cp_file="${TMPDIR:-/tmp}/orrery-bench-latency-jdbc.classpath"
  bench_jdbc_classpath "$cp_file"
  # Compiled with LatencyClient.java, whose way of running a statement it shares.
  classes="$(mktemp -d)" && dirs+=("$classes")
  javac -d "$classes" "$here/java/InterleaveClient.java" "$here/java/LatencyClient.java"
  java --add-opens=java.base/java.nio=ALL-UNNAMED -Duser.timezone=UTC -cp "$classes:$(cat "$cp_file")" InterleaveClient \
    reader reader-key-0123 "${SQL:-SELECT 1 AS one}" "${N:-3000}" "${WARMUP:-3000}" "${ports[@]}" "${pids[@]}" "$1" "$2" 2>/dev/null
  echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
  exit
fi
HERE="$here" HTTP_PORTS="${http_ports[*]}" DATA="${DATA:-0}" RECORDS="${RECORDS:-200000}" POINTS="${POINTS:-20000}" \
"$python" - "$1" "$2" "${ports[@]}" "${pids[@]}" "${SQL:-SELECT 1 AS one}" "${N:-3000}" "${WARMUP:-1000}" <<'PY'
import os, statistics, sys, time, pyarrow.flight as fl
refs, ports, pids, sql, n, warmup = sys.argv[1:3], sys.argv[3:5], [int(p) for p in sys.argv[5:7]], sys.argv[7], int(sys.argv[8]), int(sys.argv[9])
if os.environ["DATA"] == "1":
    sys.path.insert(0, os.environ["HERE"])
    import bench
    processes = [bench.load_data(int(h), int(f), p, int(os.environ["RECORDS"]), int(os.environ["POINTS"]))["process"]
                 for f, h, p in zip(ports, os.environ["HTTP_PORTS"].split(), pids)]
    if "{process}" in bench.STATEMENTS.get(sql, "") and processes[0] != processes[1]:
        raise SystemExit(f"the sides' busiest processes differ ({processes}): {sql}")
    sql = bench.statement(sql, processes[0])
def varint(v):
    out = bytearray()
    while True:
        b, v = v & 0x7F, v >> 7
        out.append(b | (0x80 if v else 0))
        if not v: return bytes(out)
query = sql.encode()
inner = b"\x0a" + varint(len(query)) + query
url = b"type.googleapis.com/arrow.flight.protocol.sql.CommandStatementQuery"
descriptor = fl.FlightDescriptor.for_command(b"\x0a" + varint(len(url)) + url + b"\x12" + varint(len(inner)) + inner)
options = fl.FlightCallOptions(headers=[(b"authorization", b"Bearer reader-key-0123")])
clients = [fl.FlightClient(f"grpc+tcp://127.0.0.1:{p}") for p in ports]
def one(side):
    info = clients[side].get_flight_info(descriptor, options)
    return clients[side].do_get(info.endpoints[0].ticket, options).read_all().num_rows
def cpu(pid):
    st = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(st[11]) + int(st[12])) / os.sysconf("SC_CLK_TCK")
for i in range(warmup):
    one(i % 2)
times = ([], [])
start = [cpu(p) for p in pids]
for i in range(n):
    # ABBA order: neither side always follows the other.
    for side in ((0, 1) if i % 2 == 0 else (1, 0)):
        t0 = time.perf_counter()
        one(side)
        times[side].append((time.perf_counter() - t0) * 1000)
used = [(cpu(p) - s) * 1000 / n for p, s in zip(pids, start)]
def p(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]
print(f"{n} statements to each side, interleaved: {sql}")
print(f"  {'':22} {'p50':>9} {'p99':>9} {'server CPU':>11}")
for side in (0, 1):
    print(f"  {refs[side][:22]:22} {p(times[side], 50):6.3f} ms {p(times[side], 99):6.3f} ms {used[side]:8.3f} ms")
print(f"  {'ratio B / A':22} {p(times[1], 50) / p(times[0], 50):9.2f} {p(times[1], 99) / p(times[0], 99):9.2f} {used[1] / used[0]:11.2f}")
PY
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
