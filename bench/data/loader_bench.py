#!/usr/bin/python3
"""Data loader figures for docs/performance.md.

  /usr/bin/python3 bench/data/loader_bench.py [--images 20000] [--runs 3] [--build-dir build]

Generates (once, cached under --cache, default /tmp/cohort-loader-bench) an
ImageNet-like image folder: --images JPEGs of 256..500 px per side in 100
class folders. Then measures, each --runs times, and prints medians:
  ingest      `cohort data ingest imagefolder` images/s (1 and 2 reader threads)
  jpeg        cohort's loader vs torch DataLoader + torchvision ImageFolder (PIL),
              the same transforms (RandomResizedCrop 224, flip, ToTensor+Normalize),
              1 and 2 workers (cohort: threads), images/s over --measure images,
              and images per CPU second (every thread and worker process)
  raw         a uint8 [3,128,128] array column: loader vs reading the same bytes
              from one flat file into batch buffers in the same shuffled order
  shuffle     quality of the epoch order (mean jump ratio, same-chunk pairs)
              against a sample-buffer shuffle holding as many samples
"""
import argparse
import multiprocessing
import os
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def log(*args, end="\n"):
    print(*args, file=sys.stderr, flush=True, end=end)


_TEXTURE = None


def make_image(args):
    """One JPEG: a smooth random field plus a crop of a noise texture (a photo-like spectrum)."""
    global _TEXTURE
    path, seed = args
    from PIL import Image
    rng = np.random.default_rng(seed)
    if _TEXTURE is None:
        _TEXTURE = np.random.default_rng(1).normal(0, 14, (1000, 1000, 3)).astype(np.int16)
    w, h = (int(v) for v in rng.integers(256, 501, 2))
    base = Image.fromarray(rng.integers(0, 256, (6, 6, 3), dtype=np.uint8)).resize((w, h), Image.BICUBIC)
    x, y = (int(v) for v in rng.integers(0, 500, 2))
    pixels = np.asarray(base, dtype=np.int16) + _TEXTURE[y:y + h, x:x + w]
    Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8)).save(path, format="JPEG", quality=90)


def ensure_images(root, count):
    marker = os.path.join(root, f".complete-{count}")
    if os.path.exists(marker):
        return
    shutil.rmtree(root, ignore_errors=True)
    jobs = []
    for i in range(count):
        d = os.path.join(root, f"class{i % 100:03d}")
        os.makedirs(d, exist_ok=True)
        jobs.append((os.path.join(d, f"img{i:06d}.jpg"), i))
    start = time.time()
    with multiprocessing.Pool(os.cpu_count()) as pool:
        for n, _ in enumerate(pool.imap_unordered(make_image, jobs, chunksize=64), 1):
            if n % 1000 == 0 or n == count:
                log(f"\rgenerating images: {n}/{count} ({n / (time.time() - start):.0f}/s)", end="")
    log()
    open(marker, "w").close()


def warm(root):
    """Reads every file once so every tool starts with a warm page cache."""
    for d, _, files in os.walk(root):
        for f in files:
            with open(os.path.join(d, f), "rb") as fh:
                while fh.read(1 << 20):
                    pass


def interleaved(runs, fns):
    """Median of `runs` repetitions of each function, run in turn (rep 1: a, b; rep 2: a, b ...)
    so that the machine's drift falls on every tool alike."""
    values = {label: [] for label in fns}
    for r in range(runs):
        for label, fn in fns.items():
            values[label].append(fn())
            log(f"  rep {r + 1}/{runs} {label}: {values[label][-1]:,.1f}")
    return [statistics.median(values[label]) for label in fns]


def ingest_rate(cli, images, dataset, threads, count):
    shutil.rmtree(dataset, ignore_errors=True)
    start = time.time()
    subprocess.run([cli, "data", "ingest", "imagefolder", images, dataset, "--threads", str(threads)],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return count / (time.time() - start)


def cpu_seconds(pids):
    """User + system CPU time of processes (all their threads) so far."""
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14, 15)
    return total / os.sysconf("SC_CLK_TCK")


CPU_RATES = {}  # label -> images per CPU second, per repetition


def record_cpu(label, seen, cpu):
    CPU_RATES.setdefault(label, []).append(seen / cpu)


def cohort_rate(dataset, threads, batch, measure, dct_scaling=True):
    from cohort.data import DataLoader
    loader = DataLoader(dataset, batch_size=batch, image_size=224, threads=threads,
                        prefetch_batches=2 * threads, seed=int(time.time()),
                        dct_scaling=dct_scaling)
    it = iter(loader)
    next(it)  # start-up (first chunk fetch) is not throughput
    start, seen, cpu = time.time(), 0, cpu_seconds([os.getpid()])
    while seen < measure:
        b = next(it)
        seen += b["image"].shape[0]
    rate = seen / (time.time() - start)
    record_cpu(f"cohort {threads}{'' if dct_scaling else ' exact'}", seen,
               cpu_seconds([os.getpid()]) - cpu)
    return rate


