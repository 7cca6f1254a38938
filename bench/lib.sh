# Shared by the bench/*/run.sh scripts (source it; it defines functions and sets nothing else).
#
#   bench_root                     the repository root
#   bench_ensure_built             compiles dist/ when stale (scripts/ensure-built.mjs) and sets ORRERY_ROOT, the
#                                  tree whose dist/ runs. With ORRERY_REF=<git ref> set (e.g. HEAD), the server
#                                  runs from a snapshot of that commit built in $TMPDIR/orrery-bench-build-<sha>
#                                  (node_modules linked; the native addon built too), so a benchmark can measure
#                                  committed code while the work tree is mid-edit; ORRERY_REF_SHA is then exported
#                                  for the JSON lines.
#                                  With ORRERY_ROOT=<another tree with dist/ built> set, that tree runs as is.
#   bench_base_and_this            with BASE_REF set, builds that commit too: BENCH_BASE_ARGS=(--base <tree>)
#   bench_venv                     creates or refreshes bench/.venv (pinned pyarrow, duckdb, ADBC); prints its python
#   bench_jdbc_classpath FILE      resolves the Arrow Flight SQL JDBC driver's classpath (test/interop/java's pom,
#                                  through mvn) into FILE; fails without java and mvn
#   orrery_start ROLE DATA_DIR [node flags...]
#                                  starts `node [flags] dist/src/orrery.cjs ROLE` with the bench keys (admin key
#                                  admin-key-0123) on free loopback ports; waits until it listens and sets
#                                  ORRERY_PID, ORRERY_FLIGHT_PORT (serve/all), ORRERY_HTTP_PORT, ORRERY_LOG.
#                                  Extra settings: export them before the call (ORRERY_DUCKDB_THREADS, ...).
#   orrery_stop                    SIGINT, waits up to 30 s (a --cpu-prof profile is written on exit), then SIGKILL
#   proc_tree_cpu PID              CPU seconds (user+system) of PID and all its live descendants
#                                  (the embedded Postgres server and its backends are descendants)
#   cpu_profile_top PROFILE_DIR [N] summarises the newest .cpuprofile in PROFILE_DIR (self time by function)
#   bench_alternate OUT BEFORE AFTER ROUNDS COMMAND...
#                                  runs COMMAND (a run.sh) ROUNDS times per commit, alternately (A = BEFORE, B = AFTER,
#                                  as ORRERY_REF), so both see the same load; each output in OUT/<round>-<side>.txt
#                                  and its last line (the JSON figures) in OUT/<round>-<side>.json

bench_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# duckdb is pinned to the release the server embeds (@duckdb/node-api 1.5.5-r.5) so both sides run the same engine.
BENCH_REQUIREMENTS="pyarrow==26.0.1 duckdb==1.5.5 adbc-driver-flightsql==1.13.0 adbc-driver-manager==1.13.0"

bench_ensure_built() {
  if [ -n "${ORRERY_REF:-}" ]; then
    local sha dir
    sha="$(git -C "$bench_root" rev-parse --short "$ORRERY_REF")"
    dir="${TMPDIR:-/tmp}/orrery-bench-build-$sha"
    if [ ! -f "$dir/dist/src/cli.js" ]; then
      echo "bench: building $ORRERY_REF ($sha) in $dir" >&2
      rm -rf "$dir" && mkdir -p "$dir"
      git -C "$bench_root" archive "$sha" | tar -x -C "$dir"
      ln -s "$bench_root/node_modules" "$dir/node_modules"
      (cd "$dir" && npx tsc -p tsconfig.json >&2) || { echo "bench: $sha does not compile" >&2; rm -rf "$dir"; return 1; }
    fi
    # The native Arrow exporter too: without it the snapshot's results take the JavaScript converter,
    # and a comparison with the work tree (which has it) measures that instead of the commit.
    if [ -f "$dir/scripts/build-native.mjs" ] && [ ! -f "$dir/dist/native/arrow_export.node" ]; then
      (cd "$dir" && node scripts/build-native.mjs >&2)
    fi
    chmod 755 "$dir"
    export ORRERY_ROOT="$dir" ORRERY_REF_SHA="$sha"
  elif [ -n "${ORRERY_ROOT:-}" ] && [ "$ORRERY_ROOT" != "$bench_root" ]; then
    # Another built tree (e.g. an experiment): used as it is.
    [ -f "$ORRERY_ROOT/dist/src/cli.js" ] || { echo "bench: no $ORRERY_ROOT/dist/src/cli.js" >&2; return 1; }
    export ORRERY_ROOT
    export ORRERY_REF_SHA="${ORRERY_REF_SHA:-$(basename "$ORRERY_ROOT")}"
  else
    export ORRERY_ROOT="$bench_root"
    unset ORRERY_REF_SHA
    (cd "$bench_root" && node scripts/ensure-built.mjs >&2) || {
      echo "bench: the work tree does not compile; ORRERY_REF=HEAD benchmarks the last commit instead" >&2
      return 1
    }
  fi
}

