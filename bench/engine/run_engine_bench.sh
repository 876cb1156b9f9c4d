#!/usr/bin/env bash
# run_engine_bench.sh: the engine benchmark of issue 3, side by side, on 2
# ranks of this host: for ResNet-50's and a transformer's gradients (161 and
# 100 float32 tensors, backward order, averaged),
#   raw     one blocking allreduce of all the bytes at once (cohort, no engine)
#   engine  the tensors submitted one by one to cohort's engine, fused
#   +tl     the same with the timeline on (COHORT_TIMELINE)
#   gloo    the tensors reduced one by one with torch.distributed's gloo
# Each cell is the median over R repetitions of the median step time of the
# slowest rank. Usage: bench/engine/run_engine_bench.sh [-r R] [--build-dir DIR]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="$ROOT/build"
REPS=5
while [[ $# -gt 0 ]]; do
  case "$1" in
    -r) REPS="$2"; shift 2 ;;
    --build-dir) BUILD="$(cd "$2" && pwd)"; shift 2 ;;
    *) echo "usage: $0 [-r R] [--build-dir DIR]" >&2; exit 2 ;;
  esac
done
COHORT="$BUILD/cohort"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
value() { grep -o "$1 [0-9.]*" | awk '{print $2}'; }

printf '# engine benchmark, 2 ranks, %s, %s repetitions; times in us (median step, slowest rank)\n' \
  "$(date -u +%Y-%m-%dT%H:%MZ)" "$REPS"
printf '# %-11s %10s %10s %10s %10s %12s %13s %10s\n' model raw engine engine+tl gloo engine/raw \
  tl_overhead gloo/engine
for model in resnet50 transformer; do
  "$COHORT" bench engine --model "$model" --print-shapes > "$WORK/shapes.txt"
  : > "$WORK/raw"; : > "$WORK/eng"; : > "$WORK/tl"; : > "$WORK/gloo"
  for rep in $(seq "$REPS"); do
    echo "== $model repetition $rep/$REPS" >&2
    out="$("$COHORT" run -np 2 -- "$COHORT" bench engine --model "$model" --steps 10)"
    echo "$out" | value raw_allreduce_us >> "$WORK/raw"
    echo "$out" | value engine_step_us >> "$WORK/eng"
    "$COHORT" run -np 2 -- env "COHORT_TIMELINE=$WORK/trace.{rank}.json" \
      "$COHORT" bench engine --model "$model" --steps 10 | value engine_step_us >> "$WORK/tl"
    /usr/bin/python3 "$ROOT/bench/engine/gloo_one_by_one.py" "$WORK/shapes.txt" --steps 5 \
      | value gloo_step_us >> "$WORK/gloo"
  done
  raw=$(median < "$WORK/raw"); eng=$(median < "$WORK/eng"); tl=$(median < "$WORK/tl")
  gloo=$(median < "$WORK/gloo")
  awk -v m="$model" -v r="$raw" -v e="$eng" -v t="$tl" -v g="$gloo" 'BEGIN {
    printf "  %-11s %10.0f %10.0f %10.0f %10.0f %12.3f %12.1f%% %10.2f\n", m, r, e, t, g, e / r,
      100 * (t - e) / e, g / e }'
done