def torch_rate(images, workers, batch, measure):
    import torch
    import torchvision
    from torchvision import transforms as T
    torch.set_num_threads(1)
    tf = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(), T.Normalize(MEAN, STD)])
    ds = torchvision.datasets.ImageFolder(images, transform=tf)
    loader = torch.utils.data.DataLoader(ds, batch_size=batch, shuffle=True, num_workers=workers,
                                         prefetch_factor=2, persistent_workers=False)
    it = iter(loader)
    next(it)
    pids = [os.getpid()] + [w.pid for w in it._workers]
    start, seen, cpu = time.time(), 0, cpu_seconds(pids)
    while seen < measure:
        x, _ = next(it)
        seen += x.shape[0]
    rate = seen / (time.time() - start)
    record_cpu(f"torch {workers}", seen, cpu_seconds(pids) - cpu)
    del it
    return rate


def make_raw(cache, count, shape=(3, 128, 128)):
    """The same samples twice: a cohort dataset (uint8 array column) and one flat file."""
    dataset = os.path.join(cache, f"raw-dataset-{count}")
    flat = os.path.join(cache, f"raw-{count}.bin")
    marker = os.path.join(cache, f".raw-complete-{count}")
    if not os.path.exists(marker):
        shutil.rmtree(dataset, ignore_errors=True)
        rng = np.random.default_rng(0)
        data = rng.integers(0, 256, (count,) + shape, dtype=np.uint8)
        data.tofile(flat)
        npy = os.path.join(cache, f"raw-{count}.npy")
        np.save(npy, data)
        cli = os.path.join(args.build_dir, "cohort")
        subprocess.run([cli, "data", "ingest", "numpy", npy, "-d", dataset, "--column", "x"],
                       check=True, stdout=subprocess.DEVNULL)
        os.remove(npy)
        open(marker, "w").close()
    return dataset, flat


def raw_loader_rate(dataset, threads, batch):
    from cohort.data import DataLoader
    loader = DataLoader(dataset, batch_size=batch, threads=threads, prefetch_batches=2 * threads,
                        drop_last=True, seed=int(time.time()))
    start, nbytes, first = time.time(), 0, None
    for b in loader:
        nbytes += b["x"].nbytes
        first = first or time.time()
    end = time.time()
    print(f"    (first batch after {1e3 * (first - start):.1f} ms)", flush=True)
    return nbytes / (end - start) / 1e6


def raw_file_rate(flat, count, batch, sample_bytes):
    """Reads each batch's samples from the flat file (shuffled order) into one buffer."""
    order = np.random.default_rng(int(time.time())).permutation(count)
    buf = bytearray(batch * sample_bytes)
    view = memoryview(buf)
    fd = os.open(flat, os.O_RDONLY)
    start, nbytes = time.time(), 0
    try:
        for first in range(0, count - batch + 1, batch):
            for k, i in enumerate(order[first:first + batch]):
                os.preadv(fd, [view[k * sample_bytes:(k + 1) * sample_bytes]], int(i) * sample_bytes)
            np.frombuffer(buf, dtype=np.uint8)  # what a consumer would wrap
            nbytes += len(buf)
    finally:
        os.close(fd)
    return nbytes / (time.time() - start) / 1e6


def buffer_shuffle(n, buffer, seed):
    """tf.data-style shuffle: a buffer of `buffer` samples fed in dataset order."""
    rng = np.random.default_rng(seed)
    out = np.empty(n, dtype=np.uint64)
    buf = list(range(min(buffer, n)))
    nxt, k = len(buf), 0
    picks = rng.integers(0, 1 << 62, n)
    while buf:
        j = int(picks[k] % len(buf))
        out[k] = buf[j]
        k += 1
        if nxt < n:
            buf[j] = nxt
            nxt += 1
        else:
            buf[j] = buf[-1]
            buf.pop()
    return out


def shuffle_rows(chunk_sizes, label):
    from cohort import _data
    n = int(sum(chunk_sizes))
    per_chunk = n / len(chunk_sizes)
    rows = []
    for window in (1, 4, 8, 16):
        q = _data.shuffle_quality(_data.epoch_order(chunk_sizes, 1, 0, window), chunk_sizes)
        rows.append((label, f"cohort window {window} chunks", int(window * per_chunk), q))
        b = buffer_shuffle(n, int(window * per_chunk), 1)
        qb = _data.shuffle_quality(b, chunk_sizes)
        rows.append((label, f"sample buffer of {int(window * per_chunk)}", int(window * per_chunk), qb))
    return rows


