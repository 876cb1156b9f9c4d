/* The plain-C ABI of cohort, used by every language binding. No STL and no
 * framework types cross it: tensors are (pointer, element count, dtype), or
 * (pointer, int64 shape, dtype) for the engine's named operations.
 *
 * Every function returns a cohort_code (0 = success). When `err` is not NULL
 * a failure also fills it with the code and a message naming what went wrong
 * and where. Dtype and op values are those of cohort::DataType and
 * cohort::ReduceOp (types.h); counts are in elements. Out-pointers (`*_out`)
 * must not be NULL (an invalid-argument error, before anything starts).
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
  COHORT_ERR_INTERRUPTED = 9,
  COHORT_ERR_NOT_FOUND = 10,
  COHORT_ERR_ALREADY_EXISTS = 11,
  COHORT_ERR_PERMISSION_DENIED = 12,
  COHORT_ERR_UNAVAILABLE = 13,
  COHORT_ERR_ABORTED = 14,
};

enum {
  COHORT_UINT8 = 0,
  COHORT_INT8 = 1,
  COHORT_INT32 = 2,
  COHORT_INT64 = 3,
  COHORT_FLOAT16 = 4,
  COHORT_BFLOAT16 = 5,
  COHORT_FLOAT32 = 6,
  COHORT_FLOAT64 = 7,
  COHORT_INT16 = 8,
  COHORT_BOOL = 9, /* one byte, 0 or 1; reduced with logical or/and */
};

enum {
  COHORT_SUM = 0,
  COHORT_AVERAGE = 1,
  COHORT_MIN = 2,
  COHORT_MAX = 3,
  COHORT_PRODUCT = 4,
  COHORT_ADASUM = 5, /* adaptive summation; floating-point dtypes only */
};

typedef struct cohort_error {
  int code;
  char message[1024]; /* NUL-terminated, truncated if longer */
} cohort_error;

int cohort_init(cohort_error* err);
int cohort_shutdown(cohort_error* err);
/* Leaves the job at once after a local failure; the peers fail with
 * `reason` (see cohort::Abort). */
int cohort_abort(const char* reason, cohort_error* err);
int cohort_is_initialized(void);
/* Initialized and its engine has not stopped for good (cohort::IsRunning). */
int cohort_is_running(void);
/* Elastic jobs: the round this process joined and the newest one published
 * (see cohort::ElasticRounds). */
int cohort_elastic_rounds(int64_t* joined, int64_t* newest, cohort_error* err);
/* -1 when not initialized. */
int cohort_rank(void);
int cohort_size(void);
int cohort_local_rank(void);
int cohort_local_size(void);
int cohort_cross_rank(void);
int cohort_cross_size(void);
/* 1: large one-host collectives copy once (see cohort::SharedMemorySingleCopy);
 * 0: twice; -1: not initialized. */
int cohort_shm_single_copy(void);
/* Buffers the other ranks of this host can map: one-host collectives on them
 * copy with plain loads and stores (see cohort::AllocateSharedMemory).
 * Requires cohort_init; free with cohort_free_shared (also after shutdown). */
int cohort_alloc_shared(uint64_t bytes, void** out, cohort_error* err);
int cohort_free_shared(void* buffer, cohort_error* err);

/* PowerSGD's passes over one float32 matrix (see cohort::PowerSgdProject):
 * m is rows x cols, row-major; error may be NULL (no error feedback); q_t is
 * rank x cols and p rows x rank, row-major. No runtime needed. */
typedef struct cohort_powersgd_matrix {
  float* m;
  float* error;
  uint64_t rows;
  uint64_t cols;
  uint64_t rank;
} cohort_powersgd_matrix;
/* m += error; p = m q. */
int cohort_powersgd_project(const cohort_powersgd_matrix* matrix, const float* q_t, float* p,
                            cohort_error* err);
/* q_t = (m^T p)^T. */
int cohort_powersgd_project_back(const cohort_powersgd_matrix* matrix, const float* p, float* q_t,
                                 cohort_error* err);
