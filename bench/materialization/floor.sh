#!/usr/bin/env bash
# The floor under materialization (issue 16): DuckDB's Parquet write of log_entries' rows from a DuckDB table
# (variants.mjs --from-table: the rows put in the table before the measurement), against the materializer's whole
# statement (the ordered read's decode and merge, then the same write), alternately in processes of their own on the
# same payloads. 3 M rows/s on 2 cores is 0.667 CPU-s per 1 M rows for everything; a write from memory that costs more
# than that cannot reach it, whatever runs before it. Prints each run, each case's medians of CPU-s per 1 M rows
# (the process's, and its busiest thread's) and the ratio to the whole statement.
#
#   ROUNDS=3 PAYLOADS=1000 bash bench/materialization/floor.sh
#
# Environment: ROUNDS (default 3), PAYLOADS and RECORDS (default 1000 x 1000 = 1 M rows), VARIANT (default
# 'ordered enums', the materializer's), CASES (a '|'-separated list of name=arguments of variants.mjs; default
# below: the whole statement; its rows counted, not written (the read: decode and merge); the write from a table with
# the COPY's options, without zstd, and on two DuckDB threads).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dir="$(mktemp -d "${TMPDIR:-/tmp}/orrery-floor-XXXXXX")"
trap 'rm -rf "$dir"' EXIT
node "$here/variants.mjs" --prepare "$dir" --payloads "${PAYLOADS:-1000}" --records "${RECORDS:-1000}"
default="statement=--threads 1|read only=--threads 1 --read-only|write=--threads 1 --from-table"
default+="|write uncompressed=--threads 1 --from-table --write COMPRESSION+uncompressed|write 2 threads=--threads 2 --from-table"
IFS='|' read -r -a cases <<<"${CASES:-$default}"
for round in $(seq 1 "${ROUNDS:-3}"); do
  for c in "${cases[@]}"; do
    name="${c%%=*}"
    # Arguments are split on spaces; a + inside one stands for a space (--write's options).
    read -r -a args <<<"${c#*=}"
    args=("${args[@]//+/ }")
    node "$here/variants.mjs" --variant "${VARIANT:-ordered enums}" "${args[@]}" "$dir" |
      python3 -c 'import json,sys; r=json.loads(sys.stdin.read()); r["case"]=sys.argv[1]; print(json.dumps(r))' "$name" >>"$dir/runs.jsonl"
    tail -1 "$dir/runs.jsonl" >&2
  done
done
python3 - "$dir/runs.jsonl" "${cases[@]%%=*}" <<'PY'
import json, statistics, sys
runs = [json.loads(line) for line in open(sys.argv[1])]
names = sys.argv[2:]
digest = runs[0]["digest"]
# A read-only case writes a count, not the rows: no digest to compare.
same = lambda rs: "-" if all(r["digest"] == "null" for r in rs) else str(all(r["digest"] == digest for r in rs))
print(f"{'case':<28} {'runs':>4} {'CPU-s/1M rows (median)':>22} {'busiest thread':>14} {'x statement':>11} {'file MB':>7} {'same rows':>9} {'load':>11}")
ref = None
for n in names:
    rs = [r for r in runs if r["case"] == n]
    cpu = statistics.median(r["cpu_s"] / r["rows"] * 1e6 for r in rs)
    busy = statistics.median(r["threads_run_s"][0] / r["rows"] * 1e6 for r in rs if r.get("threads_run_s"))
    ref = ref or cpu
    loads = [r["load_1m"] for r in rs]
    print(f"{n:<28} {len(rs):>4} {cpu:>22.2f} {busy:>14.2f} {cpu / ref:>10.2f}x {rs[0]['file_mb']:>7} "
          f"{same(rs):>9} {min(loads):>5}-{max(loads):<5}")
print("budget for 3 M rows/s on 2 cores: 0.67 CPU-s per 1 M rows, everything included")
PY
