// Worker program for the point-to-point messages' multi-process tests (run
// with torchrun's variables or under `cohort run`).
//
//   p2p_worker abort   the last rank aborts the job ("stage exploded") and
//                      stays alive (15 s, or until the test kills it); every
//                      other rank waits for a message from it, which must
//                      fail with that reason (exit 0), printing the error
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "cohort/cohort.h"

namespace cohort {
namespace {

int RunAbort() {
  const int last = Size() - 1;
  if (Rank() == last) {
    // The others post their receives first (an unmatched receive waits).
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    (void)Abort("stage exploded");
    std::this_thread::sleep_for(std::chrono::seconds(15));  // alive: only the abort can tell
    _exit(0);                                               // no runtime left to shut down
  }
  float x = 0;
  Result<Handle> h = RecvAsync(last, 1, 1, &x, sizeof(x), nullptr);
  Status s = h.ok() ? Wait(*h) : h.status();
  std::printf("rank %d: %s\n", Rank(), s.ToString().c_str());
  std::fflush(stdout);
  const bool named = s.message().find("stage exploded") != std::string::npos;
  return s.code() == Status::Code::kPeerFailure && named ? 0 : 1;
}

}  // namespace
}  // namespace cohort

int main(int argc, char** argv) {
  using namespace cohort;
  const std::string mode = argc > 1 ? argv[1] : "";
  Status init = Init();
  if (init.ok()) init = OpenPointToPoint();
  if (!init.ok()) {
    std::fprintf(stderr, "init failed: %s\n", init.ToString().c_str());
    return 1;
  }
  int rc = 2;
  if (mode == "abort") rc = RunAbort();
  // Rank 0 hosts the store (torchrun's variables): its shutdown waits until
  // the others read the abort's reason there, instead of taking it away.
  (void)Shutdown();
  return rc;
}
