// The knobs the autotuner sets (engine/autotuner.h) and the order that
// carries new values to every rank inside rank 0's negotiation message, so
// all ranks switch between the same two collectives.
#ifndef COHORT_ENGINE_TUNING_H_
#define COHORT_ENGINE_TUNING_H_

#include <cstdint>

namespace cohort {

struct TuningValues {
  uint64_t fusion_threshold_bytes = 64 << 20;  // EngineOptions::fusion_threshold_bytes
  double cycle_time_ms = 1.0;                  // EngineOptions::cycle_time_ms
  uint64_t small_message_bytes = 64 << 10;     // CommunicatorOptions::small_message_bytes
  uint64_t single_copy_bytes = 1 << 20;        // CommunicatorOptions::single_copy_bytes
  bool operator==(const TuningValues&) const = default;
};

struct TuningOrder {
  TuningValues values;
  int32_t sample = 0;  // the search's sample these values are measured as
  bool final = false;  // the chosen values: tuning ends
  double score = 0;    // final only: their measured score (allreduced bytes/s)
};

}  // namespace cohort

#endif  // COHORT_ENGINE_TUNING_H_
