// COHORT_AUTOTUNE in the engine: rank 0 measures and decides (engine/
// autotuner.h); its decision rides in its set-0 negotiation message, and every
// rank applies it in the round that carries it, so all ranks fuse and pick
// algorithms alike from the same collective on.
#include <utility>

#include "common/logging.h"
#include "engine/engine.h"

namespace cohort {

void Engine::StartAutotune() {
  tuned_.fusion_threshold_bytes = options_.fusion_threshold_bytes;
  tuned_.cycle_time_ms = options_.cycle_time_ms;
  tuned_.small_message_bytes = options_.small_message_bytes;
  tuned_.single_copy_bytes = options_.single_copy_bytes;
  const AutotuneOptions& o = options_.autotune;
  if (!o.enabled) return;
  if (comm_.rank() == 0) autotuner_ = std::make_unique<Autotuner>(tuned_, o);
  std::string path = o.log_path;
  const size_t at = path.find("{rank}");
  if (path.empty() || (at == std::string::npos && comm_.rank() != 0)) return;
  if (at != std::string::npos) path.replace(at, 6, std::to_string(comm_.rank()));
  Result<std::unique_ptr<AutotuneLog>> log = AutotuneLog::Open(path);
  if (!log.ok()) {
    // Tuning goes on without its log, as the timeline does.
    COHORT_LOG(kWarning) << "COHORT_AUTOTUNE_LOG: " << log.status().message();
    return;
  }
  autotune_log_ = std::move(log).value();
}

void Engine::ObserveForAutotune(const Response& response) {
  if (response.kind != RequestKind::kAllreduce || !response.error.ok()) return;
  uint64_t bytes = 0;
  for (const Announcement& a : response.what) bytes += a.elements() * DataTypeSize(a.dtype);
  std::optional<TuningOrder> order = autotuner_->Observe(response.names, bytes, Clock::now());
  for (const AutotuneSample& s : autotuner_->TakeSamples()) {
    if (autotune_log_) autotune_log_->Sample(s);
    COHORT_LOG(kDebug) << "autotune sample " << s.sample << ": " << s.score << " bytes/s";
  }
  if (order) tuning_to_send_ = order;
}

void Engine::ApplyTuning(const TuningOrder& order) {
  tuned_ = order.values;
  for (auto& [id, set] : sets_) {
    if (set->member()) {
      set->comm->Retune(order.values.small_message_bytes, order.values.single_copy_bytes);
    }
  }
  if (autotune_log_) autotune_log_->Applied(order, rounds_, allreduces_.load());
  if (order.final && comm_.rank() == 0) {
    COHORT_LOG(kInfo) << "autotune chose fusion threshold " << order.values.fusion_threshold_bytes
                      << " bytes, cycle time " << order.values.cycle_time_ms
                      << " ms, small-message cut-over " << order.values.small_message_bytes
                      << " bytes, single-copy cut-over " << order.values.single_copy_bytes
                      << " bytes (" << order.score << " allreduced bytes/s)";
  }
}

}  // namespace cohort
