#!/usr/bin/env bash
# micromegas's own Python client (the `micromegas` package) against a real Orrery, unchanged.
#
# Its own venv at test/interop/python/micromegas/.venv from requirements.txt (micromegas pins a
# pyarrow older than the other Python suites'), refreshed when requirements.txt changes; the
# fixtures are test/interop/python's (conftest.py): without ORRERY_FLIGHT_PORT they start
# `node dist/src/cli.js serve` themselves. Extra arguments go to pytest.
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

cd "$here/.."
exec "$venv/bin/python" -m pytest "$here" "$@"
