// Request helpers and the negotiation wire format (little-endian, packed):
//   u8 shutdown | u32 count | count x { u32 name_len | name | i32 kind | i32 dtype | i32 op |
//   i32 root | f64 prescale | f64 postscale | i32 compression | u8 on_device | u32 ndim | ndim x
//   i64 | u32 nsplits | nsplits x i64 | u64 group_id | u32 group_size [process-set changes only:
//   i32 set_id | u32 nmembers | nmembers x i32] } | u32 stalled | stalled x { u32 len | name } |
//   u32 cached_bytes | cached bit vector | u32 stuck | stuck x { i32 set | u32 len | name | i32
//   kind | u32 nmissing | nmissing x i32 }
#include "engine/request.h"

#include <cstring>

namespace cohort {
namespace {

template <typename T>
void Put(std::string* out, T v) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof(T));
  out->append(bytes, sizeof(T));
}

class Reader {
 public:
  explicit Reader(const std::string& bytes) : bytes_(bytes) {}
  template <typename T>
  bool Get(T* v) {
    if (pos_ + sizeof(T) > bytes_.size()) return false;
    std::memcpy(v, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool GetString(size_t len, std::string* s) {
    if (pos_ + len > bytes_.size()) return false;
    s->assign(bytes_, pos_, len);
    pos_ += len;
    return true;
  }
  bool AtEnd() const { return pos_ == bytes_.size(); }

 private:
  const std::string& bytes_;
  size_t pos_ = 0;
};

}  // namespace

const char* RequestKindName(RequestKind kind) {
  switch (kind) {
    case RequestKind::kAllreduce:
      return "allreduce";
    case RequestKind::kAllgather:
      return "allgather";
    case RequestKind::kBroadcast:
      return "broadcast";
    case RequestKind::kBarrier:
      return "barrier";
    case RequestKind::kReduceScatter:
      return "reducescatter";
    case RequestKind::kAlltoall:
      return "alltoall";
    case RequestKind::kJoin:
      return "join";
    case RequestKind::kAddProcessSet:
      return "add_process_set";
    case RequestKind::kRemoveProcessSet:
      return "remove_process_set";
  }
  return "unknown";
}

uint64_t Announcement::elements() const {
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

uint64_t Announcement::row_elements() const {
  uint64_t n = 1;
  for (size_t i = 1; i < shape.size(); ++i) n *= static_cast<uint64_t>(shape[i]);
  return n;
}

std::string EncodeCycleMessage(const CycleMessage& message) {
  std::string out;
  Put<uint8_t>(&out, message.shutdown ? 1 : 0);
  Put<uint32_t>(&out, static_cast<uint32_t>(message.announcements.size()));
  for (const Announcement& a : message.announcements) {
    Put<uint32_t>(&out, static_cast<uint32_t>(a.name.size()));
    out += a.name;
    Put<int32_t>(&out, static_cast<int32_t>(a.kind));
    Put<int32_t>(&out, static_cast<int32_t>(a.dtype));
    Put<int32_t>(&out, static_cast<int32_t>(a.op));
    Put<int32_t>(&out, a.root);
    Put<double>(&out, a.prescale);
    Put<double>(&out, a.postscale);
    Put<int32_t>(&out, a.compression);
    Put<uint8_t>(&out, a.on_device ? 1 : 0);
    Put<uint32_t>(&out, static_cast<uint32_t>(a.shape.size()));
    for (int64_t d : a.shape) Put<int64_t>(&out, d);
    Put<uint32_t>(&out, static_cast<uint32_t>(a.splits.size()));
    for (int64_t d : a.splits) Put<int64_t>(&out, d);
    Put<uint64_t>(&out, a.group_id);
    Put<uint32_t>(&out, a.group_size);
    if (IsProcessSetChange(a.kind)) {
      Put<int32_t>(&out, a.set_id);
      Put<uint32_t>(&out, static_cast<uint32_t>(a.set_members.size()));
      for (int32_t rank : a.set_members) Put<int32_t>(&out, rank);
    }
  }
  Put<uint32_t>(&out, static_cast<uint32_t>(message.stalled.size()));
  for (const std::string& name : message.stalled) {
    Put<uint32_t>(&out, static_cast<uint32_t>(name.size()));
    out += name;
  }
  Put<uint32_t>(&out, static_cast<uint32_t>(message.cached.size()));
  out.append(reinterpret_cast<const char*>(message.cached.data()), message.cached.size());
  Put<uint32_t>(&out, static_cast<uint32_t>(message.stuck.size()));
  for (const StuckWait& w : message.stuck) {
    Put<int32_t>(&out, w.set);
    Put<uint32_t>(&out, static_cast<uint32_t>(w.name.size()));
    out += w.name;
    Put<int32_t>(&out, static_cast<int32_t>(w.kind));
    Put<uint32_t>(&out, static_cast<uint32_t>(w.missing.size()));
    for (int32_t rank : w.missing) Put<int32_t>(&out, rank);
  }
  Put<uint8_t>(&out, message.tuning ? 1 : 0);
  if (message.tuning) {
    const TuningOrder& t = *message.tuning;
    Put<uint64_t>(&out, t.values.fusion_threshold_bytes);
    Put<double>(&out, t.values.cycle_time_ms);
    Put<uint64_t>(&out, t.values.small_message_bytes);
    Put<uint64_t>(&out, t.values.single_copy_bytes);
    Put<int32_t>(&out, t.sample);
    Put<uint8_t>(&out, t.final ? 1 : 0);
    Put<double>(&out, t.score);
  }
  return out;
}

bool DecodeCycleMessage(const std::string& bytes, CycleMessage* message) {
  Reader in(bytes);
  uint8_t flag = 0;
  uint32_t count = 0;
  if (!in.Get(&flag) || !in.Get(&count)) return false;
  message->shutdown = flag != 0;
  std::vector<Announcement>* announcements = &message->announcements;
  announcements->clear();
  for (uint32_t i = 0; i < count; ++i) {
    Announcement a;
    uint32_t name_len = 0, ndim = 0;
    int32_t kind = 0, dtype = 0, op = 0;
    uint8_t on_device = 0;
    if (!in.Get(&name_len) || !in.GetString(name_len, &a.name) || !in.Get(&kind) ||
        !in.Get(&dtype) || !in.Get(&op) || !in.Get(&a.root) || !in.Get(&a.prescale) ||
        !in.Get(&a.postscale) || !in.Get(&a.compression) || !in.Get(&on_device) || on_device > 1 ||
        !in.Get(&ndim)) {
      return false;
    }
    a.on_device = on_device != 0;
    a.kind = static_cast<RequestKind>(kind);
    a.dtype = static_cast<DataType>(dtype);
    a.op = static_cast<ReduceOp>(op);
    if (ndim > bytes.size()) return false;
    a.shape.resize(ndim);
    for (int64_t& d : a.shape) {
      if (!in.Get(&d)) return false;
    }
    uint32_t nsplits = 0;
    if (!in.Get(&nsplits) || nsplits > bytes.size()) return false;
    a.splits.resize(nsplits);
    for (int64_t& d : a.splits) {
      if (!in.Get(&d)) return false;
    }
    if (!in.Get(&a.group_id) || !in.Get(&a.group_size)) return false;
    if (IsProcessSetChange(a.kind)) {
      uint32_t nmembers = 0;
      if (!in.Get(&a.set_id) || !in.Get(&nmembers) || nmembers > bytes.size()) return false;
      a.set_members.resize(nmembers);
      for (int32_t& rank : a.set_members) {
        if (!in.Get(&rank)) return false;
      }
    }
    announcements->push_back(std::move(a));
  }
  uint32_t stalled = 0;
  if (!in.Get(&stalled)) return false;
  message->stalled.clear();
  for (uint32_t i = 0; i < stalled; ++i) {
    uint32_t len = 0;
    std::string name;
    if (!in.Get(&len) || !in.GetString(len, &name)) return false;
    message->stalled.push_back(std::move(name));
  }
  uint32_t cached = 0;
  std::string bits;
  if (!in.Get(&cached) || !in.GetString(cached, &bits)) return false;
  message->cached.assign(bits.begin(), bits.end());
  uint32_t stuck = 0;
  if (!in.Get(&stuck) || stuck > bytes.size()) return false;
  message->stuck.assign(stuck, {});
  for (StuckWait& w : message->stuck) {
    uint32_t len = 0, nmissing = 0;
    int32_t kind = 0;
    if (!in.Get(&w.set) || !in.Get(&len) || !in.GetString(len, &w.name) || !in.Get(&kind) ||
        !in.Get(&nmissing) || nmissing > bytes.size()) {
      return false;
    }
    w.kind = static_cast<RequestKind>(kind);
    w.missing.resize(nmissing);
    for (int32_t& rank : w.missing) {
      if (!in.Get(&rank)) return false;
    }
  }
  uint8_t has_tuning = 0;
  if (!in.Get(&has_tuning) || has_tuning > 1) return false;
  message->tuning.reset();
  if (has_tuning) {
    TuningOrder t;
    uint8_t final = 0;
    if (!in.Get(&t.values.fusion_threshold_bytes) || !in.Get(&t.values.cycle_time_ms) ||
        !in.Get(&t.values.small_message_bytes) || !in.Get(&t.values.single_copy_bytes) ||
        !in.Get(&t.sample) || !in.Get(&final) || final > 1 || !in.Get(&t.score)) {
      return false;
    }
    t.final = final != 0;
    message->tuning = t;
  }
  return in.AtEnd();
}

}  // namespace cohort
