// The journal's records (one JSON object per line) and their replay onto a
// fresh Study. Records: {"op":"start","fingerprint":F}, {"op":"ask","trial":N},
// {"op":"report","trial":N,"step":S,"value":V,"decision":D},
// {"op":"tell","trial":N,"value":V}, {"op":"fail","trial":N,"error":E},
// {"op":"extend","trials":N}; {"op":"run",...} records belong to the
// TrialObserver (the tracking store's run ids), {"op":"job",...} to the
// controller (the trials' queue jobs); both are skipped.
#ifndef COHORT_SWEEP_REPLAY_H_
#define COHORT_SWEEP_REPLAY_H_

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "cohort/sweep.h"

namespace cohort::sweep {

std::string StartRecord(uint64_t fingerprint);
std::string AskRecord(int64_t trial);
std::string ReportRecord(int64_t trial, int64_t step, double value, Decision decision);
std::string TellRecord(int64_t trial, double value);
std::string FailRecord(int64_t trial, const std::string& error);
std::string ExtendRecord(int64_t trials);

// FNV-1a of the spec text: a journal belongs to one spec.
uint64_t Fingerprint(const std::string& text);

struct ReplayResult {
  bool started = false;  // a start record was found
  std::set<int64_t>
      running;  // trials asked (or resumed) and not ended: the controller died meanwhile
};

// Applies `records` to `study` (created from the same options). Errors name
// the record's position when it does not match what the study does now (a
// changed spec or a different build), or when the fingerprint differs.
Result<ReplayResult> Replay(const std::vector<std::string>& records, uint64_t fingerprint,
                            Study& study);

}  // namespace cohort::sweep

#endif  // COHORT_SWEEP_REPLAY_H_
