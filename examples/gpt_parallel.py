#!/usr/bin/env python3
"""A small GPT trained with any mix of data, pipeline and tensor parallelism
(cohort.torch.parallel), on a synthetic corpus (a seeded Markov chain over
the vocabulary, so the loss has somewhere to go).

    build/cohort run -np 4 -- /usr/bin/python3 examples/gpt_parallel.py --pp 2 --tp 2
    build/cohort run -np 4 -- /usr/bin/python3 examples/gpt_parallel.py --dp 2 --pp 2 --zero 1
    build/cohort run -np 2 -- /usr/bin/python3 examples/gpt_parallel.py --pp 2 \\
        --schedule interleaved --virtual-stages 2
    /usr/bin/python3 examples/gpt_parallel.py          # the unsharded model, one process

dp*pp*tp must be the job size (a 1-rank job with all three 1 trains the
plain torch model: nn.Linear, nn.Embedding, F.cross_entropy, no cohort).
One rank prints `step N loss X` per step, X the whole batch's loss, so
layouts compare line by line; then `result: {...}` (JSON: tokens/s, the
parameter and optimizer-state bytes on each rank). Initialization is
seeded per layer, so every layout starts from the same weights."""
import argparse
import json
import math
import time

import torch
import torch.nn.functional as F
from torch import nn


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dp", type=int, default=None, help="data-parallel size (default: the "
                        "ranks pp and tp leave)")
    parser.add_argument("--pp", type=int, default=1, help="pipeline stages (ranks)")
    parser.add_argument("--tp", type=int, default=1, help="tensor-parallel size")
    parser.add_argument("--schedule", default="1f1b", choices=("gpipe", "1f1b", "interleaved"))
    parser.add_argument("--virtual-stages", type=int, default=1,
                        help="model chunks per pipeline rank (the interleaved schedule)")
    parser.add_argument("--micro-batches", type=int, default=4)
    parser.add_argument("--partition", default="balanced",
                        help="layers per stage: 'balanced' (by parameter count), 'uniform', "
                        "or counts such as 3,2,2,3")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch-size", type=int, default=8, help="sequences per step, all ranks")
    parser.add_argument("--seq-len", type=int, default=32)
    parser.add_argument("--layers", type=int, default=4, help="transformer blocks")
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--vocab", type=int, default=64)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--optimizer", default="adamw", choices=("adamw", "sgd"),
                        help="sgd: momentum 0.9 (Adam turns the rounding noise of gradients "
                        "that are zero in exact arithmetic, like attention's key bias, into "
                        "steps of size lr, so its weights differ between layouts by more "
                        "than the loss does)")
    parser.add_argument("--zero", type=int, default=0, choices=(0, 1, 2),
                        help="ZeRO stage over the data-parallel ranks")
    parser.add_argument("--sequence-parallel", action="store_true")
    parser.add_argument("--recompute", action="store_true", help="activation recomputation")
    parser.add_argument("--checkpoint-dir", default=None,
                        help="save a sharded checkpoint there after the last step; resume from "
                        "the newest one there first")
    parser.add_argument("--state-out", default=None,
                        help="unsharded model only: torch.save its state_dict there at the end")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per rank")
    return parser.parse_args(argv)


# ---- the model: [sequence, batch, hidden] activations, as Megatron's ----

class Parts:
    """Builds each layer either unsharded (plain torch) or tensor-parallel."""

    def __init__(self, args, mesh=None):
        self.args, self.mesh = args, mesh
        self.sp = bool(mesh is not None and args.sequence_parallel and mesh.tp.size > 1)

    def column(self, i, o):
        if self.mesh is None:
            return nn.Linear(i, o)
        from cohort.torch.parallel import ColumnParallelLinear
        return ColumnParallelLinear(i, o, self.mesh.tp, sequence_parallel=self.sp)

    def row(self, i, o):
        if self.mesh is None:
            return nn.Linear(i, o)
        from cohort.torch.parallel import RowParallelLinear
        return RowParallelLinear(i, o, self.mesh.tp, sequence_parallel=self.sp)

    def norm(self, n):
        norm = nn.LayerNorm(n)
        if self.sp:
            from cohort.torch.parallel import mark_sequence_parallel
            mark_sequence_parallel(norm)
        return norm

    @property
    def tp_size(self):
        return 1 if self.mesh is None else self.mesh.tp.size


