# Shared by bench/s3's scripts (source it; it sources ../lib.sh): the S3 server behind its counting proxy.
#
#   s3_bench_begin NAME       builds (bench_ensure_built), sets python (the bench venv) and data_dir (a fresh
#                             folder), starts the proxy there; trap a cleanup calling s3_proxy_stop first
#   s3_proxy_start DATA_DIR   starts s3-proxy.mjs, waits for its settings (DATA_DIR/s3.json); sets S3_PROXY_PID
#   s3_proxy_stop             stops it
#   s3_field EXPR             evaluates EXPR over the settings `s` (s.bucket, s.counts, s.reset, s.env)
#   s3_lake PREFIX            exports MICROMEGAS_OBJECT_STORE_URI=s3://<bucket>/PREFIX and the AWS_* settings

# shellcheck source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

s3_bench_begin() {
  bench_ensure_built
  python="$(bench_venv)"
  data_dir="$(bench_data_dir "$1")"
  s3_proxy_start "$data_dir"
}

s3_proxy_start() {
  S3_INFO="$1/s3.json"
  node "$(dirname "${BASH_SOURCE[0]}")/s3-proxy.mjs" >"$S3_INFO" 2>"$1/s3.log" &
  S3_PROXY_PID=$!
  for _ in $(seq 1 600); do [ -s "$S3_INFO" ] && return 0; sleep 0.1; done
  echo "bench: the S3 server did not start: $(cat "$1/s3.log")" >&2
  return 1
}

s3_proxy_stop() {
  [ -n "${S3_PROXY_PID:-}" ] || return 0
  kill "$S3_PROXY_PID" 2>/dev/null || true
  wait "$S3_PROXY_PID" 2>/dev/null || true
  S3_PROXY_PID=""
}

s3_field() { node -e "const s=JSON.parse(require('fs').readFileSync('$S3_INFO','utf8')); console.log($1)"; }

s3_lake() {
  export MICROMEGAS_OBJECT_STORE_URI="s3://$(s3_field s.bucket)/$1"
  eval "$(s3_field "Object.entries(s.env).map(([k,v])=>'export '+k+'='+JSON.stringify(v)).join('\n')")"
}
