#!/usr/bin/env python3
"""Pipeline bubble, measured: the idle fraction of each rank during a
training step under GPipe, 1F1B and interleaved 1F1B, against the textbook
(p-1)/(m+p-1) (interleaved: (p-1)/v over m+(p-1)/v), and against the same
schedule with the costs measured in the step added: each message on the
critical path, and the runtime's own time between two actions.

Stage compute is a sleep (forward F ms, backward 2F ms per stage, split
over the virtual stages): a rank computing on an accelerator leaves its CPU
idle the same way, and sleeping is what makes p=4 meaningful on a 2-core
machine (4 ranks busy-computing would share 2 cores and the timings would
measure the scheduler). Messages are real: each activation is a float32
[micro-batch rows, width] tensor through cohort's point-to-point messages.

From the pipeline's own timeline of every rank (one clock: one machine):
busy time of a rank = the sum of its actions' compute intervals; a step's
span = first action start to last action end over all ranks; bubble = mean
over ranks of 1 - busy/span. A message's cost = the time from the end of an
action on one rank to the start of the action on the next rank that was
waiting for it; the runtime's cost = the time between a rank's consecutive
actions when the second one waited for nothing. "textbook + both" is
schedules.simulate with the means of those two and of the compute times;
"replay" the same with each action's own measured compute time (on a
loaded machine a sleep overshoots now and then, and the stages wait for
the slow one: idle time the uniform formula cannot know of).
Medians over --steps steps after one warm-up.

    nice -n -10 build/cohort run -np 4 -- /usr/bin/python3 bench/parallel/bubble.py \
        [--forward-ms 20] [--micro-batches 4,8,16,32] [--steps 3]

Prints one markdown table (rank 0)."""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "python"))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import cohort.torch as hvd  # noqa: E402
from cohort.torch import parallel  # noqa: E402
from cohort.torch.parallel import p2p, schedules  # noqa: E402


class _Sleep(torch.autograd.Function):
    """y = x * w after sleeping `forward` seconds; the backward sleeps `backward`."""

    @staticmethod
    def forward(ctx, x, w, forward, backward):
        time.sleep(forward)
        ctx.save_for_backward(x, w)
        ctx.backward_seconds = backward
        return x * w

    @staticmethod
    def backward(ctx, grad):
        time.sleep(ctx.backward_seconds)
        x, w = ctx.saved_tensors
        return grad * w, (grad * x).sum().reshape(1), None, None


class SleepStage(nn.Module):
    def __init__(self, forward, backward):
        super().__init__()
        self.w = nn.Parameter(torch.ones(1))
        self.forward_s, self.backward_s = forward, backward

    def forward(self, x):
        return _Sleep.apply(x, self.w, self.forward_s, self.backward_s)


