#!/usr/bin/env bash
# Runs a command with the wall clock of it and of every process it starts (the in-process Orrery,
# DuckDB, the embedded Postgres, child roles) set to a UTC instant and ticking on from there: how to
# check that a suite's expectations hold at any hour, across midnight and a year's end, e.g.
#
#   scripts/at-clock.sh '2026-12-31 23:59:40' node --test --test-concurrency=1 dist/test/rollups/rollups.test.js
#
# The shift is one offset from the real clock, the same in every process (libfaketime, preloaded:
# Debian's faketime package); monotonic clocks (timers, timeouts) stay real.
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 'YYYY-MM-DD HH:MM:SS' command [args...]" >&2
  exit 2
fi
at=$1
shift
library=$(ls /usr/lib/*/faketime/libfaketimeMT.so.1 /usr/lib/faketime/libfaketimeMT.so.1 2>/dev/null | head -n 1 || true)
if [ -z "$library" ]; then
  echo "$0: libfaketime is not installed (apt-get install faketime)" >&2
  exit 2
fi
offset=$(($(date -u -d "$at" +%s) - $(date -u +%s)))
export LD_PRELOAD=$library FAKETIME="$([ "$offset" -ge 0 ] && echo +)${offset}s" FAKETIME_DONT_FAKE_MONOTONIC=1 TZ=UTC
exec "$@"
