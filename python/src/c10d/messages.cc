// ProcessGroupCohort's send/recv: messages on cohort's point-to-point mesh
// (cohort.h, "Point-to-point messages"), one channel per group, so a tag
// means the same in every group. The library's progress thread moves the
// bytes; a Work here waits for the message's handle like a collective's.
#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <memory>

#include "c10d/process_group.h"
#include "cohort/c_api.h"

namespace cohort_c10d {
namespace {

void CheckOneCpuTensor(const std::vector<at::Tensor>& tensors, const char* what) {
  TORCH_CHECK(tensors.size() == 1, "cohort ", what, ": expected 1 tensor per process, got ",
              tensors.size());
  TORCH_CHECK(tensors[0].device().is_cpu() && tensors[0].layout() == at::kStrided, "cohort ", what,
              ": the tensor must be a dense CPU tensor");
}

}  // namespace

void ProcessGroupCohort::CheckPeer(int peer, const char* what) const {
  TORCH_CHECK(peer >= 0 && peer < size_ && peer != rank_, "cohort ", what, ": bad ",
              what[0] == 's' ? "destination" : "source", " rank ", peer, " (group of ", size_,
              ", this rank ", rank_, ")");
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCohort::send(std::vector<at::Tensor>& tensors, int dst,
                                                        int tag) {
  CheckOneCpuTensor(tensors, "send");
  CheckPeer(dst, "send");
  at::Tensor data = tensors[0].contiguous();
  int64_t handle = 0;
  cohort_error err;
  if (cohort_send_async(global_ranks_[dst], channel_, tag, data.data_ptr(), data.nbytes(),
                        TimeoutSeconds(), &handle, &err) != COHORT_OK) {
    ThrowCohortError("send", err.message);
  }
  return Enqueue(
      c10d::OpType::SEND, tensors, {handle}, [data] {}, "send", kMessageWaitSlack);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCohort::recv(std::vector<at::Tensor>& tensors, int src,
                                                        int tag) {
  CheckOneCpuTensor(tensors, "recv");
  CheckPeer(src, "recv");
  return Receive(tensors, src, tag);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCohort::recvAnysource(std::vector<at::Tensor>& tensors,
                                                                 int tag) {
  CheckOneCpuTensor(tensors, "recv");
  return Receive(tensors, -1, tag);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCohort::Receive(std::vector<at::Tensor>& tensors,
                                                           int src, int tag) {
  at::Tensor target = tensors[0];
  at::Tensor buffer = target.is_contiguous() ? target : at::empty(target.sizes(), target.options());
  auto source = std::make_shared<int>(-1);  // the sender's job rank, once received
  int64_t handle = 0;
  cohort_error err;
  if (cohort_recv_async(src < 0 ? COHORT_ANY_SOURCE : global_ranks_[src], channel_, tag,
                        buffer.data_ptr(), buffer.nbytes(), TimeoutSeconds(), source.get(), &handle,
                        &err) != COHORT_OK) {
    ThrowCohortError("recv", err.message);
  }
  // The finish function sets the work's source rank: it runs while the work
  // is alive, through a pointer set once the work exists.
  auto self = std::make_shared<CohortWork*>(nullptr);
  const std::vector<int> group_ranks = global_ranks_;
  auto work = Enqueue(
      src < 0 ? c10d::OpType::RECVANYSOURCE : c10d::OpType::RECV, tensors, {handle},
      [target, buffer, source, self, group_ranks] {
        if (!buffer.is_same(target)) target.copy_(buffer);
        for (size_t r = 0; r < group_ranks.size(); ++r) {
          if (group_ranks[r] == *source) (*self)->set_source_rank(static_cast<int>(r));
        }
      },
      "recv", kMessageWaitSlack);
  *self = static_cast<CohortWork*>(work.get());
  if (src >= 0) (*self)->set_source_rank(src);
  return work;
}

}  // namespace cohort_c10d
