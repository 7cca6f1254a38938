"""Where a Java reader's CPU goes while it reads the 10 M-row computed result (issue 10 item 3): CPU seconds per run
of each of the JVM's threads (the reader's own, gRPC/Netty's event loop, the JIT's, the collector's), read from
/proc over --repeats timed runs after --warmup runs in one JVM; with --jfr, also the reader thread's hottest frames
from a Java Flight Recorder recording sampled every 2 ms (self and inclusive, the reader's frames only).

The readers are bench.py's: java/ThroughputClient.java (`getters`: every column by its typed getter; `rows`: the
driver's cursor and getLong(1)) and java/FlightSqlThroughputClient.java (`flight`: the Java Flight SQL client the
JDBC driver runs on). Run through jvm-threads.sh, which starts the server on its defaults; by hand:
  bench/.venv/bin/python bench/flight-throughput/jvm-threads.py --port 50051 --classpath "$(cat <driver classpath file>)" --reader getters
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import subprocess
import tempfile

from bench import COMPUTED_SQL  # bench.py's query: the same result

HERE = os.path.dirname(os.path.abspath(__file__))


def thread_cpu(pid: int) -> collections.Counter:
    """CPU seconds by thread name (digits folded, so a pool's threads add up) of process `pid`."""
    tick = os.sysconf("SC_CLK_TCK")
    out: collections.Counter = collections.Counter()
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/comm") as f:
                name = re.sub(r"\d+", "N", f.read().strip())
            with open(f"/proc/{pid}/task/{task}/stat") as f:
                rest = f.read().rsplit(")", 1)[1].split()
        except FileNotFoundError:  # a thread that ended between listing and reading
            continue
        out[name] += (int(rest[11]) + int(rest[12])) / tick
    return out


def jfr_top(recording: str, entry: str, top: int) -> None:
    """The hottest frames of samples whose stack holds `entry` (the reader's main method), those below it only."""
    text = subprocess.run(["jfr", "print", "--events", "jdk.ExecutionSample", "--stack-depth", "64", recording],
                          capture_output=True, text=True, check=True).stdout
    own: collections.Counter = collections.Counter()
    inclusive: collections.Counter = collections.Counter()
    samples = 0
    for event in text.split("jdk.ExecutionSample")[1:]:
        frames = re.findall(r"^\s+([\w$.<>]+)\(", event, re.M)
        if entry not in frames:
            continue
        samples += 1
        own[frames[0]] += 1
        for frame in set(frames[: frames.index(entry)]):
            inclusive[frame] += 1
    print(f"reader thread, {samples} samples (JFR, 2 ms)")
    for title, counts in (("self", own), ("inclusive", inclusive)):
        print(f"  {title}:")
        for frame, count in counts.most_common(top):
            print(f"    {count / max(samples, 1) * 100:5.1f} %  {frame.replace('org.apache.arrow.driver.jdbc.shaded.', '')}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--classpath", required=True, help="the Flight SQL JDBC driver's classpath")
    parser.add_argument("--reader", choices=("getters", "rows", "flight"), default="getters")
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--key", default="admin-key-0123")
    parser.add_argument("--jfr", action="store_true", help="record with Java Flight Recorder and print the reader's hot frames")
    parser.add_argument("--top", type=int, default=20)
    args = parser.parse_args()

    sql = COMPUTED_SQL.format(n=args.rows)
    if args.reader == "flight":
        program, entry, reader_args = "FlightSqlThroughputClient.java", "FlightSqlThroughputClient.main", [f"{args.host}:{args.port}", "0", "-", sql, args.key]
    else:
        url = f"jdbc:arrow-flight-sql://{args.host}:{args.port}?useEncryption=false&user=admin&password={args.key}"
        program, entry, reader_args = "ThroughputClient.java", "ThroughputClient.main", [url, "0", "-", sql, args.reader]
    flags = ["--add-opens=java.base/java.nio=ALL-UNNAMED", "-Duser.timezone=UTC"]
    tmp = tempfile.mkdtemp(prefix="orrery-jvm-threads-")
    recording = os.path.join(tmp, "reader.jfr")
    if args.jfr:
        # JDK's `profile` settings with Java samples every 2 ms instead of 10 (enough samples from a few runs).
        java_home = os.path.dirname(os.path.dirname(os.path.realpath(subprocess.run(["which", "java"], capture_output=True, text=True).stdout.strip())))
        with open(os.path.join(java_home, "lib", "jfr", "profile.jfc")) as f:
            settings = re.sub(r'(method-sampling-java-interval">)\d+ ms', r"\g<1>2 ms", f.read())
        jfc = os.path.join(tmp, "fast.jfc")
        with open(jfc, "w") as f:
            f.write(settings)
    process = subprocess.Popen(["java", *flags, "-cp", args.classpath, os.path.join(HERE, "java", program), *reader_args],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert process.stdin is not None and process.stdout is not None

    def run() -> float:
        process.stdin.write("\n")
        process.stdin.flush()
        line = process.stdout.readline()
        while line and not line.startswith("{"):
            line = process.stdout.readline()
        if not line:
            raise SystemExit(f"the Java reader failed ({process.poll()})")
        return float(re.search(r'"seconds":([\d.]+)', line).group(1))

    for _ in range(args.warmup):
        run()
    if args.jfr:  # the timed runs only
        subprocess.run(["jcmd", str(process.pid), "JFR.start", "name=reader", f"settings={jfc}"], capture_output=True, check=True)
    before = thread_cpu(process.pid)
    seconds = [run() for _ in range(args.repeats)]
    after = thread_cpu(process.pid)
    if args.jfr:
        subprocess.run(["jcmd", str(process.pid), "JFR.dump", "name=reader", f"filename={recording}"], capture_output=True, check=True)
    process.stdin.close()
    process.wait()
    load = os.getloadavg()[0]
    print(f"{args.reader}: {args.repeats} runs of {args.rows:,} rows after {args.warmup} warm-up runs, load {load:.1f} at the end")
    print("  seconds: " + " ".join(f"{s:.3f}" for s in seconds))
    per_run = {name: (after[name] - before.get(name, 0)) / args.repeats for name in after}
    for name, cpu in sorted(per_run.items(), key=lambda item: -item[1]):
        if cpu >= 0.005:
            print(f"  {name:<24} {cpu:6.3f} CPU-s per run")
    print(f"  {'all threads':<24} {sum(per_run.values()):6.3f} CPU-s per run")
    if args.jfr:
        jfr_top(recording, entry, args.top)


if __name__ == "__main__":
    main()
