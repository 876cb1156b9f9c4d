// Unit tests of negotiation without processes: the NegotiationTable's
// agreement (a name is ready once every rank announced it, in first-submitted
// order), its validation (disagreements fail the name on every rank, naming
// the ranks), its fusion rules, and the cycle message's wire format.
#include "engine/negotiation.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace cohort {
namespace {

Announcement Allreduce(const std::string& name, int64_t n, DataType dtype = DataType::kFloat32) {
  Announcement a;
  a.name = name;
  a.shape = {n};
  a.dtype = dtype;
  return a;
}

std::vector<std::string> Names(const std::vector<Response>& responses) {
  std::vector<std::string> out;
  for (const Response& r : responses) {
    std::string joined;
    for (const std::string& n : r.names) joined += (joined.empty() ? "" : "+") + n;
    out.push_back(joined);
  }
  return out;
}

constexpr uint64_t kNoFusion = 0;

TEST(NegotiationTable, ANameIsReadyOnlyOnceEveryRankAnnouncedIt) {
  NegotiationTable table(3);
  table.Apply({{Allreduce("a", 4)}, {Allreduce("a", 4)}, {}});
  EXPECT_TRUE(table.TakeResponses(kNoFusion, 0).empty());
  ASSERT_EQ(table.Waiting().size(), 1u);
  EXPECT_EQ(table.Waiting()[0].first, "a");
  EXPECT_EQ(table.Waiting()[0].second, std::vector<int>{2});
  table.Apply({{}, {}, {Allreduce("a", 4)}});
  std::vector<Response> ready = table.TakeResponses(kNoFusion, 0);
  EXPECT_EQ(Names(ready), std::vector<std::string>{"a"});
  EXPECT_TRUE(ready[0].error.ok());
  EXPECT_TRUE(table.Waiting().empty());
  EXPECT_TRUE(table.empty());
}

TEST(NegotiationTable, EveryRankComputesTheSameOrderWhateverOrderItSubmittedIn) {
  // Rank 0 submits a then b, rank 1 b then a. Every rank applies the same
  // messages in rank order, so a name is ready when its last announcement is
  // applied: b (completed by rank 1's first) before a.
  const std::vector<std::vector<Announcement>> cycle = {{Allreduce("a", 4), Allreduce("b", 4)},
                                                        {Allreduce("b", 4), Allreduce("a", 4)}};
  NegotiationTable on_rank0(2), on_rank1(2);
  on_rank0.Apply(cycle);
  on_rank1.Apply(cycle);
  const std::vector<std::string> order = Names(on_rank0.TakeResponses(kNoFusion, 0));
  EXPECT_EQ(order, (std::vector<std::string>{"b", "a"}));
  EXPECT_EQ(Names(on_rank1.TakeResponses(kNoFusion, 0)), order);
}

// Validate's shortcut for identical announcements must not let through a
// difference in any field it compares: each field, changed on rank 1 alone,
// fails the name and is named.
TEST(NegotiationTable, EveryComparedFieldThatDiffersFailsTheName) {
  struct Case {
    const char* field;
    void (*change)(Announcement*);
  };
  const Case cases[] = {
      {"operation", [](Announcement* a) { a->kind = RequestKind::kBroadcast; }},
      {"data type", [](Announcement* a) { a->dtype = DataType::kInt32; }},
      {"reduce op", [](Announcement* a) { a->op = ReduceOp::kMax; }},
      {"scale factors", [](Announcement* a) { a->prescale = 0.5; }},
      {"scale factors", [](Announcement* a) { a->postscale = 2; }},
      {"compression", [](Announcement* a) { a->compression = 1; }},
      {"memory the tensor is in", [](Announcement* a) { a->on_device = true; }},
      {"shape",
       [](Announcement* a) {
         a->shape = {2, 2};
       }},
  };
  for (const Case& c : cases) {
    NegotiationTable table(3);
    Announcement changed = Allreduce("t", 4);
    c.change(&changed);
    table.Apply({{Allreduce("t", 4)}, {changed}, {Allreduce("t", 4)}});
    std::vector<Response> ready = table.TakeResponses(kNoFusion, 0);
    ASSERT_EQ(ready.size(), 1u) << c.field;
    EXPECT_EQ(ready[0].error.code(), Status::Code::kMismatch) << c.field;
    EXPECT_NE(ready[0].error.message().find(std::string("disagree on the ") + c.field),
              std::string::npos)
        << c.field << ": " << ready[0].error.message();
  }
  // Reduce-scatter's rows per rank, and a broadcast root out of range even
  // when every rank agrees on it.
  NegotiationTable table(2);
  Announcement even = Allreduce("rs", 4), uneven = Allreduce("rs", 4);
  even.kind = uneven.kind = RequestKind::kReduceScatter;
  uneven.splits = {1, 3};
  table.Apply({{even}, {uneven}});
  std::vector<Response> ready = table.TakeResponses(kNoFusion, 0);
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_NE(ready[0].error.message().find("rows per rank"), std::string::npos)
      << ready[0].error.message();
  Announcement root = Allreduce("b", 4);
  root.kind = RequestKind::kBroadcast;
  root.root = 5;
  table.Apply({{root}, {root}});
  ready = table.TakeResponses(kNoFusion, 0);
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_NE(ready[0].error.message().find("broadcast root 5"), std::string::npos)
      << ready[0].error.message();
}

TEST(NegotiationTable, DisagreementFailsTheNameNamingTheRanks) {
  NegotiationTable table(3);
  table.Apply({{Allreduce("w", 3)}, {Allreduce("w", 3)}, {Allreduce("w", 4)}});
  std::vector<Response> ready = table.TakeResponses(kNoFusion, 0);
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0].error.code(), Status::Code::kMismatch);
  EXPECT_NE(ready[0].error.message().find("ranks 0, 1: [3]; rank 2: [4]"), std::string::npos)
      << ready[0].error.message();
  EXPECT_NE(ready[0].error.message().find("'w'"), std::string::npos) << ready[0].error.message();

  table.Apply({{Allreduce("d", 3)}, {Allreduce("d", 3, DataType::kFloat64)}, {Allreduce("d", 3)}});
  ready = table.TakeResponses(kNoFusion, 0);
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_NE(ready[0].error.message().find("float64"), std::string::npos)
      << ready[0].error.message();
}

