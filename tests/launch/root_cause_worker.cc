// Worker of LocalLauncher.ReportsTheRankThatFailedFirst: rank 1 publishes a
// failure record (abort/1), as a communicator does when a collective fails,
// and then hangs; rank 0 reacts to it by exiting 1 first; the others wait.
// `cohort run` must name rank 1, not rank 0, as the cause.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "net/socket.h"
#include "rendezvous/prefixed_store.h"
#include "rendezvous/store_client.h"

int main() {
  using namespace cohort;
  const char* rank_text = std::getenv("COHORT_RANK");
  const char* addr = std::getenv("COHORT_STORE_ADDR");
  const char* secret = std::getenv("COHORT_SECRET");
  if (rank_text == nullptr || addr == nullptr || secret == nullptr) {
    std::fprintf(stderr, "run me under cohort run\n");
    return 2;
  }
  std::string host;
  int port = 0;
  Status parsed = ParseHostPort(addr, "COHORT_STORE_ADDR", &host, &port);
  if (!parsed.ok()) return 2;
  Result<std::unique_ptr<StoreClient>> store =
      StoreClient::Connect(host, port, secret, Deadline::AfterSeconds(20));
  if (!store.ok()) {
    std::fprintf(stderr, "%s\n", store.status().ToString().c_str());
    return 2;
  }
  const int rank = std::atoi(rank_text);
  // Under this join's prefix, as the runtime publishes (rendezvous/prefixed_store.h).
  store = ScopeToThisJoin(std::move(store).value(), rank);
  if (!store.ok()) return 2;
  if (rank == 1) {
    if (!(*store)->Set("abort/1", "13\tallreduce 'grad': disk on fire\nsecond line").ok()) return 2;
  } else if (rank == 0) {
    Result<std::string> seen = (*store)->Get("abort/1", Deadline::AfterSeconds(20));
    return seen.ok() ? 1 : 2;
  }
  // Hang until the launcher stops the job.
  std::this_thread::sleep_for(std::chrono::seconds(60));
  return 0;
}