class Embedding(nn.Module):
    """Token and position embeddings: ids [batch, seq] -> [seq, batch, width]
    (with sequence parallelism, this rank's rows of the sequence)."""

    def __init__(self, parts):
        super().__init__()
        a = parts.args
        if parts.mesh is None:
            self.token = nn.Embedding(a.vocab, a.width)
        else:
            from cohort.torch.parallel import VocabParallelEmbedding
            self.token = VocabParallelEmbedding(a.vocab, a.width, parts.mesh.tp,
                                                sequence_parallel=parts.sp)
        with torch.no_grad():
            self.token.weight.mul_(0.02)  # GPT-2's scale (drawn as nn.Embedding draws it)
        self.position = nn.Parameter(torch.randn(a.seq_len, a.width) * 0.02)
        self.sp, self.mesh = parts.sp, parts.mesh
        if parts.sp:
            self.position.sequence_parallel = True

    def forward(self, ids):
        x = self.token(ids.t())
        positions = self.position[:ids.shape[1]]
        if self.sp:
            rows = x.shape[0]
            positions = positions[self.mesh.tp.rank * rows:(self.mesh.tp.rank + 1) * rows]
        return x + positions.unsqueeze(1)


class Block(nn.Module):
    """Pre-norm transformer block; attention heads split over tp."""

    def __init__(self, parts):
        super().__init__()
        a = parts.args
        self.heads = a.heads // parts.tp_size
        self.head_dim = a.width // a.heads
        self.norm1 = parts.norm(a.width)
        # Rows of qkv are [head][q, k, v][head_dim], so a contiguous slice of
        # them (ColumnParallelLinear's) holds whole heads.
        self.qkv = parts.column(a.width, 3 * a.width)
        self.proj = parts.row(a.width, a.width)
        self.norm2 = parts.norm(a.width)
        self.fc = parts.column(a.width, 4 * a.width)
        self.out = parts.row(4 * a.width, a.width)
        self.register_buffer("mask", torch.full((a.seq_len, a.seq_len), float("-inf")).triu(1),
                             persistent=False)

    def attention(self, x):
        qkv = self.qkv(x)  # [s, b, heads * 3 * head_dim] (the whole sequence)
        s, b = qkv.shape[0], qkv.shape[1]
        q, k, v = qkv.view(s, b, self.heads, 3, self.head_dim).permute(3, 1, 2, 0, 4)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim) + self.mask[:s, :s]
        y = scores.softmax(-1) @ v  # [b, heads, s, head_dim]
        return self.proj(y.permute(2, 0, 1, 3).reshape(s, b, self.heads * self.head_dim))

    def forward(self, x):
        x = x + self.attention(self.norm1(x))
        return x + self.out(F.gelu(self.fc(self.norm2(x))))


