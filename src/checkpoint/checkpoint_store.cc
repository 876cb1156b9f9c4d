// CheckpointStore (include/cohort/checkpoint.h): state object first, manifest
// last, then garbage collection of what the keep rules no longer need.
#include <algorithm>
#include <map>
#include <set>

#include "checkpoint/manifest.h"
#include "cohort/checkpoint.h"
#include "data/hash.h"
#include "data/storage.h"

namespace cohort {

using checkpoint::Manifest;

struct CheckpointStore::Impl {
  std::unique_ptr<data::Storage> storage;
  CheckpointOptions options;

  std::string Where(const std::string& key) const { return storage->location() + "/" + key; }

  // Every complete checkpoint's manifest, by step.
  Result<std::map<int64_t, Manifest>> Manifests() {
    Result<std::vector<std::string>> keys = storage->List("");
    if (!keys.ok()) return keys.status();
    std::map<int64_t, Manifest> manifests;
    for (const std::string& key : *keys) {
      int64_t step = checkpoint::StepOfManifestKey(key);
      if (step < 0) continue;
      Result<std::optional<std::string>> text = storage->Get(key);
      if (!text.ok()) return text.status();
      if (!text->has_value()) continue;  // deleted since the listing
      Result<Manifest> m = checkpoint::ParseManifest(**text, Where(key));
      if (!m.ok()) return m.status();
      if (m->info.step != step) {
        return Status::InvalidArgument(Where(key) + ": names step " + std::to_string(m->info.step) +
                                       ", not " + std::to_string(step));
      }
      manifests.emplace(step, std::move(*m));
    }
    return manifests;
  }

  Result<std::optional<Checkpoint>> Read(const Manifest& m) {
    const std::string where = Where(m.state_object);
    Result<std::optional<std::string>> state = storage->Get(m.state_object);
    if (!state.ok()) return state.status();
    if (!state->has_value()) {
      return Status::IoError("checkpoint step " + std::to_string(m.info.step) + ": state " + where +
                             " named by its manifest is missing");
    }
    if ((*state)->size() != m.info.bytes || data::Sha256Hex(**state) != m.info.sha256) {
      return Status::IoError("checkpoint step " + std::to_string(m.info.step) + ": state " + where +
                             " does not match its manifest (" + std::to_string((*state)->size()) +
                             " bytes, manifest says " + std::to_string(m.info.bytes) +
                             " bytes and SHA-256 " + m.info.sha256 + ")");
    }
    return std::optional<Checkpoint>(Checkpoint{m.info, std::move(**state)});
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
  // every object no remaining manifest names (a killed save's leftovers,
  // replaced states). Manifests go first: a checkpoint disappears whole.
  Status CollectGarbage() {
    Result<std::map<int64_t, Manifest>> manifests = Manifests();
    if (!manifests.ok()) return manifests.status();
    std::optional<CheckpointInfo> best = BestOf(*manifests);
    std::set<std::string> kept;
    int newer = 0;
    for (auto it = manifests->rbegin(); it != manifests->rend(); ++it) {
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
      if (key.rfind("step-", 0) == 0 && kept.count(key) == 0) {
        COHORT_RETURN_IF_ERROR(storage->Delete(key));
      }
    }
    return Status::OK();
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
  if (data::IsHttpUrl(location)) {
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
  Result<std::map<int64_t, Manifest>> manifests = impl_->Manifests();
  if (!manifests.ok()) return manifests.status();
  std::vector<CheckpointInfo> infos;
  for (const auto& [step, m] : *manifests) infos.push_back(m.info);
  return infos;
}

Result<std::optional<Checkpoint>> CheckpointStore::LoadLatest() {
  Result<std::map<int64_t, Manifest>> manifests = impl_->Manifests();
  if (!manifests.ok()) return manifests.status();
  if (manifests->empty()) return std::optional<Checkpoint>();
  return impl_->Read(manifests->rbegin()->second);
}

Result<std::optional<Checkpoint>> CheckpointStore::Load(int64_t step) {
  const std::string key = checkpoint::ManifestKey(step);
  Result<std::optional<std::string>> text = impl_->storage->Get(key);
  if (!text.ok()) return text.status();
  if (!text->has_value()) return std::optional<Checkpoint>();
  Result<Manifest> m = checkpoint::ParseManifest(**text, impl_->Where(key));
  if (!m.ok()) return m.status();
  return impl_->Read(*m);
}

Result<std::optional<CheckpointInfo>> CheckpointStore::Best() {
  Result<std::map<int64_t, Manifest>> manifests = impl_->Manifests();
  if (!manifests.ok()) return manifests.status();
  return impl_->BestOf(*manifests);
}

}  // namespace cohort