TEST(NegotiationTable, MessagesNameRanksByTheirJobRanks) {
  // A process set of job ranks 4 and 7: positions 0 and 1 in the table.
  NegotiationTable table(2, {4, 7});
  table.Apply({{Allreduce("s", 2)}, {}});
  ASSERT_EQ(table.Waiting().size(), 1u);
  EXPECT_EQ(table.Waiting()[0].second, std::vector<int>{1});  // positions, for the engine
  table.Apply({{}, {Allreduce("s", 5)}});
  std::vector<Response> ready = table.TakeResponses(kNoFusion, 0);
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_NE(ready[0].error.message().find("rank 4: [2]; rank 7: [5]"), std::string::npos)
      << ready[0].error.message();
}

TEST(NegotiationTable, SmallAllreducesOfOneKindAreFusedWithinTheThreshold) {
  NegotiationTable table(2);
  const std::vector<Announcement> mine = {
      Allreduce("a", 16),
      Allreduce("b", 16),                      // fused: 64 + 64 bytes
      Allreduce("c", 16, DataType::kFloat64),  // another dtype: alone
      Allreduce("big", 1 << 20),               // larger than a fused tensor
      Allreduce("d", 16),
      Allreduce("e", 16),
      Allreduce("f", 16)};  // 192 bytes: 2 + 1
  table.Apply({mine, mine});
  const uint64_t threshold = 128, max_fused_tensor = 1024;
  EXPECT_EQ(Names(table.TakeResponses(threshold, max_fused_tensor)),
            (std::vector<std::string>{"a+b", "c", "big", "d+e", "f"}));
}

TEST(NegotiationTable, GpuAndHostTensorsAreNeverFusedTogether) {
  NegotiationTable table(2);
  Announcement gpu_b = Allreduce("b", 16), gpu_c = Allreduce("c", 16);
  gpu_b.on_device = gpu_c.on_device = true;
  const std::vector<Announcement> mine = {Allreduce("a", 16), gpu_b, gpu_c, Allreduce("d", 16)};
  table.Apply({mine, mine});
  EXPECT_EQ(Names(table.TakeResponses(1024, 1024)), (std::vector<std::string>{"a", "b+c", "d"}));
}

TEST(NegotiationTable, ZeroThresholdDisablesFusion) {
  NegotiationTable table(2);
  const std::vector<Announcement> mine = {Allreduce("a", 4), Allreduce("b", 4)};
  table.Apply({mine, mine});
  EXPECT_EQ(Names(table.TakeResponses(kNoFusion, 1024)), (std::vector<std::string>{"a", "b"}));
}

