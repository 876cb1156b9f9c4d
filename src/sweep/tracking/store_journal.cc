// The sweep journal over the tracking server's /api/cohort/sweeps/journal/
// endpoints (server/sweep_journal_api.h), through the tracking transport.
#include "sweep/tracking/store_journal.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "track/transport.h"

namespace cohort::sweep {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr char kAppend[] = "/api/cohort/sweeps/journal/append";
constexpr char kRecords[] = "/api/cohort/sweeps/journal/records";

class StoreJournal : public Journal {
 public:
  StoreJournal(std::unique_ptr<track::Transport> transport, StoreJournalOptions options,
               std::string experiment_id)
      : transport_(std::move(transport)),
        options_(std::move(options)),
        experiment_id_(std::move(experiment_id)) {}

  Status Append(const std::string& record) override {
    const json body = {{"experiment_id", experiment_id_},
                       {"sweep", options_.sweep},
                       {"seq", next_},
                       {"record", record}};
    const Clock::time_point deadline =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(options_.append_deadline_s));
    auto backoff = std::chrono::milliseconds(100);
    bool retried = false;
    for (;;) {
      auto answer = transport_->Call("POST", kAppend, body);
      Status s = answer.status();
      // A retry after an answer lost on the way back finds its own record.
      if (retried && s.IsAlreadyExists() && Stored(record)) s = Status::OK();
      if (s.ok()) {
        ++next_;
        return s;
      }
      const std::string what = "cannot append record " + std::to_string(next_) + " to " + Where();
      if (s.code() != Status::Code::kPeerFailure)
        return Status(s.code(), what + ": " + s.message());
      const auto now = Clock::now();
      if (now >= deadline) {
        char seconds[32];
        std::snprintf(seconds, sizeof(seconds), "%g", options_.append_deadline_s);
        return Status(s.code(), what + " (tried for " + seconds + " s): " + s.message() +
                                    "; the sweep stops with its state in the store: start it "
                                    "again when the server answers");
      }
      // The last try falls on the deadline.
      std::this_thread::sleep_for(std::min<Clock::duration>(backoff, deadline - now));
      backoff = std::min(backoff * 2, std::chrono::milliseconds(2000));
      retried = true;
    }
  }

  Result<std::vector<std::string>> Records() override {
    auto records = Fetch();
    if (records.ok()) next_ = static_cast<int64_t>(records->size());
    return records;
  }

  std::string Where() const {
    return "the journal of sweep '" + options_.sweep + "' (experiment " + experiment_id_ +
           ") in the tracking store at " + options_.uri;
  }

 private:
  // The stored records; next_ unchanged.
  Result<std::vector<std::string>> Fetch() {
    auto answer = transport_->Call("GET", kRecords,
                                   {{"experiment_id", experiment_id_}, {"sweep", options_.sweep}});
    if (!answer.ok()) {
      return Status(answer.status().code(),
                    "cannot read " + Where() + ": " + answer.status().message());
    }
    const json* list =
        answer->is_object() && answer->contains("records") ? &(*answer)["records"] : nullptr;
    std::vector<std::string> records;
    for (size_t i = 0; list != nullptr && list->is_array() && i < list->size(); ++i) {
      if (!(*list)[i].is_string()) break;
      records.push_back((*list)[i].get<std::string>());
    }
    if (list == nullptr || !list->is_array() || records.size() != list->size()) {
      return Status::PeerFailure("cannot read " + Where() +
                                 ": the answer is not {\"records\": [strings]}");
    }
    return records;
  }

  // Whether record next_ is `record`: an append whose answer was lost.
  bool Stored(const std::string& record) {
    auto records = Fetch();
    return records.ok() && static_cast<int64_t>(records->size()) > next_ &&
           (*records)[next_] == record;
  }

  std::unique_ptr<track::Transport> transport_;
  StoreJournalOptions options_;
  std::string experiment_id_;
  int64_t next_ = 0;  // the seq of the next record
};

// Copies a file journal of the sweep into the empty store journal, once.
Status ImportFileJournal(const StoreJournalOptions& options, StoreJournal& store) {
  std::error_code ec;
  if (options.file_journal.empty() || !std::filesystem::exists(options.file_journal, ec)) {
    return Status::OK();
  }
  std::vector<std::string> file_records;
  {
    auto file = OpenFileJournal(options.file_journal);
    if (!file.ok()) return file.status();
    auto records = (*file)->Records();
    if (!records.ok()) return records.status();
    file_records = std::move(*records);
  }
  if (file_records.empty()) return Status::OK();
  auto stored = store.Records();
  if (!stored.ok()) return stored.status();
  if (!stored->empty()) {
    return Status::InvalidArgument(
        "both " + options.file_journal + " (" + std::to_string(file_records.size()) +
        " records) and " + store.Where() + " (" + std::to_string(stored->size()) +
        " records) hold this sweep: move the file away to continue from the store, or run "
        "without --tracking to continue from the file");
  }
  for (const std::string& record : file_records) COHORT_RETURN_IF_ERROR(store.Append(record));
  const std::string moved = options.file_journal + ".imported";
  std::filesystem::rename(options.file_journal, moved, ec);
  if (ec) {
    return Status::IoError("imported " + options.file_journal + " into the tracking store but " +
                           "cannot rename it to " + moved + ": " + ec.message());
  }
  std::printf("cohort sweep: imported %zu records of %s into %s (the file is now %s)\n",
              file_records.size(), options.file_journal.c_str(), store.Where().c_str(),
              moved.c_str());
  return Status::OK();
}

// FILE.store: where the journal of the sweep in this directory lives.
Status WritePointer(const StoreJournalOptions& options, const std::string& experiment_id) {
  if (options.file_journal.empty()) return Status::OK();
  const std::string path = options.file_journal + ".store";
  std::ofstream out(path, std::ios::trunc);
  out << json{{"uri", options.uri}, {"experiment_id", experiment_id}, {"sweep", options.sweep}}
             .dump()
      << "\n";
  out.close();
  if (!out) return Status::IoError("cannot write '" + path + "'");
  return Status::OK();
}

}  // namespace

std::unique_ptr<Journal> NewStoreJournal(std::unique_ptr<track::Transport> transport,
                                         const StoreJournalOptions& options,
                                         const std::string& experiment_id) {
  return std::make_unique<StoreJournal>(std::move(transport), options, experiment_id);
}

Result<std::unique_ptr<Journal>> OpenStoreJournal(const StoreJournalOptions& options) {
  auto transport = track::OpenTransport(options.uri);
  if (!transport.ok()) return transport.status();
  if (!(*transport)->remote()) {
    return Status::InvalidArgument(
        "the sweep journal needs a tracking server (http://HOST:PORT), "
        "not '" +
        options.uri + "'");
  }
  auto experiment = track::ExperimentIdByName(**transport, options.experiment);
  if (!experiment.ok()) {
    return experiment.status().WithContext("tracking " + options.uri);
  }
  auto journal = std::make_unique<StoreJournal>(std::move(*transport), options, *experiment);
  auto records = journal->Records();  // learns the next seq
  if (!records.ok()) return records.status();
  COHORT_RETURN_IF_ERROR(ImportFileJournal(options, *journal));
  COHORT_RETURN_IF_ERROR(WritePointer(options, *experiment));
  return std::unique_ptr<Journal>(std::move(journal));
}

}  // namespace cohort::sweep