# bench_base_and_this: with BASE_REF=<git ref> set, builds that commit (as ORRERY_REF would) and sets
# BENCH_BASE_ARGS=(--base <its tree>) for a probe that runs a second server from it; then makes sure this
# tree is built (ORRERY_ROOT). BENCH_BASE_ARGS is empty without BASE_REF.
bench_base_and_this() {
  BENCH_BASE_ARGS=()
  if [ -n "${BASE_REF:-}" ]; then
    ORRERY_REF="$BASE_REF" bench_ensure_built
    BENCH_BASE_ARGS=(--base "$ORRERY_ROOT")
    unset ORRERY_REF ORRERY_ROOT
  fi
  bench_ensure_built
}

bench_venv() {
  local venv="$bench_root/bench/.venv"
  local stamp="$venv/.requirements"
  if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null || true)" != "$BENCH_REQUIREMENTS" ]; then
    echo "bench: creating $venv ($BENCH_REQUIREMENTS)" >&2
    "${PYTHON:-python3}" -m venv "$venv" >&2
    # shellcheck disable=SC2086
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check $BENCH_REQUIREMENTS >&2
    echo "$BENCH_REQUIREMENTS" > "$stamp"
  fi
  echo "$venv/bin/python"
}

bench_jdbc_classpath() {
  command -v mvn >/dev/null && command -v java >/dev/null || { echo "bench: needs java and mvn (the JDBC driver)" >&2; return 1; }
  (cd "$bench_root/test/interop/java" && mvn -B -q dependency:build-classpath -Dmdep.outputFile="$1" -Dmdep.includeScope=runtime) >&2
}

orrery_start() {
  local role="$1" data_dir="$2"
  shift 2
  mkdir -p "$data_dir"
  ORRERY_LOG="$data_dir/server.log"
  ORRERY_PID=""
  ORRERY_FLIGHT_PORT=""
  ORRERY_HTTP_PORT=""
  local keys='[{"name":"admin","key":"admin-key-0123"}]' admins='["admin"]'
  # Made before the server starts: the wait below stops when the log is missing, and the
  # background shell may not have opened it yet on a loaded machine.
  : >>"$ORRERY_LOG"
  # A reused data folder's log holds the ports of the servers started on it before: this one's lines only.
  local first_line
  first_line=$(($(wc -l <"$ORRERY_LOG") + 1))
  MICROMEGAS_API_KEYS="${BENCH_API_KEYS:-$keys}" MICROMEGAS_ADMINS="${BENCH_ADMINS:-$admins}" \
  ORRERY_FLIGHT_SQL_ADDR=127.0.0.1:0 ORRERY_HTTP_ADDR=127.0.0.1:0 ORRERY_DATA_DIR="$data_dir" \
    node "$@" "$(orrery_entry)" "$role" >>"$ORRERY_LOG" 2>&1 &
  ORRERY_PID=$!
  local want_flight=1
  [ "$role" = "maintain" ] && want_flight=0
  for _ in $(seq 1 300); do
    # A data folder removed under the server (something cleaning the temporary folder) must not end
    # a `set -e` caller here, before the server is stopped: it would be left running.
    [ -f "$ORRERY_LOG" ] || break
    ORRERY_HTTP_PORT=$(sed -n 's/.*HTTP (OTLP.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' <(tail -n +"$first_line" "$ORRERY_LOG") | head -1)
    ORRERY_FLIGHT_PORT=$(sed -n 's/.*Flight SQL listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' <(tail -n +"$first_line" "$ORRERY_LOG") | head -1)
    if [ -n "$ORRERY_HTTP_PORT" ] && { [ "$want_flight" = 0 ] || [ -n "$ORRERY_FLIGHT_PORT" ]; }; then
      return 0
    fi
    kill -0 "$ORRERY_PID" 2>/dev/null || break
    sleep 0.2
  done
  echo "bench: the server did not start:" >&2
  cat "$ORRERY_LOG" >&2 || true
  orrery_stop
  return 1
}

