// CheckpointStore (include/cohort/checkpoint.h): state object first, manifest
// last, then garbage collection of what the keep rules no longer need;
// checkpoints that cannot be used are skipped and reported, never fatal to a
// job that has a usable one.
#include <algorithm>
#include <iterator>
#include <map>
#include <set>
#include <utility>

#include "checkpoint/manifest.h"
#include "cohort/checkpoint.h"
#include "common/logging.h"
#include "data/hash.h"
#include "data/storage.h"
#include "http/url.h"

namespace cohort {

using checkpoint::Manifest;

// What a location holds: the checkpoints whose manifests can be used, and
// why the others cannot (by step).
struct Scan {
  std::map<int64_t, Manifest> valid;
  std::map<int64_t, Status> unreadable;
};

struct CheckpointStore::Impl {
  std::unique_ptr<data::Storage> storage;
  CheckpointOptions options;

  std::string Where(const std::string& key) const { return storage->location() + "/" + key; }

  void Warn(const std::string& message) const {
    if (options.on_warning) {
      options.on_warning(message);
    } else {
      COHORT_LOG(kWarning) << message;
    }
  }

  // The report of a checkpoint a load or save skipped. One whose manifest
  // cannot be read is never deleted: it may be a newer version's, or worth
  // a look, so the user decides.
  std::string Unusable(int64_t step, const Status& why, bool left_in_place) const {
    std::string text = "checkpoint step " + std::to_string(step) +
                       " is unusable and was skipped: " + why.message();
    if (left_in_place) {
      text += "; it is left in place (delete " + Where(checkpoint::StepFolder(step)) +
              " once inspected)";
    }
    return text;
  }

  void ReportUnreadable(const Scan& scan) const {
    for (const auto& [step, why] : scan.unreadable) Warn(Unusable(step, why, true));
  }

  // Every checkpoint's manifest, by step. A manifest that cannot be used is
  // recorded, not an error; failing storage is.
  Result<Scan> Manifests() {
    Result<std::vector<std::string>> keys = storage->List("");
    if (!keys.ok()) return keys.status();
    Scan scan;
    for (const std::string& key : *keys) {
      int64_t step = checkpoint::StepOfManifestKey(key);
      if (step < 0) continue;
      Result<std::optional<std::string>> text = storage->Get(key);
      if (!text.ok()) return text.status();
      if (!text->has_value()) continue;  // deleted since the listing
      Result<Manifest> m = checkpoint::ParseManifest(**text, Where(key));
      if (!m.ok()) {
        scan.unreadable.emplace(step, m.status());
      } else if (m->info.step != step) {
        scan.unreadable.emplace(step, Status::InvalidArgument(Where(key) + ": names step " +
                                                              std::to_string(m->info.step) +
                                                              ", not " + std::to_string(step)));
      } else {
        scan.valid.emplace(step, std::move(*m));
      }
    }
    return scan;
  }

  // The state `m` names. nullopt, with *problem set, when the state is
  // missing or does not match its manifest; an error when the storage fails.
  Result<std::optional<Checkpoint>> Read(const Manifest& m, Status* problem) {
    const std::string where = Where(m.state_object);
    Result<std::optional<std::string>> state = storage->Get(m.state_object);
    if (!state.ok()) return state.status();
    if (!state->has_value()) {
      *problem = Status::IoError("checkpoint step " + std::to_string(m.info.step) + ": state " +
                                 where + " named by its manifest is missing");
      return std::optional<Checkpoint>();
    }
    if ((*state)->size() != m.info.bytes || data::Sha256Hex(**state) != m.info.sha256) {
      *problem =
          Status::IoError("checkpoint step " + std::to_string(m.info.step) + ": state " + where +
                          " does not match its manifest (" + std::to_string((*state)->size()) +
                          " bytes, manifest says " + std::to_string(m.info.bytes) +
                          " bytes and SHA-256 " + m.info.sha256 + ")");
      return std::optional<Checkpoint>();
    }
    return std::optional<Checkpoint>(Checkpoint{m.info, std::move(**state)});
  }

  // The newest checkpoint that loads; every newer one that does not is
  // reported. When none loads, the newest's problem is the error.
  Result<std::optional<Checkpoint>> LoadNewestValid() {
    Result<Scan> scan = Manifests();
    if (!scan.ok()) return scan.status();
    std::map<int64_t, std::pair<Status, bool>> skipped = {};  // why, left in place
    for (const auto& [step, why] : scan->unreadable) skipped[step] = {why, true};
    std::optional<Checkpoint> loaded;
    for (auto it = scan->valid.rbegin(); it != scan->valid.rend() && !loaded; ++it) {
      Status problem;
      Result<std::optional<Checkpoint>> c = Read(it->second, &problem);
      if (!c.ok()) return c.status();
      if (c->has_value()) {
        loaded = std::move(*c);
      } else {
        skipped[it->first] = {problem, false};
      }
    }
    if (!loaded && !skipped.empty()) {
      for (auto it = skipped.begin(); it != std::prev(skipped.end()); ++it) {
        Warn(Unusable(it->first, it->second.first, it->second.second));
      }
      return skipped.rbegin()->second.first;
    }
    for (const auto& [step, why] : skipped) {
      std::string text = Unusable(step, why.first, why.second);
      if (step > loaded->info.step) {
        text +=
            "; loaded step " + std::to_string(loaded->info.step) + ", the newest valid checkpoint";
      }
      Warn(text);
    }
    return loaded;
  }

  bool Better(const CheckpointInfo& a, const CheckpointInfo& b) const {
    if (*a.metric != *b.metric) {
      return options.higher_is_better ? *a.metric > *b.metric : *a.metric < *b.metric;
    }
    return a.step > b.step;
  }