/* a = p q^T; error = m - a; m = a. */
int cohort_powersgd_approximate(const cohort_powersgd_matrix* matrix, const float* p,
                                const float* q_t, cohort_error* err);

/* Blocking operations. The other collectives are reached through the
 * engine's named, asynchronous forms below (what every binding uses). */
int cohort_allreduce(const void* send, void* recv, uint64_t count, int dtype, int op,
                     double prescale, double postscale, cohort_error* err);
/* counts_out has cohort_size() entries. */
int cohort_allgather_counts(uint64_t my_count, uint64_t* counts_out, cohort_error* err);

/* ---- Process sets (see cohort.h): subsets of ranks with their own
 * negotiation. Set 0 is every rank. Adding and removing are collective over
 * every rank of the job. */
enum { COHORT_GLOBAL_PROCESS_SET = 0 };
int cohort_add_process_set(const int* ranks, int num_ranks, int* id_out, cohort_error* err);
int cohort_remove_process_set(int process_set, cohort_error* err);
/* Writes at most `capacity` member ranks (ascending) and the set's size into
 * *size_out; call with capacity cohort_size() to get them all. */
int cohort_process_set_ranks(int process_set, int* ranks_out, int capacity, int* size_out,
                             cohort_error* err);
/* This rank's position in the set, -1 when it is not a member. */
int cohort_process_set_rank(int process_set, int* rank_out, cohort_error* err);
/* Writes at most `capacity` ids, returns how many sets exist. */
int cohort_process_set_ids(int* ids_out, int capacity);

/* ---- Asynchronous named operations (the engine; see cohort.h) ----
 *
 * A tensor is (pointer, shape[ndim], dtype); shapes are int64 arrays in
 * elements, row-major and contiguous. Each call returns a handle in
 * *handle_out; buffers must stay valid until the handle completes. Poll and
 * wait on the handle, take the result of operations that produce a new tensor
 * (allgather, reduce-scatter, alltoall, join), then release it. */
enum { COHORT_COMPRESSION_NONE = 0, COHORT_COMPRESSION_FP16 = 1, COHORT_COMPRESSION_BF16 = 2 };

typedef struct cohort_allreduce_options {
  int op;
  double prescale_factor;
  double postscale_factor;
  int compression;
  int process_set;
} cohort_allreduce_options;

int cohort_allreduce_async(const char* name, const void* send, void* recv, const int64_t* shape,
                           int ndim, int dtype, const cohort_allreduce_options* options,
                           int64_t* handle_out, cohort_error* err);
/* Negotiated together and released to execution as one group; tensor i is
 * (sends[i], recvs[i], shapes[i][0..ndims[i])). handles_out has `count` slots. */
int cohort_grouped_allreduce_async(int count, const char* const* names, const void* const* sends,
                                   void* const* recvs, const int64_t* const* shapes,
                                   const int* ndims, int dtype,
                                   const cohort_allreduce_options* options, int64_t* handles_out,
                                   cohort_error* err);
int cohort_broadcast_async(const char* name, void* buf, const int64_t* shape, int ndim, int dtype,
                           int root, int process_set, int64_t* handle_out, cohort_error* err);
int cohort_allgather_async(const char* name, const void* send, const int64_t* shape, int ndim,
                           int dtype, int process_set, int64_t* handle_out, cohort_error* err);
/* recv_rows: num_recv_rows == 0 for an even split of the first dimension,
 * else one entry per rank of the set. prescale multiplies each rank's input
 * before reducing, postscale this rank's block after (1.0: none), as for
 * allreduce; the engine applies both, so bindings never scale themselves. */
int cohort_reducescatter_async(const char* name, const void* send, const int64_t* shape, int ndim,
                               int dtype, int op, const int64_t* recv_rows, int num_recv_rows,
                               int process_set, double prescale, double postscale,
                               int64_t* handle_out, cohort_error* err);
