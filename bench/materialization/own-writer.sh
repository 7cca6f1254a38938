#!/usr/bin/env bash
# A Parquet writer of our own against DuckDB's (issue 16; own-writer.cc says what it builds and checks): on the same
# 1 M rows, alternately, each round in processes of their own:
#   - statement: the materializer's statement today (variants.mjs 'ordered enums', one DuckDB thread: read + write);
#   - read only: its rows counted, not written (the decode and merge that a writer of our own would still need);
#   - duckdb / own / own sampled (own-writer.cc, one process): DuckDB's COPY of the rows from a table, and the writer
#     of our own from the decoded columns, with a dictionary wherever it is smaller, or given up on for columns
#     whose first 16,384 values are nearly all distinct.
# Then the checks (DuckDB reads the files back: rows in order, schema, bloom filters) and the medians: CPU-s per 1 M
# rows, the ratio to DuckDB's write, file sizes, and read + own writer against the budget of 3 M rows/s on 2 cores.
#
#   ROUNDS=3 nice -n 10 bash bench/materialization/own-writer.sh
#
# Environment: ROUNDS (default 3), PAYLOADS and RECORDS (default 1000 x 1000 = 1 M rows), UNIQUE_IDS=1 (a trace and
# span id of its own per record, as real traffic has: variants.mjs --unique-ids). Needs g++ and a build (npm run build).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
lib="$(cd "$here/../.." && node -p "require('path').dirname(require.resolve('@duckdb/node-bindings-linux-x64/libduckdb.so'))")"
dir="$(mktemp -d "${TMPDIR:-/tmp}/orrery-own-writer-XXXXXX")"
trap 'rm -rf "$dir"' EXIT
g++ -O3 -std=c++17 -Wall -Wextra "$here/own-writer.cc" -o "$dir/own-writer" -L"$lib" -l:libduckdb.so -Wl,-rpath,"$lib"
node "$here/variants.mjs" --prepare "$dir" --payloads "${PAYLOADS:-1000}" --records "${RECORDS:-1000}" ${UNIQUE_IDS:+--unique-ids}
# The rows to write: the statement's own file.
node "$here/variants.mjs" --variant 'ordered enums' --threads 1 --keep "$dir/statement.parquet" "$dir" >/dev/null
record() {
  python3 -c 'import json,sys; r=json.loads(sys.stdin.read()); r["case"]=sys.argv[1]; print(json.dumps(r))' "$1" >>"$dir/runs.jsonl"
  tail -1 "$dir/runs.jsonl" >&2
}
for round in $(seq 1 "${ROUNDS:-3}"); do
  node "$here/variants.mjs" --variant 'ordered enums' --threads 1 "$dir" | record statement
  node "$here/variants.mjs" --variant 'ordered enums' --threads 1 --read-only "$dir" | record 'read only'
  check=()
  [ "$round" = "${ROUNDS:-3}" ] && check=(--check)
  "$dir/own-writer" "$dir/statement.parquet" "$dir" 1 "${check[@]}" | tee -a "$dir/writers.jsonl" >&2
done
python3 - "$dir/runs.jsonl" "$dir/writers.jsonl" <<'PY'
import json, statistics, sys
runs = [json.loads(line) for line in open(sys.argv[1])]
lines = [json.loads(line) for line in open(sys.argv[2])]
writers = [l for l in lines if "writer" in l]
checks = [l for l in lines if "check" in l]
med = statistics.median
rows = {}
for case in ("statement", "read only"):
    rs = [r for r in runs if r["case"] == case]
    rows[case] = (med(r["cpu_s"] / r["rows"] * 1e6 for r in rs), [r["load_1m"] for r in rs], rs[0]["file_mb"] if case == "statement" else None)
for w in ("duckdb", "own", "own sampled"):
    ws = [l for l in writers if l["writer"] == w]
    rows[w] = (med(l["cpu_s_per_1m_rows"] for l in ws), [l["load_1m"] for l in ws], ws[0]["file_bytes"] / 1e6)
print(f"{'case':<34} {'CPU-s/1M rows (median)':>22} {'x duckdb write':>14} {'file MB':>8} {'load':>11}")
for name, (cpu, loads, mb) in rows.items():
    label = {"duckdb": "write: duckdb from a table", "own": "write: own", "own sampled": "write: own sampled"}.get(name, name)
    size = "" if mb is None else f"{mb:.2f}"
    print(f"{label:<34} {cpu:>22.3f} {cpu / rows['duckdb'][0]:>13.2f}x {size:>8} {min(loads):>5}-{max(loads):<5}")
read = rows["read only"][0]
for w in ("own", "own sampled"):
    whole = read + rows[w][0]
    print(f"read + {w:<27} {whole:>22.3f} {'':>14} {'':>8}  {whole / 0.667:.2f}x the budget; {rows['statement'][0] / whole:.2f}x less than the statement")
print("budget for 3 M rows/s on 2 cores: 0.667 CPU-s per 1 M rows, everything included")
for c in checks:
    print(json.dumps(c))
PY
