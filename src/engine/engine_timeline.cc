// Starting and stopping the engine's timeline (engine/timeline.h) while it runs.
#include "engine/engine.h"

#include <utility>

namespace cohort {

Status Engine::StartTimeline(const std::string& path, bool mark_cycles) {
  std::string mine = path;
  const size_t at = mine.find("{rank}");
  std::shared_ptr<Timeline> next;
  if (at != std::string::npos || comm_.rank() == 0) {
    if (at != std::string::npos) mine.replace(at, 6, std::to_string(comm_.rank()));
    Result<std::unique_ptr<Timeline>> opened = Timeline::Open(mine, comm_.rank());
    if (!opened.ok()) return opened.status();
    next = std::move(opened).value();
  }
  std::shared_ptr<Timeline> old;
  {
    std::lock_guard<std::mutex> lock(timeline_mu_);
    old = std::exchange(timeline_, next);
    mark_cycles_ = mark_cycles;
  }
  return old ? old->Close() : Status::OK();
}

Status Engine::StopTimeline() {
  std::shared_ptr<Timeline> old;
  {
    std::lock_guard<std::mutex> lock(timeline_mu_);
    old = std::exchange(timeline_, nullptr);
  }
  return old ? old->Close() : Status::OK();
}

}  // namespace cohort
