"""Summarises perf-ack.sh's run (its folder, the server's pid, the perf window in s): the CPU per request of the main
thread and of the others (from /proc, over the perf window), then the shares of the perf samples of each."""
import collections
import json
import sys
from pathlib import Path

work, main, window = Path(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
run = json.loads((work / "loadgen.json").read_text())
rate = run["measured_records_per_s"] or 0
requests = rate / 1000 * window  # 1,000-record requests in the perf window

def ticks(name):
    return {int(t): int(c) for t, c in (line.split() for line in (work / name).read_text().splitlines())}

before, after = ticks("cpu0.txt"), ticks("cpu1.txt")
used = {t: after[t] - before.get(t, 0) for t in after}
main_s = used.get(main, 0) / 100
others_s = sum(v for t, v in used.items() if t != main) / 100
print(f"{rate:,} records/s, client p50 {run['latency_ms']['p50']} ms; CPU ms per 1,000-record request over the "
      f"{window:.0f} s window: main thread {1000 * main_s / requests:.2f}, other threads {1000 * others_s / requests:.2f}")

samples, block = [], []
for line in (work / "perf.txt").read_text(errors="replace").splitlines():
    if line.strip():
        block.append(line)
    elif block:
        samples.append(block)
        block = []
if block:
    samples.append(block)

# The main thread: by the deepest JavaScript frame (what the work was done for), else by native markers.
MAIN_JS = [
    ("Postgres client (pg, pg-pool)", ["node_modules/pg"]),
    ("group object file calls", ["file-object-store", "node:fs", "internal/fs"]),
    ("the seal's call and answer", ["native-export", "logs-scan.js"]),
    ("ingestion's code (group commit, manifest, rows, ids, marks)",
     ["ingestion-service", "group-commit", "group-replay", "known-resources", "otlp/"]),
    ("HTTP (parse, body, response, sockets)",
     ["_http_", "http-server", "body-decoder", "internal/streams", "stream_base_commons", "node:net", "node:events"]),
    ("promises, timers (JavaScript)", ["task_queues", "timers", "node:internal"]),
]
MAIN_NATIVE = [
    ("garbage collection", ["Heap", "Scavenge", "MarkCompact", "Marking", "Sweeper"]),
    ("V8's compiler (tier-up)", ["compiler::", "CompileLazy", "Compiler"]),
    ("HTTP (parse, body, response, sockets)", ["llhttp", "Parser::", "LibuvStreamWrap", "uv__read", "uv__write"]),
    ("group object file calls", ["uv__fs", "node::fs::"]),
    ("kernel: wake-ups, switches", ["finish_task_switch", "schedule", "try_to_wake_up", "futex", "epoll"]),
]
OTHERS = [
    ("zstd of the payload", ["ZSTD_", "HUF_", "FSE_", "HIST_"]),
    ("sha256 of the body", ["sha256"]),
    ("the validating scan", ["ScanLogsBody", "ValidUtf8", "Scan::"]),
    ("V8's compiler (tier-up)", ["compiler::", "Compile"]),
    ("V8's GC helpers", ["Heap", "Scavenge", "Marking", "Sweeper"]),
    ("file calls on the pool (open, fsync, close)", ["uv__fs", "ext4", "fsync", "do_sys_open", "vfs_"]),
    ("kernel: wake-ups, switches", ["finish_task_switch", "schedule", "futex"]),
]

def category(frames, rules):
    for name, keys in rules:
        if any(any(k in f for k in keys) for f in frames):
            return name
    return None

shares = {"main thread": collections.Counter(), "other threads": collections.Counter()}
for sample in samples:
    tid = int(sample[0].split()[0])
    frames = [(line.strip().split(None, 1) + [""])[1] for line in sample[1:]]
    if tid == main:
        name = None
        for frame in frames:
            if frame.startswith("JS:"):
                name = category([frame], MAIN_JS)
                if name:
                    break
        shares["main thread"][name or category(frames[:12], MAIN_NATIVE) or "other"] += 1
    else:
        shares["other threads"][category(frames, OTHERS) or "other"] += 1
for side, counter in shares.items():
    total = sum(counter.values())
    print(f"{side}: {total} samples")
    for name, n in counter.most_common():
        print(f"  {100 * n / max(total, 1):5.1f} %  {name}")
