#!/usr/bin/env bash
# run_hierarchical.sh: the figures of the hierarchical allreduce and of
# multi-stream TCP (docs/performance.md), on one machine:
#   A. 4 ranks as 2 emulated hosts x 2 (COHORT_TEST_HOSTS=0,0,1,1: shared
#      memory within a host, TCP between): hierarchical vs flat ring allreduce
#      at 16, 64 and 256 MiB;
#   B. 2 ranks over TCP (--transport tcp): COHORT_TCP_STREAMS 4 vs 1 at 64 and
#      256 MiB.
# float32 sum in place via `cohort bench allreduce`; the variants run
# interleaved (rep 1: all four, rep 2: ...) so drift on the machine falls on
# all alike, each invocation guarded by bench/peers/compare.py `run` (waits
# for idle CPUs, reruns an invocation that other processes disturbed). Prints
# median tables (summarize.py).
#
# Usage: bench/hierarchical/run_hierarchical.sh [-r REPS] [-n ITERS]
#          [--build-dir DIR] [--max-wait S] [--retries K] [--keep DIR] [--out FILE]
#          [--quick]
#   -r REPS       repetitions of every variant (default 5)
#   -n ITERS      timed iterations per size (default 5; 2 warm-up)
#   --build-dir   cohort's CMake build directory (default build)
#   --max-wait S  wait at most S s for idle CPUs before each run (default 60)
#   --retries K   rerun an invocation disturbed by other processes up to K
#                 times (default 2)
#   --keep DIR    keep the raw outputs in DIR
#   --out FILE    also write the tables to FILE
#   --quick       smoke test: 1 repetition, 1 iteration, sizes 1M..4M
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
PY=/usr/bin/python3
REPS=5
ITERS=5
BUILD_DIR=build
MAX_WAIT=60
RETRIES=2
KEEP=""
OUT=""
SIZES_A=(-b 16M -e 256M -f 4)
SIZES_B=(-b 64M -e 256M -f 4)

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    -r) REPS="$2"; shift 2 ;;
    -n) ITERS="$2"; shift 2 ;;
    --build-dir) BUILD_DIR="$2"; shift 2 ;;
    --max-wait) MAX_WAIT="$2"; shift 2 ;;
    --retries) RETRIES="$2"; shift 2 ;;
    --keep) KEEP="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --quick) REPS=1; ITERS=1; SIZES_A=(-b 1M -e 4M -f 4); SIZES_B=(-b 1M -e 4M -f 4); shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "run_hierarchical.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
done
cd "$ROOT"
case "$BUILD_DIR" in /*) ;; *) BUILD_DIR="$ROOT/$BUILD_DIR" ;; esac
COHORT="$BUILD_DIR/cohort"
[[ -x "$COHORT" ]] || { echo "run_hierarchical.sh: $COHORT not found; build the cohort target" >&2; exit 1; }

WORK="$(mktemp -d "${TMPDIR:-/tmp}/cohort-hier.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
RAW="${KEEP:-$WORK/raw}"
mkdir -p "$RAW"
rm -f "$RAW"/*.out "$RAW"/*.err

# The command of one variant; prints it, one argument per line.
variant_command() {
  local bench=(bench allreduce -w 2 -n "$ITERS" -d float32 -o sum)
  case "$1" in
    flat|hier)
      local algorithm=ring
      [[ "$1" == hier ]] && algorithm=hierarchical
      printf '%s\n' env COHORT_TEST_HOSTS=0,0,1,1 "$COHORT" run -np 4 \
        --allreduce-algorithm "$algorithm" -- "$COHORT" "${bench[@]}" "${SIZES_A[@]}" ;;
    tcp1|tcp4)
      printf '%s\n' "$COHORT" run -np 2 --transport tcp --tcp-streams "${1#tcp}" -- \
        "$COHORT" "${bench[@]}" "${SIZES_B[@]}" ;;
  esac
}

START=$(date +%s)
FAILED=0
for ((rep = 1; rep <= REPS; rep++)); do
  for variant in flat hier tcp1 tcp4; do
    echo "== rep $rep/$REPS: $variant ($(( $(date +%s) - START ))s elapsed)" >&2
    mapfile -t cmd < <(variant_command "$variant")
    if ! "$PY" "$HERE/../peers/compare.py" run --out "$RAW/$variant.$rep.out" \
         --err "$RAW/$variant.$rep.err" --max-wait "$MAX_WAIT" --retries "$RETRIES" \
         -- "${cmd[@]}"; then
      echo "  warning: $variant failed (rep $rep); its stderr:" >&2
      tail -n 5 "$RAW/$variant.$rep.err" >&2
      FAILED=1
    fi
  done
done

HEADER="cohort hierarchical allreduce and TCP streams, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs
command: bench/hierarchical/run_hierarchical.sh -r $REPS -n $ITERS --max-wait $MAX_WAIT --retries $RETRIES
flat/hier: $(variant_command flat | tr '\n' ' ')(hier: --allreduce-algorithm hierarchical)
tcp1/tcp4: $(variant_command tcp1 | tr '\n' ' ')(tcp4: --tcp-streams 4)"
"$PY" "$HERE/summarize.py" --results "$RAW" --header "$HEADER" \
  --pair hier flat 4 --pair tcp4 tcp1 2 > "$WORK/table.txt" || FAILED=1
cat "$WORK/table.txt"
if [[ -n "$OUT" ]]; then
  mkdir -p "$(dirname "$OUT")"
  cp "$WORK/table.txt" "$OUT"
fi
echo "== done in $(( $(date +%s) - START ))s" >&2
exit "$FAILED"
