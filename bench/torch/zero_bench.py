#!/usr/bin/env python3
"""Sharded data parallel: memory per worker and step time of a GPT-2-medium-
shaped transformer (built here, d_model 1024, 16 heads; --layers blocks,
--vocab tokens: the defaults give 118M parameters) trained with Adam on --np
workers, one torch thread each, for each of:

  dist    cohort.torch DistributedOptimizer (plain data parallel)
  zero1   cohort.torch.ZeroRedundancyOptimizer(stage=1)
  zero2   cohort.torch.ZeroRedundancyOptimizer(stage=2)
  zero1v, zero2v  the same with parameters_as_bucket_view=True (the
          parameters are views of flat buffers the allgather writes into)
  fsdp    cohort.torch.FullyShardedDataParallel (stage 3): a unit per block,
          embedding and the head, no prefetch
  fsdp_pf the same with prefetch (the next unit's allgather during this one)
  torch   torch's ZeroRedundancyOptimizer under DistributedDataParallel, gloo

Memory per worker: peak RSS (VmHWM) and tensor accounting after a step:
parameters (fsdp: the shards, and the most gathered at once), gradients,
optimizer state. Step time: median over --steps timed steps after --warmup,
on rank 0. The modes alternate within each repetition; the table gives the
median over --reps repetitions and checks the issue's targets.

    /usr/bin/python3 bench/torch/zero_bench.py --np 2 --reps 3 [--build-dir build]
    (one worker: ... --worker MODE, started by the above)"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time

HERE = os.path.abspath(__file__)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
MODES = ["dist", "zero1", "zero2", "zero1v", "zero2v", "fsdp", "fsdp_pf", "torch"]


# ---- the model ----

def build_model(args):
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.heads = heads
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads) \
                .permute(2, 0, 3, 1, 4)
            att = (q @ k.transpose(-1, -2)) / (d // self.heads) ** 0.5
            mask = torch.ones(t, t, dtype=torch.bool).triu(1)
            y = att.masked_fill(mask, float("-inf")).softmax(-1) @ v
            x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
            return x + self.fc2(nn.functional.gelu(self.fc1(self.ln2(x))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            d = args.d_model
            self.tok, self.pos = nn.Embedding(args.vocab, d), nn.Embedding(args.seq, d)
            self.blocks = nn.ModuleList(Block(d, args.heads) for _ in range(args.layers))
            self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, args.vocab, bias=False)

        def forward(self, idx):
            x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
            for block in self.blocks:
                x = block(x)
            return self.head(self.ln(x))

    torch.manual_seed(0)
    return GPT(), Block


# ---- one worker ----

def peak_rss_bytes():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def tensor_bytes(tensors):
    return sum(t.numel() * t.element_size() for t in tensors if t is not None)


def state_tensors(optimizer):
    return [v for s in optimizer.state.values() for v in s.values() if hasattr(v, "numel")]


def setup(mode, args):
    """(model, optimizer, rank, size, the optimizer holding the state)."""
    import torch
    model, block_class = build_model(args)
    args.numel = sum(p.numel() for p in model.parameters())  # before any sharding
    args.layer_bytes = sum(p.numel() * p.element_size() for p in model.blocks[0].parameters())
    adam = dict(lr=1e-4)
    if mode == "torch":
        import torch.distributed as dist
        from torch.distributed.optim import ZeroRedundancyOptimizer
        dist.init_process_group("gloo")
        ddp = torch.nn.parallel.DistributedDataParallel(model)
        opt = ZeroRedundancyOptimizer(ddp.parameters(), torch.optim.Adam, **adam)
        return ddp, opt, dist.get_rank(), dist.get_world_size(), opt.optim
    import cohort.torch as hvd
    hvd.init()
    if mode.startswith("fsdp"):
        # A unit per block, embedding, the final LayerNorm and the head: the
        # root keeps nothing gathered through the whole forward.
        units = lambda m: isinstance(m, (block_class, torch.nn.Embedding)) or \
            m is model.head or m is model.ln
        model = hvd.FullyShardedDataParallel(model, wrap=units, prefetch=mode == "fsdp_pf")
        opt = torch.optim.Adam(model.parameters(), **adam)
        return model, opt, hvd.rank(), hvd.size(), opt
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    if mode == "dist":
        opt = hvd.DistributedOptimizer(torch.optim.Adam(model.parameters(), **adam),
                                       named_parameters=model.named_parameters())
        return model, opt, hvd.rank(), hvd.size(), opt
    opt = hvd.ZeroRedundancyOptimizer(model.parameters(), torch.optim.Adam,
                                      stage=int(mode[4]),
                                      parameters_as_bucket_view=mode.endswith("v"), **adam)
    return model, opt, hvd.rank(), hvd.size(), opt.optim


def worker(mode, args):
    import torch
    torch.set_num_threads(1)
    model, opt, rank, size, holder = setup(mode, args)
    gen = torch.Generator().manual_seed(rank)
    times = []
    for step in range(args.warmup + args.steps):
        idx = torch.randint(0, args.vocab, (args.batch, args.seq + 1), generator=gen)
        start = time.perf_counter()
        opt.zero_grad(set_to_none=False)
        logits = model(idx[:, :-1])
        torch.nn.functional.cross_entropy(logits.reshape(-1, args.vocab),
                                          idx[:, 1:].reshape(-1)).backward()
        opt.step()
        if step >= args.warmup:
            times.append(time.perf_counter() - start)
    params = list(model.parameters())
    result = dict(mode=mode, rank=rank, size=size, step_s=statistics.median(times),
                  rss=peak_rss_bytes(), params=tensor_bytes(params),
                  grads=tensor_bytes(p.grad for p in params),
                  state=tensor_bytes(state_tensors(holder)),
                  numel=args.numel, layer=args.layer_bytes,
                  gathered=getattr(model, "peak_gathered_numel", 0) * 4)
    print("result: " + json.dumps(result), flush=True)
    if mode == "torch":
        import torch.distributed as dist
        dist.barrier()
        dist.destroy_process_group()
    else:
        import cohort.torch as hvd
        hvd.shutdown()


# ---- the launcher ----

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker_flags(args):
    return ["--layers", str(args.layers), "--vocab", str(args.vocab), "--seq", str(args.seq),
            "--batch", str(args.batch), "--d-model", str(args.d_model), "--heads",
            str(args.heads), "--steps", str(args.steps), "--warmup", str(args.warmup)]


def run_mode(mode, args, build):
    cmd = [sys.executable, HERE, "--worker", mode] + worker_flags(args)
    # A fixed mmap threshold: freed tensors go back to the system at once, so
    # peak RSS follows the tensors alive (glibc's adaptive threshold would
    # keep freed gradient buffers in the heap). The same for every mode.
    env = dict(os.environ, COHORT_BUILD_DIR=build, PYTHONPATH=os.path.join(ROOT, "python"),
               MALLOC_MMAP_THRESHOLD_="131072")
    if mode != "torch":
        out = subprocess.run([os.path.join(build, "cohort"), "run", "-np", str(args.np), "--"]
                             + cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, timeout=args.timeout)
        outputs, failed = [out.stdout], out.returncode != 0
    else:
        port, procs = str(free_port()), []
        for rank in range(args.np):
            procs.append(subprocess.Popen(cmd, env=dict(
                env, RANK=str(rank), WORLD_SIZE=str(args.np), MASTER_ADDR="127.0.0.1",
                MASTER_PORT=port), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
        outputs = [p.communicate(timeout=args.timeout)[0] for p in procs]
        failed = any(p.returncode != 0 for p in procs)
    results = [json.loads(line.split("result: ", 1)[1]) for out in outputs
               for line in out.splitlines() if "result: " in line]
    if failed or len(results) != args.np:
        raise RuntimeError("%s failed:\n%s" % (mode, "\n".join(outputs)[-4000:]))
    return results


def summarize(runs):
    """Per mode: rank 0's step time, the largest per-rank figure of each memory kind."""
    out = {}
    for mode, reps in runs.items():
        pick = lambda key, f=max: statistics.median(f(r[key] for r in rep) for rep in reps)
        out[mode] = dict(step_s=statistics.median(
            next(r["step_s"] for r in rep if r["rank"] == 0) for rep in reps),
            rss=pick("rss"), params=pick("params"), grads=pick("grads"), state=pick("state"),
            gathered=pick("gathered"), numel=reps[0][0]["numel"], layer=reps[0][0]["layer"])
    return out


