// dlopen over candidate paths (shared_library.h).
#include "gpu/shared_library.h"

#include <dlfcn.h>
#include <link.h>

namespace cohort::gpu {
namespace {

// dlerror() starts with the path it was given ("libx.so: cannot open ...");
// the message lists the path already, so that prefix is dropped.
std::string Reason(const std::string& path) {
  const char* err = dlerror();
  std::string text = err != nullptr ? err : "unknown error";
  if (text.rfind(path + ": ", 0) == 0) text = text.substr(path.size() + 2);
  return text;
}

std::string LoadedFile(void* handle, const std::string& fallback) {
  struct link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr &&
      map->l_name[0] != '\0') {
    return map->l_name;
  }
  return fallback;
}

}  // namespace

Result<std::unique_ptr<SharedLibrary>> SharedLibrary::Open(
    const std::string& what, const std::vector<std::string>& candidates) {
  std::string tried;
  for (const std::string& path : candidates) {
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (handle != nullptr) {
      return std::unique_ptr<SharedLibrary>(
          new SharedLibrary(handle, what, LoadedFile(handle, path)));
    }
    tried += (tried.empty() ? "" : "; ") + path + ": " + Reason(path);
  }
  if (candidates.empty()) tried = "no candidate paths";
  return Status::NotInitialized(what + " not found (tried " + tried + ")");
}

SharedLibrary::~SharedLibrary() { dlclose(handle_); }

Status SharedLibrary::Bind(const std::vector<Entry>& entries) const {
  for (const Entry& e : entries) {
    dlerror();
    *e.slot = dlsym(handle_, e.symbol);
    if (*e.slot == nullptr && e.required) {
      return Status::NotInitialized(what_ + " at " + path_ + " lacks " + e.symbol +
                                    " (too old a version?)");
    }
  }
  return Status::OK();
}

}  // namespace cohort::gpu