/* As the two above, writing the output into the caller's `recv` of
 * `recv_elements` elements (kept valid until completion) instead of a result
 * to take; in place allowed (see cohort::AllgatherIntoAsync). A `recv` of the
 * wrong size fails the handle with COHORT_ERR_INVALID_ARGUMENT, naming both
 * sizes. */
int cohort_allgather_into_async(const char* name, const void* send, const int64_t* shape, int ndim,
                                int dtype, void* recv, uint64_t recv_elements, int process_set,
                                int64_t* handle_out, cohort_error* err);
int cohort_reducescatter_into_async(const char* name, const void* send, const int64_t* shape,
                                    int ndim, int dtype, int op, const int64_t* recv_rows,
                                    int num_recv_rows, int process_set, double prescale,
                                    double postscale, void* recv, uint64_t recv_elements,
                                    int64_t* handle_out, cohort_error* err);
/* splits: one entry per rank of the set, summing to shape[0]. */
int cohort_alltoall_async(const char* name, const void* send, const int64_t* shape, int ndim,
                          int dtype, const int64_t* splits, int num_splits, int process_set,
                          int64_t* handle_out, cohort_error* err);
int cohort_barrier_async(const char* name, int process_set, int64_t* handle_out, cohort_error* err);
int cohort_join_async(int64_t* handle_out, cohort_error* err);

/* ---- GPU tensors (docs/gpu.md). The same operations on CUDA device memory:
 * `device` names the device of the buffers and the caller's stream
 * (cudaStream_t; NULL: the legacy default stream); a NULL `device`, or
 * device -1, means host memory, as the calls above. The engine's stream waits
 * for what the caller queued on `stream` before the call; the handle
 * completes once the collective is queued on the device. cohort_wait and
 * cohort_poll also wait for/ask the device; cohort_synchronize_on_stream
 * instead makes a stream wait for the result (no host wait). A rank's GPU
 * tensors share one device. Allgather and reduce-scatter of GPU tensors take
 * the _into forms (results stay on the device). The driver is loaded at the
 * first GPU tensor; without one, that call fails naming what was not found. */
typedef struct cohort_device {
  int32_t device;
  void* stream;
} cohort_device;
int cohort_allreduce_async_on_device(const char* name, const void* send, void* recv,
                                     const int64_t* shape, int ndim, int dtype,
                                     const cohort_allreduce_options* options,
                                     const cohort_device* device, int64_t* handle_out,
                                     cohort_error* err);
int cohort_grouped_allreduce_async_on_device(int count, const char* const* names,
                                             const void* const* sends, void* const* recvs,
                                             const int64_t* const* shapes, const int* ndims,
                                             int dtype, const cohort_allreduce_options* options,
                                             const cohort_device* device, int64_t* handles_out,
                                             cohort_error* err);
int cohort_broadcast_async_on_device(const char* name, void* buf, const int64_t* shape, int ndim,
                                     int dtype, int root, int process_set,
                                     const cohort_device* device, int64_t* handle_out,
                                     cohort_error* err);
int cohort_allgather_into_async_on_device(const char* name, const void* send, const int64_t* shape,
                                          int ndim, int dtype, void* recv, uint64_t recv_elements,
                                          int process_set, const cohort_device* device,
                                          int64_t* handle_out, cohort_error* err);
int cohort_reducescatter_into_async_on_device(const char* name, const void* send,
                                              const int64_t* shape, int ndim, int dtype, int op,
                                              const int64_t* recv_rows, int num_recv_rows,
                                              int process_set, double prescale, double postscale,
                                              void* recv, uint64_t recv_elements,
                                              const cohort_device* device, int64_t* handle_out,
                                              cohort_error* err);
/* Waits until the handle's collective is queued (bounded as cohort_wait),
 * then makes `stream` wait for its result. For a host tensor: cohort_wait. */
int cohort_synchronize_on_stream(int64_t handle, void* stream, double timeout_seconds,
                                 cohort_error* err);
/* 1 in every build (the GPU stack is found at run time). */
int cohort_cuda_built(void);
/* NCCL's version code (22703 for 2.27.3) when NCCL can be loaded in this
 * process, else 0: what Horovod's nccl_built() returns. */
