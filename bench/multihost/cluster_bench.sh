#!/usr/bin/env bash
# cluster_bench.sh: allreduce across emulated hosts (tools/cluster): cohort
# (`cohort run -H ... cohort bench allreduce`), torch gloo
# (bench/peers/gloo_allreduce.py --worker, started on each host by cohort run)
# and Open MPI (mpirun over the cluster's ssh, bench/peers/mpi_allreduce.c),
# one rank per host, float32 sum in place. For each link rate and host count it
# brings up a cluster, runs the tools interleaved REPS times and prints the
# median time and busbw per size, busbw as a share of the shaped link rate, and
# each peer's ratio to cohort.
#
# Usage (as root, from anywhere):
#   bench/multihost/cluster_bench.sh [--rates "1gbit 10gbit"] [--hosts "2 3 4"]
#       [--sizes "4K 16M 64M"] [--reps 3] [--tools cohort,gloo,mpi] [--mtu 1500] [--build-dir build]
#       [--seconds 2]   (link time per measurement: more gives steadier figures)
# Needs: a build with the `cohort` binary, root (namespaces), mpicc/mpirun for
# mpi, /usr/bin/python3 with torch for gloo.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
RATES="1gbit 10gbit"
HOSTS="2 3 4"
SIZES="4K 16M 64M"
REPS=3
TOOLS="cohort,gloo,mpi"
BUILD_DIR=build
MTU=1500
SECONDS_PER_RUN=2
NAME=cbench
SUBNET=10.77.250

while [ $# -gt 0 ]; do
  case "$1" in
    --rates) RATES="$2"; shift 2 ;;
    --hosts) HOSTS="$2"; shift 2 ;;
    --sizes) SIZES="$2"; shift 2 ;;
    --reps) REPS="$2"; shift 2 ;;
    --tools) TOOLS="$2"; shift 2 ;;
    --build-dir) BUILD_DIR="$2"; shift 2 ;;
    --mtu) MTU="$2"; shift 2 ;;
    --seconds) SECONDS_PER_RUN="$2"; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "cluster_bench: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