def report(summary, args):
    mb = 2.0**20
    print("# %d workers, 1 torch thread each; model %.1fM parameters (%d layers, d_model %d, "
          "vocab %d), batch %d x %d tokens, Adam; medians of %d repetitions" %
          (args.np, next(iter(summary.values()))["numel"] / 1e6, args.layers, args.d_model, args.vocab,
           args.batch, args.seq, args.reps))
    print("%-7s %9s %9s %9s %9s %9s %10s" % ("mode", "step_s", "rss_MB", "params_MB",
                                              "grads_MB", "optim_MB", "gather_MB"))
    for mode in [m for m in MODES if m in summary]:
        s = summary[mode]
        print("%-7s %9.3f %9.0f %9.0f %9.0f %9.0f %10.0f" % (
            mode, s["step_s"], s["rss"] / mb, s["params"] / mb, s["grads"] / mb,
            s["state"] / mb, s["gathered"] / mb))
    if "dist" not in summary:
        return  # the targets are relative to plain data parallel
    full = summary["dist"]
    for mode in ("zero1", "zero2", "zero1v", "zero2v"):
        if mode in summary:
            share = summary[mode]["state"] / full["state"]
            print("target %s optimizer state %.3f of unsharded <= 1/N + 0.05 = %.3f: %s" % (
                mode, share, 1 / args.np + 0.05, "met" if share <= 1 / args.np + 0.05 else
                "MISSED"))
            ratio = summary[mode]["step_s"] / full["step_s"]
            print("target %s step time %.3f x dist <= 1.1: %s" % (
                mode, ratio, "met" if ratio <= 1.1 else "MISSED"))
            if "torch" in summary:
                vs = summary[mode]["step_s"] / summary["torch"]["step_s"]
                print("target %s step time %.3f x torch ZeRO (gloo) < 1: %s" % (
                    mode, vs, "met" if vs < 1 else "MISSED"))
    for mode in ("fsdp", "fsdp_pf"):
        if mode not in summary:
            continue
        s = summary[mode]
        # Even shards pad each unit to a multiple of N: at most N-1 elements.
        padding = (args.layers + 5) * (args.np - 1) * 4
        limit = full["params"] / args.np + s["layer"] + padding
        held = s["params"] + s["gathered"]
        print("target %s parameters (shards %.1f MB + most gathered %.1f MB) = %.1f MB <= "
              "1/N + one layer (+ %d B padding) = %.1f MB: %s" % (
                  mode, s["params"] / mb, s["gathered"] / mb, held / mb, padding, limit / mb,
                  "met" if held <= limit else "MISSED"))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--np", type=int, default=2)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--modes", default=",".join(MODES))
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--d-model", type=int, default=1024)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--vocab", type=int, default=8192)
    p.add_argument("--seq", type=int, default=8)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--timeout", type=float, default=900, help="seconds per run")
    p.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    p.add_argument("--worker", choices=MODES, help=argparse.SUPPRESS)
    p.add_argument("--report", help="print the table from the `run:` lines of an earlier "
                   "invocation's output (FILE), without running anything")
    args = p.parse_args()
    if args.worker:
        return worker(args.worker, args)
    runs = {}
    if args.report:
        with open(args.report) as f:
            for line in f:
                if line.startswith("run: "):
                    results = json.loads(line[5:])
                    runs.setdefault(results[0]["mode"], []).append(results)
        args.reps = max(len(r) for r in runs.values())
        return report(summarize(runs), args)
    build = os.path.abspath(args.build_dir)
    for rep in range(args.reps):
        for mode in args.modes.split(","):
            results = run_mode(mode, args, build)
            runs.setdefault(mode, []).append(results)
            print("run: " + json.dumps(results), flush=True)  # kept if a later run fails
            r0 = next(r for r in results if r["rank"] == 0)
            print("rep %d %-7s step %.3f s, peak rss %.0f MB (load %s)" % (
                rep + 1, mode, r0["step_s"], max(r["rss"] for r in results) / 2.0**20,
                open("/proc/loadavg").read().split()[0]), file=sys.stderr, flush=True)
    report(summarize(runs), args)


if __name__ == "__main__":
    main()
