// Cross-memory attach (CMA): copying straight between this process's memory
// and a peer process's on the same host with process_vm_readv/writev, one
// copy and no shared segment in between. The kernel allows it only where
// this process may ptrace the peer (same uid and kernel.yama.ptrace_scope
// <= 1, or CAP_SYS_PTRACE) and no seccomp profile forbids the calls (many
// container runtimes do), so the mesh probes it once (CmaProbe) before any
// collective relies on it.
#ifndef COHORT_NET_CMA_H_
#define COHORT_NET_CMA_H_

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cohort/status.h"

namespace cohort {

// A range of a peer's address space.
struct RemoteRange {
  uint64_t addr;
  size_t bytes;
};

// What a failed CMA call's errno means: the kernel does not let this
// process do it (ptrace permission, seccomp), or the peer process is gone.
// Anything else (EFAULT: a bad address) is a broken protocol.
bool CmaRefused(int error_number);
bool CmaPeerGone(int error_number);

// Copies `bytes` from `remote` ranges of process `pid` into `local`, in
// order (`local` holds the ranges' total). Retries partial copies. On
// failure sets *error_number (when given) to the errno and returns kIoError
// naming the call; on success sets it to 0.
Status CmaRead(int pid, void* local, const std::vector<RemoteRange>& remote,
               int* error_number = nullptr);
// Copies the `local` buffers (their total equals the ranges') into the
// `remote` ranges of process `pid`, in order.
Status CmaWrite(int pid, const std::vector<iovec>& local, const std::vector<RemoteRange>& remote,
                int* error_number = nullptr);

// Whether this process may read process `pid`'s memory: reads 8 bytes at
// `addr` there and compares them with `expected` (a value the peer put at
// that address and also shows through shared memory). OK, or an error
// saying why not (the kernel's refusal, or a value that differs).
// A value that differs sets *error_number to EIO.
Status CmaProbe(int pid, uint64_t addr, uint64_t expected, int* error_number = nullptr);

}  // namespace cohort

#endif  // COHORT_NET_CMA_H_