def main():
    global args
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--images", type=int, default=20000)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--measure", type=int, default=4096, help="images timed per loader run")
    p.add_argument("--batch", type=int, default=64)
    # 32,768 samples of 48 KiB = 1.6 GB, 96 chunks: an epoch long enough that
    # the loader's start (the first shuffle window mapped and verified, 10-40
    # ms, printed per run) is not most of it; 8192 gives the earlier 0.4 GB figure.
    p.add_argument("--raw-samples", type=int, default=32768)
    p.add_argument("--build-dir", default=os.path.join(REPO, "build"))
    p.add_argument("--cache", default="/tmp/cohort-loader-bench")
    p.add_argument("--only", default="ingest,jpeg,raw,shuffle")
    p.add_argument("--exact-too", action="store_true",
                   help="also time cohort's exact JPEG path (dct_scaling=False)")
    args = p.parse_args()
    os.environ["COHORT_BUILD_DIR"] = args.build_dir
    sys.path.insert(0, os.path.join(REPO, "python"))
    cli = os.path.join(args.build_dir, "cohort")
    only = set(args.only.split(","))
    images = os.path.join(args.cache, f"imagefolder-{args.images}")
    dataset = os.path.join(args.cache, f"dataset-{args.images}")
    ensure_images(images, args.images)
    warm(images)
    results = []
    if "ingest" in only or not os.path.exists(dataset):
        for t in (1, 2):
            r, = interleaved(args.runs, {f"ingest {t} threads": lambda: ingest_rate(cli, images, dataset, t, args.images)})
            results.append(f"| ingest imagefolder, {t} reader threads | {r:,.0f} images/s | | |")
    if "jpeg" in only:
        warm(dataset)
        for w in (1, 2):
            series = {
                f"cohort {w} threads images/s": lambda: cohort_rate(dataset, w, args.batch, args.measure),
                f"torch {w} workers images/s": lambda: torch_rate(images, w, args.batch, args.measure)}
            if args.exact_too:
                series[f"cohort exact {w} threads images/s"] = lambda: cohort_rate(
                    dataset, w, args.batch, args.measure, dct_scaling=False)
            c, t, *exact = interleaved(args.runs, series)
            results.append(f"| JPEG 224 train transforms, {w} worker(s) | {c:,.0f} images/s | {t:,.0f} images/s | {c / t:.2f}x |")
            # Images per CPU second (all threads and worker processes): less
            # sensitive than wall time to what else the machine runs.
            cc, tc = (statistics.median(CPU_RATES[f"{who} {w}"]) for who in ("cohort", "torch"))
            results.append(f"| the same, images per CPU second, {w} worker(s) | {cc:,.0f} | {tc:,.0f} | {cc / tc:.2f}x |")
            if exact:
                results.append(f"| the same without DCT scaling (exact pixels), {w} worker(s) | {exact[0]:,.0f} images/s | {t:,.0f} images/s | {exact[0] / t:.2f}x |")
    if "raw" in only:
        raw, flat = make_raw(args.cache, args.raw_samples)
        warm(raw)
        warm(flat)
        sample = 3 * 128 * 128
        c1, c2, f = interleaved(args.runs, {
            "raw loader 1 thread MB/s": lambda: raw_loader_rate(raw, 1, 256),
            "raw loader 2 threads MB/s": lambda: raw_loader_rate(raw, 2, 256),
            "raw file reads MB/s": lambda: raw_file_rate(flat, args.raw_samples, 256, sample)})
        for w, c in ((1, c1), (2, c2)):
            results.append(f"| raw uint8 [3,128,128], {w} thread(s) | {c:,.0f} MB/s | {f:,.0f} MB/s | {c / f:.2f}x |")
    print("| what | cohort | peer | ratio |")
    print("|---|---|---|---|")
    for r in results:
        print(r)
    if "shuffle" in only:
        from cohort import _data
        print()
        print("| layout | order | samples held | mean jump / uniform | same-chunk pairs |")
        print("|---|---|---|---|---|")
        layouts = [(_data.chunk_sizes(dataset), f"this set ({args.images} images)"),
                   ([128] * 10000, "ImageNet-like: 1.28M samples, 128 per chunk")]
        for sizes, label in layouts:
            for lab, order, held, q in shuffle_rows(sizes, label):
                print(f"| {lab} | {order} | {held:,} | {q['mean_jump_ratio']:.3f} | {q['same_chunk_fraction']:.4f} |")


if __name__ == "__main__":
    main()
