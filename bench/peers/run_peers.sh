#!/usr/bin/env bash
# run_peers.sh: side-by-side allreduce benchmark of cohort, Open MPI and
# PyTorch gloo on this machine (float32 sum, in place, N ranks), plus a
# single-core memcpy bandwidth reference. Prints one table of median times
# and bus bandwidths (see compare.py) and optionally writes it to --out.
#
# Usage (from anywhere; paths are relative to the repository root):
#   bench/peers/run_peers.sh [options]
#     -b SIZE          smallest message (default 4K;   env PEERS_MIN_BYTES)
#     -e SIZE          largest message  (default 256M; env PEERS_MAX_BYTES)
#     -f FACTOR        size step factor (default 2;    env PEERS_FACTOR)
#     -r, --reps R     repetitions of each tool (default 5; env PEERS_REPS)
#     --np N           ranks (default 2; env PEERS_NP)
#     --budget SIZE    bytes moved per size per repetition, which sets the
#                      iteration counts (default 2G; env PEERS_BUDGET)
#     --build-dir DIR  cohort's CMake build directory (default build;
#                      env PEERS_BUILD_DIR)
#     --tools LIST     comma-separated subset of cohort,mpi,gloo (default all)
#     --out FILE       also write the table to FILE (default: stdout only)
#     --keep DIR       keep the raw outputs in DIR (default: a temp dir, removed)
#     --no-wait        do not wait for an idle machine before each run
#     --max-wait S     wait at most S seconds for idle CPUs before a run
#                      (default 120; env PEERS_MAX_WAIT)
#     --retries K      rerun an invocation disturbed by other processes
#                      (they took > 25% of a CPU) up to K times (default 2;
#                      env PEERS_RETRIES)
#     --quick          smoke test: -b 4K -e 1M -f 4, 1 repetition, 16 iterations
#   Extra mpirun arguments: env MPIRUN_EXTRA (e.g. "--bind-to none").
#   Open MPI runs with its defaults. Note: for large messages its allreduce
#   mallocs a full-size temporary buffer per call, which glibc maps afresh
#   each time (page faults); MPIRUN_EXTRA="-x MALLOC_MMAP_THRESHOLD_=1073741824
#   -x MALLOC_TRIM_THRESHOLD_=4294967296" about doubled its busbw at 64M-256M
#   on the 2-core development VM. Name such a setting with any figure you publish.
#
# Iteration rule (compare.py `iterations`), identical for the three tools:
# each size moves about BUDGET bytes per repetition, n = BUDGET / size rounded
# down to a power of 4 and clamped to [4, 1024], warm-up max(2, n/8). Sizes
# sharing a count run in one invocation (-b/-e/-w/-n of that band), e.g. for
# the default sweep: 4K..2M n=1024, 4M..8M n=256, 16M..32M n=64,
# 64M..128M n=16, 256M n=4. Each tool reports the average time per call over
# n calls after a barrier, on the slowest rank (the maximum over the ranks,
# as `cohort bench` does); the table shows the median over the repetitions.
# The tools run interleaved (rep 1: cohort, mpi, gloo; rep 2: ...) so drift
# on the machine falls on all of them alike. Before each invocation the
# script waits for other processes to leave the CPUs idle, and it reruns an
# invocation during which they took CPU time (compare.py `run`): on a shared
# 2-core machine a concurrent compile would otherwise skew a measurement.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
PY=/usr/bin/python3  # Debian's python3 with python3-torch, not the one first on PATH

MIN_BYTES="${PEERS_MIN_BYTES:-4K}"
MAX_BYTES="${PEERS_MAX_BYTES:-256M}"
FACTOR="${PEERS_FACTOR:-2}"
REPS="${PEERS_REPS:-5}"
NP="${PEERS_NP:-2}"
BUDGET="${PEERS_BUDGET:-2G}"
BUILD_DIR="${PEERS_BUILD_DIR:-build}"
TOOLS="cohort,mpi,gloo"
OUT=""
KEEP=""
WAIT=1
MAX_WAIT="${PEERS_MAX_WAIT:-120}"
RETRIES="${PEERS_RETRIES:-2}"
NMAX=1024

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }

while [[ $# -gt 0 ]]; do
  case "$1" in
    -b) MIN_BYTES="$2"; shift 2 ;;
    -e) MAX_BYTES="$2"; shift 2 ;;
    -f) FACTOR="$2"; shift 2 ;;
    -r|--reps) REPS="$2"; shift 2 ;;
    --np) NP="$2"; shift 2 ;;
    --budget) BUDGET="$2"; shift 2 ;;
    --build-dir) BUILD_DIR="$2"; shift 2 ;;
    --tools) TOOLS="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --keep) KEEP="$2"; shift 2 ;;
    --no-wait) WAIT=0; shift ;;
    --max-wait) MAX_WAIT="$2"; shift 2 ;;
    --retries) RETRIES="$2"; shift 2 ;;
    --quick) MIN_BYTES=4K; MAX_BYTES=1M; FACTOR=4; REPS=1; BUDGET=16M; NMAX=16; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "run_peers.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
done

