#!/usr/bin/env bash
# Two commits' materialization of log_entries, alternately in one run (A B A B ...), so that both see the same
# load on a shared machine: each round runs run.sh --server-only once per commit (a fresh server, RECORDS log
# records ingested, then materialize_partitions and REPEATS - 1 regenerate_partitions over the whole range as one
# partition) and keeps, per materialization, its seconds, the server's Node CPU-seconds (the median of its runs) and the peak RSS of the
# server's Node process (VmHWM, reset before each). The end prints every run, each side's medians and B/A.
#
#   BEFORE=origin/main AFTER=HEAD bash bench/materialization/compare.sh
#   ROUNDS=2 RECORDS=2000000 REPEATS=2 BEFORE=<sha> AFTER=<sha> bash bench/materialization/compare.sh
#
# Environment: BEFORE, AFTER (git refs, default origin/main and HEAD; see ORRERY_REF in bench/lib.sh), ROUNDS
# (default 2), RECORDS (default 2000000), REPEATS (default 2); settings exported before the call reach both
# servers (ORRERY_MAINTENANCE_MEMORY_LIMIT, ...).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
source "$here/../lib.sh"
out="$(mktemp -d "${TMPDIR:-/tmp}/orrery-materialization-compare-XXXXXX")"
trap 'rm -rf "$out"' EXIT
bench_alternate "$out" "${BEFORE:-origin/main}" "${AFTER:-HEAD}" "${ROUNDS:-2}" \
  env PROFILE=0 RECORDS="${RECORDS:-2000000}" REPEATS="${REPEATS:-2}" bash "$here/run.sh" --server-only

PYTHONPATH="$here/.." python3 - "$out" "${BEFORE:-origin/main}" "${AFTER:-HEAD}" <<'PY'
import statistics
from alternated import alternated_runs, compared
out, before, after = compared()
print(f"{'round':>5} {'side':>4} {'sha':>9} {'records':>10} {'seconds':>8} {'k rows/s':>9} {'node cpu s':>10} {'peak RSS MiB':>12} {'load':>5} {'rows equal':>10}")
sides = {"A": [], "B": []}
for round_, side, d in alternated_runs(out):
    r = d["results"]["orrery"]
    for seconds, rss in zip(r["runs_s"], d["peak_rss"]["materialize_mib"]):
        sides[side].append((seconds, rss, d["records"] / seconds))
        print(f"{round_:>5} {side:>4} {d.get('commit', '')[:9]:>9} {d['records']:>10,} {seconds:>8.2f} {d['records'] / seconds / 1000:>9.0f} "
              f"{r.get('server_node_cpu_s', 0):>10.2f} {rss:>12,} {d['loadavg_1m']:>5} {str(d['checks']['ok']):>10}")
med = {s: {"s": statistics.median(x[0] for x in v), "rss": statistics.median(x[1] for x in v), "rate": statistics.median(x[2] for x in v)}
       for s, v in sides.items() if v}
for s, m in med.items():
    print(f"median {s}: {m['s']:.2f} s, {m['rate'] / 1000:.0f} k rows/s, peak RSS {m['rss']:,.0f} MiB (max {max(x[1] for x in sides[s]):,})")
if len(med) == 2:
    print(f"B/A: rows/s {med['B']['rate'] / med['A']['rate']:.2f}x, peak RSS {med['B']['rss'] / med['A']['rss']:.2f}x")
PY
