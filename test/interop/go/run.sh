#!/usr/bin/env bash
# Runs the arrow-go Flight SQL client (the Grafana datasource's client) against a running
# Orrery server. The caller starts the server and exports ORRERY_FLIGHT_HOST,
# ORRERY_FLIGHT_PORT, ORRERY_ADMIN_USER, ORRERY_ADMIN_KEY, ORRERY_READER_USER and
# ORRERY_READER_KEY; a missing variable fails the tests (nothing is skipped).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
exec go test -count=1 -v ./...
