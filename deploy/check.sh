#!/usr/bin/env bash
# Checks the deploy/ files with real validators (run by .ci/run): the Kubernetes manifests and the
# compose file with validate/ (k8s.io/api strict decoding, compose-go's schema check; Go modules from
# the module proxy, cached in Go's own caches outside the clone), and the systemd units with
# systemd-analyze verify, where any complaint fails (it only warns about a setting it ignores).
set -euo pipefail
cd "$(dirname "$0")"
go=$(command -v go || echo /usr/local/go/bin/go)
(cd validate && "$go" run . ../compose.yaml ../kubernetes/*.yaml)
if ! command -v systemd-analyze >/dev/null; then
  apt-get update -qq && apt-get install -y -qq systemd >/dev/null
fi
for unit in systemd/*.service; do
  name=${unit/@.service/@1.service}
  out=$(systemd-analyze verify "$name" 2>&1) || { echo "$out"; echo "$unit: invalid"; exit 1; }
  if [ -n "$out" ]; then echo "$out"; echo "$unit: systemd-analyze complained"; exit 1; fi
  echo "$unit: valid"
done
