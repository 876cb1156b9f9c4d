// Negotiation: agreement, validation and fusion of named tensor requests.
#include "engine/negotiation.h"

#include <algorithm>
#include <sstream>

namespace cohort {
namespace {

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// "rank 0: float32; ranks 1, 2: float16" — ranks grouped by the value they passed.
template <typename F>
std::string DescribeByRank(const std::vector<Announcement>& by_rank, const std::vector<int>& names,
                           F value_of) {
  std::vector<std::pair<std::string, std::vector<int>>> groups;
  for (int r = 0; r < static_cast<int>(by_rank.size()); ++r) {
    std::string v = value_of(by_rank[r]);
    const int name = r < static_cast<int>(names.size()) ? names[r] : r;
    auto it = std::find_if(groups.begin(), groups.end(), [&](auto& g) { return g.first == v; });
    if (it == groups.end()) {
      groups.push_back({v, {name}});
    } else {
      it->second.push_back(name);
    }
  }
  std::ostringstream out;
  for (size_t g = 0; g < groups.size(); ++g) {
    out << (g ? "; " : "") << (groups[g].second.size() > 1 ? "ranks " : "rank ");
    for (size_t i = 0; i < groups[g].second.size(); ++i) {
      out << (i ? ", " : "") << groups[g].second[i];
    }
    out << ": " << groups[g].first;
  }
  return out.str();
}

template <typename F>
bool AllSame(const std::vector<Announcement>& by_rank, F value_of) {
  const auto first = value_of(by_rank[0]);
  for (size_t r = 1; r < by_rank.size(); ++r) {
    if (value_of(by_rank[r]) != first) return false;
  }
  return true;
}

// Whether every rank announced what rank 0 did in every field Validate
// compares: the common case, decided without building any text (a step
// validates one announcement per tensor per rank, issue 11 item 17).
bool Identical(const std::vector<Announcement>& by_rank) {
  const Announcement& first = by_rank[0];
  for (const Announcement& x : by_rank) {
    if (x.kind != first.kind || x.dtype != first.dtype || x.op != first.op ||
        x.root != first.root || x.prescale != first.prescale || x.postscale != first.postscale ||
        x.compression != first.compression || x.on_device != first.on_device ||
        x.shape != first.shape || x.splits != first.splits || x.set_members != first.set_members ||
        x.set_id != first.set_id) {
      return false;
    }
  }
  return true;
}

}  // namespace

bool NegotiationTable::IsComplete(const Entry& e) const {
  for (int r = 0; r < size_; ++r) {
    if (!e.present[r] && !joined_[r]) return false;
  }
  return true;
}

void NegotiationTable::ApplyJoin(int rank) {
  joined_[rank] = true;
  last_joined_ = rank;
  // Names that only this rank (and other joined ones) were missing are ready now.
  std::vector<std::pair<uint64_t, std::string>> now_complete;
  for (const auto& [name, e] : entries_) {
    if (IsComplete(e)) now_complete.push_back({e.order, name});
  }
  std::sort(now_complete.begin(), now_complete.end());
  for (const auto& [order, name] : now_complete) Complete(name);
  if (std::find(joined_.begin(), joined_.end(), false) != joined_.end()) return;
  // Everyone has joined: the join completes everywhere and the next epoch starts.
  Ready join{kJoinName, std::vector<Announcement>(size_), {}, last_joined_};
  for (Announcement& a : join.by_rank) {
    a.name = kJoinName;
    a.kind = RequestKind::kJoin;
  }
  ready_.push_back(std::move(join));
  joined_.assign(size_, false);
}

void NegotiationTable::Apply(const std::vector<std::vector<Announcement>>& per_rank) {
  for (int r = 0; r < static_cast<int>(per_rank.size()); ++r) {
    for (const Announcement& a : per_rank[r]) {
      if (a.kind == RequestKind::kJoin) {
        ApplyJoin(r);
        continue;
      }
      Entry& e = entries_[a.name];
      if (e.present.empty()) {
        e.by_rank.resize(size_);
        e.present.assign(size_, false);
        e.order = next_order_++;
        e.first_seen = Clock::now();
      }
      // A rank cannot announce a name twice: Enqueue refuses names in flight.
      e.by_rank[r] = a;
      e.present[r] = true;
      ++e.arrived;
      if (IsComplete(e)) Complete(a.name);
    }
  }
}

void NegotiationTable::Complete(const std::string& name) {
  auto it = entries_.find(name);
  Entry& e = it->second;
  Ready ready{name, std::move(e.by_rank), {}, -1};
  const int submitter =
      static_cast<int>(std::find(e.present.begin(), e.present.end(), true) - e.present.begin());
  for (int r = 0; r < size_; ++r) {
    if (e.present[r]) continue;
    ready.by_rank[r] = ready.by_rank[submitter];  // a joined rank stands in with the same shape
    ready.joined.push_back(r);
  }
  entries_.erase(it);
  const Announcement& first = ready.by_rank[0];
  if (first.group_id == 0 || first.group_size <= 1) {
    ready_.push_back(std::move(ready));
    return;
  }
  // A group is released only when all its members are ready everywhere, so
  // its tensors are negotiated and reduced together.
  std::vector<Ready>& members = groups_[first.group_id];
  const uint32_t group_size = first.group_size;
  members.push_back(std::move(ready));
  if (members.size() < group_size) return;
  for (Ready& m : members) ready_.push_back(std::move(m));
  groups_.erase(first.group_id);
}

Status NegotiationTable::Validate(const Ready& ready) const {
  const std::vector<Announcement>& a = ready.by_rank;
  // Identical announcements pass every check below except a broadcast's
  // root range and the joined-ranks rule, so only those cases go on.
  if (ready.joined.empty() && a[0].kind != RequestKind::kBroadcast && Identical(a)) {
    return Status::OK();
  }
  const std::string what = "tensor '" + ready.name + "'";
  auto mismatch = [&](const std::string& field, auto value_of) {
    return Status::Mismatch(what + ": ranks disagree on the " + field + ": " +
                            DescribeByRank(a, names_, value_of));
  };
  auto kind = [](const Announcement& x) { return std::string(RequestKindName(x.kind)); };
  if (!AllSame(a, kind)) return mismatch("operation", kind);
  auto dtype = [](const Announcement& x) { return std::string(DataTypeName(x.dtype)); };
  if (!AllSame(a, dtype)) return mismatch("data type", dtype);
  auto memory = [](const Announcement& x) { return std::string(x.on_device ? "GPU" : "host"); };
  if (!AllSame(a, memory)) return mismatch("memory the tensor is in", memory);
  const RequestKind k = a[0].kind;
  if (!ready.joined.empty() && k != RequestKind::kAllreduce) {
    std::string ranks;
    for (int r : ready.joined) {
      ranks += (ranks.empty() ? "" : ", ") +
               std::to_string(r < static_cast<int>(names_.size()) ? names_[r] : r);
    }
    return Status::InvalidArgument(what + " (" + RequestKindName(k) + "): rank(s) " + ranks +
                                   " have joined; only allreduce runs while ranks are joined");
  }
  if (k == RequestKind::kAddProcessSet) {
    auto members = [](const Announcement& x) {
      return ShapeText(std::vector<int64_t>(x.set_members.begin(), x.set_members.end()));
    };
    if (!AllSame(a, members)) return mismatch("member ranks of the new process set", members);
  }
  if (k == RequestKind::kRemoveProcessSet) {
    auto id = [](const Announcement& x) { return std::to_string(x.set_id); };
    if (!AllSame(a, id)) return mismatch("process set to remove", id);
  }
  if (k == RequestKind::kReduceScatter) {
    auto splits = [](const Announcement& x) { return ShapeText(x.splits); };
    if (!AllSame(a, splits)) return mismatch("rows per rank", splits);
  }
  if (k == RequestKind::kAllreduce || k == RequestKind::kReduceScatter) {
    auto op = [](const Announcement& x) { return std::string(ReduceOpName(x.op)); };
    if (!AllSame(a, op)) return mismatch("reduce op", op);
    auto scales = [](const Announcement& x) {
      std::ostringstream s;
      s << "prescale " << x.prescale << ", postscale " << x.postscale;
      return s.str();
    };
    if (!AllSame(a, scales)) return mismatch("scale factors", scales);
    auto compression = [](const Announcement& x) {
      static const char* const kNames[] = {"none", "float16", "bfloat16"};
      return std::string(x.compression >= 0 && x.compression < 3 ? kNames[x.compression] : "?");
    };
    if (!AllSame(a, compression)) return mismatch("compression", compression);
  }
  if (k == RequestKind::kBroadcast) {
    auto root = [](const Announcement& x) { return std::to_string(x.root); };
    if (!AllSame(a, root)) return mismatch("root", root);
    if (a[0].root < 0 || a[0].root >= size_) {
      return Status::InvalidArgument(
          what + ": broadcast root " + std::to_string(a[0].root) +
          (names_.empty() ? " is not a rank of this job" : " is not a rank of its process set"));
    }
  }
  if (k == RequestKind::kAllgather || k == RequestKind::kAlltoall) {
    // All dimensions but the first must agree; the first may differ per rank.
    auto rank_of = [](const Announcement& x) { return std::to_string(x.shape.size()); };
    if (!AllSame(a, rank_of)) return mismatch("number of dimensions", rank_of);
    auto tail = [](const Announcement& x) {
      std::vector<int64_t> t(x.shape.begin() + (x.shape.empty() ? 0 : 1), x.shape.end());
      return "[*" + ShapeText(t).substr(1);
    };
    if (!AllSame(a, tail)) return mismatch("shape beyond the first dimension", tail);
  } else if (k != RequestKind::kBarrier) {
    auto shape = [](const Announcement& x) { return ShapeText(x.shape); };
    if (!AllSame(a, shape)) return mismatch("shape", shape);
  }
  return Status::OK();
}

std::vector<Response> NegotiationTable::TakeResponses(uint64_t fusion_threshold_bytes,
                                                      uint64_t max_fused_tensor_bytes) {
  std::vector<Response> out;
  uint64_t fused_bytes = 0;
  while (!ready_.empty()) {
    Ready ready = std::move(ready_.front());
    ready_.pop_front();
    const Announcement& a = ready.by_rank[0];
    Response r;
    r.kind = a.kind;
    r.names = {ready.name};
    r.what = {a};
    r.last_joined_rank = ready.last_joined_rank;
    r.error = a.kind == RequestKind::kJoin ? Status::OK() : Validate(ready);
    if (r.error.ok() && a.kind == RequestKind::kAllgather) {
      for (const Announcement& x : ready.by_rank) {
        r.rows_per_rank.push_back(x.shape.empty() ? 1 : x.shape[0]);
      }
    }
    if (r.error.ok() && a.kind == RequestKind::kAlltoall) {
      for (const Announcement& x : ready.by_rank) r.splits_by_rank.push_back(x.splits);
    }
    const uint64_t bytes = a.elements() * DataTypeSize(a.dtype);
    const bool fusable = r.error.ok() && a.kind == RequestKind::kAllreduce &&
                         fusion_threshold_bytes > 0 && bytes <= max_fused_tensor_bytes;
    if (fusable && !out.empty() && last_fusable_ok_) {
      Response& last = out.back();
      // Fusable: the previous response is a valid allreduce with identical
      // dtype, op, scales and memory (remembered in last_fusable_), and the sum fits.
      if (last.error.ok() && last.kind == RequestKind::kAllreduce &&
          fused_bytes + bytes <= fusion_threshold_bytes && last.rows_per_rank.empty()) {
        const Announcement& prev = last_fusable_;
        if (prev.dtype == a.dtype && prev.op == a.op && prev.prescale == a.prescale &&
            prev.postscale == a.postscale && prev.compression == a.compression &&
            prev.on_device == a.on_device) {
          last.names.push_back(ready.name);
          last.what.push_back(a);
          fused_bytes += bytes;
          continue;
        }
      }
    }
    fused_bytes = bytes;
    last_fusable_ = a;
    last_fusable_ok_ = fusable;
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<std::pair<std::string, std::vector<int>>> NegotiationTable::Waiting() const {
  return WaitingLongerThan(std::chrono::duration<double>(0));
}

std::vector<std::pair<std::string, std::vector<int>>> NegotiationTable::WaitingLongerThan(
    std::chrono::duration<double> age) const {
  const Clock::time_point now = Clock::now();
  std::vector<std::pair<uint64_t, std::pair<std::string, std::vector<int>>>> waiting;
  for (const auto& [name, e] : entries_) {
    if (now - e.first_seen < age) continue;
    std::vector<int> missing;
    for (int r = 0; r < size_; ++r) {
      if (!e.present[r]) missing.push_back(r);
    }
    waiting.push_back({e.order, {name, missing}});
  }
  std::sort(waiting.begin(), waiting.end());
  std::vector<std::pair<std::string, std::vector<int>>> out;
  for (auto& w : waiting) out.push_back(std::move(w.second));
  return out;
}

}  // namespace cohort
