#!/usr/bin/env bash
# run_s3_read.sh: S3 read throughput with 1 vs many requests in flight, from
# s3rver on 127.0.0.1 (started here on a free port, stopped at exit).
# Usage: bench/storage/run_s3_read.sh [--build-dir DIR] [storage_read_bench options]
# (default: --objects 8 --size 16M --in-flight 1,4,16 --reps 5)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="$ROOT/build"
if [[ "${1:-}" == "--build-dir" ]]; then BUILD="$(cd "$2" && pwd)"; shift 2; fi
S3RVER="${COHORT_S3RVER:-$ROOT/build-tools/s3rver/node_modules/s3rver/bin/s3rver.js}"
[[ -f "$S3RVER" ]] || { echo "run_s3_read.sh: no s3rver at $S3RVER (run tools/setup.sh)" >&2; exit 1; }
WORK="$(mktemp -d)"
node "$S3RVER" -d "$WORK/data" -a 127.0.0.1 -p 0 --silent --configure-bucket bench > "$WORK/out" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; wait $SERVER 2>/dev/null; rm -rf "$WORK"' EXIT
# Bounded wait for the line s3rver prints once it listens (30 s).
for _ in $(seq 300); do
  grep -q "listening on" "$WORK/out" && break
  kill -0 $SERVER 2>/dev/null || { cat "$WORK/out" >&2; exit 1; }
  sleep 0.1
done
PORT="$(grep -o 'listening on 127.0.0.1:[0-9]*' "$WORK/out" | cut -d: -f2)"
[[ -n "$PORT" ]] || { echo "s3rver did not start within 30 s" >&2; cat "$WORK/out" >&2; exit 1; }
echo "# $(date -u +%Y-%m-%dT%H:%MZ), s3rver $(node -p "require('$(dirname "$S3RVER")/../package.json').version") on 127.0.0.1:$PORT, $(nproc) CPUs"
echo "# command: bench/storage/run_s3_read.sh $*"
AWS_ENDPOINT_URL="http://127.0.0.1:$PORT" AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER \
  AWS_REGION=us-east-1 "$BUILD/storage_read_bench" --location s3://bench/throughput \
  --objects 8 --size 16M --in-flight 1,4,16 --reps 5 "$@"
