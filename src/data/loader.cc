// Loader: one epoch at a time, a plan (loader_plan.h), a read-ahead thread
// (loader_fetch.h) and `threads` workers that each build whole batches, at
// most `prefetch_batches` ahead of Next(). Batch b goes to whichever worker
// claims it next, and everything random is keyed by the sample's position,
// so the output does not depend on the number of threads.
#include <algorithm>
#include <climits>
#include <condition_variable>
#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>

#include "cohort/loader.h"
#include "common/env_config.h"
#include "common/settings.h"
#include "data/loader_batch.h"
#include "data/loader_fetch.h"
#include "data/loader_plan.h"
#include "data/shuffle_rng.h"

namespace cohort::data {

const Tensor& Batch::column(const std::string& name) const {
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return tensors[i];
  }
  std::fprintf(stderr, "cohort loader: the batch has no column '%s'\n", name.c_str());
  std::abort();
}

namespace {

// The count `variable` holds, parsed through the settings table, or
// `fallback` (the caller's option) when it is unset.
Result<int64_t> CountOr(const EnvLookup& env, const char* variable, int64_t fallback) {
  Result<std::optional<SettingValue>> value = ReadSettingIfSet(env, variable);
  if (!value.ok()) return value.status();
  return value->has_value() ? static_cast<int64_t>((*value)->number) : fallback;
}

}  // namespace

Status ApplyLoaderEnv(LoaderOptions* options) {
  const EnvLookup env = ProcessEnv();
  Result<int64_t> threads = CountOr(env, "COHORT_LOADER_THREADS", options->threads);
  if (!threads.ok()) return threads.status();
  Result<int64_t> prefetch = CountOr(env, "COHORT_LOADER_PREFETCH", options->prefetch_batches);
  if (!prefetch.ok()) return prefetch.status();
  Result<int64_t> window =
      CountOr(env, "COHORT_SHUFFLE_WINDOW", static_cast<int64_t>(options->window_chunks));
  if (!window.ok()) return window.status();
  // Out-of-range values are kept (saturated) for CheckOptions to name.
  auto to_int = [](int64_t v) { return static_cast<int>(std::clamp<int64_t>(v, INT_MIN, INT_MAX)); };
  options->threads = to_int(*threads);
  options->prefetch_batches = to_int(*prefetch);
  options->window_chunks = *window < 0 ? 0 : static_cast<uint64_t>(*window);
  return Status::OK();
}

namespace {

constexpr int kMaxLoaderThreads = 256;

Status CheckOptions(const LoaderOptions& o) {
  if (o.world_size < 1 || o.rank < 0 || o.rank >= o.world_size) {
    return Status::InvalidArgument("loader rank " + std::to_string(o.rank) +
                                   " is not in [0, world size " + std::to_string(o.world_size) +
                                   ")");
  }
  if (o.batch_size == 0) return Status::InvalidArgument("loader batch size must be positive");
  // The one check of these bounds, for arguments and COHORT_* variables alike.
  if (o.threads < 1 || o.threads > kMaxLoaderThreads) {
    return Status::InvalidArgument("loader threads (COHORT_LOADER_THREADS) must be 1.." +
                                   std::to_string(kMaxLoaderThreads) + ", is " +
                                   std::to_string(o.threads));
  }
  if (o.prefetch_batches < 1) {
    return Status::InvalidArgument(
        "loader prefetch_batches (COHORT_LOADER_PREFETCH) must be at least 1, is " +
        std::to_string(o.prefetch_batches));
  }
  if (o.window_chunks < 1) {
    return Status::InvalidArgument(
        "loader window_chunks (COHORT_SHUFFLE_WINDOW) must be at least 1, is " +
        std::to_string(o.window_chunks));
  }
  if (o.image.size < 0) return Status::InvalidArgument("loader image size must not be negative");
  if (!(o.image.scale_min > 0 && o.image.scale_min <= o.image.scale_max) ||
      !(o.image.ratio_min > 0 && o.image.ratio_min <= o.image.ratio_max)) {
    return Status::InvalidArgument(
        "loader image scale and ratio ranges must be positive, min <= max");
  }
  return Status::OK();
}

// One epoch in flight: the plan, the fetcher and the workers.
class EpochRun {
 public:
  EpochRun(Repository* repo, const CommitInfo& info, const CommitObject& commit,
           const std::vector<size_t>& columns, const LoaderOptions& options, LoaderState start,
           BufferPool* buffers)
      : commit_(commit), columns_(columns), options_(options), start_(start), buffers_(buffers) {
    std::vector<uint64_t> sizes;
    for (const ChunkRef& c : commit.chunks) sizes.push_back(c.num_samples);
    EpochOrder order(sizes, {options.shuffle, start.seed, options.window_chunks}, start.epoch);
    plan_ = MakeLoaderPlan(
        order,
        {options.rank, options.world_size, options.batch_size, options.drop_last, start.consumed},
        options.window_chunks);
    context_ = repo->location();
    fetcher_ = std::make_unique<ChunkFetcher>(repo, info.id, &commit.chunks, &plan_);
    for (int t = 0; t < options.threads; ++t) workers_.emplace_back([this] { Work(); });
  }

