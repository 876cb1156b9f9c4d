// Opening a transport (track/rest_transport.cc: over HTTP;
// track/embedded_transport.cc: a store in this process).
#include "track/transport.h"

#include <filesystem>

#include "http/server_address.h"
#include "http/server_client.h"
#include "http/url.h"
#include "track/embedded_transport.h"
#include "track/rest_transport.h"
#include "track/sqlite_store.h"
#include "track/store.h"

namespace cohort::track {

using nlohmann::json;

std::string ApiPath(const std::string& endpoint) {
  return endpoint.rfind('/', 0) == 0 ? endpoint : "/api/2.0/mlflow/" + endpoint;
}

Result<std::unique_ptr<Transport>> OpenTransport(const std::string& uri) {
  if (http::IsHttpUrl(uri)) {
    // The token of a `cohort server --auth` (MLflow's variable works too).
    return NewRestTransport(uri, http::ServerToken());
  }
  if (uri.rfind("postgresql://", 0) == 0 || uri.rfind("postgres://", 0) == 0) {
    // One cohort server owns a PostgreSQL store (its advisory lock): every
    // training process reaches it through that server.
    return Status::InvalidArgument(
        "tracking URI '" + RedactStoreUri(uri) +
        "': clients reach a PostgreSQL store through its server: run `cohort server --store " +
        RedactStoreUri(uri) + "` and track to http://HOST:PORT");
  }
  auto store = OpenStore(uri);
  if (!store.ok()) return store.status();
  std::string path = ExpandHome(uri.substr(uri.find(':') + 1));
  std::filesystem::path dir = std::filesystem::path(path).parent_path() / "artifacts";
  auto artifacts = artifacts::OpenLocalArtifactStore(dir.string());
  if (!artifacts.ok()) return artifacts.status();
  return NewEmbeddedTransport(std::move(*store), std::move(*artifacts));
}

Result<std::string> StringIn(const json& answer, const std::string& pointer) {
  const json::json_pointer at(pointer);
  if (!answer.contains(at) || !answer[at].is_string()) {
    return Status::PeerFailure("the tracking server's answer has no " + pointer);
  }
  return answer[at].get<std::string>();
}

Result<std::string> ExperimentIdByName(Transport& transport, const std::string& name) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto got = transport.Call("GET", "experiments/get-by-name", {{"experiment_name", name}});
    if (got.ok()) return StringIn(*got, "/experiment/experiment_id");
    if (!got.status().IsNotFound()) return got.status();
    auto made = transport.Call("POST", "experiments/create", {{"name", name}});
    if (made.ok()) return StringIn(*made, "/experiment_id");
    // Created meanwhile by another client: look it up again.
    if (!made.status().IsAlreadyExists()) return made.status();
  }
  return Status::Internal("experiment '" + name + "' neither exists nor can be created");
}

}  // namespace cohort::track
