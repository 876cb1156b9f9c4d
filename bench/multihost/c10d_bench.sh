#!/usr/bin/env bash
# c10d_bench.sh: the torch.distributed backend "cohort" against gloo across
# emulated hosts (tools/cluster), one rank per host, for each link rate:
# bench/torch/c10d_allreduce.py (c10d all_reduce float32 sum in place, sizes
# -b..-e) and bench/torch/c10d_ddp.py (DistributedDataParallel ResNet-18 on
# random images, one torch thread per rank). Each script is one job started by
# `cohort run -H ...` over the cluster's ssh; inside it the default process
# group is "cohort" and a gloo group spans the same ranks (GLOO_SOCKET_IFNAME=eth0,
# the namespace's shaped link), and the two backends run alternately with the
# same worker code (only the process group differs). The scripts print the
# medians over --reps repetitions and the cohort/gloo ratios.
#
# Usage (as root, from anywhere):
#   bench/multihost/c10d_bench.sh [--rates "1gbit 10gbit"] [--hosts 2] [--reps 3]
#       [--sizes 4K:64M] [--mtu 1500] [--build-dir build] [--timeout 600]
#       [--ddp "--model resnet18 --image-size 64 --batch 16 --steps 3"]
#       [--skip-allreduce] [--skip-ddp]
# Needs: a build with the `cohort` binary and the Python extension
# (cohort_py_runtime), root (namespaces), /usr/bin/python3 with torch and torchvision.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
RATES="1gbit 10gbit"
HOSTS=2
REPS=3
SIZES=4K:64M
MTU=1500
BUILD_DIR=build
TIMEOUT=600
DDP_FLAGS="--model resnet18 --image-size 64 --batch 16 --steps 3"
DO_ALLREDUCE=1
DO_DDP=1
NAME=cc10d
SUBNET=10.77.252

while [ $# -gt 0 ]; do
  case "$1" in
    --rates) RATES="$2"; shift 2 ;;
    --hosts) HOSTS="$2"; shift 2 ;;
    --reps) REPS="$2"; shift 2 ;;
    --sizes) SIZES="$2"; shift 2 ;;
    --mtu) MTU="$2"; shift 2 ;;
    --build-dir) BUILD_DIR="$2"; shift 2 ;;
    --timeout) TIMEOUT="$2"; shift 2 ;;
    --ddp) DDP_FLAGS="$2"; shift 2 ;;
    --skip-allreduce) DO_ALLREDUCE=0; shift ;;
    --skip-ddp) DO_DDP=0; shift ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "c10d_bench: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
case "$BUILD_DIR" in /*) ;; *) BUILD_DIR="$ROOT/$BUILD_DIR" ;; esac
COHORT="$BUILD_DIR/cohort"
[ -x "$COHORT" ] || { echo "c10d_bench: no $COHORT (build the cohort target)" >&2; exit 1; }
ls "$BUILD_DIR"/python/cohort/_cohort*.so >/dev/null 2>&1 ||
  { echo "c10d_bench: no $BUILD_DIR/python/cohort/_cohort*.so (build the cohort_py_runtime target)" >&2; exit 1; }
PY=/usr/bin/python3
STATE="/tmp/cohort-cluster-$NAME"
cleanup() {
  "$ROOT/tools/cluster" down --name $NAME --state-dir "$STATE" >/dev/null 2>&1 || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# One job of a bench/torch script ($1, then its flags) on every host.
# MASTER_ADDR/MASTER_PORT are set to rank 0's host: the backend's env://
# defaults under `cohort run` point at cohort's store, i.e. the launcher's
# address (10.77.x.254 here), where no rank hosts the c10d TCPStore, so on
# hosts other than the launcher's the rendezvous times out without them.
run_job() {
  local script=$1 list="" i port=$((29600 + RANDOM % 1000))
  shift
  for ((i = 1; i <= HOSTS; i++)); do list+="${list:+,}$SUBNET.$i:1"; done
  timeout "$TIMEOUT" "$COHORT" run -np "$HOSTS" -H "$list" --ssh-command "ssh -F $STATE/ssh_config" \
    --timeout 120 -x PYTHONPATH="$ROOT/python" -x COHORT_BUILD_DIR="$BUILD_DIR" \
    -x GLOO_SOCKET_IFNAME=eth0 -x MASTER_ADDR="$SUBNET.1" -x MASTER_PORT="$port" -- $PY "$ROOT/bench/torch/$script" "$@"
}

for rate in $RATES; do
  echo "  bringing up $HOSTS hosts at $rate (MTU $MTU)" >&2
  "$ROOT/tools/cluster" up --hosts "$HOSTS" --rate "$rate" --mtu "$MTU" --name $NAME --subnet $SUBNET \
    --state-dir "$STATE" >/dev/null
  echo "# torch.distributed \"cohort\" vs gloo across emulated hosts (tools/cluster): $HOSTS hosts x 1 rank at $rate, MTU $MTU"
  if [ "$DO_ALLREDUCE" = 1 ]; then
    start=$(date +%s)
    run_job c10d_allreduce.py -b "${SIZES%%:*}" -e "${SIZES##*:}" -f 4 --reps "$REPS"
    echo "#   (all_reduce: $(($(date +%s) - start)) s)"
  fi
  if [ "$DO_DDP" = 1 ]; then
    start=$(date +%s)
    # shellcheck disable=SC2086
    run_job c10d_ddp.py $DDP_FLAGS --reps "$REPS"
    echo "#   (DDP: $(($(date +%s) - start)) s)"
  fi
  echo "# load average at the end: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores"
  "$ROOT/tools/cluster" down --name $NAME --state-dir "$STATE" >/dev/null
done