  ~EpochRun() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    fetcher_->Stop();  // wakes workers waiting for chunks; they still Release into it
    for (std::thread& t : workers_) t.join();
  }

  uint64_t batches() const { return plan_.batches; }
  uint64_t delivered() const { return delivered_; }

  Result<Batch> Take() {
    std::unique_lock<std::mutex> lock(mu_);
    wake_.wait(lock, [&] { return done_.count(delivered_) != 0; });
    Result<Batch> batch = std::move(done_.at(delivered_));
    done_.erase(delivered_++);
    wake_.notify_all();
    return batch;
  }

 private:
  void Work() {
    while (true) {
      uint64_t b = 0;
      {
        std::unique_lock<std::mutex> lock(mu_);
        wake_.wait(lock, [&] {
          return stop_ || claimed_ >= plan_.batches ||
                 claimed_ < delivered_ + uint64_t(options_.prefetch_batches);
        });
        if (stop_ || claimed_ >= plan_.batches) return;
        b = claimed_++;
      }
      Result<Batch> batch = Build(b);
      std::lock_guard<std::mutex> lock(mu_);
      done_.emplace(b, std::move(batch));
      wake_.notify_all();
    }
  }

  Result<Batch> Build(uint64_t b) {
    const uint64_t n = options_.batch_size;
    std::vector<ColumnBatcher> batchers;
    for (size_t c : columns_) batchers.emplace_back(commit_.schema[c], options_.image, n, buffers_);
    Batch batch;
    batch.epoch = start_.epoch;
    batch.step = (start_.consumed / plan_.step_samples) + b;
    batch.indices.resize(n);
    std::vector<ValueView> views;
    Status status;
    uint64_t row = 0;
    for (; row < n && status.ok(); ++row) {
      const PlannedSample& s = plan_.samples[b * n + row];
      Result<const DecodedChunk*> chunk = fetcher_->Wait(s.load);
      if (!chunk.ok()) {
        status = chunk.status();
        break;
      }
      status = ParseRecordView(commit_.schema, (*chunk)->record(s.offset), &views);
      for (size_t k = 0; k < columns_.size() && status.ok(); ++k) {
        const uint64_t key = ShuffleRng::Key({start_.seed, start_.epoch, s.position, k});
        status = batchers[k].Add(row, views[columns_[k]], key);
      }
      if (!status.ok()) {
        status = status.WithContext(context_ + ", sample " + std::to_string(s.index));
      }
      fetcher_->Release(s.load);
      batch.indices[row] = s.index;
      batch.padded += s.position >= plan_.epoch_size;
    }
    // Uses of the rows not built must still be released, or the fetcher would wait forever.
    for (uint64_t r = status.ok() ? n : row; r < n; ++r)
      fetcher_->Release(plan_.samples[b * n + r].load);
    if (!status.ok()) return status;
    for (size_t k = 0; k < columns_.size(); ++k) {
      batch.names.push_back(commit_.schema[columns_[k]].name);
      batch.tensors.push_back(batchers[k].Finish());
    }
    const bool last = b + 1 == plan_.batches;
    batch.state_after = start_;
    batch.state_after.epoch = last ? start_.epoch + 1 : start_.epoch;
    batch.state_after.consumed = last ? 0 : start_.consumed + (b + 1) * plan_.step_samples;
    return batch;
  }

