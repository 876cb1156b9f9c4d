// Routing and validation of the queue's endpoints.
#include "queue/queue_api.h"

#include <algorithm>
#include <fstream>
#include <map>

#include "server/api_response.h"
#include "track/request_fields.h"

namespace cohort::queue {
namespace {

using http::ServerRequest;
using http::ServerResponse;
using nlohmann::json;
using server::ErrorResponse;
using server::JsonResponse;

constexpr size_t kMaxLogChunk = 1 << 20;

constexpr char kNoQueue[] =
    "this server runs no job queue; start it with --slots N (jobs on this host; --slots 0: on "
    "agents only) or --slurm-pool NAME";

// The service refuses what the caller asked for (a log offset, an exit of a
// job that ended): the caller's error, whatever the service's code.
ServerResponse Invalid(const Status& status) {
  return ErrorResponse(Status::InvalidArgument(status.message()));
}

// A whole-string decimal number that fits, or nullopt.
std::optional<uint64_t> ParseNumber(const std::string& text) {
  if (text.empty() || text.size() > 18 || text.find_first_not_of("0123456789") != text.npos) {
    return std::nullopt;
  }
  return std::stoull(text);
}

Result<JobRecord> ParseSubmission(const track::RequestFields& fields) {
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

// The agent a call to an agent endpoint names, once the caller may act as
// it; else the answer.
std::optional<ServerResponse> QueueApi::AsAgent(const server::Call& call,
                                                const QueueCaller& caller) const {
  const std::string& name = call.Param("name");
  if (!ValidAgentName(name)) {
    return ErrorResponse(Status::InvalidArgument(
        "'" + name +
        "' is not an agent name (letters, digits, '.', '_', '-'; at most 64; not "
        "'local')"));
  }
  return backend_.access->MayActAs(caller, name);
}

ServerResponse QueueApi::Heartbeat(const server::Call& call, const QueueCaller& caller) {
  if (auto refused = AsAgent(call, caller)) return *refused;
  const ServerRequest& request = call.request;
  const std::string& name = call.Param("name");
  auto fields = track::RequestFields::FromRequest(request);
  if (!fields.ok()) return server::UnreadableFields(request, fields.status());
  auto pool = fields->OptionalString("pool");
  auto address = fields->OptionalString("address");
  if (!address.ok()) return Invalid(address.status());
  auto slots = fields->RequiredInt("slots");
  if (!pool.ok()) return Invalid(pool.status());
  if (!slots.ok()) return Invalid(slots.status());
  if (*slots < 1 || *slots > 1000000) {
    return ErrorResponse(Status::InvalidArgument("slots: must be 1 or more"));
  }
  std::vector<uint64_t> running;
  if (fields->Has("running")) {
    const json& list = fields->json()["running"];
    if (!list.is_array()) return ErrorResponse(Status::InvalidArgument("running: not a list"));
    for (const json& id : list) {
      if (!id.is_number_unsigned()) {
        return ErrorResponse(Status::InvalidArgument("running: " + id.dump() + " is not a job id"));
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
  auto work = backend_.service->Heartbeat(name, address->value_or(""), pool->value_or(kDefaultPool),
                                          static_cast<int>(*slots), running, wait_s);
  if (!work.ok()) return ErrorResponse(work.status());
  return JsonResponse(200, AgentWorkJson(*work));
}

// The job an agent reports on (its id), once the caller may act as the agent.
std::optional<ServerResponse> QueueApi::AgentsJob(const server::Call& call,
                                                  const QueueCaller& caller, uint64_t* id) const {
  if (auto refused = AsAgent(call, caller)) return refused;
  auto parsed = ParseNumber(call.Param("id"));
  if (!parsed) {
    return ErrorResponse(Status::InvalidArgument("'" + call.Param("id") + "' is not a job id"));
  }
  *id = *parsed;
  return std::nullopt;
}

// Only the agent a job runs on reports its output and its end.
std::optional<ServerResponse> QueueApi::RunsOn(const std::string& agent, uint64_t id) const {
  auto found = backend_.service->Get(id);
  if (!found.ok()) return ErrorResponse(found.status());
  if (!found->has_value()) return ErrorResponse(Status::NotFound("no job " + std::to_string(id)));
  if (IsRunning((*found)->state) && (*found)->host == agent) return std::nullopt;
  return ErrorResponse(
      Status::PermissionDenied("job " + std::to_string(id) + " does not run on agent " + agent));
}

ServerResponse QueueApi::AppendLog(const server::Call& call, const QueueCaller& caller) {
  uint64_t id = 0;
  if (auto refused = AgentsJob(call, caller, &id)) return *refused;
  auto query = http::ParseQuery(call.request.query);
  auto it = query.find("offset");
  auto offset = it == query.end() ? std::nullopt : ParseNumber(it->second);
  if (!offset) return ErrorResponse(Status::InvalidArgument("log: needs ?offset=BYTES"));
  if (auto denied = RunsOn(call.Param("name"), id)) return *denied;
  auto size = backend_.service->AppendLog(call.Param("name"), id, *offset, call.request.body);
  if (!size.ok()) return Invalid(size.status());
  return JsonResponse(200, {{"offset", *size}});
}

ServerResponse QueueApi::ReportExit(const server::Call& call, const QueueCaller& caller) {
  uint64_t id = 0;
  if (auto refused = AgentsJob(call, caller, &id)) return *refused;
  auto fields = track::RequestFields::FromRequest(call.request);
  if (!fields.ok()) return server::UnreadableFields(call.request, fields.status());
  auto code = fields->RequiredInt("exit_code");
  if (!code.ok()) return Invalid(code.status());
  if (*code < 0 || *code > 255) {
    return ErrorResponse(Status::InvalidArgument("exit_code: must be 0-255"));
  }
  if (auto denied = RunsOn(call.Param("name"), id)) return *denied;
  Status s = backend_.service->ReportExit(call.Param("name"), id, static_cast<int>(*code));
  if (!s.ok()) return Invalid(s);
  return JsonResponse(200, json::object());
}

// The job a call names, once the caller may read it.
std::optional<ServerResponse> QueueApi::ReadableJob(const server::Call& call,
                                                    const QueueCaller& caller,
                                                    JobRecord* job) const {
  const std::string& id_text = call.Param("id");
  auto id = ParseNumber(id_text);
  if (!id) return ErrorResponse(Status::InvalidArgument("'" + id_text + "' is not a job id"));
  auto found = backend_.service->Get(*id);
  if (!found.ok()) return ErrorResponse(found.status());
  if (!found->has_value()) return ErrorResponse(Status::NotFound("no job " + std::to_string(*id)));
  if (auto denied = backend_.access->MayRead(caller, **found)) return denied;
  *job = std::move(**found);
  return std::nullopt;
}

void QueueApi::Attach(QueueService* service, const QueueAccess* access) {
  backend_ = {service, access};
  attached_.store(true, std::memory_order_release);
}

server::Handler QueueApi::Checked(QueueHandler handler) {
  return [this, handler = std::move(handler)](const server::Call& call) {
    if (!on_) return ErrorResponse("ENDPOINT_NOT_FOUND", kNoQueue);
    if (!attached_.load(std::memory_order_acquire)) {
      return ErrorResponse(Status::Unavailable("the job queue is starting"));
    }
    const ServerRequest& request = call.request;
    const bool agent_endpoint = request.path.rfind(std::string(kPrefix) + "agents/", 0) == 0;
    QueueCaller caller;
    if (auto refused = backend_.access->Identify(request, agent_endpoint, &caller)) {
      return *refused;
    }
    // Agents post to their own endpoints; everything else is a user's.
    if (!agent_endpoint || request.method != "POST") {
      if (auto denied = backend_.access->MayUseJobs(caller)) return *denied;
    }
    return handler(call, caller);
  };
}

server::Handler QueueApi::OnJob(JobHandler handler) {
  return Checked(
      [this, handler = std::move(handler)](const server::Call& call, const QueueCaller& caller) {
        JobRecord job;
        if (auto refused = ReadableJob(call, caller, &job)) return *refused;
        return handler(call, caller, job);
      });
}

void QueueApi::Register(server::Router& router) {
  server::Mount mount;
  mount.prefixes = {kPrefix};
  mount.auth = server::Auth::kService;
  mount.body = http::BodyKind::kBytes;  // log chunks are bytes; JSON is parsed here
  mount.no_route = Checked([](const server::Call& call, const QueueCaller&) {
    return ErrorResponse("ENDPOINT_NOT_FOUND", call.request.method + " " + call.request.path +
                                                   " is not a queue endpoint");
  });
  auto bind = [this](ServerResponse (QueueApi::*method)(const server::Call&, const QueueCaller&)) {
    return Checked([this, method](const server::Call& call, const QueueCaller& caller) {
      return (this->*method)(call, caller);
    });
  };
  router.AddMount(std::move(mount))
      .Add({"POST"}, "jobs", bind(&QueueApi::SubmitJob))
      .Add({"GET"}, "jobs", bind(&QueueApi::ListJobs))
      .Add({"GET"}, "jobs/{id}",
           OnJob([this](const server::Call&, const QueueCaller&, const JobRecord& job) {
             return JsonResponse(200, JobJson(job));
           }))
      .Add({"POST"}, "jobs/{id}/cancel",
           OnJob([this](const server::Call&, const QueueCaller& caller, const JobRecord& job) {
             return CancelJob(job, caller.name);
           }))
      .Add({"GET"}, "jobs/{id}/log",
           OnJob([this](const server::Call& call, const QueueCaller&, const JobRecord& job) {
             return ReadLog(call.request, job);
           }))
      .Add({"GET"}, "agents", Checked([this](const server::Call&, const QueueCaller&) {
             return JsonResponse(200, {{"agents", backend_.service->AgentsJson()}});
           }))
      .Add({"POST"}, "agents/{name}/heartbeat", bind(&QueueApi::Heartbeat))
      .Add({"POST"}, "agents/{name}/jobs/{id}/log", bind(&QueueApi::AppendLog))
      .Add({"POST"}, "agents/{name}/jobs/{id}/exit", bind(&QueueApi::ReportExit));
}

json QueueApi::JobJson(const JobRecord& job) const {
  auto pending = backend_.service->PendingStatusOf(job.id);
  return ToJson(job, pending ? &*pending : nullptr);
}

ServerResponse QueueApi::SubmitJob(const server::Call& call, const QueueCaller& caller) {
  const ServerRequest& request = call.request;
  auto fields = track::RequestFields::FromRequest(request);
  if (!fields.ok()) return server::UnreadableFields(request, fields.status());
  auto job = ParseSubmission(*fields);
  if (!job.ok()) return Invalid(job.status());
  if (auto denied = backend_.access->MaySubmit(caller, job->project)) return *denied;
  job->user = caller.name;
  auto id = backend_.service->Submit(std::move(*job));
  if (!id.ok()) return Invalid(id.status());
  return JsonResponse(200, {{"id", *id}});
}

ServerResponse QueueApi::ListJobs(const server::Call&, const QueueCaller& caller) {
  auto jobs = backend_.service->List();
  if (!jobs.ok()) return ErrorResponse(jobs.status());
  std::vector<json> listed;
  std::map<std::string, std::string> levels;  // the caller's, per project
  for (const JobRecord& job : *jobs) {
    if (backend_.access->CanRead(caller, job, &levels)) listed.push_back(JobJson(job));
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

ServerResponse QueueApi::CancelJob(const JobRecord& job, const std::string& user) {
  if (job.user != user) {
    return ErrorResponse(Status::PermissionDenied("job " + std::to_string(job.id) + " belongs to " +
                                                  job.user + "; " + user + " cannot cancel it"));
  }
  Status s = backend_.service->Cancel(job.id, user);
  if (!s.ok()) return Invalid(s);
  return JsonResponse(200, json::object());
}

ServerResponse QueueApi::ReadLog(const ServerRequest& request, const JobRecord& job) {
  uint64_t offset = 0;
  auto query = http::ParseQuery(request.query);
  if (auto it = query.find("offset"); it != query.end()) {
    auto parsed = ParseNumber(it->second);
    if (!parsed)
      return ErrorResponse(
          Status::InvalidArgument("offset '" + it->second + "' is not a byte offset"));
    offset = *parsed;
  }
  ServerResponse response;
  response.content_type = "text/plain; charset=utf-8";
  std::ifstream in(backend_.service->LogPath(job.id), std::ios::binary);
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
