// Trials as queue jobs (queued_trials.h): submit, follow by polling each
// job's state, copy its log into the trial's when it ends, cancel to stop.
#include "sweep/queue/queued_trials.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>
#include <utility>

#include "common/child_env.h"
#include "common/self_executable.h"
#include "queue/queue_client.h"

namespace cohort::sweep {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// Between two looks at the jobs' states: the queue's own pass is 0.5 s.
constexpr auto kPollEvery = std::chrono::milliseconds(250);

class QueuedTrials : public TrialExecutor {
 public:
  explicit QueuedTrials(QueuedTrialsOptions o)
      : o_(std::move(o)), client_(o_.server, "--queue"), self_(CohortBinary()) {}

  Status Check() {
    auto answer = client_.Get("agents");
    if (!answer.ok()) return answer.status();  // names the URL and --queue
    if (answer->status != 200)
      return Status::InvalidArgument("--queue " + o_.server + ": " + answer->ErrorMessage());
    return Status::OK();
  }

  Result<int64_t> Start(const TrialLaunch& t) override {
    std::vector<std::string> command = {self_, "run", "-np", std::to_string(o_.workers), "--"};
    command.insert(command.end(), o_.command.begin(), o_.command.end());
    json body = {{"command", command},
                 {"slots", o_.workers},
                 {"priority", o_.priority},
                 {"project", o_.project},
                 {"env", EnvironmentWith(t.env)}};
    if (o_.trial_timeout > 0) body["max_time"] = o_.trial_timeout;
    char cwd[4096];
    if (::getcwd(cwd, sizeof(cwd)) != nullptr) body["cwd"] = cwd;
    Result<json> answer = queue::AnswerJson(client_.Post("jobs", body));
    if (!answer.ok()) {
      return Status::InvalidArgument("the queue at " + o_.server +
                                     " refused the job: " + answer.status().message());
    }
    if (!(*answer)["id"].is_number_unsigned())
      return Status::InvalidArgument("the queue's answer holds no job id");
    int64_t id = (*answer)["id"].get<int64_t>();
    jobs_[id] = {t.log, 0};
    return id;
  }

  Status Adopt(int64_t handle, const std::string& log) override {
    jobs_[handle] = {log, -1};  // its restarts so far: the first look says
    return Status::OK();
  }

  std::vector<int64_t> Restarted() override { return std::exchange(restarted_, {}); }

  Result<std::vector<TrialEnd>> Reap() override {
    std::vector<TrialEnd> ended;
    if (jobs_.empty() || Clock::now() < next_poll_) return ended;
    next_poll_ = Clock::now() + kPollEvery;
    for (auto it = jobs_.begin(); it != jobs_.end();) {
      std::optional<TrialEnd> end = Look(it->first, it->second);
      if (end) {
        ended.push_back(*end);
        it = jobs_.erase(it);
      } else {
        ++it;
      }
    }
    return ended;
  }

  // Cancels every job, then waits for them to end (the queue sends SIGTERM,
  // SIGKILL after its grace period).
  void StopAll(double wait_s) override {
    for (const auto& [id, followed] : jobs_) {
      auto answer = client_.Post("jobs/" + std::to_string(id) + "/cancel", json::object());
      if (!answer.ok()) Complain(answer.status());
    }
    const auto deadline =
        Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(wait_s * 1000));
    while (!jobs_.empty() && Clock::now() < deadline) {
      next_poll_ = Clock::now();
      (void)Reap();
      if (!jobs_.empty()) std::this_thread::sleep_for(kPollEvery);
    }
    for (const auto& [id, followed] : jobs_) {
      std::printf("cohort sweep: job %lld has not ended yet; it was cancelled\n",
                  static_cast<long long>(id));
    }
  }

  bool Durable() const override { return true; }
  std::string Where() const override { return o_.server; }

 private:
  // The job's end, or std::nullopt while it is waiting or running (preempted
  // included: it comes back by itself, and the trial resumes from its
  // checkpoint_dir).
  struct Followed {
    std::string log;   // the trial's
    int restarts = 0;  // the job's, when last seen; -1: not seen yet
  };

  std::optional<TrialEnd> Look(int64_t id, Followed& followed) {
    auto answer = client_.Get("jobs/" + std::to_string(id));
    if (!answer.ok()) {  // the server may be restarting: its jobs go on
      Complain(answer.status());
      return std::nullopt;
    }
    complained_ = false;
    TrialEnd end;
    end.handle = id;
    end.code = -1;
    if (answer->status == 404) {
      end.failure = "job " + std::to_string(id) + " is not in the queue at " + o_.server;
      return end;
    }
    json job = json::parse(answer->body, nullptr, false);
    if (answer->status != 200 || !job.is_object() || !job["state"].is_string()) {
      Complain(
          Status::InvalidArgument("job " + std::to_string(id) + ": " + answer->ErrorMessage()));
      return std::nullopt;
    }
    const std::string state = job["state"].get<std::string>();
    const int restarts = job["restarts"].is_number_integer() ? job["restarts"].get<int>() : 0;
    if (followed.restarts >= 0 && restarts > followed.restarts) restarted_.push_back(id);
    followed.restarts = restarts;
    if (state != "succeeded" && state != "failed" && state != "cancelled") return std::nullopt;
    if (job["exit_code"].is_number_integer()) end.code = job["exit_code"].get<int>();
    end.ok = state == "succeeded";
    if (!end.ok) {
      std::string reason = job["reason"].is_string() ? job["reason"].get<std::string>() : "";
      end.failure =
          "job " + std::to_string(id) + " " + state + (reason.empty() ? "" : ": " + reason);
    }
    CopyLog(id, followed.log);
    return end;
  }

  // The job's log (the queue keeps it) appended to the trial's own.
  void CopyLog(int64_t id, const std::string& path) {
    std::ofstream out(path, std::ios::app | std::ios::binary);
    out << "cohort sweep: the log of queue job " << id << ":\n";
    uint64_t offset = 0;
    for (;;) {
      auto chunk =
          client_.Get("jobs/" + std::to_string(id) + "/log?offset=" + std::to_string(offset));
      if (!chunk.ok() || chunk->status != 200 || chunk->body.empty()) break;
      out << chunk->body;
      if (chunk->next_offset <= offset) break;
      offset = chunk->next_offset;
    }
  }

  // Once per outage: the controller goes on and asks again.
  void Complain(const Status& status) {
    if (complained_) return;
    complained_ = true;
    std::fprintf(stderr, "cohort sweep: %s (asking again)\n", status.message().c_str());
  }

  QueuedTrialsOptions o_;
  queue::QueueClient client_;
  std::string self_;
  std::map<int64_t, Followed> jobs_;
  std::vector<int64_t> restarted_;  // for Restarted()
  Clock::time_point next_poll_{};
  bool complained_ = false;
};

}  // namespace

Result<std::unique_ptr<TrialExecutor>> QueuedTrialExecutor(const QueuedTrialsOptions& options) {
  auto trials = std::make_unique<QueuedTrials>(options);
  COHORT_RETURN_IF_ERROR(trials->Check());
  return std::unique_ptr<TrialExecutor>(std::move(trials));
}

}  // namespace cohort::sweep