int cohort_nccl_built(void);
/* Where each GPU library was found, or why not; NUL-terminated into out. */
int cohort_gpu_report(char* out, int capacity, cohort_error* err);

/* *done_out = 1 once the handle completed (successfully or not). */
int cohort_poll(int64_t handle, int* done_out, cohort_error* err);
/* Waits for the handle and returns the operation's status; timeout_seconds
 * < 0 means COHORT_TIMEOUT. */
int cohort_wait(int64_t handle, double timeout_seconds, cohort_error* err);
/* Like cohort_wait, calling interrupted(ctx) about every 100 ms while it
 * waits; a nonzero return ends the wait with COHORT_ERR_INTERRUPTED (the
 * operation goes on). */
int cohort_wait_interruptible(int64_t handle, double timeout_seconds, int (*interrupted)(void* ctx),
                              void* ctx, cohort_error* err);

/* The output of a completed allgather, reduce-scatter, alltoall or join,
 * owned by the caller until cohort_result_free. */
typedef struct cohort_result cohort_result;
int cohort_take_result(int64_t handle, cohort_result** result_out, cohort_error* err);
const void* cohort_result_data(const cohort_result* result);
uint64_t cohort_result_bytes(const cohort_result* result);
int cohort_result_ndim(const cohort_result* result);
const int64_t* cohort_result_shape(const cohort_result* result);
/* alltoall: rows received from each rank of the set. */
int cohort_result_num_splits(const cohort_result* result);
const int64_t* cohort_result_splits(const cohort_result* result);
/* join: the last rank to join (-1 otherwise). */
int64_t cohort_result_last_joined_rank(const cohort_result* result);
void cohort_result_free(cohort_result* result);
/* Forgets a handle (completed or not: a pending one still runs). */
void cohort_release(int64_t handle);

/* Chrome-trace timeline of every tensor's phases; "{rank}" in the path is
 * replaced by the rank, otherwise only rank 0 writes. */
int cohort_start_timeline(const char* path, cohort_error* err);
/* As cohort_start_timeline; mark_cycles != 0 also records a CYCLE_START
 * instant at the start of every engine cycle (Horovod's mark_cycles). */
int cohort_start_timeline_marking_cycles(const char* path, int mark_cycles, cohort_error* err);
int cohort_stop_timeline(cohort_error* err);

/* The engine's fusion counters since it started (zeros before): see
 * cohort::EngineStats in types.h. */
typedef struct cohort_engine_stats {
  uint64_t cycles;
  uint64_t allreduces;
  uint64_t allreduced_tensors;
  uint64_t fused_allreduces;
  uint64_t fused_tensors;
  uint64_t fused_bytes;
} cohort_engine_stats;
void cohort_get_engine_stats(cohort_engine_stats* out);
/* ---- Point-to-point messages (see cohort.h): tagged messages between two
 * ranks of the job. cohort_p2p_open is collective (every rank, once); the
 * handles are waited for, polled and released as above. timeout_seconds < 0
 * means COHORT_TIMEOUT. *source_out (may be NULL) is the sender once the
 * receive completed. */
enum { COHORT_ANY_SOURCE = -1 };
int cohort_p2p_open(cohort_error* err);
int cohort_send_async(int dst, int64_t channel, int64_t tag, const void* data, uint64_t bytes,
                      double timeout_seconds, int64_t* handle_out, cohort_error* err);
int cohort_recv_async(int src, int64_t channel, int64_t tag, void* data, uint64_t bytes,
                      double timeout_seconds, int* source_out, int64_t* handle_out,
                      cohort_error* err);
/* The host address peers reach rank `rank` at, NUL-terminated into host_out
 * (capacity bytes; an error when it does not fit). */
int cohort_peer_host(int rank, char* host_out, int capacity, cohort_error* err);

#ifdef __cplusplus
}
#endif

#endif /* COHORT_C_API_H_ */
