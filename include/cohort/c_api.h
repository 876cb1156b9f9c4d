/* The plain-C ABI of cohort, used by every language binding. No STL and no
 * framework types cross it: tensors are (pointer, element count, dtype).
 *
 * Every function returns a cohort_code (0 = success). When `err` is not NULL
 * a failure also fills it with the code and a message naming what went wrong
 * and where. Dtype and op values are those of cohort::DataType and
 * cohort::ReduceOp (types.h); counts are in elements.
 */
#ifndef COHORT_C_API_H_
#define COHORT_C_API_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
  COHORT_OK = 0,
  COHORT_ERR_INVALID_ARGUMENT = 1,
  COHORT_ERR_MISMATCH = 2,
  COHORT_ERR_TIMEOUT = 3,
  COHORT_ERR_PEER_FAILURE = 4,
  COHORT_ERR_UNAUTHENTICATED = 5,
  COHORT_ERR_IO = 6,
  COHORT_ERR_NOT_INITIALIZED = 7,
  COHORT_ERR_INTERNAL = 8,
};

enum {
  COHORT_UINT8 = 0, COHORT_INT8 = 1, COHORT_INT32 = 2, COHORT_INT64 = 3,
  COHORT_FLOAT16 = 4, COHORT_BFLOAT16 = 5, COHORT_FLOAT32 = 6, COHORT_FLOAT64 = 7,
};

enum { COHORT_SUM = 0, COHORT_AVERAGE = 1, COHORT_MIN = 2, COHORT_MAX = 3, COHORT_PRODUCT = 4 };

typedef struct cohort_error {
  int code;
  char message[1024]; /* NUL-terminated, truncated if longer */
} cohort_error;

int cohort_init(cohort_error* err);
int cohort_shutdown(cohort_error* err);
int cohort_is_initialized(void);
/* -1 when not initialized. */
int cohort_rank(void);
int cohort_size(void);
int cohort_local_rank(void);
int cohort_local_size(void);
int cohort_cross_rank(void);
int cohort_cross_size(void);

int cohort_allreduce(const void* send, void* recv, uint64_t count, int dtype, int op,
                     double prescale, double postscale, cohort_error* err);
int cohort_reducescatter(const void* send, void* recv, const uint64_t* recv_counts, int dtype,
                         int op, cohort_error* err);
/* counts_out has cohort_size() entries. */
int cohort_allgather_counts(uint64_t my_count, uint64_t* counts_out, cohort_error* err);
int cohort_allgather(const void* send, uint64_t send_count, void* recv,
                     const uint64_t* recv_counts, int dtype, cohort_error* err);
int cohort_broadcast(void* buf, uint64_t count, int dtype, int root, cohort_error* err);
int cohort_alltoall_counts(const uint64_t* send_counts, uint64_t* recv_counts_out,
                           cohort_error* err);
int cohort_alltoall(const void* send, const uint64_t* send_counts, void* recv,
                    const uint64_t* recv_counts, int dtype, cohort_error* err);
int cohort_barrier(cohort_error* err);

#ifdef __cplusplus
}
#endif

#endif /* COHORT_C_API_H_ */
