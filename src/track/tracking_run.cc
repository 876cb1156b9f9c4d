// TrackingRun: the client behind include/cohort/track.h and cohort.track.
// Log() appends to a queue; one background thread turns the queue into
// log-batch requests (at most kMaxBatchMetrics points each, each with a
// batch id), delivers them in order, and spools what the server cannot take.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <exception>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "cohort/track.h"
#include "common/settings.h"
#include "net/auth.h"
#include "track/spool.h"
#include "track/store.h"
#include "track/tracking_uri.h"
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
  return EnvString(ProcessEnv(), name).value_or(fallback);
}

std::string HomePath(const std::string& relative) { return EnvOr("HOME", "") + "/" + relative; }

bool Retryable(const Status& s) { return s.code() == Status::Code::kPeerFailure; }

// A text setting's value ("" when unset).
std::string SettingText(const char* variable) {
  Result<SettingValue> value = ReadSetting(ProcessEnv(), variable);
  return value.ok() ? value->text : "";
}

}  // namespace

class TrackingRun::Impl {
 public:
  Impl(std::unique_ptr<Transport> transport, std::string spool_dir, int flush_interval_ms,
       double heartbeat_s, uint64_t spool_artifact_bytes)
      : transport_(std::move(transport)),
        spool_dir_(std::move(spool_dir)),
        flush_interval_ms_(flush_interval_ms),
        heartbeat_s_(transport_->remote() ? heartbeat_s : 0),
        spool_artifact_bytes_(spool_artifact_bytes) {}

  ~Impl() { StopWorker(); }

