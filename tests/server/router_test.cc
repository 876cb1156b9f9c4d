// Router: mounts by longest prefix, routes by pattern and method, the
// mount's answers for unknown paths and methods.
#include "server/router.h"

#include <gtest/gtest.h>

namespace cohort::server {
namespace {

http::ServerResponse Text(std::string body) {
  http::ServerResponse r;
  r.body = std::move(body);
  return r;
}

http::ServerRequest Request(std::string method, std::string path) {
  http::ServerRequest r;
  r.method = std::move(method);
  r.path = std::move(path);
  return r;
}

class RouterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Mount api;
    api.prefixes = {"/api/", "/ajax/"};
    api.no_route = [](const Call& c) { return Text("no route " + c.request.path); };
    api.wrong_method = [](const Call& c) { return Text("wrong method " + c.request.method); };
    router_.AddMount(std::move(api))
        .Add({"GET"}, "jobs", [](const Call&) { return Text("list"); })
        .Add({"POST"}, "jobs", [](const Call&) { return Text("submit"); })
        .Add({"GET"}, "jobs/{id}", [](const Call& c) { return Text("job " + c.Param("id")); })
        .Add({"POST"}, "agents/{name}/jobs/{id}/log",
             [](const Call& c) { return Text(c.Param("name") + " logs " + c.Param("id")); });
    Mount files;
    files.prefixes = {"/"};
    files.auth = Auth::kNone;
    files.no_route = [](const Call&) { return Text("unreachable"); };
    router_.AddMount(std::move(files))
        .Add({}, "health", [](const Call&) { return Text("OK"); })
        .Add({}, "*", [](const Call& c) { return Text("file '" + c.Param("*") + "'"); });
  }

  std::string Answer(const std::string& method, const std::string& path) {
    http::ServerRequest request = Request(method, path);
    const Mount* mount = router_.MountOf(path);
    if (mount == nullptr) return "no mount";
    return router_.Dispatch(*mount, request, "").body;
  }

  Router router_;
};

TEST_F(RouterTest, RoutesByPatternAndMethod) {
  EXPECT_EQ(Answer("GET", "/api/jobs"), "list");
  EXPECT_EQ(Answer("POST", "/ajax/jobs"), "submit");
  EXPECT_EQ(Answer("GET", "/api/jobs/17"), "job 17");
  EXPECT_EQ(Answer("POST", "/api/agents/a1/jobs/3/log"), "a1 logs 3");
}

TEST_F(RouterTest, UnknownPathsAndMethodsGetTheMountsAnswers) {
  EXPECT_EQ(Answer("DELETE", "/api/jobs"), "wrong method DELETE");
  EXPECT_EQ(Answer("POST", "/api/jobs/17"), "wrong method POST");
  EXPECT_EQ(Answer("GET", "/api/jobs/"), "no route /api/jobs/");          // an empty {id}
  EXPECT_EQ(Answer("GET", "/api/jobs/17/x"), "no route /api/jobs/17/x");  // too long
  EXPECT_EQ(Answer("GET", "/api/job"), "no route /api/job");
  EXPECT_EQ(Answer("GET", "/api/"), "no route /api/");
}

TEST_F(RouterTest, LongestPrefixWinsAndStarTakesTheRest) {
  EXPECT_EQ(router_.MountOf("/api/jobs")->auth, Auth::kServer);
  EXPECT_EQ(router_.MountOf("/apix")->auth, Auth::kNone);
  EXPECT_EQ(Answer("GET", "/health"), "OK");
  EXPECT_EQ(Answer("HEAD", "/"), "file ''");
  EXPECT_EQ(Answer("GET", "/assets/app.js"), "file 'assets/app.js'");
  EXPECT_EQ(router_.MountOf("relative"), nullptr);
}

}  // namespace
}  // namespace cohort::server
