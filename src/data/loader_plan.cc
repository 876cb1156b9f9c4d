// Builds a rank's plan for one epoch.
//
// Why `capacity` never deadlocks: loads are fetched in index order and freed
// after their last use. Let b be the oldest unfinished batch and hi the
// highest load it needs. Every resident load is below hi (or b already has
// what it needs) and still has a use in batch b or later. So with capacity
// >= #{loads <= hi whose last use is in batch >= b}, the fetcher can always
// bring b's loads in; later batches may wait, b never.
#include "data/loader_plan.h"

#include <algorithm>
#include <map>

namespace cohort::data {

uint64_t StepsLeft(uint64_t epoch_size, const PlanRequest& request) {
  const uint64_t step = uint64_t(request.world_size) * request.batch_size;
  if (epoch_size == 0 || step == 0 || request.consumed >= epoch_size) return 0;
  const uint64_t remaining = epoch_size - request.consumed;
  return request.drop_last ? remaining / step : (remaining + step - 1) / step;
}

LoaderPlan MakeLoaderPlan(const EpochOrder& order, const PlanRequest& request, size_t lookahead) {
  LoaderPlan plan;
  plan.epoch_size = order.size();
  plan.step_samples = uint64_t(request.world_size) * request.batch_size;
  plan.batches = StepsLeft(order.size(), request);
  plan.samples.resize(plan.batches * request.batch_size);

  size_t cached_window = SIZE_MAX;
  std::vector<uint64_t> window;          // dataset indices of the cached window
  size_t run_window = SIZE_MAX;          // window of the current run of plan samples
  std::map<size_t, uint32_t> run_loads;  // chunk -> load, for the current run
  for (uint64_t b = 0; b < plan.batches; ++b) {
    const uint64_t first =
        request.consumed + b * plan.step_samples + uint64_t(request.rank) * request.batch_size;
    for (uint64_t k = 0; k < request.batch_size; ++k) {
      PlannedSample& s = plan.samples[b * request.batch_size + k];
      s.position = first + k;
      const uint64_t wrapped = s.position % order.size();
      const size_t w = order.WindowOf(wrapped);
      if (w != cached_window) {
        window = order.WindowSamples(w);
        cached_window = w;
      }
      s.index = window[wrapped - order.window_begin(w)];
      if (w != run_window) {
        run_window = w;
        run_loads.clear();
      }
      auto [chunk, offset] = order.ChunkOf(s.index);
      auto it = run_loads.find(chunk);
      if (it == run_loads.end()) {
        it = run_loads.emplace(chunk, static_cast<uint32_t>(plan.loads.size())).first;
        plan.loads.push_back({chunk, 0});
      }
      s.load = it->second;
      s.offset = offset;
      ++plan.loads[s.load].uses;
    }
  }
  // Resident loads while batch b is the oldest unfinished one: loads up to
  // the highest b needs whose last use is in batch b or later.
  std::vector<uint64_t> last_batch(plan.loads.size(), 0);
  for (uint64_t i = 0; i < plan.samples.size(); ++i)
    last_batch[plan.samples[i].load] = i / request.batch_size;
  std::vector<size_t> expire(plan.batches + 1, 0);
  size_t widest = 0, live = 0, added = 0;
  for (uint64_t b = 0; b < plan.batches; ++b) {
    live -= expire[b];
    uint32_t hi = 0;
    for (uint64_t k = 0; k < request.batch_size; ++k)
      hi = std::max(hi, plan.samples[b * request.batch_size + k].load);
    for (; added <= hi; ++added) {
      ++live;
      ++expire[last_batch[added] + 1];
    }
    widest = std::max(widest, live);
  }
  plan.capacity = widest + lookahead;
  return plan;
}

}  // namespace cohort::data