  Status Create(const TrackingOptions& options) {
    json tags = json::array();
    for (const auto& [k, v] : options.tags) tags.push_back({{"key", k}, {"value", v}});
    bool offline = false;
    if (options.run_id.empty()) {
      json beating = tags;
      if (heartbeat_s_ > 0) {
        beating.push_back({{"key", track::kAliveUntilTag}, {"value", AliveUntil()}});
      }
      Status created = CreateRun(options, beating);
      offline = Retryable(created) && transport_->remote() && options.spool_when_unreachable;
      if (!offline) COHORT_RETURN_IF_ERROR(created);
      if (offline) {
        // The run's first beat, after the spool drained, sets its deadline:
        // one sent with the spool would be stale by then.
        run_id_ = GenerateSecret().substr(0, 32);
        std::fprintf(stderr,
                     "cohort.track: the tracking server cannot be reached (%s); run %s is "
                     "recorded in the spool %s and sent when the server is back\n",
                     created.message().c_str(), run_id_.c_str(), spool_dir_.c_str());
      }
    } else {
      if (heartbeat_s_ > 0) {
        tags.push_back({{"key", track::kAliveUntilTag}, {"value", AliveUntil()}});
      }
      COHORT_RETURN_IF_ERROR(ResumeRun(options.run_id, tags));
    }
    next_beat_ = std::chrono::steady_clock::now() + HeartbeatPeriod();
    // A resumed run's earlier processes used "<run>:<n>" ids already: the
    // server would skip this one's batches as replays.
    batch_prefix_ =
        options.run_id.empty() ? run_id_ : run_id_ + "." + GenerateSecret().substr(0, 8);
    if (transport_->remote()) {
      auto spool = track::Spool::Open(spool_dir_, run_id_);
      if (!spool.ok()) return spool.status();
      spool_ = std::move(*spool);
    }
    if (offline) {
      json body = {{"cohort_run_id", run_id_},
                   {"cohort_experiment_name", ProjectName(options)},
                   {"start_time", NowMillis()},
                   {"user_id", EnvOr("USER", "")},
                   {"tags", tags}};
      if (!options.run_name.empty()) body["run_name"] = options.run_name;
      COHORT_RETURN_IF_ERROR(
          spool_->Append({{"method", "POST"}, {"endpoint", "runs/create"}, {"body", body}}));
    }
    json params = json::array();
    for (const auto& [k, v] : options.params) {
      params.push_back({{"key", k}, {"value", v}});
      if (params.size() == track::kMaxBatchParams) {
        COHORT_RETURN_IF_ERROR(SendParams(params, offline));
        params = json::array();
      }
    }
    if (!params.empty()) COHORT_RETURN_IF_ERROR(SendParams(params, offline));
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

  // Uploads now; while the server is unreachable (or older requests wait in
  // the spool: order is kept) the file is copied into the spool directory
  // and uploaded with the spool's replay.
  Status LogArtifact(const std::string& local_path, const std::string& artifact_path) {
    if (finished_) return Status::InvalidArgument("log_artifact: the run has finished");
    std::ifstream in(local_path, std::ios::binary);
    if (!in) return Status::InvalidArgument("log_artifact: cannot read '" + local_path + "'");
    std::ostringstream bytes;
    bytes << in.rdbuf();
    std::string name =
        artifact_path.empty() ? local_path.substr(local_path.find_last_of('/') + 1) : artifact_path;
    std::lock_guard<std::mutex> lock(spool_mu_);
    if (!spool_ || spool_->size() == 0) {
      Status sent = PutArtifact(run_id_, name, bytes.str());
      if (!Retryable(sent) || !spool_) return sent;
    }
    return SpoolArtifact(name, bytes.str());
  }

  // Uploads `name` of run `run` (this one, or one whose spool is replayed);
  // the experiment, part of the path, is asked of the server when this
  // client does not know it (a run started while the server was down).
  Status PutArtifact(const std::string& run, const std::string& name, const std::string& bytes) {
    std::string experiment = run == run_id_ ? experiment_id_ : "";
    if (experiment.empty()) {
      auto got = transport_->Call("GET", "runs/get", {{"run_id", run}});
      if (!got.ok()) return got.status();
      auto id = track::StringIn(*got, "/run/info/experiment_id");
      if (!id.ok()) return id.status();
      experiment = *id;
    }
    return transport_->PutArtifact(experiment + "/" + run + "/artifacts/" + name, bytes);
  }

  size_t Spooled() {
    std::lock_guard<std::mutex> lock(spool_mu_);
    return spool_ ? spool_->size() : left_in_spool_;
  }

  const std::string& run_id() const { return run_id_; }
  const std::string& experiment_id() const { return experiment_id_; }

 private:
  static std::string ProjectName(const TrackingOptions& options) {
    std::string project = options.project;
    if (project.empty()) project = SettingText("MLFLOW_EXPERIMENT_NAME");
    return project.empty() ? "Default" : project;
  }

  Status CreateRun(const TrackingOptions& options, const json& tags) {
    auto experiment = ExperimentIdByName(*transport_, ProjectName(options));
    if (!experiment.ok()) return experiment.status();
    experiment_id_ = *experiment;
    json body = {{"experiment_id", experiment_id_},
                 {"start_time", NowMillis()},
                 {"user_id", EnvOr("USER", "")},
                 {"tags", tags}};
    if (!options.run_name.empty()) body["run_name"] = options.run_name;
    auto run = transport_->Call("POST", "runs/create", body);
    if (!run.ok()) return run.status();
    auto run_id = track::StringIn(*run, "/run/info/run_id");
    // A server that answers, wrongly, is no reason to start in the spool.
    if (!run_id.ok()) return Status::Internal(run_id.status().message());
    run_id_ = *run_id;
    return Status::OK();
  }

  // MLflow's start_run(run_id): the run goes on, RUNNING again, in its own
  // experiment; the new tags are added.
  Status ResumeRun(const std::string& run_id, const json& tags) {
    auto run = transport_->Call("GET", "runs/get", {{"run_id", run_id}});
    if (run.status().IsNotFound()) {
      return Status::InvalidArgument("run '" + run_id +
                                     "' to go on with (MLFLOW_RUN_ID) does not exist");
    }
    if (!run.ok()) return run.status();
    auto experiment = track::StringIn(*run, "/run/info/experiment_id");
    if (!experiment.ok()) return experiment.status();
    experiment_id_ = *experiment;
    run_id_ = run_id;
    COHORT_RETURN_IF_ERROR(
        transport_->Call("POST", "runs/update", {{"run_id", run_id_}, {"status", "RUNNING"}})
            .status());
    for (size_t i = 0; i < tags.size(); i += track::kMaxBatchTags) {
      json some = json::array();
      for (size_t j = i; j < tags.size() && j < i + track::kMaxBatchTags; ++j) {
        some.push_back(tags[j]);
      }
      COHORT_RETURN_IF_ERROR(
          transport_->Call("POST", "runs/log-batch", {{"run_id", run_id_}, {"tags", some}})
              .status());
    }
    return Status::OK();
  }

  std::chrono::steady_clock::duration HeartbeatPeriod() const {
    return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(heartbeat_s_));
  }

  // The deadline a heartbeat sets: three periods ahead, so one or two lost
  // beats (a slow server, a busy host) do not end a live run.
  std::string AliveUntil() const {
    return std::to_string(NowMillis() + static_cast<int64_t>(3000 * heartbeat_s_));
  }

  // Renews the run's deadline, at most once a period. Best effort and never
  // spooled: a beat replayed late says nothing; while the server is down
  // (something is spooled) there is no one to tell.
  void Beat() {
    if (heartbeat_s_ <= 0 || std::chrono::steady_clock::now() < next_beat_) return;
    next_beat_ = std::chrono::steady_clock::now() + HeartbeatPeriod();
    std::lock_guard<std::mutex> lock(spool_mu_);
    if (spool_ && spool_->size() > 0) return;
    (void)transport_->Call(
        "POST", "runs/set-tag",
        {{"run_id", run_id_}, {"key", track::kAliveUntilTag}, {"value", AliveUntil()}});
  }

