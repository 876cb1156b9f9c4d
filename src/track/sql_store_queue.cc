// The SQL tracking store's part of the job queue's access control: grants
// per queue project and agent credentials (queue/queue_access.h uses them).
#include "data/hash.h"
#include "net/auth.h"
#include "track/sql_store.h"
#include "track/validation.h"

namespace cohort::track {
namespace {

// READ < SUBMIT; "" (none) below both.
int Rank(const std::string& level) { return level == "SUBMIT" ? 2 : level == "READ" ? 1 : 0; }

}  // namespace

Status SqlStore::GrantQueue(const std::string& project, const std::string& user,
                            const std::string& level) {
  if (level != "READ" && level != "SUBMIT" && level != "NONE") {
    return Status::InvalidArgument("Invalid queue permission '" + level +
                                   "': expected READ, SUBMIT or NONE");
  }
  COHORT_RETURN_IF_ERROR(ValidateKey("queue project", project));
  std::lock_guard<std::mutex> lock(mu_);
  auto known = QueryIds("SELECT name FROM users WHERE name = ?", {user});
  if (!known.ok()) return known.status();
  if (known->empty()) return Status::NotFound("User '" + user + "' does not exist.");
  if (level == "NONE") {
    return db_->Run("DELETE FROM queue_permissions WHERE project = ? AND \"user\" = ?",
                    {project, user});
  }
  return db_->Run(
      "INSERT INTO queue_permissions VALUES (?, ?, ?)"
      " ON CONFLICT (project, \"user\") DO UPDATE SET level = excluded.level",
      {project, user, level});
}

Result<std::string> SqlStore::QueuePermission(const std::string& project, const std::string& user) {
  std::lock_guard<std::mutex> lock(mu_);
  auto levels =
      QueryIds("SELECT level FROM queue_permissions WHERE \"user\" = ? AND project IN (?, '*')",
               {user, project});
  if (!levels.ok()) return levels.status();
  std::string best;
  for (const std::string& level : *levels) {
    if (Rank(level) > Rank(best)) best = level;
  }
  return best;
}

Result<std::string> SqlStore::CreateAgentCredential(const std::string& agent) {
  COHORT_RETURN_IF_ERROR(ValidateKey("agent name", agent));
  std::lock_guard<std::mutex> lock(mu_);
  std::string secret = kAgentCredentialPrefix + GenerateSecret();
  Status s = db_->Run("INSERT INTO agent_credentials VALUES (?, ?, ?)",
                      {agent, data::Sha256Hex(secret), NowMillis()});
  if (s.IsAlreadyExists()) {
    return Status::AlreadyExists("Agent '" + agent +
                                 "' already has a credential: revoke it first.");
  }
  if (!s.ok()) return s;
  return secret;
}

Status SqlStore::RevokeAgentCredential(const std::string& agent) {
  std::lock_guard<std::mutex> lock(mu_);
  COHORT_RETURN_IF_ERROR(db_->Run("DELETE FROM agent_credentials WHERE name = ?", {agent}));
  if (db_->Changes() == 0) return Status::NotFound("Agent '" + agent + "' has no credential.");
  return Status::OK();
}

Result<std::string> SqlStore::AgentForCredential(const std::string& secret) {
  std::lock_guard<std::mutex> lock(mu_);
  auto name = QueryIds("SELECT name FROM agent_credentials WHERE secret_sha256 = ?",
                       {data::Sha256Hex(secret)});
  if (!name.ok()) return name.status();
  if (name->empty()) return Status::NotFound("unknown agent credential");
  return name->front();
}

Result<std::vector<std::string>> SqlStore::AgentCredentials() {
  std::lock_guard<std::mutex> lock(mu_);
  return QueryIds("SELECT name FROM agent_credentials ORDER BY name", {});
}

}  // namespace cohort::track
