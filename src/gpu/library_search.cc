// The search order of the GPU libraries (library_search.h).
#include "gpu/library_search.h"

#include <algorithm>

namespace cohort::gpu {

LibrarySpec DriverLibrarySpec() {
  return {"CUDA driver", {"libcuda.so.1", "libcuda.so"}, {}, false};
}

LibrarySpec NvrtcLibrarySpec() {
  return {"NVRTC",
          {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so"},
          {"cu13/lib", "cuda_nvrtc/lib"},
          true};
}

LibrarySpec NcclLibrarySpec() {
  return {"NCCL", {"libnccl.so.2", "libnccl.so"}, {"nccl/lib"}, true};
}

std::vector<std::string> CandidatePaths(const LibrarySpec& spec, const SearchPlaces& places) {
  std::vector<std::string> out;
  auto add = [&out](const std::string& path) {
    if (std::find(out.begin(), out.end(), path) == out.end()) out.push_back(path);
  };
  auto in_folder = [](const std::string& folder, const std::string& name) {
    return folder.back() == '/' ? folder + name : folder + "/" + name;
  };
  for (const std::string& folder : places.folders) {
    for (const std::string& name : spec.names) add(in_folder(folder, name));
  }
  if (places.system_search) {
    for (const std::string& name : spec.names) add(name);
  }
  for (const std::string& root : places.wheel_roots) {
    for (const std::string& sub : spec.wheel_subdirs) {
      for (const std::string& name : spec.names) add(in_folder(in_folder(root, sub), name));
    }
  }
  if (spec.in_toolkit) {
    for (const std::string& dir : places.toolkit_dirs) {
      for (const std::string& name : spec.names) add(in_folder(dir, name));
    }
  }
  return out;
}

std::vector<std::string> SplitFolders(const std::string& list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t end = std::min(list.find(':', start), list.size());
    if (end > start) out.push_back(list.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::vector<std::string> WheelRootsOf(const std::vector<std::string>& loaded_library_paths) {
  std::vector<std::string> roots;
  for (const std::string& path : loaded_library_paths) {
    for (const char* marker : {"/site-packages/nvidia/", "/dist-packages/nvidia/"}) {
      const size_t at = path.find(marker);
      if (at == std::string::npos) continue;
      const std::string root = path.substr(0, at + std::string(marker).size() - 1);
      if (std::find(roots.begin(), roots.end(), root) == roots.end()) roots.push_back(root);
    }
  }
  return roots;
}

}  // namespace cohort::gpu
