/* size_arg.h: parsing of size arguments for the C peer benchmarks. */
#ifndef COHORT_BENCH_PEERS_SIZE_ARG_H_
#define COHORT_BENCH_PEERS_SIZE_ARG_H_

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>

/* Parses "4096", "4K", "64M", "1G" (binary multiples, as nccl-tests).
 * Returns 0 on success, -1 when `text` is not a size. */
static inline int parse_size(const char* text, size_t* out) {
  char* end = NULL;
  errno = 0;
  unsigned long long value = strtoull(text, &end, 10);
  if (errno != 0 || end == text) return -1;
  switch (toupper((unsigned char)*end)) {
    case 'G': value <<= 30; end++; break;
    case 'M': value <<= 20; end++; break;
    case 'K': value <<= 10; end++; break;
    default: break;
  }
  if (*end != '\0') return -1;
  *out = (size_t)value;
  return 0;
}

#endif /* COHORT_BENCH_PEERS_SIZE_ARG_H_ */