def one_way_latency(nbytes, reps=40, idle=0.005):
    """Median time from rank 0 starting to send a message of `nbytes` to
    rank 1 having it, rank 1 waiting for it after being idle for `idle`
    seconds (as a stage waits for its next input: its progress thread has
    gone to sleep). The send time travels in the message (one clock: one
    machine). Rank 1's figure; None on the others."""
    rank = hvd.rank()
    if rank > 1:
        return None
    channel = (1 << 60) | 7
    buf = torch.zeros(nbytes // 8, dtype=torch.float64)
    times = []
    for i in range(reps):
        if rank == 0:
            time.sleep(idle)
            buf[0] = time.perf_counter()
            p2p.send(buf, 1, channel, i).wait()
        else:
            got = p2p.recv(buf.shape, buf.dtype, 0, channel, i).wait()
            times.append(time.perf_counter() - float(got[0]))
    return statistics.median(times[5:]) if rank == 1 else None


def costs(timelines, p, last_stage):
    """From every rank's timeline of a step: (mean time from the end of the
    action a rank waited for on another rank to the start of its own, i.e.
    a message's cost on the critical path; mean time from a rank's previous
    action to its next when nothing was awaited, the runtime's own cost per
    action; mean forward and backward compute). Means, not medians: the
    step's length is their sum, hiccups included."""
    ends = {}
    for r, timeline in enumerate(timelines):
        for kind, chunk, mb, start, end in timeline:
            ends[(kind, chunk * p + r, mb)] = end
    hops, gaps = [], []
    for r, timeline in enumerate(timelines):
        for prev, (kind, chunk, mb, start, end) in zip(timeline, timeline[1:]):
            stage = chunk * p + r
            if kind == "F":
                need = None if stage == 0 else ("F", stage - 1, mb)
            else:
                need = None if stage == last_stage else ("B", stage + 1, mb)
            if need is not None and ends[need] > prev[4]:
                hops.append(start - ends[need])
            else:
                gaps.append(start - prev[4])
    compute = {k: [e - s for t in timelines for kk, _, _, s, e in t if kk == k] for k in "FB"}
    return (statistics.mean(hops) if hops else 0.0, statistics.mean(gaps) if gaps else 0.0,
            statistics.mean(compute["F"]), statistics.mean(compute["B"]))


def measure(mesh, schedule, m, v, args):
    """Median over steps of (measured bubble, bubble predicted by the
    schedule with the step's measured message and per-action costs, the
    same replaying each action's measured compute time, those costs, the
    step's span)."""
    p = mesh.pp.size
    f = args.forward_ms / 1000 / v
    stages = [lambda: SleepStage(f, 2 * f) for _ in range(p * v)]
    pipe = parallel.Pipeline.from_stages(stages, mesh, lambda out, t: out.mean(),
                                         micro_batches=m, schedule=schedule, virtual_stages=v)
    x = torch.randn(m * args.rows, args.width)
    rows = []
    for step in range(args.steps + 1):
        hvd.barrier()
        pipe.train_step(x, x)
        timelines = hvd.allgather_object(pipe.stats["timeline"],
                                         name="bubble.%s.%d.%d.%d" % (schedule, m, v, step))
        if not step:
            continue  # the first step warms up
        span = max(t[-1][4] for t in timelines) - min(t[0][3] for t in timelines)
        busy = [sum(e - s for *_, s, e in t) for t in timelines]
        bubble = statistics.mean(1 - b / span for b in busy)
        hop, gap, tf, tb = costs(timelines, p, p * v - 1)
        predicted = schedules.simulate(schedule, p, m, v, forward_time=tf, backward_time=tb,
                                       message_time=hop, action_overhead=gap)["bubble"]
        replayed = schedules.simulate(schedule, p, m, v, message_time=hop, action_overhead=gap,
                                      compute_times=[[e - s for *_, s, e in t]
                                                     for t in timelines])["bubble"]
        rows.append((bubble, predicted, replayed, hop, gap, span))
    return [statistics.median(column) for column in zip(*rows)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--forward-ms", type=float, default=20.0,
                        help="a stage's forward per micro-batch (backward: twice)")
    parser.add_argument("--micro-batches", default="4,8,16,32")
    parser.add_argument("--schedules", default="gpipe,1f1b,interleaved")
    parser.add_argument("--virtual-stages", type=int, default=2, help="for interleaved")
    parser.add_argument("--rows", type=int, default=8, help="activation rows per micro-batch")
    parser.add_argument("--width", type=int, default=1024, help="activation columns")
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()
    hvd.init()
    torch.set_num_threads(1)
    mesh = parallel.Mesh(pp=hvd.size())
    p = mesh.pp.size
    p2p.open_messages()
    latency = one_way_latency(args.rows * args.width * 4)
    latency = hvd.broadcast_object(latency, root_rank=1, name="bubble.latency")
    if hvd.rank() == 0:
        print("p=%d, forward %.1f ms + backward %.1f ms per stage and micro-batch, activation "
              "%d x %d float32 (%d KiB); alone, a message to an idle receiver takes %.3f ms "
              "(median of 35)\n" % (p, args.forward_ms, 2 * args.forward_ms, args.rows,
                                     args.width, args.rows * args.width * 4 // 1024,
                                     latency * 1000))
        print("| schedule | p | v | m | textbook | measured | message on the critical path (ms) "
              "| runtime per action (ms) | textbook + both | measured / (textbook + both) | "
              "replay | measured / replay | step (s) |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for schedule in args.schedules.split(","):
        v = args.virtual_stages if schedule == "interleaved" else 1
        for m in (int(n) for n in args.micro_batches.split(",")):
            try:
                schedules.check_shape(schedule, p, m, v)
            except ValueError:
                continue
            bubble, predicted, replayed, hop, gap, span = measure(mesh, schedule, m, v, args)
            if hvd.rank() == 0:
                print("| %s | %d | %d | %d | %.4f | %.4f | %.3f | %.3f | %.4f | %.3f | %.4f | "
                      "%.3f | %.3f |" % (
                          schedule, p, v, m, schedules.textbook_bubble(p, m, v), bubble,
                          hop * 1000, gap * 1000, predicted, bubble / predicted, replayed,
                          bubble / replayed, span), flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
