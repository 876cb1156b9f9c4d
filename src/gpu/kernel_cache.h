// KernelCache: the reduction kernels, compiled at first use for the
// device's architecture and kept: in memory (one loaded module per device
// and kernel, for the life of the cache) and on disk, so a later process
// skips the compiler. A disk entry's name is the SHA-256 of the source, the
// architecture and the compiler's version: a change to any of them misses.
// Entries are written to a temporary name and renamed, so concurrent ranks
// compiling the same kernel never see a partial file; an entry the driver
// rejects (truncated, foreign) is compiled again and replaced.
#ifndef COHORT_GPU_KERNEL_CACHE_H_
#define COHORT_GPU_KERNEL_CACHE_H_

#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "cohort/types.h"
#include "gpu/cuda_api.h"
#include "gpu/kernel_compiler.h"

namespace cohort::gpu {

class KernelCache {
 public:
  // `disk_dir` "" keeps kernels in memory only.
  KernelCache(CudaApi& api, KernelCompiler& compiler, std::string disk_dir)
      : api_(api), compiler_(compiler), disk_dir_(std::move(disk_dir)) {}
  ~KernelCache();
  KernelCache(const KernelCache&) = delete;
  KernelCache& operator=(const KernelCache&) = delete;

  // The kernel for (type, op) on `device` (the calling thread's current
  // device), compiled or read from disk on first use.
  Result<FunctionHandle> Reduce(DataType type, ReduceOp op, const DeviceInfo& device);

  // What the cache did, for tests and the report.
  struct Counts {
    int compiled = 0;   // compiler runs
    int disk_hits = 0;  // modules loaded from disk
  };
  Counts counts() const;

  // The disk file for a source compiled for `arch` (e.g. "sm_90").
  std::string DiskPath(const std::string& source, const std::string& arch) const;

 private:
  Result<std::string> Image(const std::string& source, const std::string& name,
                            const DeviceInfo& device, bool* from_disk);
  void Store(const std::string& path, const std::string& image) const;

  CudaApi& api_;
  KernelCompiler& compiler_;
  const std::string disk_dir_;
  mutable std::mutex mu_;
  // guarded by mu_: (device, type, kernel op) -> loaded module and function
  std::map<std::tuple<int, DataType, ReduceOp>, std::pair<ModuleHandle, FunctionHandle>> loaded_;
  Counts counts_;  // guarded by mu_
};

}  // namespace cohort::gpu

#endif  // COHORT_GPU_KERNEL_CACHE_H_