class Head(nn.Module):
    """Final norm and the logits, with the token embedding's weight (tied):
    [seq, batch, vocab] (with tp, this rank's slice of the vocabulary)."""

    def __init__(self, parts):
        super().__init__()
        a = parts.args
        self.norm = parts.norm(a.width)
        # Replaced by the embedding's weight: shared on its rank, a copy kept
        # equal elsewhere (Pipeline's `tied`).
        self.weight = nn.Parameter(torch.zeros(a.vocab // parts.tp_size, a.width))
        if parts.mesh is not None:
            self.weight.tensor_parallel_dim = 0
        self.mesh, self.sp = parts.mesh, parts.sp

    def forward(self, x):
        x = self.norm(x)
        if self.mesh is not None:
            from cohort.torch.parallel import copy_to, gather_from_sequence
            x = gather_from_sequence(x, self.mesh.tp) if self.sp else copy_to(x, self.mesh.tp)
        return F.linear(x, self.weight)


def seeded(seed, index, build):
    """Layer `index` built from its own seed: the same weights in every layout."""
    def make():
        with torch.random.fork_rng():
            torch.manual_seed(seed * 1000 + index)
            return build()
    return make


def layer_builders(args, parts):
    builders = [seeded(args.seed, 0, lambda: Embedding(parts))]
    for i in range(args.layers):
        builders.append(seeded(args.seed, i + 1, lambda: Block(parts)))
    builders.append(seeded(args.seed, args.layers + 1, lambda: Head(parts)))
    return builders


TIED = lambda args: [["0.token.weight", "%d.weight" % (args.layers + 1)]]  # noqa: E731


def layer_sizes(args):
    """Parameters of each layer of the unsharded model (the embedding, the
    blocks, the head with its copy of the tied weight), counted without
    building it."""
    w, v = args.width, args.vocab
    block = 12 * w * w + 13 * w  # qkv, proj, fc, out with biases; two norms
    return [v * w + args.seq_len * w] + [block] * args.layers + [2 * w + v * w]


def partition(args, stages):
    if args.partition == "uniform":
        return None
    if args.partition == "balanced":
        from cohort.torch.parallel import balanced_partition
        return balanced_partition(layer_sizes(args), stages)
    return [int(n) for n in args.partition.split(",")]


# ---- data ----

def corpus(args, length=8192):
    """A token stream from a seeded Markov chain with peaked transitions."""
    gen = torch.Generator().manual_seed(12345)
    logits = torch.randn(args.vocab, args.vocab, generator=gen) * 3
    probs = logits.softmax(-1)
    tokens = torch.empty(length, dtype=torch.int64)
    tokens[0] = 0
    draws = torch.rand(length, generator=gen)
    cdf = probs.cumsum(-1)
    for i in range(1, length):
        tokens[i] = min(int(torch.searchsorted(cdf[tokens[i - 1]], draws[i])), args.vocab - 1)
    return tokens


def batch(stream, args, step):
    """Step `step`'s global batch: (inputs, targets), each [batch, seq]."""
    gen = torch.Generator().manual_seed(args.seed * 100003 + step)
    starts = torch.randint(0, len(stream) - args.seq_len - 1, (args.batch_size,), generator=gen)
    rows = torch.stack([stream[s:s + args.seq_len + 1] for s in starts.tolist()])
    return rows[:, :-1], rows[:, 1:]


def state_bytes(params, optimizer):
    p = sum(t.numel() * t.element_size() for t in params)
    opt = optimizer.optim if hasattr(optimizer, "optim") else optimizer  # ZeRO: the local shard
    s = sum(v.numel() * v.element_size() for st in opt.state.values() for v in st.values()
            if torch.is_tensor(v) and v.dim() > 0)
    return p, s


# ---- training ----

def make_optimizer(args, params):
    if args.optimizer == "sgd":
        return torch.optim.SGD(params, lr=args.lr, momentum=0.9)
    return torch.optim.AdamW(params, lr=args.lr)


def train_unsharded(args):
    """The reference: the whole model in one process, plain torch."""
    parts = Parts(args)
    model = nn.Sequential(*[b() for b in layer_builders(args, parts)])
    model[-1].weight = model[0].token.weight  # tied
    optimizer = make_optimizer(args, model.parameters())
    stream = corpus(args)
    started = None
    for step in range(args.steps):
        if step == 1:
            started = time.perf_counter()  # the first step warms up
        x, y = batch(stream, args, step)
        optimizer.zero_grad()
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, args.vocab), y.t().reshape(-1))
        loss.backward()
        optimizer.step()
        print("step %d loss %.9g" % (step, loss.item()), flush=True)
    if args.state_out:
        torch.save(model.state_dict(), args.state_out)
    elapsed = time.perf_counter() - started if started else float("nan")
    unique = list({id(p): p for p in model.parameters()}.values())
    params, opt_state = state_bytes(unique, optimizer)
    report({"layout": "unsharded", "ranks": 1, "tokens_per_sec": tokens_per_sec(args, elapsed),
            "param_bytes": [params], "optimizer_bytes": [opt_state]})


