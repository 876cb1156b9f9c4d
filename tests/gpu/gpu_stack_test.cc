// Finding the GPU libraries (gpu/library_search.h, gpu/gpu_stack.h): the
// search order, the exact error when the driver is missing or incomplete,
// the settings, and, where this machine has them (the CUDA toolkit's NVRTC
// and NCCL need no GPU), NVRTC compiling every generated kernel.
#include "gpu/gpu_stack.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <map>
#include <memory>
#include <string>

#include "cohort/types.h"
#include "gpu/library_search.h"
#include "gpu/reduce_kernel_source.h"
#include "support/fake_env.h"

namespace cohort::gpu {
namespace {

EnvLookup Env(std::map<std::string, std::string> values) {
  return cohort::testing::FakeEnv(std::move(values));
}

class TempDir {
 public:
  TempDir() {
    char name[] = "/tmp/cohort-gpu-test-XXXXXX";
    path_ = mkdtemp(name);
  }
  ~TempDir() { rmdir(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(GpuLibrarySearch, OrderIsSettingThenLoaderThenWheelsThenToolkit) {
  SearchPlaces places;
  places.folders = {"/opt/a", "/opt/b/"};
  places.wheel_roots = {"/venv/lib/python3.12/site-packages/nvidia"};
  places.toolkit_dirs = {"/usr/local/cuda/lib64"};
  const std::vector<std::string> nccl = CandidatePaths(NcclLibrarySpec(), places);
  const std::vector<std::string> expected = {
      "/opt/a/libnccl.so.2",
      "/opt/a/libnccl.so",
      "/opt/b/libnccl.so.2",
      "/opt/b/libnccl.so",
      "libnccl.so.2",
      "libnccl.so",
      "/venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2",
      "/venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so",
      "/usr/local/cuda/lib64/libnccl.so.2",
      "/usr/local/cuda/lib64/libnccl.so"};
  EXPECT_EQ(nccl, expected);

  // NVRTC: CUDA 13's wheel keeps it in nvidia/cu13/lib, CUDA 12's in
  // nvidia/cuda_nvrtc/lib; newest soname first.
  const std::vector<std::string> nvrtc = CandidatePaths(NvrtcLibrarySpec(), places);
  EXPECT_EQ(nvrtc[0], "/opt/a/libnvrtc.so.13");
  EXPECT_EQ(nvrtc[8], "libnvrtc.so.13");
  EXPECT_EQ(nvrtc[12], "/venv/lib/python3.12/site-packages/nvidia/cu13/lib/libnvrtc.so.13");
  EXPECT_EQ(nvrtc[16], "/venv/lib/python3.12/site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.13");
  EXPECT_EQ(nvrtc.back(), "/usr/local/cuda/lib64/libnvrtc.so");

  // The driver comes with the driver only: never from a wheel or the toolkit.
  places.system_search = false;
  EXPECT_EQ(CandidatePaths(DriverLibrarySpec(), places),
            (std::vector<std::string>{"/opt/a/libcuda.so.1", "/opt/a/libcuda.so",
                                      "/opt/b/libcuda.so.1", "/opt/b/libcuda.so"}));
}

TEST(GpuLibrarySearch, FoldersAndWheelRoots) {
  EXPECT_EQ(SplitFolders("::/a::/b:"), (std::vector<std::string>{"/a", "/b"}));
  EXPECT_TRUE(SplitFolders("").empty());
  EXPECT_EQ(WheelRootsOf({"/v/lib/python3.12/site-packages/nvidia/cu13/lib/libcudart.so.13",
                          "/lib/x86_64-linux-gnu/libc.so.6",
                          "/v/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2",
                          "/usr/lib/python3/dist-packages/nvidia/cudnn/lib/libcudnn.so.9"}),
            (std::vector<std::string>{"/v/lib/python3.12/site-packages/nvidia",
                                      "/usr/lib/python3/dist-packages/nvidia"}));
}

// The exact message a user sees, every path tried with the loader's reason.
TEST(GpuStack, MissingDriverNamesEveryPathTried) {
  TempDir empty;
  Result<GpuStackOptions> options =
      GpuStackOptionsFromEnv(Env({{"COHORT_CUDA_LIBRARY_PATH", empty.path()}}));
  ASSERT_TRUE(options.ok()) << options.status().ToString();
  options->search_default_locations = false;
  std::unique_ptr<GpuStack> stack = GpuStack::Load(*options);
  const std::string reason = ": cannot open shared object file: No such file or directory";
  Result<CudaApi*> driver = stack->driver();
  ASSERT_FALSE(driver.ok());
  EXPECT_EQ(driver.status().code(), Status::Code::kNotInitialized);
  EXPECT_EQ(driver.status().message(), "CUDA driver not found (tried " + empty.path() +
                                           "/libcuda.so.1" + reason + "; " + empty.path() +
                                           "/libcuda.so" + reason + ")");
  EXPECT_EQ(stack->nccl().status().message(), "NCCL not found (tried " + empty.path() +
                                                  "/libnccl.so.2" + reason + "; " + empty.path() +
                                                  "/libnccl.so" + reason + ")");
  EXPECT_EQ(stack->compiler().status().message().rfind(
                "NVRTC not found (tried " + empty.path() + "/libnvrtc.so.13" + reason, 0),
            0u);
  EXPECT_EQ(stack->Report().rfind("driver: CUDA driver not found (tried ", 0), 0u)
      << stack->Report();
}

TEST(GpuStack, MissingDriverWithTheDefaultSearch) {
  if (void* loaded = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD | RTLD_LOCAL)) {
    dlclose(loaded);
    GTEST_SKIP() << "this machine has a CUDA driver";
  }
  if (void* found = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL)) {
    dlclose(found);
    GTEST_SKIP() << "this machine has a CUDA driver";
  }
  std::unique_ptr<GpuStack> stack = GpuStack::Load(*GpuStackOptionsFromEnv(Env({})));
  EXPECT_EQ(stack->driver().status().message(),
            "CUDA driver not found (tried libcuda.so.1: cannot open shared object file: No such "
            "file or directory; libcuda.so: cannot open shared object file: No such file or "
            "directory)");
}

TEST(GpuStack, DriverLackingAnEntryPointIsNamed) {
  const std::string dir = std::string(COHORT_TEST_BIN_DIR) + "/incomplete-libcuda";
  GpuStackOptions options;
  options.library_folders = {dir};
  options.search_default_locations = false;
  std::unique_ptr<GpuStack> stack = GpuStack::Load(options);
  EXPECT_EQ(
      stack->driver().status().message(),
      "CUDA driver at " + dir + "/libcuda.so.1 lacks cuDriverGetVersion (too old a version?)");
}

TEST(GpuStack, SettingsFromTheEnvironment) {
  Result<GpuStackOptions> defaults = GpuStackOptionsFromEnv(Env({{"HOME", "/home/u"}}));
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->transport, GpuTransportSetting::kAuto);
  EXPECT_EQ(defaults->buffer_bytes, size_t{64} << 20);
  EXPECT_EQ(defaults->kernel_cache_dir, "/home/u/.cache/cohort/kernels");
  EXPECT_TRUE(defaults->library_folders.empty());
  EXPECT_EQ(defaults->toolkit_dirs, (std::vector<std::string>{"/usr/local/cuda/lib64"}));

