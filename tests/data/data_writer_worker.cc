// A dataset writer in its own process, for the crash and concurrency tests:
//   data_writer_worker loop DIR           commit forever, printing "committed K ID"
//   data_writer_worker count DIR N        make N commits of one appended sample
//                                         each, retrying after conflicts
//   data_writer_worker die-at DIR STEP    SIGKILL itself at that commit step
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "cohort/data.h"

namespace {

using namespace cohort;
using namespace cohort::data;

Sample MakeSample(float base) {
  float v[16];
  for (int i = 0; i < 16; ++i) v[i] = base + static_cast<float>(i);
  return {Value::Array(DataType::kFloat32, {16}, v)};
}

int Fail(const Status& s) {
  std::fprintf(stderr, "data_writer_worker: %s\n", s.ToString().c_str());
  return 1;
}

WriterOptions SmallChunks() {
  WriterOptions options;
  options.chunk_bytes = 4 * 64 - 1;
  return options;
}

int Loop(const std::string& dir) {
  for (uint64_t k = 1;; ++k) {
    auto w = Writer::Open(dir, SmallChunks());
    if (!w.ok()) return Fail(w.status());
    Status s = (*w)->Update(k % (*w)->size(), MakeSample(static_cast<float>(k)));
    if (s.ok()) s = (*w)->Append(MakeSample(-static_cast<float>(k)));
    if (!s.ok()) return Fail(s);
    auto id = (*w)->Commit({"loop " + std::to_string(k)});
    if (!id.ok()) return Fail(id.status());
    std::printf("committed %llu %s\n", static_cast<unsigned long long>(k), id->c_str());
    std::fflush(stdout);
  }
}

int Count(const std::string& dir, int n) {
  int conflicts = 0;
  for (int done = 0; done < n;) {
    auto w = Writer::Open(dir, SmallChunks());
    if (!w.ok()) return Fail(w.status());
    Status s = (*w)->Append(MakeSample(static_cast<float>(::getpid())));
    if (!s.ok()) return Fail(s);
    auto id = (*w)->Commit({"count " + std::to_string(done)});
    if (id.ok()) {
      ++done;
    } else if (IsConflict(id.status())) {
      ++conflicts;
    } else {
      return Fail(id.status());
    }
  }
  std::printf("done %d conflicts %d\n", n, conflicts);
  return 0;
}

int DieAt(const std::string& dir, const std::string& step) {
  WriterOptions options = SmallChunks();
  options.on_commit_step = [&step](std::string_view at) {
    if (at == step) ::raise(SIGKILL);
  };
  auto w = Writer::Open(dir, options);
  if (!w.ok()) return Fail(w.status());
  Status s = (*w)->Update(0, MakeSample(-1000));
  if (s.ok()) s = (*w)->Append(MakeSample(-2000));
  if (!s.ok()) return Fail(s);
  auto id = (*w)->Commit({"should die at " + step});
  if (!id.ok()) return Fail(id.status());
  std::fprintf(stderr, "data_writer_worker: step %s never came\n", step.c_str());
  return 3;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "loop" && argc == 3) return Loop(argv[2]);
  if (mode == "count" && argc == 4) return Count(argv[2], std::atoi(argv[3]));
  if (mode == "die-at" && argc == 4) return DieAt(argv[2], argv[3]);
  std::fprintf(stderr, "usage: data_writer_worker loop DIR | count DIR N | die-at DIR STEP\n");
  return 2;
}
