// LoaderPlan: what one rank reads in one epoch, worked out before any chunk
// is fetched: its samples batch by batch, and the chunk loads they need in
// the order of first need, with the number of samples that use each load.
//
// A "load" is one chunk fetched for one run of consecutive plan samples that
// fall into the same window; a chunk is loaded again only when the stream
// comes back to its window (padding wraps to the epoch's start). Loads are
// fetched in index order and freed when their last sample is taken, so
// `capacity` resident loads always suffice (see loader_plan.cc).
#ifndef COHORT_DATA_LOADER_PLAN_H_
#define COHORT_DATA_LOADER_PLAN_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "data/shuffle.h"

namespace cohort::data {

struct PlannedSample {
  uint64_t position = 0;  // in the epoch's global stream (>= epoch size for padding)
  uint64_t index = 0;     // dataset sample index
  uint32_t load = 0;      // which load holds it
  uint64_t offset = 0;    // sample position inside that chunk
};

struct ChunkLoad {
  size_t chunk = 0;   // position in the commit's chunk list
  uint64_t uses = 0;  // plan samples taken from it
};

struct PlanRequest {
  int rank = 0, world_size = 1;
  uint64_t batch_size = 1;
  bool drop_last = false;
  uint64_t consumed = 0;  // global samples of the epoch already consumed
};

struct LoaderPlan {
  uint64_t epoch_size = 0;
  uint64_t batches = 0;                // for every rank alike
  uint64_t step_samples = 0;           // R * B: global samples per step
  std::vector<PlannedSample> samples;  // batches * batch_size entries; batch b = [b*B, (b+1)*B)
  std::vector<ChunkLoad> loads;
  // Loads the fetcher may hold at once: the most that can be live while one
  // batch is the oldest unfinished (see loader_plan.cc), plus `lookahead`.
  size_t capacity = 0;
};

// Steps left in the epoch after `consumed`: floor (drop) or ceil (pad) of
// remaining / (R * B).
uint64_t StepsLeft(uint64_t epoch_size, const PlanRequest& request);

LoaderPlan MakeLoaderPlan(const EpochOrder& order, const PlanRequest& request, size_t lookahead);

}  // namespace cohort::data

#endif  // COHORT_DATA_LOADER_PLAN_H_
