#!/usr/bin/env bash
# The one script a session with a GPU runs (docs/gpu.md, "On the GPU machine"):
#
#   OUT=/some/folder bash tools/device-check.sh [--dry-run] [--build-dir DIR]
#
# 1. build  the minimal tree (-DCOHORT_MINIMAL=ON) with 16 jobs and this
#           machine's python3 (pybind11 and torch from pip); the c10d
#           extension is built last, on its own, and may fail alone
# 2. device gpu_device_checks: the stack loads, every kernel compiles with
#           NVRTC and equals the host build on the device, stream ordering
# 3. collectives  gpu_collectives_worker --api real under `cohort run`:
#           every collective x dtype x op equals the CPU path with 2, 3 and 4
#           ranks sharing the GPU over CUDA IPC and staged, NCCL with one
#           rank, and a killed rank named by the survivors
#           and gpu_engine_worker --api real: GPU tensors through the engine
#           and the C API (2 ranks IPC, 3 staged, the refusals)
# 4. python cohort.torch, the c10d backend and the loader's device feed
#           with CUDA tensors (tests/python/test_gpu.py, test_c10d_gpu.py)
#           under `cohort run` with 2 ranks sharing the GPU (IPC) and 3
#           (staged); cohort.torch on CPU tensors with this torch 2.x
#           (test_collectives.py): no rebuild but the extension modules
# 5. bench  gpu_collectives_bench: allreduce 4 KiB - 1 GiB over IPC and
#           staged with 2 ranks, beside the device-to-device copy bandwidth;
#           then bench/gpu/torch_allreduce_bench.py: cohort.torch and gloo
#           with the same CUDA tensors, 2 ranks, 4 KiB - 256 MiB; the copy
#           with the GPU to one process; the host's wait for tiny GPU work
#           (bench/gpu/sync_latency.py) with 1 and 2 processes on the GPU;
#           cohort.torch's overhead on a ResNet-50 step (1 rank)
# 6. horovod  Horovod's test_torch.py with its GPU tests at 1 rank, where a
#           copy is at .hvd/test/parallel/test_torch.py or COHORT_HOROVOD_SUITE
# 7. mps    the IPC benchmark and the wait again under NVIDIA's MPS daemon
#
# Every stage has its own timeout and the script goes on after a failing one;
# the whole run stays inside 8 minutes (later stages are skipped, and said
# so, when time runs out). $OUT gets at most 8 files: summary.txt (one line
# per stage, then the benchmark table), env.txt, build.log, device.log,
# collectives.log, python.log, bench.log. Exit status: 0 when every stage passed.
#
# --dry-run checks the plumbing on a machine without a GPU: it builds (or
# reuses --build-dir), checks every program the stages call exists, that
# the device checks skip with a reason (exit 77), that a real-API worker
# and the benchmark fail with the missing driver named, that the Python GPU
# tests skip with their reason and the torch benchmark says there is nothing
# to measure, and prints each stage's command instead of running it.
set -uo pipefail
cd "$(dirname "$0")/.."
repo="$(pwd)"
dry_run=0
build_dir=""
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) dry_run=1 ;;
    --build-dir) build_dir="$(realpath -m "$2")"; shift ;;
    *) echo "usage: tools/device-check.sh [--dry-run] [--build-dir DIR]" >&2; exit 2 ;;
  esac
  shift
done
out="${OUT:-$repo/build-device-check-out}"
mkdir -p "$out"
summary="$out/summary.txt"
: >"$summary"
start=$(date +%s)
budget=${DEVICE_CHECK_BUDGET:-470}  # seconds: inside 8 minutes with room for the caller
failures=0
scale=1  # a dry run builds on a small machine: its build stages get longer

