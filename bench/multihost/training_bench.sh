#!/usr/bin/env bash
# training_bench.sh: data-parallel training across emulated hosts
# (tools/cluster): bench/torch/synthetic_training.py (torchvision ResNet-18 on
# random images, one torch thread per worker) on 2 hosts x 1 worker, gradients
# averaged by cohort's DistributedOptimizer (`cohort run -H ...` over the
# cluster's ssh) or by PyTorch DDP on gloo (one worker started in each host's
# namespace with torch.distributed's env variables), and the same worker alone
# (--backend none) as the baseline, and one such worker on every host at once
# ("apart": no communication, what the shared cores allow). Runs the four
# interleaved REPS times and prints the median images/s, the scaling efficiency
# (total images/s / (hosts x images/s of one worker alone)) and cohort/DDP.
#
# Usage (as root, from anywhere):
#   bench/multihost/training_bench.sh [--rate 1gbit] [--hosts 2] [--workers 1] [--reps 3]
#       [--mtu 1500] [--build-dir build] [--timeout 300] [--kinds "LIST"]
#       [--name ctrain] [--subnet 10.77.251] [-- synthetic_training.py flags]
# --name/--subnet: the cluster's namespaces (NAME-h*) and addresses, so that
#   two benchmarks can run side by side.
# --workers: cohort workers per host (more than 1: cohort kinds only, with --kinds).
# --kinds: the runs of each repetition instead of "cohort ddp single apart", each
#   BACKEND[:COMPRESSION] (e.g. "cohort:powersgd2 ddp:powersgd2 cohort:topk1"); the
#   table then gives each one's images/s, its ratio to ddp:none and to DDP with the
#   same compression, the final training loss, rank 0's step time and the bytes
#   rank 0's host sent per step.
# Default worker flags: --model resnet18 --image-size 64 --batch-size 32
#   --warmup-steps 3 --steps-per-iter 2 --iters 5 --threads 1
# Needs: a build with the `cohort` binary and the Python extension
# (cohort_py_runtime), root (namespaces), /usr/bin/python3 with torch and torchvision.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
RATE=1gbit
HOSTS=2
WORKERS=1
REPS=3
MTU=1500
BUILD_DIR=build
TIMEOUT=300
NAME=ctrain
SUBNET=10.77.251
KINDS=""
COMP_FLAGS=()  # --compression of the current run (--kinds)
WORKER_FLAGS=(--model resnet18 --image-size 64 --batch-size 32 --warmup-steps 3
  --steps-per-iter 2 --iters 5 --threads 1)

while [ $# -gt 0 ]; do
  case "$1" in
    --rate) RATE="$2"; shift 2 ;;
    --hosts) HOSTS="$2"; shift 2 ;;
    --workers) WORKERS="$2"; shift 2 ;;
    --reps) REPS="$2"; shift 2 ;;
    --mtu) MTU="$2"; shift 2 ;;
    --build-dir) BUILD_DIR="$2"; shift 2 ;;
    --timeout) TIMEOUT="$2"; shift 2 ;;
    --kinds) KINDS="$2"; shift 2 ;;
    --name) NAME="$2"; shift 2 ;;
    --subnet) SUBNET="$2"; shift 2 ;;
    --) shift; WORKER_FLAGS+=("$@"); break ;;
    -h|--help) sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "training_bench: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
