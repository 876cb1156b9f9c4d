// Compile-once kernels, in memory and on disk (kernel_cache.h).
#include "gpu/kernel_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "common/logging.h"
#include "common/sha256.h"
#include "gpu/reduce_kernel_source.h"

namespace cohort::gpu {
namespace {

std::string Arch(const DeviceInfo& device) {
  return "sm_" + std::to_string(device.cc_major) + std::to_string(device.cc_minor);
}

// mkdir -p; failures show up when the entry is written.
void MakeDirs(const std::string& dir) {
  for (size_t at = 1; at <= dir.size(); ++at) {
    if (at == dir.size() || dir[at] == '/') mkdir(dir.substr(0, at).c_str(), 0755);
  }
}

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream bytes;
  bytes << in.rdbuf();
  *out = bytes.str();
  return !out->empty();
}

}  // namespace

KernelCache::~KernelCache() {
  for (const auto& [key, loaded] : loaded_) {
    Status unloaded = api_.UnloadModule(loaded.first);
    if (!unloaded.ok()) {
      COHORT_LOG(kWarning) << "unloading a kernel module: " << unloaded.message();
    }
  }
}

KernelCache::Counts KernelCache::counts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counts_;
}

std::string KernelCache::DiskPath(const std::string& source, const std::string& arch) const {
  const std::string key = source + "\n" + arch + "\n" + compiler_.Version();
  return disk_dir_ + "/" + DigestHex(Sha256Of(key)) + ".bin";
}

void KernelCache::Store(const std::string& path, const std::string& image) const {
  MakeDirs(disk_dir_);
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(image.data(), static_cast<std::streamsize>(image.size()));
    if (!out) {
      COHORT_LOG(kInfo) << "not caching a GPU kernel in " << disk_dir_ << ": cannot write " << tmp;
      std::remove(tmp.c_str());
      return;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) std::remove(tmp.c_str());
}

Result<std::string> KernelCache::Image(const std::string& source, const std::string& name,
                                       const DeviceInfo& device, bool* from_disk) {
  *from_disk = false;
  if (!disk_dir_.empty()) {
    std::string image;
    if (ReadFile(DiskPath(source, Arch(device)), &image)) {
      *from_disk = true;
      return image;
    }
  }
  Result<std::string> image = compiler_.Compile(source, name, device.cc_major, device.cc_minor);
  if (!image.ok()) return image.status();
  ++counts_.compiled;
  if (!disk_dir_.empty()) Store(DiskPath(source, Arch(device)), *image);
  return image;
}

Result<FunctionHandle> KernelCache::Reduce(DataType type, ReduceOp op, const DeviceInfo& device) {
  if (!HasReduceKernel(op)) {
    return Status::InvalidArgument(std::string("no GPU kernel reduces with ") + ReduceOpName(op));
  }
  const auto key = std::make_tuple(device.ordinal, type, KernelOp(op));
  std::lock_guard<std::mutex> lock(mu_);
  auto it = loaded_.find(key);
  if (it != loaded_.end()) return it->second.second;

  const std::string name = ReduceKernelName(type, op);
  const std::string source = ReduceKernelSource(type, op, KernelTarget::kDevice);
  bool from_disk = false;
  Result<std::string> image = Image(source, name, device, &from_disk);
  if (!image.ok()) return image.status();
  Result<ModuleHandle> module = api_.LoadModule(*image);
  if (!module.ok() && from_disk) {
    // A damaged or foreign cache entry: compile afresh and replace it.
    COHORT_LOG(kInfo) << "recompiling " << name << ": the cached image did not load ("
                      << module.status().message() << ")";
    std::remove(DiskPath(source, Arch(device)).c_str());
    image = Image(source, name, device, &from_disk);
    if (!image.ok()) return image.status();
    module = api_.LoadModule(*image);
  }
  if (!module.ok()) return module.status().WithContext("loading GPU kernel " + name);
  if (from_disk) ++counts_.disk_hits;
  Result<FunctionHandle> fn = api_.GetFunction(*module, name);
  if (!fn.ok()) {
    api_.UnloadModule(*module);
    return fn.status();
  }
  loaded_.emplace(key, std::make_pair(*module, *fn));
  return *fn;
}

}  // namespace cohort::gpu
