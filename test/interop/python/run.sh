#!/usr/bin/env bash
# Python interop tests against a real Orrery Flight SQL server.
#
# Creates/refreshes a venv at test/interop/python/.venv from requirements.txt
# (only when requirements.txt changed), then runs pytest on this folder.
# Extra arguments go to pytest. Without ORRERY_FLIGHT_PORT in the environment
# the tests start `node dist/src/cli.js serve` themselves (build dist/ first).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv"
python="${PYTHON:-python3}"
stamp="$venv/.requirements.sha256"
want="$(sha256sum "$here/requirements.txt" | cut -d' ' -f1)"

if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]; then
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/requirements.txt"
  echo "$want" > "$stamp"
fi

cd "$here"
# micromegas/ is the micromegas client's suite, in a venv of its own (it pins another pyarrow).
exec "$venv/bin/python" -m pytest "$here" --ignore="$here/micromegas" "$@"
