#!/usr/bin/env bash
# Builds bench/latency/go (arrow-go's Flight SQL client) once per source change into $TMPDIR and prints the
# binary's path; used by run.sh and thread-cpu.sh.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
go_bin="${TMPDIR:-/tmp}/orrery-bench-latency-go-$(cat "$here/go/go.mod" "$here/go/main.go" | sha1sum | cut -c1-12)"
[ -x "$go_bin" ] || (cd "$here/go" && go build -o "$go_bin" .) >&2 || { echo "bench: the Go client does not build" >&2; exit 1; }
echo "$go_bin"
