// The engine/caller ordering contract (gpu/stream_ordering.h) against the
// fake CUDA API, whose streams are queues run in a random interleaving per
// seed: with Enter and Join every interleaving orders the caller's work,
// the engine's and the caller's next; without either some interleaving
// breaks it (so the check can fail); events are reused only once safe.
#include "gpu/stream_ordering.h"

#include <gtest/gtest.h>

#include <vector>

#include "support/fake_cuda.h"

namespace cohort::gpu {
namespace {

using testing::FakeCuda;
using testing::FakeCudaOptions;

FakeCudaOptions Random() {
  FakeCudaOptions o;
  o.policy = FakeCudaOptions::Policy::kRandom;
  return o;
}

struct Round {
  int produced = 0;  // the caller's kernel output (a gradient)
  int reduced = 0;   // the engine's copy of it (the collective)
  int consumed = 0;  // the caller's next kernel's input (the optimizer)
};

// One step of the contract: produce on the caller's stream, reduce on the
// engine's, consume on the caller's; `enter`/`join` switch the two halves.
void Step(FakeCuda& cuda, StreamOrdering& ordering, StreamHandle caller, StreamHandle engine,
          Round& r, int value, bool enter, bool join, std::vector<Completion>& keep) {
  ASSERT_TRUE(cuda.Enqueue(caller, [&r, value] { r.produced = value; }).ok());
  if (enter) {
    ASSERT_TRUE(ordering.Enter(caller).ok());
  }
  ASSERT_TRUE(cuda.Enqueue(engine, [&r] { r.reduced = r.produced; }).ok());
  Result<Completion> done = ordering.Leave();
  ASSERT_TRUE(done.ok());
  if (join) {
    ASSERT_TRUE(ordering.Join(*done, caller).ok());
  }
  ASSERT_TRUE(cuda.Enqueue(caller, [&r] { r.consumed = r.reduced; }).ok());
  keep.push_back(std::move(*done));
}

// Runs `rounds` steps queued all at once, in a random interleaving per seed;
// returns how many seeds broke the order.
int BrokenSeeds(bool enter, bool join, int rounds, int seeds) {
  int broken = 0;
  for (int seed = 0; seed < seeds; ++seed) {
    FakeCuda cuda(Random());
    StreamHandle caller = *cuda.CreateStream();
    StreamHandle engine = *cuda.CreateStream();
    StreamOrdering ordering(cuda, engine);
    std::vector<Round> r(rounds);
    std::vector<Completion> keep;
    for (int i = 0; i < rounds; ++i)
      Step(cuda, ordering, caller, engine, r[i], i + 1, enter, join, keep);
    EXPECT_TRUE(cuda.RunRandomly(seed).ok());
    bool ok = true;
    for (int i = 0; i < rounds; ++i) ok = ok && r[i].reduced == i + 1 && r[i].consumed == i + 1;
    broken += ok ? 0 : 1;
  }
  return broken;
}

TEST(StreamOrdering, EveryInterleavingKeepsCallerEngineCallerOrder) {
  EXPECT_EQ(BrokenSeeds(true, true, 1, 300), 0);
  EXPECT_EQ(BrokenSeeds(true, true, 8, 300), 0);
}

TEST(StreamOrdering, WithoutEnterOrJoinSomeInterleavingBreaksIt) {
  EXPECT_GT(BrokenSeeds(false, true, 1, 300), 0);
  EXPECT_GT(BrokenSeeds(true, false, 1, 300), 0);
}

// Completions released as each step is consumed: the pool reuses events,
// and a reused event never lets a later wait pass early.
TEST(StreamOrdering, EventsAreReusedSafely) {
  for (int seed = 0; seed < 100; ++seed) {
    FakeCuda cuda(Random());
    StreamHandle caller = *cuda.CreateStream();
    StreamHandle engine = *cuda.CreateStream();
    StreamOrdering ordering(cuda, engine);
    std::vector<Round> r(50);
    for (int i = 0; i < 50; ++i) {
      std::vector<Completion> keep;
      Step(cuda, ordering, caller, engine, r[i], i + 1, true, true, keep);
      // `keep` goes out of scope: the completion's event returns to the pool.
    }
    ASSERT_TRUE(cuda.RunRandomly(seed).ok());
    for (int i = 0; i < 50; ++i) {
      ASSERT_EQ(r[i].consumed, i + 1) << "seed " << seed << " round " << i;
    }
    EXPECT_LE(ordering.events_created(), 2u);
  }
}

TEST(StreamOrdering, DoneAndWait) {
  FakeCuda cuda(Random());
  StreamHandle engine = *cuda.CreateStream();
  StreamOrdering ordering(cuda, engine);
  int ran = 0;
  ASSERT_TRUE(cuda.Enqueue(engine, [&ran] { ran = 1; }).ok());
  Result<Completion> done = ordering.Leave();
  ASSERT_TRUE(done.ok());
  EXPECT_FALSE(*ordering.Done(*done));
  // Nothing runs the fake's queue here: the bounded wait times out.
  Status waited = ordering.Wait(*done, Deadline::AfterSeconds(0.2));
  EXPECT_EQ(waited.code(), Status::Code::kTimeout);
  EXPECT_EQ(waited.message().rfind("timed out after 0.", 0), 0u) << waited.message();
  EXPECT_NE(waited.message().find(" s waiting for the GPU to finish a collective"),
            std::string::npos)
      << waited.message();
  ASSERT_TRUE(cuda.RunRandomly(1).ok());
  EXPECT_TRUE(*ordering.Done(*done));
  EXPECT_TRUE(ordering.Wait(*done, Deadline::AfterSeconds(1)).ok());
  EXPECT_EQ(ran, 1);
}

TEST(StreamOrdering, OneStreamNeedsNoEvents) {
  FakeCuda cuda;
  StreamHandle engine = *cuda.CreateStream();
  StreamOrdering ordering(cuda, engine);
  EXPECT_TRUE(ordering.Enter(engine).ok());
  EXPECT_EQ(ordering.events_created(), 0u);
  Completion empty;
  EXPECT_EQ(ordering.Join(empty, engine).code(), Status::Code::kInvalidArgument);
}

}  // namespace
}  // namespace cohort::gpu
