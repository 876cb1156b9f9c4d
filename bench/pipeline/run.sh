#!/bin/bash
# The pipeline benchmark of docs/performance.md (issue 30): the worked example
# of docs/pipelines.md (examples/pipelines) on IMAGES small PNG images, on a
# `cohort server --slots 2` queue on loopback:
#   full         the first run: resize every image, train, eval
#   incremental  after a commit adding 1% more images: resize only those
#   no-op        the pipeline run again with nothing new (every step up to date)
# and the controller's overhead per datum batch: a step of BATCHES jobs that
# run `true`, its wall time and the controller's CPU time per batch, against
# the same jobs submitted to the queue directly (the queue's own cost).
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
# The same jobs without the pipeline: BATCHES `true` jobs submitted to the
# queue at once and run on its 2 slots, until the last one has ended: what
# the queue itself costs per job, so the pipeline's own cost per batch is the
# difference.
queue_wall=()
for run in $(seq "$runs"); do
  t0=$(now)
  for _ in $(seq "$batches"); do cohort submit -- true >/dev/null; done
  python3 - <<'PY'
import json, subprocess, sys, time
deadline = time.monotonic() + 600
while time.monotonic() < deadline:
    jobs = json.loads(subprocess.check_output(["cohort", "queue", "--json"]))
    if all(j["state"] in ("succeeded", "failed", "cancelled") for j in jobs):
        sys.exit(0)
    time.sleep(0.05)
sys.exit("queue-only baseline: jobs still running after 600 s")
PY
  t1=$(now)
  queue_wall+=("$(echo "($t1 - $t0) * 1000 / $batches" | bc -l)")
done
printf 'images %d, runs %d (medians)\n' "$images" "$runs"
printf 'full run            %8.2f s\n' "$(printf '%s\n' "${full[@]}" | median)"
printf '1%% incremental run  %8.2f s\n' "$(printf '%s\n' "${incr[@]}" | median)"
printf '  resize step, full %8.2f s\n' "$(printf '%s\n' "${resize_full[@]}" | median)"
printf '  resize step, 1%%   %8.2f s\n' "$(printf '%s\n' "${resize_incr[@]}" | median)"
printf 'no-op run           %8.2f s\n' "$(printf '%s\n' "${noop[@]}" | median)"
printf 'per batch (%d jobs of true, 2 slots): wall %.1f ms, controller CPU %.2f ms\n' "$batches" \
  "$(printf '%s\n' "${wall[@]}" | median)" "$(printf '%s\n' "${cpu[@]}" | median)"
printf 'the same %d jobs submitted to the queue at once, no pipeline: wall %.1f ms per job\n' \
  "$batches" "$(printf '%s\n' "${queue_wall[@]}" | median)"
