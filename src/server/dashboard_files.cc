// The dashboard's files and /health.
#include "server/dashboard_files.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <memory>

namespace cohort::server {
namespace {

const char* ContentType(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".html") return "text/html; charset=utf-8";
  if (ext == ".js" || ext == ".mjs") return "text/javascript; charset=utf-8";
  if (ext == ".css") return "text/css; charset=utf-8";
  if (ext == ".json" || ext == ".map") return "application/json";
  if (ext == ".svg") return "image/svg+xml";
  if (ext == ".png") return "image/png";
  if (ext == ".ico") return "image/x-icon";
  if (ext == ".woff2") return "font/woff2";
  return "application/octet-stream";
}

http::ServerResponse NotFound(const std::string& path) {
  http::ServerResponse r;
  r.status = 404;
  r.content_type = "text/plain; charset=utf-8";
  r.body = "404 not found: " + path + "\n";
  return r;
}

}  // namespace

DashboardFiles::DashboardFiles(const std::string& web_dir) {
  if (web_dir.empty()) return;
  std::error_code ec;
  std::filesystem::path root =
      std::filesystem::weakly_canonical(std::filesystem::absolute(web_dir, ec), ec);
  if (!ec) web_root_ = root.string();
}

void DashboardFiles::Register(Router& router) {
  Mount mount;
  mount.prefixes = {"/"};
  mount.auth = Auth::kNone;
  mount.size = BodySize::kSmall;
  mount.no_route = [](const Call& call) { return NotFound(call.request.path); };
  router.AddMount(std::move(mount))
      .Add({}, "health",
           [](const Call&) {
             http::ServerResponse r;
             r.content_type = "text/plain; charset=utf-8";
             r.body = "OK";
             return r;
           })
      .Add({}, "*", [this](const Call& call) { return Serve(call.request); });
}

// A file of the web folder, sent from the open file. Nothing outside the
// folder, whatever the path says; every failure (a name too long, a loop of
// links) is a 404, never an exception.
http::ServerResponse DashboardFiles::Serve(const http::ServerRequest& request) {
  if (request.method != "GET" && request.method != "HEAD") return NotFound(request.path);
  if (web_root_.empty() || request.path.find('\0') != std::string::npos) {
    return NotFound(request.path);
  }
  std::string relative = request.path == "/" ? "index.html" : request.path.substr(1);
  const std::filesystem::path root(web_root_);
  std::error_code ec;
  std::filesystem::path file = std::filesystem::weakly_canonical(root / relative, ec);
  if (ec) return NotFound(request.path);
  auto [r, f] = std::mismatch(root.begin(), root.end(), file.begin(), file.end());
  if (r != root.end()) return NotFound(request.path);
  auto body = std::make_shared<http::FileBody>();
  body->fd = Fd(::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  struct stat st;
  if (!body->fd.valid() || ::fstat(body->fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return NotFound(request.path);
  }
  body->size = static_cast<uint64_t>(st.st_size);
  http::ServerResponse response;
  response.content_type = ContentType(file.string());
  response.file = std::move(body);
  return response;
}

}  // namespace cohort::server