  // Params at the start: sent now, or spooled behind the run's creation.
  Status SendParams(const json& params, bool offline) {
    json body = {{"run_id", run_id_}, {"params", params}};
    if (offline) {
      return spool_->Append({{"method", "POST"}, {"endpoint", "runs/log-batch"}, {"body", body}});
    }
    return transport_->Call("POST", "runs/log-batch", body).status();
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
      if (!stop) Beat();
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
      batch["cohort_batch_id"] = batch_prefix_ + ":" + std::to_string(next_batch_++);
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

  // Keeps an artifact for later: its bytes in a file of the spool
  // directory's artifacts/ folder, a spool entry naming it. Refused beyond
  // COHORT_TRACKING_SPOOL_BYTES of spooled artifacts in the directory.
  Status SpoolArtifact(const std::string& name, const std::string& bytes) {
    namespace fs = std::filesystem;
    const fs::path dir = fs::path(spool_dir_) / "artifacts";
    std::error_code ec;
    fs::create_directories(dir, ec);
    uint64_t held = 0;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      if (entry.is_regular_file(ec)) held += entry.file_size(ec);
    }
    if (held + bytes.size() > spool_artifact_bytes_) {
      return Status::IoError(
          "log_artifact: the tracking server cannot be reached and the spool's artifacts would "
          "pass COHORT_TRACKING_SPOOL_BYTES (" +
          std::to_string(spool_artifact_bytes_) + " bytes; " + std::to_string(held) + " held): '" +
          name + "' was not kept");
    }
    const std::string file = (dir / (run_id_ + "-" + std::to_string(::getpid()) + "-" +
                                     std::to_string(spooled_artifacts_++)))
                                 .string();
    {
      std::ofstream out(file + ".tmp", std::ios::binary | std::ios::trunc);
      out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      out.flush();
      if (!out) return Status::IoError("log_artifact: cannot write the spool's copy " + file);
    }
    fs::rename(file + ".tmp", file, ec);
    if (ec) return Status::IoError("log_artifact: cannot keep the spool's copy " + file);
    if (!said_spooling_artifacts_) {
      said_spooling_artifacts_ = true;
      std::fprintf(stderr,
                   "cohort.track: the tracking server cannot be reached; artifacts wait in %s "
                   "and are uploaded when it is back\n",
                   dir.c_str());
    }
    return spool_->Append(
        {{"method", "PUT"}, {"run", run_id_}, {"artifact", name}, {"file", file}});
  }

  Status Send(const json& entry) {
    if (entry.contains("artifact")) {  // a spooled artifact (SpoolArtifact)
      const std::string file = entry.value("file", "");
      std::ifstream in(file, std::ios::binary);
      if (!in) return Status::IoError("the spooled artifact " + file + " is gone");
      std::ostringstream bytes;
      bytes << in.rdbuf();
      Status sent = PutArtifact(entry.value("run", ""), entry.value("artifact", ""), bytes.str());
      if (!Retryable(sent)) ::unlink(file.c_str());  // delivered, or refused for good
      return sent;
    }
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
  double heartbeat_s_;                    // 0: no heartbeats (an embedded store, or turned off)
  uint64_t spool_artifact_bytes_ = 0;     // COHORT_TRACKING_SPOOL_BYTES
  bool said_spooling_artifacts_ = false;  // under spool_mu_
  uint64_t spooled_artifacts_ = 0;        // under spool_mu_: names their files
  std::chrono::steady_clock::time_point next_beat_{};
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
  std::string batch_prefix_;  // batch ids are "<prefix>:<n>"
  std::thread worker_;
};

Result<std::unique_ptr<TrackingRun>> TrackingRun::Start(const TrackingOptions& options) {
  std::string uri = options.uri;
  if (uri.empty()) {
    Result<http::AddressChoice> chosen = track::TrackingUriFromEnv(ProcessEnv());
    if (!chosen.ok()) return chosen.status();
    http::WarnOfDisagreement(ProcessEnv());
    uri = chosen->value;
  }
  if (uri.empty()) uri = track::DefaultStoreUri();
  auto transport = track::OpenTransport(uri);
  if (!transport.ok()) return transport.status();
  std::string spool_dir = options.spool_dir;
  if (spool_dir.empty()) spool_dir = SettingText("COHORT_TRACKING_SPOOL");
  if (spool_dir.empty()) spool_dir = HomePath(".cohort/spool");
  Result<SettingValue> heartbeat = ReadSetting(ProcessEnv(), "COHORT_TRACKING_HEARTBEAT");
  if (!heartbeat.ok()) return heartbeat.status();
  Result<SettingValue> spool_bytes = ReadSetting(ProcessEnv(), "COHORT_TRACKING_SPOOL_BYTES");
  if (!spool_bytes.ok()) return spool_bytes.status();
  auto impl = std::make_unique<Impl>(std::move(*transport), spool_dir,
                                     std::max(1, options.flush_interval_ms), heartbeat->number,
                                     static_cast<uint64_t>(spool_bytes->number));
  COHORT_RETURN_IF_ERROR(impl->Create(options).WithContext("tracking " + uri));
  return std::unique_ptr<TrackingRun>(new TrackingRun(std::move(impl)));
}

TrackingRun::TrackingRun(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TrackingRun::~TrackingRun() {
  impl_->Finish(std::uncaught_exceptions() > 0 ? "FAILED" : "FINISHED");
}
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
