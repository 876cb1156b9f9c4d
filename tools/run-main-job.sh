#!/usr/bin/env bash
# The README's first command: set up, then run the main job. For now the main
# job is a 2-worker allreduce on this machine that checks every result and
# prints a bandwidth table (later: a distributed training run).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
exec build/cohort run -np 2 -- build/cohort bench allreduce -b 4K -e 256M -f 4 -w 5 -n 20
