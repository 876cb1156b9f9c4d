#!/bin/bash
# The pipeline benchmark of docs/performance.md (issue 30): the worked example
# of docs/pipelines.md (examples/pipelines) on IMAGES small PNG images, on a
# `cohort server --slots 2` queue on loopback:
#   full         the first run: resize every image, train, eval
#   incremental  after a commit adding 1% more images: resize only those
#   no-op        the pipeline run again with nothing new (every step up to date)
# and the controller's overhead per datum batch: a step of BATCHES jobs that
# run `true`, its wall time and the controller's CPU time per batch.
# Each figure is the median of RUNS runs.
#   bench/pipeline/run.sh [--build-dir build] [--images 10000] [--runs 3] [--batches 200]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$root/build images=10000 runs=3 batches=200
while [ $# -gt 0 ]; do
  case $1 in
    --build-dir) build=$(cd "$2" && pwd); shift 2 ;;
    --images) images=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --batches) batches=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
export PATH=/usr/bin:$build:$PATH PYTHONPATH=$root/python PYTHONDONTWRITEBYTECODE=1
work=$(mktemp -d)
server_pid=
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
cohort server --store "sqlite:$work/t.db" --port 0 --slots 2 >"$work/server.out" 2>&1 &
server_pid=$!
for _ in $(seq 100); do grep -q listening "$work/server.out" 2>/dev/null && break; sleep 0.1; done
export COHORT_SERVER=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$work/server.out")
export COHORT_TRACKING_URI=sqlite:$work/track.db
percent=$((images / 100))
python3 "$root/examples/pipelines/make_images.py" "$work/images" "$images"
now() { date +%s.%N; }
median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
full=() incr=() noop=() resize_full=() resize_incr=()
step_time() { sed -n "s/.*step $1: .* done in \([0-9.]*\) s.*/\1/p" "$2"; }
for run in $(seq "$runs"); do
  ex=$work/run$run
  mkdir -p "$ex"
  cp "$root"/examples/pipelines/{images.yaml,resize.py,train.py,evaluate.py} "$ex"/
  cohort data ingest imagefolder "$work/images" "$ex/raw" >/dev/null
  python3 "$root/examples/pipelines/make_images.py" "$ex/new" "$percent" --first "$images"
  t0=$(now); (cd "$ex" && cohort pipeline run images.yaml >"$ex/full.log"); t1=$(now)
  cohort data ingest imagefolder "$ex/new" "$ex/raw" >/dev/null
  t2=$(now); (cd "$ex" && cohort pipeline run images.yaml >"$ex/incr.log"); t3=$(now)
  grep -q "step resize: $percent datums to process (incremental)" "$ex/incr.log"
  t4=$(now); (cd "$ex" && cohort pipeline run images.yaml >/dev/null); t5=$(now)
  full+=("$(echo "$t1 - $t0" | bc)") incr+=("$(echo "$t3 - $t2" | bc)") noop+=("$(echo "$t5 - $t4" | bc)")
  resize_full+=("$(step_time resize "$ex/full.log")") resize_incr+=("$(step_time resize "$ex/incr.log")")
  echo "run $run: full ${full[-1]} s (resize ${resize_full[-1]} s)," \
       "1% incremental ${incr[-1]} s (resize ${resize_incr[-1]} s), no-op ${noop[-1]} s"
done
# The controller's own cost per batch: BATCHES one-datum jobs of `true`.
python3 - "$work/tiny" "$batches" <<'PY'
import sys
from cohort.data import Writer
w = Writer.create(sys.argv[1], [("label", "label")])
for i in range(int(sys.argv[2])):
    w.append({"label": i})
w.commit("tiny")
PY
cat >"$work/overhead.yaml" <<YAML
name: overhead
parallel: 2
steps:
  - {name: noop, inputs: [{dataset: tiny, glob: sample}], command: ["true"]}
YAML
wall=() cpu=()
for run in $(seq "$runs"); do
  rm -rf "$work/.cohort-pipeline"
  t0=$(now)
  /usr/bin/time -f "%U %S" -o "$work/cpu" cohort pipeline run "$work/overhead.yaml" >/dev/null
  t1=$(now)
  wall+=("$(echo "($t1 - $t0) * 1000 / $batches" | bc -l)")
  cpu+=("$(awk -v n="$batches" '{print ($1 + $2) * 1000 / n}' "$work/cpu")")
done
printf 'images %d, runs %d (medians)\n' "$images" "$runs"
printf 'full run            %8.2f s\n' "$(printf '%s\n' "${full[@]}" | median)"
printf '1%% incremental run  %8.2f s\n' "$(printf '%s\n' "${incr[@]}" | median)"
printf '  resize step, full %8.2f s\n' "$(printf '%s\n' "${resize_full[@]}" | median)"
printf '  resize step, 1%%   %8.2f s\n' "$(printf '%s\n' "${resize_incr[@]}" | median)"
printf 'no-op run           %8.2f s\n' "$(printf '%s\n' "${noop[@]}" | median)"
printf 'per batch (%d jobs of true, 2 slots): wall %.1f ms, controller CPU %.2f ms\n' "$batches" \
  "$(printf '%s\n' "${wall[@]}" | median)" "$(printf '%s\n' "${cpu[@]}" | median)"
