/*
 * mpi_allreduce.c: peer benchmark of MPI_Allreduce (Open MPI), reported in
 * the nccl-tests layout so it can be set side by side with `cohort bench
 * allreduce` (see run_peers.sh / compare.py).
 *
 * Operation: MPI_Allreduce(MPI_IN_PLACE, buf, count, MPI_FLOAT, MPI_SUM).
 *
 * For each size of the sweep (-b, -b*f, -b*f^2, ... <= -e):
 *   - w warm-up calls, then MPI_Barrier, then n timed calls;
 *   - time = (elapsed wall time of the n calls) / n on the slowest rank
 *     (the maximum over the ranks, as `cohort bench` reports it);
 *   - algbw = size / time, busbw = algbw * 2(nranks-1)/nranks (GB/s = 1e9 B/s);
 *   - #wrong: the buffer is refilled with a pattern of small integers, one
 *     more allreduce runs, and every element is compared with the exact sum
 *     (small integers make the float sum exact in any order); the count of
 *     wrong elements is summed over the ranks.
 * The timed calls reduce the buffer in place over and over, so its values
 * grow (and may reach inf at small sizes with many iterations); that does
 * not slow x86 float adds, and the check does not depend on it.
 *
 * Build: mpicc -O3 -o mpi_allreduce mpi_allreduce.c
 * Run:   mpirun -np 2 ./mpi_allreduce -b 4K -e 256M -f 2 -w 5 -n 20
 *        (-d float32 and -o sum are accepted for symmetry with cohort bench)
 */
#include <mpi.h>

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "size_arg.h"

static int parse_int(const char* text, long* out) {
  char* end = NULL;
  errno = 0;
  long value = strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0') return -1;
  *out = value;
  return 0;
}

/* Value of element i on rank r: a small integer in [-8, 8]. */
static float pattern(int rank, size_t i) {
  return (float)((long)((i * 7u + (size_t)rank * 13u) % 17u) - 8);
}

static void usage(FILE* out) {
  fprintf(out,
          "usage: mpirun -np N mpi_allreduce [-b MINBYTES] [-e MAXBYTES] [-f FACTOR]\n"
          "                                  [-w WARMUP] [-n ITERS] [-d float32] [-o sum]\n"
          "  sizes accept K/M/G suffixes (powers of 1024); defaults -b 4K -e 256M -f 2 -w 5 -n 20\n");
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);

  size_t min_bytes = 4 << 10, max_bytes = 256 << 20;
  long factor = 2, warmup = 5, iters = 20;
  int opt;
  int bad = 0;
  while ((opt = getopt(argc, argv, "b:e:f:w:n:d:o:h")) != -1) {
    switch (opt) {
      case 'b': bad |= parse_size(optarg, &min_bytes); break;
      case 'e': bad |= parse_size(optarg, &max_bytes); break;
      case 'f': bad |= parse_int(optarg, &factor) || factor < 2; break;
      case 'w': bad |= parse_int(optarg, &warmup) || warmup < 0; break;
      case 'n': bad |= parse_int(optarg, &iters) || iters < 1; break;
      case 'd': bad |= strcmp(optarg, "float32") != 0 && strcmp(optarg, "float") != 0; break;
      case 'o': bad |= strcmp(optarg, "sum") != 0; break;
      case 'h':
        if (rank == 0) usage(stdout);
        MPI_Finalize();
        return 0;
      default: bad = 1; break;
    }
  }
  if (bad || optind != argc || min_bytes < sizeof(float) || max_bytes < min_bytes ||
      max_bytes / sizeof(float) > (size_t)INT_MAX) {
    if (rank == 0) {
      fprintf(stderr, "mpi_allreduce: bad arguments (only float32 sum is supported)\n");
      usage(stderr);
    }
    MPI_Finalize();
    return 2;
  }

  float* buf = NULL;
  if (posix_memalign((void**)&buf, 64, max_bytes) != 0) {
    fprintf(stderr, "mpi_allreduce: rank %d cannot allocate %zu bytes\n", rank, max_bytes);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  memset(buf, 0, max_bytes); /* fault the pages in before any timing */

  if (rank == 0) {
#ifdef OMPI_MAJOR_VERSION
    printf("# mpi_allreduce: Open MPI %d.%d.%d, %d ranks, MPI_IN_PLACE, warmup %ld, iters %ld\n",
           OMPI_MAJOR_VERSION, OMPI_MINOR_VERSION, OMPI_RELEASE_VERSION, nranks, warmup, iters);
#else
    printf("# mpi_allreduce: MPI %d.%d, %d ranks, MPI_IN_PLACE, warmup %ld, iters %ld\n",
           MPI_VERSION, MPI_SUBVERSION, nranks, warmup, iters);
#endif
    printf("#%12s %12s %9s %7s %9s %9s %9s %7s\n", "size", "count", "type", "redop", "time",
           "algbw", "busbw", "#wrong");
    printf("#%12s %12s %9s %7s %9s %9s %9s %7s\n", "(B)", "(elements)", "", "", "(us)",
           "(GB/s)", "(GB/s)", "");
    fflush(stdout);
  }

  double busbw_sum = 0.0;
  int nsizes = 0;
  long long total_wrong = 0;
  for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= (size_t)factor) {
    const size_t count = bytes / sizeof(float);
    for (size_t i = 0; i < count; i++) buf[i] = pattern(rank, i);

    for (long it = 0; it < warmup; it++)
      MPI_Allreduce(MPI_IN_PLACE, buf, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (long it = 0; it < iters; it++)
      MPI_Allreduce(MPI_IN_PLACE, buf, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double seconds = (MPI_Wtime() - t0) / (double)iters;
    MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);

    /* Correctness: one more allreduce on fresh data, checked element by element. */
    for (size_t i = 0; i < count; i++) buf[i] = pattern(rank, i);
    MPI_Allreduce(MPI_IN_PLACE, buf, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    long long wrong = 0;
    for (size_t i = 0; i < count; i++) {
      float expected = 0.0f;
      for (int r = 0; r < nranks; r++) expected += pattern(r, i);
      if (buf[i] != expected) wrong++;
    }
    MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    total_wrong += wrong;

    const double algbw = (double)bytes / seconds / 1e9;
    const double busbw = algbw * 2.0 * (nranks - 1) / nranks;
    busbw_sum += busbw;
    nsizes++;
    if (rank == 0) {
      printf(" %12zu %12zu %9s %7s %9.2f %9.2f %9.2f %7lld\n", bytes, count, "float32", "sum",
             seconds * 1e6, algbw, busbw, wrong);
      fflush(stdout);
    }
    if (bytes > max_bytes / (size_t)factor) break; /* next step would overflow or exceed -e */
  }
  if (rank == 0) {
    printf("# Out of bounds values : %lld %s\n", total_wrong, total_wrong ? "FAILED" : "OK");
    printf("# Avg bus bandwidth    : %.4f\n", nsizes ? busbw_sum / nsizes : 0.0);
  }
  free(buf);
  MPI_Finalize();
  return total_wrong ? 1 : 0;
}
