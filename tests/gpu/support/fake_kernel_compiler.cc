// The fake kernel compiler (fake_kernel_compiler.h).
#include "support/fake_kernel_compiler.h"

namespace cohort::gpu::testing {

Result<std::string> FakeKernelCompiler::Compile(const std::string& source, const std::string& name,
                                                int, int) {
  if (fail_) return Status::InvalidArgument("fake compiler: told to fail on " + name);
  if (source.find("void " + name + "(") == std::string::npos) {
    return Status::InvalidArgument("fake compiler: the source does not define " + name);
  }
  ++compiled_;
  return "fake-module:" + name;
}

}  // namespace cohort::gpu::testing
