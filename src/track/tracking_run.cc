// TrackingRun: the client behind include/cohort/track.h and cohort.track.
// Log() appends to a queue; one background thread turns the queue into
// log-batch requests (at most kMaxBatchMetrics points each, each with a
// batch id), delivers them in order, and spools what the server cannot take.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "cohort/track.h"
#include "net/auth.h"
#include "track/spool.h"
#include "track/store.h"
#include "track/transport.h"
#include "track/validation.h"

namespace cohort {

using nlohmann::json;
using track::Transport;

namespace {

int64_t NowMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string EnvOr(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

std::string HomePath(const std::string& relative) { return EnvOr("HOME", "") + "/" + relative; }

bool Retryable(const Status& s) { return s.code() == Status::Code::kPeerFailure; }

}  // namespace

class TrackingRun::Impl {
 public:
  Impl(std::unique_ptr<Transport> transport, std::string spool_dir, int flush_interval_ms)
      : transport_(std::move(transport)),
        spool_dir_(std::move(spool_dir)),
        flush_interval_ms_(flush_interval_ms) {}

  ~Impl() { StopWorker(); }

  Status Create(const TrackingOptions& options) {
    auto experiment = ExperimentIdByName(*transport_, options.project);
    if (!experiment.ok()) return experiment.status();
    experiment_id_ = *experiment;
    json tags = json::array();
    for (const auto& [k, v] : options.tags) tags.push_back({{"key", k}, {"value", v}});
    json body = {{"experiment_id", experiment_id_},
                 {"start_time", NowMillis()},
                 {"user_id", EnvOr("USER", "")},
                 {"tags", tags}};
    if (!options.run_name.empty()) body["run_name"] = options.run_name;
    auto run = transport_->Call("POST", "runs/create", body);
    if (!run.ok()) return run.status();
    auto run_id = track::StringIn(*run, "/run/info/run_id");
    if (!run_id.ok()) return run_id.status();
    run_id_ = *run_id;
    json params = json::array();
    for (const auto& [k, v] : options.params) {
      params.push_back({{"key", k}, {"value", v}});
      if (params.size() == track::kMaxBatchParams) {
        COHORT_RETURN_IF_ERROR(SendParams(params));
        params = json::array();
      }
    }
    if (!params.empty()) COHORT_RETURN_IF_ERROR(SendParams(params));
    if (transport_->remote()) {
      auto spool = track::Spool::Open(spool_dir_, run_id_);
      if (!spool.ok()) return spool.status();
      spool_ = std::move(*spool);
    }
    worker_ = std::thread([this] { Work(); });
    return Status::OK();
  }

  void Log(const std::vector<std::pair<std::string, double>>& values, int64_t step) {
    int64_t now = NowMillis();
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return Record(Status::InvalidArgument("log: the run has finished"));
    for (const auto& [key, value] : values) {
      Status s = track::ValidateKey("metric key", key);
      if (!s.ok()) {
        Record(s);
        continue;
      }
      metrics_.push_back({key, value, now, step});
    }
    ++logged_;
    if (metrics_.size() >= track::kMaxBatchMetrics) cv_.notify_all();
  }

  void SetTag(const std::string& key, const std::string& value) {
    std::lock_guard<std::mutex> lock(mu_);
    tags_.push_back({key, value});
    ++logged_;
  }

  void LogInput(const std::string& name, const std::string& digest, const std::string& source_type,
                const std::string& source, const std::string& context) {
    json input = {
        {"dataset",
         {{"name", name}, {"digest", digest}, {"source_type", source_type}, {"source", source}}}};
    if (!context.empty()) input["tags"] = {{{"key", "mlflow.data.context"}, {"value", context}}};
    std::lock_guard<std::mutex> lock(mu_);
    inputs_.push_back(std::move(input));
    ++logged_;
  }

  Status Flush() {
    std::unique_lock<std::mutex> lock(mu_);
    uint64_t target = logged_;
    flush_ = true;
    cv_.notify_all();
    done_cv_.wait(lock, [&] { return handled_ >= target || stopped_; });
    return TakeError();
  }

  Status Finish(const std::string& status) {
    if (finished_) return Status::OK();
    finished_ = true;
    Status flushed = Flush();
    StopWorker();
    DrainSpool(/*force=*/true);  // one more try: the server may be back
    json end = {{"run_id", run_id_}, {"status", status}, {"end_time", NowMillis()}};
    Deliver({{"method", "POST"}, {"endpoint", "runs/update"}, {"body", end}});
    // Lets go of the store (an embedded SQLite file is locked while open).
    std::lock_guard<std::mutex> lock(spool_mu_);
    if (spool_) left_in_spool_ = spool_->size();
    spool_.reset();  // a spool with entries stays on disk for the next run to replay
    transport_.reset();
    Status last = TakeError();
    return flushed.ok() ? last : flushed;
  }

