#!/usr/bin/env bash
# Where a Java reader's CPU goes on bench/flight-throughput's computed result (issue 10 item 3): starts `orrery serve`
# on its default settings and runs jvm-threads.py against it (CPU per run of each JVM thread; with JFR=1 the
# reader thread's hottest frames).
#
#   bash bench/flight-throughput/jvm-threads.sh                  # the JDBC driver, typed getters
#   READER=flight JFR=1 bash bench/flight-throughput/jvm-threads.sh
#
# Environment: READER (getters | rows | flight; default getters), ROWS (default 10000000), WARMUP (2), REPEATS (3),
# JFR=1, ORRERY_REF / ORRERY_ROOT (which build serves, bench/lib.sh).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
source "$here/../lib.sh"
bench_ensure_built
python="$(bench_venv)"
cp_file="${TMPDIR:-/tmp}/orrery-bench-throughput-jdbc.classpath"
bench_jdbc_classpath "$cp_file"
d="$(bench_data_dir jvm-threads)"
trap 'orrery_stop; rm -rf "$d"' EXIT
orrery_start serve "$d/o"
jfr=()
[ "${JFR:-0}" = "1" ] && jfr=(--jfr)
"$python" "$here/jvm-threads.py" --port "$ORRERY_FLIGHT_PORT" --classpath "$(cat "$cp_file")" --reader "${READER:-getters}" \
  --rows "${ROWS:-10000000}" --warmup "${WARMUP:-2}" --repeats "${REPEATS:-3}" "${jfr[@]}"
