// Who sent a queue request, and what they may do.
#include "queue/queue_access.h"

#include "net/auth.h"
#include "queue/queue_token.h"
#include "server/api_response.h"

namespace cohort::queue {
namespace {

using http::ServerResponse;
using server::ErrorResponse;

// The credential of "Authorization: Bearer X", or "".
std::string Bearer(const http::ServerRequest& request) {
  const std::string header = request.Header("authorization");
  const std::string prefix = "Bearer ";
  return header.rfind(prefix, 0) == 0 ? header.substr(prefix.size()) : "";
}

bool Reads(const std::string& level) { return level == "READ" || level == "SUBMIT"; }

}  // namespace

std::string QueueAccess::TokenHint() const {
  return "cohort commands on the server's host find it themselves; elsewhere set "
         "COHORT_QUEUE_TOKEN to the content of " +
         options_.token_path + " (on the server's host)";
}

std::optional<ServerResponse> QueueAccess::Identify(const http::ServerRequest& request,
                                                    bool agent_endpoint,
                                                    QueueCaller* caller) const {
  const std::string bearer = Bearer(request);
  if (!bearer.empty()) {
    auto agent = store_->AgentForCredential(bearer);
    if (agent.ok()) {
      *caller = {QueueCaller::Kind::kAgent, *agent, false};
      return std::nullopt;
    }
    if (!agent.status().IsNotFound()) {
      return ErrorResponse(agent.status());
    }
    // One that was meant as an agent's (a revoked one, say) is not ignored.
    if (bearer.rfind(track::kAgentCredentialPrefix, 0) == 0) {
      return ErrorResponse(Status::Unauthenticated("Invalid agent credential"));
    }
  }
  if (options_.auth) {
    if (bearer.empty()) {
      return ErrorResponse(Status::Unauthenticated(
          agent_endpoint ? "This server requires an agent credential: send 'Authorization: "
                           "Bearer CREDENTIAL' (credentials come from `cohort "
                           "agent-credential add NAME`)"
                         : "This server requires a token: send 'Authorization: Bearer "
                           "TOKEN' (tokens come from `cohort token create USER`)"));
    }
    auto user = store_->UserForToken(bearer);
    if (!user.ok()) {
      if (user.status().IsNotFound()) {
        return ErrorResponse(Status::Unauthenticated("Invalid token"));
      }
      return ErrorResponse(user.status());
    }
    *caller = {QueueCaller::Kind::kUser, *user, false};
    return std::nullopt;
  }
  std::string offered = request.Header("x-cohort-queue-token");
  if (offered.empty()) offered = bearer;
  if (offered.empty()) {
    return ErrorResponse(
        Status::Unauthenticated(std::string("This server's job queue needs its token in the ") +
                                kQueueTokenHeader + " header: " + TokenHint()));
  }
  if (!SameBytes(offered, options_.token)) {
    return ErrorResponse(Status::Unauthenticated("Invalid queue token: " + TokenHint()));
  }
  // The token's holder may be anyone the server's user is: who they say.
  std::string claimed = request.Header("x-cohort-user");
  *caller = {QueueCaller::Kind::kUser, claimed.empty() ? "anonymous" : claimed, true};
  return std::nullopt;
}

std::optional<ServerResponse> QueueAccess::MayUseJobs(const QueueCaller& caller) const {
  if (caller.kind == QueueCaller::Kind::kUser) return std::nullopt;
  return ErrorResponse(Status::PermissionDenied("Agent " + caller.name +
                                                "'s credential is only for its agent endpoints"));
}

std::optional<ServerResponse> QueueAccess::MaySubmit(const QueueCaller& caller,
                                                     const std::string& project) const {
  if (auto denied = MayUseJobs(caller)) return denied;
  if (caller.trusted) return std::nullopt;
  auto level = store_->QueuePermission(project, caller.name);
  if (!level.ok()) return ErrorResponse(level.status());
  if (*level == "SUBMIT") return std::nullopt;
  return ErrorResponse(
      Status::PermissionDenied("User '" + caller.name + "' may not submit to queue project '" +
                               project + "' (an admin grants it: cohort user grant " + caller.name +
                               " --queue-project " + project + " submit)"));
}

bool QueueAccess::CanRead(const QueueCaller& caller, const JobRecord& job,
                          std::map<std::string, std::string>* levels) const {
  if (caller.kind != QueueCaller::Kind::kUser) return false;
  if (caller.trusted || job.user == caller.name) return true;
  auto known = levels->find(job.project);
  if (known == levels->end()) {
    auto level = store_->QueuePermission(job.project, caller.name);
    // A store that cannot answer shows nothing more.
    known = levels->emplace(job.project, level.ok() ? *level : "").first;
  }
  return Reads(known->second);
}

std::optional<ServerResponse> QueueAccess::MayRead(const QueueCaller& caller,
                                                   const JobRecord& job) const {
  if (auto denied = MayUseJobs(caller)) return denied;
  if (caller.trusted || job.user == caller.name) return std::nullopt;
  auto level = store_->QueuePermission(job.project, caller.name);
  if (!level.ok()) return ErrorResponse(level.status());
  if (Reads(*level)) return std::nullopt;
  return ErrorResponse(Status::PermissionDenied("User '" + caller.name + "' may not read job " +
                                                std::to_string(job.id)));
}

std::optional<ServerResponse> QueueAccess::MayActAs(const QueueCaller& caller,
                                                    const std::string& agent) const {
  if (caller.kind == QueueCaller::Kind::kAgent) {
    if (caller.name == agent) return std::nullopt;
    return ErrorResponse(Status::PermissionDenied("Agent " + caller.name +
                                                  "'s credential cannot act as agent " + agent));
  }
  if (caller.trusted) return std::nullopt;
  return ErrorResponse(Status::PermissionDenied(
      "Agent endpoints take an agent credential (cohort agent-credential add " + agent +
      "), not user " + caller.name + "'s token"));
}

}  // namespace cohort::queue
