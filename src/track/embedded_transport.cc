// The embedded transport: MlflowService and the artifact store, called directly.
#include "track/embedded_transport.h"

#include "http/api_error.h"
#include "http/server/http_message.h"
#include "track/mlflow_service.h"

namespace cohort::track {
namespace {

using nlohmann::json;

// Where the server serves MLflow's endpoints (server/mlflow_api.cc).
constexpr const char* kApiPrefixes[] = {"/api/2.0/mlflow/", "/ajax-api/2.0/mlflow/"};

// The MLflow endpoint `endpoint` names: itself, or the rest of a path under
// the API's prefixes; "" for any other path (cohort's own APIs,
// "/api/cohort/...", are the server's).
std::string EndpointName(const std::string& endpoint) {
  if (endpoint.empty() || endpoint.front() != '/') return endpoint;
  for (const std::string prefix : kApiPrefixes) {
    if (endpoint.rfind(prefix, 0) == 0) return endpoint.substr(prefix.size());
  }
  return "";
}

// Whether every key and string in `value` is UTF-8.
bool AllUtf8(const json& value) {
  if (value.is_string()) return http::IsUtf8(value.get_ref<const std::string&>());
  if (value.is_object()) {
    for (const auto& [key, item] : value.items()) {
      if (!http::IsUtf8(key) || !AllUtf8(item)) return false;
    }
  }
  if (value.is_array()) {
    for (const json& item : value) {
      if (!AllUtf8(item)) return false;
    }
  }
  return true;
}

// The fields the server reads from what RestTransport sends for `body` (a
// view of `body` when it is a valid JSON body, so `body` must outlive them): a
// GET's query carries each field as text (a string as it is, anything else
// as its JSON), and a query that is not UTF-8 is refused; a JSON body has
// bytes that are not UTF-8 replaced (U+FFFD).
Result<RequestFields> FieldsSent(const std::string& method, const json& body) {
  if (method == "GET") {
    json fields = json::object();
    for (const auto& [key, value] : body.items()) {
      std::string text = value.is_string()
                             ? value.get<std::string>()
                             : value.dump(-1, ' ', false, json::error_handler_t::replace);
      if (!http::IsUtf8(key)) {
        return Status::InvalidArgument("Invalid query string: a parameter name is not UTF-8");
      }
      if (!http::IsUtf8(text)) {
        return Status::InvalidArgument("Invalid value for parameter '" + key +
                                       "' supplied: it is not UTF-8");
      }
      fields[key] = std::move(text);
    }
    return RequestFields(std::move(fields));
  }
  if (!body.is_object()) {
    return Status::InvalidArgument("Malformed JSON request body: expected an object, got " +
                                   std::string(body.type_name()));
  }
  if (AllUtf8(body)) return RequestFields::View(body);
  json replaced =
      json::parse(body.dump(-1, ' ', false, json::error_handler_t::replace), nullptr, false);
  if (replaced.is_discarded()) return Status::Internal("a JSON body did not parse back");
  return RequestFields(std::move(replaced));
}

// A failure as RestTransport reports the server's answer to it: what the
// server answers 5xx (its own failures) is kPeerFailure; a refusal has the
// code of its error_code and the message "<what>: <error_code>: <message>".
Status AsAnswered(const std::string& what, const std::string& error_code,
                  const std::string& message) {
  const int status = http::HttpStatusOf(error_code);
  if (status >= 500) return Status::PeerFailure(what + ": HTTP " + std::to_string(status));
  return Status(http::CodeOfErrorCode(error_code), what + ": " + error_code + ": " + message);
}

Status AsAnswered(const std::string& what, const Status& status) {
  return AsAnswered(what, http::ErrorCodeOf(status.code()), status.message());
}

class EmbeddedTransport : public Transport {
 public:
  EmbeddedTransport(std::unique_ptr<TrackingStore> store,
                    std::unique_ptr<artifacts::ArtifactStore> artifacts)
      : store_(std::move(store)), artifacts_(std::move(artifacts)), service_(store_.get()) {}

  Result<json> Call(const std::string& method, const std::string& endpoint,
                    const json& body) override {
    const std::string what = method + " " + endpoint;
    const MlflowService::Endpoint* found = service_.Find(EndpointName(endpoint));
    const std::string path =
        !endpoint.empty() && endpoint.front() == '/' ? endpoint : kApiPrefixes[0] + endpoint;
    if (found == nullptr) {
      return AsAnswered(what, "ENDPOINT_NOT_FOUND", "No API endpoint at " + path);
    }
    if (found->methods.count(method) == 0) {
      return AsAnswered(what, "BAD_REQUEST", "Method " + method + " is not allowed for " + path);
    }
    auto fields = FieldsSent(method, body);
    // The server answers a body it cannot read as BAD_REQUEST.
    if (!fields.ok()) {
      return method == "GET" ? AsAnswered(what, fields.status())
                             : AsAnswered(what, "BAD_REQUEST", fields.status().message());
    }
    auto answer = service_.Call(*found, *fields);
    if (!answer.ok()) return AsAnswered(what, answer.status());
    return answer;
  }

  Status PutArtifact(const std::string& path, const std::string& bytes) override {
    const std::string what = "PUT " + path;
    Status s = artifacts::CheckArtifactPath("artifact path", path);
    if (s.ok()) s = artifacts_->Write(path, nullptr, bytes);
    return s.ok() ? s : AsAnswered(what, s);
  }

  bool remote() const override { return false; }

 private:
  std::unique_ptr<TrackingStore> store_;
  std::unique_ptr<artifacts::ArtifactStore> artifacts_;
  MlflowService service_;
};

}  // namespace

std::unique_ptr<Transport> NewEmbeddedTransport(
    std::unique_ptr<TrackingStore> store, std::unique_ptr<artifacts::ArtifactStore> artifacts) {
  return std::make_unique<EmbeddedTransport>(std::move(store), std::move(artifacts));
}

}  // namespace cohort::track
