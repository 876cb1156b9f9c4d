// Build-time tool: writes the host build of every reduction kernel
// (gpu/reduce_kernel_source.h, KernelTarget::kHost) and the table
// tests/gpu/support/host_kernels.h declares, to the file named by argv[1].
#include <cstdio>
#include <fstream>
#include <string>

#include "gpu/reduce_kernel_source.h"

int main(int argc, char** argv) {
  using namespace cohort;
  using namespace cohort::gpu;
  if (argc != 2) {
    std::fprintf(stderr, "usage: write_host_kernels OUTPUT.cc\n");
    return 2;
  }
  std::string out = AllReduceKernelsSource(KernelTarget::kHost);
  out += "\n#include <cstring>\n#include \"support/host_kernels.h\"\n\n";
  out += "namespace cohort::gpu::testing {\n\nconst HostKernelEntry kHostReduceKernels[] = {\n";
  size_t n = 0;
  for (int t = 0; t < kNumDataTypes; ++t) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct}) {
      const std::string name = ReduceKernelName(static_cast<DataType>(t), op);
      out += "    {\"" + name + "\", [](const void* a) { " + name +
             "(*static_cast<const CohortReduceArgs*>(a)); }},\n";
      ++n;
    }
  }
  out += "};\nconst size_t kHostReduceKernelCount = " + std::to_string(n) + ";\n\n";
  out +=
      "HostKernel FindHostKernel(const std::string& name) {\n"
      "  for (size_t i = 0; i < kHostReduceKernelCount; ++i) {\n"
      "    if (name == kHostReduceKernels[i].name) return kHostReduceKernels[i].run;\n"
      "  }\n  return nullptr;\n}\n\n}  // namespace cohort::gpu::testing\n";
  std::ofstream file(argv[1]);
  file << out;
  return file ? 0 : 1;
}
