// HTTP and embedded transports (the embedded one: track/embedded_transport.cc).
#include "track/transport.h"

#include <filesystem>

#include "http/api_error.h"
#include "http/client.h"
#include "http/server_address.h"
#include "http/url.h"
#include "track/embedded_transport.h"
#include "track/sqlite_store.h"
#include "track/store.h"

namespace cohort::track {
namespace {

using nlohmann::json;

std::string QueryString(const json& body) {
  std::string out;
  for (const auto& [key, value] : body.items()) {
    std::string text = value.is_string() ? value.get<std::string>() : value.dump();
    out += out.empty() ? '?' : '&';
    out += http::UriEncode(key, true);
    out += '=';
    out += http::UriEncode(text, true);
  }
  return out;
}

// An MLflow endpoint's path, or `endpoint` itself when it is one ("/...").
std::string ApiPath(const std::string& endpoint) {
  return endpoint.rfind('/', 0) == 0 ? endpoint : "/api/2.0/mlflow/" + endpoint;
}

// The answer of an MLflow endpoint, as Call reports it.
Result<json> Interpret(int status, const std::string& body, const std::string& what) {
  if (status == 200) {
    auto parsed = json::parse(body, nullptr, false);
    if (parsed.is_discarded()) return Status::PeerFailure(what + ": answer is not JSON");
    return parsed;
  }
  if (status >= 500 || status == 0 || status == 429 || status == 408) {
    return Status::PeerFailure(what + ": HTTP " + std::to_string(status));
  }
  auto parsed = json::parse(body, nullptr, false);
  std::string message = body.substr(0, 500);
  Status::Code code = Status::Code::kInvalidArgument;
  if (!parsed.is_discarded() && parsed.is_object() && parsed.contains("message")) {
    const std::string error_code = parsed.value("error_code", "");
    message = error_code + ": " + parsed.value("message", "");
    code = http::CodeOfErrorCode(error_code);
  }
  return Status(code, what + ": " + message);
}

class RestTransport : public Transport {
 public:
  RestTransport(std::string base, std::string token)
      : base_(std::move(base)), client_(Policy(), /*max_in_flight=*/1) {
    if (!token.empty()) auth_header_ = "Authorization: Bearer " + token;
  }

  Result<json> Call(const std::string& method, const std::string& endpoint,
                    const json& body) override {
    http::HttpRequest request;
    request.method = method;
    request.url = base_ + ApiPath(endpoint);
    if (method == "GET") {
      request.url += QueryString(body);
    } else {
      request.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
      request.headers.push_back("Content-Type: application/json");
    }
    if (!auth_header_.empty()) request.headers.push_back(auth_header_);
    auto response = client_.Perform(request);
    if (!response.ok()) return Status::PeerFailure(response.status().message());
    return Interpret(static_cast<int>(response->status), response->body, method + " " + endpoint);
  }

  Status PutArtifact(const std::string& path, const std::string& bytes) override {
    http::HttpRequest request;
    request.method = "PUT";
    request.url = base_ + "/api/2.0/mlflow-artifacts/artifacts/" + http::UriEncode(path, false);
    request.body = bytes;
    if (!auth_header_.empty()) request.headers.push_back(auth_header_);
    auto response = client_.Perform(request);
    if (!response.ok()) return Status::PeerFailure(response.status().message());
    return Interpret(static_cast<int>(response->status), response->body, "PUT " + path).status();
  }

  bool remote() const override { return true; }

 private:
  // Short: a server that is down is found out fast and the batch spooled.
  static http::RetryPolicy Policy() {
    http::RetryPolicy p;
    p.max_attempts = 2;
    p.initial_backoff_s = 0.05;
    p.max_backoff_s = 0.2;
    p.request_timeout_s = 30;
    p.connect_timeout_s = 2;
    return p;
  }

  std::string base_;
  std::string auth_header_;  // "" without a token
  http::HttpClient client_;
};

}  // namespace

Result<std::unique_ptr<Transport>> OpenTransport(const std::string& uri) {
  if (http::IsHttpUrl(uri)) {
    // The token of a `cohort server --auth` (MLflow's variable works too).
    return std::unique_ptr<Transport>(
        new RestTransport(http::WithoutTrailingSlash(uri), http::ServerToken()));
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