case "$BUILD_DIR" in /*) ;; *) BUILD_DIR="$ROOT/$BUILD_DIR" ;; esac
if [ "$WORKERS" -gt 1 ]; then
  for kind in $KINDS; do
    [[ "$kind" == cohort* ]] ||
      { echo "training_bench: --workers $WORKERS runs cohort kinds only, not '$kind'" >&2; exit 2; }
  done
  [ -n "$KINDS" ] || { echo "training_bench: --workers $WORKERS needs --kinds" >&2; exit 2; }
fi
COHORT="$BUILD_DIR/cohort"
[ -x "$COHORT" ] || { echo "training_bench: no $COHORT (build the cohort target)" >&2; exit 1; }
ls "$BUILD_DIR"/python/cohort/_cohort*.so >/dev/null 2>&1 ||
  { echo "training_bench: no $BUILD_DIR/python/cohort/_cohort*.so (build the cohort_py_runtime target)" >&2; exit 1; }
PY=/usr/bin/python3
WORKER="$ROOT/bench/torch/synthetic_training.py"
STATE="/tmp/cohort-cluster-$NAME"
RAW="$(mktemp -d /tmp/training-bench.XXXXXX)"
WORKER_PIDS=()
cleanup() {
  local pid
  for pid in "${WORKER_PIDS[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  "$ROOT/tools/cluster" down --name $NAME --state-dir "$STATE" >/dev/null 2>&1 || true
  rm -rf "$RAW"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Prints "img_sec_per_worker forward backward wait update final_loss
# host_tx_bytes_per_step" (the phases in ms) of the `result: {...}` line in file $1.
rate_of() {
  $PY -c "
import json, sys
lines = [l.split('result: ', 1)[1] for l in open(sys.argv[1]) if 'result: ' in l]
if len(lines) != 1:
    sys.exit('training_bench: no result line in the output of ' + sys.argv[2])
r = json.loads(lines[0])
p = r['phases_ms']
print(r['img_sec_per_worker'], p['forward'], p['backward'], p['wait'], p['update'],
      r.get('final_loss', 0), r.get('host_tx_bytes_per_step', 0))" "$1" "$2"
}

# Runs one benchmark; on failure prints its output and exits (the trap takes
# the cluster down).
run_cohort() {
  local list="" i
  for ((i = 1; i <= HOSTS; i++)); do list+="${list:+,}$SUBNET.$i:$WORKERS"; done
  timeout "$TIMEOUT" "$COHORT" run -np $((HOSTS * WORKERS)) -H "$list" --ssh-command "ssh -F $STATE/ssh_config" \
    --timeout 120 -x PYTHONPATH="$ROOT/python" -x COHORT_BUILD_DIR="$BUILD_DIR" -- \
    $PY "$WORKER" --backend cohort "${WORKER_FLAGS[@]}" "${COMP_FLAGS[@]}" >"$RAW/out" 2>&1
}

# Every worker runs in a session of its own (setsid), as cohort's workers do
# under their sshd: with the kernel's autogroup scheduling each session is
# one scheduling group, so workers sharing the script's session would split
# one share of the CPU between them while cohort's got one each.

# One worker of BACKEND in every host's namespace at once, with
# torch.distributed's variables (unused by --backend none); their outputs go
# to $RAW/out.1..HOSTS. Fails when any worker fails.
run_on_each_host() {
  local backend=$1 port=$((29600 + RANDOM % 1000)) i status=0
  WORKER_PIDS=()
  for ((i = 1; i <= HOSTS; i++)); do
    setsid -w ip netns exec "$NAME-h$((i - 1))" env RANK=$((i - 1)) WORLD_SIZE="$HOSTS" LOCAL_RANK=0 \
      MASTER_ADDR="$SUBNET.1" MASTER_PORT="$port" GLOO_SOCKET_IFNAME=eth0 \
      timeout "$TIMEOUT" $PY "$WORKER" --backend "$backend" "${WORKER_FLAGS[@]}" "${COMP_FLAGS[@]}" >"$RAW/out.$i" 2>&1 &
    WORKER_PIDS+=($!)
  done
  for ((i = 1; i <= HOSTS; i++)); do
    wait "${WORKER_PIDS[$((i - 1))]}" || { status=$?; echo "training_bench: $backend worker on host $i exited with status $status" >>"$RAW/out.$i"; }
  done
  WORKER_PIDS=()
  return $status
}

run_ddp() {
  local status=0
  run_on_each_host ddp || status=$?
  cat "$RAW"/out.* >"$RAW/out"
  return $status
}

run_single() {
  setsid -w timeout "$TIMEOUT" ip netns exec "$NAME-h0" $PY "$WORKER" --backend none "${WORKER_FLAGS[@]}" >"$RAW/out" 2>&1
}

# One worker alone on every host at once, no communication: what the cores
# give HOSTS workers sharing them (the ceiling of any backend's efficiency here).
# Its result is the mean rate of the workers.
run_apart() {
  run_on_each_host none || { cat "$RAW"/out.* >"$RAW/out"; return 1; }
  $PY -c "
import json, sys
results = [json.loads(l.split('result: ', 1)[1])
           for f in sys.argv[1:] for l in open(f) if 'result: ' in l]
mean = lambda xs: round(sum(xs) / len(xs), 2)
print('result: ' + json.dumps({
    'img_sec_per_worker': mean([r['img_sec_per_worker'] for r in results]),
    'phases_ms': {k: mean([r['phases_ms'][k] for r in results]) for k in results[0]['phases_ms']}}))
" "$RAW"/out.* >"$RAW/out" 2>&1
}

echo "  bringing up $HOSTS hosts at $RATE (MTU $MTU)" >&2
"$ROOT/tools/cluster" up --hosts "$HOSTS" --rate "$RATE" --mtu "$MTU" --name $NAME --subnet $SUBNET \
  --state-dir "$STATE" >/dev/null
: >"$RAW/rows"
for ((rep = 1; rep <= REPS; rep++)); do
  for kind in ${KINDS:-cohort ddp single apart}; do
    echo "  [rep $rep/$REPS] $kind ..." >&2
    start=$(date +%s)
    COMP_FLAGS=()
    [[ "$kind" == *:* ]] && COMP_FLAGS=(--compression "${kind#*:}")
    if ! "run_${kind%%:*}"; then
      echo "training_bench: the $kind run failed:" >&2
      if [ -n "$KINDS" ]; then  # a comparison goes on without it (the table says so)
        tail -n 5 "$RAW/out" >&2
        echo "$kind" >>"$RAW/failed"
        continue
      fi
      cat "$RAW/out" >&2
      exit 1
    fi
    r=$(rate_of "$RAW/out" "$kind")
    echo "  [rep $rep/$REPS] $kind: ${r%% *} images/s per worker ($(($(date +%s) - start)) s)" >&2
    echo "$kind $r" >>"$RAW/rows"
  done
done

echo "# data-parallel training across emulated hosts (tools/cluster), $HOSTS hosts x $WORKERS worker(s) at $RATE, MTU $MTU"
echo "# worker: bench/torch/synthetic_training.py ${WORKER_FLAGS[*]}"
echo "# median of $REPS interleaved runs (cohort, ddp, single, apart, ...); machine: $(nproc) cores, shared with other work;"
echo "# load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -n "$KINDS" ]; then
  $PY - "$RAW/rows" <<'EOF'
import statistics, sys
runs, losses, sent, step_ms = {}, {}, {}, {}
for line in open(sys.argv[1]):
    kind, rate, *ms = line.split()
    runs.setdefault(kind, []).append(float(rate))
    losses.setdefault(kind, []).append(float(ms[4]))
    sent.setdefault(kind, []).append(float(ms[5]))
    step_ms.setdefault(kind, []).append(sum(float(x) for x in ms[:4]))
print("# per run (images/s per worker): " +
      "; ".join("%s %s" % (k, " ".join("%.1f" % r for r in v)) for k, v in runs.items()))
med = {k: statistics.median(v) for k, v in runs.items()}
base = med.get("ddp:none", med.get("ddp"))
print("%-22s %13s %11s %14s %11s %8s %13s" % (
    "run", "img/s/worker", "vs-ddp:none", "vs-ddp-same", "final-loss", "step-ms",
    "host-MB/step"))
for kind, r in med.items():
    comp = kind.split(":", 1)[1] if ":" in kind else "none"
    same = med.get("ddp:" + comp)
    print("%-22s %13.1f %11s %14s %11.4f %8.1f %13.3f" % (
        kind, r, "%.3f" % (r / base) if base else "-",
        "%.3f" % (r / same) if same and not kind.startswith("ddp") else "-",
        statistics.median(losses[kind]), statistics.median(step_ms[kind]),
        statistics.median(sent[kind]) / 1e6))
import os
failed = os.path.join(os.path.dirname(sys.argv[1]), "failed")
if os.path.exists(failed):
    print("# failed runs (left out): " + " ".join(open(failed).read().split()))
print("# final-loss: the training loss of rank 0's last step (the same random batch every step),")
print("# median over the runs: equal steps, so a compression that learns less shows a higher one;")
print("# step-ms: rank 0's forward+backward+wait+update; host-MB/step: what rank 0's emulated")
print("# host (its network namespace, all its workers) sent per timed step, 1e6 bytes")
EOF
  exit 0
fi
$PY - "$RAW/rows" "$HOSTS" <<'EOF'
import statistics, sys
rows, hosts = sys.argv[1], int(sys.argv[2])
runs, phases = {}, {}
for line in open(rows):
    kind, rate, *ms = line.split()
    runs.setdefault(kind, []).append(float(rate))
    phases.setdefault(kind, []).append([float(x) for x in ms[:4]])
single = statistics.median(runs["single"])
print("# per run (images/s per worker): " +
      "; ".join("%s %s" % (k, " ".join("%.1f" % r for r in v)) for k, v in runs.items()))
apart = statistics.median(runs["apart"])
print("%-8s %8s %14s %14s %11s %9s" % ("backend", "workers", "img/s/worker", "img/s total",
                                       "efficiency", "vs-apart"))
print("%-8s %8d %14.1f %14.1f %11s %9s" % ("single", 1, single, single, "-", "-"))
for kind, label in (("apart", "apart"), ("cohort", "cohort"), ("ddp", "ddp-gloo")):
    r = statistics.median(runs[kind])
    print("%-8s %8d %14.1f %14.1f %10.1f%% %8.1f%%" % (label, hosts, r, hosts * r, 100 * r / single,
                                                   100 * r / apart))
print("# efficiency: total / (%d x single); vs-apart: per-worker rate / apart's, i.e. what is left" % hosts)
print("# after communication of what the shared cores allow %d workers (apart: no communication)" % hosts)
c, d = statistics.median(runs["cohort"]), statistics.median(runs["ddp"])
print("ratio cohort/ddp-gloo (images/s): %.3f" % (c / d))
print("# one step's phases (ms, rank 0; apart: mean of the workers), median over the runs;")
print("# ddp's allreduces finish inside backward, cohort's in wait (synchronize() after backward)")
print("%-8s %9s %9s %9s %9s %9s" % ("backend", "forward", "backward", "wait", "update", "step"))
for kind, label in (("single", "single"), ("apart", "apart"), ("cohort", "cohort"), ("ddp", "ddp-gloo")):
    cols = [statistics.median(p[i] for p in phases[kind]) for i in range(4)]
    print("%-8s %9.1f %9.1f %9.1f %9.1f %9.1f" % (label, *cols, sum(cols)))
EOF
