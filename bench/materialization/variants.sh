#!/usr/bin/env bash
# Ways to write one log_entries partition under the maintenance engine's memory limit, alternately (A B A B ...)
# in processes of their own, on the same decoded payloads (variants.mjs): each run's seconds, CPU-seconds and
# peak RSS, each variant's medians and their ratios to the first variant, and the load average.
#
#   VARIANTS="text blocks,enum blocks" ROUNDS=3 PAYLOADS=2000 RECORDS=1000 bash bench/materialization/variants.sh
#
# Environment: VARIANTS (comma-separated, the first is the reference; see variants() in variants.mjs), ROUNDS
# (default 3), PAYLOADS and RECORDS (payloads of RECORDS records each; default 2000 x 1000 = 2 M rows), LIMIT
# (the engine's memory limit, default 384MiB), THREADS (default 2), MEMORY=1 (each run samples duckdb_memory(): its
# tags' peaks in runs.jsonl, see variants.mjs).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dir="$(mktemp -d "${TMPDIR:-/tmp}/orrery-variants-XXXXXX")"
trap 'rm -rf "$dir"' EXIT
node "$here/variants.mjs" --prepare "$dir" --payloads "${PAYLOADS:-2000}" --records "${RECORDS:-1000}"
IFS=, read -r -a variants <<<"${VARIANTS:-text blocks,enum blocks}"
for round in $(seq 1 "${ROUNDS:-3}"); do
  for v in "${variants[@]}"; do
    node "$here/variants.mjs" --variant "$v" --limit "${LIMIT:-384MiB}" --threads "${THREADS:-2}" ${MEMORY:+--memory} "$dir" >>"$dir/runs.jsonl"
    tail -1 "$dir/runs.jsonl" >&2
  done
done
python3 - "$dir/runs.jsonl" "${variants[@]}" <<'PY'
import json, statistics, sys
runs = [json.loads(line) for line in open(sys.argv[1])]
names = sys.argv[2:]
print(f"{'variant':<16} {'runs':>4} {'median s':>9} {'median cpu s':>12} {'peak RSS MiB (max)':>18} {'file MB':>8} {'ordered':>8} {'same rows':>9} {'load':>11}")
med = {}
ref_digest = next(r["digest"] for r in runs if r["variant"] == names[0])
for n in names:
    rs = [r for r in runs if r["variant"] == n]
    med[n] = (statistics.median(r["seconds"] for r in rs), statistics.median(r["cpu_s"] for r in rs))
    loads = [r["load_1m"] for r in rs]
    print(f"{n:<16} {len(rs):>4} {med[n][0]:>9.2f} {med[n][1]:>12.2f} {max(r['peak_rss_mib'] for r in rs):>18,} {rs[0]['file_mb']:>8} "
          f"{str(all(r['ordered'] for r in rs)):>8} {str(all(r['digest'] == ref_digest for r in rs)):>9} {min(loads):>5}-{max(loads):<5}")
for n in names[1:]:
    print(f"{n} / {names[0]}: seconds {med[n][0] / med[names[0]][0]:.2f}x, cpu {med[n][1] / med[names[0]][1]:.2f}x")
PY
