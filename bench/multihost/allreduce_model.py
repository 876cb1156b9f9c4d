#!/usr/bin/env python3
"""Alpha-beta model of cohort's allreduce across hosts, fitted to the measured
table of docs/performance.md ("Allreduce across emulated hosts", the MTU 1500
table from bench/multihost/cluster_bench.sh) and extrapolated to 64 hosts.

    /usr/bin/python3 bench/multihost/allreduce_model.py [--doc docs/performance.md]

What it fits (cohort's rows only):
  alpha   per-step latency: 4 KiB uses recursive doubling, s(p) steps of the
          whole message (1 step for 2 hosts, 2 for 4, 3 for 3: hand-in, one
          round, hand-back), so alpha = t / s(p) - 4096 / line_rate, median over
          every 4 KiB row at 1 and 10 Gbit/s.
  f_link  share of the shaped line rate a large ring allreduce reaches when the
          link is the limit: busbw / line rate of the 1 Gbit/s rows >= 16 MiB.
          Fitted on the 2-host rows only; the 3- and 4-host rows are predicted
          and compared, which checks the ring's 2(p-1)/p scaling.
  B_cpu   busbw one core sustains through kernel TCP when the CPU is the limit:
          the 2-host 10 Gbit/s rows (one emulated host per core; 3 and 4 hosts
          oversubscribe the 2 cores and are not used).
Everything else (memcpy rate, ResNet-50's gradient bytes, shared-memory busbw,
the engine's overhead) is a constant below with the section it comes from."""
import argparse
import math
import os
import re
import statistics

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

MEMCPY_GBS = 10.0  # one core, bytes copied per second (docs/performance.md, top: 9.9-11.0)
SHM_BUSBW_GBS = 6.3  # 2 ranks, shared memory, >= 16 MiB (first table: 5.7-6.5)
ENGINE_OVER_RAW = 1.19  # ResNet-50 step through the engine / one raw allreduce ("Engine")
RESNET50_BYTES = 25_557_032 * 4  # torchvision resnet50 parameters, float32: 102.2 MB
SMALL = 4096


def rate_gbs(rate):  # "1gbit" -> GB/s
    return float(rate[:-4]) * {"g": 1e9, "m": 1e6}[rate[-4]] / 8 / 1e9


def measured_rows(doc):
    """cohort rows (rate, hosts, size, time_us, busbw) of the first table after
    the 'Allreduce across emulated hosts' heading."""
    text = open(doc).read()
    start = text.index("## Allreduce across emulated hosts")
    block = text[start:].split("```\n# allreduce across emulated hosts", 1)[1].split("```", 1)[0]
    rows = []
    for line in block.splitlines():
        m = re.match(r"(\d+gbit)\s+(\d+)\s+(\d+)\s+cohort\s+([\d.]+)\s+([\d.]+)", line)
        if m:
            rows.append((m[1], int(m[2]), int(m[3]), float(m[4]), float(m[5])))
    if not rows:
        raise SystemExit("allreduce_model: no cohort rows found in the table of " + doc)
    return rows


def rd_steps(p):
    """Steps of recursive doubling on p ranks (extra ranks hand in and get back)."""
    k = int(math.log2(p))
    return k + (2 if p != 1 << k else 0)


def ring_bw_term(p, n, bw_gbs):
    return 2 * (p - 1) / p * n / (bw_gbs * 1e9)


def fit(rows):
    alphas = [t * 1e-6 / rd_steps(h) - SMALL / (rate_gbs(r) * 1e9)
              for r, h, s, t, _ in rows if s == SMALL]
    f_link = statistics.median(b / rate_gbs(r) for r, h, s, t, b in rows
                               if r == "1gbit" and h == 2 and s >= 16 << 20)
    b_cpu = [b for r, h, s, t, b in rows if r == "10gbit" and h == 2 and s >= 16 << 20]
    return alphas, f_link, b_cpu


def check(rows, alpha, f_link):
    print("# check: 1 Gbit/s rows >= 16 MiB, measured vs model (alpha, f_link fitted on 2 hosts)")
    print("# hosts      size   measured_ms   model_ms   model/measured")
    for r, h, s, t, _ in rows:
        if r == "1gbit" and s >= 16 << 20:
            model = 2 * (h - 1) * alpha + ring_bw_term(h, s, f_link * rate_gbs(r))
            print("  %5d %9d %13.1f %10.1f %16.3f" % (h, s, t / 1e3, model * 1e3, model / (t * 1e-6)))


