// The tracking transport over HTTP: MLflow endpoints and the artifact proxy.
#include "track/rest_transport.h"

#include "http/server_client.h"
#include "http/url.h"

namespace cohort::track {
namespace {

using nlohmann::json;

class RestTransport : public Transport {
 public:
  RestTransport(const std::string& address, const std::string& token)
      : client_({address, /*source=*/"", "the tracking server", http::TrackingRetryPolicy()}) {
    client_.SetBearer(token);
  }

  Result<json> Call(const std::string& method, const std::string& endpoint,
                    const json& body) override {
    return client_.Call(method, ApiPath(endpoint), body, method + " " + endpoint);
  }

  Status PutArtifact(const std::string& path, const std::string& bytes) override {
    http::HttpRequest request;
    request.method = "PUT";
    request.url = "/api/2.0/mlflow-artifacts/artifacts/" + http::UriEncode(path, false);
    request.body = bytes;
    Result<http::HttpResponse> response = client_.Send(std::move(request));
    if (!response.ok()) return response.status();
    return http::AnswerJson(response->status, response->body, "PUT " + path).status();
  }

  bool remote() const override { return true; }

 private:
  http::ServerClient client_;
};

}  // namespace

std::unique_ptr<Transport> NewRestTransport(const std::string& address, const std::string& token) {
  return std::make_unique<RestTransport>(address, token);
}

}  // namespace cohort::track