# orrery_entry: the built `orrery` command (dist/src/orrery.cjs, which sizes libuv's thread pool;
# dist/src/cli.js in trees built before it existed).
orrery_entry() {
  local root="${ORRERY_ROOT:-$bench_root}"
  if [ -f "$root/dist/src/orrery.cjs" ]; then echo "$root/dist/src/orrery.cjs"; else echo "$root/dist/src/cli.js"; fi
}

orrery_stop() {
  local pid="${ORRERY_PID:-}"
  [ -n "$pid" ] || return 0
  if kill -0 "$pid" 2>/dev/null; then
    kill -INT "$pid" 2>/dev/null || true
    for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
      echo "bench: server $pid did not stop within 30 s; killing it" >&2
      kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
  wait "$pid" 2>/dev/null || true
  ORRERY_PID=""
}

proc_tree_cpu() {
  local root_pid="${1:-}"
  [ -n "$root_pid" ] || { echo 0; return 0; }
  python3 - "$root_pid" <<'EOF'
import os, sys
root = int(sys.argv[1]); tick = os.sysconf("SC_CLK_TCK")
stats = {}
for name in os.listdir("/proc"):
    if name.isdigit():
        try:
            with open(f"/proc/{name}/stat") as f:
                rest = f.read().rsplit(")", 1)[1].split()
            stats[int(name)] = (int(rest[1]), int(rest[11]) + int(rest[12]), int(rest[11]) + int(rest[12]) + int(rest[13]) + int(rest[14]))
        except OSError:
            pass
keep, changed = {root}, True
while changed:
    changed = False
    for pid, (ppid, *_) in stats.items():
        if ppid in keep and pid not in keep:
            keep.add(pid); changed = True
print(f"{(stats[root][1] + sum(stats[p][2] for p in keep if p in stats and p != root)) / tick:.2f}" if root in stats else "0")
EOF
}

cpu_profile_top() {
  local dir="$1" top="${2:-25}"
  local latest
  latest="$(ls -t "$dir"/*.cpuprofile 2>/dev/null | head -1 || true)"
  if [ -z "$latest" ]; then
    echo "bench: no .cpuprofile in $dir (did the server exit cleanly?)" >&2
    return 0
  fi
  echo "bench: CPU profile $latest" >&2
  node "$bench_root/bench/flight-throughput/cpuprofile-top.mjs" "$latest" "$top" --callers | tee "${latest%.cpuprofile}.top.txt"
}

# bench_profile_flags DIR: prints the node flags for a CPU profile into DIR when PROFILE=1
# (clearing earlier profiles there), nothing otherwise. Use: mapfile -t node_flags < <(...)
bench_profile_flags() {
  local dir="$1"
  [ "${PROFILE:-0}" = "1" ] || return 0
  mkdir -p "$dir"
  rm -f "$dir"/*.cpuprofile "$dir"/*.top.txt
  printf '%s\n' --cpu-prof "--cpu-prof-dir=$dir"
}

# bench_data_dir NAME: a fresh temporary folder the embedded Postgres (run as the OS user
# postgres) can enter; with DATA_DIR=<folder> set, that folder (made if missing, never removed), so a
# benchmark whose script finds its table already there reuses it instead of generating it again.
bench_data_dir() {
  local dir
  if [ -n "${DATA_DIR:-}" ]; then
    dir="$DATA_DIR"
    mkdir -p "$dir"
  else
    dir="$(mktemp -d -t "orrery-bench-$1-XXXXXX")"
  fi
  chmod 755 "$dir"
  echo "$dir"
}

# bench_cleanup_data DIR: removes DIR unless KEEP_DATA=1 or it is DATA_DIR.
bench_cleanup_data() {
  if [ "${KEEP_DATA:-0}" = "1" ] || [ "$1" = "${DATA_DIR:-}" ]; then
    echo "bench: data kept in $1" >&2
  else
    rm -rf "$1"
  fi
}

bench_alternate() {
  local out="$1" before="$2" after="$3" rounds="$4" round side ref
  shift 4
  for round in $(seq 1 "$rounds"); do
    for side in A B; do
      ref="$before"
      [ "$side" = B ] && ref="$after"
      echo "bench: round $round, $side = $ref (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
      ORRERY_REF="$ref" "$@" >"$out/$round-$side.txt"
      tail -1 "$out/$round-$side.txt" >"$out/$round-$side.json"
    done
  done
}
