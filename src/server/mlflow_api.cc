// MLflow's REST API over HTTP: one route per endpoint of track::MlflowService,
// the request's fields read from its query or JSON body, the answer or the
// error as JSON.
#include "server/mlflow_api.h"

#include "server/api_response.h"

namespace cohort::server {
namespace {

constexpr const char* kApiPrefixes[] = {"/api/2.0/mlflow/", "/ajax-api/2.0/mlflow/"};

// An endpoint as a route's handler: request fields in, JSON or the error out.
Handler Answer(const track::MlflowService* service,
               const track::MlflowService::Endpoint* endpoint) {
  return [service, endpoint](const Call& call) {
    auto fields = track::RequestFields::FromRequest(call.request);
    if (!fields.ok()) return UnreadableFields(call.request, fields.status());
    auto result = service->Call(*endpoint, *fields);
    if (!result.ok()) return ErrorResponse(result.status());
    return JsonResponse(200, *result);
  };
}

}  // namespace

MlflowApi::MlflowApi(track::TrackingStore* store, AccessControl* access)
    : service_(store), access_(access) {}

void MlflowApi::Register(Router& router) {
  Mount mount;
  mount.prefixes = {kApiPrefixes[0], kApiPrefixes[1]};
  mount.no_route = CheckedBy(access_, [](const Call& call) {
    return ErrorResponse("ENDPOINT_NOT_FOUND", "No API endpoint at " + call.request.path);
  });
  mount.wrong_method =
      CheckedBy(access_, [](const Call& call) { return MethodNotAllowed(call.request); });
  Router::Routes& routes = router.AddMount(std::move(mount));
  for (const track::MlflowService::Endpoint& endpoint : service_.endpoints()) {
    routes.Add(endpoint.methods, endpoint.name, CheckedBy(access_, Answer(&service_, &endpoint)));
  }
}

}  // namespace cohort::server
