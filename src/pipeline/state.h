// The controller's state folder (default SPEC's folder/.cohort-pipeline/NAME):
// state.json, rewritten atomically after every change, so a controller
// stopped or killed at any point resumes without re-running finished work;
// a lock file held while a controller runs; the step cache; staging
// datasets; provenance.jsonl (every output commit's record, for forward
// provenance).
#ifndef COHORT_PIPELINE_STATE_H_
#define COHORT_PIPELINE_STATE_H_

#include <deque>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cohort/status.h"

namespace cohort::pipeline {

// Writes `path` through a temporary file and rename, creating folders.
Status WriteFileAtomically(const std::string& path, const std::string& bytes);
Status MakeFolders(const std::string& path);

// How many of the latest output commits' provenance records the state keeps
// at hand for the status document (the dashboard's commit view); the whole
// history stays in provenance.jsonl. The server refuses documents with more
// (server/pipeline_status_api.cc's kMaxCommitRecords, kept equal).
constexpr size_t kRecentOutputRecords = 50;

class PipelineState {
 public:
  explicit PipelineState(std::string folder) : folder_(std::move(folder)) {}
  ~PipelineState();
  PipelineState(const PipelineState&) = delete;
  PipelineState& operator=(const PipelineState&) = delete;

  const std::string& folder() const { return folder_; }
  // Takes the lock (a second controller of the pipeline is refused, naming
  // its pid) and reads state.json.
  Status Open();
  // Reads state.json without the lock (status, log, provenance).
  Status Read();
  Status Save() const;

  nlohmann::json& json() { return json_; }
  // The pid of the controller holding the lock, 0 when none.
  int LockHolder() const;
  // Appends one line to provenance.jsonl.
  Status AppendProvenance(const nlohmann::json& record);
  // Every record in provenance.jsonl, oldest first (unreadable lines skipped).
  std::vector<nlohmann::json> ProvenanceRecords() const;
  // The records of the last kRecentOutputRecords output commits, oldest
  // first, one per commit: read by Read(), kept up by AppendProvenance().
  std::vector<nlohmann::json> RecentOutputRecords() const {
    return {recent_outputs_.begin(), recent_outputs_.end()};
  }
  Status AppendLog(const std::string& line) const;  // log.txt, with a time stamp

 private:
  std::string folder_;
  nlohmann::json json_ = nlohmann::json::object();
  int lock_fd_ = -1;
  std::deque<nlohmann::json> recent_outputs_;

  void KeepRecentOutput(const nlohmann::json& record);
};

}  // namespace cohort::pipeline

#endif  // COHORT_PIPELINE_STATE_H_
