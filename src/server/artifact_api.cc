// The artifact proxy's endpoints: path checks, then the ArtifactStore.
#include "server/artifact_api.h"

#include <nlohmann/json.hpp>

#include "server/api_response.h"
#include "server/request_fields.h"

namespace cohort::server {
namespace {

using nlohmann::json;

constexpr const char* kArtifactPrefixes[] = {"/api/2.0/mlflow-artifacts/artifacts",
                                             "/ajax-api/2.0/mlflow-artifacts/artifacts"};
constexpr size_t kMaxArtifactNameBytes = 255;  // NAME_MAX of local file systems

// Why `path` cannot name an artifact, or "" when it can: it must be
// relative, without "." or ".." or empty components, and no component may be
// named like the stores' scratch and lock files (it would never be listed).
std::string ArtifactPathProblem(const std::string& path) {
  if (path.empty() || path.front() == '/' || path.find('\0') != std::string::npos) return "-";
  size_t start = 0;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string::npos) slash = path.size();
    std::string part = path.substr(start, slash - start);
    if (part.empty() || part == "." || part == "..") return "-";
    if (part.size() > kMaxArtifactNameBytes) {
      return "a name is longer than " + std::to_string(kMaxArtifactNameBytes) + " bytes";
    }
    if (IsScratchName(part)) {
      return "a name containing '.tmp.' or ending in '.lock' is reserved for the store's scratch "
             "files";
    }
    start = slash + 1;
  }
  return "";
}

http::ServerResponse InvalidArtifactPath(const std::string& what, const std::string& path,
                                         const std::string& problem) {
  return ErrorResponse(Status::InvalidArgument("Invalid " + what + " '" + path + "'" +
                                               (problem == "-" ? "" : ": " + problem)));
}

}  // namespace

void ArtifactApi::Register(Router& router) {
  Mount mount;
  mount.prefixes = {kArtifactPrefixes[0], kArtifactPrefixes[1]};
  mount.body = http::BodyKind::kBytes;
  mount.size = BodySize::kUpload;
  if (artifacts_ != nullptr) mount.upload_spool_dir = artifacts_->spool_dir();
  mount.no_route = [](const Call& call) {
    return ErrorResponse("ENDPOINT_NOT_FOUND", "No API endpoint at " + call.request.path);
  };
  // The prefix itself (a listing) or the prefix, '/' and a path.
  router.AddMount(std::move(mount)).Add({}, "*", CheckedBy(access_, [this](const Call& call) {
                                          const std::string& rest = call.Param("*");
                                          if (!rest.empty() && rest.front() != '/') {
                                            return ErrorResponse(
                                                "ENDPOINT_NOT_FOUND",
                                                "No API endpoint at " + call.request.path);
                                          }
                                          return Handle(call.request,
                                                        rest.empty() ? rest : rest.substr(1));
                                        }));
}

http::ServerResponse ArtifactApi::Handle(const http::ServerRequest& request,
                                         const std::string& path) {
  if (artifacts_ == nullptr) {
    return ErrorResponse("NOT_IMPLEMENTED",
                         "This server serves no artifacts: start it with --artifacts LOCATION");
  }
  if (request.method == "GET" && path.empty()) return List(request);
  if (std::string problem = ArtifactPathProblem(path); !problem.empty()) {
    return InvalidArtifactPath("artifact path", path, problem);
  }
  if (request.method == "GET") {
    auto content = artifacts_->Read(path);
    if (!content.ok()) return ErrorResponse(content.status());
    if (!content->has_value()) {
      return ErrorResponse(Status::NotFound("Artifact '" + path + "' does not exist"));
    }
    http::ServerResponse r;
    r.content_type = "application/octet-stream";
    r.file = std::move((*content)->file);
    r.body = std::move((*content)->bytes);
    return r;
  }
  Status s;
  if (request.method == "PUT") {
    s = artifacts_->Write(path, request.body_file.get(), request.body);
  } else if (request.method == "DELETE") {
    s = artifacts_->Delete(path);
  } else {
    return MethodNotAllowed(request);
  }
  if (!s.ok()) return ErrorResponse(s);
  return JsonResponse(200, json::object());
}

http::ServerResponse ArtifactApi::List(const http::ServerRequest& request) {
  auto fields = RequestFields::FromRequest(request);
  if (!fields.ok()) return ErrorResponse(fields.status());
  auto dir = fields->OptionalString("path");
  if (!dir.ok()) return ErrorResponse(dir.status());
  std::string prefix = dir->value_or("");
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  if (std::string problem = ArtifactPathProblem(prefix); !prefix.empty() && !problem.empty()) {
    return InvalidArtifactPath("path", prefix, problem);
  }
  auto entries = artifacts_->List(prefix);
  if (!entries.ok()) return ErrorResponse(entries.status());
  json files = json::array();
  for (const ArtifactEntry& e : *entries) {
    if (e.is_dir) {
      files.push_back({{"path", e.name}, {"is_dir", true}});
    } else {
      files.push_back({{"path", e.name}, {"is_dir", false}, {"file_size", e.size}});
    }
  }
  json out = json::object();
  if (!files.empty()) out["files"] = files;
  return JsonResponse(200, out);
}

}  // namespace cohort::server