  std::optional<CheckpointInfo> BestOf(const std::map<int64_t, Manifest>& manifests) const {
    std::optional<CheckpointInfo> best;
    for (const auto& [step, m] : manifests) {
      if (m.info.metric && (!best || Better(m.info, *best))) best = m.info;
    }
    return best;
  }

  // Deletes checkpoints beyond the newest keep_last (except the best), then
  // every object no remaining manifest names (a replaced state, what a
  // killed save left), and the temporary files of killed saves. Manifests go
  // first: a checkpoint disappears whole. A checkpoint whose manifest cannot
  // be read is reported and left alone.
  Status CollectGarbage() {
    Result<Scan> scan = Manifests();
    if (!scan.ok()) return scan.status();
    ReportUnreadable(*scan);
    std::optional<CheckpointInfo> best = BestOf(scan->valid);
    std::set<std::string> kept;
    int newer = 0;
    for (auto it = scan->valid.rbegin(); it != scan->valid.rend(); ++it) {
      const Manifest& m = it->second;
      if (newer++ < options.keep_last || (best && best->step == m.info.step)) {
        kept.insert(checkpoint::ManifestKey(m.info.step));
        kept.insert(m.state_object);
        continue;
      }
      COHORT_RETURN_IF_ERROR(storage->Delete(checkpoint::ManifestKey(m.info.step)));
    }
    Result<std::vector<std::string>> keys = storage->List("");
    if (!keys.ok()) return keys.status();
    for (const std::string& key : *keys) {
      if (key.rfind("step-", 0) == 0 && kept.count(key) == 0 && !InUnreadable(*scan, key)) {
        COHORT_RETURN_IF_ERROR(storage->Delete(key));
      }
    }
    return storage->CollectAbandonedWrites("").status();
  }

  static bool InUnreadable(const Scan& scan, const std::string& key) {
    for (const auto& [step, why] : scan.unreadable) {
      if (key.rfind(checkpoint::StepFolder(step) + "/", 0) == 0) return true;
    }
    return false;
  }
};

CheckpointStore::CheckpointStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CheckpointStore::~CheckpointStore() = default;

Result<std::unique_ptr<CheckpointStore>> CheckpointStore::Open(const std::string& location,
                                                               CheckpointOptions options) {
  if (options.keep_last < 1) {
    return Status::InvalidArgument("checkpoints at " + location +
                                   ": keep_last must be at least 1, not " +
                                   std::to_string(options.keep_last));
  }
  if (http::IsHttpUrl(location)) {
    return Status::InvalidArgument("checkpoints at " + location +
                                   ": HTTP storage is read-only; use a directory or s3://");
  }
  Result<std::unique_ptr<data::Storage>> storage = data::OpenStorage(location, true);
  if (!storage.ok()) return storage.status().WithContext("checkpoints at " + location);
  auto impl = std::make_unique<Impl>();
  impl->storage = std::move(*storage);
  impl->options = std::move(options);
  return std::unique_ptr<CheckpointStore>(new CheckpointStore(std::move(impl)));
}

const std::string& CheckpointStore::location() const { return impl_->storage->location(); }

Status CheckpointStore::Save(int64_t step, std::string_view state, std::optional<double> metric) {
  if (step < 0) {
    return Status::InvalidArgument("checkpoint step must be >= 0, not " + std::to_string(step));
  }
  Manifest m;
  m.info.step = step;
  m.info.bytes = state.size();
  m.info.sha256 = data::Sha256Hex(state);
  m.info.metric = metric;
  // The hash in the name: re-saving a step writes a new object, so the old
  // manifest never names a half-replaced state.
  m.state_object = checkpoint::StepFolder(step) + "/state-" + m.info.sha256.substr(0, 16);
  COHORT_RETURN_IF_ERROR(impl_->storage->Put(m.state_object, state));
  if (impl_->options.on_save_step) impl_->options.on_save_step("state-written");
  COHORT_RETURN_IF_ERROR(
      impl_->storage->Put(checkpoint::ManifestKey(step), checkpoint::FormatManifest(m)));
  if (impl_->options.on_save_step) impl_->options.on_save_step("manifest-written");
  return impl_->CollectGarbage();
}

Result<std::vector<CheckpointInfo>> CheckpointStore::List() {
  Result<Scan> scan = impl_->Manifests();
  if (!scan.ok()) return scan.status();
  impl_->ReportUnreadable(*scan);
  std::vector<CheckpointInfo> infos;
  for (const auto& [step, m] : scan->valid) infos.push_back(m.info);
  return infos;
}

Result<std::optional<Checkpoint>> CheckpointStore::LoadLatest() { return impl_->LoadNewestValid(); }

Result<std::optional<Checkpoint>> CheckpointStore::Load(int64_t step) {
  const std::string key = checkpoint::ManifestKey(step);
  Result<std::optional<std::string>> text = impl_->storage->Get(key);
  if (!text.ok()) return text.status();
  if (!text->has_value()) return std::optional<Checkpoint>();
  Result<Manifest> m = checkpoint::ParseManifest(**text, impl_->Where(key));
  if (!m.ok()) return m.status();
  Status problem;
  Result<std::optional<Checkpoint>> c = impl_->Read(*m, &problem);
  if (c.ok() && !c->has_value()) return problem;
  return c;
}

Result<std::optional<CheckpointInfo>> CheckpointStore::Best() {
  Result<Scan> scan = impl_->Manifests();
  if (!scan.ok()) return scan.status();
  impl_->ReportUnreadable(*scan);
  return impl_->BestOf(scan->valid);
}

}  // namespace cohort
