#!/bin/bash
# The scheduling benchmarks of docs/performance.md ("Scheduling policy"):
# the simulated cluster (256 hosts x 8 slots, 10,000 jobs of 1-64 slots,
# 8 users) under cohort's policy, FIFO and strict priority, then one
# scheduling pass over 10,000 pending jobs. Usage: bench/sched/run.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build}
uptime
for seed in 1 2 3; do
  "$build/cohort" sched simulate --synthetic --hosts 256 --slots-per-host 8 --jobs 10000 \
    --users 8 --seed "$seed" --json
done
"$build/sched_pass_bench" --pending 10000 --repeats 21
uptime