  const CommitObject& commit_;
  const std::vector<size_t>& columns_;
  const LoaderOptions& options_;
  const LoaderState start_;
  BufferPool* buffers_;
  std::string context_;
  LoaderPlan plan_;
  std::unique_ptr<ChunkFetcher> fetcher_;

  std::mutex mu_;
  std::condition_variable wake_;
  uint64_t claimed_ = 0, delivered_ = 0;
  std::map<uint64_t, Result<Batch>> done_;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

class LoaderImpl : public Loader {
 public:
  LoaderImpl(std::unique_ptr<Repository> repo, CommitInfo info, CommitObject commit,
             std::vector<size_t> columns, LoaderOptions options)
      : repo_(std::move(repo)),
        info_(std::move(info)),
        commit_(std::move(commit)),
        columns_(std::move(columns)),
        options_(std::move(options)),
        state_(options_.start),
        // Batches in flight or being built, plus a few the consumer still holds.
        buffers_((options_.prefetch_batches + options_.threads + 4) * columns_.size()) {}

  ~LoaderImpl() override { run_.reset(); }

  Result<std::optional<Batch>> Next() override {
    if (!run_)
      run_ = std::make_unique<EpochRun>(repo_.get(), info_, commit_, columns_, options_, state_,
                                        &buffers_);
    if (run_->delivered() == run_->batches()) {
      // The last batch's state_after already points at the next epoch; a
      // run with no batches (started at or past the end) moves there now.
      if (run_->batches() == 0) {
        ++state_.epoch;
        state_.consumed = 0;
      }
      run_.reset();
      return std::optional<Batch>();
    }
    Result<Batch> batch = run_->Take();
    if (!batch.ok()) return batch.status();
    state_ = batch->state_after;
    return std::optional<Batch>(std::move(*batch));
  }

  LoaderState state() const override { return state_; }

  uint64_t batches_left() const override {
    PlanRequest r{options_.rank, options_.world_size, options_.batch_size, options_.drop_last,
                  state_.consumed};
    return StepsLeft(info_.num_samples, r);
  }
  uint64_t dataset_size() const override { return info_.num_samples; }

