"""What phase-probe.mjs recorded for one client sending one statement at a time (jdbc-phases.sh), RPC by RPC:
each RPC's median time on the server (HTTP/2 stream seen -> closed; seen -> handler; handler -> answer;
answer -> closed) and its handler's phases, then the median gaps between one RPC's close and the next one's
arrival, which are the client's time between its calls.
  python rpc-gaps.py phases.json
"""

import collections
import json
import statistics
import sys


def ms(a: int, b: int) -> float:
    return (b - a) / 1e6


def main() -> None:
    rpcs = sorted((r for r in json.load(open(sys.argv[1])) if "closed" in r), key=lambda r: r["stream"])
    print(f"RPCs: {dict(collections.Counter(r['path'] for r in rpcs))}")
    print(f"{'RPC':<16} {'seen->closed':>12} {'seen->handler':>13} {'handler->answer':>15} {'answer->closed':>14}   (median ms)")
    for path in dict.fromkeys(r["path"] for r in rpcs):
        mine = [r for r in rpcs if r["path"] == path and "handler" in r and "answered" in r]
        if not mine:
            continue
        med = lambda f: statistics.median(f(r) for r in mine)  # noqa: E731
        print(f"{path:<16} {med(lambda r: ms(r['stream'], r['closed'])):12.3f} {med(lambda r: ms(r['stream'], r['handler'])):13.3f} "
              f"{med(lambda r: ms(r['handler'], r['answered'])):15.3f} {med(lambda r: ms(r['answered'], r['closed'])):14.3f}")
        phases = collections.defaultdict(list)
        for r in mine:
            for name, start, end in r.get("phases", []):
                phases[name].append(ms(start, end))
        for name, times in phases.items():
            print(f"    {name:<52} {statistics.median(times):.3f}")
    gaps = collections.defaultdict(list)
    for before, after in zip(rpcs, rpcs[1:]):
        gaps[f"{before['path']} closed -> {after['path']} seen"].append(ms(before["closed"], after["stream"]))
    print("client's time between calls (median ms):")
    for name, times in gaps.items():
        if len(times) * 20 >= len(rpcs):
            print(f"    {name:<52} {statistics.median(times):.3f}  (n={len(times)})")


if __name__ == "__main__":
    main()