cd "$ROOT"
case "$BUILD_DIR" in /*) ;; *) BUILD_DIR="$ROOT/$BUILD_DIR" ;; esac
COHORT="$BUILD_DIR/cohort"
IFS=',' read -r -a TOOL_LIST <<< "$TOOLS"
for tool in "${TOOL_LIST[@]}"; do
  case "$tool" in cohort|mpi|gloo) ;; *) echo "run_peers.sh: unknown tool '$tool'" >&2; exit 2 ;; esac
done
if [[ ",$TOOLS," == *",cohort,"* && ! -x "$COHORT" ]]; then
  echo "run_peers.sh: $COHORT not found; build it (cmake -S . -B build -G Ninja &&" \
       "cmake --build build -j2), pass --build-dir, or run with --tools mpi,gloo" >&2
  exit 1
fi

# Scratch space: the peer binaries and the raw outputs.
WORK="$(mktemp -d "${TMPDIR:-/tmp}/cohort-peers.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
RAW="${KEEP:-$WORK/raw}"
mkdir -p "$RAW"
rm -f "$RAW"/*.out "$RAW"/*.err

echo "== building peer benchmarks" >&2
mpicc -O3 -o "$WORK/mpi_allreduce" "$HERE/mpi_allreduce.c"
cc -O3 -o "$WORK/memcpy_bandwidth" "$HERE/memcpy_bandwidth.c"

# Open MPI refuses to run as root unless told it is fine.
if [[ "$(id -u)" == 0 ]]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
read -r -a MPIRUN_EXTRA_ARGS <<< "${MPIRUN_EXTRA:-}"

mapfile -t BANDS < <("$PY" "$HERE/compare.py" plan -b "$MIN_BYTES" -e "$MAX_BYTES" -f "$FACTOR" \
                       --budget "$BUDGET" --nmax "$NMAX")
echo "== plan (min max warmup iters): ${BANDS[*]/%/;}" >&2

# The command of one tool for one band; prints it, one argument per line.
tool_command() {
  local tool="$1" b="$2" e="$3" w="$4" n="$5"
  local sweep=(-b "$b" -e "$e" -f "$FACTOR" -w "$w" -n "$n" -d float32 -o sum)
  case "$tool" in
    cohort) printf '%s\n' "$COHORT" run -np "$NP" -- "$COHORT" bench allreduce "${sweep[@]}" ;;
    mpi) printf '%s\n' mpirun --oversubscribe "${MPIRUN_EXTRA_ARGS[@]}" -np "$NP" \
           "$WORK/mpi_allreduce" "${sweep[@]}" ;;
    gloo) printf '%s\n' "$PY" "$HERE/gloo_allreduce.py" -np "$NP" "${sweep[@]}" ;;
  esac
}

# Runs one command through compare.py's guard: wait for idle CPUs, run,
# retry when other processes took CPU meanwhile; appends stdout to $1.
guarded() {
  local out="$1" err="$2"
  shift 2
  local guard=(--out "$out" --err "$err" --retries "$RETRIES" --max-wait "$MAX_WAIT")
  [[ "$WAIT" == 1 ]] || guard+=(--no-wait)
  "$PY" "$HERE/compare.py" run "${guard[@]}" -- "$@"
}

START=$(date +%s)
FAILED=0
for ((rep = 1; rep <= REPS; rep++)); do
  for tool in "${TOOL_LIST[@]}"; do
    echo "== rep $rep/$REPS: $tool ($(( $(date +%s) - START ))s elapsed)" >&2
    out="$RAW/$tool.$rep.out"
    : > "$out"
    for band in "${BANDS[@]}"; do
      read -r b e w n <<< "$band"
      mapfile -t cmd < <(tool_command "$tool" "$b" "$e" "$w" "$n")
      echo "   $b..$e B, w=$w n=$n" >&2
      if ! guarded "$out" "$RAW/$tool.$rep.err" "${cmd[@]}"; then
        echo "  warning: $tool failed (rep $rep, $b..$e B); see its stderr below" >&2
        tail -n 5 "$RAW/$tool.$rep.err" >&2
        FAILED=1
      fi
    done
  done
done

echo "== memcpy reference" >&2
guarded "$RAW/memcpy.txt" "$RAW/memcpy.err" "$WORK/memcpy_bandwidth"

HEADER="cohort vs Open MPI vs gloo, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs: $(
  grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
command: bench/peers/run_peers.sh -b $MIN_BYTES -e $MAX_BYTES -f $FACTOR -r $REPS --np $NP --budget $BUDGET --tools $TOOLS
plan (min max warmup iters per invocation): $(printf '%s; ' "${BANDS[@]}")
cohort:   $(tool_command cohort B E W N | tr '\n' ' ')
Open MPI: $(tool_command mpi B E W N | sed "s|$WORK/||" | tr '\n' ' ')($(mpirun --version 2>/dev/null | head -1))
gloo:     $(tool_command gloo B E W N | sed "s|$ROOT/||" | tr '\n' ' ')(torch $("$PY" -c 'import torch; print(torch.__version__)' 2>/dev/null))"
"$PY" "$HERE/compare.py" table --results "$RAW" --np "$NP" --memcpy "$RAW/memcpy.txt" \
  --header "$HEADER" > "$WORK/table.txt" || FAILED=1  # 3: some tool computed a wrong result
cat "$WORK/table.txt"
if [[ -n "$OUT" ]]; then
  mkdir -p "$(dirname "$OUT")"
  cp "$WORK/table.txt" "$OUT"
  echo "== table written to $OUT" >&2
fi
echo "== done in $(( $(date +%s) - START ))s" >&2
exit "$FAILED"