say() { echo "$*" | tee -a "$summary"; }
elapsed() { echo $(( $(date +%s) - start )); }
# stage NAME TIMEOUT LOG COMMAND...: runs it (bounded), records the result.
stage() {
  local name="$1" limit=$(( $2 * scale )) log="$3"; shift 3
  local left=$(( budget - $(elapsed) ))
  if [ "$left" -lt 15 ]; then
    say "SKIPPED $name: out of time ($(elapsed) s used)"
    failures=$((failures + 1))
    return 1
  fi
  [ "$limit" -gt "$left" ] && limit="$left"
  echo "== $name (timeout ${limit} s): $*" >>"$log"
  local t0=$(date +%s)
  timeout --kill-after=5 "$limit" "$@" >>"$log" 2>&1
  local rc=$?
  local took=$(( $(date +%s) - t0 ))
  echo "== $name: exit $rc after $took s" >>"$log"
  if [ $rc -eq 0 ]; then
    say "PASSED  $name (${took} s)"
  elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    say "TIMEOUT $name after ${limit} s (log: $(basename "$log"))"
    failures=$((failures + 1))
  else
    say "FAILED  $name: exit $rc (log: $(basename "$log"))"
    failures=$((failures + 1))
  fi
  return $rc
}

py="${PYTHON:-python3}"
jobs="${COHORT_BUILD_JOBS:-16}"
if [ $dry_run -eq 1 ]; then
  jobs="${COHORT_BUILD_JOBS:-2}"
  scale=8
  budget=$(( budget * scale ))
fi
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR="$repo" CCACHE_NOHASHDIR=1
fi

# ---- the machine
{
  echo "date: $(date -u +%FT%TZ)"
  echo "host: $(hostname), $(nproc) cores"
  nvidia-smi --query-gpu=name,driver_version,memory.total,pci.bus_id --format=csv 2>&1 || true
  echo "python: $("$py" --version 2>&1) at $(command -v "$py")"
  "$py" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1 || true
  command -v nvcc >/dev/null && nvcc --version | tail -2
  cmake --version | head -1
} >"$out/env.txt" 2>&1

# NVRTC and NCCL from torch's pip wheels, as the runtime finds them beside a
# loaded torch (a C++ program has no torch loaded, so name the folders).
site="$("$py" -c 'import site; print(site.getsitepackages()[0])' 2>/dev/null || true)"
if [ -n "$site" ]; then
  export COHORT_CUDA_LIBRARY_PATH="$site/nvidia/cu13/lib:$site/nvidia/cuda_nvrtc/lib:$site/nvidia/nccl/lib${COHORT_CUDA_LIBRARY_PATH:+:$COHORT_CUDA_LIBRARY_PATH}"
fi
echo "COHORT_CUDA_LIBRARY_PATH=${COHORT_CUDA_LIBRARY_PATH:-}" >>"$out/env.txt"

# ---- 1. build
build_log="$out/build.log"
: >"$build_log"
if [ -z "$build_dir" ]; then
  build_dir="$repo/build-device"
  pybind_dir="$("$py" -m pybind11 --cmakedir 2>/dev/null || true)"
  torch_prefix="$("$py" -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null || true)"
  configure=(cmake -S "$repo" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCOHORT_MINIMAL=ON
             "-DPYTHON_EXECUTABLE=$(command -v "$py")" "-DPython_EXECUTABLE=$(command -v "$py")"
             "-DPython3_EXECUTABLE=$(command -v "$py")")
  [ -n "$pybind_dir" ] && configure+=("-Dpybind11_DIR=$pybind_dir")
  [ -n "$torch_prefix" ] && configure+=("-DCMAKE_PREFIX_PATH=$torch_prefix")
  command -v ccache >/dev/null && configure+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  if ! stage "configure (with torch)" 90 "$build_log" "${configure[@]}"; then
    # A torch CMake config that cannot load must not cost the rest.
    stage "configure (without torch)" 60 "$build_log" "${configure[@]}" -DCOHORT_FIND_TORCH=OFF
  fi
  stage "build runtime, GPU tests and benchmark" 240 "$build_log" \
    cmake --build "$build_dir" -j "$jobs" --target cohort_cli cohort gpu_collectives_worker \
    gpu_engine_worker gpu_device_checks gpu_collectives_bench
  # The Python modules on their own: a missing Python.h or torch config
  # costs only them (configure says why in build.log).
  for target in cohort_py_runtime cohort_py_c10d; do
    if grep -q "build $target:" "$build_dir/build.ninja" 2>/dev/null ||
       grep -q "^build $target\b" "$build_dir/build.ninja" 2>/dev/null; then
      stage "build $target" 150 "$build_log" cmake --build "$build_dir" -j "$jobs" --target "$target"
    else
      say "SKIPPED build $target: not configured (see build.log)"
    fi
  done
