// Journal records and their replay (replay.h).
#include "sweep/replay.h"

#include <nlohmann/json.hpp>

namespace cohort::sweep {

using nlohmann::json;

std::string StartRecord(uint64_t fingerprint) {
  return json{{"op", "start"}, {"fingerprint", std::to_string(fingerprint)}}.dump();
}
std::string AskRecord(int64_t trial) { return json{{"op", "ask"}, {"trial", trial}}.dump(); }
std::string ReportRecord(int64_t trial, int64_t step, double value, Decision decision) {
  return json{{"op", "report"},
              {"trial", trial},
              {"step", step},
              {"value", value},
              {"decision", DecisionName(decision)}}
      .dump();
}
std::string TellRecord(int64_t trial, double value) {
  return json{{"op", "tell"}, {"trial", trial}, {"value", value}}.dump();
}
std::string FailRecord(int64_t trial, const std::string& error) {
  return json{{"op", "fail"}, {"trial", trial}, {"error", error}}.dump();
}
std::string ExtendRecord(int64_t trials) {
  return json{{"op", "extend"}, {"trials", trials}}.dump();
}

uint64_t Fingerprint(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

namespace {

// A "run" record changes nothing in the study, but the tracking observer
// (tracking/tracked_sweep.cc) reads its fields without checking them.
Status CheckRunRecord(const json& r) {
  const bool trial = r.contains("trial");
  const bool ok = r.contains("run") && r.at("run").is_string() &&
                  (trial ? r.at("trial").is_number_integer()
                         : r.contains("sweep") && r.at("sweep").is_string()) &&
                  (!r.contains("rungs") || r.at("rungs").is_string());
  return ok ? Status::OK()
            : Status::InvalidArgument(
                  "malformed run record: it needs \"run\" (a string) and "
                  "\"trial\" (an integer) or \"sweep\" (a string): " +
                  r.dump());
}

Status Apply(const json& r, uint64_t fingerprint, Study& study, ReplayResult& out) {
  const std::string op = r.at("op").get<std::string>();
  if (op == "start") {
    if (r.at("fingerprint").get<std::string>() != std::to_string(fingerprint)) {
      return Status::InvalidArgument(
          "the spec changed since this sweep started; keep the spec, or start a new sweep "
          "(another name or --dir)");
    }
    out.started = true;
    return Status::OK();
  }
  if (op == "run") return CheckRunRecord(r);  // the tracking store's run ids (trial_observer.h)
  if (op == "job") return Status::OK();       // the trials' queue jobs (controller.cc)
  if (op == "extend") {
    study.AddTrials(r.at("trials").get<int64_t>());
    return Status::OK();
  }
  const int64_t id = r.at("trial").get<int64_t>();
  if (op == "ask") {
    std::optional<Trial> t = study.Ask();
    if (!t || t->id != id) {
      return Status::Internal("the study asks for trial " + (t ? std::to_string(t->id) : "none") +
                              " where the journal has trial " + std::to_string(id));
    }
    out.running.insert(id);
    return Status::OK();
  }
  if (op == "report") {
    Result<Decision> d = study.Report(id, r.at("value").get<double>(), r.at("step").get<int64_t>());
    if (!d.ok()) return d.status();
    if (r.at("decision").get<std::string>() != DecisionName(*d)) {
      return Status::Internal("trial " + std::to_string(id) + ": the study decides " +
                              DecisionName(*d) + " where the journal has " +
                              r.at("decision").get<std::string>());
    }
    if (*d != Decision::kContinue) out.running.erase(id);
    return Status::OK();
  }
  if (op == "tell") {
    out.running.erase(id);
    return study.Tell(id, r.at("value").get<double>());
  }
  if (op == "fail") {
    out.running.erase(id);
    return study.Fail(id, r.at("error").get<std::string>());
  }
  return Status::InvalidArgument("unknown record op '" + op + "'");
}

}  // namespace

Result<ReplayResult> Replay(const std::vector<std::string>& records, uint64_t fingerprint,
                            Study& study) {
  ReplayResult out;
  for (size_t i = 0; i < records.size(); ++i) {
    Status s;
    try {
      s = Apply(json::parse(records[i]), fingerprint, study, out);
    } catch (const json::exception& e) {
      s = Status::InvalidArgument(std::string("malformed record: ") + e.what());
    }
    if (!s.ok()) return s.WithContext("journal record " + std::to_string(i + 1));
  }
  return out;
}

}  // namespace cohort::sweep
