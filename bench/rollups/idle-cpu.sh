#!/usr/bin/env bash
# CPU of an idle `orrery serve` with the rollup refresh jobs on and off (bench/rollups/idle-cpu.mjs):
# two servers at once over SECONDS, ROUNDS times; ROLLUP=1 gives each one an hourly rollup to refresh.
#
#   bash bench/rollups/idle-cpu.sh                         # 2 rounds of 60 s, no rollup
#   ROLLUP=1 SECONDS_IDLE=120 bash bench/rollups/idle-cpu.sh
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
source "$here/../lib.sh"

bench_ensure_built
args=(--root "$ORRERY_ROOT" --seconds "${SECONDS_IDLE:-60}" --rounds "${ROUNDS:-2}")
[ "${ROLLUP:-0}" = "1" ] && args+=(--rollup)
node "$here/idle-cpu.mjs" "${args[@]}"