fi
cohort="$build_dir/cohort"
worker="$build_dir/tests/gpu_collectives_worker"
engine_worker="$build_dir/tests/gpu_engine_worker"
checks="$build_dir/tests/gpu_device_checks"
bench="$build_dir/gpu_collectives_bench"
for program in "$cohort" "$worker" "$engine_worker" "$checks" "$bench"; do
  if [ ! -x "$program" ]; then
    say "MISSING $program"
    failures=$((failures + 1))
  fi
done

export COHORT_KERNEL_CACHE_DIR="$build_dir/kernel-cache"  # the device checks fill it for the rest
collectives_log="$out/collectives.log"
bench_log="$out/bench.log"
: >"$collectives_log"
: >"$bench_log"
# run_job NAME TIMEOUT LOG NP [VAR=VALUE...] -- PROGRAM ARGS...
run_job() {
  local name="$1" limit="$2" log="$3" np="$4"; shift 4
  local env_args=()
  while [ "$1" != "--" ]; do env_args+=("$1"); shift; done
  shift
  stage "$name" "$limit" "$log" env "${env_args[@]}" "$cohort" run -np "$np" --timeout 60 -- "$@"
}

# Python stages: this build's extension modules and the package in the tree.
python_log="$out/python.log"
: >"$python_log"
py_env=(COHORT_BUILD_DIR="$build_dir" PYTHONPATH="$repo/python" PYTHONDONTWRITEBYTECODE=1)
# run_pytest NAME TIMEOUT NP [VAR=VALUE...] -- FILE [PYTEST ARGS...]
run_pytest() {
  local name="$1" limit="$2" np="$3"; shift 3
  local env_args=("${py_env[@]}")
  while [ "$1" != "--" ]; do env_args+=("$1"); shift; done
  shift
  run_job "$name" "$limit" "$python_log" "$np" "${env_args[@]}" -- \
    "$(command -v "$py")" -m pytest -x -q -rs -p no:cacheprovider "$@"
}
torch_bench="$repo/bench/gpu/torch_allreduce_bench.py"