TEST(CycleMessage, RoundTripsEveryAnnouncementField) {
  CycleMessage m;
  Announcement a = Allreduce("grad.layer3.weight", 12, DataType::kBFloat16);
  a.kind = RequestKind::kAlltoall;
  a.op = ReduceOp::kMax;
  a.root = 3;
  a.prescale = 0.5;
  a.postscale = 2.5;
  a.compression = 1;
  a.on_device = true;
  a.shape = {3, 4};
  a.splits = {1, 2};
  a.group_id = 77;
  a.group_size = 5;
  m.announcements = {a, Allreduce("", 0)};
  m.shutdown = true;
  CycleMessage back;
  ASSERT_TRUE(DecodeCycleMessage(EncodeCycleMessage(m), &back));
  ASSERT_EQ(back.announcements.size(), 2u);
  const Announcement& b = back.announcements[0];
  EXPECT_EQ(b.name, a.name);
  EXPECT_EQ(b.kind, a.kind);
  EXPECT_EQ(b.dtype, a.dtype);
  EXPECT_EQ(b.op, a.op);
  EXPECT_EQ(b.root, a.root);
  EXPECT_EQ(b.prescale, a.prescale);
  EXPECT_EQ(b.postscale, a.postscale);
  EXPECT_EQ(b.compression, a.compression);
  EXPECT_TRUE(b.on_device);
  EXPECT_FALSE(back.announcements[1].on_device);
  EXPECT_EQ(b.shape, a.shape);
  EXPECT_EQ(b.splits, a.splits);
  EXPECT_EQ(b.group_id, a.group_id);
  EXPECT_EQ(b.group_size, a.group_size);
  EXPECT_TRUE(back.shutdown);
}

TEST(CycleMessage, StuckWaitsRoundTrip) {
  CycleMessage m;
  m.stuck = {StuckWait{0, "barrier.noname", RequestKind::kBarrier, {1}},
             StuckWait{3, "grad.w", RequestKind::kAllreduce, {0, 2}}};
  CycleMessage back;
  ASSERT_TRUE(DecodeCycleMessage(EncodeCycleMessage(m), &back));
  ASSERT_EQ(back.stuck.size(), 2u);
  EXPECT_EQ(back.stuck[0].name, "barrier.noname");
  EXPECT_EQ(back.stuck[0].kind, RequestKind::kBarrier);
  EXPECT_EQ(back.stuck[0].missing, (std::vector<int32_t>{1}));
  EXPECT_EQ(back.stuck[1].set, 3);
  EXPECT_EQ(back.stuck[1].missing, (std::vector<int32_t>{0, 2}));
}

TEST(CycleMessage, ProcessSetChangesCarryTheirOwnFields) {
  Announcement add = Allreduce("add_process_set.0", 0, DataType::kUInt8);
  add.kind = RequestKind::kAddProcessSet;
  add.set_members = {0, 2, 5};
  Announcement remove = Allreduce("remove_process_set.0", 0, DataType::kUInt8);
  remove.kind = RequestKind::kRemoveProcessSet;
  remove.set_id = 4;
  CycleMessage m;
  m.announcements = {add, remove};
  CycleMessage back;
  ASSERT_TRUE(DecodeCycleMessage(EncodeCycleMessage(m), &back));
  ASSERT_EQ(back.announcements.size(), 2u);
  EXPECT_EQ(back.announcements[0].set_members, (std::vector<int32_t>{0, 2, 5}));
  EXPECT_TRUE(back.announcements[0].splits.empty()) << "members are not rows per rank";
  EXPECT_EQ(back.announcements[1].set_id, 4);
  EXPECT_EQ(back.announcements[1].root, 0) << "the set id is not a root";

  // Two ranks adding different sets disagree on the members, named as such.
  Announcement other = add;
  other.set_members = {0, 2};
  NegotiationTable table(2);
  table.Apply({{add}, {other}});
  const std::vector<Response> responses = table.TakeResponses(kNoFusion, 0);
  ASSERT_EQ(responses.size(), 1u);
  EXPECT_NE(responses[0].error.message().find("member ranks of the new process set"),
            std::string::npos)
      << responses[0].error.message();
}

TEST(CycleMessage, EveryTruncationIsRejected) {
  CycleMessage m;
  Announcement add = Allreduce("s", 0, DataType::kUInt8);
  add.kind = RequestKind::kAddProcessSet;
  add.set_members = {1, 3};
  m.announcements = {Allreduce("a", 4), Allreduce("bb", 8), add};
  m.stalled = {"x"};
  m.stuck = {StuckWait{2, "w", RequestKind::kBarrier, {0, 3}}};
  const std::string bytes = EncodeCycleMessage(m);
  for (size_t n = 0; n < bytes.size(); ++n) {
    CycleMessage back;
    EXPECT_FALSE(DecodeCycleMessage(bytes.substr(0, n), &back))
        << "accepted " << n << " of " << bytes.size() << " bytes";
  }
}

}  // namespace
}  // namespace cohort
