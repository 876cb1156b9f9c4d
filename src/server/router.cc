// Path matching of the Router.
#include "server/router.h"

namespace cohort::server {
namespace {

std::vector<std::string> Segments(const std::string& path) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t slash = path.find('/', start);
    out.push_back(path.substr(start, slash == std::string::npos ? slash : slash - start));
    if (slash == std::string::npos) return out;
    start = slash + 1;
  }
}

// Whether `rest` (the path after the mount's prefix) matches `pattern`;
// the parameters it binds go to *params.
bool Matches(const std::vector<std::string>& pattern, const std::string& rest,
             std::map<std::string, std::string>* params) {
  size_t start = 0;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const std::string& want = pattern[i];
    if (want == "*" && i + 1 == pattern.size()) {
      (*params)["*"] = rest.substr(std::min(start, rest.size()));
      return true;
    }
    if (start > rest.size()) return false;
    size_t slash = rest.find('/', start);
    size_t end = slash == std::string::npos ? rest.size() : slash;
    std::string got = rest.substr(start, end - start);
    if (want.size() > 2 && want.front() == '{' && want.back() == '}') {
      if (got.empty()) return false;
      (*params)[want.substr(1, want.size() - 2)] = got;
    } else if (got != want) {
      return false;
    }
    start = slash == std::string::npos ? rest.size() + 1 : slash + 1;
  }
  return start == rest.size() + 1;
}

}  // namespace

const std::string& Call::Param(const std::string& name) const {
  static const std::string* const kNone = new std::string();
  auto it = params.find(name);
  return it == params.end() ? *kNone : it->second;
}

Router::Routes& Router::Routes::Add(std::set<std::string> methods, const std::string& pattern,
                                    Handler handler) {
  routes_.push_back({std::move(methods), Segments(pattern), std::move(handler)});
  return *this;
}

Router::Routes& Router::AddMount(Mount mount) {
  mounts_.push_back(std::make_unique<Routes>());
  mounts_.back()->mount_ = std::move(mount);
  return *mounts_.back();
}

const Router::Routes* Router::RoutesOf(const std::string& path, std::string* rest) const {
  const Routes* best = nullptr;
  size_t best_length = 0;
  for (const auto& routes : mounts_) {
    for (const std::string& prefix : routes->mount_.prefixes) {
      if (path.rfind(prefix, 0) == 0 && (best == nullptr || prefix.size() > best_length)) {
        best = routes.get();
        best_length = prefix.size();
      }
    }
  }
  if (best != nullptr && rest != nullptr) *rest = path.substr(best_length);
  return best;
}

const Mount* Router::MountOf(const std::string& path) const {
  const Routes* routes = RoutesOf(path, nullptr);
  return routes == nullptr ? nullptr : &routes->mount_;
}

http::ServerResponse Router::Dispatch(const Mount& mount, const http::ServerRequest& request,
                                      const std::string& user) const {
  std::string rest;
  const Routes* routes = RoutesOf(request.path, &rest);
  Call call{request, user, {}};
  if (routes == nullptr || &routes->mount_ != &mount) return mount.no_route(call);
  bool path_known = false;
  for (const Routes::Route& route : routes->routes_) {
    std::map<std::string, std::string> params;
    if (!Matches(route.segments, rest, &params)) continue;
    path_known = true;
    if (!route.methods.empty() && route.methods.count(request.method) == 0) continue;
    call.params = std::move(params);
    return route.handler(call);
  }
  if (path_known && mount.wrong_method) return mount.wrong_method(call);
  return mount.no_route(call);
}

}  // namespace cohort::server
