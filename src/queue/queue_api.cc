// Routing and validation of the queue's endpoints.
#include "queue/queue_api.h"

#include <algorithm>
#include <fstream>
#include <map>

#include "server/mlflow_api.h"
#include "server/request_fields.h"

namespace cohort::queue {
namespace {

using nlohmann::json;
using server::HttpRequest;
using server::HttpResponse;
using server::JsonResponse;
using server::MlflowError;

constexpr size_t kMaxLogChunk = 1 << 20;

HttpResponse Invalid(const Status& status) {
  return MlflowError("INVALID_PARAMETER_VALUE", status.message());
}

// A whole-string decimal number that fits, or nullopt.
std::optional<uint64_t> ParseNumber(const std::string& text) {
  if (text.empty() || text.size() > 18 || text.find_first_not_of("0123456789") != text.npos) {
    return std::nullopt;
  }
  return std::stoull(text);
}

Result<JobRecord> ParseSubmission(const server::RequestFields& fields) {
  JobRecord job;
  auto command = fields.StringList("command");
  if (!command.ok()) return command.status();
  if (command->empty()) return Status::InvalidArgument("command: the job needs a command");
  job.command = std::move(*command);
  auto slots = fields.OptionalInt("slots");
  if (!slots.ok()) return slots.status();
  if (slots->has_value()) {
    if (**slots < 1 || **slots > 1000000) {
      return Status::InvalidArgument("slots: " + std::to_string(**slots) +
                                     " is not a number of slots (1 or more)");
    }
    job.slots = static_cast<int>(**slots);
  }
  for (auto [name, out] : {std::pair{"pool", &job.pool}, std::pair{"project", &job.project},
                           std::pair{"cwd", &job.cwd}}) {
    auto value = fields.OptionalString(name);
    if (!value.ok()) return value.status();
    if (value->has_value()) *out = **value;
  }
  if (job.pool.empty()) return Status::InvalidArgument("pool: must not be empty");
  if (job.project.empty()) job.project = "default";
  auto priority = fields.OptionalString("priority");
  if (!priority.ok()) return priority.status();
  if (priority->has_value()) {
    auto parsed = sched::ParsePriority(**priority);
    if (!parsed.ok()) return parsed.status().WithContext("priority");
    job.priority = *parsed;
  }
  if (fields.Has("max_time")) {
    auto max_time = fields.RequiredDouble("max_time");
    if (!max_time.ok()) return max_time.status();
    if (!(*max_time > 0) || *max_time > 1e9) {
      return Status::InvalidArgument("max_time: must be a positive number of seconds");
    }
    job.max_time = *max_time;
  }
  if (fields.Has("env")) {
    auto env = fields.StringList("env");
    if (!env.ok()) return env.status();
    for (const std::string& entry : *env) {
      if (entry.find('=') == std::string::npos || entry.front() == '=') {
        return Status::InvalidArgument("env: '" + entry + "' is not NAME=value");
      }
    }
    job.env = std::move(*env);
  }
  return job;
}

}  // namespace

bool ValidAgentName(const std::string& name) {
  return !name.empty() && name.size() <= 64 && name != kLocalHost &&
         name.find_first_not_of(
             "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") ==
             std::string::npos;
}

namespace {

json AgentWorkJson(const AgentWork& work) {
  json start = json::array();
  for (const AgentStart& job : work.start) {
    start.push_back({{"id", job.id},
                     {"command", job.command},
                     {"env", job.env},
                     {"cwd", job.cwd},
                     {"log_offset", job.log_offset},
                     {"hosts", job.hosts}});
  }
  json signal = json::array();
  for (auto [id, number] : work.signal) signal.push_back({{"id", id}, {"signal", number}});
  return {{"start", start}, {"signal", signal}, {"drop", work.drop}};
}

}  // namespace

HttpResponse QueueApi::HandleAgent(const HttpRequest& request, const std::string& rest,
                                   const QueueCaller& caller) {
  size_t slash = rest.find('/');
  std::string name = rest.substr(0, slash);
  std::string action = slash == std::string::npos ? "" : rest.substr(slash + 1);
  if (!ValidAgentName(name)) {
    return MlflowError("INVALID_PARAMETER_VALUE",
                       "'" + name +
                           "' is not an agent name (letters, digits, '.', '_', '-'; "
                           "at most 64; not 'local')");
  }
  if (auto denied = access_->MayActAs(caller, name)) return *denied;
  if (action == "heartbeat") {
    auto fields = server::RequestFields::FromRequest(request);
    if (!fields.ok()) return MlflowError("BAD_REQUEST", fields.status().message());
    auto pool = fields->OptionalString("pool");
    auto address = fields->OptionalString("address");
    if (!address.ok()) return Invalid(address.status());
    auto slots = fields->RequiredInt("slots");
    if (!pool.ok()) return Invalid(pool.status());
    if (!slots.ok()) return Invalid(slots.status());
    if (*slots < 1 || *slots > 1000000) {
      return MlflowError("INVALID_PARAMETER_VALUE", "slots: must be 1 or more");
    }
    std::vector<uint64_t> running;
    if (fields->Has("running")) {
      const json& list = fields->json()["running"];
      if (!list.is_array()) return MlflowError("INVALID_PARAMETER_VALUE", "running: not a list");
      for (const json& id : list) {
        if (!id.is_number_unsigned()) {
          return MlflowError("INVALID_PARAMETER_VALUE",
                             "running: " + id.dump() + " is not a job id");
        }
        running.push_back(id.get<uint64_t>());
      }
    }
    double wait_s = 0;
    if (fields->Has("wait_s")) {
      auto wait = fields->RequiredDouble("wait_s");
      if (!wait.ok()) return Invalid(wait.status());
      wait_s = std::clamp(*wait, 0.0, 5.0);  // bounds how long a server stop waits
    }
    auto work = service_->Heartbeat(name, address->value_or(""), pool->value_or(kDefaultPool),
                                    static_cast<int>(*slots), running, wait_s);
    if (!work.ok()) return MlflowError("INTERNAL_ERROR", work.status().ToString());
    return JsonResponse(200, AgentWorkJson(*work));
  }
  // jobs/ID/log or jobs/ID/exit
  if (action.rfind("jobs/", 0) != 0) {
    return MlflowError("ENDPOINT_NOT_FOUND", "POST " + request.path + " is not a queue endpoint");
  }
  action = action.substr(5);
  slash = action.find('/');
  auto id = ParseNumber(action.substr(0, slash));
  std::string what = slash == std::string::npos ? "" : action.substr(slash + 1);
  if (!id) return MlflowError("INVALID_PARAMETER_VALUE", "'" + action + "' is not a job id");
  // Only the agent a job runs on reports its output and its end.
  auto runs_here = [&]() -> std::optional<HttpResponse> {
    auto found = service_->Get(*id);
    if (!found.ok()) return MlflowError("INTERNAL_ERROR", found.status().ToString());
    if (!found->has_value()) {
      return MlflowError("RESOURCE_DOES_NOT_EXIST", "no job " + std::to_string(*id));
    }
    if (IsRunning((*found)->state) && (*found)->host == name) return std::nullopt;
    return MlflowError("PERMISSION_DENIED",
                       "job " + std::to_string(*id) + " does not run on agent " + name);
  };
  if (what == "log") {
    auto query = server::ParseQuery(request.query);
    auto it = query.find("offset");
    auto offset = it == query.end() ? std::nullopt : ParseNumber(it->second);
    if (!offset) return MlflowError("INVALID_PARAMETER_VALUE", "log: needs ?offset=BYTES");
    if (auto denied = runs_here()) return *denied;
    auto size = service_->AppendLog(name, *id, *offset, request.body);
    if (!size.ok()) return Invalid(size.status());
    return JsonResponse(200, {{"offset", *size}});
  }
  if (what == "exit") {
    auto fields = server::RequestFields::FromRequest(request);
    if (!fields.ok()) return MlflowError("BAD_REQUEST", fields.status().message());
    auto code = fields->RequiredInt("exit_code");
    if (!code.ok()) return Invalid(code.status());
    if (*code < 0 || *code > 255) {
      return MlflowError("INVALID_PARAMETER_VALUE", "exit_code: must be 0-255");
    }
    if (auto denied = runs_here()) return *denied;
    Status s = service_->ReportExit(name, *id, static_cast<int>(*code));
    if (!s.ok()) return Invalid(s);
    return JsonResponse(200, json::object());
  }
  return MlflowError("ENDPOINT_NOT_FOUND", "POST " + request.path + " is not a queue endpoint");
}

HttpResponse QueueApi::Handle(const HttpRequest& request) {
  std::string rest = request.path.substr(std::string(kPrefix).size());
  auto not_found = [&] {
    return MlflowError("ENDPOINT_NOT_FOUND",
                       request.method + " " + request.path + " is not a queue endpoint");
  };
  const bool agent_endpoint = rest.rfind("agents/", 0) == 0;
  QueueCaller caller;
  if (auto refused = access_->Identify(request, agent_endpoint, &caller)) return *refused;
  if (agent_endpoint && request.method == "POST") {
    return HandleAgent(request, rest.substr(7), caller);
  }
  if (auto denied = access_->MayUseJobs(caller)) return *denied;
  if (rest == "jobs") {
    if (request.method == "POST") return SubmitJob(request, caller);
    if (request.method == "GET") return ListJobs(caller);
    return not_found();
  }
  if (rest == "agents" && request.method == "GET") {
    return JsonResponse(200, {{"agents", service_->AgentsJson()}});
  }
  if (rest.rfind("jobs/", 0) != 0) return not_found();
  rest = rest.substr(5);
  size_t slash = rest.find('/');
  std::string id_text = rest.substr(0, slash);
  std::string action = slash == std::string::npos ? "" : rest.substr(slash + 1);
  auto id = ParseNumber(id_text);
  if (!id) return MlflowError("INVALID_PARAMETER_VALUE", "'" + id_text + "' is not a job id");
  auto found = service_->Get(*id);
  if (!found.ok()) return MlflowError("INTERNAL_ERROR", found.status().ToString());
  if (!found->has_value()) {
    return MlflowError("RESOURCE_DOES_NOT_EXIST", "no job " + std::to_string(*id));
  }
  const JobRecord& job = **found;
  if (auto denied = access_->MayRead(caller, job)) return *denied;
  if (action.empty() && request.method == "GET") return ShowJob(job);
  if (action == "cancel" && request.method == "POST") return CancelJob(job, caller.name);
  if (action == "log" && request.method == "GET") return ReadLog(request, job);
  return not_found();
}

json QueueApi::JobJson(const JobRecord& job) {
  auto pending = service_->PendingStatusOf(job.id);
  return ToJson(job, pending ? &*pending : nullptr);
}

HttpResponse QueueApi::SubmitJob(const HttpRequest& request, const QueueCaller& caller) {
  auto fields = server::RequestFields::FromRequest(request);
  if (!fields.ok()) return MlflowError("BAD_REQUEST", fields.status().message());
  auto job = ParseSubmission(*fields);
  if (!job.ok()) return Invalid(job.status());
  if (auto denied = access_->MaySubmit(caller, job->project)) return *denied;
  job->user = caller.name;
  auto id = service_->Submit(std::move(*job));
  if (!id.ok()) return Invalid(id.status());
  return JsonResponse(200, {{"id", *id}});
}

HttpResponse QueueApi::ListJobs(const QueueCaller& caller) {
  auto jobs = service_->List();
  if (!jobs.ok()) return MlflowError("INTERNAL_ERROR", jobs.status().ToString());
  std::vector<json> listed;
  std::map<std::string, std::string> levels;  // the caller's, per project
  for (const JobRecord& job : *jobs) {
    if (access_->CanRead(caller, job, &levels)) listed.push_back(JobJson(job));
  }
  // Running first, then waiting jobs by their place in the queue, then the rest by id.
  auto rank = [](const json& j) {
    if (j["state"] == "running" || j["state"] == "starting") return 0;
    return j["position"].is_null() ? (j["state"] == "pending" || j["state"] == "preempted" ? 2 : 3)
                                   : 1;
  };
  std::stable_sort(listed.begin(), listed.end(), [&](const json& a, const json& b) {
    int ra = rank(a), rb = rank(b);
    if (ra != rb) return ra < rb;
    if (ra == 1) return a["position"].get<int>() < b["position"].get<int>();
    return false;
  });
  return JsonResponse(200, {{"jobs", listed}});
}

HttpResponse QueueApi::ShowJob(const JobRecord& job) { return JsonResponse(200, JobJson(job)); }

HttpResponse QueueApi::CancelJob(const JobRecord& job, const std::string& user) {
  if (job.user != user) {
    return MlflowError("PERMISSION_DENIED", "job " + std::to_string(job.id) + " belongs to " +
                                                job.user + "; " + user + " cannot cancel it");
  }
  Status s = service_->Cancel(job.id, user);
  if (!s.ok()) return Invalid(s);
  return JsonResponse(200, json::object());
}

HttpResponse QueueApi::ReadLog(const HttpRequest& request, const JobRecord& job) {
  uint64_t offset = 0;
  auto query = server::ParseQuery(request.query);
  if (auto it = query.find("offset"); it != query.end()) {
    auto parsed = ParseNumber(it->second);
    if (!parsed)
      return MlflowError("INVALID_PARAMETER_VALUE",
                         "offset '" + it->second + "' is not a byte offset");
    offset = *parsed;
  }
  HttpResponse response;
  response.content_type = "text/plain; charset=utf-8";
  std::ifstream in(service_->LogPath(job.id), std::ios::binary);
  if (in) {
    in.seekg(0, std::ios::end);
    uint64_t size = static_cast<uint64_t>(std::max<std::streamoff>(0, in.tellg()));
    if (offset < size) {
      response.body.resize(std::min<uint64_t>(size - offset, kMaxLogChunk));
      in.seekg(static_cast<std::streamoff>(offset));
      in.read(response.body.data(), static_cast<std::streamsize>(response.body.size()));
      response.body.resize(static_cast<size_t>(in.gcount()));
    }
  }
  response.headers.push_back({"X-Cohort-Job-State", StateName(job.state)});
  response.headers.push_back(
      {"X-Cohort-Log-Offset", std::to_string(offset + response.body.size())});
  return response;
}

}  // namespace cohort::queue