def tokens_per_sec(args, elapsed):
    return round(args.batch_size * args.seq_len * (args.steps - 1) / elapsed, 1) \
        if args.steps > 1 else None


def report(result):
    print("result: %s" % json.dumps(result), flush=True)


def train_parallel(args):
    import cohort.torch as hvd
    from cohort.torch import parallel
    hvd.init()
    mesh = parallel.Mesh(dp=args.dp, pp=args.pp, tp=args.tp)
    dp = mesh.dp.size
    if args.batch_size % (dp * args.micro_batches):
        raise SystemExit("--batch-size %d must split over dp=%d x %d micro-batches" % (
            args.batch_size, dp, args.micro_batches))
    parts = Parts(args, mesh)

    def loss_fn(logits, targets):
        return parallel.vocab_parallel_cross_entropy(logits, targets.t(), mesh.tp).mean()

    pipe = parallel.Pipeline(layer_builders(args, parts), mesh, loss_fn,
                             micro_batches=args.micro_batches, schedule=args.schedule,
                             virtual_stages=args.virtual_stages, tied=TIED(args),
                             recompute=args.recompute,
                             partition=partition(args, args.pp * args.virtual_stages))
    optimizer = parallel.data_parallel_optimizer(
        make_optimizer(args, pipe.parameters()), mesh,
        named_parameters=pipe.named_parameters(), zero=args.zero)
    first = 0
    if args.checkpoint_dir:
        step, _ = parallel.load_checkpoint(args.checkpoint_dir, pipe, optimizer)
        first = 0 if step is None else step + 1
    stream = corpus(args)
    share = args.batch_size // dp
    printer = (pipe.is_last_stage and mesh.coordinate("dp") == 0 and
                                 mesh.coordinate("tp") == 0)
    started = None
    for step in range(first, first + args.steps):
        if step == first + 1:
            started = time.perf_counter()
        x, y = batch(stream, args, step)
        rows = slice(mesh.coordinate("dp") * share, (mesh.coordinate("dp") + 1) * share)
        optimizer.zero_grad()
        loss = pipe.train_step(x[rows], y[rows])
        optimizer.step()
        if pipe.is_last_stage:
            loss = torch.tensor([loss])
            if dp > 1:
                loss = hvd.allreduce(loss, op=hvd.Average, name="loss.%d" % step,
                                     process_set=mesh.dp.process_set)
            if printer:
                print("step %d loss %.9g" % (step, loss.item()), flush=True)
    elapsed = time.perf_counter() - started if started else float("nan")
    if args.checkpoint_dir:
        parallel.save_checkpoint(args.checkpoint_dir, first + args.steps - 1, pipe, optimizer)
    params, opt_state = state_bytes(pipe.parameters(), optimizer)
    gathered = hvd.allgather_object((params, opt_state), name="gpt.bytes")
    if printer:
        report({"layout": "dp%d-pp%d-tp%d" % (dp, mesh.pp.size, mesh.tp.size),
                "schedule": args.schedule, "virtual_stages": args.virtual_stages,
                "ranks": hvd.size(), "tokens_per_sec": tokens_per_sec(args, elapsed),
                "param_bytes": [g[0] for g in gathered],
                "optimizer_bytes": [g[1] for g in gathered]})
    hvd.shutdown()


def main():
    args = parse_args()
    torch.set_num_threads(args.threads)
    if args.heads % args.tp or args.vocab % args.tp:
        raise SystemExit("--heads %d and --vocab %d must be multiples of --tp %d" % (
            args.heads, args.vocab, args.tp))
    import os
    launched = "COHORT_RANK" in os.environ
    if not launched and (args.dp or 1) * args.pp * args.tp == 1:
        train_unsharded(args)
    else:
        train_parallel(args)


if __name__ == "__main__":
    main()
