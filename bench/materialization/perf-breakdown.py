"""Where a server materialization's CPU went, from a `perf record -g` of it (run.sh with PERF=1 writes one per
materialization): samples per thread, each thread named by what it ran most, and within each thread the leaf
functions grouped by stage.

    python3 bench/materialization/perf-breakdown.py bench/materialization/perf/perf-1.data
    python3 bench/materialization/perf-breakdown.py --rows 1000000 perf.data   # CPU-s per 1 M rows too

Seconds are samples / the sampling rate the recording was made at (499 Hz, or 99 with PERF_CALL_GRAPH=dwarf).
"""

from __future__ import annotations

import collections
import re
import subprocess
import sys


# Leaf symbol -> stage, first match wins.
STAGES = [
    ("payload zstd", r"ZSTD_decompress|decompressSequences|ZSTD_decodeSeq|HUF_decompress|FSE_decode|ZSTD_DCtx"),
    ("brotli/gzip", r"ProcessCommands|Brotli|Huffman|inflate|SafeDecode|CopyUncompressed|DecodeContextMap"),
    ("validating scan", r"ScanLogsBody|ValidUtf8|Scan::"),
    ("decode", r"Decoder::|DecodePayload|JsonString|JsNumber|Base64|ArrayIndex|Span|basic_string|_M_realloc_insert"),
    ("merge", r"OrderedFunction|Later|PointString|HoldNext|__adjust_heap|__push_heap|__pop_heap"),
    ("json()", r"yyjson|JSON|ExtractFromVal"),
    ("string copies into vectors", r"AddStringOrBlob|StringHeap|Utf8Proc|assign_string_element"),
    ("Parquet writer: zstd", r"zstd|ZSTD|HIST_|FSE_|HUF_|XXH64"),
    ("Parquet writer: dictionary analysis", r"::Analyze|Hash<duckdb::string_t>|__memcmp"),
    ("Parquet writer: row group buffer", r"ColumnDataCopy|ColumnDataCollection|TupleData"),
    ("Parquet writer", r"ColumnWriter|Parquet|zstd|ZSTD|Hash<duckdb::string_t>|ColumnDataCopy|ColumnDataCollection|HIST_|FSE_|HUF_|Dictionary|Thrift|thrift"),
    ("memcpy/memcmp/malloc", r"__mem|malloc|_int_free|_int_malloc|cfree|free$"),
    ("JavaScript and V8", r"^JS:|Builtins_|v8::|node::|uv_"),
    ("kernel", r"^\[k\]"),
]


def stage(symbol: str, dso: str) -> str:
    if dso.startswith("[kernel"):
        return "kernel"
    for name, pattern in STAGES:
        if re.search(pattern, symbol):
            return name
    return "other DuckDB" if "libduckdb" in dso else "other"


def main() -> int:
    args = sys.argv[1:]
    rows = int(args[args.index("--rows") + 1]) if "--rows" in args else 0
    data = args[-1]
    evlist = subprocess.run(["perf", "evlist", "-F", "-i", data], capture_output=True, text=True, check=True).stdout
    hz = int(re.search(r"sample_freq=(\d+)", evlist).group(1))
    out = subprocess.run(["perf", "script", "-i", data, "-F", "tid,ip,sym,dso"], capture_output=True, text=True, check=True).stdout
    threads: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for block in out.split("\n\n"):
        lines = [line.strip() for line in block.strip().split("\n") if line.strip()]
        if len(lines) < 2:
            continue
        tid = lines[0].split()[0]
        leaf = lines[1].split(" ", 1)[1] if " " in lines[1] else ""
        found = re.match(r"(.*) \(([^()]*)\)$", leaf)
        symbol, dso = (found.group(1), found.group(2)) if found else (leaf, "")
        threads[tid][stage(symbol, dso)] += 1
    total = sum(sum(c.values()) for c in threads.values())
    per = f", {total / hz / rows * 1e6:.2f} CPU-s per 1 M rows" if rows else ""
    print(f"{total} samples, {total / hz:.2f} CPU-s{per}")
    stages = collections.Counter()
    for counts in threads.values():
        stages.update(counts)
    if rows:
        print("all threads by stage, CPU-s per 1 M rows:")
        for name, k in stages.most_common():
            print(f"  {name:36s} {k / hz / rows * 1e6:6.3f}")
    # Threads with few samples (libuv's pool, V8's helpers) are summed by their main stage.
    small: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for tid, counts in sorted(threads.items(), key=lambda kv: -sum(kv[1].values())):
        n = sum(counts.values())
        if n < total * 0.03:
            small[counts.most_common(1)[0][0]].update(counts)
            continue
        print(f"thread {tid}: {n / hz:.2f} CPU-s ({100 * n / total:.0f}%)")
        for name, k in counts.most_common():
            print(f"  {name:36s} {k / hz:6.2f} s {100 * k / n:5.1f}%")
    for main_stage, counts in sorted(small.items(), key=lambda kv: -sum(kv[1].values())):
        n = sum(counts.values())
        print(f"small threads mostly in {main_stage}: {n / hz:.2f} CPU-s ({100 * n / total:.0f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
