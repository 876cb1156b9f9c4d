// The artifact proxy's endpoints: path checks, then the ArtifactStore.
#include "server/artifact_api.h"

#include <nlohmann/json.hpp>

#include "server/api_response.h"
#include "track/request_fields.h"

namespace cohort::server {
namespace {

using nlohmann::json;

constexpr const char* kArtifactPrefixes[] = {"/api/2.0/mlflow-artifacts/artifacts",
                                             "/ajax-api/2.0/mlflow-artifacts/artifacts"};
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
  if (Status valid = artifacts::CheckArtifactPath("artifact path", path); !valid.ok()) {
    return ErrorResponse(valid);
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
  auto fields = track::RequestFields::FromRequest(request);
  if (!fields.ok()) return ErrorResponse(fields.status());
  auto dir = fields->OptionalString("path");
  if (!dir.ok()) return ErrorResponse(dir.status());
  std::string prefix = dir->value_or("");
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  if (Status valid = artifacts::CheckArtifactPath("path", prefix); !prefix.empty() && !valid.ok()) {
    return ErrorResponse(valid);
  }
  auto entries = artifacts_->List(prefix);
  if (!entries.ok()) return ErrorResponse(entries.status());
  json files = json::array();
  for (const artifacts::ArtifactEntry& e : *entries) {
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