if [ $dry_run -eq 1 ]; then
  say "DRY RUN: checking the plumbing without a GPU"
  "$checks" >"$out/device.log" 2>&1
  rc=$?
  if [ $rc -eq 77 ] && grep -q "^SKIPPED: no GPU: CUDA driver not found (tried " "$out/device.log"; then
    say "PASSED  device checks skip with the reason"
  else
    say "FAILED  device checks: exit $rc, expected 77 and 'SKIPPED: no GPU: ...' (device.log)"
    failures=$((failures + 1))
  fi
  "$cohort" run -np 2 --timeout 30 -- "$worker" --api real check quick >"$collectives_log" 2>&1
  if [ $? -ne 0 ] && grep -q "GPU collectives not available: .*CUDA driver not found" "$collectives_log"; then
    say "PASSED  a real-API worker names the missing driver"
  else
    say "FAILED  real-API worker without a GPU (collectives.log)"
    failures=$((failures + 1))
  fi
  "$cohort" run -np 2 --timeout 30 -- "$engine_worker" --api real check >>"$collectives_log" 2>&1
  if [ $? -ne 0 ] && grep -q "no GPU: .*CUDA driver not found" "$collectives_log"; then
    say "PASSED  a real-API engine worker names the missing driver"
  else
    say "FAILED  real-API engine worker without a GPU (collectives.log)"
    failures=$((failures + 1))
  fi
  "$cohort" run -np 2 --timeout 30 -- "$bench" --max 64K >"$bench_log" 2>&1
  if [ $? -ne 0 ] && grep -q "CUDA driver: .*CUDA driver not found" "$bench_log"; then
    say "PASSED  the benchmark names the missing driver"
  else
    say "FAILED  benchmark without a GPU (bench.log)"
    failures=$((failures + 1))
  fi
  env "${py_env[@]}" "$cohort" run -np 2 --timeout 60 -- "$(command -v "$py")" -m pytest -q -rs \
    -p no:cacheprovider "$repo/tests/python/test_gpu.py" "$repo/tests/python/test_c10d_gpu.py" \
    >"$python_log" 2>&1
  if [ $? -eq 0 ] && grep -q "SKIPPED.*needs a CUDA device" "$python_log" &&
     ! grep -qE "[0-9]+ (passed|failed)" "$python_log"; then
    say "PASSED  the Python GPU tests skip with the reason"
  else
    say "FAILED  Python GPU tests without a GPU (python.log)"
    failures=$((failures + 1))
  fi
  env "${py_env[@]}" "$cohort" run -np 2 --timeout 60 -- "$(command -v "$py")" "$torch_bench" \
    >>"$bench_log" 2>&1
  if [ $? -eq 0 ] && grep -q "no CUDA device: nothing to measure" "$bench_log"; then
    say "PASSED  the torch benchmark says there is nothing to measure"
  else
    say "FAILED  torch benchmark without a GPU (bench.log)"
    failures=$((failures + 1))
  fi
  say "would run: $checks"
  for np in 2 3 4; do say "would run: $cohort run -np $np -- $worker --api real check"; done
  say "would run: COHORT_GPU_TRANSPORT=nccl $cohort run -np 1 -- $worker --api real --gpu-per-rank check"
  say "would run: $cohort run -np 2 -- $engine_worker --api real check (IPC; then 3 ranks staged, refuse)"
  say "would run: $cohort run -np 2 -- pytest tests/python/test_gpu.py test_c10d_gpu.py (IPC)"
  say "would run: COHORT_GPU_TRANSPORT=staged $cohort run -np 3 -- pytest tests/python/test_gpu.py"
  say "would run: $cohort run -np 2 -- pytest tests/python/test_collectives.py (torch on CPU)"
  say "would run: $cohort run -np 2 -- $bench (COHORT_GPU_TRANSPORT=ipc, then staged)"
  say "would run: $cohort run -np 2 -- $py $torch_bench --max 256M"
  say "would run: $cohort run -np 1 -- $bench (the copy with the GPU to itself)"
  say "would run: $cohort run -np 1, then 2 -- $py bench/gpu/sync_latency.py"
  say "would run: $cohort run -np 1 -- $py bench/gpu/resnet_overhead.py"
  say "would run: tests/horovod/run_suite.py --np 1 (Horovod's test_torch.py, where a copy is given)"
  say "would run: nvidia-cuda-mps-control -d; the IPC bench and sync_latency.py at 2 ranks; quit"
  say "dry run: $failures problem(s) in $(elapsed) s"
  [ $failures -eq 0 ]
  exit $?
fi

# ---- 2. device checks
stage "device checks (stack, NVRTC kernels = host build, ordering)" 150 "$out/device.log" "$checks"

# ---- 3. multi-process collectives on the one GPU
chunk=(COHORT_GPU_BUFFER_BYTES=2M)  # several IPC chunks at the worker's largest size
run_job "IPC, 2 ranks sharing the GPU: every collective = CPU path" 90 "$collectives_log" 2 \
  "${chunk[@]}" COHORT_GPU_TRANSPORT=ipc -- "$worker" --api real check
run_job "IPC, 3 ranks" 60 "$collectives_log" 3 "${chunk[@]}" COHORT_GPU_TRANSPORT=ipc -- \
  "$worker" --api real check quick
run_job "IPC, 4 ranks" 60 "$collectives_log" 4 "${chunk[@]}" COHORT_GPU_TRANSPORT=ipc -- \
  "$worker" --api real check quick
run_job "staged, 2 ranks" 60 "$collectives_log" 2 "${chunk[@]}" COHORT_GPU_TRANSPORT=staged -- \
  "$worker" --api real check quick
run_job "staged, 3 ranks as 2 emulated hosts (flat)" 60 "$collectives_log" 3 "${chunk[@]}" \
  COHORT_GPU_TRANSPORT=staged COHORT_TEST_HOSTS=0,0,1 -- "$worker" --api real check quick