  Status LogArtifact(const std::string& local_path, const std::string& artifact_path) {
    if (finished_) return Status::InvalidArgument("log_artifact: the run has finished");
    std::ifstream in(local_path, std::ios::binary);
    if (!in) return Status::InvalidArgument("log_artifact: cannot read '" + local_path + "'");
    std::ostringstream bytes;
    bytes << in.rdbuf();
    std::string name =
        artifact_path.empty() ? local_path.substr(local_path.find_last_of('/') + 1) : artifact_path;
    return transport_->PutArtifact(experiment_id_ + "/" + run_id_ + "/artifacts/" + name,
                                   bytes.str());
  }

  size_t Spooled() {
    std::lock_guard<std::mutex> lock(spool_mu_);
    return spool_ ? spool_->size() : left_in_spool_;
  }

  const std::string& run_id() const { return run_id_; }
  const std::string& experiment_id() const { return experiment_id_; }

 private:
  Status SendParams(const json& params) {
    return transport_->Call("POST", "runs/log-batch", {{"run_id", run_id_}, {"params", params}})
        .status();
  }

  void StopWorker() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
      cv_.notify_all();
    }
    if (worker_.joinable()) worker_.join();
  }

  void Work() {
    ReplayOrphans();
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      cv_.wait_for(lock, std::chrono::milliseconds(flush_interval_ms_), [&] {
        return stopping_ || flush_ || metrics_.size() >= track::kMaxBatchMetrics;
      });
      std::vector<track::Metric> metrics;
      std::vector<track::Tag> tags;
      json inputs = json::array();
      metrics.swap(metrics_);
      tags.swap(tags_);
      for (json& input : inputs_) inputs.push_back(std::move(input));
      inputs_.clear();
      uint64_t upto = logged_;
      bool stop = stopping_;
      flush_ = false;
      lock.unlock();
      SendQueued(metrics, tags);
      // runs/log-inputs skips an input the run has: a replay doubles nothing.
      if (!inputs.empty()) {
        Deliver({{"method", "POST"},
                 {"endpoint", "runs/log-inputs"},
                 {"body", {{"run_id", run_id_}, {"datasets", inputs}}}});
      }
      lock.lock();
      handled_ = upto;
      done_cv_.notify_all();
      if (stop) break;
    }
    stopped_ = true;
    done_cv_.notify_all();
  }

  void SendQueued(const std::vector<track::Metric>& metrics, const std::vector<track::Tag>& tags) {
    if (spool_ && spool_->size() > 0) DrainSpool(/*force=*/false);
    size_t m = 0, t = 0;
    while (m < metrics.size() || t < tags.size()) {
      json batch = {{"run_id", run_id_}, {"metrics", json::array()}, {"tags", json::array()}};
      for (size_t n = 0; n < track::kMaxBatchMetrics && m < metrics.size(); ++n, ++m) {
        const track::Metric& p = metrics[m];
        json value = std::isfinite(p.value) ? json(p.value)
                     : std::isnan(p.value)  ? json("NaN")
                                            : json(p.value > 0 ? "Infinity" : "-Infinity");
        batch["metrics"].push_back(
            {{"key", p.key}, {"value", value}, {"timestamp", p.timestamp}, {"step", p.step}});
      }
      for (size_t n = 0; n < track::kMaxBatchTags && t < tags.size(); ++n, ++t) {
        batch["tags"].push_back({{"key", tags[t].key}, {"value", tags[t].value}});
      }
      batch["cohort_batch_id"] = run_id_ + ":" + std::to_string(next_batch_++);
      Deliver({{"method", "POST"}, {"endpoint", "runs/log-batch"}, {"body", batch}});
    }
  }

  // Sends one request, or spools it when the server cannot be reached (or
  // older requests are still spooled: order is kept).
  void Deliver(const json& entry) {
    std::lock_guard<std::mutex> lock(spool_mu_);
    if (spool_ && spool_->size() > 0) {
      Record(spool_->Append(entry));
      return;
    }
    Status s = Send(entry);
    if (Retryable(s) && spool_) {
      Record(spool_->Append(entry));
    } else {
      Record(s);
    }
  }

  Status Send(const json& entry) {
    return transport_
        ->Call(entry["method"].get<std::string>(), entry["endpoint"].get<std::string>(),
               entry["body"])
        .status();
  }

  // Replays the spool in order until the server fails again; at most once a
  // second unless `force`d.
  void DrainSpool(bool force) {
    std::lock_guard<std::mutex> lock(spool_mu_);
    if (!spool_ || spool_->size() == 0) return;
    auto now = std::chrono::steady_clock::now();
    if (!force && now < next_drain_) return;  // the server was down a moment ago
    Replay(*spool_);
    if (spool_->size() > 0) next_drain_ = now + std::chrono::seconds(1);
  }

  void Replay(track::Spool& spool) {
    auto entries = spool.ReadAll();
    if (!entries.ok()) return Record(entries.status());
    size_t sent = 0;
    for (; sent < entries->size(); ++sent) {
      Status s = Send((*entries)[sent]);
      if (Retryable(s)) break;
      Record(s);  // a refusal is final: reported, not retried
    }
    if (sent == 0 && !entries->empty()) return;  // still down: the file is already right
    std::vector<json> rest(entries->begin() + static_cast<long>(sent), entries->end());
    Record(spool.Rewrite(rest));
  }

  // Spools left by runs that ended while the server was down.
  void ReplayOrphans() {
    if (!transport_->remote()) return;
    for (const std::string& name : track::ListSpools(spool_dir_)) {
      if (name == run_id_) continue;
      auto orphan = track::Spool::Open(spool_dir_, name);
      if (orphan.ok()) Replay(**orphan);  // locked ones belong to live runs
    }
  }

  Status TakeError() {
    std::lock_guard<std::mutex> lock(error_mu_);
    Status s = first_error_;
    first_error_ = Status::OK();
    return s;
  }

  void Record(const Status& s) {
    if (s.ok()) return;
    std::lock_guard<std::mutex> lock(error_mu_);
    if (first_error_.ok()) first_error_ = s;
  }

  std::unique_ptr<Transport> transport_;
  std::string spool_dir_;
  int flush_interval_ms_;
  std::string experiment_id_;
  std::string run_id_;
  bool finished_ = false;

  std::mutex mu_;  // the queue and the counters
  std::condition_variable cv_, done_cv_;
  std::vector<track::Metric> metrics_;
  std::vector<track::Tag> tags_;
  std::vector<json> inputs_;  // runs/log-inputs DatasetInputs
  uint64_t logged_ = 0, handled_ = 0;
  bool flush_ = false, stopping_ = false, stopped_ = false;

  std::mutex error_mu_;
  Status first_error_;

  std::mutex spool_mu_;  // the spool and delivery order
  std::unique_ptr<track::Spool> spool_;
  size_t left_in_spool_ = 0;  // after Finish
  std::chrono::steady_clock::time_point next_drain_{};
  uint64_t next_batch_ = 0;
  std::thread worker_;
};