case "$BUILD_DIR" in /*) ;; *) BUILD_DIR="$ROOT/$BUILD_DIR" ;; esac
COHORT="$BUILD_DIR/cohort"
[ -x "$COHORT" ] || { echo "cluster_bench: no $COHORT (build the cohort target)" >&2; exit 1; }
STATE="/tmp/cohort-cluster-$NAME"
RAW="$(mktemp -d /tmp/cluster-bench.XXXXXX)"
trap '"$ROOT/tools/cluster" down --name $NAME --state-dir $STATE >/dev/null 2>&1 || true; rm -rf "$RAW"' EXIT

has_tool() { [[ ",$TOOLS," == *",$1,"* ]]; }

MPI_BIN="$RAW/mpi_allreduce"
if has_tool mpi; then
  mpicc -O3 -o "$MPI_BIN" "$ROOT/bench/peers/mpi_allreduce.c"
fi

bytes() { /usr/bin/python3 -c "import sys; t=sys.argv[1]; u={'K':1<<10,'M':1<<20,'G':1<<30}; print(int(t[:-1])*u[t[-1]] if t[-1] in u else int(t))" "$1"; }

# Timed calls per size: ~2 s of traffic at the link rate, at least 5.
iters_for() {  # size_bytes rate
  /usr/bin/python3 -c "
import sys
size, rate, seconds = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
bits = float(rate[:-4]) * {'g': 1e9, 'm': 1e6, 'k': 1e3}[rate[-4]]
print(max(5, min(200, int(seconds * bits / 8 / (2 * size)))))" "$1" "$2" "$SECONDS_PER_RUN"
}

# Prints "size time_us busbw" lines from nccl-tests-layout output on stdin.
table_rows() { sed 's/^\[[0-9]*\] //' | awk '$1 ~ /^[0-9]+$/ && NF >= 8 {print $1, $5, $7, $NF}'; }

run_tool() {  # tool hosts size iters -> appends "tool size time busbw wrong" to $RAW/rows
  local tool=$1 h=$2 size=$3 n=$4 list="" addr0 i
  for ((i = 1; i <= h; i++)); do list+="${list:+,}$SUBNET.$i"; done
  addr0="$SUBNET.1"
  local ssh_cmd="ssh -F $STATE/ssh_config"
  local args=(-b "$size" -e "$size" -w 2 -n "$n")
  case "$tool" in
    cohort)
      "$COHORT" run -np "$h" -H "$list" --ssh-command "$ssh_cmd" --timeout 120 -- \
        "$COHORT" bench allreduce "${args[@]}" ;;
    gloo)
      "$COHORT" run -np "$h" -H "$list" --ssh-command "$ssh_cmd" -- sh -c \
        "RANK=\$COHORT_RANK WORLD_SIZE=\$COHORT_SIZE LOCAL_RANK=0 MASTER_ADDR=$addr0 MASTER_PORT=29555 \
         GLOO_SOCKET_IFNAME=eth0 exec /usr/bin/python3 $ROOT/bench/peers/gloo_allreduce.py --worker $(printf '%s ' "${args[@]}")" ;;
    mpi)
      mpirun --allow-run-as-root -np "$h" -H "$(echo "$list" | sed 's/\([0-9.]*\)/\1:1/g')" \
        --mca plm_rsh_agent "$ssh_cmd" --mca btl tcp,self --mca btl_tcp_if_include "$SUBNET.0/24" \
        --mca oob_tcp_if_include "$SUBNET.0/24" "$MPI_BIN" "${args[@]}" ;;
  esac 2>"$RAW/err" | table_rows | while read -r s t b w; do
    echo "$tool $s $t $b $w"
  done >>"$RAW/rows"
  if [ -s "$RAW/err" ] && grep -qiE "error|fail" "$RAW/err"; then echo "cluster_bench: $tool:" >&2; cat "$RAW/err" >&2; fi
}

echo "# allreduce across emulated hosts (tools/cluster), 1 rank per host, float32 sum, in place"
echo "# link MTU $MTU; median of $REPS interleaved runs; machine: $(nproc) cores, shared with other work"
printf "%-6s %-5s %9s %-7s %11s %10s %8s %8s\n" rate hosts size tool "time(us)" "busbw" "%link" "vs-cohort"
for rate in $RATES; do
  for h in $HOSTS; do
    "$ROOT/tools/cluster" up --hosts "$h" --rate "$rate" --mtu "$MTU" --name $NAME --subnet $SUBNET --state-dir "$STATE" >/dev/null
    : >"$RAW/rows"
    for size in $SIZES; do
      n=$(iters_for "$(bytes "$size")" "$rate")
      for ((rep = 0; rep < REPS; rep++)); do
        for tool in ${TOOLS//,/ }; do
          echo "  [$rate, $h hosts, $size, rep $((rep + 1))/$REPS] $tool ($n iterations)" >&2
          run_tool "$tool" "$h" "$size" "$n"
        done
      done
    done
    /usr/bin/python3 - "$RAW/rows" "$rate" "$h" <<'EOF'
import statistics, sys
rows, rate, hosts = sys.argv[1], sys.argv[2], sys.argv[3]
link = float(rate[:-4]) * {"g": 1e9, "m": 1e6, "k": 1e3}[rate[-4]] / 8 / 1e9  # GB/s
data = {}
for line in open(rows):
    tool, size, t, busbw, wrong = line.split()
    if int(wrong) != 0:
        print(f"# {tool} {size}: {wrong} wrong elements", file=sys.stderr)
    data.setdefault((int(size), tool), []).append((float(t), float(busbw)))
for size in sorted({s for s, _ in data}):
    base = data.get((size, "cohort"))
    for tool in ("cohort", "gloo", "mpi"):
        if (size, tool) not in data:
            continue
        t = statistics.median(x[0] for x in data[(size, tool)])
        # busbw from the median time (the tools print it with 3 decimals only)
        b = size / (t * 1e-6) * 2 * (int(hosts) - 1) / int(hosts) / 1e9
        ratio = ""
        if base and tool != "cohort":
            # time ratio for small messages (latency), busbw ratio for large
            bt = statistics.median(x[0] for x in base)
            bb = size / (bt * 1e-6) * 2 * (int(hosts) - 1) / int(hosts) / 1e9
            ratio = f"{t / bt:.2f}x t" if size <= 65536 else f"{bb / b:.2f}x bw"
        print(f"{rate:<6} {hosts:<5} {size:>9} {tool:<7} {t:>11.1f} {b:>10.4f} {100 * b / link:>7.1f}% {ratio:>8}")
EOF
  done
done
