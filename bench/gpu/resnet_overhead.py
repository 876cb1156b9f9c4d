"""cohort.torch's per-step overhead on a single-GPU ResNet-50 training step
(issue 27's target: <= 3% of plain torch). One process, one GPU:

    cohort run -np 1 -- python3 bench/gpu/resnet_overhead.py [--batch 64] [--steps 20] [--rounds 3]

Plain torch (SGD) and cohort.torch (hvd.DistributedOptimizer around the same
SGD, hvd.broadcast_parameters first) train the same model on the same
synthetic batch; the two alternate in --rounds blocks of --steps steps after
a warm-up, so clock and thermal drift hit both alike. Printed: the median
step time of each and the overhead (cohort / plain - 1)."""
import argparse
import statistics
import time

import torch


def block(model, opt, x, y, steps):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / steps


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="resnet50")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("# no CUDA device: nothing to measure")
        return
    import torchvision
    import cohort.torch as hvd
    hvd.init()
    torch.cuda.set_device(hvd.local_rank() % torch.cuda.device_count())
    torch.backends.cudnn.benchmark = True
    torch.manual_seed(0)
    model = getattr(torchvision.models, args.model)(num_classes=1000).cuda()
    x = torch.randn(args.batch, 3, 224, 224, device="cuda")
    y = torch.randint(0, 1000, (args.batch,), device="cuda")
    plain = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    wrapped = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9),
                                       named_parameters=model.named_parameters())
    block(model, plain, x, y, 5)
    block(model, wrapped, x, y, 5)
    times = {"plain": [], "cohort": []}
    for _ in range(args.rounds):
        times["plain"].append(block(model, plain, x, y, args.steps))
        times["cohort"].append(block(model, wrapped, x, y, args.steps))
    p, c = statistics.median(times["plain"]), statistics.median(times["cohort"])
    if hvd.rank() == 0:
        print("# %s batch %d on %s, %d rank(s), torch %s" % (
            args.model, args.batch, torch.cuda.get_device_name(), hvd.size(), torch.__version__))
        print("step time: plain torch %.2f ms, cohort.torch %.2f ms: overhead %+.1f%% "
              "(blocks: plain %s, cohort %s)" % (
                  p * 1e3, c * 1e3, (c / p - 1) * 100,
                  " ".join("%.2f" % (t * 1e3) for t in times["plain"]),
                  " ".join("%.2f" % (t * 1e3) for t in times["cohort"])), flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
