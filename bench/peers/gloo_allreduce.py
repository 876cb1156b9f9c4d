#!/usr/bin/python3
"""gloo_allreduce.py: peer benchmark of PyTorch's gloo allreduce, reported in
the nccl-tests layout so it can be set side by side with `cohort bench
allreduce` (see run_peers.sh / compare.py).

Operation: torch.distributed.all_reduce(tensor, op=SUM) on a CPU float32
tensor, in place, backend "gloo", over loopback TCP on this machine.

The script spawns its own ranks: the parent picks a free port on 127.0.0.1,
starts -np copies of itself as workers (MASTER_ADDR/MASTER_PORT/RANK/
WORLD_SIZE in the environment, init_method env://), relays rank 0's output
and returns the first non-zero worker status.

Measurement, per size of the sweep (-b, -b*f, ... <= -e), same rule as
mpi_allreduce.c:
  - w warm-up calls, then a barrier, then n timed calls;
  - time = elapsed wall time of the n calls / n on the slowest rank (the
    maximum over the ranks, as `cohort bench` reports it);
  - algbw = size / time, busbw = algbw * 2(nranks-1)/nranks (GB/s = 1e9 B/s);
  - #wrong: the tensor is refilled with small integers, one more allreduce
    runs, and every element is compared with the exact sum; summed over ranks.

Run with Debian's torch (python3-torch 1.13):
  /usr/bin/python3 bench/peers/gloo_allreduce.py -b 4K -e 256M -f 2 -w 5 -n 20
"""
import argparse
import datetime
import os
import socket
import subprocess
import sys
import time


def parse_size(text):
    """Parses '4096', '4K', '64M', '1G' (binary multiples, as nccl-tests)."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip()
    scale = units.get(text[-1:].upper(), 1)
    digits = text[:-1] if scale != 1 else text
    value = int(digits) * scale
    if value < 4:
        raise argparse.ArgumentTypeError("size must be at least 4 bytes: %r" % text)
    return value


def parse_args(argv):
    parser = argparse.ArgumentParser(description="gloo allreduce benchmark (nccl-tests layout)")
    parser.add_argument("-b", type=parse_size, default=parse_size("4K"), help="min bytes")
    parser.add_argument("-e", type=parse_size, default=parse_size("256M"), help="max bytes")
    parser.add_argument("-f", type=int, default=2, help="size multiplication factor")
    parser.add_argument("-w", type=int, default=5, help="warm-up iterations")
    parser.add_argument("-n", type=int, default=20, help="timed iterations")
    parser.add_argument("-d", default="float32", choices=["float32", "float"], help="data type")
    parser.add_argument("-o", default="sum", choices=["sum"], help="reduction")
    parser.add_argument("-np", type=int, default=2, help="number of ranks to spawn")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.f < 2 or args.w < 0 or args.n < 1 or args.np < 1 or args.e < args.b:
        parser.error("need -f >= 2, -w >= 0, -n >= 1, -np >= 1, -e >= -b")
    return args


def sweep(args):
    size = args.b
    while size <= args.e:
        yield size
        size *= args.f


def pattern(torch, rank, count):
    """Rank r's values: small integers in [-8, 8], so every float sum is exact.
    Element i is ((7 i + 13 r) mod 17) - 8, as in mpi_allreduce.c; the
    sequence has period 17, so it is built by repeating one period."""
    period = ((torch.arange(17, dtype=torch.int64) * 7 + rank * 13) % 17 - 8).to(torch.float32)
    return period.repeat((count + 16) // 17)[:count]


def worker(args):
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)  # one core per rank, like the MPI and cohort ranks
    # Every gloo wait (rendezvous, each collective) fails after 5 minutes
    # instead of the default 30, so a lost rank ends the run soon.
    dist.init_process_group("gloo", init_method="env://",
                            timeout=datetime.timedelta(seconds=300))
    rank, nranks = dist.get_rank(), dist.get_world_size()

    buf = torch.zeros(args.e // 4, dtype=torch.float32)  # faults the pages in
    if rank == 0:
        print("# gloo_allreduce: torch %s gloo, %d ranks, in place, warmup %d, iters %d"
              % (torch.__version__, nranks, args.w, args.n))
        print("#%12s %12s %9s %7s %9s %9s %9s %7s"
              % ("size", "count", "type", "redop", "time", "algbw", "busbw", "#wrong"))
        print("#%12s %12s %9s %7s %9s %9s %9s %7s"
              % ("(B)", "(elements)", "", "", "(us)", "(GB/s)", "(GB/s)", ""))
        sys.stdout.flush()

    total_wrong = 0
    busbw_sum = 0.0
    sizes = list(sweep(args))
    for size in sizes:
        count = size // 4
        t = buf[:count]
        mine = pattern(torch, rank, count)
        t.copy_(mine)
        for _ in range(args.w):
            dist.all_reduce(t, op=dist.ReduceOp.SUM)
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(args.n):
            dist.all_reduce(t, op=dist.ReduceOp.SUM)
        seconds = torch.tensor([(time.perf_counter() - t0) / args.n], dtype=torch.float64)
        dist.all_reduce(seconds, op=dist.ReduceOp.MAX)
        seconds = seconds.item()

        # Correctness: one more allreduce on fresh data, checked element by element.
        t.copy_(mine)
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
        expected = sum(pattern(torch, r, count) for r in range(nranks))
        wrong = torch.tensor([int((t != expected).sum().item())], dtype=torch.int64)
        dist.all_reduce(wrong, op=dist.ReduceOp.SUM)
        wrong = int(wrong.item())
        total_wrong += wrong

        algbw = size / seconds / 1e9
        busbw = algbw * 2.0 * (nranks - 1) / nranks
        busbw_sum += busbw
        if rank == 0:
            print(" %12d %12d %9s %7s %9.2f %9.2f %9.2f %7d"
                  % (size, count, "float32", "sum", seconds * 1e6, algbw, busbw, wrong))
            sys.stdout.flush()
        del mine, expected
    if rank == 0:
        print("# Out of bounds values : %d %s" % (total_wrong, "FAILED" if total_wrong else "OK"))
        print("# Avg bus bandwidth    : %.4f" % (busbw_sum / max(1, len(sizes))))
    dist.destroy_process_group()
    return 1 if total_wrong else 0


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(args, argv):
    """Starts args.np workers of this script; rank 0's stdout passes through."""
    env = dict(os.environ)
    env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
               WORLD_SIZE=str(args.np))
    env.setdefault("GLOO_SOCKET_IFNAME", "lo")  # loopback: this is a one-machine benchmark
    procs = []
    for rank in range(args.np):
        env_r = dict(env, RANK=str(rank), LOCAL_RANK=str(rank))
        procs.append(subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--worker"] + argv,
            env=env_r, stdout=None if rank == 0 else subprocess.DEVNULL))
    status = 0
    for p in procs:
        rc = p.wait()
        if rc != 0 and status == 0:
            status = rc
            for other in procs:  # one rank failed: do not leave the others hanging
                if other.poll() is None:
                    other.terminate()
    return status


def main():
    argv = sys.argv[1:]
    args = parse_args(argv)
    if args.worker:
        return worker(args)
    return launch(args, [a for a in argv if a != "--worker"])


if __name__ == "__main__":
    sys.exit(main())
