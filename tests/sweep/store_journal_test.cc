// The sweep journal over a tracking server (sweep/tracking/store_journal.h),
// against a scripted server: an answer lost after the append, a server down
// past the deadline, a second controller, a garbled answer.
#include "sweep/tracking/store_journal.h"

#include <gtest/gtest.h>

#include <chrono>
#include <deque>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "track/transport.h"

namespace cohort::sweep {
namespace {

using nlohmann::json;

// What a call to the fake server does before (or instead of) answering.
enum class Fault { kNone, kDown, kAnswerLost, kGarbage };

// The journal endpoints of one sweep, with the store's rule: seq must be next.
struct FakeServer {
  std::vector<std::string> stored;
  std::deque<Fault> faults;  // one per call, then none
  int calls = 0;
};

class FakeTransport : public track::Transport {
 public:
  explicit FakeTransport(FakeServer* server) : server_(server) {}

  Result<json> Call(const std::string& method, const std::string& endpoint,
                    const json& body) override {
    ++server_->calls;
    Fault fault = Fault::kNone;
    if (!server_->faults.empty()) {
      fault = server_->faults.front();
      server_->faults.pop_front();
    }
    if (fault == Fault::kDown) return Status::PeerFailure(method + " " + endpoint + ": refused");
    if (fault == Fault::kGarbage) return json{{"records", {1, 2}}};
    if (endpoint == "/api/cohort/sweeps/journal/records") return json{{"records", server_->stored}};
    EXPECT_EQ(endpoint, "/api/cohort/sweeps/journal/append");
    if (body["seq"].get<int64_t>() != static_cast<int64_t>(server_->stored.size())) {
      // As track::Transport reports a refusal: the code its error_code stands for.
      return Status::AlreadyExists(method + " " + endpoint +
                                   ": RESOURCE_ALREADY_EXISTS: record taken");
    }
    server_->stored.push_back(body["record"].get<std::string>());
    if (fault == Fault::kAnswerLost)
      return Status::PeerFailure(method + " " + endpoint + ": reset");
    return json::object();
  }
  Status PutArtifact(const std::string&, const std::string&) override {
    return Status::Internal("no artifacts here");
  }
  bool remote() const override { return true; }

 private:
  FakeServer* server_;
};

std::unique_ptr<Journal> Open(FakeServer* server, double deadline_s = 5) {
  StoreJournalOptions options;
  options.uri = "http://fake";
  options.sweep = "s";
  options.append_deadline_s = deadline_s;
  auto journal = NewStoreJournal(std::make_unique<FakeTransport>(server), options, "3");
  auto records = journal->Records();
  EXPECT_TRUE(records.ok()) << records.status().ToString();
  return journal;
}

TEST(StoreJournal, ARetriedAppendWhoseAnswerWasLostIsStoredOnce) {
  FakeServer server;
  server.stored = {"r0"};
  auto journal = Open(&server);
  server.faults = {Fault::kAnswerLost, Fault::kDown};  // stored, answer lost; then down once
  ASSERT_TRUE(journal->Append("r1").ok());
  ASSERT_TRUE(journal->Append("r2").ok());  // at seq 2, not 3
  EXPECT_EQ(server.stored, (std::vector<std::string>{"r0", "r1", "r2"}));
  EXPECT_EQ(*journal->Records(), server.stored);
}

TEST(StoreJournal, ADownServerFailsTheAppendAfterTheDeadlineNamingTheSweep) {
  FakeServer server;
  auto journal = Open(&server, /*deadline_s=*/0.3);
  server.faults.assign(100, Fault::kDown);
  const auto start = std::chrono::steady_clock::now();
  Status s = journal->Append("r0");
  EXPECT_EQ(s.code(), Status::Code::kPeerFailure);
  EXPECT_EQ(s.message(),
            "cannot append record 0 to the journal of sweep 's' (experiment 3) in the tracking "
            "store at http://fake (tried for 0.3 s): POST /api/cohort/sweeps/journal/append: "
            "refused; the sweep stops with its state in the store: start it again when the "
            "server answers");
  // Records, then tries at 0 s, 0.1 s and 0.3 s (the deadline): retried till then.
  EXPECT_GE(server.calls, 1 + 2);
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(300));
  EXPECT_TRUE(server.stored.empty());
}

TEST(StoreJournal, ASecondControllersAppendIsRefusedAtOnce) {
  FakeServer server;
  auto journal = Open(&server);
  server.stored = {"the other controller's record"};
  const int calls = server.calls;
  Status s = journal->Append("mine");
  EXPECT_EQ(s.code(), Status::Code::kAlreadyExists);
  EXPECT_EQ(s.message(),
            "cannot append record 0 to the journal of sweep 's' (experiment 3) in the tracking "
            "store at http://fake: POST /api/cohort/sweeps/journal/append: "
            "RESOURCE_ALREADY_EXISTS: record taken");
  EXPECT_EQ(server.calls, calls + 1);  // not retried
  EXPECT_EQ(server.stored, (std::vector<std::string>{"the other controller's record"}));
}

TEST(StoreJournal, AGarbledAnswerIsAnErrorNotACrash) {
  FakeServer server;
  auto journal = Open(&server);
  server.faults = {Fault::kGarbage};
  auto records = journal->Records();
  ASSERT_FALSE(records.ok());
  EXPECT_EQ(records.status().message(),
            "cannot read the journal of sweep 's' (experiment 3) in the tracking store at "
            "http://fake: the answer is not {\"records\": [strings]}");
}

}  // namespace
}  // namespace cohort::sweep