  Result<GpuStackOptions> set =
      GpuStackOptionsFromEnv(Env({{"HOME", "/home/u"},
                                  {"XDG_CACHE_HOME", "/xdg"},
                                  {"CUDA_HOME", "/opt/cuda"},
                                  {"COHORT_GPU_TRANSPORT", "staged"},
                                  {"COHORT_GPU_BUFFER_BYTES", "8M"},
                                  {"COHORT_CUDA_LIBRARY_PATH", "/x:/y"}}));
  ASSERT_TRUE(set.ok());
  EXPECT_EQ(set->transport, GpuTransportSetting::kStaged);
  EXPECT_EQ(set->buffer_bytes, size_t{8} << 20);
  EXPECT_EQ(set->kernel_cache_dir, "/xdg/cohort/kernels");
  EXPECT_EQ(set->library_folders, (std::vector<std::string>{"/x", "/y"}));
  EXPECT_EQ(set->toolkit_dirs,
            (std::vector<std::string>{"/opt/cuda/lib64", "/usr/local/cuda/lib64"}));

  EXPECT_EQ(GpuStackOptionsFromEnv(Env({{"COHORT_KERNEL_CACHE_DIR", "off"}}))->kernel_cache_dir,
            "");
  EXPECT_EQ(GpuStackOptionsFromEnv(Env({{"COHORT_KERNEL_CACHE_DIR", "/k"}}))->kernel_cache_dir,
            "/k");
  EXPECT_EQ(GpuStackOptionsFromEnv(Env({{"COHORT_GPU_TRANSPORT", "tcp"}})).status().message(),
            "COHORT_GPU_TRANSPORT='tcp' is not auto, ipc, nccl or staged");
  EXPECT_EQ(GpuStackOptionsFromEnv(Env({{"COHORT_GPU_BUFFER_BYTES", "0"}})).status().message(),
            "COHORT_GPU_BUFFER_BYTES must be positive, not 0");
}

// NVRTC needs no GPU: where the CUDA toolkit (or a wheel) provides it, every
// generated kernel compiles, and a broken source fails with the log.
TEST(GpuStack, NvrtcCompilesEveryKernel) {
  std::unique_ptr<GpuStack> stack = GpuStack::Load(*GpuStackOptionsFromEnv(Env({})));
  Result<KernelCompiler*> nvrtc = stack->compiler();
  if (!nvrtc.ok()) GTEST_SKIP() << nvrtc.status().message();
  // Every kernel in one program (each helper and kernel the per-kernel
  // sources are made of), then one per-kernel source as the cache compiles it.
  Result<std::string> all =
      (*nvrtc)->Compile(AllReduceKernelsSource(KernelTarget::kDevice), "all_kernels", 9, 0);
  ASSERT_TRUE(all.ok()) << all.status().message();
  Result<std::string> one = (*nvrtc)->Compile(
      ReduceKernelSource(DataType::kBFloat16, ReduceOp::kProduct, KernelTarget::kDevice),
      ReduceKernelName(DataType::kBFloat16, ReduceOp::kProduct), 8, 0);
  ASSERT_TRUE(one.ok()) << one.status().message();
  EXPECT_GT(one->size(), 1000u);
  Result<std::string> broken =
      (*nvrtc)->Compile("extern \"C\" __global__ void k() { nope; }", "broken", 9, 0);
  EXPECT_EQ(broken.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(broken.status().message().find("could not compile broken for sm_90"), std::string::npos)
      << broken.status().message();
  EXPECT_NE(broken.status().message().find("nope"), std::string::npos) << broken.status().message();
}

TEST(GpuStack, NcclDescribesItselfWhenFound) {
  std::unique_ptr<GpuStack> stack = GpuStack::Load(*GpuStackOptionsFromEnv(Env({})));
  Result<NcclApi*> nccl = stack->nccl();
  if (!nccl.ok()) GTEST_SKIP() << nccl.status().message();
  EXPECT_EQ((*nccl)->Describe().rfind("NCCL 2.", 0), 0u) << (*nccl)->Describe();
  EXPECT_TRUE((*nccl)->SupportsNonBlocking());
}

}  // namespace
}  // namespace cohort::gpu
