// SharedLibrary: one library opened with dlopen from a list of candidate
// paths, and its symbols. The error when none opens names every path tried
// and why it failed, which is what a user needs to fix a GPU setup.
#ifndef COHORT_GPU_SHARED_LIBRARY_H_
#define COHORT_GPU_SHARED_LIBRARY_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cohort/status.h"

namespace cohort::gpu {

class SharedLibrary {
 public:
  // The first candidate that opens. Failure: kNotInitialized
  // "<what> not found (tried <path>: <reason>; <path>: <reason>)".
  // Libraries stay mapped after close (RTLD_NODELETE): the CUDA driver and
  // NCCL keep process-wide state that must outlive any one handle.
  static Result<std::unique_ptr<SharedLibrary>> Open(const std::string& what,
                                                     const std::vector<std::string>& candidates);
  ~SharedLibrary();
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;

  // Where the library was found: the path that opened and, for a bare name,
  // the file the dynamic loader picked.
  const std::string& path() const { return path_; }

  // Looks up each `symbols[i]` into `*slots[i]` (a function-pointer field).
  // A required symbol that is missing fails with a message naming it and
  // the library; an optional one leaves its slot null.
  struct Entry {
    const char* symbol;
    void** slot;
    bool required = true;
  };
  Status Bind(const std::vector<Entry>& entries) const;

 private:
  SharedLibrary(void* handle, std::string what, std::string path)
      : handle_(handle), what_(std::move(what)), path_(std::move(path)) {}

  void* handle_;
  std::string what_;
  std::string path_;
};

// Binds a typed function-pointer field: Slot(&table.cuInit).
template <typename F>
void** Slot(F* field) {
  return reinterpret_cast<void**>(field);
}

}  // namespace cohort::gpu

#endif  // COHORT_GPU_SHARED_LIBRARY_H_
