#!/usr/bin/env bash
# The whole materialization path with the Parquet writer of our own against today's statement (issue 16): on the same
# 1 M rows (the same payloads, block fields and first times), alternately, each round in processes of their own:
#   - statement: the materializer's statement today (variants.mjs 'ordered enums', one DuckDB thread: the ordered
#     read into DuckDB's vectors and DuckDB's Parquet write);
#   - direct: direct-writer.cc, the payloads decoded straight into own-writer.cc's column buffers and written by it,
#     in the variants VARIANTS lists (one line of direct-writer's flags each; default: --block-indexes, block_id and
#     process_properties as indexes into their payloads' values, s24's best; then with each of the cuts measured in
#     s25, --in-place, --checksum, --reuse, then --checksum --reuse, then all three; see direct-writer.cc).
# Both write a Parquet file on disk; CPU is each process's over the path alone (every thread). In the last round
# DuckDB reads each variant's file back and compares it with the statement's: the same rows in the same order, no row in
# one only, the same schema. Then the medians, CPU-s per 1 M rows, the ratio, and the budget of 3 M rows/s on 2 cores.
#
#   ROUNDS=3 nice -n 10 bash bench/materialization/direct-writer.sh
#
# Environment: ROUNDS (default 3), PAYLOADS and RECORDS (default 1000 x 1000 = 1 M rows), UNIQUE_IDS=1 (a trace and
# span id of its own per record), ZSTD=1 (the payloads zstd as the server stores them), DIRECT_SAMPLE=0 (unsampled dictionaries), KEEP=DIR (the work folder kept there, for
# a profile: perf record -g -- DIR/direct-writer DIR DIR/statement.parquet). Needs g++ and a build (npm run build).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
resolve() { (cd "$root" && node -p "require('path').dirname(require.resolve('$1'))"); }
lib="$(resolve @duckdb/node-bindings-linux-x64/libduckdb.so)"
if [ -n "${KEEP:-}" ]; then
  dir="$KEEP" && mkdir -p "$dir"
else
  dir="$(mktemp -d "${TMPDIR:-/tmp}/orrery-direct-writer-XXXXXX")"
  trap 'rm -rf "$dir"' EXIT
fi
# The addon's sources are included as they are; the Node-API functions among them are never called, and the linker
# drops them (--gc-sections), so the program needs Node's headers only.
g++ -O3 -std=c++17 -Wall -Wextra -DNAPI_CPP_EXCEPTIONS -ffunction-sections -fdata-sections \
  -I"$(resolve node-api-headers/include/node_api.h)" -I"$(resolve node-addon-api/napi.h)" \
  "$here/direct-writer.cc" "$root/src/engine/native/logs-scan.cc" "$root/src/engine/native/payload-zstd.cc" \
  -o "$dir/direct-writer" -L"$lib" -l:libduckdb.so -Wl,-rpath,"$lib" -Wl,--gc-sections -lpthread
node "$here/variants.mjs" --prepare "$dir" --payloads "${PAYLOADS:-1000}" --records "${RECORDS:-1000}" ${UNIQUE_IDS:+--unique-ids} ${ZSTD:+--zstd}
node "$here/variants.mjs" --dump-blocks "$dir/blocks" "$dir"
# The direct path's variants, one line of direct-writer's flags each, in the order each round runs them.
variants="${VARIANTS:-$'--block-indexes\n--block-indexes --in-place\n--block-indexes --checksum\n--block-indexes --reuse\n--block-indexes --checksum --reuse\n--block-indexes --in-place --checksum --reuse'}"
: >"$dir/runs.jsonl"
for round in $(seq 1 "${ROUNDS:-3}"); do
  echo "round $round, load $(cat /proc/loadavg)" >&2
  keep=()
  [ "$round" = 1 ] && keep=(--keep "$dir/statement.parquet")
  node "$here/variants.mjs" --variant 'ordered enums' --threads 1 "${keep[@]}" "$dir" | tee -a "$dir/runs.jsonl" >&2
  check=()
  [ "$round" = "${ROUNDS:-3}" ] && check=(--check)
  while IFS= read -r flags; do
    # shellcheck disable=SC2086 # each line of VARIANTS is a list of flags
    "$dir/direct-writer" "$dir" "$dir/statement.parquet" "${check[@]}" $flags | tee -a "$dir/runs.jsonl" >&2
  done <<<"$variants"
done
echo "load after: $(cat /proc/loadavg)" >&2
python3 - "$dir/runs.jsonl" <<'PY'
import json, statistics, sys
lines = [json.loads(line) for line in open(sys.argv[1])]
statement = [l for l in lines if l.get("variant") == "ordered enums"]
checks = [l for l in lines if "check" in l]
med = statistics.median
s = med(l["cpu_s"] / l["rows"] * 1e6 for l in statement)
def row(name, cpu, each, loads, mb):
    print(f"{name:<60} {cpu:>8.3f} {cpu / s:>9.2f}x {cpu / 0.667:>8.2f}x {mb:>8.2f}  {' / '.join(f'{x:.2f}' for x in each)}  (load {min(loads):.1f}-{max(loads):.1f})")
print(f"{'path (payloads -> Parquet file)':<60} {'CPU-s/1M':>8} {'x stmt':>10} {'x budget':>9} {'file MB':>8}  runs")
row("statement today (read + DuckDB's write)", s, [l["cpu_s"] / l["rows"] * 1e6 for l in statement],
    [l["load_1m"] for l in statement], statement[0]["file_mb"])
paths = list(dict.fromkeys(l["path"] for l in lines if "path" in l))
for path in paths:
    direct = [l for l in lines if l.get("path") == path]
    d = med(l["cpu_s_per_1m_rows"] for l in direct)
    row(path, d, [l["cpu_s_per_1m_rows"] for l in direct], [l["load_1m"] for l in direct], direct[0]["file_bytes"] / 1e6)
    split = {k: med(l["split_cpu_s_per_1m_rows"][k] for l in direct) for k in direct[0]["split_cpu_s_per_1m_rows"]}
    print(f"  {path}: ratio to the statement {d / s:.2f} (medians); minor page faults {med(l['minor_faults'] for l in direct):.0f}; "
          + "where its CPU goes (medians, CPU-s per 1 M rows): " + ", ".join(f"{k} {v:.3f}" for k, v in split.items()))
print("budget for 3 M rows/s on 2 cores: 0.667 CPU-s per 1 M rows, everything included")
for c in checks:
    print(json.dumps(c))
PY
