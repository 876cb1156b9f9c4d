#!/usr/bin/env bash
# compression_hosts.sh: PowerSGD and top-k compressed on every rank vs once
# per host by each host's leader vs once per host sharded over the host's
# ranks (python/cohort/torch/host_reduction.py): 4 cohort ranks as 2
# emulated hosts x 2 workers (tools/cluster namespaces, links shaped to
# --rate), ResNet-18 on random images through
# bench/multihost/training_bench.sh. Prints per run kind the median images/s
# per worker, rank 0's step time and the bytes its host sent per step.
#
# Usage (as root, from the repository root, after building cohort into build/):
#   bench/torch/compression_hosts.sh [--reps 3] [--rate 1gbit] [--kinds "LIST"]
#       [-- synthetic_training.py flags]
# Kinds: cohort:COMPRESSION[@SCOPE][+sync] (bench/torch/synthetic_training.py
# --compression): @rank compresses on every rank, @leader once per host by
# the host's leader, @host once per host sharded (the default where hosts
# are of equal size), +sync reduces every group at synchronize() (no
# overlap), e.g. --kinds "cohort:powersgd2@host cohort:powersgd2@host+sync".
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPS=3
RATE=1gbit
KINDS="cohort:none cohort:powersgd2@rank cohort:powersgd2@leader cohort:powersgd2@host
       cohort:topk1@rank cohort:topk1@leader cohort:topk1@host"
WORKER_FLAGS=(--model resnet18 --image-size 64 --batch-size 8 --warmup-steps 3
  --steps-per-iter 2 --iters 3 --threads 1)
while [ $# -gt 0 ]; do
  case "$1" in
    --reps) REPS="$2"; shift 2 ;;
    --rate) RATE="$2"; shift 2 ;;
    --kinds) KINDS="$2"; shift 2 ;;
    --) shift; WORKER_FLAGS+=("$@"); break ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "compression_hosts: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
# Its own namespaces and subnet (chost-h*, 10.77.249.*): another benchmark's
# cluster (training_bench.sh's default ctrain) is left alone.
exec "$HERE/../multihost/training_bench.sh" --rate "$RATE" --hosts 2 --workers 2 \
  --reps "$REPS" --timeout 600 --name chost --subnet 10.77.249 --kinds "$(echo $KINDS)" \
  -- "${WORKER_FLAGS[@]}"
