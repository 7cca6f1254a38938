#!/usr/bin/env bash
# Two commits' OTLP/HTTP log ingestion, alternately in one run (A B A B ...), so that both see the same load
# on a shared machine: each round runs run.sh once per commit (a fresh server, CONNECTIONS senders for
# DURATION s each, stored count checked) and keeps its records/s, p50, p99 and records per CPU-second of the
# server's Node process (the steadier figure when other work shares the cores); the end prints every round,
# the median of each commit per connection count and the ratios B/A, then each round's bytes stored per record
# (over all its runs' records) and the server's peak RSS.
#
#   BEFORE=origin/main AFTER=HEAD bash bench/ingestion/compare.sh
#   ROUNDS=3 CONNECTIONS=4,16 DURATION=8 BEFORE=<sha> AFTER=<sha> bash bench/ingestion/compare.sh
#
# Environment: BEFORE, AFTER (git refs, default origin/main and HEAD; each built once, see ORRERY_REF in
# bench/lib.sh), ROUNDS (default 2), CONNECTIONS (default 4,16), DURATION (s per run, default 8), STORAGE=0 (skip
# the bytes per record and the materialization after each round's runs, see run.sh).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
source "$here/../lib.sh"
before="${BEFORE:-origin/main}"
after="${AFTER:-HEAD}"
rounds="${ROUNDS:-2}"
out="$(mktemp -d "${TMPDIR:-/tmp}/orrery-ingestion-compare-XXXXXX")"
trap 'rm -rf "$out"' EXIT

bench_alternate "$out" "$before" "$after" "$rounds" \
  env PROFILE=0 CONNECTIONS="${CONNECTIONS:-4,16}" DURATION="${DURATION:-8}" bash "$here/run.sh"

python3 - "$out" "$before" "$after" <<'PY'
import glob, json, os, statistics, sys
out, before, after = sys.argv[1:]
rows = {}
print(f"A = {before}, B = {after}")
# CPU ms per 1,000-record request: of the whole Node process, and of its main thread (the event loop, what one
# process's rate is bounded by).
per_request = lambda r, key: 1000 * r[key] / r["requests_ok"] if r.get(key) and r.get("requests_ok") else 0  # noqa: E731
print(f"{'round':>5} {'side':>4} {'sha':>9} {'conns':>5} {'records/s':>10} {'p50 ms':>7} {'p99 ms':>7} {'rec/node-cpu-s':>14} {'node ms/req':>11} {'main ms/req':>11} {'pg cpu s':>8} {'load':>5} {'stored':>6}")
for path in sorted(glob.glob(os.path.join(out, "*.json"))):
    d = json.load(open(path))
    round_, side = os.path.basename(path)[:-5].split("-")
    for r in d["runs"]:
        rows.setdefault((side, r["connections"]), []).append(r)
        print(f"{round_:>5} {side:>4} {d.get('commit', '')[:9]:>9} {r['connections']:>5} {r['measured_records_per_s'] or 0:>10,} "
              f"{r['latency_ms']['p50']:>7.1f} {r['latency_ms']['p99']:>7.1f} {r.get('records_per_node_cpu_s', 0):>14,} "
              f"{per_request(r, 'server_node_cpu_s'):>11.2f} {per_request(r, 'server_main_thread_cpu_s'):>11.2f} "
              f"{r.get('server_postgres_cpu_s', 0):>8.1f} {d['loadavg_1m_at_start']:>5} "
              f"{'ok' if d['verify'].get('ok') else 'BAD':>6}")
print()
print(f"{'round':>5} {'side':>4} {'records':>10} {'B/record':>8} {'payloads':>8} {'parts':>6} {'pg':>5} {'RSS ingest':>10} {'RSS mat.':>8}   (MiB; micromegas: 149 B/record)")
for path in sorted(glob.glob(os.path.join(out, "*.json"))):
    d = json.load(open(path))
    round_, side = os.path.basename(path)[:-5].split("-")
    s, n = d.get("storage", {}), d["verify"].get("records_sent", 0)
    if s.get("bytes_per_record") is None or not n:
        continue
    print(f"{round_:>5} {side:>4} {n:>10,} {s['bytes_per_record']:>8.1f} {s['payloads']['bytes'] / n:>8.1f} {s['partitions']['bytes'] / n:>6.1f} "
          f"{s['postgres']['database'] / n:>5.1f} {s.get('node_peak_rss_ingest_bytes', 0) / 2**20:>10,.0f} {s.get('node_peak_rss_bytes', 0) / 2**20:>8,.0f}")
print()
print(f"{'conns':>5} {'A records/s':>12} {'B records/s':>12} {'B/A':>6} {'A p50':>7} {'B p50':>7} {'A rec/cpu-s':>12} {'B rec/cpu-s':>12} {'B/A':>6} {'A main ms/req':>13} {'B main ms/req':>13} {'B/A':>6}")
for conns in sorted({c for _, c in rows}):
    med = lambda side, f: statistics.median(f(r) for r in rows.get((side, conns), [])) if rows.get((side, conns)) else 0
    a, b = med("A", lambda r: r["measured_records_per_s"] or 0), med("B", lambda r: r["measured_records_per_s"] or 0)
    ca, cb = med("A", lambda r: r.get("records_per_node_cpu_s", 0)), med("B", lambda r: r.get("records_per_node_cpu_s", 0))
    ma, mb = med("A", lambda r: per_request(r, "server_main_thread_cpu_s")), med("B", lambda r: per_request(r, "server_main_thread_cpu_s"))
    print(f"{conns:>5} {a:>12,.0f} {b:>12,.0f} {b / a if a else 0:>6.2f} {med('A', lambda r: r['latency_ms']['p50']):>7.1f} "
          f"{med('B', lambda r: r['latency_ms']['p50']):>7.1f} {ca:>12,.0f} {cb:>12,.0f} {cb / ca if ca else 0:>6.2f} "
          f"{ma:>13.2f} {mb:>13.2f} {mb / ma if ma else 0:>6.2f}")
PY