Result<std::unique_ptr<TrackingRun>> TrackingRun::Start(const TrackingOptions& options) {
  std::string uri =
      options.uri.empty() ? EnvOr("COHORT_TRACKING_URI", track::DefaultStoreUri()) : options.uri;
  auto transport = track::OpenTransport(uri);
  if (!transport.ok()) return transport.status();
  std::string spool_dir = options.spool_dir.empty()
                              ? EnvOr("COHORT_TRACKING_SPOOL", HomePath(".cohort/spool"))
                              : options.spool_dir;
  auto impl = std::make_unique<Impl>(std::move(*transport), spool_dir,
                                     std::max(1, options.flush_interval_ms));
  COHORT_RETURN_IF_ERROR(impl->Create(options).WithContext("tracking " + uri));
  return std::unique_ptr<TrackingRun>(new TrackingRun(std::move(impl)));
}

TrackingRun::TrackingRun(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TrackingRun::~TrackingRun() { impl_->Finish("FINISHED"); }
const std::string& TrackingRun::run_id() const { return impl_->run_id(); }
const std::string& TrackingRun::experiment_id() const { return impl_->experiment_id(); }
void TrackingRun::Log(const std::vector<std::pair<std::string, double>>& values, int64_t step) {
  impl_->Log(values, step);
}
void TrackingRun::SetTag(const std::string& key, const std::string& value) {
  impl_->SetTag(key, value);
}
void TrackingRun::LogInput(const std::string& name, const std::string& digest,
                           const std::string& source_type, const std::string& source,
                           const std::string& context) {
  impl_->LogInput(name, digest, source_type, source, context);
}
Status TrackingRun::LogArtifact(const std::string& local_path, const std::string& artifact_path) {
  return impl_->LogArtifact(local_path, artifact_path);
}
Status TrackingRun::Flush() { return impl_->Flush(); }
Status TrackingRun::Finish(const std::string& status) { return impl_->Finish(status); }
size_t TrackingRun::SpooledBatches() const { return impl_->Spooled(); }

}  // namespace cohort
