// Where the GPU libraries are looked for, as a pure function of the places
// known (so the order is unit-tested): the folders of COHORT_CUDA_LIBRARY_PATH
// first, then the plain file names (dlopen's own search: a library already
// loaded by torch, LD_LIBRARY_PATH, RUNPATH, the ld.so cache), then the lib
// folders of NVIDIA's pip wheels (site-packages/nvidia/cu13/lib for CUDA 13,
// nvidia/cuda_nvrtc/lib for CUDA 12, nvidia/nccl/lib), then the CUDA toolkit.
#ifndef COHORT_GPU_LIBRARY_SEARCH_H_
#define COHORT_GPU_LIBRARY_SEARCH_H_

#include <string>
#include <vector>

namespace cohort::gpu {

struct LibrarySpec {
  std::string what;                        // "CUDA driver", for messages
  std::vector<std::string> names;          // file names, preferred first
  std::vector<std::string> wheel_subdirs;  // below site-packages/nvidia
  bool in_toolkit = false;                 // whether $CUDA_HOME/lib64 may hold it
};

// libcuda.so.1 (the driver: only ever installed with the driver, never in a
// wheel or the toolkit's lib64), libnvrtc.so.13/.12/.11.2, libnccl.so.2.
LibrarySpec DriverLibrarySpec();
LibrarySpec NvrtcLibrarySpec();
LibrarySpec NcclLibrarySpec();

struct SearchPlaces {
  std::vector<std::string> folders;       // COHORT_CUDA_LIBRARY_PATH, in its order
  bool system_search = true;              // try the bare names (dlopen's search)
  std::vector<std::string> wheel_roots;   // site-packages/nvidia folders
  std::vector<std::string> toolkit_dirs;  // $CUDA_HOME/lib64, /usr/local/cuda/lib64
};

// Every path to try, in order, without repeats.
std::vector<std::string> CandidatePaths(const LibrarySpec& spec, const SearchPlaces& places);

// Splits a colon-separated folder list, dropping empty entries.
std::vector<std::string> SplitFolders(const std::string& list);

// The site-packages/nvidia folders implied by these paths of loaded
// libraries (".../site-packages/nvidia/cu13/lib/libcudart.so.13" ->
// ".../site-packages/nvidia"), and by Python path entries that hold an
// nvidia folder (the caller passes which exist).
std::vector<std::string> WheelRootsOf(const std::vector<std::string>& loaded_library_paths);

}  // namespace cohort::gpu

#endif  // COHORT_GPU_LIBRARY_SEARCH_H_
