// ChunkFetcher: the loader's read-ahead thread. It reads and decodes (checks,
// decompresses) the plan's chunk loads in order, at most `capacity` resident
// at once, and frees each when its last sample has been taken. Workers wait
// for a load here; a read error reaches every worker that waits for it.
#ifndef COHORT_DATA_LOADER_FETCH_H_
#define COHORT_DATA_LOADER_FETCH_H_

#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "data/loader_plan.h"
#include "data/repository.h"

namespace cohort::data {

class ChunkFetcher {
 public:
  // `repo` is used only by the fetcher's thread until the fetcher is destroyed.
  ChunkFetcher(Repository* repo, std::string commit_id, const std::vector<ChunkRef>* chunks,
               const LoaderPlan* plan);
  ~ChunkFetcher();  // Stop()s and joins the thread
  // Ends fetching; Wait then fails at once for loads not fetched yet.
  void Stop();
  ChunkFetcher(const ChunkFetcher&) = delete;
  ChunkFetcher& operator=(const ChunkFetcher&) = delete;

  // The chunk of `load`, once fetched. The pointer stays valid until the
  // caller's matching Release.
  Result<const DecodedChunk*> Wait(uint32_t load);
  // One use of `load` is done; the last frees it.
  void Release(uint32_t load);

  size_t max_resident() const;  // most loads held at once so far (tests check the bound)

 private:
  void Run();
  // Frees the retired chunks until one more load fits; false once stopped.
  bool WaitForRoom();

  Repository* repo_;
  std::string commit_id_;
  const std::vector<ChunkRef>* chunks_;
  const LoaderPlan* plan_;

  mutable std::mutex mu_;
  std::condition_variable fetched_, freed_;
  std::vector<std::optional<DecodedChunk>> slots_;  // one per load
  std::vector<uint64_t> uses_left_;
  size_t next_ = 0;  // next load to fetch
  size_t resident_ = 0, max_resident_ = 0;
  // Released loads the thread frees before its next fetch; they count as resident until then.
  std::vector<DecodedChunk> retired_;
  bool fetching_ = true;  // the thread has loads left to fetch
  Status error_;          // set once a fetch failed; later loads fail with it
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace cohort::data

#endif  // COHORT_DATA_LOADER_FETCH_H_
