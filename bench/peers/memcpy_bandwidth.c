/*
 * memcpy_bandwidth.c: single-core memcpy bandwidth, the memory-bandwidth
 * reference printed under the peer comparison (run_peers.sh).
 *
 * Copies a buffer of -s bytes (default 256 MiB, far larger than any cache)
 * into another -r times (default 11) and prints the median rate as bytes
 * copied per second (GB/s = 1e9 B/s). Each copy reads and writes the bytes,
 * so the memory traffic is about twice (three times with write-allocate)
 * the figure printed. Both buffers are touched before timing, and one
 * untimed copy warms the path.
 *
 * Build: cc -O3 -o memcpy_bandwidth memcpy_bandwidth.c
 * Run:   ./memcpy_bandwidth [-s BYTES[K|M|G]] [-r REPS]
 */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "size_arg.h"

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int compare_doubles(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  size_t bytes = (size_t)256 << 20;
  long reps = 11;
  int opt;
  while ((opt = getopt(argc, argv, "s:r:h")) != -1) {
    switch (opt) {
      case 's':
        if (parse_size(optarg, &bytes) != 0 || bytes == 0) goto usage;
        break;
      case 'r':
        reps = strtol(optarg, NULL, 10);
        if (reps < 1) goto usage;
        break;
      default: goto usage;
    }
  }
  if (optind != argc) goto usage;

  char* src = NULL;
  char* dst = NULL;
  if (posix_memalign((void**)&src, 4096, bytes) != 0 ||
      posix_memalign((void**)&dst, 4096, bytes) != 0) {
    fprintf(stderr, "memcpy_bandwidth: cannot allocate 2 x %zu bytes\n", bytes);
    return 1;
  }
  memset(src, 1, bytes);
  memset(dst, 2, bytes);
  memcpy(dst, src, bytes); /* untimed warm-up copy */

  double* rates = malloc(sizeof(double) * (size_t)reps);
  if (rates == NULL) return 1;
  for (long i = 0; i < reps; i++) {
    src[(size_t)i % bytes] = (char)i; /* a write between copies, so no copy can be elided */
    const double t0 = now_seconds();
    memcpy(dst, src, bytes);
    const double t1 = now_seconds();
    rates[i] = (double)bytes / (t1 - t0) / 1e9;
  }
  if (dst[(size_t)(reps - 1) % bytes] != (char)(reps - 1)) {
    fprintf(stderr, "memcpy_bandwidth: copy check failed\n");
    return 1;
  }
  qsort(rates, (size_t)reps, sizeof(double), compare_doubles);
  printf("memcpy 1 core: %.2f GB/s (median of %ld copies of %zu MiB; bytes copied per second, "
         "min %.2f, max %.2f)\n",
         rates[reps / 2], reps, bytes >> 20, rates[0], rates[reps - 1]);
  free(rates);
  free(src);
  free(dst);
  return 0;

usage:
  fprintf(stderr, "usage: memcpy_bandwidth [-s BYTES[K|M|G]] [-r REPS]\n");
  return 2;
}
