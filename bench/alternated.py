"""The runs `bench_alternate` (bench/lib.sh) left in a folder, for the compare scripts' summaries (standard
library only: they run before any virtual environment)."""
import glob
import json
import os
import sys


def alternated_runs(out):
    """Each run's figures (the JSON last line of its output) as (round, side, figures), in round order, A before B."""
    for path in sorted(glob.glob(os.path.join(out, "*.json"))):
        round_, side = os.path.basename(path)[:-5].split("-")
        with open(path) as f:
            yield round_, side, json.load(f)


def compared():
    """The command line's (folder, before, after), once "A = <before>, B = <after>" is printed."""
    out, before, after = sys.argv[1:4]
    print(f"A = {before}, B = {after}")
    return out, before, after