run_job "staged hierarchical, 4 ranks as 2 emulated hosts" 60 "$collectives_log" 4 "${chunk[@]}" \
  COHORT_TEST_HOSTS=0,0,1,1 -- "$worker" --api real check quick
run_job "NCCL, 1 rank" 60 "$collectives_log" 1 COHORT_GPU_TRANSPORT=nccl -- \
  "$worker" --api real --gpu-per-rank check quick
# A killed rank: started with torchrun's variables, not `cohort run` (which
# would stop the survivors at the first death), so each survivor's verdict
# shows. Each must exit 0, having failed with an error naming rank 2.
killed_rank() {
  local port=$(( 20000 + RANDOM % 20000 )) pids=() r rc=0
  for r in 0 1 2; do
    RANK=$r WORLD_SIZE=3 LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
      COHORT_SECRET=device-check COHORT_TIMEOUT=30 COHORT_GPU_TRANSPORT=ipc \
      "$worker" --api real die >"$build_dir/die.$r.log" 2>&1 &
    pids+=($!)
  done
  for r in 0 1; do
    wait "${pids[$r]}" || rc=1
    cat "$build_dir/die.$r.log"
    grep -q "failed as expected.*rank 2 (host " "$build_dir/die.$r.log" || rc=1
  done
  wait "${pids[2]}"
  return $rc
}
stage "killed rank named by the survivors (IPC, 3 ranks)" 60 "$collectives_log" \
  bash -c "$(declare -f killed_rank); worker='$worker' build_dir='$build_dir' killed_rank"
# GPU tensors through the engine and the C API (no Python needed): every
# dtype x op = the host path, fusion on the device, a process set, refusals.
run_job "engine + C API, GPU tensors, 2 ranks sharing the GPU (IPC)" 90 "$collectives_log" 2 \
  "${chunk[@]}" COHORT_GPU_TRANSPORT=ipc COHORT_LOG_LEVEL=info -- "$engine_worker" --api real check
run_job "engine + C API, GPU tensors, 3 ranks, staged (and a process set)" 90 "$collectives_log" 3 \
  COHORT_GPU_TRANSPORT=staged -- "$engine_worker" --api real check
run_job "engine + C API: mixed and unsupported GPU tensors refused" 30 "$collectives_log" 2 -- \
  "$engine_worker" --api real refuse

# ---- 4. cohort.torch, c10d and the loader's feed with CUDA tensors (Python)
if env "${py_env[@]}" "$py" -c 'import pytest, numpy, torch, cohort.torch' >>"$python_log" 2>&1; then
  run_pytest "cohort.torch CUDA tensors, 2 ranks sharing the GPU (IPC)" 120 2 -- \
    "$repo/tests/python/test_gpu.py"
  run_pytest "c10d backend: CUDA allreduce/broadcast, DDP on CUDA = gloo" 90 2 -- \
    "$repo/tests/python/test_c10d_gpu.py"
  run_pytest "cohort.torch CUDA tensors, 3 ranks, staged" 90 3 COHORT_GPU_TRANSPORT=staged -- \
    "$repo/tests/python/test_gpu.py" -k "allreduce or grouped or broadcast"
  if ! run_pytest "cohort.torch with this torch on CPU tensors (test_collectives.py)" 90 2 -- \
      "$repo/tests/python/test_collectives.py" && command -v cuda-gdb >/dev/null; then
    # The machine has no gdb; cuda-gdb debugs host code too: every thread's
    # stack at a crash, for the log.
    run_job "test_collectives.py again under cuda-gdb (stacks at a crash)" 60 "$python_log" 2 \
      "${py_env[@]}" -- cuda-gdb -q -batch -ex run -ex "thread apply all bt 25" --args \
      "$(command -v "$py")" -m pytest -x -q -p no:cacheprovider "$repo/tests/python/test_collectives.py"
  fi
else
  say "FAILED  python: pytest, numpy, torch or cohort.torch does not import (python.log)"
  failures=$((failures + 1))
fi