def predict(alpha, f_link, b_cpu, hosts=64):
    n = RESNET50_BYTES
    # Memory-bound ceiling of one core driving kernel TCP with a ring: per
    # busbw byte one copy into the socket, one out of it, and half a byte
    # reduced (read 2, write 1 = 1.5 copies): 2.75 memcpy-bytes.
    b_core_ideal = MEMCPY_GBS / 2.75
    print("# 64-host prediction, ResNet-50 gradients (%.1f MB), one TCP stream per rank" % (n / 1e6))
    print("# alpha %.0f us/step; link share f_link %.3f; CPU per core: measured %.2f GB/s, "
          "memory-bound ceiling %.2f GB/s" % (alpha * 1e6, f_link, b_cpu, b_core_ideal))
    print("# L = ranks per host; ring = flat ring over all H*L ranks, hier = hierarchical")
    print("# %-6s %2s %-5s %-9s %9s %9s %10s %10s %11s %11s  limit" %
          ("Gbit/s", "L", "algo", "cpu", "net GB/s", "busbw", "alpha_ms", "bw_ms", "allreduce",
           "step comm"))
    for gbit in (25, 100):
        line = gbit / 8 * f_link
        for ranks_per_host in (1, 8):
            for algo in (("ring",) if ranks_per_host == 1 else ("ring", "hier")):
                for cpu_name, cpu in (("measured", b_cpu), ("ceiling", b_core_ideal)):
                    p = hosts * ranks_per_host
                    # Cores that drive inter-host traffic per host: the flat ring
                    # leaves a host through one rank, the hierarchical one
                    # through all L.
                    cores = ranks_per_host if algo == "hier" else 1
                    net = min(line, cores * cpu)
                    # Bytes that leave a host: a flat ring's crossing rank sends
                    # 2(p-1)/p of the message; hierarchical sends 2(H-1)/H in all.
                    net_bytes = 2 * (hosts - 1) / hosts * n if algo == "hier" else 2 * (p - 1) / p * n
                    bw = net_bytes / (net * 1e9)
                    steps = 2 * (hosts - 1) if algo == "hier" else 2 * (p - 1)
                    lat = steps * alpha
                    if algo == "hier":  # intra-host reduce-scatter + allgather in shared memory
                        bw += ring_bw_term(ranks_per_host, n, SHM_BUSBW_GBS)
                    t = lat + bw
                    busbw = 2 * (p - 1) / p * n / t / 1e9  # nccl-tests: over all ranks
                    limit = "link" if line <= cores * cpu else "CPU"
                    print("  %-6d %2d %-5s %-9s %9.2f %9.2f %10.1f %10.1f %9.1f ms %8.1f ms  %s" %
                          (gbit, ranks_per_host, algo, cpu_name, net, busbw, lat * 1e3, bw * 1e3,
                           t * 1e3, ENGINE_OVER_RAW * t * 1e3, limit))
    print("# step comm: communication per training step through the engine, %.2f x the "
          "allreduce (ResNet-50, 'Engine' section), before any overlap with backward" %
          ENGINE_OVER_RAW)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--doc", default=os.path.join(ROOT, "docs", "performance.md"))
    args = p.parse_args()
    rows = measured_rows(args.doc)
    alphas, f_link, b_cpu = fit(rows)
    alpha = statistics.median(alphas)
    print("# fitted from %d cohort rows of %s" % (len(rows), os.path.relpath(args.doc, ROOT)))
    print("# alpha per 4 KiB row (us): %s -> median %.0f" %
          (" ".join("%.0f" % (a * 1e6) for a in alphas), alpha * 1e6))
    print("# f_link (1 Gbit/s, 2 hosts, >= 16 MiB): %.3f of the line rate" % f_link)
    print("# B_cpu (10 Gbit/s, 2 hosts, >= 16 MiB): %s GB/s -> median %.2f" %
          (" ".join("%.3f" % b for b in b_cpu), statistics.median(b_cpu)))
    check(rows, alpha, f_link)
    predict(alpha, f_link, statistics.median(b_cpu))


if __name__ == "__main__":
    main()
