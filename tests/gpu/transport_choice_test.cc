// gpu/transport/transport_choice.h over every combination of its facts, and
// gpu/transport/nccl_mapping.h for every dtype and op.
#include "gpu/transport/transport_choice.h"

#include <gtest/gtest.h>

#include "gpu/cuda_declarations.h"
#include "gpu/transport/nccl_mapping.h"

namespace cohort::gpu {
namespace {

// The expected automatic choice, written independently of the code: one
// rank is local work; NCCL needs it loaded everywhere and a GPU per rank;
// IPC needs one host where it works; staged runs anywhere.
GpuTransport ExpectedAuto(int ranks, int hosts, bool shared, bool nccl, bool ipc) {
  if (ranks == 1) return GpuTransport::kIpc;
  if (nccl && !shared) return GpuTransport::kNccl;
  if (hosts == 1 && ipc) return GpuTransport::kIpc;
  return GpuTransport::kStaged;
}

TEST(GpuTransportChoice, EveryCombination) {
  for (int ranks : {1, 2, 8}) {
    for (int hosts : {1, 2}) {
      if (hosts > ranks) continue;
      for (bool shared : {false, true}) {
        if (shared && ranks == 1) continue;
        for (bool nccl : {false, true}) {
          for (bool ipc : {false, true}) {
            TransportFacts f;
            f.ranks = ranks;
            f.hosts = hosts;
            f.shared_device = shared ? "ranks 0 and 1 share GPU x" : "";
            f.nccl_missing = nccl ? "" : "rank 0: NCCL not found (tried libnccl.so.2: no)";
            f.ipc_missing = ipc ? "" : "CUDA IPC failed: rank 1 could not map";
            SCOPED_TRACE(testing::Message() << ranks << " ranks, " << hosts << " hosts, shared "
                                            << shared << ", nccl " << nccl << ", ipc " << ipc);
            Result<GpuTransport> automatic = ChooseGpuTransport(f);
            ASSERT_TRUE(automatic.ok()) << automatic.status().ToString();
            EXPECT_EQ(*automatic, ExpectedAuto(ranks, hosts, shared, nccl, ipc));

            f.setting = GpuTransportSetting::kStaged;
            EXPECT_EQ(*ChooseGpuTransport(f), GpuTransport::kStaged);

            f.setting = GpuTransportSetting::kIpc;
            Result<GpuTransport> forced_ipc = ChooseGpuTransport(f);
            if (hosts > 1) {
              EXPECT_EQ(forced_ipc.status().message(),
                        "COHORT_GPU_TRANSPORT=ipc needs every rank on one host, but the job spans "
                        "2 hosts (use staged, or nccl)");
            } else if (!ipc) {
              EXPECT_EQ(forced_ipc.status().message(),
                        "COHORT_GPU_TRANSPORT=ipc, but CUDA IPC does not work here: CUDA IPC "
                        "failed: rank 1 could not map");
            } else {
              EXPECT_EQ(*forced_ipc, GpuTransport::kIpc);
            }

            f.setting = GpuTransportSetting::kNccl;
            Result<GpuTransport> forced_nccl = ChooseGpuTransport(f);
            if (!nccl) {
              EXPECT_EQ(forced_nccl.status().message(),
                        "COHORT_GPU_TRANSPORT=nccl, but rank 0: NCCL not found (tried "
                        "libnccl.so.2: no)");
            } else if (shared) {
              EXPECT_EQ(forced_nccl.status().message(),
                        "COHORT_GPU_TRANSPORT=nccl, but NCCL needs a GPU per rank and ranks 0 and "
                        "1 share GPU x (use ipc or staged)");
            } else {
              EXPECT_EQ(*forced_nccl, GpuTransport::kNccl);
            }
            if (!forced_nccl.ok()) {
              EXPECT_EQ(forced_nccl.status().code(), Status::Code::kInvalidArgument);
            }

            // Per call: Adasum always stages; a call NCCL cannot take runs
            // where the choice without NCCL would.
            for (GpuTransport job :
                 {GpuTransport::kIpc, GpuTransport::kNccl, GpuTransport::kStaged}) {
              EXPECT_EQ(TransportForCall(job, f, true, true), GpuTransport::kStaged);
              EXPECT_EQ(TransportForCall(job, f, true, false), job);
              const GpuTransport without = TransportForCall(job, f, false, false);
              if (job != GpuTransport::kNccl) {
                EXPECT_EQ(without, job);
              } else {
                EXPECT_EQ(without, ExpectedAuto(ranks, hosts, shared, false, ipc));
              }
            }
          }
        }
      }
    }
  }
}

TEST(GpuTransportChoice, Names) {
  EXPECT_STREQ(GpuTransportName(GpuTransport::kIpc), "ipc");
  EXPECT_STREQ(GpuTransportName(GpuTransport::kNccl), "nccl");
  EXPECT_STREQ(GpuTransportName(GpuTransport::kStaged), "staged");
}

TEST(NcclMapping, EveryDtypeAndOp) {
  EXPECT_EQ(NcclDataType(DataType::kUInt8), abi::ncclUint8);
  EXPECT_EQ(NcclDataType(DataType::kInt8), abi::ncclInt8);
  EXPECT_EQ(NcclDataType(DataType::kInt32), abi::ncclInt32);
  EXPECT_EQ(NcclDataType(DataType::kInt64), abi::ncclInt64);
  EXPECT_EQ(NcclDataType(DataType::kFloat16), abi::ncclFloat16);
  EXPECT_EQ(NcclDataType(DataType::kBFloat16), abi::ncclBfloat16);
  EXPECT_EQ(NcclDataType(DataType::kFloat32), abi::ncclFloat32);
  EXPECT_EQ(NcclDataType(DataType::kFloat64), abi::ncclFloat64);
  EXPECT_FALSE(NcclDataType(DataType::kInt16).has_value());
  EXPECT_FALSE(NcclDataType(DataType::kBool).has_value());
  EXPECT_EQ(NcclReduceOp(ReduceOp::kSum), abi::ncclSum);
  EXPECT_EQ(NcclReduceOp(ReduceOp::kAverage), abi::ncclSum);  // then cohort's finishing kernel
  EXPECT_EQ(NcclReduceOp(ReduceOp::kMin), abi::ncclMin);
  EXPECT_EQ(NcclReduceOp(ReduceOp::kMax), abi::ncclMax);
  EXPECT_EQ(NcclReduceOp(ReduceOp::kProduct), abi::ncclProd);
  EXPECT_FALSE(NcclReduceOp(ReduceOp::kAdasum).has_value());
  for (int t = 0; t < kNumDataTypes; ++t) {
    for (int o = 0; o < kNumReduceOps; ++o) {
      const DataType type = static_cast<DataType>(t);
      const ReduceOp op = static_cast<ReduceOp>(o);
      EXPECT_EQ(NcclTakesReduction(type, op),
                type != DataType::kInt16 && type != DataType::kBool && op != ReduceOp::kAdasum)
          << DataTypeName(type) << " " << ReduceOpName(op);
    }
  }
}

}  // namespace
}  // namespace cohort::gpu