# ---- 5. benchmarks
for transport in ipc staged; do
  run_job "bench allreduce, $transport, 2 ranks" 120 "$bench_log" 2 COHORT_GPU_TRANSPORT=$transport -- \
    "$bench" --iters 20
done

run_job "bench cohort.torch vs gloo with CUDA tensors, 2 ranks" 90 "$bench_log" 2 "${py_env[@]}" -- \
  "$(command -v "$py")" "$torch_bench" --max 256M --iters 10

# The yardsticks with the GPU to one process: the copy bandwidth no sharing
# slows, and the host's wait for a tiny piece of GPU work alone and shared.
run_job "bench 1 rank: device-to-device copy with the GPU to itself" 60 "$bench_log" 1 -- \
  "$bench" --iters 20
for np in 1 2; do
  run_job "host wait for tiny GPU work, $np process(es) on the GPU" 60 "$bench_log" $np -- \
    "$(command -v "$py")" "$repo/bench/gpu/sync_latency.py"
done
run_job "ResNet-50 step: cohort.torch overhead over plain torch, 1 rank" 150 "$bench_log" 1 \
  "${py_env[@]}" -- "$(command -v "$py")" "$repo/bench/gpu/resnet_overhead.py"

# Horovod's own test_torch.py, its GPU tests included, at 1 rank (its tests
# put rank r on device r). Horovod's file is not in the repository: a copy
# at .hvd/test/parallel/test_torch.py (carried by the caller) or
# COHORT_HOROVOD_SUITE names it.
hvd_suite="${COHORT_HOROVOD_SUITE:-$repo/.hvd}"
if [ -f "$hvd_suite/test/parallel/test_torch.py" ] || [ -f "$hvd_suite" ]; then
  stage "Horovod's test_torch.py with CUDA, 1 rank" 180 "$python_log" env "${py_env[@]}" \
    "$(command -v "$py")" "$repo/tests/horovod/run_suite.py" --suite "$hvd_suite" \
    --cohort "$cohort" --stage "$build_dir/horovod_suite_np1" --np 1 --timeout 170
else
  say "SKIPPED Horovod's test_torch.py: no copy at $hvd_suite (COHORT_HOROVOD_SUITE)"
fi

# Last, as it changes how every later CUDA process shares the GPU: the IPC
# allreduce with the NVIDIA MPS daemon (one shared context, no time slices).
mps_bench() {
  command -v nvidia-cuda-mps-control >/dev/null || { echo "no nvidia-cuda-mps-control"; return 1; }
  export CUDA_MPS_PIPE_DIRECTORY="$build_dir/mps-pipe" CUDA_MPS_LOG_DIRECTORY="$build_dir/mps-log"
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  nvidia-cuda-mps-control -d || return 1
  local rc=0
  COHORT_GPU_TRANSPORT=ipc "$cohort" run -np 2 --timeout 60 -- "$bench" --max 256M --iters 20 || rc=1
  "$cohort" run -np 2 --timeout 60 -- "$py" "$repo/bench/gpu/sync_latency.py" || rc=1
  echo quit | nvidia-cuda-mps-control
  cat "$CUDA_MPS_LOG_DIRECTORY"/control.log 2>/dev/null | tail -5
  return $rc
}
echo "# MPS" >>"$bench_log"
stage "bench allreduce, ipc, 2 ranks under MPS" 90 "$bench_log" \
  bash -c "$(declare -f mps_bench); cohort='$cohort' bench='$bench' py='$(command -v "$py")' repo='$repo' build_dir='$build_dir' mps_bench"

{
  echo
  echo "benchmark (nccl-tests columns; time = median; d2d = device-to-device copy of the same bytes):"
  sed -n 's/^\[0\] //p' "$bench_log" | grep -E '^#|^ +[0-9]' || true
  grep -E '^rank [0-9]+ of|^step time|^# (device|resnet)' "$bench_log" | sed 's/^\[[0-9]*\] //' || true
  echo
  echo "$failures stage(s) failed; $(elapsed) s in all"
} >>"$summary"
tail -n 30 "$summary"
[ $failures -eq 0 ]