 private:
  std::unique_ptr<Repository> repo_;
  CommitInfo info_;
  CommitObject commit_;
  std::vector<size_t> columns_;
  LoaderOptions options_;
  LoaderState state_;
  BufferPool buffers_;
  std::unique_ptr<EpochRun> run_;
};

// The commit the loader reads: options.ref, or the one a resumed state names.
Result<std::string> ChooseCommit(Repository* repo, const std::string& location,
                                 const LoaderOptions& o) {
  const LoaderState& start = o.start;
  if (start.commit.empty() || o.allow_commit_change) return repo->Resolve(o.ref);
  if (start.window_chunks != o.window_chunks || start.shuffle != o.shuffle) {
    return Status::InvalidArgument(
        "the loader state was saved with window_chunks " + std::to_string(start.window_chunks) +
        " and shuffle " + (start.shuffle ? "on" : "off") + ", the loader has window_chunks " +
        std::to_string(o.window_chunks) + " and shuffle " + (o.shuffle ? "on" : "off") +
        ": they fix the epoch's order, resume with the state's");
  }
  if (o.ref.empty()) return repo->Resolve(start.commit);
  Result<std::string> id = repo->Resolve(o.ref);
  if (!id.ok() || *id == start.commit) return id;
  return Status::InvalidArgument(
      "the loader state was saved on commit " + start.commit + " of dataset " + location +
      ", but ref '" + o.ref + "' is commit " + *id +
      ": a state resumes on its own commit (leave ref empty). To go on with epoch " +
      std::to_string(start.epoch) + " on the other commit set allow_commit_change: its order " +
      "differs, so the rest of that epoch may repeat or skip samples (nothing is lost when " +
      "consumed is 0); the epochs after it are whole");
}

// An epoch with no batch would make every Next() end an epoch at once; a
// start past the end of the epoch cannot come from a loader of this commit.
Status CheckEpoch(const std::string& location, const CommitInfo& info, const LoaderOptions& o) {
  const std::string where = "dataset " + location + ", commit " + info.id;
  const uint64_t n = info.num_samples;
  if (n == 0) {
    return Status::InvalidArgument(where +
                                   " has no samples (an ingest's first, empty commit?): every "
                                   "epoch would be empty");
  }
  const uint64_t step = uint64_t(o.world_size) * o.batch_size;
  if (o.drop_last && step > n) {
    return Status::InvalidArgument(
        where + " has " + std::to_string(n) + " samples, fewer than one step of " +
        std::to_string(o.world_size) + " ranks x batch size " + std::to_string(o.batch_size) +
        " = " + std::to_string(step) +
        ": with drop_last every epoch would be empty; lower the batch size or keep the last "
        "step (drop_last off)");
  }
  if (o.start.consumed >= n) {
    return Status::InvalidArgument("loader state consumed " + std::to_string(o.start.consumed) +
                                   " is beyond the epoch: " + where + " has " +
                                   std::to_string(n) + " samples");
  }
  return Status::OK();
}

}  // namespace

Result<std::unique_ptr<Loader>> Loader::Open(const std::string& location, LoaderOptions options) {
  COHORT_RETURN_IF_ERROR(CheckOptions(options));
  Result<std::unique_ptr<Repository>> repo = Repository::Open(location);
  if (!repo.ok()) return repo.status();
  Result<std::string> id = ChooseCommit(repo->get(), location, options);
  if (!id.ok()) return id.status();
  Result<CommitObject> commit = (*repo)->LoadCommit(*id);
  if (!commit.ok()) return commit.status();
  std::vector<size_t> columns;
  const Schema& schema = commit->schema;
  if (options.columns.empty()) {
    for (size_t c = 0; c < schema.size(); ++c) columns.push_back(c);
  }
  for (const std::string& name : options.columns) {
    size_t c = 0;
    while (c < schema.size() && schema[c].name != name) ++c;
    if (c == schema.size()) {
      std::string have;
      for (const Column& col : schema) {
        if (!have.empty()) have += ", ";
        have += col.name;
      }
      return Status::InvalidArgument("dataset " + location + " has no column '" + name +
                                     "' (it has: " + have + ")");
    }
    columns.push_back(c);
  }
  for (size_t c : columns) {
    Status s = CheckBatchable(schema[c]);
    if (!s.ok()) return s.WithContext("dataset " + location);
  }
  CommitInfo info = CommitInfoOf(*id, *commit);
  COHORT_RETURN_IF_ERROR(CheckEpoch(location, info, options));
  // Every state this loader hands out names what fixes its order.
  options.start.commit = info.id;
  options.start.window_chunks = options.window_chunks;
  options.start.shuffle = options.shuffle;
  return std::unique_ptr<Loader>(new LoaderImpl(std::move(*repo), std::move(info),
                                                std::move(*commit), std::move(columns),
                                                std::move(options)));
}

}  // namespace cohort::data
